"""People from a crowd platform: a study link, consent, practice with feedback, attention checks that stop a
rater, the completion code, the coordinator's rows; and the store's operations (online backup and restore,
the audit log). Through the HTTP interface (FastAPI's TestClient); every person and answer is SYNTHETIC."""

import re
import threading
import time

import pandas as pd
import pytest
import yaml

from support.annotation_server import cli
from heart.annotation import audit as store_audit, crowd, db as store_db, links as store_links, store, tasks
from heart.annotation.app import STUDY_TEXTS
from heart.judging import pairs as pairs_mod
from support.annotation import QC, make_completions, make_items, nonce_of, serve, stored

PROLIFIC = "?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=65aa01&SESSION_ID=s-01"
TEXTS = yaml.safe_load(STUDY_TEXTS.read_text())
UNLIMITED = {"address": (1e6, 10**6), "link": (1e6, 10**6)}


@pytest.fixture
def crowd_study(tmp_path):
    """Two raters (many quality checks) and a writer over six items, with consent, practice, a stop rule and
    a completion code; the app and the study links."""
    items = make_items(6)
    comp = make_completions(items)
    pairs = pairs_mod.design(comp, items, 5)
    table = pd.concat([tasks.writing_tasks(items, 1, 1, 5),
                       tasks.rating_tasks(items, pairs[pairs["item_id"].isin(["item0", "item1"])], comp, 2, 2,
                                          0.5, QC, 5)], ignore_index=True)
    db = tmp_path / "annotation.sqlite"
    store.create(db)
    conn = store_db.connect(db)
    crowd.save_settings(conn, {"consent": True, "practice": True, "completion_code": "C0DE42",
                               "completion_url": "https://app.prolific.com/submissions/complete?cc={code}",
                               "stopped_code": "SCREENED", "stop_after_qc_failures": 2})
    conn.close()
    client, links = serve(db, table, rate_limits=UNLIMITED)  # one test client plays every person, quickly
    key = store_links.read_key(db)
    return {"client": client, "links": links, "db": db, "tasks": table, "study": crowd.study_links(key)}


def enter(client, path):
    """Open a study link; returns the person's own link it redirects to."""
    r = client.get(path, follow_redirects=False)
    assert r.status_code == 303, r.text
    return r.headers["location"]


def consent_and_practise(client, link, role="rater"):
    page = client.get(link).text
    assert TEXTS["consent"]["heading"] in page and 'id="agree"' in page
    r = client.post(f"{link}/consent", data={"nonce": nonce_of(page), "agree": "1"}, follow_redirects=False)
    assert r.status_code == 303
    for item in TEXTS["practice"][role]:
        page = client.get(link).text
        assert "Practice" in page and "not counted" in page
        fields = ({"choice": "1" if item["expected"] == "A" else "5", "rationale": "it reflects the feeling"}
                  if role == "rater" else {"reply": "That sounds frightening. What worries you most?"})
        r = client.post(f"{link}/practice", data={"nonce": nonce_of(page), **fields})
        assert r.status_code == 200 and "well done" in r.text and item["feedback"].split()[0] in r.text


def test_a_study_link_provisions_each_participant_once_and_never_exports_their_id(crowd_study):
    client, study = crowd_study["client"], crowd_study["study"]
    first = enter(client, study["rater"] + PROLIFIC)
    assert enter(client, study["rater"] + PROLIFIC) == first  # same participant, same person
    second = enter(client, study["rater"] + PROLIFIC.replace("5f1e", "6a2b"))
    assert second != first and second.startswith("/p/")
    full = client.get(study["rater"] + "?PROLIFIC_PID=third0000", follow_redirects=False)
    assert full.status_code == 409 and "full" in full.text  # two raters, two places
    for bad in ("", "?PROLIFIC_PID=%3Cscript%3E", "?STUDY_ID=x"):
        r = client.get(study["rater"] + bad, follow_redirects=False)
        assert r.status_code == 400 and "participant" in r.text, bad
    assert client.get("/s/not-a-study-token" + PROLIFIC).status_code == 404
    conn = store_db.connect(crowd_study["db"])
    try:
        assert sorted(crowd.participants(conn).values()) == ["5f1e2d3c4b5a69788796a5b4", "6a2b2d3c4b5a69788796a5b4"]
        audit = store_audit.audit_frame(conn)
    finally:
        conn.close()
    assert audit["event"].tolist() == ["provision", "provision"]
    assert "5f1e" not in audit.to_csv()


