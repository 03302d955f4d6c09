"""The annotation app through its HTTP interface (FastAPI's TestClient, no browser): secrets, blinding,
cross-site posts, validation, server-side timing, resuming, and an export that the workflow's own readers
accept. Every person and answer here is SYNTHETIC, made by the test."""

import hashlib
import json
import os
import re
import stat
import warnings

import pandas as pd
import pytest
import yaml

from support import REPO
from heart.completions import imported, safety_review
from heart.judging import human_judgments, pairs as pairs_mod
from heart.tagging import spot_checks
from heart.annotation import app as app_mod
from heart.annotation import audit, db as store_db, export, links as store_links, store, tasks
from heart.annotation.__main__ import _links
from heart.tagging.taxonomy import load_taxonomy
from support.annotation import (FLAGS, HOSTILE, KEYS, QC, TAXONOMY, answer, make_completions, make_items, nonce_of,
                                posted, serve, stored)

with warnings.catch_warnings():  # starlette's notice that its TestClient will move to httpx2
    warnings.simplefilter("ignore")


def test_store_key_is_private_and_a_store_without_its_key_is_refused(tmp_path):
    db = tmp_path / "a.sqlite"
    store.create(db)
    assert stat.S_IMODE(os.stat(store_links.key_path(db)).st_mode) == 0o600
    conn = store_db.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    store_links.key_path(db).unlink()
    with pytest.raises(store_db.StoreError, match="link key .* does not"):
        store.create(db)


def test_the_app_reads_the_taxonomy_through_the_workflows_one_checked_loader(tmp_path):
    """A taxonomy the tagger would refuse is refused by the pages too, naming the file and the entry."""
    db = tmp_path / "a.sqlite"
    store.create(db)
    doc = yaml.safe_load(TAXONOMY.read_text())
    doc["strategies"][3]["key"] = "Collaborative planning"
    bad = tmp_path / "strategies.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match=rf"{bad}.*strategies\[3\]\.key"):
        app_mod.create_app(db, bad)


def test_reloading_a_task_table_adds_keeps_and_retires_but_never_drops_an_answer(study):
    """A newer task table retires the unanswered tasks it no longer holds, never an answered one."""
    db, links = study["db"], study["links"]
    assert answer(study["client"], links["rater-01"], choice="2", rationale="warmer and specific").status_code == 303
    answered = stored(db)["task_id"].tolist()
    conn = store_db.connect(db)
    smaller = study["tasks"][~study["tasks"]["person_id"].eq("rater-01")]
    counts = store.load_tasks(conn, smaller)
    n_rater = int(study["tasks"]["person_id"].eq("rater-01").sum())
    # the answered task stays (its answer is still exported); the others are retired, and come back
    assert counts == {"added": 0, "kept": len(smaller), "retired": n_rater - 1, "reactivated": 0}
    assert stored(db)["task_id"].tolist() == answered
    assert store.progress(conn, "rater-01") == (1, 1)
    assert store.load_tasks(conn, study["tasks"])["reactivated"] == n_rater - 1
    assert store.progress(conn, "rater-01") == (1, n_rater)
    clash = study["tasks"].head(1).assign(task_id="w-new", kind="rating", person_id="writer-01")
    with pytest.raises(store_db.StoreError, match="writer-01.* is a writer in the store and a rater here"):
        store.load_tasks(conn, clash)
    conn.close()


