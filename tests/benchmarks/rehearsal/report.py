"""The rehearsal's report: its checks, stages, calls, memory and notes as text; an extrapolation when it stopped
early."""

from __future__ import annotations

import os
from collections import defaultdict

from rehearsal.checks import may_repeat
from rehearsal.common import gib, hms, mib, table
from rehearsal.compare import describe_compare, stage_walls


def report(reh):
    o, a = reh.out, reh.a
    lines = []
    p = lines.append
    p("")
    p("=" * 100)
    p("HEART paper-scale rehearsal against heart.simulation.simulator  (SIMULATED: no number here is a result)")
    p("=" * 100)
    p(f"workdir {reh.wd}; items: {'all released (300)' if not a.items else a.items}; "
      f"simulator median latency {a.latency} s, "
      f"sigma {a.sigma}, error rate {a.error_rate}, rpm per model {a.sim_rpm}, time scale {a.time_scale}; "
      f"snakemake --cores {a.cores}; llm.shards {reh.config['llm']['shards']}")
    load = os.getloadavg()
    p(f"machine: {os.cpu_count()} CPUs, load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (shared)")
    p("")
    p("Runs")
    def delta(r, key):
        if not (r.sim_before and r.sim_after):
            return "-"
        return r.sim_after[key] - r.sim_before[key]

    p(table([[r.name, hms(r.wall), f"{r.wall:.1f}", r.rc, sum(1 for j in r.jobs.values() if j.get('ok')),
              delta(r, "successes"), delta(r, "repeated_successes"),
              "killed" if r.killed else "timed out" if r.timed_out else ""] for r in reh.runs],
            ["run", "wall", "s", "exit", "jobs ok", "sim calls", "repeated", ""]))
    if "humans" in o:
        h = o["humans"]
        p("")
        p("The human half (SIMULATED people through the annotation store: heart.simulation.people)")
        p(table([[x["name"], hms(x["wall_s"]), f"{x['wall_s']:.1f}", gib(x["peak_rss"])] for x in h["phases"]],
                ["phase", "wall", "s", "peak tree RSS"]))
        p(f"  people: {h['people_by_kind']}; tasks: {h['tasks_by_kind']} ({h['qc_tasks']} quality checks); "
          f"pairs rated by people: {h['rated_pairs']:,}; pairs designed: {h['pairs_by_kind']}")
    if "stages" in o:
        p("")
        p("Stages of the main run (wall = union of the stage's job intervals across the runs; calls/s = simulator "
          "calls / wall)")
        rows = []
        sim = o["calls_sim"]
        for st, v in o["stages"].items():
            b = o["bench"].get(st, {})
            lg = o["calls_logs"].get(st, {})
            calls = sim.get(st)
            rate = f"{calls / v['wall_s']:.1f}" if calls and v["wall_s"] else "-"
            rows.append([st, v["jobs"], v["unfinished"], hms(v["wall_s"]), hms(v["first"] - reh.t0),
                         hms(v["last"] - reh.t0),
                         f"{b['cpu_s']:.0f}" if b else "-", f"{b['max_rss_mb']:.0f}" if b else "-",
                         calls if calls is not None else "-", lg.get("called", "-"), lg.get("cached", "-"), rate])
        p(table(rows, ["stage", "jobs", "not ok", "wall", "from", "to", "bench cpu s", "bench max_rss MB",
                       "sim calls", "log called", "log cached", "calls/s"]))
        if o.get("targets"):
            p("")
            p("LLM targets (calls: the simulator's successes for the target's model in the runs where its jobs ran -- "
              "judges include their quality-check calls; bound: min(rpm/60, max_concurrency/mean latency), the "
              "model's limits, each shard job keeping its share)")
            rows = []
            for t in o["targets"]:
                span = t["last"] - t["first"]
                rows.append([t["rule"], t["target"], t["jobs"], t["not_ok"], hms(t["first"] - reh.t0),
                             hms(t["last"] - reh.t0),
                             hms(span), t["sim_calls"], f"{t['sim_calls'] / span:.1f}" if span > 0 else "-",
                             f"{t['bound_per_s']:.1f}" if t["bound_per_s"] else "-", t["rpm"], t["max_concurrency"]])
            p(table(rows, ["rule", "target", "jobs", "not ok", "from", "to", "span", "calls", "calls/s", "bound/s",
                           "rpm", "conc"]))
        if "judging+tagging" in sim:
            p(f"  (judging and tagging share a model: {sim['judging+tagging']} calls not split)")
        p("  'not ok': jobs killed or failed; 'log called' counts the jobs that finished: calls made by jobs killed "
          "with SIGKILL are only in the simulator's count (the rerun found them in the cache: 'log cached').")
        p("")
        main = o.get("main_wall_s")
        p(f"Whole rehearsal (first run to report): {hms(main)}" + (f" ({main:.0f} s)" if main else "")
          + f"; simulator: {o['sim'].get('requests')} requests, {o['sim'].get('successes')} successes, errors "
          f"{o['sim'].get('errors')}, peak in flight {o['sim'].get('max_in_flight')}, server CPU "
          f"{o['sim'].get('cpu_s')} s")
        pk = o["peak"]
        p(f"Peak memory: the workflow's process tree (snakemake and its jobs) {gib(pk['rss'])} RSS "
          f"(PSS {gib(pk['pss'])}) over {pk['procs']} processes, in run "
          f"'{pk['phase']}'; the simulator, a process beside it: {mib(pk['sim_rss'])}; largest single processes: "
          + ", ".join(f"{n} {mib(v)}" for n, v in pk["by_job"][:6]))
        if pk.get("parts"):
            p("  at the peak: " + ", ".join(f"{n} {mib(v)}" for n, v in pk["parts"]))
        c = o["cache"]
        p(f"Response cache {reh.cache_dir.relative_to(reh.wd)}: {c['files']} files, {mib(c['bytes'])} "
          f"({mib(c['disk_bytes'])} on disk); {c.get('temp_files')} temporary files left by killed writes")
        pq_ = o["parquet"]
        p(f"Parquet under results/: {pq_['count']} files, {mib(pq_['bytes'])}; largest:")
        for size, path in pq_["largest"]:
            p(f"  {mib(size):>10}  {path}")
        over = {m: v for m, v in o["rate_peaks"].items() if v[1] and v[0] > v[1]}
        if over:
            p("Peak requests in any 60 s at the simulator above the model's configured rpm:")
            for m, (n, rpm) in sorted(over.items(), key=lambda kv: -kv[1][0] / kv[1][1]):
                p(f"  {m}: {n} in 60 s vs rpm {rpm} ({n / rpm:.1f}x)")
        pm = o.get("sim_per_model", {})
        if pm:
            p("Simulator per model (successes / 429 / 5xx / repeated):")
            p("  " + "; ".join(f"{m} {c.get('successes', 0)}/{c.get('429', 0)}/{c.get('500', 0) + c.get('503', 0)}/"
                               f"{c.get('repeated_successes', 0)}" for m, c in sorted(pm.items())))
    if o.get("cross_shard_duplicates"):
        p("Identical requests called by two shard jobs (each a repeated success at the simulator, no kill needed): "
          + ", ".join(f"{k} {v}" for k, v in o["cross_shard_duplicates"].items()))
    if "kill" in o:
        k = o["kill"]
        batch = not a.sync
        written = k.get("cache_files_after_kill", 0) - o.get("cache_files_before_judging", 0)
        allowed, why = may_repeat(k, batch)
        p("")
        p(f"Kill -9: at {k['at_s']:.0f} s into the judging run, {k['judge_successes']} of ~{k['expected']} judge calls "
          f"answered synchronously" + (f", {k.get('batch_requests_at_kill')} requests out in batches" if batch else "")
          + f", {k['in_flight_at_kill']} synchronous requests open at the simulator "
          f"({k.get('answered_after_kill')} answered after the kill); {written} answers written to the cache in "
          "that run" + ("" if batch else f" of {k.get('new_unique')} distinct answers given") + f"; a rerun may "
          f"repeat {allowed} ({why}); recovery: {' then '.join(k.get('recovery') or []) or 'a plain rerun'}; "
          f"repeated successes over the killed run and its rerun: {k.get('repeated')} "
          f"({k.get('cross_shard_duplicates')} identical requests called by two judging/tagging shards)")
    if "adaptive" in o:
        d = o["adaptive"]
        p("")
        share = d["calls"] / max(d["calls_fixed"], 1)
        p(f"Adaptive design: {d['rounds_judged']} rounds judged, {d['pairs']:,} of the fixed design's "
          f"{d['pairs_fixed']:,} pairs, {d['calls']:,} of its {d['calls_fixed']:,} judge calls ({share:.0%}); "
          f"ended: {d['ended']}; {d['batches']} batches at the simulator over the whole rehearsal")
    if "noop" in o:
        n = o["noop"]
        p(f"No-op rerun: {n['wall_s']:.1f} s, {n['jobs']} jobs, exit {n['rc']} (snakemake -n on the same state: "
          f"{n.get('dry_run_s', float('nan')):.1f} s)")
    if "shards" in o:
        s = o["shards"]
        p(f"llm.shards {s['k']}: {hms(s['wall_s'])}, {s['jobs']} jobs, exit {s['rc']}, {s['calls']} calls at the "
          "simulator")
        for line in describe_compare(s["compare"]) if s.get("compare") else []:
            p("  " + line)
    if "replay" in o:
        r = o["replay"]
        p(f"Replay: {hms(r['wall_s'])}, {r['jobs']} jobs, exit {r['rc']}, {r['connections']} connection attempts, "
          f"{r['called_in_logs']} called in rule logs, replay file {mib(r['replay_bytes'])}, peak tree RSS "
          f"{gib(r['peak_rss'])}, {r['new_cache_files']} files written to the empty cache dir")
        if r.get("stages"):
            p("  replay stages: " + "; ".join(f"{st} {hms(v['wall_s'])}" for st, v in r["stages"].items()))
        if r.get("bench"):
            p("  replay LLM jobs (benchmarks): " + "; ".join(
                f"{st}: {v['files']} jobs, max {v['max_s']:.0f} s, max_rss {v['max_rss_mb']:.0f} MB"
                for st, v in r["bench"].items()))
        for line in describe_compare(r["compare"]) if r.get("compare") else []:
            p("  " + line)
    if o.get("extrapolation"):
        p("")
        p("Extrapolation (the main run did not finish):")
        for line in o["extrapolation"]:
            p("  " + line)
    p("")
    p("Checks")
    p(table([list(c) for c in reh.checks], ["check", "measured", "target", "result"]))
    if reh.notes:
        p("")
        p("Notes")
        for n in reh.notes:
            p("  - " + n)
    p("")
    return "\n".join(lines)


