"""No fragment of an API key reaches logs, warnings, errors, the cache or the terminal (issue: hardening)."""

import io as stdio
import json
import logging

import pytest

from support import KEY, key_pieces
from heart.llm.answers import parse_structured
from heart.llm.cache import ResponseCache, cache_key
from heart.llm.engine import LLMStageError, error_text, run_requests
from heart.llm.models import ModelSpec
from heart.llm.pacing import parse_retry_after
from heart.llm.request import Request
from heart.common.runtime import key_env_names, logged
from heart.common.redaction import MASK, MIN_RUN, RedactingStream, Redactor, secret_names

def test_whole_and_partial_echoes_are_masked():
    r = Redactor([KEY])
    assert r.redact(f"Incorrect API key provided: {KEY}.") == f"Incorrect API key provided: {MASK}."
    for start in range(0, len(KEY) - MIN_RUN + 1, 3):
        for length in (MIN_RUN, MIN_RUN + 5, len(KEY) - start):
            piece = KEY[start:start + length]
            out = r.redact(f"..{piece}..")
            assert key_pieces(out) == [] and MASK in out, piece
    # a run shorter than MIN_RUN is not a key fragment the redactor can tell from ordinary text
    assert r.redact(f"x{KEY[3:3 + MIN_RUN - 1]}x") == f"x{KEY[3:3 + MIN_RUN - 1]}x"
    # text without any fragment is returned as it was; two echoes and two keys at once
    assert r.redact("nothing to see") == "nothing to see"
    other = "tok-0123456789abcdef"
    two = Redactor([KEY, other]).redact(f"{KEY[:20]} and {other} and {KEY[-9:]}")
    assert key_pieces(two) == [] and key_pieces(two, other) == [] and two.count(MASK) == 3


