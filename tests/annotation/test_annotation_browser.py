"""The annotation app in a real headless browser (Debian's chromium, driven through chromium-driver by
selenium), on the workflow's own tasks: a writer, two raters (with quality checks), two labellers and
the coordinator do their work by clicking and typing; then export -> snakemake, and the human rows appear.

Everyone here is SYNTHETIC: the test types the replies, choices and labels. The models and the judge
are the fake provider of tests/conftest.py. Screenshots are kept in logs/screenshots/ (look at them).
Needs the apt packages chromium and chromium-driver (`make test` installs them when it can).
"""


import pandas as pd
import pytest

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from support.annotation import stored
from support.annotation_server import AnnotationServer
from support import KEY_ENV, REPO
from support.workflow import WorkflowCopy, edit_config, judging_config
from support.browser import LAPTOP, PHONE, QC_BAD, SHOTS, emulate, left_page, unemulate

pytestmark = [pytest.mark.e2e, pytest.mark.browser]



@pytest.fixture(scope="module")
def study(tmp_path_factory, judge_server):
    """The judged tiny workflow (3 items; remote-a, remote-b, original), its annotation tasks, a store, and
    the annotation server on a free port of 127.0.0.1."""
    _, base = judge_server
    wf = WorkflowCopy(tmp_path_factory.mktemp("annotate") / "wf")
    args = judging_config(wf, base)

    def small_study(cfg):
        cfg["annotation"] = {"writing": {"writers": 1, "per_context": 1},
                             "rating": {"raters": 2, "per_pair": 2, "qc_rate": 0.2},
                             "spot_checks": {"completions": 4, "labellers": 2, "per_completion": 2}}
        # the browser answers in about a second: keep its raters (a real study keeps the paper's 5 s floor)
        cfg["human_judgments"] = {"min_median_seconds": 0}

    edit_config(wf, small_study)
    # the study as far as its leaderboard (before any human data) and the people's tasks; the export test
    # then runs it to the tables the people's answers reach
    wf.snakemake("results/stats/leaderboard.parquet", "results/annotation/tasks.parquet", *args, env=KEY_ENV)
    tasks = pd.read_parquet(wf.root / "results/annotation/tasks.parquet")
    db = wf.root / "resources/human/annotation.sqlite"
    # as `make annotate` does it: the server loads the task table (creating the store its config names,
    # results/annotation/serve.json) and serves it
    server = AnnotationServer(db, "results/annotation/tasks.parquet", cwd=wf.root, db_flag=False,
                              log=wf.root / "annotation-server.log").start()
    assert db.exists()
    try:
        yield {"wf": wf, "args": args, "tasks": tasks, "db": db, "url": server.url, "links": server.links(),
               "pages": [], "systems": ["remote-a", "remote-b", "original", "remote-test", "human#"]}
    finally:
        server.kill()


def visit(driver, study, url):
    driver.get(url)
    study["pages"].append(driver.page_source)
    return driver.page_source


def shot(driver, name, size=LAPTOP):
    """A full-page screenshot at a laptop's or a phone's viewport (device metrics set through CDP)."""
    metrics = emulate(driver, size)
    full = driver.execute_script("return document.documentElement.scrollHeight")
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {**metrics, "height": min(max(size[1], full), 5000)})
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    unemulate(driver)


def submit(driver, study):
    old = driver.find_element(By.NAME, "nonce").get_attribute("value")
    driver.find_element(By.ID, "send").click()
    left_page(driver, old, also=("done", "error"))
    study["pages"].append(driver.page_source)
    assert not driver.find_elements(By.ID, "error"), driver.find_element(By.ID, "error").text


def answers(study):
    from heart.annotation import db as store_db, store

    conn = store_db.connect(study["db"])
    try:
        return store.answers_frame(conn)
    finally:
        conn.close()


