"""A crowd study walked through in headless chromium, behind the production TLS proxy (nginx, a self-signed
certificate): two platform participants enter from the study link, consent and practise; one fails the
attention checks until stopped, the other finishes with the completion code; the coordinator sees both.
Everyone here is SYNTHETIC (the test clicks and types). Screenshots: logs/screenshots/crowd-*.png."""

import re

import pandas as pd
import pytest
import yaml
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from support.annotation_proxy import TlsProxy
from support.annotation_server import AnnotationServer
from heart.annotation import audit, crowd, db as store_db, links, store, tasks
from heart.annotation.app import STUDY_TEXTS
from heart.judging import pairs as pairs_mod
from support.annotation import QC, make_completions, make_items
from support.browser import LAPTOP, PHONE, QC_BAD, SHOTS, chromium, emulate, left_page, unemulate

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
CODE, STOPPED = "C0MPLETE7", "SCREEN0UT"


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    d = chromium(tmp_path_factory.mktemp("chromium-crowd"), "--ignore-certificate-errors")  # self-signed proxy
    yield d
    d.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Two raters over six items (real pairs on two, quality checks on the others), the study's crowd
    settings, the app trusting the proxy only, and nginx with TLS in front."""
    tmp = tmp_path_factory.mktemp("crowd")
    items = make_items(6)
    comp = make_completions(items)
    pairs = pairs_mod.design(comp, items, 5)
    table = tasks.rating_tasks(items, pairs[pairs["item_id"].isin(["item0", "item1"])], comp, 2, 2, 0.5, QC, 5)
    db = tmp / "annotation.sqlite"
    store.create(db)
    conn = store_db.connect(db)
    store.load_tasks(conn, table)
    crowd.save_settings(conn, {"consent": True, "practice": True, "completion_code": CODE,
                               "completion_url": "https://app.prolific.com/submissions/complete?cc={code}",
                               "stopped_code": STOPPED, "stop_after_qc_failures": 2})
    conn.close()
    server = AnnotationServer(db, log=tmp / "server.log", serve_args=["--proxy", "127.0.0.2"]).start()
    proxy = TlsProxy(int(server.url.rsplit(":", 1)[1]), tmp / "nginx").start()
    try:
        yield {"db": db, "tasks": table, "url": proxy.url, "proxy": proxy, "links": server.links(),
               "study": crowd.study_links(links.read_key(db))}
    finally:
        proxy.stop()
        server.kill()


def click(d, element_id):
    d.find_element(By.ID, element_id).click()


def wait_for(d, *ids):
    WebDriverWait(d, 15).until(lambda x: any(x.find_elements(By.ID, i) for i in ids))
    return next(i for i in ids if d.find_elements(By.ID, i))


def shot(d, name, size=LAPTOP):
    metrics = emulate(d, size)
    full = d.execute_script("return document.documentElement.scrollHeight")
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": min(max(size[1], full), 4000)})
    d.save_screenshot(str(SHOTS / f"crowd-{name}.png"))
    unemulate(d)


def enter_consent_practise(d, site, participant, name):
    d.get(f"{site['url']}{site['study']['rater']}?PROLIFIC_PID={participant}&STUDY_ID=st1&SESSION_ID=se1")
    wait_for(d, "consent")
    assert d.current_url.startswith(f"{site['url']}/p/")  # the person's own link, over TLS
    if name == "a":
        shot(d, "consent-phone", PHONE)
    click(d, "agree")
    texts = yaml.safe_load(STUDY_TEXTS.read_text())
    for k, item in enumerate(texts["practice"]["rater"]):
        wait_for(d, "rating-form")
        assert "Practice" in d.find_element(By.ID, "progress").text
        right = "1" if item["expected"] == "A" else "5"
        choice = right if k == 0 else str(6 - int(right))  # the second practice item answered wrongly
        click(d, f"choice-{choice}")
        d.find_element(By.ID, "rationale").send_keys("it follows what the seeker said")
        click(d, "send")
        wait_for(d, "feedback")
        assert ("well done" if k == 0 else "not quite") in d.find_element(By.ID, "feedback-heading").text
        if name == "a" and k == 1:
            shot(d, "practice-feedback")
        click(d, "continue")


def rate_until(d, good: bool):
    """Answer every rating page: quality checks (a known-worse reply on one side) on the good side or against
    it; real pairs "A slightly better". Returns the page id it ended on."""
    while True:
        where = wait_for(d, "rating-form", "done", "stopped")
        if where != "rating-form":
            return where
        a = d.find_element(By.CSS_SELECTOR, "#response-a p").text
        b = d.find_element(By.CSS_SELECTOR, "#response-b p").text
        if a in QC_BAD or b in QC_BAD:
            bad_is_a = a in QC_BAD
            choice = ("5" if bad_is_a else "1") if good else ("1" if bad_is_a else "5")
        else:
            choice = "2"
        old = d.find_element(By.NAME, "nonce").get_attribute("value")
        click(d, f"choice-{choice}")
        d.find_element(By.ID, "rationale").send_keys("the reply stays with the seeker")
        click(d, "send")
        left_page(d, old, also=("done", "stopped"))


def test_two_participants_from_the_platform_one_stopped_one_finished(driver, site):
    enter_consent_practise(driver, site, "PIDaaaa1111", "a")
    assert rate_until(driver, good=False) == "stopped"
    assert STOPPED in driver.page_source and CODE not in driver.page_source
    shot(driver, "stopped-phone", PHONE)
    driver.delete_all_cookies()
    enter_consent_practise(driver, site, "PIDbbbb2222", "b")
    assert rate_until(driver, good=True) == "done"
    assert driver.find_element(By.ID, "completion-code").text == CODE
    assert driver.find_element(By.ID, "complete").get_attribute("href").endswith(f"cc={CODE}")
    shot(driver, "done")

    driver.get(site["url"] + "/" + site["links"]["coordinator"].split("/", 3)[3])  # its path, through the proxy
    rows = {r.get_attribute("id"): r for r in driver.find_elements(By.CSS_SELECTOR, "#people tbody tr")}
    stopped, finished = rows["person-rater-01"], rows["person-rater-02"]
    assert "stopped" in stopped.text and "PIDaaaa1111" in stopped.text and "flag" in stopped.get_attribute("class")
    assert "finished" in finished.text and "PIDbbbb2222" in finished.text
    shot(driver, "coordinator-laptop")
    shot(driver, "coordinator-phone", PHONE)
    emulate(driver, PHONE)
    try:
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        unemulate(driver)
    # the people's answers reached the store, and the proxy's logs hold no link and no platform id
    conn = store_db.connect(site["db"])
    try:
        answers = store.answers_frame(conn)
        events = audit.audit_frame(conn)["event"].tolist()
    finally:
        conn.close()
    assert set(answers["person_id"]) == {"rater-01", "rater-02"}
    assert len(answers[answers["person_id"] == "rater-02"]) == (site["tasks"]["person_id"] == "rater-02").sum()
    assert events.count("stop") == 1 and events.count("provision") == 2 and events.count("practice") == 2
    logs = site["proxy"].access_log.read_text() + site["proxy"].error_log.read_text()
    tokens = ([link.rsplit("/", 1)[1] for link in site["links"].values()]
              + [p.rsplit("/", 1)[1] for p in site["study"].values()])
    assert logs and not any(t in logs for t in tokens) and "PID" not in logs
    pd.testing.assert_series_equal(  # each shown pair had the same layout on both sides
        answers["task"].map(lambda t: "\n" in (t["text_a"] + t["text_b"])), pd.Series([False] * len(answers),
                                                                                       name="task"))
    assert re.search(r"/p/-", site["proxy"].access_log.read_text())


def test_the_coordinators_people_fit_a_laptop_and_a_phone_finds_one_among_many(driver, tmp_path):
    """The issue's layout: on a laptop the people table cut the link column to "lin" and scrolled sideways; on a
    phone 33 cards came without a search and a stop reason wrapped under its label. A SYNTHETIC store of 33
    raters of its own, one stopped, served by the real server (straight, no proxy)."""
    items = make_items(30)
    comp = make_completions(items)
    tasks.rating_tasks(items, pairs_mod.design(comp, items, 5), comp, 33, 2, 0.0, QC, 5).to_parquet(
        tmp_path / "tasks.parquet")
    db = tmp_path / "annotation.sqlite"
    server = AnnotationServer(db, tmp_path / "tasks.parquet", log=tmp_path / "server.log").start()
    try:
        conn = store_db.connect(db)
        people = [r[0] for r in conn.execute("SELECT person_id FROM people WHERE role = 'rater' ORDER BY 1")]
        crowd.stop(conn, people[2], "failed 2 of 2 attention checks")
        conn.close()
        link = server.links()["coordinator"]
        for size in (LAPTOP, PHONE):
            try:
                emulate(driver, size)
                driver.get(link)
                section = driver.find_element(By.ID, "people").find_element(By.XPATH, "..")
                assert driver.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", section)
                rows = driver.find_elements(By.CSS_SELECTOR, "#people tbody tr")
                assert len(rows) == len(people) == 33
                first = driver.find_element(By.CSS_SELECTOR, "#people input.link")
                assert driver.execute_script(  # the whole link box is on screen, not cut by the table's edge
                    "const r = arguments[0].getBoundingClientRect(); return r.right <= window.innerWidth && "
                    "r.width >= 120", first)
                reason = driver.find_element(By.CSS_SELECTOR, f"#person-{people[2]} .reason")
                label_end = driver.execute_script(
                    "const td = arguments[0].closest('td'); const s = getComputedStyle(td, '::before');"
                    "return s.content === 'none' || s.content === 'normal' ? 0 : "
                    "td.getBoundingClientRect().left + parseFloat(s.width)", reason)
                assert reason.location["x"] >= label_end - 1  # beside its label, never under it
                box = driver.find_element(By.ID, "people-filter")
                assert box.is_displayed()
                box.send_keys(people[7])
                visible = [r for r in rows if r.is_displayed()]
                assert [r.get_attribute("id") for r in visible] == [f"person-{people[7]}"]
                assert driver.find_element(By.ID, "people-shown").text == f"1 of {len(people)} shown"
                box.clear()
                box.send_keys("stopped")
                assert [r.get_attribute("id") for r in rows if r.is_displayed()] == [f"person-{people[2]}"]
            finally:
                unemulate(driver)
            shot(driver, f"coordinator-many-{'laptop' if size == LAPTOP else 'phone'}", size)
    finally:
        server.kill()