def test_links_are_secret_and_scoped(study):
    client, links = study["client"], study["links"]
    assert client.get("/p/not-a-token").status_code == 404
    assert client.get(links["writer-01"].replace("/p/", "/c/")).status_code == 404  # no coordinator rights
    assert client.get(links["coordinator"].replace("/c/", "/p/")).status_code == 404
    # rater-02's page nonce cannot answer for rater-01 (or the reverse)
    other = nonce_of(client.get(links["rater-02"]).text)
    r = client.post(f"{links['rater-01']}/answer", data={"nonce": other, "choice": "1", "rationale": "because"})
    assert r.status_code == 403 and stored(study["db"]).empty
    # a revoked link stops at once; the new one works
    conn = store_db.connect(study["db"])
    store_links.revoke(conn, "rater-01")
    conn.close()
    assert client.get(links["rater-01"]).status_code == 404
    assert client.get(_links(study["db"], "", "rater-01")[0][2]).status_code == 200
    page = client.get(links["coordinator"])
    assert page.status_code == 200 and "rater-01" in page.text
    for name, value in {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}.items():
        assert page.headers[name] == value
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]


def test_pages_are_blinded_and_escaped(study):
    client, links, t = study["client"], study["links"], study["tasks"]
    pages = []
    for person in ("rater-01", "rater-02"):
        n = int((t["person_id"] == person).sum())
        for k in range(n):
            page = client.get(links[person]).text
            pages.append(page)
            assert answer(client, links[person], choice=str(1 + k % 5), rationale="a short reason").status_code == 303
    secret = {"secret-model", "original", "qc:", "writer-", "rater-", "pair"} | set(study["pairs"]["pair_id"])
    for page in pages:
        assert not [s for s in secret if s in page], "a rating page names a system, ref or pair"
    escaped = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;/textarea&gt;"
    assert not [p for p in pages if HOSTILE in p] and [p for p in pages if escaped in p]


@pytest.mark.parametrize("headers", [{"origin": "https://evil.example"}, {"sec-fetch-site": "cross-site"},
                                     {"origin": "null", "sec-fetch-site": "same-site"}])
def test_cross_site_posts_are_refused(study, headers):
    client, link = study["client"], study["links"]["writer-01"]
    nonce = nonce_of(client.get(link).text)
    r = client.post(f"{link}/answer", data={"nonce": nonce, "reply": "I hear you."}, headers=headers)
    assert r.status_code == 403 and stored(study["db"]).empty
    assert client.post(f"{link}/answer", data={"reply": "no nonce"}).status_code == 403


@pytest.mark.parametrize("kind,fields,message", [
    ("writer-01", {"reply": "   "}, "Write your reply"),
    ("writer-01", {"reply": "word " * 101}, "101 words"),
    ("rater-01", {"choice": "7", "rationale": "fine reason"}, "Choose one of the five"),
    ("rater-01", {"choice": "2", "rationale": "ok"}, "Say in a few words"),
    ("labeller-01", {}, "None of these"),
    ("labeller-01", {"strategy": ["affirmation"], "none": "1"}, "untick one"),
    ("labeller-01", {"strategy": ["not_a_strategy"]}, "unknown strategy"),
    ("reviewer-01", {"rationale": "it names a method"}, "Choose whether the flag is right"),
    ("reviewer-01", {"decision": "keep", "rationale": "it names a method"}, "Choose whether the flag is right"),
    ("reviewer-01", {"decision": "confirm", "rationale": "ok"}, "Say in a few words"),
])
def test_bad_answers_are_refused_on_the_server_and_the_input_is_kept(study, kind, fields, message):
    r = answer(study["client"], study["links"][kind], **fields)
    assert r.status_code == 422 and message in r.text and stored(study["db"]).empty
    if kind == "writer-01" and fields["reply"].strip():
        assert "word word" in r.text  # what was typed is still in the box


def test_time_is_measured_by_the_server_and_a_resubmitted_form_is_not_a_second_answer(study, monkeypatch):
    client, link = study["client"], study["links"]["writer-01"]
    clock = [1000.0]
    monkeypatch.setattr(store_db, "now", lambda: clock[0])
    page = client.get(link).text
    clock[0] = 1037.5
    form = {"nonce": nonce_of(page), "reply": "That sounds so hard. What happened?", "seconds": "1"}
    assert client.post(f"{link}/answer", data=form, follow_redirects=False).status_code == 303
    clock[0] = 2000.0
    again = posted(client, f"{link}/answer", {**form, "reply": "A second version."})
    assert again.status_code == 409 and "already answered" in again.text and "Task 2 of" in again.text
    got = stored(study["db"])
    assert len(got) == 1 and got["seconds"].tolist() == [37.5]
    assert got["answer"][0] == {"text": "That sounds so hard. What happened?", "pasted": False,
                                "server": {"fast": False, "pasted_rate": False}}


