"""Support-strategy tagging with a prompted LLM classifier (HEART paper §9.10).

Every completion (model systems, "original", "human") is labelled against the
15-strategy taxonomy (``workflow/resources/taxonomy/strategies.yaml``): for each
strategy "present" / "absent" / "uncertain", a probability and a short evidence
snippet, as one JSON object checked against :func:`response_schema` (``answer: per_strategy``); or the
numbers of the one to three strategies a reply uses most clearly (``answer: present_list``, for a small
local model). The output is long: one row per (completion, strategy).

A tagger is carried whole from its config entry to its requests as a :class:`Tagger` (built by
``rules/common.smk``, handed to rule tag_strategies as the plain dict of :meth:`Tagger.as_params`, as a
judge is: :mod:`heart.judging.judge`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from heart.llm import shards
from heart.common.config import PlainParams, schema_defaults
from heart.llm.request import Request, json_messages
from heart.tagging.taxonomy import strategy_keys


LABELS = ["present", "absent", "uncertain"]
COLUMNS = ["item_id", "system", "contributor_id", "tagger", "strategy", "label", "probability", "evidence",
           "parse_ok", "parse_error", "cache_key", "from_cache", "neutralised_tokens"]


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
    return {"type": "object", "properties": {k: one for k in strategy_keys(taxonomy)},
            "required": strategy_keys(taxonomy), "additionalProperties": False}


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
                                       "items": {"type": "integer", "minimum": 1,
                                                 "maximum": len(strategy_keys(taxonomy))},
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
        present = {strategy_keys(taxonomy)[n - 1] for n in parsed["present"]}
        return {k: {"label": "present" if k in present else "absent", "p": None, "evidence": None}
                for k in strategy_keys(taxonomy)}
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
        for k in strategy_keys(taxonomy):
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

#: config ``tagging.taggers.<name>``'s defaults: said once, in the schema
_D = schema_defaults("tagging.taggers.*")


@dataclass(frozen=True)
class Tagger(PlainParams):
    """An LLM tagger (config ``tagging.taggers.<name>``, with the block's ``evidence_max_chars``; the defaults
    are the config schema's): its ``model`` (a key of ``models``), its prompt template
    (``workflow/resources/prompts/tagging/<prompt>.md``), its answer format (:data:`ANSWERS`), its calls'
    decoding ``params`` and the evidence length of a per-strategy answer."""

    name: str
    model: str
    prompt: str = _D["prompt"]
    answer: str = _D["answer"]
    params: dict = field(default_factory=dict)
    evidence_max_chars: int | None = schema_defaults("tagging")["evidence_max_chars"]
    answer_formats = ANSWERS

    @classmethod
    def from_config(cls, name: str, tagging: dict) -> "Tagger":
        """Tagger ``name`` of a validated config's ``tagging`` block."""
        return cls(name, **tagging["taggers"][name], evidence_max_chars=tagging["evidence_max_chars"])

    def requests(self, completions: pd.DataFrame, template: str, taxonomy: dict, version: str) -> list[Request]:
        """One request per completion (:func:`requests`), with the instructions filled from ``taxonomy``."""
        return requests(completions, self.model, system_prompt(template, taxonomy), version,
                        answer_schema(self.answer, taxonomy, self.evidence_max_chars), params=self.params)
