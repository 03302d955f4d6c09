"""Benchmark of the annotation web app, heart.annotation (prints its figures; not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_annotation.py [--raters 15] [--max-seconds 60] [--no-kill]
        [--strict]
    .venv/bin/python tests/benchmarks/bench_annotation.py --proxy [--raters 100] [--seconds 30] [--no-flood]
        [--flood-threads 32] [--no-kill] [--strict]

Everything runs on SYNTHETIC data (items, replies and answers all labelled "[synthetic]") in a temporary
directory; the real server runs as a subprocess (``python -m heart.annotation serve`` on a free port of
127.0.0.1), exactly as the coordinator starts it. Every simulated person connects from its own client address
(127.0.1.1, 127.0.1.2, ...: Linux lets a socket bind any 127.0.0.0/8 address), as people on the internet
do, so that the app's per-address rate limit (heart/annotation/guard.py) sees one person per address.
The first line printed names the machine (CPUs, memory), the date and the commit measured.

Without --proxy, straight to the app:

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

With --proxy, through the production TLS reverse proxy (nginx with workflow/resources/annotation/nginx.conf,
run by tests/support/annotation_proxy.py with a self-signed certificate every client verifies), the app started with
``serve --proxy 127.0.0.2`` (nginx connects from there; the app trusts its X-Forwarded-For), a fresh store for
each phase, 100 raters by default (the task table sized so that none runs out within ``--seconds``), each
phase ``--seconds`` long (30; the kill -9 phase at least 10 s beyond the restart). All raters start at
once, as in the direct mode; ``--ramp R`` spreads their first requests over R s (with a slow ``--think``, the
simultaneous first requests -- 100 TLS handshakes and page serves in one instant -- are a large share of all
requests and decide the p95):

1. Load: as above, every request timed by the client and by nginx ($request_time, and the app's share,
   $upstream_response_time, from its access log); count, p50, p95, p99, max for GET, POST and all, the
   statuses (429s), errors, the CPU each process used, and "p95 <= 200 ms: PASS/FAIL" (the client-measured
   p95 decides; the nginx-measured one is printed beside it). nginx's log must show every rater's address.
2. Flood (``--flood``, on by default): the same, plus one hostile client in its own process:
   ``--flood-threads`` (32) keep-alive connections from one address (127.0.2.1) sending requests back to
   back for the whole phase -- GETs of one rater's link, posts to it with made-up nonces, unknown paths.
   Printed: its request count and statuses by who answered (nginx's own 429 or the app's: the app's
   responses carry its Content-Security-Policy header), the flooded rater's figures, and the OTHER raters'
   client- and nginx-measured latency with "others' p95 <= 200 ms under flood: PASS/FAIL". The hostile
   client shares this machine's CPUs with the server (a real attacker's would not): its CPU is printed, and
   ``--flood-nice`` lowers its priority to tell the two effects apart.
3. kill -9 (``--kill``): as in 2. above, through nginx (which answers 502 while the app is down; a post
   answered 502 counts as not acknowledged), the app restarted on the same port; prints "acknowledged
   answers lost: N".

Exit status 1 if an acknowledged answer is lost or stored with another value, a rater does not resume where it
stopped, the integrity check fails, a phase acknowledged nothing, or (--proxy) nginx did not see each rater's
own address; a p95 over the target only prints FAIL (exit 1 with ``--strict``, which also fails on any
request error in the direct load phase).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import requests
import yaml
from requests.adapters import HTTPAdapter

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(REPO / "workflow")]

from support.annotation_proxy import NGINX, TlsProxy  # noqa: E402
from support.annotation_server import AnnotationServer, cli, free_port  # noqa: E402
from heart.judging import pairs as pairs_mod  # noqa: E402
from heart.annotation import db as store_db, links as store_links  # noqa: E402
from heart.annotation import tasks as tasks_mod  # noqa: E402

NONCE = re.compile(r'name="nonce" value="([^"]+)"')
#: a reverse proxy's answers when the app did not answer (down, killed mid-request, too slow)
GATEWAY_ERRORS = (502, 503, 504)


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
        if role != store_links.COORDINATOR:
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
                 deadline: float, stop: threading.Event, make_session=requests.Session,
                 post_headers: dict | None = None, ramp: float = 0.0):
        super().__init__(name=person, daemon=True)
        self.person, self.token, self.base = person, token, base
        self.think, self.rng, self.deadline, self.stop = think, random.Random(seed), deadline, stop
        self.make_session, self.post_headers = make_session, dict(post_headers or {})
        self.ramp = ramp  # wait uniform(0, ramp) s before the first page (people do not all start at once)
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
        if self.ramp and self.stop.wait(self.rng.uniform(0, self.ramp)):
            return
        with self.make_session() as session:
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
                resp = self.request(session, "POST", f"{page_url}/answer", data={"nonce": nonce, **value},
                                    headers=self.post_headers)
                if resp is None or resp.status_code in GATEWAY_ERRORS:
                    # no response, or the proxy's own (the app did not answer): the post may or may not
                    # have been stored; it was not acknowledged
                    if resp is not None:
                        self.errors.append(f"POST {resp.status_code}")
                    self.events.append(("lost_post", nonce, value, sent_at))
                    outage = True
                elif resp.status_code == 303:
                    self.events.append(("ack", nonce, value))
                    if not resp.headers.get("location", "").endswith(f"/p/{self.token}"):
                        self.errors.append(f"POST 303 to {resp.headers.get('location')!r}")
                else:
                    self.errors.append(f"POST {resp.status_code}")
                    outage = outage or resp.status_code >= 500


def run_people(links: dict[str, str], base: str, args, seconds: float, stop: threading.Event,
               make_session=None, post_headers=None, ramp: float = 0.0):
    """Start one :class:`Person` per link (sorted by person id); ``make_session(k)``: the k-th person's
    ``requests.Session`` (default: a plain one)."""
    deadline = time.monotonic() + seconds
    people = [Person(p, tok, base, tuple(args.think), args.seed * 1000 + k, deadline, stop,
                     make_session=(lambda k=k: make_session(k)) if make_session else requests.Session,
                     post_headers=post_headers, ramp=ramp)
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
    conn = store_db.connect(db)
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


def context_line(proxied: bool) -> str:
    """The machine and the code measured: CPUs, memory, date, commit (and whether the tree has changes)."""
    def proc(name: str) -> list[str]:
        path = Path("/proc") / name
        return path.read_text().splitlines() if path.exists() else []

    def git(*a) -> str:
        try:
            out = subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True, timeout=30)
            return out.stdout.strip()
        except OSError:
            return ""

    model = next((line.split(":", 1)[1].strip() for line in proc("cpuinfo") if line.startswith("model name")),
                 "?")
    mem = next((int(line.split()[1]) / 2**20 for line in proc("meminfo") if line.startswith("MemTotal")),
               float("nan"))
    commit = git("rev-parse", "--short", "HEAD") or "?"
    dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    nginx = ""
    if proxied and NGINX.exists():
        out = subprocess.run([str(NGINX), "-v"], capture_output=True, text=True).stderr.strip()
        nginx = f", {out.split(': ', 1)[-1]}"
    when = datetime.now().astimezone().isoformat(timespec="seconds")
    return (f"machine: {os.cpu_count()} CPUs ({model}), {mem:.1f} GiB, Python {platform.python_version()}"
            f"{nginx}; {when}; commit {commit}{dirty}")


# --- through the TLS proxy (--proxy) -----------------------------------------------------------------

PROXY_BIND = "127.0.0.2"      # nginx connects to the app from here; the app trusts forwarded headers from it
HOSTILE_ADDRESS = "127.0.2.1"  # the flooding client's one address


def rater_address(k: int) -> str:
    """The k-th simulated person's own client address (Linux lets a socket bind any 127.0.0.0/8 address)."""
    return f"127.0.1.{k + 1}"


