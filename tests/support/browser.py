"""Debian's headless chromium through its chromedriver (selenium), at a laptop's or a phone's size."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from heart.annotation.tasks import shown_text
from support import REPO

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
PHONE, LAPTOP = (390, 844), (1280, 900)
SHOTS = REPO / "logs" / "screenshots"
QC_BAD = {shown_text(r["text"]) for r in yaml.safe_load(
    (REPO / "workflow/resources/annotation/qc_replies.yaml").read_text())["replies"]}


def chromium(user_data_dir, *extra_args):
    """Debian's headless chromium through its chromedriver, at a laptop's size (``extra_args``: more flags)."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail("the browser tests need Debian's chromium and chromium-driver: "
                    "apt-get install chromium chromium-driver (make test does it when run as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # selenium manager must not look for drivers online
    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-quic", f"--user-data-dir={user_data_dir}", *extra_args):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    driver.set_window_size(*LAPTOP)
    SHOTS.mkdir(parents=True, exist_ok=True)
    return driver


def emulate(driver, size=LAPTOP):
    """The viewport of a laptop or a phone (device metrics through CDP). A phone also gets a touch screen:
    headless chromium has no pointing device at all (`(hover: none)` matches, `(pointer: coarse)` does not)
    until touch emulation makes its primary pointer coarse, as on a real phone."""
    width, height = size
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == PHONE}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": size == PHONE, "maxTouchPoints": 5})
    return metrics


def unemulate(driver):
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def left_page(driver, old_nonce: str, timeout: float = 15, also: tuple[str, ...] = ()) -> None:
    """Wait until the browser shows the page after the one whose form carried ``old_nonce``: a form with another
    nonce, or an element whose id is in ``also`` (a page without a form). An element gone stale while it is read
    (the page changed under it) is read again on the next look, not raised."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def moved(d) -> bool:
        if any(d.find_elements(By.ID, i) for i in also):
            return True
        found = d.find_elements(By.NAME, "nonce")
        return bool(found) and found[0].get_attribute("value") != old_nonce

    WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(moved)
