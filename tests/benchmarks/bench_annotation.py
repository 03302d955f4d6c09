"""Benchmark of the annotation web app, heart.annotation (prints its figures; not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_annotation.py [--raters 15] [--max-seconds 60] [--no-kill]
        [--strict]

Everything runs on SYNTHETIC data (items, replies and answers all labelled "[synthetic]") in a temporary
directory; the real server runs as a subprocess (``python -m heart.annotation serve`` on a free port of
127.0.0.1), exactly as the coordinator starts it.

1. Load: a task table (heart.annotation.tasks: 15 raters with about 40 rating tasks each, quality checks at
   0.1, plus a few writers) is written to parquet, a store is made with ``heart.annotation init`` and the
   server started. 15 simulated raters (threads, one ``requests.Session`` each) then work concurrently:
   GET their page, parse its nonce, think (``--think``, default 0.2-1.0 s, seeded), POST the answer, follow
   the 303 to their next page ..., until their tasks are done or ``--max-seconds`` have passed. Every
   request's latency is recorded: count, p50, p95, p99 and max in ms for GET, POST and all, throughput, and
   the target line "p95 <= 200 ms: PASS/FAIL". Every answer the server acknowledged (303) is then looked up
   in the store (sqlite3: the page's nonce -> its task -> the answer) with the submitted choice/rationale.
2. kill -9 (``--kill``, on by default): a fresh store from the same table, the server started and the raters
   let go again; after ``--kill-after`` s (3) the server gets SIGKILL; it stays down ``--down-seconds``
   (1.5, longer than any think time, so every rater meets the outage) and is restarted on the same store
   while the raters keep retrying. Checked: every answer acknowledged before the kill is in the store, the
   raters resume at their next unanswered task (the first page after the outage serves the first task that
   had no answer when the server came back; no page ever serves a task whose answer was acknowledged), every
   answer acknowledged in the phase is in the store, and ``PRAGMA integrity_check`` is ok.

Exit status 1 if an acknowledged answer is lost or stored with another value, a rater does not resume where it
stopped, or the integrity check fails; a p95 over the target only prints FAIL (exit 1 with ``--strict``,
which also fails on any request error).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import requests
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(REPO / "workflow")]

from annotation_server import AnnotationServer, cli, free_port  # noqa: E402
from heart.judging import pairs as pairs_mod  # noqa: E402
from heart.annotation import store  # noqa: E402
from heart.annotation import tasks as tasks_mod  # noqa: E402

NONCE = re.compile(r'name="nonce" value="([^"]+)"')


# --- synthetic data ----------------------------------------------------------------------------------

def synthetic_items(n: int) -> pd.DataFrame:
    """``n`` synthetic items (every one with an original reply, so each can be a quality check)."""
    return pd.DataFrame([{
        "item_id": f"synthetic-{i:03d}", "conversation_id": 10_000 + i, "subset": "regular",
        "history": [{"role": "seeker", "text": f"[synthetic] I have felt low for weeks ({i})."},
                    {"role": "supporter", "text": "[synthetic] I am sorry. What has been going on?"},
                    {"role": "seeker", "text": f"[synthetic] Work {i} never stops, I cannot sleep."}],
        "original_reply": f"[synthetic] That sounds exhausting; no wonder you feel worn out ({i}).",
    } for i in range(n)])


def synthetic_completions(items: pd.DataFrame, systems=("model-x", "model-y", "model-z")) -> pd.DataFrame:
    """Per item: one reply per synthetic model, the original reply and two synthetic human replies."""
    rows = []
    for it in items.itertuples():
        rows += [{"item_id": it.item_id, "system": s, "source": "model", "contributor_id": None,
                  "text": f"[synthetic] {s} replies to {it.item_id}: that must be hard."} for s in systems]
        rows.append({"item_id": it.item_id, "system": "original", "source": "dataset", "contributor_id": None,
                     "text": it.original_reply})
        rows += [{"item_id": it.item_id, "system": "human", "source": "human", "contributor_id": w,
                  "text": f"[synthetic] {w} writes to {it.item_id}: I hear you."} for w in ("w1", "w2")]
    return pd.DataFrame(rows)


def synthetic_tasks(n_items: int, raters: int, per_pair: int, qc_rate: float, writers: int,
                    seed: int) -> pd.DataFrame:
    """Rating tasks (every pair of the design to ``per_pair`` raters, quality checks at ``qc_rate``) and
    writing tasks (every item to one of ``writers``)."""
    items = synthetic_items(n_items)
    comp = synthetic_completions(items)
    qc = yaml.safe_load((REPO / "workflow/resources/annotation/qc_replies.yaml").read_text())["replies"]
    pairs = pairs_mod.design(comp, items, seed)
    parts = [tasks_mod.rating_tasks(items, pairs, comp, raters=raters, per_pair=per_pair, qc_rate=qc_rate,
                                    qc_replies=qc, seed=seed)]
    if writers:
        parts.append(tasks_mod.writing_tasks(items, writers=writers, per_context=1, seed=seed))
    return pd.concat(parts, ignore_index=True)


# --- the server --------------------------------------------------------------------------------------

def timed(start) -> float:
    """Seconds until ``start()`` returned (the server answering)."""
    t0 = time.perf_counter()
    start()
    return time.perf_counter() - t0


def make_store(workdir: Path, tasks_path: Path, name: str) -> tuple[Path, dict[str, str]]:
    """``init`` a store and read everyone's link: (db, person_id -> token) of the raters and writers."""
    db = workdir / f"{name}.sqlite"
    cli("init", "--db", str(db), "--tasks", str(tasks_path))
    links = {}
    for line in cli("links", "--db", str(db), "--base", "http://x").splitlines():
        person, role, link = line.split("\t")
        if role != store.COORDINATOR:
            links[person] = link.rsplit("/", 1)[1]
    return db, links