def test_keyboard_hints_show_on_a_laptop_and_not_on_a_touch_phone(browser, study):
    """"Keys 1-5 choose", "Ctrl+Enter submits" mean nothing on a phone: `.keys-hint` is hidden where the
    primary pointer is coarse (a touch screen), shown with a mouse. The rest of a hint line (the word count)
    stays. Runs first: the writer's and a rater's first pages."""
    for name in ("writer-01", "rater-01"):
        visit(browser, study, study["links"][name])
        assert browser.find_elements(By.CSS_SELECTOR, ".keys-hint"), f"{name}'s page has no .keys-hint"
        coarse = "return matchMedia('(pointer: coarse)').matches"
        try:
            for size in (LAPTOP, PHONE):
                emulate(browser, size)
                browser.refresh()
                assert browser.execute_script(coarse) == (size == PHONE)  # the emulation is what we think
                hints = browser.find_elements(By.CSS_SELECTOR, ".keys-hint")
                shown = [h.is_displayed() for h in hints]
                assert shown == [size == LAPTOP] * len(hints), f"{name} at {size}: .keys-hint shown {shown}"
                if name == "writer-01":
                    assert browser.find_element(By.ID, "word-count").is_displayed()  # the rest of its line stays
                if name == "rater-01" and size == PHONE:
                    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
                    browser.save_screenshot(str(SHOTS / "rating-phone-touch.png"))
        finally:
            unemulate(browser)


def test_a_writer_completes_their_tasks_and_a_reload_loses_nothing(browser, study):
    link = study["links"]["writer-01"]
    mine = study["tasks"][study["tasks"]["person_id"] == "writer-01"]
    page = visit(browser, study, link)
    assert f"Task 1 of {len(mine)}" in page and "Instructions" in page
    shot(browser, "writing-laptop")
    shot(browser, "writing-phone", PHONE)
    box = browser.find_element(By.ID, "reply")
    box.send_keys("That sounds so heavy. What part of it weighs on you most right now?")
    assert browser.find_element(By.ID, "word-count").text == "14"
    submit(browser, study)
    # a reload in the middle of the second task: the first answer is kept, the second task is served again
    browser.find_element(By.ID, "reply").send_keys("half a thought")
    page = visit(browser, study, link)
    assert f"Task 2 of {len(mine)}" in page
    assert len(answers(study)) == 1
    for k in range(2, len(mine) + 1):
        box = browser.find_element(By.ID, "reply")
        box.clear()
        box.send_keys(f"I'm really sorry you're dealing with this ({k}). Do you want to tell me more?")
        box.send_keys(Keys.CONTROL, Keys.ENTER)  # the keyboard shortcut submits
        WebDriverWait(browser, 15).until(lambda d: f"Task {k + 1} of" in d.page_source or
                                         d.find_elements(By.ID, "done"))
        study["pages"].append(browser.page_source)
    assert browser.find_elements(By.ID, "done")
    shot(browser, "writing-done")
    got = answers(study)
    got = got[got["kind"] == "writing"]
    assert sorted(got["item_id"]) == sorted(mine["item_id"]) and (got["seconds"] > 0).all()
    assert got["answer"].iloc[0]["text"].startswith("That sounds so heavy")


def test_raters_judge_pairs_with_quality_checks_by_keyboard(browser, study):
    for n, rater in enumerate(("rater-01", "rater-02")):
        mine = study["tasks"][study["tasks"]["person_id"] == rater]
        assert mine["qc_expected"].notna().sum() >= 1  # quality checks are mixed in
        visit(browser, study, study["links"][rater])
        if n == 0:
            shot(browser, "rating-laptop")
            shot(browser, "rating-phone", PHONE)
        for k in range(len(mine)):
            page = browser.page_source
            body = browser.find_element(By.TAG_NAME, "body")
            # a careful rater: a quality check (a known-worse reply on one side) on the good side, else by turns
            a_text = browser.find_element(By.CSS_SELECTOR, "#response-a p").text
            b_text = browser.find_element(By.CSS_SELECTOR, "#response-b p").text
            key = "4" if a_text in QC_BAD else "2" if b_text in QC_BAD else ("4" if k % 3 else "2")
            body.send_keys(key)   # keys 1-5 choose outside the text box
            assert browser.find_element(By.ID, f"choice-{key}").is_selected()
            browser.find_element(By.ID, "rationale").send_keys(f"It follows what the seeker said ({k}).")
            if n == 0 and k == 1:
                shot(browser, "rating-chosen")
            assert "Response A" in page and "Response B" in page
            submit(browser, study)
        assert browser.find_elements(By.ID, "done")
    got = answers(study)
    got = got[got["kind"] == "rating"]
    assert len(got) == int((study["tasks"]["kind"] == "rating").sum())
    assert set(got["answer"].map(lambda a: a["choice"])) == {2, 4}