def test_consent_practice_tasks_then_the_completion_code(crowd_study):
    client, link = crowd_study["client"], enter(crowd_study["client"], crowd_study["study"]["rater"] + PROLIFIC)
    page = client.get(link).text
    assert "Response A" not in page  # no task before consent
    decline = client.post(f"{link}/consent", data={"nonce": nonce_of(page), "agree": "0"})
    assert "not agreed" in decline.text and "given to someone else" in decline.text
    assert client.get(link).status_code == 404  # the place was given back: its old link is dead
    link = enter(client, crowd_study["study"]["rater"] + PROLIFIC)  # changed their mind: a place again
    assert TEXTS["consent"]["heading"] in client.get(link).text
    bad = client.post(f"{link}/consent", data={"nonce": "forged", "agree": "1"})
    assert bad.status_code == 403
    consent_and_practise(client, link)
    mine = crowd_study["tasks"][crowd_study["tasks"]["person_id"] == "rater-01"].sort_values("position")
    for task in mine.itertuples():
        page = client.get(link).text
        good = "5" if task.qc_expected == "B" else "1"
        r = client.post(f"{link}/answer", data={"nonce": nonce_of(page), "choice": good,
                                                "rationale": "it stays with the seeker"}, follow_redirects=False)
        assert r.status_code == 303
    done = client.get(link).text
    assert "C0DE42" in done and "https://app.prolific.com/submissions/complete?cc=C0DE42" in done
    assert len(stored(crowd_study["db"])) == len(mine)  # practice answers are not data


def test_a_rater_failing_attention_checks_is_stopped_flagged_and_audited(crowd_study):
    client = crowd_study["client"]
    link = enter(client, crowd_study["study"]["rater"] + PROLIFIC)
    consent_and_practise(client, link)
    person = "rater-01"
    mine = crowd_study["tasks"][crowd_study["tasks"]["person_id"] == person].sort_values("position")
    failed = 0
    for task in mine.itertuples():
        page = client.get(link).text
        if "stopped" in page or "ended for you" in page:
            break
        wrong = "5" if task.qc_expected == "A" else "1"  # against every check
        r = client.post(f"{link}/answer", data={"nonce": nonce_of(page), "choice": wrong,
                                                "rationale": "picked at random"}, follow_redirects=False)
        assert r.status_code == 303
        failed += pd.notna(task.qc_expected)
    assert failed == 2
    page = client.get(link).text
    assert "ended for you" in page and "SCREENED" in page and "C0DE42" not in page
    coordinator = client.get(crowd_study["links"]["coordinator"]).text
    row = re.search(r'<tr id="person-rater-01"[^>]*>.*?</tr>', coordinator, re.S).group(0)
    assert 'class="flag"' in row
    assert 'stopped<span class="reason" dir="auto">failed 2 of 2 attention checks</span>' in row
    assert "5f1e2d3c4b5a69788796a5b4" in row  # the coordinator sees who to reject on the platform
    conn = store_db.connect(crowd_study["db"])
    try:
        events = store_audit.audit_frame(conn)["event"].tolist()
    finally:
        conn.close()
    assert events.count("stop") == 1 and events[:3] == ["provision", "consent", "practice"]


def test_the_coordinators_rows_show_each_raters_quality(crowd_study):
    client, links = crowd_study["client"], crowd_study["links"]
    conn = store_db.connect(crowd_study["db"])
    crowd.save_settings(conn, {"consent": True, "practice": True})  # no stop: "about the same" fails checks
    conn.close()
    for person in ("rater-01", "rater-02"):
        link = links[person]
        consent_and_practise(client, link)
        for _ in range(3):
            page = client.get(link).text
            client.post(f"{link}/answer", data={"nonce": nonce_of(page), "choice": "3", "rationale": "about the same"})
    page = client.get(links["coordinator"]).text
    for person in ("rater-01", "rater-02"):
        row = re.search(rf'<tr id="person-{person}"[^>]*>.*?</tr>', page, re.S).group(0)
        assert 'data-label="QC passed"' in row and 'data-label="agrees with majority"' in row
        assert re.search(r'data-label="fast">3<', row), row  # answered within a second: under 8 s
    assert crowd_study["study"]["rater"] in page and "PROLIFIC_PID" in page


