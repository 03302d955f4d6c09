"""Support-strategy tagging with a prompted LLM classifier (HEART paper §9.10).

Every completion (model systems, "original", "human") is labelled against the
15-strategy taxonomy (``workflow/resources/taxonomy/strategies.yaml``): for each
strategy "present" / "absent" / "uncertain", a probability and a short evidence
snippet, as one JSON object checked against :func:`response_schema`. The output
is long: one row per (completion, strategy). Given human spot-check labels,
:func:`f1_scores` gives per-strategy and macro F1 of the tagger against them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from heart.llm import shards
from heart.common import tableio
from heart.common.config import load_resource
from heart.llm.request import Request, json_messages

LABELS = ["present", "absent", "uncertain"]
COLUMNS = ["item_id", "system", "contributor_id", "tagger", "strategy", "label", "probability", "evidence",
           "parse_ok", "parse_error", "cache_key", "from_cache", "neutralised_tokens"]


def load_taxonomy(path) -> dict:
    """The taxonomy file (``workflow/resources/taxonomy/strategies.yaml``), checked against
    ``workflow/schemas/taxonomy.schema.yaml``; every strategy key is used once."""
    return load_resource(path, "taxonomy", unique_keys="strategies")


def keys(taxonomy: dict) -> list[str]:
    return [s["key"] for s in taxonomy["strategies"]]


def system_prompt(template: str, taxonomy: dict) -> str:
    """The tagger's instructions: ``{taxonomy}`` filled with every strategy's key, name, definition and
    example; ``{taxonomy_brief}`` with key, name and definition only; ``{taxonomy_numbered}`` with number,
    name and definition (for ``present_list`` answers, which name strategies by number)."""
    lines = "\n".join(f"- {s['key']}: {s['name']} — {s['definition']} Example: \"{s['example']}\""
                      for s in taxonomy["strategies"])
    brief = "\n".join(f"- {s['key']}: {s['name']} — {s['definition']}" for s in taxonomy["strategies"])
    numbered = "\n".join(f"{n}. {s['name']} — {s['definition']}" for n, s in enumerate(taxonomy["strategies"], 1))
    return (template.replace("{taxonomy}", lines).replace("{taxonomy_brief}", brief)
            .replace("{taxonomy_numbered}", numbered))


# a probability in steps of 0.05: an enum, so a grammar-constrained local model cannot write p = 2
PROBABILITIES = [round(k * 0.05, 2) for k in range(21)]


def response_schema(taxonomy: dict, evidence_max_chars: int | None = None) -> dict:
    """JSON schema of a tagger's answer; ``evidence_max_chars`` bounds each snippet (a grammar-constrained
    local model then always finishes within its token budget)."""
    evidence = {"type": "string"} if evidence_max_chars is None else {"type": "string", "maxLength": evidence_max_chars}
    one = {"type": "object",
           "properties": {"label": {"type": "string", "enum": LABELS},
                          "p": {"type": "number", "enum": PROBABILITIES},
                          "evidence": evidence},
           "required": ["label", "p", "evidence"], "additionalProperties": False}
    return {"type": "object", "properties": {k: one for k in keys(taxonomy)},
            "required": keys(taxonomy), "additionalProperties": False}


#: a tagger's answer formats: every strategy's label, probability and evidence (the paper's), or only the
#: list of strategies present (``present_list``: a few tokens, for a small local model; labels only)
ANSWERS = ("per_strategy", "present_list")
PRESENT_LIST_MAX = 3


def present_list_schema(taxonomy: dict) -> dict:
    """JSON schema of a ``present_list`` answer: ``{"present": [strategy numbers]}`` (1-based, in the order
    of the taxonomy, as ``{taxonomy_numbered}`` lists them: a number is one token, a key up to six), the one to
    PRESENT_LIST_MAX strategies the response uses most clearly (a small model left free to list none lists
    none for every response). Every strategy it does not list is "absent"; it has no probability, evidence
    or "uncertain". (No ``uniqueItems``: a repeated key means the same as one; :func:`tag_table` reads the
    set.)"""
    return {"type": "object",
            "properties": {"present": {"type": "array",
                                       "items": {"type": "integer", "minimum": 1, "maximum": len(keys(taxonomy))},
                                       "minItems": 1, "maxItems": PRESENT_LIST_MAX}},
            "required": ["present"], "additionalProperties": False}


def answer_schema(answer: str, taxonomy: dict, evidence_max_chars: int | None = None) -> dict:
    """The response schema of a tagger's ``answer`` format (:data:`ANSWERS`)."""
    if answer not in ANSWERS:
        raise ValueError(f"tagger answer {answer!r} is not one of {ANSWERS}")
    return present_list_schema(taxonomy) if answer == "present_list" else response_schema(taxonomy, evidence_max_chars)


def _labels(parsed: dict | None, taxonomy: dict) -> dict | None:
    """strategy key -> {label, p, evidence} from either answer format (None: unparsed)."""
    if parsed is None:
        return None
    if "present" in parsed and isinstance(parsed["present"], list):
        present = {keys(taxonomy)[n - 1] for n in parsed["present"]}
        return {k: {"label": "present" if k in present else "absent", "p": None, "evidence": None}
                for k in keys(taxonomy)}
    return parsed


def _ref(row) -> str:
    c = row.contributor_id
    return f"{row.item_id}:{row.system}" + ("" if c is None or pd.isna(c) else f"#{c}")


def shard_rows(completions: pd.DataFrame, shard: str) -> pd.DataFrame:
    """The completions a tagging shard tags: split by a hash of the reply's text, not its item, because a
    tagger's request holds the text only. Identical replies (of different items or systems) then fall in
    one shard, whose engine calls once for them, instead of two shards both paying for the same request."""
    return shards.select(completions, shard, column="text")