def test_the_secrets_are_the_configured_and_the_credential_named_variables(monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_KEY_VAR", KEY)
    monkeypatch.setenv("SOMEONE_API_KEY", "abcdefghijklmnop")
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnop")
    monkeypatch.setenv("HOME_PAGE", "https://example.invalid/a-long-path")
    # variables litellm reads by itself for some providers
    litellm_reads = ["AWS_BEARER_TOKEN_BEDROCK", "VERTEXAI_CREDENTIALS", "SNOWFLAKE_JWT", "CLARIFAI_PAT",
                     "WATSONX_APIKEY", "AWS_SECRET_ACCESS_KEY", "AZURE_AD_TOKEN", "DATABRICKS_TOKEN"]
    for name in litellm_reads:
        monkeypatch.setenv(name, f"value-of-{name}")
    # names that hold where a secret is (a path, a socket, a URL), and litellm's own tokenizer cache: their
    # values are ordinary words and paths that masking would cut out of every answer and traceback
    import litellm  # noqa: F401 - sets TIKTOKEN_CACHE_DIR on import

    where = {"GOOGLE_APPLICATION_CREDENTIALS": __file__, "HF_TOKEN_PATH": "/root/.cache/huggingface/token",
             "SSH_AUTH_SOCK": "/run/user/1000/keyring/ssh", "AWS_SHARED_CREDENTIALS_FILE": "/home/a/.aws/credentials",
             "ACTIONS_ID_TOKEN_REQUEST_URL": "https://example.invalid/token"}
    for name, value in where.items():
        monkeypatch.setenv(name, value)
    names = secret_names(["MY_PROVIDER_KEY_VAR"])
    assert {"MY_PROVIDER_KEY_VAR", "SOMEONE_API_KEY", "HF_TOKEN", *litellm_reads} <= set(names)
    assert not {"HOME_PAGE", "TIKTOKEN_CACHE_DIR", *where} & set(names)
    assert Redactor.from_env().redact("care packages; tokenizers aside") == "care packages; tokenizers aside"
    # a configured key variable is a secret whatever its value looks like
    monkeypatch.setenv("ODD_KEY_VAR", __file__)
    assert "ODD_KEY_VAR" in secret_names(["ODD_KEY_VAR"])
    r = Redactor.from_env(["MY_PROVIDER_KEY_VAR"])
    assert key_pieces(r.redact(KEY)) == [] and r.redact("https://example.invalid/a-long-path").endswith("long-path")


def test_error_text_redacts_before_it_shortens():
    """The old order (cut at 300 characters, then replace the whole key) left 43 of 44 characters behind."""
    r = Redactor([KEY])
    for offset in range(270, 300):
        exc = RuntimeError("x" * offset + KEY + " more text")
        text = error_text(exc, r)
        assert key_pieces(text) == [], offset
        assert text.startswith("RuntimeError: xxx")
    old_order = str(RuntimeError("x" * 280 + KEY))[:300].replace(KEY, "***")
    assert key_pieces(old_order), "the test must show the defect it guards against"


def test_redacting_stream_masks_keys_split_across_writes():
    out = stdio.StringIO()
    stream = RedactingStream(out, Redactor([KEY]))
    stream.write("first part " + KEY[:20])
    stream.write(KEY[20:] + " end\nsecond ")
    stream.write(KEY[5:30])
    stream.drain()
    assert key_pieces(out.getvalue()) == [] and out.getvalue().startswith("first part [REDACTED] end\nsecond ")


def test_redacting_stream_sees_a_key_written_in_pieces_with_a_flush_after_each():
    """A flush passes on all but a possible start of a key: pieces of 5 characters, each flushed, never
    reach the target as a run; text that cannot start a key goes on at once (a progress bar's frame)."""
    out = stdio.StringIO()
    stream = RedactingStream(out, Redactor([KEY]))
    for i in range(0, len(KEY), 5):
        stream.write(KEY[i:i + 5])
        stream.flush()
    stream.write(" and then a progress bar [####]")
    stream.flush()
    assert out.getvalue().startswith("[REDACTED]") and out.getvalue().endswith(" and then a progress bar [####]")
    # a long line that already held a key, then a partial echo cut by a flush (7 + 7 characters)
    stream.write("x" * 5000 + " key " + KEY + " echoed again: " + KEY[:7])
    stream.flush()
    stream.write(KEY[7:14] + " (cut)\n")
    stream.drain()
    assert key_pieces(out.getvalue()) == [] and out.getvalue().endswith("again: [REDACTED] (cut)\n")
    for cut in range(1, 20):  # every split point of a partial echo, each piece flushed
        out = stdio.StringIO()
        stream = RedactingStream(out, Redactor([KEY]))
        stream.write("echo " + KEY[3:3 + cut])
        stream.flush()
        stream.write(KEY[3 + cut:3 + 20] + " end")
        stream.drain()
        assert key_pieces(out.getvalue()) == [], cut


def test_masking_never_leaves_a_new_run_beside_the_mask():
    key = "abcD]xyz12345"  # holds the mask's own last characters
    out = Redactor([key]).redact(f"..{key}..ab{key}")
    assert key_pieces(out, key) == []


def test_a_key_hidden_by_json_escapes_is_masked_in_the_decoded_answer():
    """``\\/`` and ``\\uXXXX`` split the raw text into pieces under 8 characters; json.loads joins them."""
    import json

    escaped = "".join(f"\\u{ord(c):04x}" if i % 5 == 4 else c for i, c in enumerate(KEY))  # as \\/ would
    answer = '{"winner": "A", "rationale": "your key ' + escaped + ' is wrong"}'
    assert key_pieces(answer) == [] and KEY in json.loads(answer)["rationale"]  # the case this guards
    r = Redactor([KEY])
    clean = r.redact_json(answer)
    assert (key_pieces(json.dumps(json.loads(clean), ensure_ascii=False)) == []
            and MASK in json.loads(clean)["rationale"])
    schema = {"type": "object", "required": ["winner"], "properties": {"winner": {"enum": ["A", "B"]},
                                                                        "rationale": {"maxLength": 5}}}
    parsed, error = parse_structured(answer, schema, r)  # the schema error quotes the decoded value
    assert parsed is None and key_pieces(error) == [] and "[REDACTED]" in error
    assert r.redact_json("not json \\u0041 " + KEY[:10]) == "not json \\u0041 " + MASK
    # a duplicate member that shadows the escaped key, JSON in a code fence, and JSON too deep to walk
    for text in ('{"rationale": "' + escaped + '", "rationale": "fine"}', '```json\n{"r": "' + escaped + '"}\n```',
                 "[" * 900 + '"' + escaped + '"' + "]" * 900):
        clean = r.redact_json(text)
        assert key_pieces(clean) == [] and key_pieces(clean.replace("\\", "")) == []
        pairs = []
        try:
            json.loads(clean, object_pairs_hook=pairs.extend)
        except (ValueError, RecursionError):
            pass
        assert key_pieces(str(pairs)) == []


def test_logged_masks_the_log_the_traceback_and_the_terminal(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HEART_TEST_API_KEY", KEY)
    log = tmp_path / "rule.log"
    with pytest.raises(SystemExit):
        with logged(log) as lg:
            lg.warning("provider said %s", KEY)
            print("stdout:", KEY[3:40])
            raise RuntimeError(f"401: Incorrect API key provided: {KEY}")
    captured = capsys.readouterr()
    assert key_pieces(log.read_text() + captured.out + captured.err) == []
    assert "Incorrect API key provided: [REDACTED]" in captured.err and "Traceback" in log.read_text()


def test_a_key_variable_named_only_by_the_config_is_a_secret_too(monkeypatch):
    monkeypatch.setenv("PLAIN_NAME", KEY)
    assert key_pieces(Redactor.from_env().redact(KEY)) != []  # not credential-named: unknown without the config
    config = {"models": {"m": {"model": "openai/x", "api_key_env": "PLAIN_NAME"}, "local": {"model": "openai/y"}}}
    assert key_env_names(config) == ["PLAIN_NAME"]
    assert key_pieces(Redactor.from_env(key_env_names(config)).redact(KEY)) == []


def test_a_provider_echoing_the_key_leaves_no_fragment_anywhere(fake_llm, tmp_path, monkeypatch, caplog, capsys):
    """401/429/500 bodies, error JSON and headers that echo the key at many offsets, and an answer that carries
    it: nothing of 8 or more consecutive key characters in errors, warnings, the terminal or the cache."""
    state, base = fake_llm
    state.retry_after = 0.1
    monkeypatch.setenv("HEART_ECHO_KEY", KEY)
    spec = ModelSpec(name="m", model="openai/echo", api_base=base, api_key_env="HEART_ECHO_KEY",
                         params={"max_tokens": 20}, timeout=5, max_retries=2)
    plans = {"unauthorised": ["echo401"] * 5, "rate limited then fine": ["echo429"],
             "server error then fine": ["echo500"], "server error always": ["echo500"] * 5,
             "answer carries the key": ["echo200"], "json answer hides the key in escapes": ["echo200json"]}
    state.plans.update({k: list(v) for k, v in plans.items()})
    schema = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
    reqs = [Request(id=t, model="m", messages=({"role": "user", "content": t},), template_version="t",
                        schema=schema if "json" in t else None) for t in plans]
    cache = ResponseCache(tmp_path / "cache")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LLMStageError) as err:
        run_requests({"m": spec}, reqs, cache, backoff=0.01)
    assert state.auth[f"Bearer {KEY}"] > 0  # the server did get the key, and echoed it
    assert set(err.value.failures) == {"unauthorised", "server error always"}
    assert "Incorrect API key provided: [REDACTED]" in str(err.value)
    # every cache file as a reader decodes it (JSON escapes undone, the answer's own JSON too)
    entries = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("*.json")]
    written = json.dumps(entries, ensure_ascii=False) + json.dumps([json.loads(e["text"]) for e in entries
                                                                     if e["text"].startswith("{")], ensure_ascii=False)
    assert written.count("[REDACTED]") >= 3  # the echoing answers were cached with the key masked
    # the JSON answer: its key was whole only after decoding; masked in the text and in what was parsed
    again = run_requests({"m": spec}, [r for r in reqs if "json" in r.id], cache)  # a cache hit
    assert again["json answer hides the key in escapes"]["parsed"]["text"].endswith("[REDACTED]")
    captured = capsys.readouterr()
    everything = str(err.value) + caplog.text + captured.out + captured.err + written + json.dumps(again)
    assert "retrying" in caplog.text and key_pieces(everything) == []


