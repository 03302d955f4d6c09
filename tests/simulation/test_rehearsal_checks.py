"""The rehearsal's verdicts on recorded figures (tests/benchmarks/rehearsal/checks.py): the figures of issue 45's
batch-mode rehearsal with the human half, whose report said FAIL four times, three of them its own errors."""

import sys

import pytest

from support import REPO

sys.path.insert(0, str(REPO / "tests/benchmarks"))

from rehearsal import checks  # noqa: E402
from rehearsal.compare import compare_ok, summary  # noqa: E402

GIB = 2 ** 30

# batch mode: answers fetched from finished batches were written to the cache after the kill, so the
# synchronous count "answered but never written" came out -34 (recorded); 0 calls were repeated
BATCH_KILL = {"unpersisted": -34, "in_flight_at_kill": 3, "new_unique": 120, "cache_files_after_kill": 9154,
              "answered_after_kill": 3}


def verdicts(rows):
    return {row[0].strip(): row for row in rows}


def test_a_batch_kill_that_repeated_nothing_passes_and_no_count_is_negative():
    rows = checks.kill_rows(BATCH_KILL, repeated=0, duplicates=0, batch=True)
    assert all(r[3] in ("PASS", "-") for r in rows), rows
    assert verdicts(rows)["beyond those"][1] == "0"
    assert not any(cell.startswith("-") and cell[1:].isdigit() for row in rows for cell in row[1:3])
    # what a rerun may repeat in batch mode: the synchronous requests open at the kill, not a difference of
    # counts that batch answers make meaningless
    allowed, why = checks.may_repeat(BATCH_KILL, batch=True)
    assert allowed == 3 and "open at the simulator" in why


def test_a_kill_that_repeated_more_than_it_may_fails_in_either_mode():
    sync = {"unpersisted": 5, "in_flight_at_kill": 2}
    assert verdicts(checks.kill_rows(sync, repeated=5, duplicates=0, batch=False))["beyond those"][3] == "PASS"
    beyond = verdicts(checks.kill_rows(sync, repeated=7, duplicates=0, batch=False))["beyond those"]
    assert beyond[1:] == ("2", "0", "FAIL")
    assert verdicts(checks.kill_rows(BATCH_KILL, repeated=4, duplicates=0, batch=True))["beyond those"][3] == "FAIL"
    dup = verdicts(checks.kill_rows(sync, repeated=6, duplicates=1, batch=False))
    assert dup["identical requests called by two shards"][3] == "FAIL" and dup["beyond those"][1] == "0"


def test_a_negative_synchronous_count_is_a_broken_count_not_calls_in_flight():
    rows = verdicts(checks.kill_rows({"unpersisted": -34}, repeated=0, duplicates=0, batch=False))
    assert rows["count of answers never written"][3] == "FAIL"
    assert checks.may_repeat({"unpersisted": -34}, batch=False)[0] == 0
    assert checks.repeated_row(0, BATCH_KILL, batch=True)[3] == "PASS"
    assert checks.repeated_row(4, BATCH_KILL, batch=True)[3] == "FAIL"
    assert checks.repeated_row(None, None, batch=True)[3] == "FAIL"


def test_the_replay_leaves_out_the_annotation_stores_tables_and_nothing_else():
    missing = ["annotation/audit.parquet", "annotation/summary.parquet", "annotation/tasks.parquet"]
    keep, out = checks.replay_scope([*missing, "stats/leaderboard.parquet"])
    assert out == missing and keep == ["stats/leaderboard.parquet"]
    # recorded: 68 equal, 60 differing only in from_cache, the store's 3 missing
    cmp = {"equal": 68, "differ": {f"judging/shards/t{i}.parquet": {"kind": "values", "columns": {"from_cache": {}}}
                                   for i in range(60)}, "missing": missing, "extra": []}
    assert not compare_ok(cmp)
    cmp["missing"] = [m for m in cmp["missing"] if m not in out]
    assert compare_ok(cmp)
    assert summary(cmp).startswith("68 equal, 60 differ only in from_cache, 0 differ otherwise, 0 missing")
    cmp["missing"] = ["stats/leaderboard.parquet"]  # a table a replay must make
    assert not compare_ok(cmp)


@pytest.mark.parametrize("tree, verdict", [(3.5, "PASS"), (4.09, "FAIL")])
def test_memory_is_the_workflows_tree_and_the_simulator_is_shown_beside_it(tree, verdict):
    row = checks.memory_row({"rss": tree * GIB, "pss": tree * GIB, "phase": "rerun-after-kill", "sim_rss": 2.35 * GIB})
    assert row[3] == verdict
    assert "not counted: 2.35 GiB" in row[1] and "snakemake and its jobs" in row[1]


def test_the_documented_recovery_after_a_kill_is_an_expected_step():
    assert checks.recovery_row(["--unlock"])[3] == "PASS"
    assert checks.recovery_row([])[3] == "PASS"
    assert checks.recovery_row(["--unlock", "--rerun-incomplete"])[3] == "PASS"
    assert checks.recovery_row(["--unlock", "--force"])[3] == "FAIL"
    docs = (REPO / "docs/reproducing-the-paper.md").read_text()
    assert "### After a crash" in docs and "--unlock" in docs and "--rerun-incomplete" in docs