def requests(completions: pd.DataFrame, model: str, instructions: str, version: str, schema: dict,
             params: dict | None = None) -> list[Request]:
    """One request per completion; the id is ``<item_id>:<system>[#<contributor>]``."""
    return [Request(id=_ref(r), model=model,
                    messages=json_messages(instructions, {"response": r.text}),
                    schema=schema, template_version=f"tagging:{version}", params=params or None)
            for r in completions.itertuples()]


def tag_table(completions: pd.DataFrame, tagger: str, results: dict, taxonomy: dict) -> pd.DataFrame:
    rows = []
    for r in completions.itertuples():
        res = results[_ref(r)]
        parsed = _labels(res.get("parsed"), taxonomy)
        for k in keys(taxonomy):
            got = parsed[k] if parsed is not None else None
            rows.append({"item_id": r.item_id, "system": r.system,
                         "contributor_id": None if pd.isna(r.contributor_id) else r.contributor_id,
                         "tagger": tagger, "strategy": k,
                         "label": got["label"] if got else None,
                         "probability": float(got["p"]) if got and got["p"] is not None else None,
                         "evidence": got["evidence"] if got else None,
                         "parse_ok": parsed is not None, "parse_error": res.get("parse_error"),
                         "cache_key": res["cache_key"], "from_cache": bool(res["from_cache"]),
                         "neutralised_tokens": res.get("neutralised_tokens", 0)})
    return pd.DataFrame(rows, columns=COLUMNS)


SPOT_CHECK_REQUIRED = ["item_id", "system", "strategy", "present"]
SPOT_CHECK_OPTIONAL = ["contributor_id"]
_TRUTH = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def read_spot_checks(path, taxonomy: dict, completions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Human spot-check labels (``resources/human/README.md``); errors name file, line and field.

    With ``completions`` (item_id, system, contributor_id of every tagged completion), a label for a
    completion that does not exist is an error too; so is a (completion, strategy) labelled twice.
    """
    path = Path(path)
    table = tableio.read_records(path, SPOT_CHECK_REQUIRED, SPOT_CHECK_OPTIONAL,
                                 ids=("item_id", "system", "contributor_id", "strategy"))
    known = set(keys(taxonomy))
    refs = None
    if completions is not None:
        refs = {(i, s, "" if c is None or pd.isna(c) else c)
                for i, s, c in completions[["item_id", "system", "contributor_id"]].itertuples(index=False)}
    present = []
    for row in table.itertuples():
        where = f"{path}, line {row.line}"
        for col in ("item_id", "system"):
            if tableio.is_blank(getattr(row, col)):
                raise ValueError(f"{where}: field {col!r} is empty")
        if row.strategy not in known:
            raise ValueError(f"{where}: field 'strategy' is {row.strategy!r}; "
                             f"expected one of the taxonomy keys ({', '.join(sorted(known))})")
        value = _TRUTH.get(row.present.strip().lower())
        if value is None:
            raise ValueError(f"{where}: field 'present' is {row.present!r}; expected 1/0 or true/false")
        if refs is not None and (row.item_id, row.system, row.contributor_id) not in refs:
            raise ValueError(f"{where}: fields 'item_id', 'system', 'contributor_id' ({row.item_id}, {row.system}, "
                             f"{row.contributor_id or '-'}) name no completion that was tagged")
        present.append(value)
    repeated = table[table.duplicated(["item_id", "system", "contributor_id", "strategy"], keep=False)]
    if len(repeated):
        lines = repeated["line"].tolist()
        raise ValueError(f"{path}, lines {lines[0]} and {lines[1]}: the same completion and strategy are "
                         "labelled twice; keep the adjudicated label only")
    table["present"] = present
    table["contributor_id"] = table["contributor_id"].replace("", None)
    return table


def absent_f1(taxonomy: dict) -> pd.DataFrame:
    """The F1 table when there are no human labels: every strategy and the macro row "absent", F1 null."""
    return pd.DataFrame([{"strategy": k, "status": "absent", "n": 0, "tp": 0, "fp": 0, "fn": 0, "f1": None}
                         for k in [*keys(taxonomy), "macro"]])


def f1_scores(tags: pd.DataFrame, spot: pd.DataFrame, taxonomy: dict) -> pd.DataFrame:
    """Per-strategy F1 (tagger "present" vs the human label) on the spot-checked completions, and macro F1.

    "uncertain" counts as not present (the tagger abstained); unparsed answers are left out.
    """
    tags = tags[tags["parse_ok"]].copy()
    for t in (tags, spot):
        t["contributor_id"] = t["contributor_id"].fillna("")
    merged = spot.merge(tags, on=["item_id", "system", "contributor_id", "strategy"], how="inner")
    rows = []
    for k in keys(taxonomy):
        g = merged[merged["strategy"] == k]
        pred, true = g["label"].eq("present"), g["present"].astype(bool)
        tp, fp, fn = int((pred & true).sum()), int((pred & ~true).sum()), int((~pred & true).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else np.nan
        rows.append({"strategy": k, "status": "present", "n": len(g), "tp": tp, "fp": fp, "fn": fn, "f1": f1})
    out = pd.DataFrame(rows)
    macro = {"strategy": "macro", "status": "present", "n": int(out["n"].sum()), "tp": int(out["tp"].sum()),
             "fp": int(out["fp"].sum()), "fn": int(out["fn"].sum()), "f1": float(out["f1"].mean())}
    return pd.concat([out, pd.DataFrame([macro])], ignore_index=True)