@pytest.mark.parametrize("value, expected", [
    ("3", 3.0), ("0.5", 0.5), ("-4", 0.0), ("soon", None), (None, None), ("nan", None), ("inf", None),
    ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),  # an HTTP date, 10 s after "now"
    ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # a date in the past: go now
])
def test_retry_after_seconds_and_http_dates(value, expected):
    import email.utils

    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()
    assert parse_retry_after(value, now=now) == expected


def test_the_engine_waits_as_long_as_an_http_date_retry_after_says(fake_llm, tmp_path):
    """Retry-After: <HTTP date> 2 s ahead (1-second resolution, so >= 1 s away): the retry waits for it, where
    the exponential backoff alone would retry after ~0.01 s."""
    import time

    state, base = fake_llm
    state.retry_after = 2.0
    state.plans["slow down"] = ["429date"]
    spec = ModelSpec(name="m", model="openai/t", api_base=base, params={"max_tokens": 5}, timeout=10,
                         max_retries=1)
    t0 = time.monotonic()
    out = run_requests({"m": spec}, [Request(id="r", model="m", template_version="t",
                                                     messages=({"role": "user", "content": "slow down"},))],
                           ResponseCache(tmp_path / "c"), backoff=0.01)
    waited = time.monotonic() - t0
    assert out["r"]["text"] and state.calls["slow down"] == 2 and waited >= 0.9


