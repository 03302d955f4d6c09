"""Completions from models and from the dataset (HEART paper §9.3-9.4; rules generate_completions,
original_completions).

A *system* is one source of completions: a configured model under a versioned system prompt, the original
dataset reply ("original"), or human contributors (:mod:`heart.completions.imported`). Every system's
completions are one table (``completions.schema.yaml``). Model completions are decoded as the paper made
them (§9.4: temperature 0, top-p 1, chain-of-thought disabled): every request asks for
:func:`heart.llm.decoding.decoding`, which sends those settings where the provider accepts them and the
provider's least reasoning setting where reasoning cannot be turned off, and each row records in
``sent_params`` what it was made with.
"""

from __future__ import annotations

import json
import re

import pandas as pd

from heart.common.tableio import table_schema
from heart.llm.request import Request


ROLE_TO_CHAT = {"seeker": "user", "supporter": "assistant"}
_PREFIX = re.compile(r"^\s*(?:supporter|assistant|listener|helper|response|reply)\s*:\s*", re.IGNORECASE)
_QUOTES = [('"', '"'), ("“", "”"), ("'", "'")]
#: the end of a sentence: its mark, then any closing quotes or brackets, then a space or the end of the text
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s|$)")
#: what a study does with a reply the model was cut off in (finish reason "length"; config completions.cut_replies)
CUT_REPLIES = ("trim", "keep")


def chat_messages(system_prompt: str, history) -> tuple:
    """System prompt + the dialogue history as chat turns (seeker = user, supporter = assistant)."""
    msgs = [{"role": "system", "content": system_prompt}]
    msgs += [{"role": ROLE_TO_CHAT[t["role"]], "content": t["text"]} for t in history]
    return tuple(msgs)


def completion_requests(items: pd.DataFrame, system: str, model: str, system_prompt: str,
                        version: str) -> list[Request]:
    """One request per item for a model system; the request id is the item id. Each is decoded the paper's
    way (``paper_decoding``: :func:`heart.llm.decoding.decoding` of the model, not its configured params as such), and
    streamed where the model streams (``ModelSpec.stream``): a completion's time to first token is a result
    (Figure 5)."""
    return [Request(id=row.item_id, model=model, messages=chat_messages(system_prompt, row.history),
                    template_version=f"completion:{version}", paper_decoding=True, stream=True)
            for row in items.itertuples()]


def trim_to_sentence(text: str) -> str | None:
    """``text`` up to the end of its last complete sentence, or None when it holds no sentence end before its
    last word (a reply cut off mid-sentence by the token limit: "... This means that even if")."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    if not ends or ends[-1] == len(text.rstrip()):
        return None
    return text[:ends[-1]]


def postprocess(text: str, finish_reason: str | None = None, cut_replies: str = "keep") -> tuple[str, list[str]]:
    """Strip a role prefix and wrapping quotes, collapse whitespace, and (``cut_replies`` "trim") end a reply the
    model was cut off in (``finish_reason`` "length") at its last complete sentence; list what was done."""
    if cut_replies not in CUT_REPLIES:
        raise ValueError(f"completions.cut_replies must be one of {CUT_REPLIES}, not {cut_replies!r}")
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
    if finish_reason == "length" and cut_replies == "trim":
        trimmed = trim_to_sentence(out)
        if trimmed:  # a reply with no complete sentence is kept as it came (its finish reason says it was cut)
            out = trimmed
            steps.append("trimmed_to_last_sentence")
    return out, steps


COLUMNS = table_schema("completions").names  # declared once, in completions.schema.yaml


def model_table(items: pd.DataFrame, system: str, results: dict, model: str,
                template_name: str, version: str, cut_replies: str = "keep") -> pd.DataFrame:
    """Completions of a model system, one row per item, from :func:`heart.llm.engine.run_requests` results;
    ``cut_replies``: what is done to a reply the token limit cut (:func:`postprocess`)."""
    rows = []
    for item_id in items["item_id"]:
        r = results[item_id]
        text, steps = postprocess(r["text"], r.get("finish_reason"), cut_replies)
        usage = r.get("usage") or {}
        rows.append({
            "item_id": item_id, "system": system, "source": "model", "contributor_id": None,
            "model": model, "prompt_template": template_name, "prompt_version": version,
            "text": text, "raw_text": r["text"], "postprocessing": steps,
            "ttft_s": r.get("ttft_s"), "latency_s": r.get("latency_s"),
            "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
            "cost_usd": r.get("cost"), "cache_key": r["cache_key"],
            "sent_params": None if r.get("sent_params") is None else json.dumps(r["sent_params"], sort_keys=True),
            "from_cache": bool(r["from_cache"]), "neutralised_tokens": r.get("neutralised_tokens", 0),
            "finish_reason": r.get("finish_reason"),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def static_rows(item_ids, system, source, texts, contributors=None) -> pd.DataFrame:
    n = len(texts)
    return pd.DataFrame({
        "item_id": list(item_ids), "system": system, "source": source,
        "contributor_id": list(contributors) if contributors is not None else [None] * n,
        "model": None, "prompt_template": None, "prompt_version": None,
        "text": list(texts), "raw_text": list(texts), "postprocessing": [[] for _ in range(n)],
        "ttft_s": None, "latency_s": None, "prompt_tokens": None, "completion_tokens": None,
        "cost_usd": None, "cache_key": None, "sent_params": None, "from_cache": False,
        "neutralised_tokens": None, "finish_reason": None,
    }, columns=COLUMNS)


def original_table(items: pd.DataFrame) -> pd.DataFrame:
    """The dataset's reply as the "original" system: the real next supporter turn, or the release's
    ``vanilla_completion`` (items' ``original_status`` says which); items without one (released adversarial
    contexts) have no original completion."""
    items = items[items["original_reply"].notna()]
    return static_rows(items["item_id"], "original", "dataset", items["original_reply"])


def stand_ins(items: pd.DataFrame, systems, per_context: int) -> pd.DataFrame:
    """Replies standing in for completions that do not exist yet, for the call preview (rule
    preview_llm_calls): judging and tagging are previewed before any completion is made.

    Every system of ``systems`` (configured and imported) gets the dataset's reply to the item, or the item's
    last turn where there is none (the same count of calls, a similar prompt length); "original" only where
    the data has a reply; and the human writers as many stand-ins per context as the protocol asks
    (``per_context``: an upper bound where fewer are collected), each text made distinct.
    """
    rows = []
    for r in items.itertuples():
        has_reply = isinstance(r.original_reply, str)
        text = r.original_reply if has_reply else r.history[-1]["text"]
        for system in [*systems, *(["original"] if has_reply else [])]:
            rows.append({"item_id": r.item_id, "system": system,
                         "source": "dataset" if system == "original" else "model",
                         "contributor_id": None, "text": text})
    for r in items.itertuples():
        for k in range(per_context):
            rows.append({"item_id": r.item_id, "system": "human", "source": "human", "contributor_id": f"w{k}",
                         "text": f"({k}) " + r.history[-1]["text"]})
    return pd.DataFrame(rows, columns=["item_id", "system", "source", "contributor_id", "text"])
