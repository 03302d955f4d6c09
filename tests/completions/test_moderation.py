"""A provider's moderation endpoint as a screen (heart.completions.moderation), through litellm against a real
OpenAI-compatible /v1/moderations server the test starts on 127.0.0.1: categories and scores as the endpoint
gives them, one call per distinct text, the answer cached (a rerun sends nothing), a failure never cached, and
an echoed key never stored."""

import http.server
import json
import threading

import pandas as pd
import pytest

from heart.completions import moderation
from heart.common import tableio
from heart.llm.cache import ResponseCache
from heart.llm.models import ModelSpec

pytestmark = pytest.mark.e2e
KEY = "sk-moderation-test-0123456789abcdef"


class Endpoint(http.server.BaseHTTPRequestHandler):
    """OpenAI's moderation answer shape: a reply with "pathetic" is harassment; one with "fail" is a 500 the
    first time; every answer echoes the key it was sent (a hostile provider)."""

    calls: list = []
    failed: set = set()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Endpoint.calls.append(body["input"])
        if "fail" in body["input"] and body["input"] not in Endpoint.failed:
            Endpoint.failed.add(body["input"])
            return self._send(500, {"error": {"message": "overloaded " + self.headers.get("Authorization", "")}})
        harsh = "pathetic" in body["input"]
        self._send(200, {"id": "modr-1", "model": body["model"], "echo": self.headers.get("Authorization"),
                         "results": [{"flagged": harsh,
                                      "categories": {"harassment": harsh, "self-harm/intent": False},
                                      "category_scores": {"harassment": 0.97 if harsh else 0.02,
                                                          "self-harm/intent": 0.001}}]})

    def _send(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Endpoint.calls, Endpoint.failed = [], set()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_the_endpoints_categories_cached_once_per_text_and_a_failure_never_cached(endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("HEART_MODERATION_KEY", KEY)
    spec = ModelSpec(name="mod", model="omni-moderation-latest", api_base=endpoint,
                     api_key_env="HEART_MODERATION_KEY", max_retries=0)
    completions = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4"], "system": ["a", "b", "a", "b"],
                                "contributor_id": [None] * 4,
                                "text": ["You are pathetic.", "That sounds hard.", "That sounds hard.", "fail once"]})
    cache = ResponseCache(tmp_path / "cache")
    table = moderation.screen(completions, spec, cache, backoff=0)
    assert sorted(Endpoint.calls) == ["That sounds hard.", "You are pathetic.", "fail once"]  # one per text
    ok = table[table["status"] == "screened"].set_index(["item_id", "category"])
    assert ok.loc[("i1", "harassment"), "flagged"] and ok.loc[("i1", "harassment"), "score"] == 0.97
    assert not ok.loc[("i2", "harassment"), "flagged"] and ("i3", "self-harm/intent") in ok.index
    failed = table[table["status"] == "failed"]
    assert failed["item_id"].tolist() == ["i4"] and failed["flagged"].isna().all()
    assert KEY not in failed["evidence"].iloc[0]
    assert (table["screen"] == "moderation:mod").all() and (table["screen_version"] == spec.model).all()
    tableio.write_table(table, tmp_path / "safety.parquet", "safety")
    # the answers are cached, the failure is not, and no cache file holds the key the provider echoed
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 2 and not any(KEY in f.read_text() for f in files)
    again = moderation.screen(completions, spec, cache, backoff=0)
    assert Endpoint.calls[3:] == ["fail once"]  # only the failed text is sent again
    assert again["status"].eq("screened").all()
