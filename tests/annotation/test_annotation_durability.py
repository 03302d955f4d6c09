"""heart.annotation survives ``kill -9``: the real server (``python -m heart.annotation serve``) as a
subprocess on 127.0.0.1 over a small SYNTHETIC store (2 raters x 6 rating tasks), killed with SIGKILL
after one rater's third answer and restarted on the same store.

Nothing here is timed: the checks are what the store holds and what the pages serve. The load and latency
figures are tests/benchmarks/bench_annotation.py's.
"""

from __future__ import annotations

import html
import json
import re
import signal
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
import requests

from support.annotation_server import AnnotationServer, cli, synthetic_rating_tasks
from heart.annotation import db as store_db, store

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
NONCE = re.compile(r'name="nonce" value="([^"]+)"')
RESPONSE = re.compile(r'<article class="response" id="response-([ab])"><h2>Response [AB]</h2><p>(.*?)</p>',
                      re.S)
SEED = 5


def synthetic_tasks() -> pd.DataFrame:
    """Every pair to both raters (per_pair 2 of 2), no quality checks: 6 rating tasks per rater."""
    out = synthetic_rating_tasks(raters=2, seed=SEED)
    assert out.groupby("person_id").size().to_dict() == {"rater-01": 6, "rater-02": 6}
    return out


@pytest.fixture
def server(request, tmp_path):
    """start(db, tasks) -> (process, base url): the real server on a free port, answering. Every process
    started is killed by the finaliser, whatever the test's outcome."""
    started: list[AnnotationServer] = []
    request.addfinalizer(lambda: [s.kill() for s in started])

    def start(db: Path, tasks: Path):
        started.append(AnnotationServer(db, tasks, log=tmp_path / f"server-{len(started)}.log").start())
        return started[-1].proc, started[-1].url

    return start


def shown(page: str) -> tuple[str, str]:
    """(text A, text B) of a rating page."""
    found = dict(RESPONSE.findall(page))
    return html.unescape(found["a"]), html.unescape(found["b"])


def get_page(session, url) -> tuple[str, str]:
    resp = session.get(url, timeout=30)
    assert resp.status_code == 200, resp.text[:500]
    return resp.text, NONCE.search(resp.text).group(1) if 'id="done"' not in resp.text else ""


def post(session, url, nonce, choice, rationale):
    return session.post(f"{url}/answer", data={"nonce": nonce, "choice": str(choice), "rationale": rationale},
                        timeout=30, allow_redirects=False)


def stored(db: Path, person: str) -> pd.DataFrame:
    """The person's answers by task, as the page posted them (without the server's flags)."""
    conn = store_db.connect(db)
    try:
        out = store.answers_frame(conn)
    finally:
        conn.close()
    out["answer"] = [{k: v for k, v in a.items() if k != "server"} for a in out["answer"]]
    return out[out["person_id"] == person].set_index("task_id")