def test_a_bad_answer_is_refused_with_the_typed_text_kept(browser, study):
    # a labeller ticks a strategy and "None of these": the browser script unticks, so post it by hand
    visit(browser, study, study["links"]["labeller-01"])
    browser.execute_script(
        "document.getElementById('strategy-none').checked = true;"
        "document.querySelector('input[name=strategy]').checked = true; document.getElementById('spot-form').submit();")
    assert "untick one" in browser.find_element(By.ID, "error").text
    shot(browser, "spot-check-error")


# the label, its checkbox, the first letter of its name (where the name starts) and the definition
_MEASURE = """
const row = arguments[0], label = row.querySelector('label'), box = label.querySelector('input');
const name = [...label.childNodes].find(n => n.nodeType === Node.TEXT_NODE && n.data.trim());
const at = name.data.search(/\\S/), letter = document.createRange();
letter.setStart(name, at); letter.setEnd(name, at + 1);
const r = b => ({top: b.top, bottom: b.bottom, left: b.left, right: b.right, width: b.width});
const def = row.querySelector('details p');
return {label: r(label.getBoundingClientRect()), box: r(box.getBoundingClientRect()),
        letter: r(letter.getBoundingClientRect()), row: r(row.getBoundingClientRect()),
        def: def && def.getClientRects().length ? r(def.getBoundingClientRect()) : null};
"""


def test_a_strategy_definition_opens_below_its_label_without_squeezing_it(browser, study):
    """Opening a strategy's definition (a <details>) keeps the checkbox and the label on one line at their
    width, and opens the definition below them, at a laptop's and a phone's width."""
    link = study["links"]["labeller-01"]
    for size, name in ((LAPTOP, "laptop"), (PHONE, "phone")):
        try:
            emulate(browser, size)
            visit(browser, study, link)
            rows = browser.find_elements(By.CSS_SELECTOR, "#spot-form .strategy:has(details)")
            assert len(rows) >= 10
            for row in rows:
                before = browser.execute_script(_MEASURE, row)
                row.find_element(By.TAG_NAME, "summary").click()
                after = browser.execute_script(_MEASURE, row)
                what = f"{row.text.splitlines()[0]!r} at {name} width"
                assert after["def"], f"{what}: the definition did not open"
                assert after["label"]["width"] >= 0.6 * before["label"]["width"], f"{what}: label {before} -> {after}"
                # the checkbox and the start of the name on one line (the letter's line holds the box's middle)
                middle = (after["box"]["top"] + after["box"]["bottom"]) / 2
                assert after["letter"]["top"] <= middle <= after["letter"]["bottom"], (
                    f"{what}: the checkbox and its label are not on one line: {after}")
                assert after["def"]["top"] >= after["label"]["bottom"] - 1, (
                    f"{what}: definition beside the label: {after}")
                assert after["def"]["width"] >= 0.7 * after["row"]["width"], f"{what}: a narrow definition: {after}"
                row.find_element(By.TAG_NAME, "summary").click()  # closed again
        finally:
            unemulate(browser)
        # the longest name open for the picture
        longest = max(rows, key=lambda r: len(r.find_element(By.TAG_NAME, "label").text))
        longest.find_element(By.TAG_NAME, "summary").click()
        shot(browser, f"spot-check-definition-{name}", size)