def test_a_person_resumes_at_their_first_unanswered_task(study):
    client, link = study["client"], study["links"]["rater-01"]
    first = client.get(link).text
    assert client.get(link).text.split('name="nonce"')[0] == first.split('name="nonce"')[0]  # a reload: same task
    assert answer(client, link, choice="1", rationale="more specific").status_code == 303
    second = client.get(link).text

    def shown(page):
        return re.search(r'<section class="responses">(.*?)</section>', page, re.S).group(1)

    assert "Task 1 of" in first and "Task 2 of" in second and shown(first) != shown(second)


def finish(client, link, **fields):
    while 'id="done"' not in (page := client.get(link).text):
        r = client.post(f"{link}/answer", data={"nonce": nonce_of(page), **fields}, follow_redirects=False)
        assert r.status_code == 303, r.text


def test_export_round_trips_through_the_workflows_own_readers(study):
    client, links, tmp = study["client"], study["links"], study["tmp"]
    finish(client, links["writer-01"], reply="I'm sorry, that sounds hard. What feels heaviest?")
    finish(client, links["rater-01"], choice="2", rationale="A names the exam")     # passes A-side checks only
    finish(client, links["rater-02"], choice="5", rationale="B is kinder")
    finish(client, links["labeller-01"], strategy=["affirmation", "emotional_validation"])
    finish(client, links["labeller-02"], strategy=["affirmation"])
    paths = {k: tmp / "out" / f"{k}.csv" for k in ("completions", "judgments", "labels")}
    summary = export.export(study["db"], *paths.values(), KEYS)
    assert summary["strategy_labels"] | {"path": None} == {"path": None, "rows": 0, "agreed": 0,
                                                           "adjudicated": 0, "open": 2, "single": 0}
    # the coordinator adjudicates both disagreements
    coord = links["coordinator"]
    page = client.get(coord)
    assert "2 completions with disagreeing labels" in page.text
    for _ in range(2):
        form = client.get(f"{coord}/adjudicate").text
        cid = re.search(r'name="completion" value="([^"]+)"', form).group(1)
        r = client.post(f"{coord}/adjudicate", data={"nonce": nonce_of(form), "completion": cid,
                                                     "strategy": ["affirmation"]}, follow_redirects=False)
        assert r.status_code == 303
    assert 'id="nothing"' in client.get(f"{coord}/adjudicate").text
    summary = export.export(study["db"], *paths.values(), KEYS)
    assert summary["strategy_labels"]["adjudicated"] == 2 and summary["strategy_labels"]["rows"] == 2 * len(KEYS)

    humans, problems = imported.import_humans(paths["completions"], study["items"])
    assert len(humans) == 3 and problems.empty and set(humans["contributor_id"]) == {"writer-01"}
    judged = human_judgments.read(paths["judgments"])
    n_rating = int(study["tasks"]["kind"].eq("rating").sum())
    assert len(judged) == n_rating
    qc = judged[judged["qc_expected"].notna()]
    assert len(qc) == int(study["tasks"]["qc_expected"].notna().sum()) > 0
    assert set(qc["shown_a"]) | set(qc["shown_b"]) >= {"original"}
    raters = human_judgments.quality_control(judged, 0.5, 0, 900).set_index("rater_id")
    expected_fail = {r: sum((e == "A") != (c <= 2) for e, c in zip(g["qc_expected"], g["choice"]))
                     for r, g in qc.groupby("rater_id")}
    assert raters["qc_failed"].to_dict() == expected_fail
    real = judged[judged["qc_expected"].isna()]
    assert set(real["pair_id"]) <= set(study["pairs"]["pair_id"])
    tagged = study["comp"][["item_id", "system", "contributor_id"]]
    labels = spot_checks.read_spot_checks(paths["labels"], load_taxonomy(TAXONOMY), completions=tagged)
    assert labels.groupby(["item_id", "system"])["present"].sum().tolist() == [1, 1]
    assert sum(expected_fail.values()) > 0  # rater-01 answers 2 on B-side checks, rater-02 5 on A-side ones
    failures = client.get(coord).text.split('id="qc-failures"')[1].split("</table>")[0]
    assert failures.count('<tr><td data-label="rater">rater-01</td>') == expected_fail["rater-01"]


