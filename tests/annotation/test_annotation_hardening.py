"""The annotation pages against what a crowd on the open internet sends (issue: crowd-ready pages). Each test
here reproduces one defect found on 127.0.0.1 and fails on the code before its fix. Every person, answer and
text is SYNTHETIC, made by the test; the real server runs where a socket matters."""

import csv
import json
import socket
import threading
import time

import pandas as pd
import pytest
import uvicorn

from support.annotation_server import cli, free_port
from heart.annotation import app as app_mod
from heart.annotation import audit as store_audit, db as store_db, export, guard, store, tasks
from heart.completions import imported
from heart.judging import human_judgments, pairs as pairs_mod
from support.annotation import QC, TAXONOMY, answer, make_completions, make_items, nonce_of, serve, stored

HOSTILE_TEXTS = ["Sure\x00thing", "Esc\x1b[31m red", "It\u0092s hard for you", "bidi \u202e evil",
                 "tab\tand\nline breaks are fine", "emoji \U0001F469\u200d\U0001F4BB is fine"]


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_text_the_readers_would_refuse_is_refused_at_the_form_and_what_is_kept_reads_back(study, text):
    """NUL, ESC, a C1 control (a mis-decoded curly quote) or a bidi override is refused with a message the
    writer can act on; whatever is accepted survives the export and the workflow's strict readers."""
    client, links, db = study["client"], study["links"], study["db"]
    r = answer(client, links["writer-01"], reply=f"I hear you. {text} What happened next?")
    answered = len(stored(db))
    if r.status_code == 422:
        assert answered == 0 and ("control character" in r.text or "text-direction" in r.text)
        return
    assert r.status_code == 303 and answered == 1
    rater = answer(client, links["rater-01"], choice="2", rationale=f"A is warmer: {text}")
    assert rater.status_code == 303
    out = study["tmp"] / "out"
    export.export(db, out / "c.csv", out / "j.csv", out / "l.csv", ["affirmation"])
    humans, problems = imported.import_humans(out / "c.csv", study["items"])
    assert problems.empty and len(humans) == 1  # the one reply written
    judged = human_judgments.read(out / "j.csv")
    assert " ".join(text.split()) in judged["rationale"].iloc[0]


@pytest.mark.e2e  # a server or a process of its own beside the test
def test_a_coordinator_voids_one_answer_and_the_audit_log_says_so(study):
    """`heart-annotate void` withdraws one stored answer (kept in table voided), the task is served again,
    and the audit log records the answer, the void and its reason; the export follows."""
    client, links, db = study["client"], study["links"], study["db"]
    assert answer(client, links["writer-01"], reply="A reply I want withdrawn.").status_code == 303
    task_id = stored(db)["task_id"].iloc[0]
    listing = cli("answers", "--db", str(db), "--person", "writer-01")
    assert task_id in listing and "A reply I want withdrawn" in listing
    with pytest.raises(AssertionError, match="--reason"):
        cli("void", "--db", str(db), task_id)
    out = cli("void", "--db", str(db), task_id, "--reason", "typed a phone number")
    assert "served again" in out and stored(db).empty
    page = client.get(links["writer-01"]).text
    assert "Task 1 of" in page  # the same task again
    conn = store_db.connect(db)
    try:
        voided = conn.execute("SELECT task_id, reason FROM voided").fetchall()
        audit = store_audit.audit_frame(conn)
    finally:
        conn.close()
    assert [tuple(v) for v in voided] == [(task_id, "typed a phone number")]
    assert audit["event"].tolist() == ["answer", "void"]
    assert json.loads(audit["detail"].iloc[1])["reason"] == "typed a phone number"
    with pytest.raises(AssertionError, match="has no answer"):
        cli("void", "--db", str(db), task_id, "--reason", "twice")


def test_every_reply_a_rater_compares_is_laid_out_the_same_way():
    """The release's original replies keep line breaks, double spaces and edge whitespace (37, 52 and 94 of
    280), models' and people's do not: every shown reply is normalised, in real pairs, quality checks and
    spot checks alike."""
    items = make_items(4)
    items["original_reply"] = ["  Line one.\nLine two.  ", "Two  spaces.", "\tTabbed\r\nreply ", "Plain."]
    comp = make_completions(items)
    comp.loc[comp["system"] == "secret-model-x", "text"] = "Model  reply\nwith a break"
    pairs = pairs_mod.design(comp, items, 5)
    table = pd.concat([tasks.rating_tasks(items, pairs, comp, 2, 2, 0.3, QC, 5),
                       tasks.spot_check_tasks(comp, items, 6, 2, 2, 5)], ignore_index=True)
    shown = pd.concat([table["text_a"], table["text_b"], table["text"]]).dropna()
    assert len(shown) > 20
    assert all(t == " ".join(t.split()) for t in shown), [t for t in shown if t != " ".join(t.split())]
    assert "Line one. Line two." in set(shown)