def test_labellers_label_and_the_coordinator_adjudicates(browser, study):
    for n, labeller in enumerate(("labeller-01", "labeller-02")):
        mine = study["tasks"][study["tasks"]["person_id"] == labeller]
        visit(browser, study, study["links"][labeller])
        if n == 0:
            shot(browser, "spot-check-laptop")
            shot(browser, "spot-check-phone", PHONE)
        for k in range(len(mine)):
            browser.find_element(By.ID, "strategy-reflective_statements").click()
            if n == 0 and k == 0:
                browser.find_element(By.ID, "strategy-affirmation").click()  # a disagreement
            submit(browser, study)
        assert browser.find_elements(By.ID, "done")
    coordinator = study["links"]["coordinator"]
    page = visit(browser, study, coordinator)
    assert "1 completion with disagreeing labels" in page and "rater-01" in page
    n_items = study["tasks"].groupby("kind")["item_id"].nunique()
    kinds = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")[:4]]
             for tr in browser.find_elements(By.CSS_SELECTOR, "#kinds tbody tr")]
    assert ["writing", str(n_items["writing"]), "3", "3"] in kinds
    shot(browser, "coordinator")
    try:  # on a phone its wide tables are cards: nothing off the right edge
        emulate(browser, PHONE)
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        for section in browser.find_elements(By.TAG_NAME, "section"):
            assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", section), (
                section.find_element(By.TAG_NAME, "h2").text)
    finally:
        unemulate(browser)
    shot(browser, "coordinator-phone", PHONE)
    browser.find_element(By.LINK_TEXT, "Adjudicate").click()
    study["pages"].append(browser.page_source)
    shot(browser, "adjudicate")
    boxes = browser.find_elements(By.CSS_SELECTOR, ".strategy.disputed input")
    assert len(boxes) == 1
    boxes[0].click()  # the coordinator keeps affirmation
    browser.find_element(By.ID, "send").click()
    WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.ID, "nothing"))