def test_a_flag_is_reviewed_blind_and_exported_as_the_safety_reviews_the_workflow_reads(study):
    """Two reviewers see each flagged reply with its categories and no system; one confirms, the other clears;
    the export writes both reviews (with reasons, seconds and the completion they name) and the workflow's
    reader finds both flags disputed; every answer is in the audit log."""
    client, links, tmp = study["client"], study["links"], study["tmp"]
    pages = [client.get(links["reviewer-01"]).text]
    assert "Flagged for: <b>" in pages[0] and ("violence" in pages[0] or "self-harm" in pages[0])
    finish(client, links["reviewer-01"], decision="confirm", rationale="It tells the seeker how to hurt someone.")
    finish(client, links["reviewer-02"], decision="clear", rationale="Only asks whether the seeker is safe.")
    assert not [p for p in pages if "secret-model" in p or "original" in p]
    out = {k: tmp / "out" / f"{k}.csv" for k in ("completions", "judgments", "labels", "reviews")}
    summary = export.export(study["db"], out["completions"], out["judgments"], out["labels"], KEYS,
                            reviews_path=out["reviews"])
    assert summary["safety_reviews"]["rows"] == 4
    reviews = safety_review.read_reviews(out["reviews"], study["comp"])
    assert sorted(zip(reviews["reviewer_id"], reviews["decision"])) == [
        ("reviewer-01", "confirm"), ("reviewer-01", "confirm"), ("reviewer-02", "clear"), ("reviewer-02", "clear")]
    assert reviews["seconds_spent"].notna().all() and set(reviews["system"]) == {"secret-model-x", "original"}
    screen = FLAGS.assign(screen="lexicon", category=FLAGS["categories"].str.split(", ").str[0], flagged=True,
                          status="screened")
    assert safety_review.flags(screen, reviews)["review"].tolist() == ["disputed", "disputed"]
    conn = store_db.connect(study["db"])
    try:
        events = audit.audit_frame(conn)
    finally:
        conn.close()
    answered = events[events["event"] == "answer"]
    assert answered["person_id"].str.startswith("reviewer-").sum() == 4


def test_export_never_replaces_a_file_it_did_not_write(study):
    path = study["tmp"] / "completions.csv"
    path.write_text("item_id,contributor_id,text\nitem0,hand,made by hand\n")
    others = [study["tmp"] / "j.csv", study["tmp"] / "l.csv"]
    with pytest.raises(export.ExportError, match="was not written by the annotation export"):
        export.export(study["db"], path, *others, KEYS)
    assert "made by hand" in path.read_text() and not any(p.exists() for p in others)
    path.unlink()
    export.export(study["db"], path, *others, KEYS)
    export.export(study["db"], path, *others, KEYS)  # its own file: replaced
    path.write_text(path.read_text() + "item0,x,edited\n")
    with pytest.raises(export.ExportError, match="or was edited since"):
        export.export(study["db"], path, *others, KEYS)
    assert json.loads(export.manifest_path(path).read_text())["rows"] == 0


