"""Next-turn completions: from models (through heart.llm), from the dataset, from humans.

HEART paper §9.3-9.4. A *system* is one source of completions: a configured
model under a versioned system prompt, the original dataset reply ("original"),
or human contributors ("human", imported from a file; three per context).
Every system's completions are one table (``completions.schema.yaml``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from heart import tableio
from heart.tableio import table_schema
from heart.llm import Request

ROLE_TO_CHAT = {"seeker": "user", "supporter": "assistant"}
_PREFIX = re.compile(r"^\s*(?:supporter|assistant|listener|helper|response|reply)\s*:\s*", re.IGNORECASE)
_QUOTES = [('"', '"'), ("“", "”"), ("'", "'")]


def chat_messages(system_prompt: str, history) -> tuple:
    """System prompt + the dialogue history as chat turns (seeker = user, supporter = assistant)."""
    msgs = [{"role": "system", "content": system_prompt}]
    msgs += [{"role": ROLE_TO_CHAT[t["role"]], "content": t["text"]} for t in history]
    return tuple(msgs)


def completion_requests(items: pd.DataFrame, system: str, model: str, system_prompt: str,
                        version: str) -> list[Request]:
    """One request per item for a model system; the request id is the item id."""
    return [Request(id=row.item_id, model=model, messages=chat_messages(system_prompt, row.history),
                    template_version=f"completion:{version}")
            for row in items.itertuples()]


def postprocess(text: str) -> tuple[str, list[str]]:
    """Strip a role prefix and wrapping quotes, collapse whitespace; list what was done."""
    steps = []
    out = " ".join(text.split())
    stripped = _PREFIX.sub("", out, count=1)
    if stripped != out:
        steps.append("stripped_role_prefix")
        out = stripped
    for left, right in _QUOTES:
        if len(out) > 2 and out.startswith(left) and out.endswith(right) and out.count(left) <= 2:
            out = out[1:-1].strip()
            steps.append("stripped_quotes")
            break
    return out, steps


COLUMNS = table_schema("completions").names  # declared once, in completions.schema.yaml


def model_table(items: pd.DataFrame, system: str, results: dict, model: str,
                template_name: str, version: str) -> pd.DataFrame:
    """Completions of a model system, one row per item, from :func:`heart.llm.run_requests` results."""
    rows = []
    for item_id in items["item_id"]:
        r = results[item_id]
        text, steps = postprocess(r["text"])
        usage = r.get("usage") or {}
        rows.append({
            "item_id": item_id, "system": system, "source": "model", "contributor_id": None,
            "model": model, "prompt_template": template_name, "prompt_version": version,
            "text": text, "raw_text": r["text"], "postprocessing": steps,
            "ttft_s": r.get("ttft_s"), "latency_s": r.get("latency_s"),
            "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
            "cost_usd": r.get("cost"), "cache_key": r["cache_key"], "from_cache": bool(r["from_cache"]),
            "neutralised_tokens": r.get("neutralised_tokens", 0),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def _static_rows(item_ids, system, source, texts, contributors=None) -> pd.DataFrame:
    n = len(texts)
    return pd.DataFrame({
        "item_id": list(item_ids), "system": system, "source": source,
        "contributor_id": list(contributors) if contributors is not None else [None] * n,
        "model": None, "prompt_template": None, "prompt_version": None,
        "text": list(texts), "raw_text": list(texts), "postprocessing": [[] for _ in range(n)],
        "ttft_s": None, "latency_s": None, "prompt_tokens": None, "completion_tokens": None,
        "cost_usd": None, "cache_key": None, "from_cache": False, "neutralised_tokens": None,
    }, columns=COLUMNS)


def original_table(items: pd.DataFrame) -> pd.DataFrame:
    """The dataset's reply as the "original" system: the real next supporter turn, or the release's
    ``vanilla_completion`` (items' ``original_status`` says which); items without one (released adversarial
    contexts) have no original completion."""
    items = items[items["original_reply"].notna()]
    return _static_rows(items["item_id"], "original", "dataset", items["original_reply"])


HUMAN_COLUMNS = ["item_id", "contributor_id", "text"]


def import_humans(path, items: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read human completions (CSV: item_id, contributor_id, text; other columns are ignored) for the items.

    Returns the "human" system's table and a table of rule violations (a
    contributor twice on one context, unknown item ids, empty text); violating
    rows are left out of the completions and listed instead, with their file line.

    Raises
    ------
    heart.tableio.RecordError
        The file cannot be read as the format (see :func:`heart.tableio.read_records`); the message names
        the file, the line and the field.
    """
    path = Path(path)
    df = tableio.read_records(path, HUMAN_COLUMNS, allow_extra=True, ids=("item_id", "contributor_id"))
    problems = []
    known = set(items["item_id"])
    for row in df.itertuples():
        if row.item_id not in known:
            problems.append((row.line, row.item_id, row.contributor_id, "unknown item_id"))
        elif tableio.is_blank(row.text):
            problems.append((row.line, row.item_id, row.contributor_id, "empty text"))
        elif tableio.is_blank(row.contributor_id):
            problems.append((row.line, row.item_id, row.contributor_id, "empty contributor_id"))
    bad_lines = {p[0] for p in problems}
    ok = df[~df["line"].isin(bad_lines)]
    dup = ok.duplicated(["item_id", "contributor_id"], keep="first")
    for row in ok[dup].itertuples():
        problems.append((row.line, row.item_id, row.contributor_id, "contributor already completed this context"))
    ok = ok[~dup]
    violations = pd.DataFrame(problems, columns=["line", "item_id", "contributor_id", "problem"])
    violations.insert(0, "file", str(path))
    table = _static_rows(ok["item_id"], "human", "human", ok["text"].str.strip(), ok["contributor_id"])
    return table, violations


def summarize(tables: dict[str, pd.DataFrame], human_path, human_file: bool = False) -> pd.DataFrame:
    """One row per system: source, present/absent, completions, items covered, and a note.

    ``human_file``: whether a file was found at ``human_path`` (an absent human system then says that
    nothing in it could be used, not that there is no file).
    """
    rows = []
    for system, t in tables.items():
        source = "human" if system == "human" else "dataset" if system == "original" else "model"
        present = len(t) > 0
        if system == "human":
            note = (f"{t['contributor_id'].nunique()} contributors, "
                    f"{t.groupby('item_id').size().mean():.1f} per item" if present
                    else f"absent: {human_path} holds no usable completions (see human_violations.parquet)"
                    if human_file else f"absent: no human completions file at {human_path}")
        elif source == "model":
            note = f"model {t['model'].iloc[0]}, prompt {t['prompt_template'].iloc[0]}" if present else "absent"
        else:
            note = "the dataset's next supporter turn"
        rows.append({"system": system, "source": source, "status": "present" if present else "absent",
                     "n_completions": len(t), "n_items": int(t["item_id"].nunique()) if present else 0,
                     "note": note})
    return pd.DataFrame(rows)
