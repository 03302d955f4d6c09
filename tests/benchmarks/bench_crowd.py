"""Benchmark: a crowd study runs to its end though people decline, return and time out (prints its figures; not
part of the test suite).

    .venv/bin/python tests/benchmarks/bench_crowd.py [--entrants 100] [--bad 0.2] [--places 60] [--items 16]
        [--idle 3] [--arrival 0.5] [--seed 7]

SIMULATED people on SYNTHETIC data (every text labelled "[synthetic]"), against the real server
(``python -m heart.annotation serve`` on a free port of 127.0.0.1) over a store made as a coordinator makes it
(``init`` with a task table of ``--places`` raters, each pair to two of them), with the study settings of a
crowd study: consent first, a completion code, and places idle for ``--idle`` seconds released (the setting
``annotation.crowd.release_idle_minutes``; 120 minutes in a real study, seconds here so that the run takes a
minute). Every entrant opens the study link from an address of its own (127.0.1.x: the app's per-address rate
limit sees one person per address) with a Prolific id, one every ``--arrival`` s, and acts out one of:

- complete (the others): consent, then answer every task (0.1-0.4 s per page), until the done page;
- decline (a third of ``--bad``): open the consent page and decline;
- return (a third): consent, answer one or two tasks, and leave (their place is released once idle);
- time out (a third): consent, open the first task, and never answer.

An entrant told "This study is full" (409, every place in use) leaves, as on a platform. Printed: entrants by
behaviour and outcome, places given back (by reason) and successors made, tasks done of all active tasks,
and the latency of every request (p50, p95, max). The study is complete when every active task has an answer;
exit status 1 if it is not, or any answer was acknowledged and not stored.
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(REPO / "workflow"), str(HERE)]

from bench_annotation import person_session, synthetic_tasks  # noqa: E402
from support.annotation_server import AnnotationServer, cli  # noqa: E402
from heart.annotation import crowd, db as store_db, links as store_links  # noqa: E402

NONCE = re.compile(r'name="nonce" value="([^"]+)"')
BEHAVIOURS = ("complete", "decline", "return", "time out")


class Entrant(threading.Thread):
    def __init__(self, k: int, behaviour: str, study_url: str, latencies: list, lock: threading.Lock, seed: int):
        super().__init__(daemon=True)
        self.k, self.behaviour, self.study_url = k, behaviour, study_url
        self.latencies, self.lock, self.rng = latencies, lock, random.Random(seed)
        self.session = person_session(f"127.0.1.{k + 1}")
        self.outcome, self.answered = "?", 0

    def request(self, method: str, url: str, **kw):
        for _ in range(50):  # a 429 (rate limit) is waited out, as a browser's user would
            t0 = time.perf_counter()
            r = self.session.request(method, url, allow_redirects=False, timeout=30, **kw)
            with self.lock:
                self.latencies.append(time.perf_counter() - t0)
            if r.status_code != 429:
                return r
            time.sleep(float(r.headers.get("Retry-After", "0.5")))
        raise RuntimeError(f"entrant {self.k}: rate-limited 50 times")

    def page(self, url: str):
        """GET ``url``, following this site's redirects (relative)."""
        r = self.request("GET", url)
        while r.status_code == 303:
            r = self.request("GET", self.base + r.headers["location"])
        return r

    def run(self):
        pid = f"5f{self.k:022d}"
        self.base = self.study_url.split("/s/")[0]
        r = self.request("GET", f"{self.study_url}?PROLIFIC_PID={pid}&STUDY_ID=bench&SESSION_ID=s{self.k}")
        if r.status_code == 409:
            self.outcome = "turned away (full)"
            return
        if r.status_code != 303:
            self.outcome = f"entry answered {r.status_code}"
            return
        link = self.base + r.headers["location"]
        page = self.page(link).text
        consent = NONCE.search(page).group(1)
        if self.behaviour == "decline":
            self.request("POST", f"{link}/consent", data={"nonce": consent, "agree": "0"})
            self.outcome = "declined"
            return
        self.request("POST", f"{link}/consent", data={"nonce": consent, "agree": "1"})
        stop_after = {"return": self.rng.choice([1, 2]), "time out": 0}.get(self.behaviour)
        while True:
            r = self.page(link)
            if r.status_code != 200:
                self.outcome = f"page answered {r.status_code}"
                return
            if 'id="done"' in r.text:
                self.outcome = "finished"
                return
            if stop_after is not None and self.answered >= stop_after:
                self.outcome = "left" if stop_after else "timed out"
                return  # never comes back: the place is released once idle
            time.sleep(self.rng.uniform(0.1, 0.4))
            r = self.request("POST", f"{link}/answer", data={"nonce": NONCE.search(r.text).group(1),
                                                             "choice": str(self.rng.randint(1, 5)),
                                                             "rationale": "[synthetic] it listens better"})
            if r.status_code == 303 and "shown=" not in r.headers["location"]:
                self.answered += 1
            elif r.status_code == 404 or (r.status_code == 303 and "shown=" in r.headers["location"]):
                self.outcome = "released while working"
                return


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entrants", type=int, default=100)
    ap.add_argument("--bad", type=float, default=0.2, help="share who decline, return or time out")
    ap.add_argument("--places", type=int, default=60, help="rater places of the study")
    ap.add_argument("--items", type=int, default=16, help="synthetic items (15 pairs each, every pair to 2 raters)")
    ap.add_argument("--idle", type=float, default=3.0, help="seconds idle before a place is released")
    ap.add_argument("--arrival", type=float, default=0.5, help="seconds between entrants")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    n_bad = round(args.entrants * args.bad)
    behaviours = [BEHAVIOURS[1 + k % 3] for k in range(n_bad)] + ["complete"] * (args.entrants - n_bad)
    rng.shuffle(behaviours)

    with tempfile.TemporaryDirectory(prefix="heart-bench-crowd-") as tmp:
        tmp = Path(tmp)
        tasks = synthetic_tasks(n_items=args.items, raters=args.places, per_pair=2, qc_rate=0.0, writers=0,
                                seed=args.seed)
        tasks.to_parquet(tmp / "tasks.parquet", index=False)
        db = tmp / "annotation.sqlite"
        cli("init", "--db", str(db), "--tasks", str(tmp / "tasks.parquet"))
        conn = store_db.connect(db)
        crowd.save_settings(conn, {"consent": True, "completion_code": "BENCH1",
                                   "release_idle_minutes": args.idle / 60})
        conn.close()
        server = AnnotationServer(db, log=tmp / "server.log").start()
        study_url = server.url + crowd.study_links(store_links.read_key(db))["rater"]
        latencies, lock, entrants = [], threading.Lock(), []
        t0 = time.monotonic()
        try:
            for k, behaviour in enumerate(behaviours):
                e = Entrant(k, behaviour, study_url, latencies, lock, args.seed * 1000 + k)
                e.start()
                entrants.append(e)
                time.sleep(args.arrival)
            for e in entrants:
                e.join(120)
        finally:
            server.stop()
        wall = time.monotonic() - t0
        conn = sqlite3.connect(db)
        total, done = conn.execute("SELECT COUNT(*), COUNT(a.task_id) FROM tasks t LEFT JOIN answers a "
                                   "USING (task_id) WHERE t.active = 1").fetchone()
        released = conn.execute("SELECT reason, COUNT(*), SUM(answered > 0) FROM released GROUP BY reason "
                                "ORDER BY reason").fetchall()
        successors = conn.execute("SELECT COUNT(*) FROM succession").fetchone()[0]
        stored = conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        conn.close()

    acked = sum(e.answered for e in entrants)
    print(f"SIMULATED crowd: {args.entrants} entrants ({n_bad} who decline, return or time out), {args.places} "
          f"rater places, {total} rating tasks, places idle {args.idle:g} s released; {wall:.0f} s wall")
    for behaviour in BEHAVIOURS:
        mine = [e for e in entrants if e.behaviour == behaviour]
        outcomes = {}
        for e in mine:
            outcomes[e.outcome] = outcomes.get(e.outcome, 0) + 1
        print(f"  {behaviour:9s} {len(mine):3d}: " + ", ".join(f"{v} {k}" for k, v in sorted(outcomes.items()))
              + f"; {sum(e.answered for e in mine)} answers")
    print("places given back: " + (", ".join(f"{n} {reason} ({int(a or 0)} with answers)"
                                              for reason, n, a in released) or "none")
          + f"; successors made: {successors}")
    lat = np.array(latencies) * 1000
    print(f"requests: {len(lat)}, latency p50 {np.percentile(lat, 50):.0f} ms, p95 {np.percentile(lat, 95):.0f} ms, "
          f"max {lat.max():.0f} ms")
    complete = done == total
    print(f"tasks done: {done} of {total} -> study {'COMPLETE' if complete else 'NOT complete'}; "
          f"answers acknowledged {acked}, stored {stored}: {'none lost' if stored >= acked else 'LOST'}")
    return 0 if complete and stored >= acked else 1


if __name__ == "__main__":
    sys.exit(main())