class SourceAddressAdapter(HTTPAdapter):
    """A ``requests`` adapter whose connections leave from ``source``, so that each simulated person is its
    own client address to nginx's and the app's per-address limits (urllib3's PoolManager passes
    ``source_address`` on to every connection it makes)."""

    def __init__(self, source: str, **kw):
        self.source = source  # before super().__init__, which calls init_poolmanager
        super().__init__(**kw)

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        super().init_poolmanager(connections, maxsize, block, source_address=(self.source, 0), **pool_kwargs)


def person_session(source: str, cert=None) -> requests.Session:
    """A session whose connections leave from ``source``; with ``cert``, trusting that (the proxy's
    self-signed) certificate only. ``trust_env`` is off: REQUESTS_CA_BUNDLE in the environment would
    override ``verify``, and no *_PROXY variable may divert the requests."""
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", SourceAddressAdapter(source))
    session.mount("https://", SourceAddressAdapter(source))
    if cert is not None:
        session.verify = str(cert)
    return session


def start_app_and_proxy(workdir: Path, tasks_path: Path, name: str, servers: list, proxies: list):
    """A fresh store, the app on a free port started with ``--proxy 127.0.0.2``, and nginx in front:
    (db, person_id -> token, app, proxy)."""
    db, links = make_store(workdir, tasks_path, name)
    server = AnnotationServer(db, tasks_path, log=workdir / f"server-{name}.log", port=free_port(),
                              serve_args=["--proxy", PROXY_BIND])
    servers.append(server)
    server.start()
    proxy = TlsProxy(server.port, workdir / f"nginx-{name}", proxy_bind=PROXY_BIND)
    proxies.append(proxy)
    proxy.start()
    return db, links, server, proxy


