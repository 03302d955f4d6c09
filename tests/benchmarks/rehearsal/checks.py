"""The rehearsal's verdicts, from its recorded figures alone (no run): what a kill can make a rerun repeat, what a
reviewer's replay holds, whose memory the target is about. Kept apart from the phases that measure the figures so
that the arithmetic is tested on recorded figures (tests/simulation/test_rehearsal_checks.py).

Each function returns check rows ``(check, measured, target, result)``; ``result`` is PASS, FAIL or ``-`` (a
figure shown beside a check, judged by the rows under it).
"""

from __future__ import annotations

from rehearsal.common import TARGETS, gib


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def may_repeat(kill: dict, batch: bool) -> tuple[int, str]:
    """How many calls a rerun after ``kill -9`` may have to make again, and where that number comes from.

    - Synchronous: the answers the provider gave in the killed run that no job wrote to the cache (a job was
      reading or parsing them, or they came after the kill): ``new_unique`` distinct answers minus the cache
      files written. Every cache file is a synchronous answer there, so the difference is never negative; if
      it is, the count is broken and nothing may repeat (0), and the caller says so.
    - Batch mode: answers fetched from finished batches are written to the cache too but are not synchronous
      answers at the simulator, so that difference means nothing (it goes negative). The calls a rerun can
      repeat are the synchronous requests open at the simulator at the kill (``in_flight_at_kill``); a batch
      request is never repeated (it waits at the provider; ``batch_resubmitted`` is checked apart, target 0).
    """
    if batch:
        return max(0, int(kill.get("in_flight_at_kill", 0))), "synchronous requests open at the simulator at the kill"
    lost = int(kill.get("unpersisted", 0))
    return max(0, lost), "answered in the killed run, never written to the cache"


def kill_rows(kill: dict, repeated: int, duplicates: int, batch: bool) -> list[tuple]:
    """The kill's check rows: calls repeated over the killed run and its rerun, those a rerun may repeat (never
    a negative count), identical requests called by two shards, and what is left: target 0."""
    allowed, why = may_repeat(kill, batch)
    rows = [("kill -9 mid-judging + rerun: calls repeated", str(repeated), "only those the kill may repeat", "-"),
            (f"  may repeat: {why}", str(allowed), "(no client can store these)", "-")]
    if not batch and int(kill.get("unpersisted", 0)) < 0:
        rows.append(("  count of answers never written", f"{kill['unpersisted']} (more cache files than answers)",
                     ">= 0", "FAIL"))
    rows.append(("  identical requests called by two shards", str(duplicates), "0", _verdict(duplicates == 0)))
    rest = max(0, repeated - allowed - duplicates)
    rows.append(("  beyond those", str(rest), "0", _verdict(rest == 0)))
    return rows


def repeated_row(repeated: int | None, kill: dict | None, batch: bool) -> tuple:
    """Repeated successes at the simulator over every run, against what the kill may make a rerun repeat."""
    allowed, _ = may_repeat(kill or {}, batch)
    measured = f"{repeated} (all runs; the kill may repeat {allowed})"
    return ("repeated calls at the simulator", measured, "0 beyond those the kill may repeat",
            _verdict(repeated is not None and repeated <= allowed))


#: what a reviewer's replay (the response cache's export and the human exports, no annotation store) cannot
#: make, with the reason: the replay's comparison leaves exactly these out, and the docs say so
REPLAY_LEAVES_OUT = {
    "annotation/": "the annotation store's own tables (the people's tasks, the store's summary and audit log): "
                   "a reviewer has the human exports (resources/human/, the bundle's human files), not the store, "
                   "which holds platform ids",
}


def replay_scope(reference_tables: list[str]) -> tuple[list[str], list[str]]:
    """(the tables a replay must make frame-equal, the tables it leaves out) of a first run's table list."""
    out = [t for t in reference_tables if t.startswith(tuple(REPLAY_LEAVES_OUT))]
    return [t for t in reference_tables if t not in out], out


def memory_row(peak: dict) -> tuple:
    """The target is the workflow's own peak: Snakemake and its jobs (the process tree the monitor samples under
    each run). The provider simulator is a process of the rehearsal beside the workflow, not in that tree; its
    own peak is shown in the same row, never added."""
    measured = (f"{gib(peak['rss'])} RSS, {gib(peak['pss'])} PSS (workflow: snakemake and its jobs, run "
                f"'{peak.get('phase')}'; the simulator beside it, not counted: {gib(peak.get('sim_rss', 0))})")
    return ("peak memory, the workflow's process tree", measured, f"<= {gib(TARGETS['peak_bytes'])}",
            _verdict(peak["rss"] <= TARGETS["peak_bytes"]))


def recovery_row(recovery: list[str]) -> tuple:
    """After ``kill -9`` Snakemake's lock is stale and a killed job may leave an output behind that Snakemake marks
    incomplete: ``--unlock``, then the same command (with ``--rerun-incomplete`` if it says so) is the documented
    recovery (docs/reproducing-the-paper.md, "After a crash"), so those steps are expected; any other is not."""
    expected = {"--unlock", "--rerun-incomplete"}
    other = [step for step in recovery if step not in expected]
    measured = " then ".join([*recovery, "the same command"]) if recovery else "the same command"
    return ("recovery after kill -9", measured, "only the documented steps (--unlock; --rerun-incomplete)",
            _verdict(not other))