def test_the_prefilter_never_lets_a_run_through():
    """Redactor skips texts holding none of a key's aligned 4-grams; any run of 8 key characters holds one."""
    import random

    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789-_"
    for _ in range(300):
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 60)))
        start = rng.randint(0, len(key) - MIN_RUN)
        run = key[start:start + rng.randint(MIN_RUN, len(key) - start)]
        filler = "".join(rng.choice(alphabet + " ") for _ in range(rng.randint(0, 80)))
        text = filler[: len(filler) // 2] + run + filler[len(filler) // 2:]
        assert key_pieces(Redactor([key]).redact(text), key) == [], (key, run)


def test_cached_answers_and_the_published_cache_are_redacted_too(tmp_path, monkeypatch):
    """A cache written before redaction existed (or someone else's) can hold a key: a hit and the export mask it."""
    monkeypatch.setenv("HEART_TEST_API_KEY", KEY)
    spec = ModelSpec(name="m", model="openai/t", api_base="http://127.0.0.1:9/v1", api_key_env="HEART_TEST_API_KEY")
    req = Request(id="r", model="m", template_version="t", messages=({"role": "user", "content": "hi"},))
    cache = ResponseCache(tmp_path / "c")
    cache.put(cache_key(spec, req), {"model": "openai/t", "text": f"old answer with {KEY}", "parsed": None,
                                         "parse_error": None, "usage": {}, "cost": None})
    out = run_requests({"m": spec}, [req], cache)  # answered from the cache: port 9 is never called
    assert out["r"]["from_cache"] and key_pieces(out["r"]["text"]) == [] and MASK in out["r"]["text"]
    cache.export(tmp_path / "published.parquet", Redactor([KEY]))
    import pandas as pd

    assert key_pieces(pd.read_parquet(tmp_path / "published.parquet").to_csv()) == []


INTERRUPTED_SCRIPT = """
import sys
from heart.common.runtime import logged
from heart.llm.cache import ResponseCache
from heart.llm.engine import run_requests
from heart.llm.models import ModelSpec
from heart.llm.request import Request

base, log = sys.argv[1], sys.argv[2]
with logged(log):
    spec = ModelSpec(name="m", model="openai/echo", api_base=base, api_key_env="HEART_TEST_API_KEY",
                         params={"max_tokens": 5}, timeout=5, max_retries=3)
    run_requests({"m": spec}, [Request(id="r", model="m", template_version="t",
                                               messages=({"role": "user", "content": "wait for me"},))],
                     ResponseCache(sys.argv[3]))
"""


@pytest.mark.e2e  # a server or a process of its own beside the test
def test_an_interrupt_while_waiting_to_retry_prints_no_key(fake_llm, tmp_path):
    """Ctrl-C (or scancel --signal=INT) during the wait after an echoed 429: the traceback would carry the
    provider's exception, key and all, to the terminal; it goes to the log, redacted, and the job exits 130."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from support import REPO

    state, base = fake_llm
    state.retry_after = 30
    state.plans["wait for me"] = ["echo429"] * 4
    log = tmp_path / "job.log"
    env = {**os.environ, "HEART_TEST_API_KEY": KEY, "PYTHONPATH": str(REPO / "workflow")}
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED_SCRIPT, base, str(log), str(tmp_path / "c")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # Ctrl-C as in a terminal: the suite's worker may have inherited SIGINT ignored, and
                            # a child inherits that (make test lost every SIGINT this way)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while "retrying in" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err and "KeyboardInterrupt" in log.read_text()
    assert key_pieces(out + err + log.read_text()) == []


def test_an_exit_message_is_redacted_too(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HEART_TEST_API_KEY", KEY)
    with pytest.raises(SystemExit) as exit_:
        with logged(tmp_path / "x.log"):
            raise SystemExit(f"provider said {KEY}")
    assert exit_.value.code == 1
    captured = capsys.readouterr()
    assert "provider said [REDACTED]" in captured.err and key_pieces(captured.err + captured.out) == []
    with pytest.raises(SystemExit) as exit_:
        with logged(tmp_path / "y.log"):
            raise SystemExit(3)  # an exit status passes as it is
    assert exit_.value.code == 3


@pytest.mark.parametrize("where", ["text", "escaped text", "double-escaped text", "model", "usage key",
                                   "logprob token", "error", "cut echo"])
def test_a_cache_hit_skips_masking_only_when_nothing_in_it_could_be_masked(where):
    """The cache read path's fast path (:meth:`Redactor.holds_secret`): a hit holding a key run anywhere --
    a field, a dict key, a list, the text behind one or two layers of JSON escapes -- is masked exactly as
    the full walk masks it, and a clean hit comes back unchanged."""
    from heart.llm.cache import redacted_entry

    redactor = Redactor([KEY])
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY[:12]) + KEY[12:]
    clean = {"model": "openai/t", "text": json.dumps({"winner": "A", "rationale": "kind\nand warm"}),
             "parsed": {"winner": "A"}, "usage": {"prompt_tokens": 3}, "cost": None,
             "logprobs": [{"token": "A", "logprob": -0.1}]}
    dirty = json.loads(json.dumps(clean))
    if where == "text":
        dirty["text"] = f"answer {KEY}"
    elif where == "escaped text":
        dirty["text"] = '{"winner": "A", "rationale": "' + escaped + '"}'
    elif where == "double-escaped text":
        dirty["text"] = json.dumps({"note": '{"k": "' + escaped + '"}'})
    elif where == "model":
        dirty["model"] = KEY
    elif where == "usage key":
        dirty["usage"] = {KEY: 1}
    elif where == "logprob token":
        dirty["logprobs"][0]["token"] = KEY[5:20]
    elif where == "error":
        dirty["parse_error"] = f"bad key {KEY[:10]}"
    else:
        dirty["text"] = f"Incorrect API key provided: {KEY[3:3 + MIN_RUN]}..."

    def slow(entry):  # the full walk the fast path stands in for
        out = redactor.redact_obj({k: v for k, v in entry.items() if k not in ("text", "parsed")})
        out["text"] = redactor.redact_json(entry["text"])
        return out

    assert redactor.holds_secret({k: v for k, v in dirty.items() if k != "text"}, [dirty["text"]])
    assert redacted_entry(dirty, redactor) == slow(dirty) != {k: v for k, v in dirty.items() if k != "parsed"}
    assert key_pieces(json.dumps(redacted_entry(dirty, redactor))) == []
    assert not redactor.holds_secret({k: v for k, v in clean.items() if k != "text"}, [clean["text"]])
    assert redacted_entry(clean, redactor) == slow(clean) == {k: v for k, v in clean.items() if k != "parsed"}
    assert not Redactor([]).holds_secret(dirty, [dirty["text"]])  # no keys in the environment: nothing to mask


def test_every_run_of_a_key_holds_one_of_its_probes():
    """The probes are chosen per window by rarity, not aligned: every one of a key's runs of MIN_RUN still
    holds a whole one (exhaustively, over keys of every length and alphabet)."""
    import random

    from heart.common.redaction import _probes

    rng = random.Random(11)
    for _ in range(400):
        alphabet = rng.choice(["abcdefghijklmnopqrstuvwxyz", "0123456789", "aZ09-_/+", "eeeeet", "x"])
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(MIN_RUN, 70)))
        probes = _probes(key)
        for start in range(len(key) - MIN_RUN + 1):
            assert any(p in key[start:start + MIN_RUN] for p in probes), (key, start)