def test_a_raters_quality_checks_use_contexts_they_do_not_otherwise_judge():
    """A check shows the item's original reply; a rater who met it there would know the reference in a real
    pair of the same context. With contexts to spare, no check shares a context with the rater's pairs; in a
    study too small for that, the check comes after the rater's real pairs of its context."""
    items = make_items(12)
    comp = make_completions(items)
    pairs = pairs_mod.design(comp, items, 5)
    few = pairs[pairs["item_id"].isin([f"item{i}" for i in range(4)])]
    table = tasks.rating_tasks(items, few, comp, 3, 2, 0.3, QC, 5)
    for person, mine in table.groupby("person_id"):
        real = set(mine.loc[mine["qc_expected"].isna(), "item_id"])
        checks = set(mine.loc[mine["qc_expected"].notna(), "item_id"])
        assert checks and not checks & real, person
    small = make_items(2)
    comp2 = make_completions(small)
    table = tasks.rating_tasks(small, pairs_mod.design(comp2, small, 5), comp2, 1, 1, 0.4, QC, 5)
    for item, g in table.groupby("item_id"):
        real = g.loc[g["qc_expected"].isna(), "position"]
        checks = g.loc[g["qc_expected"].notna(), "position"]
        assert checks.empty or real.empty or checks.min() > real.max(), item


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://evil\",\"x\")", " =1+1", "\u00a0=1+1", "\u200b=cmd|'/c calc'!A1",
                                  "\uff1dSUM(1)", "@SUM(1)", "-2+3"])
def test_formula_like_text_is_inert_in_every_export_and_reads_back_unchanged(tmp_path, text):
    frame = pd.DataFrame({"item_id": ["i1"], "contributor_id": ["w1"], "text": [text], "seconds_spent": [3.0],
                          "pasted": [0]})
    path = tmp_path / "completions.csv"
    export._write(frame, path)
    with open(path, newline="") as fh:
        cell = list(csv.DictReader(fh))[0]["text"]
    assert cell.startswith("'"), cell  # a spreadsheet shows it as text
    back = imported.import_humans(path, make_items(2).assign(item_id=["i1", "i2"]))[0]
    assert back["text"].iloc[0] == text.strip()  # the reader takes the apostrophe off again (and trims edges)


@pytest.mark.parametrize("origin", ["http://[::1", "http://a:b:c:d", "\x7f", "http://[zz]"])
def test_a_malformed_origin_is_refused_not_a_server_error(study, origin):
    client, link = study["client"], study["links"]["writer-01"]
    page = client.get(link).text
    r = client.post(f"{link}/answer", data={"nonce": nonce_of(page), "reply": "hello there"},
                    headers={"origin": origin}, follow_redirects=False)
    assert r.status_code == 403 and stored(study["db"]).empty


def test_every_response_carries_the_security_headers_and_no_host_is_echoed(study):
    client, link = study["client"], study["links"]["writer-01"]
    responses = {
        "405": client.put(link),
        "404": client.get("/nothing"),
        "slash": client.get(f"{link}/", headers={"host": "evil.example"}, follow_redirects=False),
        "413": client.post(f"{link}/answer", content=b"x" * 10, headers={"content-type": "text/plain"}),
        "303": answer(client, link, reply="Thank you for telling me."),
    }
    for name, r in responses.items():
        assert r.headers.get("content-security-policy", "").startswith("default-src 'none'"), name
        assert r.headers.get("referrer-policy") == "no-referrer", name
        assert "evil.example" not in r.headers.get("location", "") + r.text, name
    assert responses["405"].status_code == 405 and responses["slash"].status_code == 404
    assert responses["303"].headers["location"] == link  # relative, never built from Host
    coordinator = client.get(study["links"]["coordinator"], headers={"host": "evil.example"}).text
    assert "evil.example" not in coordinator