# --- the simulated people ----------------------------------------------------------------------------

class Person(threading.Thread):
    """One simulated person: GET page -> nonce -> think -> POST -> GET next ..., retrying through outages.

    ``events`` is the person's history in order: ("serve", nonce), ("ack", nonce, value), ("lost_post",
    nonce, value, wall-clock time sent) for a post without a response, ("resume", nonce or None) for the
    first page after an outage (None: the done page), ("done",). ``timings`` holds (method, seconds,
    status) of every request.
    """

    def __init__(self, person: str, token: str, base: str, think: tuple[float, float], seed: int,
                 deadline: float, stop: threading.Event):
        super().__init__(name=person, daemon=True)
        self.person, self.token, self.base = person, token, base
        self.think, self.rng, self.deadline, self.stop = think, random.Random(seed), deadline, stop
        self.events: list[tuple] = []
        self.timings: list[tuple[str, float, int | None]] = []
        self.errors: list[str] = []
        self.n = 0

    def request(self, session, method, url, **kw):
        t = time.perf_counter()
        try:
            resp = session.request(method, url, timeout=(3, 30), allow_redirects=False, **kw)
        except requests.RequestException as exc:
            self.timings.append((method, time.perf_counter() - t, None))
            self.errors.append(f"{method} {type(exc).__name__}")
            return None
        self.timings.append((method, time.perf_counter() - t, resp.status_code))
        return resp

    def answer(self, page: str) -> dict:
        self.n += 1
        if 'id="rating-form"' in page:
            return {"choice": str(self.rng.randint(1, 5)),
                    "rationale": f"[synthetic] {self.person} reason {self.n}: it picks up the feeling."}
        if 'id="writing-form"' in page:
            return {"reply": f"[synthetic] {self.person} reply {self.n}: that sounds so hard, I am here.",
                    "pasted": "0"}
        if 'id="spot-form"' in page:
            return {"none": "1"}
        raise RuntimeError(f"{self.person}: a page with no known form:\n{page[:2000]}")

    def run(self):
        page_url = f"{self.base}/p/{self.token}"
        outage = False
        with requests.Session() as session:
            while not self.stop.is_set() and time.monotonic() < self.deadline:
                resp = self.request(session, "GET", page_url)
                if resp is None or resp.status_code != 200:
                    if resp is not None:
                        self.errors.append(f"GET {resp.status_code}")
                    outage = True
                    self.stop.wait(0.1)
                    continue
                page = resp.text
                if 'id="done"' in page:
                    if outage:
                        self.events.append(("resume", None))
                    self.events.append(("done",))
                    return
                nonce = NONCE.search(page).group(1)
                self.events.append(("serve", nonce))
                if outage:
                    self.events.append(("resume", nonce))
                    outage = False
                value = self.answer(page)
                if self.stop.wait(self.rng.uniform(*self.think)) or time.monotonic() >= self.deadline:
                    return
                sent_at = time.time()
                resp = self.request(session, "POST", f"{page_url}/answer", data={"nonce": nonce, **value})
                if resp is None:
                    self.events.append(("lost_post", nonce, value, sent_at))
                    outage = True
                elif resp.status_code == 303:
                    self.events.append(("ack", nonce, value))
                    if not resp.headers.get("location", "").endswith(f"/p/{self.token}"):
                        self.errors.append(f"POST 303 to {resp.headers.get('location')!r}")
                else:
                    self.errors.append(f"POST {resp.status_code}")
                    outage = outage or resp.status_code >= 500


