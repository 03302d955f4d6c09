"""The safety review pages (HEART paper §6: "automated safety screening and human review") in headless chromium:
two reviewers see each flagged reply in its conversation with the categories the screen flagged, confirm or
clear it with a reason, and the export writes the reviews the workflow reads. Everyone here is SYNTHETIC (the
test clicks and types; the flagged replies are the hand-written fixture's). Screenshots:
logs/screenshots/review-*.png (look at them)."""

import pandas as pd
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from heart.annotation import db as store_db, export, store, tasks
from heart.completions import safety_review
from support import FIXTURES
from support.annotation import FLAGS, KEYS, make_completions, make_items
from support.annotation_server import AnnotationServer
from support.browser import LAPTOP, PHONE, SHOTS, emulate, left_page, unemulate

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Two flagged completions (their texts two harmful replies of tests/fixtures/safety/replies.csv), each to
    both of two reviewers, served by the app's real server."""
    tmp = tmp_path_factory.mktemp("review")
    items = make_items()
    replies = pd.read_csv(FIXTURES / "safety/replies.csv", dtype=str).set_index("reply_id")["text"]
    comp = make_completions(items)
    for flag, reply in zip(FLAGS.itertuples(), ("h02", "h03")):
        comp.loc[(comp["item_id"] == flag.item_id) & (comp["system"] == flag.system), "text"] = replies[reply]
    table = tasks.safety_review_tasks(FLAGS, comp, items, reviewers=2, per_flag=2, seed=5)
    db = tmp / "annotation.sqlite"
    store.create(db)
    conn = store_db.connect(db)
    store.load_tasks(conn, table)
    conn.close()
    server = AnnotationServer(db, log=tmp / "server.log").start()
    try:
        yield {"db": db, "tasks": table, "comp": comp, "links": server.links(), "tmp": tmp}
    finally:
        server.kill()


def shot(d, name, size=LAPTOP):
    metrics = emulate(d, size)
    full = d.execute_script("return document.documentElement.scrollHeight")
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": min(max(size[1], full), 4000)})
    d.execute_script("window.scrollTo(0, 0)")
    d.save_screenshot(str(SHOTS / f"review-{name}.png"))
    unemulate(d)


def send(d):
    old = d.find_element(By.NAME, "nonce").get_attribute("value")
    d.find_element(By.ID, "send").click()
    left_page(d, old, also=("done", "error"))


def test_reviewers_confirm_or_clear_each_flag_with_a_reason_and_the_export_reads_back(browser, site):
    driver = browser
    SHOTS.mkdir(parents=True, exist_ok=True)
    decisions = {"reviewer-01": ("1", "It tells the seeker to end their life."),
                 "reviewer-02": ("2", "I read it as harmful but clear it to test a dispute.")}
    for reviewer, (key, reason) in decisions.items():
        driver.get(site["links"][reviewer])
        # (on a loaded machine the page source can be read before the document is there: wait for it)
        WebDriverWait(driver, 30).until(lambda x: "Flagged for:" in x.page_source)
        page = driver.page_source
        assert "Flagged for:" in page and "Flagged reply" in page
        assert "secret-model" not in page and "original" not in page.replace("originally", "")  # no system named
        if reviewer == "reviewer-01":
            shot(driver, "laptop")
            shot(driver, "phone", PHONE)
            # a reason too short is refused on the server; the choice and the typed text stay on the page
            driver.find_element(By.ID, f"choice-{key}").click()
            driver.execute_script("document.getElementById('rationale').removeAttribute('minlength')")
            driver.find_element(By.ID, "rationale").send_keys("no")
            send(driver)
            assert "Say in a few words" in driver.find_element(By.ID, "error").text
            assert driver.find_element(By.ID, f"choice-{key}").is_selected()
            shot(driver, "refused")
            driver.find_element(By.ID, "rationale").clear()
        for _ in range(2):
            driver.execute_script("document.activeElement.blur()")
            ActionChains(driver).send_keys(key).perform()  # keys 1-2 choose, as on the rating page
            assert driver.find_element(By.ID, f"choice-{key}").is_selected()
            driver.find_element(By.ID, "rationale").send_keys(reason)
            send(driver)
        assert driver.find_elements(By.ID, "done")
    out = site["tmp"] / "out"
    summary = export.export(site["db"], out / "c.csv", out / "j.csv", out / "l.csv", KEYS,
                            reviews_path=out / "reviews.csv")
    assert summary["safety_reviews"]["rows"] == 4
    reviews = safety_review.read_reviews(out / "reviews.csv", site["comp"])
    assert sorted(zip(reviews["reviewer_id"], reviews["decision"])) == [
        ("reviewer-01", "confirm"), ("reviewer-01", "confirm"), ("reviewer-02", "clear"), ("reviewer-02", "clear")]
    assert set(reviews["reason"]) == {r for _, r in decisions.values()}
