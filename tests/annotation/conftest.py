"""The annotation tests' fixtures: a SYNTHETIC study in a fresh store, served by the app."""

import pandas as pd
import pytest

from heart.annotation import tasks
from heart.judging import pairs as pairs_mod
from support.annotation import FLAGS, QC, make_completions, make_items, serve


@pytest.fixture
def study(tmp_path):
    """A store with 1 writer, 2 raters (with quality checks), 2 labellers and 2 safety reviewers (two flagged
    completions, each to both) over three items; the app; everyone's link."""
    items = make_items()
    comp = make_completions(items)
    pairs = pairs_mod.design(comp, items, 5)
    table = pd.concat([tasks.writing_tasks(items, 1, 1, 5),
                       tasks.rating_tasks(items, pairs, comp, 2, 1, 0.25, QC, 5),
                       tasks.spot_check_tasks(comp, items, 2, 2, 2, 5),
                       tasks.safety_review_tasks(FLAGS, comp, items, 2, 2, 5)], ignore_index=True)
    db = tmp_path / "human" / "annotation.sqlite"
    client, links = serve(db, table)
    return {"db": db, "client": client, "links": links, "tasks": table, "items": items, "comp": comp,
            "pairs": pairs, "tmp": tmp_path}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless chromium for a module's browser tests (tests/support/browser.py)."""
    from support.browser import chromium

    driver = chromium(tmp_path_factory.mktemp("chromium"))
    yield driver
    driver.quit()