def integrity(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def test_answers_survive_kill_9_and_raters_resume(server, tmp_path):
    tasks = synthetic_tasks()
    tasks_path, db = tmp_path / "tasks.parquet", tmp_path / "store.sqlite"
    tasks.to_parquet(tasks_path, index=False)
    cli("init", "--db", str(db), "--tasks", str(tasks_path))
    links = {person: link.rsplit("/", 1)[1] for person, role, link in
             (line.split("\t") for line in cli("links", "--db", str(db), "--base", "http://x").splitlines())
             if role == "rater"}
    order = {p: g.sort_values("position") for p, g in tasks.groupby("person_id")}
    mine = order["rater-01"]
    expected_texts = list(zip(mine["text_a"], mine["text_b"]))
    assert len(set(expected_texts)) == 6  # every task of the rater shows different texts

    proc, base = server(db, tasks_path)
    url = f"{base}/p/{links['rater-01']}"
    session = requests.Session()
    submitted, nonces = {}, []
    for i, choice in enumerate([2, 5, 1]):
        page, nonce = get_page(session, url)
        assert shown(page) == expected_texts[i]
        rationale = f"[synthetic] reason number {i}: it listens"
        resp = post(session, url, nonce, choice, rationale)
        assert resp.status_code == 303 and resp.headers["location"] == f"/p/{links['rater-01']}"
        submitted[mine["task_id"].iloc[i]] = {"choice": choice, "rationale": rationale}
        nonces.append(nonce)
    page, _ = get_page(session, url)  # the 4th task served by the server about to die
    assert shown(page) == expected_texts[3]

    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL

    _, base = server(db, tasks_path)
    url = f"{base}/p/{links['rater-01']}"
    session = requests.Session()
    answers = stored(db, "rater-01")
    assert len(answers) == 3 and set(answers.index) == set(submitted)
    for task_id, value in submitted.items():
        assert answers.at[task_id, "answer"] == value
    assert integrity(db) == ["ok"]

    # the rater resumes at the 4th task, not a repeat of an answered one
    page, nonce = get_page(session, url)
    assert shown(page) == expected_texts[3] and shown(page) not in expected_texts[:3]
    assert re.search(r"Task\s+4\s+of\s+6", page)

    # the first page's nonce (from the killed server) posted again: no second answer, the first one kept
    resp = post(session, url, nonces[0], 4, "[synthetic] a resubmitted old form")
    assert resp.status_code < 500
    answers = stored(db, "rater-01")
    first = mine["task_id"].iloc[0]
    assert len(answers) == 3 and answers.at[first, "answer"] == submitted[first]
    page, nonce = get_page(session, url)
    assert shown(page) == expected_texts[3]

    # answering continues to the end
    for i in range(3, 6):
        assert shown(page) == expected_texts[i]
        rationale = f"[synthetic] reason number {i}: after the restart"
        assert post(session, url, nonce, 3, rationale).status_code == 303
        submitted[mine["task_id"].iloc[i]] = {"choice": 3, "rationale": rationale}
        page, nonce = get_page(session, url)
    assert 'id="done"' in page
    answers = stored(db, "rater-01")
    assert len(answers) == 6
    assert {t: answers.at[t, "answer"] for t in answers.index} == submitted
    assert answers.index.is_unique

    # the other rater was not touched and starts at their first task
    assert stored(db, "rater-02").empty
    other = order["rater-02"]
    page, _ = get_page(requests.Session(), f"{base}/p/{links['rater-02']}")
    assert shown(page) == (other["text_a"].iloc[0], other["text_b"].iloc[0])
    assert integrity(db) == ["ok"]
    conn = sqlite3.connect(db)
    try:
        n_answers = conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        raw = {r[0]: {k: v for k, v in json.loads(r[1]).items() if k != "server"}  # as posted
               for r in conn.execute("SELECT task_id, answer FROM answers")}
    finally:
        conn.close()
    assert n_answers == 6 and raw == submitted


def test_restore_while_a_server_holds_the_store_is_refused_and_nothing_acknowledged_is_lost(server, tmp_path):
    """The issue's case: ``restore --force`` while the server answers replaced the file under it, and the next
    acknowledged answer was lost. Now the restore is refused (naming the serving process), the store is
    unchanged and the server goes on answering; once the server stops, the same restore goes through. The
    store, its backup and the restored copy are readable by their owner only (they hold platform ids)."""
    import os
    import stat

    tasks = synthetic_tasks()
    tasks_path, db = tmp_path / "tasks.parquet", tmp_path / "store.sqlite"
    tasks.to_parquet(tasks_path, index=False)
    cli("init", "--db", str(db), "--tasks", str(tasks_path))
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    token = next(link.rsplit("/", 1)[1] for person, role, link in
                 (line.split("\t") for line in cli("links", "--db", str(db), "--base", "http://x").splitlines())
                 if person == "rater-01")
    proc, base = server(db, tasks_path)
    url, session = f"{base}/p/{token}", requests.Session()
    page, nonce = get_page(session, url)
    assert post(session, url, nonce, 2, "[synthetic] one").status_code == 303
    cli("backup", "--db", str(db), str(tmp_path / "backup"))
    copy = tmp_path / "backup" / db.name
    assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600
    page, nonce = get_page(session, url)
    assert post(session, url, nonce, 5, "[synthetic] two, after the backup").status_code == 303

    with pytest.raises(AssertionError, match=rf"in use by pid {proc.pid} \(serve it.*Stop the server first"):
        cli("restore", "--db", str(db), "--force", str(copy))
    assert len(stored(db, "rater-01")) == 2  # the store was not replaced
    page, nonce = get_page(session, url)  # and the server goes on: its third answer is kept too
    assert post(session, url, nonce, 1, "[synthetic] three").status_code == 303
    assert re.search(r"Task\s+4\s+of\s+6", get_page(session, url)[0])

    # a second server on the same store is refused the same way
    with pytest.raises(AssertionError, match="in use by pid"):
        cli("serve", "--db", str(db), "--port", "9")

    proc.terminate()
    proc.wait(timeout=30)
    assert len(stored(db, "rater-01")) == 3
    cli("restore", "--db", str(db), "--force", str(copy))  # the server stopped: the restore goes through
    assert len(stored(db, "rater-01")) == 1 and stat.S_IMODE(os.stat(db).st_mode) == 0o600


def test_links_and_revoke_print_the_public_address_serve_was_given(server, tmp_path):
    """`links` and `revoke` printed http://127.0.0.1:8765 links unless --base was given, which the docs never
    said: after `serve --public-url`, they print links under it (--base still overrides)."""
    tasks_path, db = tmp_path / "tasks.parquet", tmp_path / "store.sqlite"
    synthetic_tasks().to_parquet(tasks_path, index=False)
    cli("init", "--db", str(db), "--tasks", str(tasks_path))
    assert all(line.split("\t")[2].startswith("http://127.0.0.1:8765/")
               for line in cli("links", "--db", str(db)).splitlines())
    from support.annotation_server import AnnotationServer

    app = AnnotationServer(db, tasks_path, log=tmp_path / "server.log",
                           serve_args=["--public-url", "https://study.example.org"]).start()
    try:
        printed = cli("links", "--db", str(db)).splitlines()
        assert printed and all(line.split("\t")[2].startswith("https://study.example.org/p/")
                               or line.split("\t")[2].startswith("https://study.example.org/c/") for line in printed)
        assert cli("revoke", "--db", str(db), "rater-01").startswith("https://study.example.org/p/")
        assert cli("links", "--db", str(db), "--base", "http://other:1").split("\t")[2].startswith("http://other:1/")
    finally:
        app.kill()


def test_a_missing_task_table_names_the_commands_that_make_it(tmp_path):
    """The error suggested `make annotation-tasks`, which does not exist."""
    with pytest.raises(AssertionError, match=r"does not exist: make it with `make annotate`.*results/annotation/"
                                             r"tasks\.parquet") as err:
        cli("init", "--db", str(tmp_path / "store.sqlite"), "--tasks", str(tmp_path / "missing.parquet"))
    assert "annotation-tasks" not in str(err.value)
