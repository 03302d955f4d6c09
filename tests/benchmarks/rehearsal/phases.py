"""The rehearsal's phases and checks: the main run with its kill -9, the no-op rerun, other shards, replay,
measurements."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import time
from collections import defaultdict

import pandas as pd

from rehearsal import checks
from rehearsal.common import CALLS_RE, LOG_STAGE, TARGETS
from rehearsal.compare import (
    bench_by_stage,
    compare_ok,
    compare_trees,
    count_files,
    dir_size,
    stage_walls,
    summary,
    union_length,
)
from rehearsal.runner import Listener, Runner


class Rehearsal(Runner):
    """The paper's run rehearsed: :meth:`main_run`, then the checks (module docstring of bench_rehearsal.py)."""

    def main_run(self):
        deadline = self.t0 + self.a.max_minutes * 60
        r1 = self.run("until-judging", self.snakemake_cmd(flags=["--until", "design_pairs"]), deadline=deadline)
        if r1.rc:
            return self.fail("the first run (--until design_pairs) failed", r1)
        if not self.a.skip_humans and not self.human_half(deadline):
            return False
        expected = self.expected_judge_calls()
        judge_models = {self.sim_model(j["model"]) for j in self.config["judging"]["judges"].values()}
        self.out["expected_judge_calls"] = expected
        base = r1.sim_after or {"per_model": {}}

        def judged(stats):
            return sum(c.get("successes", 0) - base["per_model"].get(m, {}).get("successes", 0)
                       for m, c in stats["per_model"].items() if m in judge_models)

        def submitted(stats):  # batch mode: judge (and tag) requests out at the provider, answered or not
            return stats.get("batch_requests", 0) - base.get("batch_requests", 0)

        def kill_when(run):
            s = self.monitor.last_stats
            if not s or not expected:
                return False
            # synchronous: once --kill-at of the judge calls are answered; batch mode: once that share is
            # submitted, so that the kill falls while batches are out (mid-batch), not after they ended
            if (judged(s) if self.a.sync else submitted(s)) >= self.a.kill_at * expected:
                s = self.sim.stats()  # fresh: what the server has answered and holds in flight at the kill
                self.out["kill"] = {"at_s": time.time() - run.start, "judge_successes": judged(s),
                                    "expected": expected, "successes_at_kill": s["successes"],
                                    "in_flight_at_kill": s["in_flight"]}
                self.out["kill"]["batch_requests_at_kill"] = submitted(s)
                print(f"  killing the run (SIGKILL to its process group): {judged(s)} of ~{expected} judge calls "
                      f"answered, {submitted(s)} requests in batches", flush=True)
                return True
            return False

        prio = self.prioritize_flags()
        self.out["cache_files_before_judging"] = count_files(self.cache_dir)
        r2 = self.run("judging-killed", self.snakemake_cmd(flags=prio),
                      kill_when=None if self.a.skip_kill else kill_when,
                      deadline=deadline)
        if r2.timed_out:
            return self.fail("time limit", r2)
        if r2.killed:
            time.sleep(max(5.0, 5 * self.a.latency))  # the simulator finishes what was in flight: answers nobody reads
            s = self.sim_stats() or {}
            k = self.out["kill"]
            # answered by the server after the client was gone: a rerun must ask for these again
            k["answered_after_kill"] = s.get("successes", 0) - k["successes_at_kill"]
            # every distinct request the server answered in this run vs the answers the jobs wrote to the cache:
            # the difference was answered (the server sent it) but never persisted (the job was still reading
            # it, or parsing it, when it was killed): a rerun has to ask for these again, and nothing else
            k["cache_files_after_kill"] = count_files(self.cache_dir)
            k["new_unique"] = s.get("unique_successes", 0) - r2.sim_before["unique_successes"]
            k["unpersisted"] = k["new_unique"] - (k["cache_files_after_kill"] - self.out["cache_files_before_judging"])
            recovery, flags = [], list(prio)
            r3 = self.run("rerun-after-kill", self.snakemake_cmd(flags=flags), deadline=deadline)
            for _ in range(3):  # what an operator does after kill -9: --unlock, --rerun-incomplete, as asked
                if not r3.rc or r3.timed_out:
                    break
                if self._log_has(r3, "cannot be locked"):
                    recovery.append("--unlock")
                    self.notes.append("after kill -9 the rerun met the killed run's stale lock in .snakemake/locks "
                                      f"({self._log_line(r3, 'cannot be locked')}): `snakemake --unlock`, then the "
                                      "same command (the documented recovery: docs/reproducing-the-paper.md)")
                    self.run("unlock", self.snakemake_cmd(flags=["--unlock"]), quiet=True)
                elif self._log_has(r3, "incomplete") and "--rerun-incomplete" not in flags:
                    recovery.append("--rerun-incomplete")
                    flags.append("--rerun-incomplete")
                    files = self._log_after(r3, "Incomplete files:")
                    self.notes.append("after kill -9 the rerun stopped on IncompleteFilesException (outputs of jobs "
                                      "killed after writing them, before Snakemake recorded them): " + ", ".join(files)
                                      + "; --rerun-incomplete was needed")
                else:
                    break
                r3 = self.run("rerun-after-kill", self.snakemake_cmd(flags=flags), deadline=deadline)
            self.out["kill"]["recovery"] = recovery
            if r3.rc:
                return self.fail("the rerun after the kill failed", r3)
        elif r2.rc:
            return self.fail("the run from judging on failed", r2)
        else:
            self.notes.append("the kill was not exercised: the run finished before the judges reached --kill-at")
        r4 = self.run("report", self.snakemake_cmd(flags=["--report", "results/report.html"]), deadline=deadline)
        self.checks.append(("report (--report results/report.html)", f"exit {r4.rc}", "exit 0",
                            "PASS" if r4.rc == 0 else "FAIL"))
        if r4.rc:
            self.notes.append(f"the report step failed (exit {r4.rc}, {r4.log}): " + " | ".join(r4.errors[:3]))
        self.out["main_wall_s"] = time.time() - self.t0
        return True

    HUMAN_TASKS = "results/annotation/tasks.parquet"

    def human_half(self, deadline):
        """The human half, SIMULATED (heart.simulation.people): the tasks (rule annotation_tasks), writers through
        the store, the store exported and the pairs designed again with the human completions (13,500
        human-model pairs at paper scale), the tasks again (rating now holds human pairs), then raters and
        labellers. The judging run after it exports their answers (rule export_annotations)."""
        people = ["env", f"PYTHONPATH={self.wd / 'workflow'}", sys.executable, "-m", "heart.simulation.people",
                  "--tasks", self.HUMAN_TASKS, "--seed", "1", "--kinds"]
        steps = [("human-tasks", self.snakemake_cmd(targets=[self.HUMAN_TASKS])),
                 ("writers", people + ["writing"]),
                 ("human-pairs", self.snakemake_cmd(flags=["--until", "design_pairs"])),
                 ("human-tasks-again", self.snakemake_cmd(targets=[self.HUMAN_TASKS])),
                 ("raters-labellers", people + ["rating", "spot_check"])]
        runs = []
        for name, cmd in steps:
            runs.append(self.run(name, cmd, deadline=deadline))
            if runs[-1].rc or runs[-1].timed_out:
                return self.fail(f"the human half failed at {name}", runs[-1])
        pairs = pd.read_parquet(self.wd / "results/judging/pairs.parquet")
        tasks = pd.read_parquet(self.wd / self.HUMAN_TASKS)
        self.out["humans"] = {
            "phases": [{"name": r.name, "wall_s": r.wall, "peak_rss": self.monitor.phase_peaks.get(r.name, 0)}
                       for r in runs],
            "pairs_by_kind": {k: int(n) for k, n in pairs["kind"].value_counts().items()},
            "tasks_by_kind": {k: int(n) for k, n in tasks["kind"].value_counts().items()},
            "qc_tasks": int(tasks["qc_expected"].notna().sum()),
            "people_by_kind": {k: int(n) for k, n in tasks.groupby("kind")["person_id"].nunique().items()},
            "rated_pairs": int(tasks.loc[tasks["kind"].eq("rating"), "pair_id"].nunique()),
        }
        return True

    def bound_per_s(self, model_cfg):
        """Calls/s a model's shard jobs can make at most: shards x min(rpm/60, max_concurrency/mean latency) with
        each job's share of the model's limits (``ModelSpec.share``); the mean of the simulator's log-normal
        latency."""
        from heart.llm.models import ModelSpec

        mean_latency = self.a.latency * self.a.time_scale * math.exp(self.a.sigma ** 2 / 2)
        n = self.config["llm"]["shards"]
        job = ModelSpec(name="m", model="m", max_concurrency=model_cfg.get("max_concurrency", 4),
                        rpm=model_cfg.get("rpm")).share(n)
        return n * min((job.rpm or 1e9) / 60, job.max_concurrency / mean_latency)

    def prioritize_flags(self):
        """--prioritize for the judge whose shards take longest at the config's limits (auto), so its
        shards get job slots first when judging, tagging and the quality checks want more than --cores."""
        if self.a.prioritize == "none":
            return []
        if self.a.prioritize != "auto":
            return ["--prioritize", self.a.prioritize]
        cfg, per = self.config, self.out.get("expected_judge_calls_per_judge") or {}
        if not per:
            return []

        def minutes(name):
            return per[name] / self.bound_per_s(cfg["models"][cfg["judging"]["judges"][name]["model"]]) / 60

        slowest = max(per, key=minutes)
        self.out["prioritized"] = {n: round(minutes(n), 1) for n in per}
        self.notes.append(f"--prioritize results/judging/llm/{slowest}.parquet for the judging runs: at the config's "
                          "limits the judges need about " + ", ".join(f"{n} {v} min" for n, v in
                                                                              self.out["prioritized"].items()))
        return ["--prioritize", f"results/judging/llm/{slowest}.parquet"]

    def expected_judge_calls(self):
        sys.path.insert(0, str(self.wd / "workflow"))
        from heart.judging import material

        cfg = self.config
        families = {s: cfg["models"][c["model"]]["family"] for s, c in cfg["systems"].items()}
        families |= {s: c.get("family") or s for s, c in (cfg.get("imported_systems") or {}).items()}
        families |= {"original": "dataset", "human": "human"}
        pairs = pd.read_parquet(self.wd / "results" / "judging" / "pairs.parquet")
        orders = 1 if not cfg["judging"].get("both_orders") else 2
        total = 0
        per = {}
        for name, j in cfg["judging"]["judges"].items():
            fam = cfg["models"][j["model"]]["family"]
            n = int(material.eligible(pairs, fam, families, cfg["judging"]["exclude_own_family"]).sum()) * orders
            per[name] = n
            total += n
        self.out["pairs"] = len(pairs)
        self.out["expected_judge_calls_per_judge"] = per
        return total

    def snapshot(self, dest):
        """Copies of every Parquet table and CSV table under results/ (for the frame comparisons)."""
        n = 0
        for p in self.result_tables():
            target = dest / p.relative_to(self.wd / "results")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, target)
            n += 1
        return n

    def result_tables(self, root=None):
        root = root or self.wd / "results"
        return sorted([*root.rglob("*.parquet"), *(root / "tables").glob("*.csv")])

    def noop(self):
        r = self.run("no-op", self.snakemake_cmd(), quiet=True)
        ran = sum(1 for j in r.jobs.values())
        self.out["noop"] = {"wall_s": r.wall, "rc": r.rc, "jobs": ran, "nothing_to_do": r.nothing_to_do}
        if ran:
            self.notes.append(f"the no-op rerun ran {ran} jobs: "
                              + ", ".join(sorted({j['rule'] for j in r.jobs.values()})))
        ok = r.rc == 0 and ran == 0 and r.wall <= TARGETS["noop_s"]
        self.checks.append(("no-op rerun", f"{r.wall:.1f} s, {ran} jobs, exit {r.rc}",
                            f"<= {TARGETS['noop_s']:.0f} s, 0 jobs",
                            "PASS" if ok else "FAIL"))
        # for reference: Snakemake's dry run on the finished workdir
        d = self.run("dry-run", self.snakemake_cmd(flags=["-n"]), quiet=True)
        self.out["noop"]["dry_run_s"] = d.wall

    def alt_shards(self, reference):
        k = self.a.alt_shards
        overlay = self.write_overlay("shards.yaml", {"llm": {"shards": k}})
        before = self.sim_stats()
        r = self.run(f"shards-{k}", self.snakemake_cmd(overlays=[overlay]))
        after = self.sim_stats()
        calls = (after["successes"] - before["successes"]) if before and after else None
        self.out["shards"] = {"k": k, "wall_s": r.wall, "rc": r.rc, "calls": calls,
                              "jobs": len(r.jobs),
                              "requests": (after["requests"] - before["requests"]) if after else None}
        if r.rc:
            self.notes.append(f"llm.shards {k}: the run failed (exit {r.rc}, {r.log}): {r.errors[:4]}")
            self.checks.append((f"llm.shards {k} vs {self.config['llm']['shards']}", f"run failed (exit {r.rc})",
                                "frame-equal", "FAIL"))
            return
        cmp = compare_trees(reference, self.wd / "results", self.result_tables())
        self.out["shards"]["compare"] = cmp
        self.checks.append((f"llm.shards {k} vs {self.config['llm']['shards']}: tables",
                            summary(cmp), "frame-equal (but from_cache)", "PASS" if compare_ok(cmp) else "FAIL"))
        self.checks.append((f"llm.shards {k}: calls made", f"{calls}", "0 (all from the cache)",
                            "PASS" if calls == 0 else "FAIL"))

    def replay(self, reference):
        """No simulator; llm.replay = a copy of the first run's export; empty cache dir; results/ emptied."""
        export = reference / "llm" / "cache.parquet"
        rdir = self.dir / "replay"
        (rdir / "empty_cache").mkdir(parents=True)
        shutil.copy2(export, rdir / "cache.parquet")
        # the first run's outputs move aside (results/ keeps its tracked files only)
        aside = self.dir / "before_replay"
        aside.mkdir()
        tracked = set(subprocess.run(["git", "ls-files", "results"], cwd=self.wd, capture_output=True,
                                     text=True).stdout.split())
        for rel in ("logs", "benchmarks"):
            if (self.wd / rel).exists():
                shutil.move(self.wd / rel, aside / rel)
        (aside / "results").mkdir()
        for p in (self.wd / "results").iterdir():
            if str(p.relative_to(self.wd)) not in tracked:
                shutil.move(p, aside / "results" / p.name)
        # what a reviewer holds: the response cache's export and the human exports (resources/human/), not the
        # annotation store (platform ids): the replay's config points at a store that does not exist
        overlay = self.write_overlay("replay.yaml", {"llm": {"replay": ".rehearsal/replay/cache.parquet",
                                                             "cache_dir": ".rehearsal/replay/empty_cache"},
                                                     "annotation": {"db": ".rehearsal/replay/no-store.sqlite"}})
        with Listener(self.a.port) as listener:
            cmd = self.snakemake_cmd(overlays=[overlay])
            cmd[cmd.index("--cores") + 1] = str(self.a.replay_cores)
            r = self.run("replay", cmd)
            attempts = listener.count
        replay_peak = self.monitor.phase_peaks["replay"]
        called = sum(v["called"] for v in self.rule_log_calls().values())
        cached = sum(1 for _ in (rdir / "empty_cache").rglob("*.json"))
        self.out["replay"] = {"wall_s": r.wall, "rc": r.rc, "connections": attempts, "called_in_logs": called,
                              "jobs": len(r.jobs), "peak_rss": replay_peak, "new_cache_files": cached,
                              "replay_bytes": (rdir / "cache.parquet").stat().st_size,
                              "stages": stage_walls([r]),
                              "bench": bench_by_stage(self.wd / "benchmarks")}
        self.checks.append(("replay: network calls", f"{attempts} connection attempts to :{self.a.port}, "
                            f"{called} 'called' in rule logs, exit {r.rc}", "0, run succeeds",
                            "PASS" if attempts == 0 and called == 0 and r.rc == 0 else "FAIL"))
        if r.rc:
            self.notes.append(f"replay: the run failed (exit {r.rc}, {r.log}): {r.errors[:4]}")
            return
        cmp = compare_trees(reference, self.wd / "results", self.result_tables())
        # the tables a reviewer's replay cannot make (rehearsal.checks.REPLAY_LEAVES_OUT) are left out, by name
        _, left_out = checks.replay_scope(cmp["missing"])
        cmp["missing"] = [m for m in cmp["missing"] if m not in left_out]
        cmp["left_out"] = left_out
        self.out["replay"]["compare"] = cmp
        self.checks.append(("replay: tables vs first run", summary(cmp) + f" ({len(left_out)} left out: the "
                            "annotation store's own)", "frame-equal (but from_cache)",
                            "PASS" if compare_ok(cmp) else "FAIL"))

    def compare_modes(self, other):
        """This run's tables against another rehearsal's (``--compare-with``: the synchronous one): equal
        but for the columns that say how a row was obtained (MODE_COLUMNS), the rows that correlate Elo with
        this run's measured TTFT, and the cache export, whose entries carry batch ids."""
        from pathlib import Path

        from rehearsal.compare import MODE_COLUMNS, describe_compare, without_measured_timing

        files = [p for p in self.result_tables() if "llm/cache.parquet" not in str(p)]
        cmp = compare_trees(Path(other), self.wd / "results", files, transform=without_measured_timing)
        cmp["missing"] = [m for m in cmp["missing"] if m != "llm/cache.parquet"]
        self.out["modes_compare"] = cmp
        ok = compare_ok(cmp, MODE_COLUMNS)
        self.checks.append(("batch vs synchronous rehearsal: tables", summary(cmp, MODE_COLUMNS),
                            "frame-equal (but " + ", ".join(MODE_COLUMNS) + ")", "PASS" if ok else "FAIL"))
        if not ok:
            self.notes.extend(describe_compare(cmp, columns=MODE_COLUMNS))

    def rule_log_calls(self):
        """logs/<stage>/... -> the last "N requests, M from cache, K called, F failed" of each rule log."""
        out = {}
        for p in sorted((self.wd / "logs").rglob("*.log")):
            found = CALLS_RE.findall(p.read_text(errors="replace"))
            if found:
                n, c, k, f = (sum(int(x[i]) for x in found) for i in range(4))
                stage = LOG_STAGE.get(p.relative_to(self.wd / "logs").parts[0], "other")
                out[str(p.relative_to(self.wd))] = {"stage": stage, "requests": n, "cached": c, "called": k,
                                                    "failed": f}
        return out

    def cross_shard_duplicates(self):
        """Per stage: cache keys called (from_cache False) by more than one shard job. Each shard answers its
        own requests (identical ones within a job are sent once), so an identical request in two shards that
        run at the same time is paid twice: a repeated success at the simulator that no kill caused."""
        out = {}
        for folder in sorted((self.wd / "results").glob("*/shards/*")):
            called = defaultdict(set)
            for f in folder.glob("*.parquet"):
                try:
                    t = pd.read_parquet(f, columns=["cache_key", "from_cache"])
                except Exception:  # noqa: BLE001 - a table without these columns
                    continue
                for key in t.loc[~t["from_cache"].astype(bool), "cache_key"].dropna().unique():
                    called[key].add(f.name)
            extra = sum(len(v) - 1 for v in called.values() if len(v) > 1)
            if extra:
                out[str(folder.relative_to(self.wd / "results"))] = extra
        return out

    def llm_targets(self, runs):
        """Per LLM rule and target (system, judge, tagger): its shard jobs' span and wall, the calls the
        simulator answered for its model in the runs where that rule ran, and the bound the config sets:
        min(rpm / 60, max_concurrency / mean latency) per model (split over its shard jobs)."""
        wild = {"generate_completions": "system", "judge_pairs": "judge", "tag_strategies": "tagger"}
        cfg = self.config
        model_of = {"generate_completions": lambda n: cfg["systems"][n]["model"],
                    "judge_pairs": lambda n: cfg["judging"]["judges"][n]["model"],
                    "tag_strategies": lambda n: cfg["tagging"]["taggers"][n]["model"]}
        groups = defaultdict(list)
        for r in runs:
            for j in r.jobs.values():
                if j["rule"] in wild:
                    name = (j.get("wildcards") or {}).get(wild[j["rule"]], "?")
                    groups[(j["rule"], name)].append((j["start"], j.get("end") or r.end, bool(j.get("ok")), r))
        rows = []
        for (rule, name), jobs in sorted(groups.items(), key=lambda kv: min(j[0] for j in kv[1])):
            try:
                m = cfg["models"][model_of[rule](name)]
            except KeyError:
                m = {}
            sim_name = m.get("model", "/?").split("/", 1)[1]
            calls = 0
            for r in {j[3] for j in jobs}:
                if r.sim_before and r.sim_after:
                    calls += (r.sim_after["per_model"].get(sim_name, {}).get("successes", 0)
                              - r.sim_before["per_model"].get(sim_name, {}).get("successes", 0))
            first, last = min(j[0] for j in jobs), max(j[1] for j in jobs)
            bound = self.bound_per_s(m) if m else None
            rows.append({"rule": rule, "target": name, "jobs": sum(j[2] for j in jobs),
                         "not_ok": sum(not j[2] for j in jobs),
                         "first": first, "last": last, "wall_s": union_length([(a, b) for a, b, _, _ in jobs]),
                         "sim_calls": calls, "bound_per_s": bound, "rpm": m.get("rpm"),
                         "max_concurrency": m.get("max_concurrency")})
        return rows

    def _sim_batches(self):
        try:
            return self.sim.stats().get("batches")
        except Exception:  # the simulator already stopped: the count is in its last stats
            return (self.monitor.last_stats or {}).get("batches")

    def measure(self):
        runs = [r for r in self.runs if r.name in ("until-judging", "judging-killed", "rerun-after-kill", "report")]
        stages = stage_walls(runs)
        bench = bench_by_stage(self.wd / "benchmarks")
        logs = self.rule_log_calls()
        by_stage_logs = defaultdict(lambda: defaultdict(int))
        for v in logs.values():
            for k in ("requests", "cached", "called", "failed"):
                by_stage_logs[v["stage"]][k] += v[k]
        # simulator successes per stage: phase x model (completions in the first run; judges' and the tagger's
        # models in the runs after it: the paper config's judge and tagger models are distinct)
        judge_models = {self.sim_model(j["model"]) for j in self.config["judging"]["judges"].values()}
        tag_models = {self.sim_model(t["model"]) for t in self.config["tagging"]["taggers"].values()}
        sim_calls = defaultdict(int)
        for r in runs:
            if not (r.sim_before and r.sim_after):
                continue
            for m, c in r.sim_after["per_model"].items():
                d = c.get("successes", 0) - r.sim_before["per_model"].get(m, {}).get("successes", 0)
                if r.name == "until-judging":
                    sim_calls["completions"] += d
                elif m in judge_models and m in tag_models:
                    sim_calls["judging+tagging"] += d
                elif m in judge_models:
                    sim_calls["judging"] += d
                elif m in tag_models:
                    sim_calls["tagging"] += d
                else:
                    sim_calls["other"] += d
        self.out["stages"] = stages
        self.out["targets"] = self.llm_targets(runs)
        rounds = self.wd / "results/judging/adaptive.parquet"
        if rounds.exists():  # --adaptive: what the rounds chose, beside the fixed design
            r = pd.read_parquet(rounds)
            end = r.iloc[-1]
            self.out["adaptive"] = {"rounds_judged": int((r["n_round"] > 0).sum()), "pairs": int(end["n_chosen"]),
                                    "pairs_fixed": int(end["n_fixed"]), "calls": int(end["calls"]),
                                    "calls_fixed": int(end["calls_fixed"]), "ended": str(end["reason"]),
                                    "batches": self._sim_batches()}
        self.out["bench"] = bench
        self.out["calls_logs"] = {k: dict(v) for k, v in by_stage_logs.items()}
        self.out["calls_sim"] = dict(sim_calls)
        self.out["peak"] = {"rss": self.monitor.peak_rss, "pss": self.monitor.peak_pss,
                            "procs": self.monitor.peak_procs,
                            "phase": self.monitor.peak_at, "sim_rss": self.monitor.sim_peak_rss,
                            "by_job": sorted(self.monitor.peak_by_job.items(), key=lambda kv: -kv[1])[:8],
                            "parts": self.monitor.peak_parts}
        self.out["cache"] = dir_size(self.cache_dir)
        self.out["cache"]["temp_files"] = count_files(self.cache_dir, temp=True)
        parq = sorted(((p.stat().st_size, str(p.relative_to(self.wd)))
                       for p in (self.wd / "results").rglob("*.parquet")),
                      reverse=True)
        self.out["parquet"] = {"count": len(parq), "bytes": sum(s for s, _ in parq), "largest": parq[:10]}
        s = self.monitor.last_stats or {}
        self.out["sim"] = {k: s.get(k) for k in ("requests", "successes", "errors", "unique_successes",
                                                 "repeated_successes", "max_in_flight", "cpu_s")}
        self.out["sim_per_model"] = s.get("per_model", {})
        self.out["rate_peaks"] = self.rate_peaks()
        self.out["cross_shard_duplicates"] = self.cross_shard_duplicates()

    def rate_peaks(self):
        """Per model: the most successes the simulator gave in any 60 s (from the 2-s samples), vs config rpm."""
        series = self.monitor.series
        rpm = {self.sim_model(n): m.get("rpm") for n, m in self.config["models"].items()}
        out = {}
        j = 0
        for i, (t, counts, _, _) in enumerate(series):
            while series[j][0] < t - 60:
                j += 1
            for m, c in counts.items():
                d = c - series[j][1].get(m, 0)
                if d > out.get(m, (0,))[0]:
                    out[m] = (d, rpm.get(m))
        return out