ACCESS = re.compile(r'^\S+ (?P<addr>\S+) "(?P<method>\S+) (?P<path>[^"]*)" (?P<status>\d{3}) \d+ '
                    r'(?P<rt>[\d.]+) (?P<rest>.*)$')


def access_rows(log: Path) -> list[dict]:
    """nginx's access log (format heart_redacted): address, method, status, request time (s), the app's
    status ("-": nginx answered by itself) and its response time (s; None without one)."""
    rows = []
    for line in log.read_text().splitlines() if log.exists() else []:
        m = ACCESS.match(line)
        if not m:
            continue
        parts = m["rest"].replace(",", " ").split()  # "$upstream_status $upstream_response_time", each may
        half = len(parts) // 2                        # list several tries ("502, 200 0.001, 0.004")
        ups, times = parts[:half], parts[half:]
        ut = [float(t) for t in times if re.fullmatch(r"[\d.]+", t)]
        rows.append({"addr": m["addr"], "method": m["method"], "status": int(m["status"]),
                     "rt": float(m["rt"]), "upstream": ups[-1] if ups else "-",
                     "urt": sum(ut) if ut else None})
    return rows


def pct_line(label: str, ms, width: int = 6) -> str:
    ms = np.asarray(ms, dtype=float)
    if not len(ms):
        return f"    {label:<{width}} no requests"
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return (f"    {label:<{width}} n={len(ms):6d}  p50 {p50:6.1f}  p95 {p95:6.1f}  p99 {p99:6.1f}  "
            f"max {ms.max():7.1f} ms")


def client_figures(people, title: str) -> tuple[list[str], float]:
    """Client-measured latency of the people's requests (those with a response) by method: lines, p95."""
    rows = [(m, s, st) for p in people for (m, s, st) in p.timings if st is not None]
    lines = [f"  {title}"]
    for label in ("GET", "POST", "all"):
        lines.append(pct_line(label, [s * 1e3 for m, s, _ in rows if label == "all" or m == label]))
    ms = [s * 1e3 for _, s, _ in rows]
    return lines, float(np.percentile(ms, 95)) if ms else float("nan")


def status_summary(people) -> str:
    """Responses by status and requests without one, of the people's requests."""
    counts: dict = {}
    for p in people:
        for _, _, st in p.timings:
            counts[st] = counts.get(st, 0) + 1
    n_429 = counts.get(429, 0)
    no_resp = counts.pop(None, 0)
    hist = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    return f"statuses {hist}; 429s {n_429}; no response {no_resp}"


def nginx_figures(rows: list[dict], addresses: set[str], title: str) -> tuple[list[str], float]:
    """nginx-measured latency ($request_time, and the app's $upstream_response_time) of the requests from
    ``addresses``: lines, p95 of request_time."""
    mine = [r for r in rows if r["addr"] in addresses]
    lines = [f"  {title}"]
    for label in ("GET", "POST", "all"):
        lines.append(pct_line(label, [r["rt"] * 1e3 for r in mine if label == "all" or r["method"] == label]))
    lines.append(pct_line("app", [r["urt"] * 1e3 for r in mine if r["urt"] is not None]) +
                 "  ($upstream_response_time: the app's share)")
    ms = [r["rt"] * 1e3 for r in mine]
    return lines, float(np.percentile(ms, 95)) if ms else float("nan")


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a live process has used; 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            pass
    return kids