@pytest.mark.e2e  # a server or a process of its own beside the test
def test_an_online_backup_while_answers_arrive_restores_every_acknowledged_one(crowd_study, tmp_path):
    """heart-annotate backup copies the store while answers are being written; a restore of it holds every
    answer acknowledged before the backup began and passes the integrity check; restore refuses to replace a
    store without --force, and the restore is in the audit log."""
    db = crowd_study["db"]
    conn = store_db.connect(db)
    conn.execute("UPDATE meta SET value = '{}' WHERE key = 'crowd'")  # plain tasks, no consent
    conn.close()
    client, links = crowd_study["client"], crowd_study["links"]
    stop = threading.Event()
    acknowledged = []

    def rate():
        while not stop.is_set():
            page = client.get(links["rater-02"]).text
            if "nonce" not in page:
                return
            r = client.post(f"{links['rater-02']}/answer", data={"nonce": nonce_of(page), "choice": "2",
                                                                 "rationale": "warmer"}, follow_redirects=False)
            if r.status_code == 303:
                acknowledged.append(time.monotonic())
            time.sleep(0.01)

    worker = threading.Thread(target=rate)
    worker.start()
    deadline = time.monotonic() + 30
    while len(acknowledged) < 2 and time.monotonic() < deadline:  # answers are arriving
        time.sleep(0.05)
    began = time.monotonic()
    n_before = sum(t < began for t in acknowledged)
    out = cli("backup", "--db", str(db), str(tmp_path / "backup"))
    stop.set()
    worker.join(30)
    assert "with its key" in out and n_before > 0
    copy = tmp_path / "backup" / db.name
    target = tmp_path / "restored" / "annotation.sqlite"
    cli("restore", "--db", str(target), str(copy))
    with pytest.raises(AssertionError, match="--force"):
        cli("restore", "--db", str(target), str(copy))
    cli("restore", "--db", str(target), "--force", str(copy))
    restored = stored(target)
    assert len(restored) >= n_before
    assert set(restored["task_id"]) <= set(stored(db)["task_id"])
    assert store_links.read_key(target) == store_links.read_key(db)  # every link still works
    conn = store_db.connect(target)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        events = store_audit.audit_frame(conn)["event"].tolist()
        assert events[-1] == "restore" and events.count("restore") == 1  # --force replaced the first restore
    finally:
        conn.close()


# --- places given back: decliners, idle participants, the coordinator -----------------------------------------

def pid(n: int) -> str:
    return f"?PROLIFIC_PID=participant{n:04d}&STUDY_ID=65aa01&SESSION_ID=s-{n:02d}"


def agree_and_answer(client, link, n):
    """Consent, practise and answer ``n`` rating tasks (the first choice each time)."""
    consent_and_practise(client, link)
    for _ in range(n):
        page = client.get(link).text
        r = client.post(f"{link}/answer", data={"nonce": nonce_of(page), "choice": "1", "rationale": "warmer"},
                        follow_redirects=False)
        assert r.status_code == 303


