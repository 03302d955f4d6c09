"""The LLM stages through Snakemake against an API model on 127.0.0.1: keys, kill -9, replay, echoes."""

import json
import os
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml

from support import llm_server as srv
from support import SNAKEMAKE
from support.workflow import api_config
from heart.common import tableio

pytestmark = pytest.mark.e2e


def test_human_completions_imported_with_violations(workflow_copy, api_server):
    _, base = api_server
    wf = workflow_copy
    cfg = api_config(wf, base)
    env = {"HEART_TEST_API_KEY": "k"}
    wf.snakemake("results/items/items.parquet", *cfg, env=env)
    ids = tableio.read_table(wf.root / "results/items/items.parquet")["item_id"].tolist()
    human = wf.root / "resources/human/completions.csv"
    human.parent.mkdir(parents=True)
    rows = [f"{i},c{k},Reply {k} to {i}. That sounds hard." for i in ids for k in (1, 2, 3)]
    human.write_text("item_id,contributor_id,text\n" + "\n".join(rows + [f"{ids[0]},c1,again"]) + "\n")
    wf.snakemake("results/completions/systems.parquet", *cfg, env=env)
    h = tableio.read_table(wf.root / "results/completions/human.parquet")
    v = tableio.read_table(wf.root / "results/completions/human_violations.parquet")
    assert len(h) == 3 * len(ids) and h.groupby("item_id")["contributor_id"].nunique().eq(3).all()
    assert v["problem"].tolist() == ["contributor already completed this context"]
    systems = tableio.read_table(wf.root / "results/completions/systems.parquet").set_index("system")
    assert systems.loc["human", "status"] == "present"

    # a directory where the file should be is named as unreadable, not taken for "no human completions"
    human.unlink()
    human.mkdir()
    proc = wf.snakemake("results/completions/human.parquet", *cfg, check=False, env=env)
    assert (proc.returncode != 0
            and "resources/human/completions.csv: cannot be read (Is a directory)" in proc.stderr), proc.stderr
    assert not (wf.root / "results/completions/human.parquet").exists()


# --- an API model: a real OpenAI-compatible server on 127.0.0.1 ------------------------

@pytest.fixture
def api_server(fake_llm):
    return fake_llm