def cpu_snapshot(server, proxy, hostile_pid: int | None = None) -> dict[str, float]:
    """CPU seconds used so far by this process (the simulated people), the app, nginx (master and workers)
    and the hostile client."""
    snap = {"raters (this process)": time.process_time(),
            "app": _proc_cpu(server.proc.pid) if server.proc else 0.0,
            "nginx": sum(_proc_cpu(p) for p in [proxy.proc.pid, *_children(proxy.proc.pid)])}
    if hostile_pid:
        snap["hostile client"] = _proc_cpu(hostile_pid)
    return snap


def cpu_line(before: dict, after: dict, wall: float) -> str:
    used = {k: after[k] - before.get(k, 0.0) for k in after}
    parts = ", ".join(f"{k} {v:.1f} s ({v / wall:.0%} of a core)" for k, v in used.items())
    total = sum(used.values())
    return (f"  CPU over the {wall:.1f} s: {parts}; together {total:.1f} s of the "
            f"{os.cpu_count() * wall:.1f} s the {os.cpu_count()} CPUs have")


def hostile_client(url: str, cert: str, source: str, token: str, threads: int, seed: int, nice: int, stop,
                   ready, out_q):
    """The flooding client (run in its own process): ``threads`` connections from one address, each sending
    requests back to back until ``stop``: half GET of the victim's page, 15 % posts to the victim's answer
    with a made-up nonce, the rest unknown paths (random /p/<token> and random top-level paths). Puts
    ({(status, "nginx"|"app"): count}, {error: count}, seconds) on ``out_q``. A response with the app's
    Content-Security-Policy header comes from the app; without it, from nginx."""
    if nice:
        os.nice(nice)
    counts: dict = {}
    errors: dict = {}
    lock = threading.Lock()

    def flood(i: int) -> None:
        rng = random.Random(seed * 100 + i)
        mine, errs = {}, {}
        with person_session(source, cert) as session:
            while not stop.is_set():
                r = rng.random()
                if r < 0.5:
                    method, path, data = "GET", f"/p/{token}", None
                elif r < 0.65:
                    method, path = "POST", f"/p/{token}/answer"
                    data = {"nonce": f"{rng.getrandbits(128):032x}", "choice": "1",
                            "rationale": "flood flood flood"}
                elif r < 0.8:
                    method, path, data = "GET", f"/p/{rng.getrandbits(128):032x}", None
                else:
                    method, path, data = "GET", f"/{rng.getrandbits(32):08x}/{rng.getrandbits(32):08x}", None
                try:
                    resp = session.request(method, url + path, data=data, timeout=(3, 10),
                                           allow_redirects=False)
                except requests.RequestException as exc:
                    errs[type(exc).__name__] = errs.get(type(exc).__name__, 0) + 1
                    continue
                key = (resp.status_code, "app" if "content-security-policy" in resp.headers else "nginx")
                mine[key] = mine.get(key, 0) + 1
        with lock:
            for k, v in mine.items():
                counts[k] = counts.get(k, 0) + v
            for k, v in errs.items():
                errors[k] = errors.get(k, 0) + v

    t0 = time.perf_counter()
    workers = [threading.Thread(target=flood, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    ready.set()
    for w in workers:
        w.join()
    out_q.put((counts, errors, time.perf_counter() - t0))


def proxy_load_phase(label: str, name: str, workdir: Path, tasks_path: Path, args, servers: list,
                     proxies: list, flood: bool) -> tuple[list[str], list[str]]:
    """A load phase through nginx (with ``flood``: and the hostile client): (failed, strict_failed)."""
    failed, strict_failed = [], []
    db, links, server, proxy = start_app_and_proxy(workdir, tasks_path, name, servers, proxies)
    raters = {p: t for p, t in links.items() if p.startswith("rater")}
    order = sorted(raters)
    addresses = {p: rater_address(k) for k, p in enumerate(order)}
    victim = order[0] if flood else None
    hostile = None
    print(f"\n{label}: app on {server.url} (--proxy {PROXY_BIND}) behind nginx on {proxy.url}; {len(raters)} "
          f"raters from {addresses[order[0]]}-{addresses[order[-1]]}, think {args.think[0]}-{args.think[1]} s"
          f"{f', start spread over {args.ramp:.1f} s' if args.ramp else ''}, {args.seconds:.0f} s")
    if flood:
        ctx = mp.get_context("spawn")
        stop_h, ready, out_q = ctx.Event(), ctx.Event(), ctx.Queue()
        hostile = ctx.Process(target=hostile_client, daemon=True, args=(
            proxy.url, str(proxy.cert), HOSTILE_ADDRESS, raters[victim], args.flood_threads, args.seed,
            args.flood_nice, stop_h, ready, out_q))
        hostile.start()
        if not ready.wait(120):
            sys.exit("the hostile client did not start")
        time.sleep(1.0)  # let it reach full speed before the raters start
        print(f"  hostile client: {args.flood_threads} connections from {HOSTILE_ADDRESS} flooding "
              f"{victim}'s link ({addresses[victim]}) and unknown paths, from 1 s before the raters until "
              f"they stop" + (f" (at nice {args.flood_nice})" if args.flood_nice else ""))
    stop = threading.Event()
    cpu0 = cpu_snapshot(server, proxy, hostile.pid if hostile else None)
    t0 = time.perf_counter()
    people = run_people(raters, proxy.url, args, args.seconds, stop,
                        make_session=lambda k: person_session(rater_address(k), proxy.cert),
                        post_headers={"Origin": proxy.url}, ramp=args.ramp)
    join(people, args.seconds + 60)
    wall = time.perf_counter() - t0
    cpu1 = cpu_snapshot(server, proxy, hostile.pid if hostile else None)
    hostile_result = None
    if hostile:
        stop_h.set()
        hostile_result = out_q.get(timeout=120)
        hostile.join(30)
    proxy.stop()  # first: its keep-alive connections would hold up the app's clean shutdown
    server.stop()
    rows = access_rows(proxy.access_log)

    done = sum(any(e[0] == "done" for e in p.events) for p in people)
    n_acked = len(acks(people))
    print(f"  {wall:.1f} s: {n_acked} answers acknowledged ({n_acked / wall:.1f}/s), "
          f"{sum(len(p.timings) for p in people) / wall:.1f} rater requests/s; {done}/{len(people)} raters "
          f"ran out of tasks")
    seen = {r["addr"] for r in rows}
    rater_seen = seen & set(addresses.values())
    print(f"  nginx's access log: {len(rows)} requests from {len(seen)} distinct client addresses, "
          f"{len(rater_seen)} of the {len(raters)} raters' addresses"
          + (f" and the hostile {HOSTILE_ADDRESS}" if HOSTILE_ADDRESS in seen else ""))
    if len(rater_seen) != len(raters):
        failed.append(f"{name}: nginx did not see every rater's own address")
    print(cpu_line(cpu0, cpu1, wall))

    others = [p for p in people if p.person != victim]
    target = args.target_ms
    if flood:
        lines, p95 = client_figures(others, f"the other {len(others)} raters, client-measured (ms):")
        print("\n".join(lines))
        print(f"    {status_summary(others)}; errors: {error_summary(others)}")
        nl, np95 = nginx_figures(rows, {addresses[p.person] for p in others},
                                 "the other raters, nginx-measured ($request_time, ms):")
        print("\n".join(nl))
        (v,) = [p for p in people if p.person == victim]
        vl, _ = client_figures([v], f"the flooded rater {victim}, client-measured (ms):")
        print("\n".join(vl))
        n_v = sum(e[0] == "ack" for e in v.events)
        print(f"    {status_summary([v])}; answers acknowledged {n_v}")
        counts, errs, h_wall = hostile_result
        n_h = sum(counts.values())
        by = lambda origin: sum(c for (st, o), c in counts.items() if o == origin)  # noqa: E731
        hist = ", ".join(f"{st} {o} {c}" for (st, o), c in sorted(counts.items()))
        h_log = [r for r in rows if r["addr"] == HOSTILE_ADDRESS]
        print(f"  hostile client: {n_h} responses in {h_wall:.1f} s ({n_h / h_wall:.0f}/s), "
              f"{sum(errs.values())} requests without a response"
              + (f" ({', '.join(f'{k} x{c}' for k, c in sorted(errs.items()))})" if errs else ""))
        print(f"    by status and who answered: {hist}")
        print(f"    answered by nginx {by('nginx')} (its 429s: {counts.get((429, 'nginx'), 0)}), passed to "
              f"the app {by('app')} (the app's 429s: {counts.get((429, 'app'), 0)}); nginx's log: "
              f"{len(h_log)} requests, {sum(r['upstream'] == '-' for r in h_log)} without the app")
        verdict = "PASS" if p95 <= target else "FAIL"
        print(f"  others' p95 <= {target:.0f} ms under flood: {verdict} (client-measured p95 {p95:.1f} ms; "
              f"nginx-measured p95 {np95:.1f} ms: {'PASS' if np95 <= target else 'FAIL'})")
    else:
        lines, p95 = client_figures(people, f"{len(people)} raters, client-measured (ms):")
        print("\n".join(lines))
        print(f"    {status_summary(people)}; errors: {error_summary(people)}")
        nl, np95 = nginx_figures(rows, set(addresses.values()), "the same requests, nginx-measured "
                                 "($request_time, ms):")
        print("\n".join(nl))
        verdict = "PASS" if p95 <= target else "FAIL"
        print(f"  p95 <= {target:.0f} ms: {verdict} (client-measured p95 of all requests {p95:.1f} ms; "
              f"nginx-measured p95 {np95:.1f} ms: {'PASS' if np95 <= target else 'FAIL'})")
    if verdict != "PASS":
        strict_failed.append(f"{name}: p95 over target")
    print(f"  app log: {server_log_problems(server.log)}")
    res = check_acked(db, acks(people))
    ok = integrity(db)
    print(f"  answers acknowledged {res['acked']}, in store {res['in_store']}, lost {res['lost']}"
          + (f", stored with another value {res['different']}" if res["different"] else "")
          + (f", acknowledged twice {res['duplicate_tasks']}" if res["duplicate_tasks"] else "")
          + f"; integrity_check: {ok}")
    for ex in res["examples"][:5]:
        print(f"    {ex}")
    if res["lost"] or res["different"] or res["duplicate_tasks"]:
        failed.append(f"{name}: acknowledged answers lost or changed")
    if not res["acked"]:
        failed.append(f"{name}: no answer acknowledged (the phase measured nothing)")
    if ok != "ok":
        failed.append(f"{name}: integrity_check")
    return failed, strict_failed


# --- kill -9 -----------------------------------------------------------------------------------------

def kill_phase(label: str, workdir: Path, tasks_path: Path, who, args, seconds: float, servers: list,
               proxies: list, proxied: bool) -> list[str]:
    """A fresh store, the raters go, SIGKILL of the app, restart on the same port (with ``proxied``: the
    app behind nginx, which stays up and answers 502 meanwhile). Returns what failed."""
    failed = []
    if proxied:
        db, links, server, proxy = start_app_and_proxy(workdir, tasks_path, "kill", servers, proxies)
        base = proxy.url
        extra = dict(make_session=lambda k: person_session(rater_address(k), proxy.cert),
                     post_headers={"Origin": proxy.url}, ramp=args.ramp)
        where = f"app on {server.url} (--proxy {PROXY_BIND}) behind nginx on {proxy.url}"
    else:
        db, links = make_store(workdir, tasks_path, "kill")
        server = AnnotationServer(db, tasks_path, log=workdir / "server-kill.log", port=free_port())
        servers.append(server)
        server.start()
        base, where, proxy = server.url, f"server up on {server.url}", None
        extra = dict(make_session=lambda k: person_session(rater_address(k)), ramp=args.ramp)
    print(f"\n{label}: fresh store, {where}; {len(who(links))} raters go, SIGKILL after "
          f"{args.kill_after:.1f} s, down {args.down_seconds:.1f} s, restarted on the same store"
          + (" and port" if proxied else ""))
    stop = threading.Event()
    t0 = time.perf_counter()
    people = run_people(who(links), base, args, seconds, stop, **extra)
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
    join(people, seconds + 60)
    wall = time.perf_counter() - t0
    if proxy:
        proxy.stop()
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
    what = ("posts without the app's response (none, or nginx's 502)" if proxied
            else "posts without a response")
    print(f"  {what}: {len(in_flight)} in flight at the kill (stored by the killed "
          f"server: {by_killed}; either is correct, none was acknowledged), "
          f"{len(no_reply) - len(in_flight)} sent while it was down (refused)")
    res_all = check_acked(db, acks(people))
    ok_end = integrity(db)
    print(f"  whole phase ({wall:.1f} s, {done}/{len(people)} finished): answers acknowledged "
          f"{res_all['acked']}, in store {res_all['in_store']}, lost {res_all['lost']}"
          + (f", stored with another value {res_all['different']}" if res_all["different"] else "")
          + f"; integrity_check: {ok_end}")
    for ex in res_all["examples"][:5]:
        print(f"    {ex}")
    print(f"  request errors (the outage's {'502s and ' if proxied else ''}connection errors expected): "
          f"{error_summary(people)}; server log: {server_log_problems(server.log)}")
    if proxied:
        print(f"  acknowledged answers lost: {res_all['lost'] + res_all['different']} "
              f"(of {res_all['acked']} acknowledged; {res_all['different']} of them stored with another "
              f"value)")
    if res_all["lost"] or res_all["different"] or res_all["duplicate_tasks"]:
        failed.append("kill: acknowledged answers lost or changed")
    if not before or not rc["resumed"]:
        failed.append("kill: no answer acknowledged before the kill, or no rater came back after the "
                      "restart (the phase tested nothing: a longer phase?)")
    if rc["problems"] or rc["resumed_ok"] != rc["resumed"]:
        failed.append("kill: raters did not resume where they stopped")
    if ok != "ok" or ok_end != "ok":
        failed.append("kill: integrity_check")
    return failed


def direct_load_phase(workdir: Path, tasks_path: Path, who, args,
                      servers: list) -> tuple[list[str], list[str]]:
    """The load phase straight to the app (no proxy): (failed, strict_failed)."""
    failed, strict_failed = [], []
    db, links = make_store(workdir, tasks_path, "load")
    server = AnnotationServer(db, tasks_path, log=workdir / "server-load.log", port=free_port())
    servers.append(server)
    t_ready = timed(server.start)
    print(f"\n1. load: server up in {t_ready:.1f} s on {server.url}; {len(who(links))} people, think "
          f"{args.think[0]}-{args.think[1]} s, at most {args.max_seconds:.0f} s")
    stop = threading.Event()
    t0 = time.perf_counter()
    people = run_people(who(links), server.url, args, args.max_seconds, stop,
                        make_session=lambda k: person_session(rater_address(k)), ramp=args.ramp)
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
    if not res["acked"]:
        failed.append("load: no answer acknowledged (the phase measured nothing)")
    if ok != "ok":
        failed.append("load: integrity_check")
    if not p95 <= args.target_ms:
        strict_failed.append("p95 over target")
    if errors != "none":
        strict_failed.append("request errors in the load phase")
    return failed, strict_failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proxy", action="store_true",
                    help="through nginx (TLS, workflow/resources/annotation/nginx.conf): load, flood and "
                    "kill -9 phases with 100 raters")
    ap.add_argument("--raters", type=int, default=None, help="default: 15, with --proxy 100")
    ap.add_argument("--items", type=int, default=None,
                    help="synthetic items; 12 pairs each (default: 9 -> 108 pairs x per-pair 5 / 15 raters = "
                    "36 real tasks per rater on average; with --proxy: enough for every rater to keep "
                    "working for --seconds)")
    ap.add_argument("--per-pair", type=int, default=5)
    ap.add_argument("--qc-rate", type=float, default=0.1)
    ap.add_argument("--writers", type=int, default=3, help="writers in the task table")
    ap.add_argument("--simulate-writers", action="store_true", help="let the writers work too")
    ap.add_argument("--think", type=float, nargs=2, default=[0.2, 1.0], metavar=("MIN", "MAX"),
                    help="think time per task, uniform in seconds (default: %(default)s)")
    ap.add_argument("--ramp", type=float, default=0.0,
                    help="each person starts after uniform(0, RAMP) s (default: %(default)s, all at once)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=60.0, help="bound on each phase's work")
    ap.add_argument("--seconds", type=float, default=30.0,
                    help="with --proxy: the length of each phase (default: %(default)s)")
    ap.add_argument("--flood", action=argparse.BooleanOptionalAction, default=True,
                    help="with --proxy: the flood phase (one hostile client beside the raters)")
    ap.add_argument("--flood-threads", type=int, default=32,
                    help="the hostile client's concurrent connections (default: %(default)s)")
    ap.add_argument("--flood-nice", type=int, default=0,
                    help="run the hostile client at this nice value (default: %(default)s; it shares this "
                    "machine's CPUs with the server, which a real attacker's client would not)")
    ap.add_argument("--target-ms", type=float, default=200.0)
    ap.add_argument("--kill", action=argparse.BooleanOptionalAction, default=True, help="the kill -9 phase")
    ap.add_argument("--kill-after", type=float, default=3.0)
    ap.add_argument("--down-seconds", type=float, default=1.5, help="how long the killed server stays down")
    ap.add_argument("--strict", action="store_true", help="exit 1 also on p95 over target or request errors")
    ap.add_argument("--dir", type=Path, default=None, help="parent of the temporary directory")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.raters is None:
        args.raters = 100 if args.proxy else 15
    if args.raters + (args.writers if args.simulate_writers else 0) > 250:
        ap.error("at most 250 simulated people (one client address each, 127.0.1.1 ...)")
    if args.items is None:
        if args.proxy:  # every rater needs about seconds / mean think tasks; the fewest get ~60 % of the mean
            need = max(20.0, 1.3 * args.seconds / (sum(args.think) / 2))
            args.items = max(9, math.ceil(need / 0.6 * args.raters / (12 * args.per_pair)))
        else:
            args.items = 9

    print(context_line(args.proxy))
    workdir = Path(tempfile.mkdtemp(prefix="bench_annotation_", dir=args.dir))
    servers: list[AnnotationServer] = []
    proxies: list[TlsProxy] = []
    failed, strict_failed = [], []
    t_start = time.perf_counter()
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

        if args.proxy:
            f, sf = proxy_load_phase("1. load through the proxy", "load", workdir, tasks_path, args, servers,
                                     proxies, flood=False)
            failed += f
            strict_failed += sf
            if args.flood:
                f, sf = proxy_load_phase("2. flood: the same load and one hostile client", "flood", workdir,
                                         tasks_path, args, servers, proxies, flood=True)
                failed += f
                strict_failed += sf
            if args.kill:
                seconds = max(args.seconds, args.kill_after + args.down_seconds + 10)  # raters outlast it
                failed += kill_phase("3. kill -9 of the app behind the proxy", workdir, tasks_path,
                                     lambda links: {p: t for p, t in links.items() if p.startswith("rater")},
                                     args, seconds, servers, proxies, proxied=True)
        else:
            # 1. load
            f, sf = direct_load_phase(workdir, tasks_path, who, args, servers)
            failed += f
            strict_failed += sf
            # 2. kill -9
            if args.kill:
                failed += kill_phase("2. kill -9", workdir, tasks_path, who, args, args.max_seconds, servers,
                                     proxies, proxied=False)
    finally:
        for s in servers:
            s.stop()
        for p in proxies:
            p.stop()
        if args.keep:
            print(f"\nkept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return finish(args, failed, strict_failed, t_start)


def finish(args, failed: list[str], strict_failed: list[str], t_start: float) -> int:
    took = f" (benchmark ran {time.perf_counter() - t_start:.0f} s)"
    if failed:
        print(f"\nFAILED: {'; '.join(failed)}{took}")
        return 1
    if args.strict and strict_failed:
        print(f"\nFAILED (--strict): {'; '.join(strict_failed)}{took}")
        return 1
    note = f" (not strict: {'; '.join(strict_failed)})" if strict_failed else ""
    print(f"\nno acknowledged answer lost{note}{took}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