def run_people(links: dict[str, str], base: str, args, seconds: float, stop: threading.Event):
    deadline = time.monotonic() + seconds
    people = [Person(p, tok, base, tuple(args.think), args.seed * 1000 + k, deadline, stop)
              for k, (p, tok) in enumerate(sorted(links.items()))]
    for p in people:
        p.start()
    return people


def join(people, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    for p in people:
        p.join(max(0.0, end - time.monotonic()))
        if p.is_alive():
            sys.exit(f"{p.person} did not stop")


# --- checks against the store ------------------------------------------------------------------------

def expected(value: dict) -> dict:
    """What the store should hold for a posted form (the app collapses whitespace)."""
    if "choice" in value:
        return {"choice": int(value["choice"]), "rationale": " ".join(value["rationale"].split())}
    if "reply" in value:
        return {"text": " ".join(value["reply"].split())}
    return {"present": []}


def read_store(db: Path):
    """(nonce -> task_id, task_id -> answer row, task_id -> task row) read straight from SQLite."""
    conn = store.connect(db)
    try:
        serves = {r["nonce"]: r["task_id"] for r in conn.execute("SELECT nonce, task_id FROM serves")}
        answers = {r["task_id"]: dict(r) for r in conn.execute("SELECT * FROM answers")}
        tasks = {r["task_id"]: dict(r) for r in conn.execute(
            "SELECT task_id, person_id, position, active FROM tasks")}
    finally:
        conn.close()
    return serves, answers, tasks


def check_acked(db: Path, acked: list[tuple[str, str, dict]]) -> dict:
    """Every acknowledged (person, nonce, value) looked up: in store with its value, or lost / different."""
    serves, answers, _ = read_store(db)
    out = {"acked": len(acked), "in_store": 0, "lost": 0, "different": 0, "duplicate_tasks": 0,
           "examples": []}
    seen = set()
    for person, nonce, value in acked:
        task_id = serves.get(nonce)
        row = answers.get(task_id)
        if task_id is not None and task_id in seen:
            out["duplicate_tasks"] += 1
        seen.add(task_id)
        if row is None or row["person_id"] != person:
            out["lost"] += 1
            out["examples"].append(f"{person}: nonce {nonce[:8]}.. task {task_id}: no answer")
            continue
        stored = json.loads(row["answer"])
        want = expected(value)
        if {k: stored.get(k) for k in want} != want:
            out["different"] += 1
            out["examples"].append(f"{person}: task {task_id}: stored {stored}, posted {want}")
        else:
            out["in_store"] += 1
    return out


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()


def acks(people) -> list[tuple[str, str, dict]]:
    return [(p.person, e[1], e[2]) for p in people for e in list(p.events) if e[0] == "ack"]


def resume_check(db: Path, people, killed_at: float) -> dict:
    """Did every rater resume at its next unanswered task after the outage, and never see an acknowledged
    task again? ``killed_at``: wall-clock time of the kill (the store's ``answered_at`` is the server's wall
    clock, as is this one): the answers stored before it are those the restarted server found."""
    serves, answers, tasks = read_store(db)
    out = {"resumed": 0, "resumed_ok": 0, "repeats": 0, "problems": []}
    for p in people:
        acked_tasks, first_resume = set(), None
        for e in list(p.events):
            if e[0] == "ack":
                acked_tasks.add(serves.get(e[1]))
            elif e[0] == "serve" and serves.get(e[1]) in acked_tasks:
                out["repeats"] += 1
                out["problems"].append(f"{p.person}: served task {serves[e[1]]} again after its answer "
                                       "was acknowledged")
            elif e[0] == "resume" and first_resume is None:
                first_resume = (e[1], set(acked_tasks))
        if first_resume is None:
            continue
        out["resumed"] += 1
        mine = sorted((t["position"], t["task_id"]) for t in tasks.values()
                      if t["person_id"] == p.person and t["active"])
        pending = [tid for _, tid in mine if tid not in answers or answers[tid]["answered_at"] > killed_at]
        want = pending[0] if pending else None
        got = serves.get(first_resume[0]) if first_resume[0] else None
        if got == want and got not in first_resume[1]:
            out["resumed_ok"] += 1
        else:
            out["problems"].append(f"{p.person}: first page after the outage served {got}, expected {want}")
    return out


# --- report ------------------------------------------------------------------------------------------

def latency_lines(people, wall: float, target_ms: float) -> tuple[list[str], float]:
    rows = [(m, s, st) for p in people for (m, s, st) in p.timings if st is not None]
    lines = []
    p95_all = float("nan")
    for label, sel in (("GET", "GET"), ("POST", "POST"), ("all", None)):
        ms = np.array([s for m, s, _ in rows if sel is None or m == sel]) * 1e3
        if not len(ms):
            lines.append(f"  {label:<4} no requests")
            continue
        p50, p95, p99 = np.percentile(ms, [50, 95, 99])
        lines.append(f"  {label:<4} n={len(ms):5d}  p50 {p50:6.1f}  p95 {p95:6.1f}  p99 {p99:6.1f}  "
                     f"max {ms.max():7.1f} ms")
        if sel is None:
            p95_all = p95
    n_ans = len(acks(people))
    lines.append(f"  throughput: {len(rows) / wall:.1f} requests/s, {n_ans / wall:.1f} answers/s "
                 f"over {wall:.1f} s")
    lines.append(f"  p95 <= {target_ms:.0f} ms: {'PASS' if p95_all <= target_ms else 'FAIL'} "
                 f"(p95 of all requests {p95_all:.1f} ms)")
    return lines, p95_all


def error_summary(people) -> str:
    errs: dict[str, int] = {}
    for p in people:
        for e in p.errors:
            errs[e] = errs.get(e, 0) + 1
    return ", ".join(f"{k} x{v}" for k, v in sorted(errs.items())) or "none"


def server_log_problems(log: Path) -> str:
    text = log.read_text() if log.exists() else ""
    n_tb = text.count("Traceback")
    locked = text.count("database is locked")
    return f"{n_tb} tracebacks, {locked} 'database is locked'" + (
        f"\n--- server log tail ---\n{text[-3000:]}" if n_tb else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raters", type=int, default=15)
    ap.add_argument("--items", type=int, default=9,
                    help="synthetic items; 12 pairs each (default: %(default)s -> 108 pairs x per-pair 5 / "
                    "15 raters = 36 real tasks per rater on average)")
    ap.add_argument("--per-pair", type=int, default=5)
    ap.add_argument("--qc-rate", type=float, default=0.1)
    ap.add_argument("--writers", type=int, default=3, help="writers in the task table")
    ap.add_argument("--simulate-writers", action="store_true", help="let the writers work too")
    ap.add_argument("--think", type=float, nargs=2, default=[0.2, 1.0], metavar=("MIN", "MAX"),
                    help="think time per task, uniform in seconds (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=60.0, help="bound on each phase's work")
    ap.add_argument("--target-ms", type=float, default=200.0)
    ap.add_argument("--kill", action=argparse.BooleanOptionalAction, default=True, help="the kill -9 phase")
    ap.add_argument("--kill-after", type=float, default=3.0)
    ap.add_argument("--down-seconds", type=float, default=1.5, help="how long the killed server stays down")
    ap.add_argument("--strict", action="store_true", help="exit 1 also on p95 over target or request errors")
    ap.add_argument("--dir", type=Path, default=None, help="parent of the temporary directory")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench_annotation_", dir=args.dir))
    servers: list[AnnotationServer] = []
    failed, strict_failed = [], []
    try:
        tasks = synthetic_tasks(args.items, args.raters, args.per_pair, args.qc_rate, args.writers, args.seed)
        tasks_path = workdir / "tasks.parquet"
        tasks.to_parquet(tasks_path, index=False)
        rating = tasks[tasks["kind"] == "rating"]
        per = rating.groupby("person_id").size()
        print(f"SYNTHETIC task table: {len(rating)} rating tasks for {len(per)} raters "
              f"({per.min()}-{per.max()} each, mean {per.mean():.1f}; "
              f"{rating['qc_expected'].notna().sum()} quality checks), "
              f"{(tasks['kind'] == 'writing').sum()} writing tasks for {args.writers} writers; "
              f"store in {workdir} ({os.cpu_count()} CPUs)")

        def who(links):
            return {p: t for p, t in links.items() if p.startswith("rater") or
                    (args.simulate_writers and p.startswith("writer"))}

        # 1. load
        db, links = make_store(workdir, tasks_path, "load")
        server = AnnotationServer(db, tasks_path, log=workdir / "server-load.log", port=free_port())
        servers.append(server)
        t_ready = timed(server.start)
        print(f"\n1. load: server up in {t_ready:.1f} s on {server.url}; {len(who(links))} people, think "
              f"{args.think[0]}-{args.think[1]} s, at most {args.max_seconds:.0f} s")
        stop = threading.Event()
        t0 = time.perf_counter()
        people = run_people(who(links), server.url, args, args.max_seconds, stop)
        join(people, args.max_seconds + 60)
        wall = time.perf_counter() - t0
        server.stop()
        done = sum(any(e[0] == "done" for e in p.events) for p in people)
        lines, p95 = latency_lines(people, wall, args.target_ms)
        print(f"  {done}/{len(people)} people finished all their tasks in {wall:.1f} s")
        print("\n".join(lines))
        errors = error_summary(people)
        print(f"  request errors: {errors}; server log: {server_log_problems(server.log)}")
        res = check_acked(db, acks(people))
        print(f"  answers acknowledged {res['acked']}, in store {res['in_store']}, lost {res['lost']}"
              + (f", stored with another value {res['different']}" if res["different"] else "")
              + (f", acknowledged twice {res['duplicate_tasks']}" if res["duplicate_tasks"] else ""))
        for ex in res["examples"][:5]:
            print(f"    {ex}")
        ok = integrity(db)
        print(f"  integrity_check: {ok}")
        if res["lost"] or res["different"] or res["duplicate_tasks"]:
            failed.append("load: acknowledged answers lost or changed")
        if ok != "ok":
            failed.append("load: integrity_check")
        if not p95 <= args.target_ms:
            strict_failed.append("p95 over target")
        if errors != "none":
            strict_failed.append("request errors in the load phase")

        # 2. kill -9
        if args.kill:
            db, links = make_store(workdir, tasks_path, "kill")
            server = AnnotationServer(db, tasks_path, log=workdir / "server-kill.log", port=free_port())
            servers.append(server)
            server.start()
            print(f"\n2. kill -9: fresh store, server up on {server.url}; raters go, SIGKILL after "
                  f"{args.kill_after:.1f} s, down {args.down_seconds:.1f} s, restarted on the same store")
            stop = threading.Event()
            t0 = time.perf_counter()
            people = run_people(who(links), server.url, args, args.max_seconds, stop)
            time.sleep(args.kill_after)
            pid = server.proc.pid
            kill_sent = time.time()
            server.kill()
            killed_at = time.time()
            t_kill = time.perf_counter() - t0
            before = acks(people)  # nothing can be acknowledged while the server is dead
            time.sleep(args.down_seconds)
            t_restart = timed(server.start)
            print(f"  killed pid {pid} at {t_kill:.2f} s with {len(before)} answers acknowledged; "
                  f"restarted, answering again after {t_restart:.1f} s")
            res = check_acked(db, before)
            print(f"  answers acknowledged before the kill {res['acked']}, in store {res['in_store']}, "
                  f"lost {res['lost']}"
                  + (f", stored with another value {res['different']}" if res["different"] else ""))
            for ex in res["examples"][:5]:
                print(f"    {ex}")
            if res["lost"] or res["different"] or res["duplicate_tasks"]:
                failed.append("kill: answers acknowledged before the kill lost or changed")
            ok = integrity(db)
            print(f"  integrity_check after the restart: {ok}")
            join(people, args.max_seconds + 60)
            wall = time.perf_counter() - t0
            server.stop()
            done = sum(any(e[0] == "done" for e in p.events) for p in people)
            rc = resume_check(db, people, killed_at)
            print(f"  raters that met the outage: {rc['resumed']}/{len(people)}; resumed at their next "
                  f"unanswered task: {rc['resumed_ok']}/{rc['resumed']}; pages repeating an acknowledged "
                  f"task: {rc['repeats']}")
            for pr in rc["problems"][:5]:
                print(f"    {pr}")
            serves, answers, _ = read_store(db)
            no_reply = [(serves.get(e[1]), e[3]) for p in people for e in p.events if e[0] == "lost_post"]
            in_flight = [t for t, sent in no_reply if sent < kill_sent]
            by_killed = sum(t in answers and answers[t]["answered_at"] < killed_at for t in in_flight)
            print(f"  posts without a response: {len(in_flight)} in flight at the kill (stored by the killed "
                  f"server: {by_killed}; either is correct, none was acknowledged), "
                  f"{len(no_reply) - len(in_flight)} sent while it was down (refused)")
            res_all = check_acked(db, acks(people))
            ok_end = integrity(db)
            print(f"  whole phase ({wall:.1f} s, {done}/{len(people)} finished): answers acknowledged "
                  f"{res_all['acked']}, in store {res_all['in_store']}, lost {res_all['lost']}"
                  + (f", stored with another value {res_all['different']}" if res_all["different"] else "")
                  + f"; integrity_check: {ok_end}")
            print(f"  request errors (the outage's connection errors expected): {error_summary(people)}; "
                  f"server log: {server_log_problems(server.log)}")
            if res_all["lost"] or res_all["different"] or res_all["duplicate_tasks"]:
                failed.append("kill: acknowledged answers lost or changed")
            if rc["problems"] or rc["resumed_ok"] != rc["resumed"]:
                failed.append("kill: raters did not resume where they stopped")
            if ok != "ok" or ok_end != "ok":
                failed.append("kill: integrity_check")
    finally:
        for s in servers:
            s.stop()
        if args.keep:
            print(f"\nkept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    if failed:
        print(f"\nFAILED: {'; '.join(failed)}")
        return 1
    if args.strict and strict_failed:
        print(f"\nFAILED (--strict): {'; '.join(strict_failed)}")
        return 1
    note = f" (not strict: {'; '.join(strict_failed)})" if strict_failed else ""
    print(f"\nno acknowledged answer lost{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
