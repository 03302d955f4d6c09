"""Rehearsal of the paper's whole run against heart.simulation.simulator (prints its figures; not a test).

    .venv/bin/python tests/benchmarks/bench_rehearsal.py --workdir /tmp/reh/main
    .venv/bin/python tests/benchmarks/bench_rehearsal.py --workdir /tmp/reh/main --items 20 --latency 0.05

The workdir is a scratch checkout of this repository (never the one you work in: the script wipes its
results/, logs/, benchmarks/, .snakemake/ and the rehearsal cache, and refuses to unless results/ holds
nothing but tracked files or the workdir was set up by an earlier run of this script). The ESConv and
release copies are read from ``--data`` (default ../shared/data, relative to the workdir).

What it does, in order (config/paper.yaml + config/rehearsal.yaml + .rehearsal/local.yaml):

0. (unless --skip-humans) The human half, SIMULATED: rule annotation_tasks, simulated writers through the
   annotation store (heart.simulation.people), the store exported and the pairs designed again with the human
   completions, the tasks again, simulated raters and labellers; its phases' wall time and peak memory are
   in the report. (It runs after the first run below, which makes the pairs the rating tasks need.)
1. Starts heart.simulation.simulator on 127.0.0.1:--port (8799; refuses to start if the port is taken), log-normal
   latency (--latency, --sigma), --error-rate transient errors, and a per-model rpm (--sim-rpm) above what
   the config's max_concurrency can send, so the simulator never throttles the paper's concurrency.
2. The whole DAG (target ``all``), in three Snakemake runs: (i) ``--until design_pairs`` (data, items,
   completions, pairs); (ii) ``all``, killed with SIGKILL (the whole process group) once the judge models
   have answered --kill-at of the expected judge calls; (iii) ``all`` again to the end (``--unlock`` first
   if a lock was left behind); then ``--report results/report.html``. Measured: the wall time of every
   stage (the union of its jobs' start-end intervals, timed from Snakemake's output as it is printed), the
   benchmark TSVs (s, cpu_time, max_rss), the LLM calls per stage (simulator /stats per model and phase;
   "N requests, M from cache, K called" from the rule logs), the peak RSS (and PSS) of the whole process
   tree sampled every 0.5 s, the peak 60-s request rate per model at the simulator, the response cache
   (files, bytes) and the Parquet tables (count, bytes, the 10 largest).
3. Checks: (a) a real no-op rerun and its wall time; (b) repeated successes at the simulator stay 0 across
   the kill and the rerun (and every later run), except the answers in flight at the kill: those the
   simulator answered after it, or a job had read but not yet written (no killed client can store them;
   they are counted and shown apart); (d) ``llm.shards`` = --alt-shards instead of the
   config's, answered from the cache: calls made and Parquet tables frame-equal to the first run's;
   (c) replay: the simulator stopped (a listener on its port counts connection attempts), llm.replay set to
   a copy of results/llm/cache.parquet, an empty cache dir, results/ emptied: the whole DAG again, 0 calls,
   and every Parquet table frame-equal to the first run's (differences are listed by column, not hidden).
4. Prints the report (and writes it as JSON to <workdir>/.rehearsal/report.json).

The main run stops at --max-minutes (then the report says how far it got, the measured rates and an
extrapolation).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback

from rehearsal import checks
from rehearsal.common import TARGETS, hms
from rehearsal.phases import Rehearsal
from rehearsal.report import extrapolate, report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--workdir", required=True, help="a scratch checkout (its outputs are wiped)")
    ap.add_argument("--data", default="../shared/data", help="holds esconv/ESConv.json and heart-release/ (relative "
                    "to the workdir)")
    ap.add_argument("--items", type=int, default=None, help="small scale: the first N released items "
                    "(default: all 300)")
    ap.add_argument("--latency", type=float, default=1.0, help="simulator median latency, s")
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--error-rate", type=float, default=0.005)
    ap.add_argument("--sim-rpm", type=int, default=20000, help="simulator rpm per model name (generous)")
    ap.add_argument("--time-scale", type=float, default=1.0, help="simulator time scale")
    ap.add_argument("--port", type=int, default=8799, help="config/rehearsal.yaml's port")
    ap.add_argument("--cores", type=int, default=10,
                    help="snakemake --cores: concurrent jobs (each LLM job holds ~300 MB: "
                    "10 keeps the run under 4 GiB)")
    ap.add_argument("--mem-budget-mb", type=int, default=3700, help="snakemake --resources mem_mb: the jobs' "
                    "declared memory (profiles/default/config.yaml) at once, at most (0: no budget; Snakemake's own "
                    "process comes on top: 3,700 keeps the whole tree under the 4 GiB target)")
    ap.add_argument("--replay-cores", type=int, default=8, help="--cores of the replay run (every LLM job of a "
                    "replay loads the whole replay file)")
    ap.add_argument("--prioritize", default="auto", help="auto: --prioritize the judge whose shards take longest "
                    "at the config's limits; none; or a target")
    ap.add_argument("--mem-guard", type=float, default=2.0, help="kill a run when the machine has less than this "
                    "many GiB available (a shared machine)")
    ap.add_argument("--rpm", choices=("paper", "none"), default="paper", help="paper: the models' rpm limits of "
                    "paper.yaml (per model, split over its shard jobs); none: lifted, each model bound by its "
                    "max_concurrency only (at paper.yaml's rpm the Claude judge alone needs ~40 min of "
                    "rate-limited calls)")
    ap.add_argument("--kill-at", type=float, default=0.5, help="kill -9 once this share of the judge calls is answered")
    ap.add_argument("--alt-shards", type=int, default=8)
    ap.add_argument("--max-minutes", type=float, default=60, help="stop the main run after this long")
    ap.add_argument("--hf-online", action="store_true", help="leave HF_HUB_OFFLINE unset (litellm then tries to "
                    "download a llama tokenizer for every answer of the llama-3.1 models; offline that stalls "
                    "the jobs)")
    ap.add_argument("--shards", type=int, default=None, help="development only: llm.shards instead of the config's")
    ap.add_argument("--sync", action="store_true", help="every model synchronous (paper.yaml's batch interfaces "
                    "switched off): the reference whose tables a batch rehearsal must equal")
    ap.add_argument("--compare-with", default=None, help="a finished rehearsal's .rehearsal/first_run: the tables "
                    "of this one must be frame-equal to it but for how each row was obtained (from_cache, "
                    "latency_s, cost_usd, the cache export's entries)")
    ap.add_argument("--batch-delay", type=float, default=30.0, help="simulator: seconds until a batch ends")
    ap.add_argument("--batch-error-rate", type=float, default=0.005, help="simulator: failed requests per batch")
    ap.add_argument("--batch-expire-rate", type=float, default=0.1, help="simulator: batches that expire half answered")
    ap.add_argument("--adaptive", type=float, nargs="?", const=0.1, default=None, metavar="STEP",
                    help="judge by the adaptive pair design (judging.adaptive on; its first round and every later "
                         "one STEP of the fixed design's pairs, 0.1 unless given): each round one batch per judge, "
                         "the kill falls in a round (--kill-at is then a share of the fixed design's judge calls)")
    ap.add_argument("--skip-kill", action="store_true")
    ap.add_argument("--skip-noop", action="store_true")
    ap.add_argument("--skip-shards", action="store_true")
    ap.add_argument("--skip-replay", action="store_true")
    ap.add_argument("--skip-humans", action="store_true", help="leave out the human half (SIMULATED people through "
                    "the annotation store: heart.simulation.people)")
    args = ap.parse_args()

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)  # the finally below then kills the running snakemake's group
    reh = Rehearsal(args)
    reh.prepare()
    sys.path.insert(0, str(reh.wd / "workflow"))
    from heart.simulation.handle import Simulator

    reh.t0 = time.time()
    reh.monitor.start()
    reference = reh.dir / "first_run"
    try:
        with Simulator(port=args.port, median_latency=args.latency, sigma=args.sigma, error_rate=args.error_rate,
                       rpm=args.sim_rpm, time_scale=args.time_scale, start_timeout=60,
                       batch_delay=args.batch_delay, batch_error_rate=args.batch_error_rate,
                       batch_expire_rate=args.batch_expire_rate) as sim:
            reh.sim = sim
            reh.monitor.sim = sim
            print(f"simulator at {sim.api_base} (pid {sim.proc.pid})", flush=True)
            finished = reh.main_run()
            reh.measure()
            if "kill" in reh.out:
                after = [r for r in reh.runs if r.name in ("judging-killed", "unlock", "rerun-after-kill")]
                if after and after[0].sim_before and after[-1].sim_after:
                    k = reh.out["kill"]
                    rep = after[-1].sim_after["repeated_successes"] - after[0].sim_before["repeated_successes"]
                    dups = sum(v for key, v in reh.out["cross_shard_duplicates"].items()
                               if key.startswith(("judging/", "tagging/")))
                    k.update(repeated=rep, cross_shard_duplicates=dups)
                    reh.out["repeated_after_kill"] = rep
                    # the literal target was 0; what a kill can make a rerun repeat cannot be: the provider
                    # answers it after the job is gone, or the job dies between reading an answer and writing it
                    # (rehearsal.checks.may_repeat, per mode). Everything else must be 0.
                    reh.checks.extend(checks.kill_rows(k, rep, dups, batch=not args.sync))
                reh.checks.append(checks.recovery_row(reh.out["kill"].get("recovery") or []))
            if not args.sync and "kill" in reh.out:
                s = reh.sim_stats() or {}
                reh.out["batch"] = {k: s.get(k) for k in ("batch_requests", "batch_resubmitted", "batch_retried",
                                                          "batches")}
                reh.checks.append(("kill -9 mid-batch + rerun: requests submitted again after an answer",
                                   str(s.get("batch_resubmitted")), "0",
                                   "PASS" if s.get("batch_resubmitted") == 0 else "FAIL"))
                reh.checks.append(("  batch requests submitted (resubmitted unanswered: expired or failed)",
                                   f"{s.get('batch_requests')} in {s.get('batches')} batches "
                                   f"({s.get('batch_retried')} retried)", "-", "-"))
            main = reh.out.get("main_wall_s")
            if not finished:
                reh.out["extrapolation"] = extrapolate(reh)
                reh.checks.append(("main run", f"did not finish ({reh.out['main_failed']['what']})", "finishes",
                                   "FAIL"))
            else:
                reh.checks.append(("whole rehearsal", hms(main), f"<= {hms(TARGETS['rehearsal_s'])}",
                                   "PASS" if main <= TARGETS["rehearsal_s"] else "FAIL"))
                reh.snapshot(reference)
                if args.compare_with:
                    reh.compare_modes(args.compare_with)
                if not args.skip_noop:
                    reh.noop()
                if not args.skip_shards:
                    reh.alt_shards(reference)
            reh.out["sim_final"] = reh.sim_stats()
        reh.sim = reh.monitor.sim = None
        rep = (reh.out.get("sim_final") or {}).get("repeated_successes")
        reh.checks.append(checks.repeated_row(rep, reh.out.get("kill"), batch=not args.sync))
        m = reh.monitor
        reh.checks.append(checks.memory_row({"rss": m.peak_rss, "pss": m.peak_pss, "phase": m.peak_at,
                                             "sim_rss": m.sim_peak_rss}))
        if not args.skip_replay and "main_failed" not in reh.out:
            reh.replay(reference)
    except BaseException:
        traceback.print_exc()
        reh.notes.append("the rehearsal script stopped on an exception (above)")
    finally:
        if reh.current is not None and reh.current.poll() is None:
            reh.kill(reh.current, signal.SIGKILL)
        reh.monitor.halt.set()
    text = report(reh)
    print(text, flush=True)
    (reh.dir / "report.txt").write_text(text)
    (reh.dir / "report.json").write_text(json.dumps(reh.out, indent=1, default=str))
    print(f"(also in {reh.dir / 'report.txt'}, {reh.dir / 'report.json'}; run logs in {reh.dir})")


if __name__ == "__main__":
    main()