def extrapolate(reh):
    """Calls done, rates and the time left per LLM stage, when the main run stopped early."""
    s = reh.monitor.last_stats or {}
    lines = []
    runs = [r for r in reh.runs if r.name in ("until-judging", "judging-killed", "rerun-after-kill")]
    stages = stage_walls(runs)
    done = defaultdict(int)
    judge_models = {reh.sim_model(j["model"]) for j in reh.config["judging"]["judges"].values()}
    tag_models = {reh.sim_model(t["model"]) for t in reh.config["tagging"]["taggers"].values()}
    first = runs[0].sim_after if runs and runs[0].sim_after else None
    for m, c in s.get("per_model", {}).items():
        base = first["per_model"].get(m, {}).get("successes", 0) if first else 0
        if first is None:
            done["completions"] += c.get("successes", 0)
            continue
        done["completions"] += base
        if m in judge_models:
            done["judging"] += c.get("successes", 0) - base
        elif m in tag_models:
            done["tagging"] += c.get("successes", 0) - base
    expected = {"completions": len(reh.config["systems"]) * (reh.a.items or 300),
                "judging": reh.out.get("expected_judge_calls")}
    for st in ("completions", "judging", "tagging"):
        v = stages.get(st)
        if not v:
            continue
        rate = done[st] / v["wall_s"] if v["wall_s"] else 0
        exp = expected.get(st)
        left = (exp - done[st]) / rate if exp and rate else None
        lines.append(f"{st}: {done[st]} calls in {hms(v['wall_s'])} = {rate:.1f} calls/s"
                     + (f"; expected ~{exp}, {hms(left)} more at this rate" if left is not None else ""))
    return lines