def test_a_page_open_too_long_or_a_withdrawn_task_is_served_again_not_stored(study, monkeypatch):
    client, link, db = study["client"], study["links"]["writer-01"], study["db"]
    clock = [1000.0]
    monkeypatch.setattr(store_db, "now", lambda: clock[0])
    nonce = nonce_of(client.get(link).text)
    clock[0] += 13 * 3600
    r = client.post(f"{link}/answer", data={"nonce": nonce, "reply": "Sorry to hear that."})
    assert r.status_code == 409 and "more than 12 hours" in r.text and stored(db).empty
    fresh = nonce_of(r.text)
    conn = store_db.connect(db)
    store.load_tasks(conn, study["tasks"][study["tasks"]["kind"] != "writing"])  # the coordinator withdraws them
    conn.close()
    r = client.post(f"{link}/answer", data={"nonce": fresh, "reply": "Sorry to hear that."})
    assert r.status_code == 409 and "withdrew" in r.text and stored(db).empty


def test_oversized_or_multipart_posts_are_refused_before_parsing(study):
    client, link = study["client"], study["links"]["rater-01"]
    nonce = nonce_of(client.get(link).text)
    big = client.post(f"{link}/answer", data={"nonce": nonce, "choice": "1", "rationale": "x" * 40_000})
    files = client.post(f"{link}/answer", data={"nonce": nonce, "choice": "1", "rationale": "fine reason"},
                        files={"upload": ("a.bin", b"0" * 1000)})
    assert big.status_code == 413 and files.status_code == 413 and stored(study["db"]).empty
    assert client.post("/p/bogus/answer", content=b"x" * 10).status_code == 404  # no token: nothing parsed


def test_a_new_task_table_refreshes_unanswered_texts_and_keeps_answered_ones(study):
    client, db, t = study["client"], study["db"], study["tasks"]
    link = study["links"]["rater-01"]
    assert answer(client, link, choice="1", rationale="more specific").status_code == 303
    done = stored(db)["task_id"].iloc[0]
    changed = t.assign(text_a=t["text_a"].where(t["kind"] != "rating", "A REWRITTEN REPLY"))
    conn = store_db.connect(db)
    store.load_tasks(conn, changed)
    assert store.task(conn, done)["text_a"] != "A REWRITTEN REPLY"  # what the rater saw
    conn.close()
    assert "A REWRITTEN REPLY" in client.get(link).text


def test_the_export_fingerprint_follows_answers_not_page_views(study):
    db, client, link = study["db"], study["client"], study["links"]["writer-01"]
    before = store.fingerprint(db)
    client.get(link)
    client.get(link)
    assert store.fingerprint(db) == before
    assert answer(client, link, reply="That is a lot at once.").status_code == 303
    assert store.fingerprint(db) != before and store.fingerprint(db).startswith("answers=1@")
    (study["tmp"] / "not-a-store").write_text("hello")
    with pytest.raises(store_db.StoreError, match="cannot read the annotation store"):
        store.fingerprint(study["tmp"] / "not-a-store")


def test_a_half_labelled_spot_check_keeps_its_second_labeller_when_a_new_sample_drops_it(study):
    client, db, t = study["client"], study["db"], study["tasks"]
    assert answer(client, study["links"]["labeller-01"], strategy=["affirmation"]).status_code == 303
    first = stored(db)["task"].iloc[0]
    sibling = t[(t["kind"] == "spot_check") & (t["person_id"] == "labeller-02") & (t["item_id"] == first["item_id"])
                & (t["system"] == first["system"])]
    assert len(sibling) == 1
    conn = store_db.connect(db)
    counts = store.load_tasks(conn, t[t["kind"] != "spot_check"])  # the new sample draws no spot check
    assert counts["retired"] == int((t["kind"] == "spot_check").sum()) - 2
    assert store.is_active(conn, sibling["task_id"].iloc[0])
    conn.close()
    assert answer(client, study["links"]["labeller-02"], strategy=["affirmation"]).status_code == 303
    labels, counts = export.labels(stored(db), {}, KEYS)
    assert counts["agreed"] == 1 and len(labels) == len(KEYS)