def test_a_stacked_table_is_a_column_of_cards_on_a_phone(browser, tmp_path):
    """A wide table of the coordinator page (`table.stack`, every <td> with its column's name in data-label)
    shows each row as a card under ~700 px: no header row, one line per cell with its label, nothing off the
    right edge. A page of its own (a file holding such a table) with the app's own stylesheet."""
    css = (REPO / "workflow/heart/annotation/static/app.css").as_uri()
    columns = ["person", "role", "answered", "median s", "QC failed", "pasted", "link"]
    rows = [["rater-01", "rater", "12 / 40", "8.5", "3 / 4", "–",
             '<input class="link" readonly value="https://annotation.example.org/p/' + "k" * 43 + '">'],
            ["writer-01", "writer", "3 / 3", "61.0", "–", "0", '<input class="link" readonly value="x">']]
    body = "".join(('<tr class="flag">' if r[0] == "rater-01" else "<tr>") + "".join(
        f'<td data-label="{c}">{v}</td>' for c, v in zip(columns, r)) + "</tr>" for r in rows)
    kinds = "".join(f'<tr><td data-label="kind">{k}</td><td data-label="items">3</td><td data-label="answered">'
                    f'{n}</td><td data-label="assigned">6</td><td data-label="progress"><progress value="{n}" max="6">'
                    "</progress></td></tr>" for k, n in (("writing", 3), ("rating", 5)))
    page = tmp_path / "coordinator.html"
    page.write_text(f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="stylesheet" href="{css}"></head>
<body><header class="bar"><span class="brand">Coordinator — HEART annotation</span></header><main><h1>Coordinator</h1>
<section><h2>Progress by task kind</h2><table class="stack" id="kinds"><thead><tr><th>kind</th><th>items</th>
<th>answered</th><th>assigned</th><th>progress</th></tr></thead><tbody>{kinds}</tbody></table></section>
<section><h2>People</h2><table class="stack" id="people"><thead><tr>{"".join(f"<th>{c}</th>" for c in columns)}</tr>
</thead><tbody>{body}</tbody></table></section></main></body></html>""")
    label = "return getComputedStyle(arguments[0], '::before').content"
    for size in (PHONE, LAPTOP):
        try:
            emulate(browser, size)
            browser.get(page.as_uri())
            assert browser.find_element(By.CSS_SELECTOR, ".bar").value_of_css_property("position") == "sticky"
            width = browser.execute_script("return window.innerWidth")
            assert browser.execute_script("return document.documentElement.scrollWidth") <= width
            cells = browser.find_elements(By.CSS_SELECTOR, "table.stack td")
            assert len(cells) == 2 * 5 + 2 * 7
            for head in browser.find_elements(By.CSS_SELECTOR, "table.stack thead"):
                assert head.is_displayed() == (size == LAPTOP)
            for td in cells:
                shown = browser.execute_script(label, td)
                right = browser.execute_script("return arguments[0].getBoundingClientRect().right", td)
                if size == PHONE:
                    assert shown == f'"{td.get_attribute("data-label")}"', f"{td.text}: label {shown}"
                    assert right <= width, f"{td.get_attribute('data-label')} ends at {right} of {width} px"
                    assert td.value_of_css_property("display") == "block" and td.size["height"] > 0
                else:
                    assert shown in ("none", "normal") and td.value_of_css_property("display") == "table-cell"
            for section in browser.find_elements(By.TAG_NAME, "section"):  # nothing scrolls sideways inside either
                assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", section)
        finally:
            unemulate(browser)
        if size == PHONE:
            shot(browser, "coordinator-stack-phone", PHONE)


def test_a_token_reaches_only_its_own_tasks(browser, study):
    rater, coordinator = study["links"]["rater-01"], study["links"]["coordinator"]
    for url in (rater.replace("/p/", "/c/"), coordinator.replace("/c/", "/p/"), study["url"] + "/p/guess",
                rater + "x"):
        visit(browser, study, url)
        assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    # a page of one person posted with another's link is refused
    visit(browser, study, study["links"]["writer-01"])  # done: no form; use a rater's form instead
    browser.get(study["links"]["labeller-02"])
    nonce = browser.find_element(By.NAME, "nonce").get_attribute("value") if browser.find_elements(
        By.NAME, "nonce") else "none"
    browser.execute_script(
        "const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];"
        "const i = document.createElement('input'); i.name = 'nonce'; i.value = arguments[1]; f.append(i);"
        "const c = document.createElement('input'); c.name = 'choice'; c.value = '1'; f.append(c);"
        "const r = document.createElement('input'); r.name = 'rationale'; r.value = 'forged answer'; f.append(r);"
        "document.body.append(f); f.submit();", rater + "/answer", nonce)
    assert browser.find_element(By.TAG_NAME, "h1").text in ("Refused", "Not found")
    assert not any("forged" in a.get("rationale", "") for a in answers(study)["answer"])


def test_no_served_page_names_a_system_model_or_writer(study):
    assert len(study["pages"]) > 30
    person_pages = [p for p in study["pages"] if "Coordinator" not in p and "Adjudicate" not in p]
    for page in person_pages:
        named = [s for s in study["systems"] + list(study["tasks"]["pair_id"].dropna()) if s in page]
        assert not named, f"a served page names {named}"


def test_export_then_snakemake_gives_the_human_rows(study):
    wf, args = study["wf"], study["args"]
    before = set(pd.read_parquet(wf.root / "results/stats/leaderboard.parquet")["system"])
    assert "human" not in before
    # the tables the people's answers reach (the whole DAG on human files: the judged workflow's tests)
    tables = ["results/stats/leaderboard.parquet", "results/judging/sources.parquet",
              "results/judging/human_raters.parquet", "results/tagging/fake-tagger_f1.parquet",
              "results/stats/paper_comparison.parquet"]
    wf.snakemake(*tables, *args, env=KEY_ENV)
    human = wf.root / "resources/human"
    completions = pd.read_csv(human / "completions.csv")
    judgments = pd.read_csv(human / "judgments.csv")
    assert len(completions) == 3 and set(completions["contributor_id"]) == {"writer-01"}
    assert judgments["qc_expected"].notna().sum() >= 2 and len(judgments) == int(
        (study["tasks"]["kind"] == "rating").sum())
    after = set(pd.read_parquet(wf.root / "results/stats/leaderboard.parquet")["system"])
    assert {"human", "best-human"} <= after
    sources = pd.read_parquet(wf.root / "results/judging/sources.parquet").set_index("judge")
    assert sources.loc["human", "status"] == "present"
    raters = pd.read_parquet(wf.root / "results/judging/human_raters.parquet")
    assert set(raters["rater_id"]) == {"rater-01", "rater-02"} and raters["n_qc"].min() >= 1
    f1 = pd.read_parquet(wf.root / "results/tagging/fake-tagger_f1.parquet")
    assert (f1["status"] != "absent").all() and f1["f1"].notna().any()
    side = pd.read_parquet(wf.root / "results/stats/paper_comparison.parquet").set_index("id")
    assert side.loc["inter_human_agreement", "status"] == "computed"
    assert side.loc["strategy_macro_f1", "status"] == "computed"
    # nothing to redo: a second run finds everything up to date
    again = wf.snakemake(*tables, *args, env=KEY_ENV)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_tasks_made_again_add_the_human_pairs_and_keep_every_answer(browser, study):
    """README step 4: with the human completions in, the task table gains their pairs; the store keeps
    every task answered so far, and a rater who was done has new pairs to judge."""
    wf, args = study["wf"], study["args"]
    done = answers(study)
    wf.snakemake("results/annotation/tasks.parquet", *args, env=KEY_ENV)
    again = pd.read_parquet(wf.root / "results/annotation/tasks.parquet")
    rating = again[again["kind"] == "rating"]
    assert rating["ref_a"].str.startswith("human#").any() or rating["ref_b"].str.startswith("human#").any()
    old = study["tasks"]
    real = old[(old["kind"] == "rating") & old["pair_id"].notna()]
    assert set(real["task_id"]) <= set(rating["task_id"])  # a pair keeps its raters and order
    from heart.annotation import db as store_db, store

    conn = store_db.connect(study["db"])
    try:
        counts = store.load_tasks(conn, again)
    finally:
        conn.close()
    assert counts["added"] > 0
    assert set(done["task_id"]) <= set(answers(study)["task_id"])  # every answer still exported
    page = visit(browser, study, study["links"]["rater-01"])
    assert "Response A" in page and 'id="done"' not in page


def test_a_rater_marks_each_axis_when_the_study_asks(browser, tmp_path):
    """annotation.rating.axes: the rating page asks, per HEART axis (names and questions from the rubric), A /
    no clear difference / B; the browser refuses to send it with an axis unmarked, and the store keeps the
    marks. A SYNTHETIC store of its own: one rater, the first items' pairs."""
    from heart.annotation import tasks as tasks_mod
    from heart.judging import pairs as pairs_mod
    from heart.judging.material import load_rubric

    items = pd.DataFrame([{"item_id": f"synthetic-{i}", "conversation_id": i, "subset": "regular",
                           "history": [{"role": "seeker", "text": f"[synthetic] My sister stopped calling ({i})."},
                                       {"role": "supporter", "text": "[synthetic] That sounds painful."},
                                       {"role": "seeker", "text": "[synthetic] I don't know if I did something."}],
                           "original_reply": "[synthetic] It makes sense to wonder; what happened last time?"}
                          for i in range(2)])
    comp = pd.DataFrame([{"item_id": it.item_id, "system": s, "source": "model", "contributor_id": None,
                          "text": f"[synthetic] {s} would say: that silence must hurt ({it.item_id})."}
                         for it in items.itertuples() for s in ("m1", "m2")])
    pairs = pairs_mod.design(comp, items, 3)
    axes = tasks_mod.rating_axes(load_rubric(REPO / "workflow/resources/rubric/heart.yaml"))
    table = tasks_mod.rating_tasks(items, pairs, comp, 1, 1, 0.0, [], 3, axes=axes)
    table.to_parquet(tmp_path / "tasks.parquet")
    db = tmp_path / "annotation.sqlite"
    server = AnnotationServer(db, tmp_path / "tasks.parquet", log=tmp_path / "server.log").start()
    try:
        browser.get(server.links()["rater-01"])
        assert len(browser.find_elements(By.CSS_SELECTOR, ".axis")) == 5
        assert "Attunement" in browser.page_source
        browser.find_element(By.CSS_SELECTOR, "label[for='choice-2']").click()
        browser.find_element(By.ID, "rationale").send_keys("B picks up the sister, A does not.")
        browser.find_element(By.ID, "send").click()  # nothing marked: the browser keeps the page
        assert browser.find_element(By.ID, "axis-H-A").get_attribute("required") is not None
        assert not browser.find_element(By.ID, "axis-H-A").is_selected()
        for key, value in zip("HEART", ("A", "A", "same", "B", "same")):
            browser.find_element(By.CSS_SELECTOR, f"label[for='axis-{key}-{value}']").click()
        shot(browser, "rating-axes-laptop")
        shot(browser, "rating-axes-phone", PHONE)
        old = browser.find_element(By.NAME, "nonce").get_attribute("value")
        browser.find_element(By.ID, "send").click()
        left_page(browser, old, also=("done",))
    finally:
        server.kill()
    got = stored(db)
    assert len(got) == 1 and got.iloc[0]["answer"]["axes"] == {"H": "A", "E": "A", "A": "same", "R": "B", "T": "same"}


def test_back_reload_and_a_long_reason_keep_what_was_typed(browser, tmp_path):
    """The issue's three: Back after a page that answered a post (a refused reason) showed Chromium's "Confirm
    Form Resubmission" (ERR_CACHE_MISS) -- every post now redirects; a reload mid-task lost the typed reason and
    the chosen option -- the page keeps a draft; a reason over 1,000 characters was cut silently -- a counter
    shows its length and the server refuses it whole, the text kept. A SYNTHETIC store of its own."""
    from support.annotation_server import synthetic_rating_tasks

    synthetic_rating_tasks(raters=2).to_parquet(tmp_path / "tasks.parquet")
    db = tmp_path / "annotation.sqlite"
    server = AnnotationServer(db, tmp_path / "tasks.parquet", log=tmp_path / "server.log").start()
    try:
        link = server.links()["rater-01"]
        browser.get(link)
        first = browser.find_element(By.NAME, "nonce").get_attribute("value")
        browser.find_element(By.CSS_SELECTOR, "label[for='choice-4']").click()
        browser.find_element(By.ID, "rationale").send_keys("B asks what happened at the exam")
        browser.refresh()  # reload mid-task: the option and the reason are still there, the same page
        assert browser.find_element(By.NAME, "nonce").get_attribute("value") == first
        assert browser.find_element(By.ID, "choice-4").is_selected()
        assert browser.find_element(By.ID, "rationale").get_attribute("value") == "B asks what happened at the exam"

        long_reason = ("B stays with the exam worry and asks about it; " * 25)[:1040] + " what the seeker said"
        box = browser.find_element(By.ID, "rationale")
        box.clear()
        browser.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))",
                               box, long_reason)
        counter = browser.find_element(By.ID, "rationale-counter")
        assert counter.text.startswith(f"{len(long_reason)} of at most 1000") and "over" in counter.get_attribute(
            "class")
        shot(browser, "rating-long-reason")
        browser.find_element(By.ID, "send").click()
        WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.ID, "error"))
        assert f"has {len(long_reason)} characters" in browser.find_element(By.ID, "error").text
        assert browser.find_element(By.ID, "rationale").get_attribute("value") == long_reason  # kept whole
        assert "?shown=" in browser.current_url  # the refusal is a page of its own address, not a post's answer
        shot(browser, "rating-long-reason-refused")

        box = browser.find_element(By.ID, "rationale")
        box.clear()
        box.send_keys("B asks about the exam")
        browser.find_element(By.ID, "send").click()
        left_page(browser, first)
        browser.back()  # to the refusal's page: shown again, no "Confirm Form Resubmission"
        WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.ID, "error"))
        assert "ERR_CACHE_MISS" not in browser.page_source and "Confirm Form Resubmission" not in browser.page_source
        assert f"has {len(long_reason)} characters" in browser.find_element(By.ID, "error").text

        # the 1-5 badges on the options are keyboard hints too: gone on a touch phone; the reason box takes a
        # right-to-left reason's direction from its text (dir=auto)
        browser.get(link)
        assert all(k.is_displayed() for k in browser.find_elements(By.CSS_SELECTOR, ".choice kbd"))
        assert browser.find_element(By.ID, "rationale").get_attribute("dir") == "auto"
        try:
            emulate(browser, PHONE)
            browser.refresh()
            badges = browser.find_elements(By.CSS_SELECTOR, ".choice kbd")
            assert len(badges) == 5 and not any(k.is_displayed() for k in badges)
        finally:
            unemulate(browser)
    finally:
        server.kill()
    assert stored(db)["answer"].map(lambda a: a["rationale"]).tolist() == ["B asks about the exam"]