def test_kill_9_then_rerun_pays_for_nothing_twice(workflow_copy):
    state = srv.State(latency=0.5)
    server = srv.serve(state)
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    wf = workflow_copy
    args = api_config(wf, base, n=6, concurrency=1)
    env = wf._env({"HEART_TEST_API_KEY": "sk-kill-test"})
    target = "results/completions/remote-a.parquet"
    proc = subprocess.Popen([SNAKEMAKE, "--cores", "1", target, *args], cwd=wf.root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # kill once two answers are on disk (the server's count runs ahead of the client's cache write)
        cache_dir = wf.root / "resources/llm_cache"
        deadline = time.monotonic() + 180
        while len(list(cache_dir.rglob("*.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    time.sleep(1.0)  # let the server finish a request that was in flight at the kill
    cached = len(list(cache_dir.rglob("*.json")))
    answered = sum(state.ok.values())
    assert 2 <= cached < 6 and answered - cached <= 1  # at most the call in flight was lost
    wf.snakemake(target, *args, "--unlock", env={"HEART_TEST_API_KEY": "sk-kill-test"})
    wf.snakemake(target, *args, "--rerun-incomplete", env={"HEART_TEST_API_KEY": "sk-kill-test"})
    server.shutdown()
    # the rerun called exactly what was not cached: nothing that succeeded was paid for twice
    assert sum(state.ok.values()) - answered == 6 - cached
    c = tableio.read_table(wf.root / "results/completions/remote-a.parquet")
    assert len(c) == 6 and c["from_cache"].sum() == cached


def _decoded(path):
    """A JSON file, or every JSON-looking cell of a Parquet table, decoded (nested JSON texts too)."""
    def deep(value):
        if isinstance(value, str) and value[:1] in "{[":
            try:
                return deep(json.loads(value, strict=False))
            except ValueError:
                return value
        if isinstance(value, dict):
            return {k: deep(v) for k, v in value.items()}
        if isinstance(value, list):
            return [deep(v) for v in value]
        return value

    if path.suffix == ".json":
        try:
            return deep(json.loads(path.read_text(errors="replace"), strict=False))
        except ValueError:
            return None
    import pyarrow.parquet as pq

    return deep([[str(v) for v in row] for row in pq.read_table(path).to_pylist() for row in [row.values()]])


def _all_text_under(root) -> str:
    """Every file below ``root`` as text, Parquet tables decoded too (their pages may be compressed)."""
    import pyarrow.parquet as pq

    parts = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        parts.append(path.read_bytes().decode("utf-8", errors="replace"))
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            parts.append(str(table.schema.metadata) + table.to_pandas().to_csv())
        if path.suffix in (".json", ".parquet"):  # as a reader decodes them: JSON escapes undone
            parts.append(json.dumps(_decoded(path), ensure_ascii=False))
    return "\n".join(parts)


def test_an_echoing_provider_leaves_no_key_fragment_in_any_file_or_output(workflow_copy, api_server):
    """A working and a failing keyed system, both against a provider that echoes the key (401 bodies, error
    JSON, headers, and the answer itself): the key from the environment reaches the provider, and no run of 8
    key characters is in any file the run wrote (results, logs, .snakemake, the cache, benchmarks) nor in what
    Snakemake printed. Then a reviewer's checkout (no key, no server) replays the published cache."""
    from support import KEY, key_pieces

    state, base = api_server
    failing = {"e401": "echo401", "e429": "echo429", "e500": "echo500"}
    state.by_model = {"good-echo": "echo200", **{f"{name}-echo": b for name, b in failing.items()}}
    wf = workflow_copy
    args = api_config(wf, base, n=2, model="openai/good-echo")
    cfg = yaml.safe_load((wf.root / "api.yaml").read_text())
    for name in failing:
        cfg["models"][name] = {**cfg["models"]["remote"], "model": f"openai/{name}-echo"}
        cfg["systems"][f"{name}-a"] = {"model": name, "prompt": "supportive_listener"}
    (wf.root / "api.yaml").write_text(yaml.safe_dump(cfg))
    targets = [f"results/completions/{s}.parquet" for s in ["remote-a", *(f"{n}-a" for n in failing)]]
    proc = wf.snakemake(*targets, "--keep-going", *args, check=False, env={"HEART_TEST_API_KEY": KEY})
    assert proc.returncode != 0 and state.auth[f"Bearer {KEY}"] > 0
    good = tableio.read_table(wf.root / "results/completions/remote-a.parquet")
    assert len(good) == 2 and good["raw_text"].str.contains("[REDACTED]", regex=False).all()
    assert [t for t in targets if (wf.root / t).exists()] == targets[:1]
    assert "retrying" in (wf.root / "logs/completions/e500-a/1of1.log").read_text()  # retries were logged too
    assert "Incorrect API key provided: [REDACTED]" in proc.stderr  # the failure is told, without the key
    printed = proc.stdout + proc.stderr

    # then the working system judged and tagged by models whose JSON answers hide the key behind \u escapes
    # (whole only once decoded), the call preview, and the published cache
    from support.workflow import fake

    state.responder = fake
    state.by_model["judge-echo"] = "echo200json"
    for name in failing:
        del cfg["models"][name], cfg["systems"][f"{name}-a"]
    cfg["models"]["judge"] = {**cfg["models"]["remote"], "model": "openai/judge-echo", "family": "judge",
                              "params": {"temperature": 0, "max_tokens": 400}}
    cfg["judging"] = {"judges": {"echo-judge": {"model": "judge"}}}
    cfg["tagging"] = {"taggers": {"echo-tagger": {"model": "judge"}}}
    (wf.root / "api.yaml").write_text(yaml.safe_dump(cfg))
    targets = ["results/judging/llm/echo-judge.parquet", "results/tagging/echo-tagger.parquet",
               "results/llm/calls_preview.parquet", "results/llm/cache.parquet"]
    proc = wf.snakemake(*targets, *args, env={"HEART_TEST_API_KEY": KEY})
    verdicts = tableio.read_table(wf.root / targets[0])
    assert verdicts["parse_ok"].all() and verdicts["rationale"].str.endswith("[REDACTED]").all()
    tags = tableio.read_table(wf.root / targets[1])
    assert tags["parse_ok"].all() and tags["evidence"].str.endswith("[REDACTED]").all()
    printed += proc.stdout + proc.stderr
    assert key_pieces(printed) == []
    assert key_pieces(_all_text_under(wf.root)) == []

    # a reviewer's checkout: no key, no server, only the published export
    other = type(wf)(wf.root.parent / "reviewer")
    (other.root / "published.parquet").write_bytes((wf.root / "results/llm/cache.parquet").read_bytes())
    other.snakemake("results/completions/remote-a.parquet", "results/llm/cache.parquet",
                    *api_config(other, "http://127.0.0.1:9/v1", n=2, model="openai/good-echo",
                                replay="published.parquet"), env={"HEART_TEST_API_KEY": None})
    replayed = tableio.read_table(other.root / "results/completions/remote-a.parquet")
    assert replayed["from_cache"].all() and replayed["text"].tolist() == good["text"].tolist()
    # and re-publishes what it replayed: the same export, though its own cache directory stayed empty
    assert not list((other.root / "resources/llm_cache").rglob("*.json"))
    pd.testing.assert_frame_equal(tableio.read_table(other.root / "results/llm/cache.parquet"),
                                  tableio.read_table(wf.root / "results/llm/cache.parquet"))