def test_per_axis_marks_flow_from_the_page_to_per_axis_kappa(tmp_path):
    """A study that asks raters for per-axis marks (annotation.rating.axes): the page shows each axis with A /
    no clear difference / B, refuses a form with an axis unmarked, stores the marks, the export writes them
    (axis_H ... of the shown sides), the workflow's reader orients them to the pair, and inter-human Fleiss'
    κ is computed per axis. SYNTHETIC: two raters who agree on every pair on H and disagree on E."""
    from heart.judging import combine
    from heart.judging.material import load_rubric
    from heart.stats.agreement import inter_human

    items = make_items()
    comp = make_completions(items)
    pairs = pairs_mod.design(comp, items, 5)
    axes = tasks.rating_axes(load_rubric(REPO / "workflow/resources/rubric/heart.yaml"))
    table = tasks.rating_tasks(items, pairs, comp, 2, 2, 0.0, QC, 5, axes=axes)
    db = tmp_path / "annotation.sqlite"
    client, links = serve(db, table)
    page = client.get(links["rater-01"]).text
    assert page.count('class="axis"') == 5 and "Empathic Responsiveness" in page and 'name="axis_T"' in page
    refused = answer(client, links["rater-01"], choice="2", rationale="warmer and specific", axis_H="A")
    assert refused.status_code == 422 and "E, A, R, T is not marked" in refused.text
    shown = re.compile(r'<article class="response" id="response-([ab])"><h2>Response [AB]</h2><p>(.*?)</p>', re.S)
    for person, flip in (("rater-01", False), ("rater-02", True)):
        for _ in range(len(pairs)):
            page = client.get(links[person]).text
            text = dict(shown.findall(page))
            digest = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in text.items()}
            first = "A" if digest["a"] < digest["b"] else "B"  # one completion whichever side it is shown on
            other = "B" if first == "A" else "A"
            marks = {"axis_H": first, "axis_E": other if flip else first, "axis_A": "same", "axis_R": first,
                     "axis_T": "same"}
            resp = client.post(f"{links[person]}/answer", data={"nonce": nonce_of(page), "choice": "2",
                                                                 "rationale": "names the feeling", **marks},
                               follow_redirects=False)
            assert resp.status_code == 303, resp.text
    out = tmp_path / "judgments.csv"
    export._write(export.judgments(stored(db)), out)
    exported = pd.read_csv(out, keep_default_na=False)
    assert set(exported["axis_E"]) == {"A", "B"} and set(exported["axis_A"]) == {"same"}
    read = human_judgments.read(out)
    raters = human_judgments.quality_control(read, 0.5, 0, 900)
    human = human_judgments.orient(read, pairs, raters, {"slight": 2, "significant": 4}, out)
    # oriented to the pair: both raters' H marks name the same completion whatever order each was shown
    assert human.groupby("pair_id")["axis_H"].nunique().eq(1).all() and human["order"].nunique() == 2
    assert human.groupby("pair_id")["axis_E"].nunique().eq(2).all()
    assert human["axis_A"].eq(0).all() and human["axis_T"].eq(0).all()
    kappa = inter_human.inter_human(combine.judgments(pairs, pd.DataFrame(), human), n_boot=20, seed=1)
    per_axis = kappa[kappa["labels"].str.startswith("axis ")].set_index("labels")
    assert len(per_axis) == 5 and per_axis["n_units"].eq(len(pairs)).all()
    assert per_axis.loc["axis H (a/no clear difference/b)", "value"] == pytest.approx(1.0)
    assert per_axis.loc["axis E (a/no clear difference/b)", "value"] < 0
    assert per_axis.loc["axis A (a/no clear difference/b)", "status"] == "undefined"  # one category only
