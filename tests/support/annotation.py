"""A store of SYNTHETIC annotation tasks and the app over it (FastAPI's TestClient), for the annotation tests."""

from __future__ import annotations

import re
import warnings

import pandas as pd
import yaml

from heart.annotation import app as app_mod
from heart.annotation import db as store_db, store
from heart.annotation.__main__ import _links
from heart.tagging.taxonomy import load_taxonomy, strategy_keys
from support import REPO

with warnings.catch_warnings():  # starlette's notice that its TestClient will move to httpx2
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


TAXONOMY = REPO / "workflow/resources/taxonomy/strategies.yaml"


KEYS = strategy_keys(load_taxonomy(TAXONOMY))


QC = yaml.safe_load((REPO / "workflow/resources/annotation/qc_replies.yaml").read_text())["replies"]


HOSTILE = '<script>alert("x")</script> & </textarea>'


#: two completions the safety screen flagged (SYNTHETIC)
FLAGS = pd.DataFrame([{"item_id": "item1", "system": "secret-model-x", "contributor_id": None,
                       "categories": "violence"},
                      {"item_id": "item2", "system": "original", "contributor_id": None,
                       "categories": "self-harm, self-harm/instructions"}])


def make_items(n=3):
    return pd.DataFrame([{
        "item_id": f"item{i}", "conversation_id": i, "subset": "regular", "release_key": None,
        "history": [{"role": "seeker", "text": f"My exam {i} went badly {HOSTILE if i == 0 else ''}"},
                    {"role": "supporter", "text": "I'm listening."},
                    {"role": "seeker", "text": "I don't know what to do."}],
        "original_reply": f"That sounds really stressful ({i}).",
    } for i in range(n)])


def make_completions(items):
    rows = []
    for it in items.itertuples():
        rows += [{"item_id": it.item_id, "system": s, "source": "model", "contributor_id": None,
                  "text": f"Reply {k} to {it.item_id}."} for k, s in enumerate(("secret-model-x", "secret-model-y"))]
        rows.append({"item_id": it.item_id, "system": "original", "source": "dataset", "contributor_id": None,
                     "text": it.original_reply})
    return pd.DataFrame(rows)


def serve(db, table, rate_limits=None):
    """A new store at ``db`` holding the tasks of ``table``, the app over it (with these rate limits: see
    heart.annotation.guard), and everyone's link."""
    store.create(db)
    conn = store_db.connect(db)
    store.load_tasks(conn, table)
    conn.close()
    client = TestClient(app_mod.create_app(db, TAXONOMY, rate_limits=rate_limits))
    return client, {person: link for person, _, link in _links(db, "")}


def nonce_of(html):
    return re.search(r'name="nonce" value="([^"]+)"', html).group(1)


def answer(client, link, **fields):
    """Post an answer to the link's current task: the 303 of a stored answer, or (a post's page is shown by
    the address it redirects to) the page a refused one was answered with."""
    page = client.get(link)
    assert page.status_code == 200, page.text
    return posted(client, f"{link}/answer", {"nonce": nonce_of(page.text), **fields})


def posted(client, url, data):
    """POST ``data``: every post is answered by a 303 (post/redirect/get); a stored answer's response is that 303,
    any other's is the page its redirect shows (with the status the post was answered with)."""
    r = client.post(url, data=data, follow_redirects=False)
    assert r.status_code == 303, (r.status_code, r.text[:300])
    return r if "?shown=" not in r.headers["location"] else client.get(r.headers["location"])


def stored(db):
    conn = store_db.connect(db)
    try:
        return store.answers_frame(conn)
    finally:
        conn.close()