def test_a_reload_reuses_the_open_page_writes_nothing_and_keeps_the_clock(study, monkeypatch):
    """Each reload used to make a fresh nonce, restart the clock (an answer 0.019 s after a 3 s view) and
    write a row. Now the open page's nonce and first serve time are kept, and a view writes nothing."""
    client, link, db = study["client"], study["links"]["rater-01"], study["db"]
    clock = [1000.0]
    monkeypatch.setattr(store_db, "now", lambda: clock[0])
    first = nonce_of(client.get(link).text)
    writes = []  # every write transaction the app opens from here on
    real = store_db.transaction
    monkeypatch.setattr(store, "transaction", lambda conn: writes.append(1) or real(conn))
    for t in (1001.0, 1002.0, 1003.0):
        clock[0] = t
        assert nonce_of(client.get(link).text) == first
    assert writes == []
    conn = store_db.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM serves").fetchone()[0] == 1
    conn.close()
    clock[0] = 1003.019
    r = client.post(f"{link}/answer", data={"nonce": first, "choice": "2", "rationale": "warmer, specific"},
                    follow_redirects=False)
    assert r.status_code == 303
    got = stored(db).iloc[0]
    assert got["seconds"] == pytest.approx(3.019) and got["answer"]["server"]["fast"] is True


def test_invisible_reasons_are_refused_and_text_faster_than_typing_is_flagged_pasted(study, monkeypatch):
    client, links, db = study["client"], study["links"], study["db"]
    r = answer(client, links["rater-01"], choice="2", rationale="\u200b" * 5)
    assert r.status_code == 422 and "why you chose" in r.text
    clock = [5000.0]
    monkeypatch.setattr(store_db, "now", lambda: clock[0])
    page = client.get(links["writer-01"]).text
    clock[0] = 5002.0  # 2 s for 120 characters: nobody types that
    text = "I am so sorry you are going through this; it sounds exhausting. What has helped you before, even a bit?"
    r = client.post(f"{links['writer-01']}/answer", data={"nonce": nonce_of(page), "reply": text, "pasted": "0"},
                    follow_redirects=False)
    assert r.status_code == 303
    a = stored(db).iloc[0]["answer"]
    assert a["pasted"] is False and a["server"]["pasted_rate"] is True  # the client said no; the server knows
    out = study["tmp"] / "o"
    export.export(db, out / "c.csv", out / "j.csv", out / "l.csv", ["affirmation"])
    assert pd.read_csv(out / "c.csv")["pasted"].tolist() == [1]


def test_a_flood_of_one_link_is_cut_off_cheaply_while_another_person_goes_on(tmp_path):
    """Rate limits per link and per address answer 429 (with the security headers) before any store access."""
    items = make_items()
    table = tasks.writing_tasks(items, 2, 1, 5)
    db = tmp_path / "a.sqlite"
    # a link's burst of 30 and (nearly) no refill, so the count does not depend on this machine's speed
    client, links = serve(db, table, rate_limits={"link": (0.001, 30), "address": (1000.0, 1000)})
    flood = [client.get(links["writer-01"]).status_code for _ in range(60)]
    assert flood == [200] * 30 + [429] * 30
    limited = client.get(links["writer-01"])
    assert limited.status_code == 429 and limited.headers["retry-after"] and \
        limited.headers["content-security-policy"].startswith("default-src")
    other = client.get(links["writer-02"])  # same address (the test client), so only the link limit is spent
    assert other.status_code == 200
    assert guard.link_of("/s/abc") is None and guard.link_of("/p/abc/answer") == "p/abc"  # a study link is shared


def _server(app, port, head_timeout):
    class Protocol(guard.BoundedH11Protocol):
        pass
    Protocol.head_timeout = head_timeout
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=Protocol, log_level="warning",
                            access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    return server, thread


@pytest.mark.e2e  # a server or a process of its own beside the test
def test_half_open_connections_are_closed_after_the_head_timeout(tmp_path):
    """1,000 half-open connections used to stay open. A connection that has not sent its request head within
    the head timeout is closed, and a normal request is served meanwhile."""
    db = tmp_path / "a.sqlite"
    store.create(db)
    port = free_port()
    server, thread = _server(app_mod.create_app(db, TAXONOMY), port, head_timeout=1.0)
    try:
        held = []
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finished
            held.append(s)
        ok = socket.create_connection(("127.0.0.1", port), timeout=5)
        ok.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert ok.recv(64).startswith(b"HTTP/1.1 200")
        ok.close()
        time.sleep(3.0)
        closed = 0
        for s in held:
            s.settimeout(2)
            try:
                closed += s.recv(1) == b""
            except OSError:
                closed += 1
            s.close()
        assert closed == 100
    finally:
        server.should_exit = True
        thread.join(10)