def test_a_declined_place_goes_to_the_next_participant_and_the_page_says_what_is_kept(crowd_study):
    """The issue's case: a participant who declined the consent kept rater-01's place, so with the other place
    taken the next participant got "This study is full" and rater-01's tasks could never be done."""
    client, study = crowd_study["client"], crowd_study["study"]["rater"]
    first = enter(client, study + pid(1))
    page = client.get(first).text
    declined = client.post(f"{first}/consent", data={"nonce": nonce_of(page), "agree": "0"})
    assert "Nothing was recorded" not in declined.text
    assert "your platform id, and that you declined and when" in declined.text
    enter(client, study + pid(2))
    third = enter(client, study + pid(3))  # a place, not "full": the declined one went back
    agree_and_answer(client, third, 1)
    full = client.get(study + pid(4), follow_redirects=False)
    assert full.status_code == 409 and "in use by someone working on it" in full.text
    conn = store_db.connect(crowd_study["db"])
    try:
        released = conn.execute("SELECT participant, person_id, reason, answered FROM released").fetchall()
        events = store_audit.audit_frame(conn)["event"].tolist()
        held = dict(conn.execute("SELECT participant, person_id FROM participants").fetchall())
    finally:
        conn.close()
    assert [tuple(r) for r in released] == [("participant0001", "rater-01", "declined the consent", 0)]
    assert sorted(held) == ["participant0002", "participant0003"] and sorted(held.values()) == ["rater-01", "rater-02"]
    assert events.count("release") == 1


def test_an_idle_place_is_released_and_its_unanswered_tasks_go_to_a_successor(crowd_study, monkeypatch):
    """A participant who answered some tasks, then left: past release_idle_minutes (120 by default) the next
    participant to enter gets the place's unanswered tasks under a successor's id, so every answer stays one
    human's; the one who left may not enter again; tasks loaded later for the place go to the successor."""
    client, study, db = crowd_study["client"], crowd_study["study"]["rater"], crowd_study["db"]
    clock = [1_000_000.0]
    monkeypatch.setattr(store_db, "now", lambda: clock[0])
    left = enter(client, study + pid(1))
    agree_and_answer(client, left, 2)
    enter(client, study + pid(2))
    clock[0] += 119 * 60
    assert client.get(study + pid(3), follow_redirects=False).status_code == 409  # not idle long enough yet
    clock[0] += 2 * 60
    successor = enter(client, study + pid(3))
    assert client.get(left).status_code == 404
    conn = store_db.connect(db)
    try:
        owners = dict(conn.execute("SELECT task_id, person_id FROM tasks").fetchall())
        mine = crowd_study["tasks"][crowd_study["tasks"]["person_id"] == "rater-01"]
        answered = set(stored(db)["task_id"])
        assert {owners[t] for t in mine["task_id"] if t in answered} == {"rater-01"}
        assert {owners[t] for t in mine["task_id"] if t not in answered} == {"rater-01.2"}
    finally:
        conn.close()
    agree_and_answer(client, successor, 1)
    assert stored(db).groupby("person_id").size().to_dict() == {"rater-01": 2, "rater-01.2": 1}
    back = client.get(study + pid(1), follow_redirects=False)
    assert back.status_code == 403 and "idle for more than 120 minutes" in back.text

    later = crowd_study["tasks"][crowd_study["tasks"]["person_id"] == "rater-01"].head(1).assign(
        task_id="rating-later-1", position=99)
    conn = store_db.connect(db)
    try:
        store.load_tasks(conn, pd.concat([crowd_study["tasks"], later], ignore_index=True))
        assert conn.execute("SELECT person_id FROM tasks WHERE task_id = 'rating-later-1'").fetchone()[0] == \
            "rater-01.2"
    finally:
        conn.close()


def test_the_coordinator_frees_a_place_and_a_revoke_blocks_the_platform_id(crowd_study):
    client, study, db = crowd_study["client"], crowd_study["study"]["rater"], crowd_study["db"]
    enter(client, study + pid(1))
    enter(client, study + pid(2))
    out = cli("free", "--db", str(db), "rater-01")
    assert "place given back" in out
    third = enter(client, study + pid(3))  # the freed place
    assert client.get(third).status_code == 200
    out = cli("revoke", "--db", str(db), "rater-02")
    assert "blocked" in out
    blocked = client.get(study + pid(2), follow_redirects=False)  # the same platform id, from the study link
    assert blocked.status_code == 403 and "ended your participation" in blocked.text
    assert enter(client, study + pid(4)).startswith("/p/")  # rater-02's place went to someone else
    with pytest.raises(AssertionError, match="holds no platform participant"):
        cli("free", "--db", str(db), "writer-01")
