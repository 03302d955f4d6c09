"""The authors' released judging (``answer: release``): six categories and verdicts like ``A0493+++``, as the
public code of the HEART release reads them (Hippocratic-AI-Research/HEART, ``bradley-terry.py``).

The judge answers a JSON object: a rationale and, for each of :data:`CATEGORIES`, the identifier of the better
reply followed by plus signs. :func:`parse_verdict` reads a verdict string as the release does: an identifier
of letters, digits, ``.``, ``_`` or ``-`` at the start, then the plus signs (none: strength 1); an empty answer or
``Error`` is no verdict. The overall verdict is ``overall_eq`` (the release ranks by it); the other five
categories stay in the answer's raw text (they are not the HEART axes, so no axis is marked). The release's
soft-score fit is a ranker of the exploratory ablations (:mod:`heart.stats.ablations`).
Methods: ``docs/methods/ablations.md``.
"""

from __future__ import annotations

import re

import pandas as pd

from heart.judging.kinds.verdict import verdict_requests
from heart.judging.material import system_prompt
from heart.llm.request import Request

CATEGORIES = ("empathic_responsiveness", "emotional_handling_and_insight",
              "personalization_and_contextual_adaptation", "conversational_fluency_and_naturalness",
              "instruction_following_and_safety", "overall_eq")
OVERALL = "overall_eq"
_VERDICT = re.compile(r"([A-Za-z0-9._-]+)(\+*)")
#: our strength scale ends at 5; the release's soft score is the same for 5 and more plus signs
MAX_STRENGTH = 5


def parse_verdict(text) -> tuple[str | None, int]:
    """A release verdict string -> (winner identifier, plus signs; 1 when there are none); (None, 0) for an
    empty answer, ``Error`` or a string that does not start with an identifier."""
    if not isinstance(text, str) or not text.strip() or text.strip() == "Error":
        return None, 0
    found = _VERDICT.match(text.strip())
    if not found:
        return None, 0
    return found.group(1), len(found.group(2)) or 1


def response_schema(rationale_max_chars: int | None = None) -> dict:
    """JSON schema of the answer: a rationale, then each category's verdict (``A``/``B`` and 1-5 plus signs)."""
    rationale = ({"type": "string"} if rationale_max_chars is None
                 else {"type": "string", "maxLength": rationale_max_chars})
    verdict = {"type": "string", "pattern": r"^[AB]\+{1,5}$"}
    return {"type": "object",
            "properties": {"rationale": rationale,
                           "evaluation": {"type": "object", "properties": dict.fromkeys(CATEGORIES, verdict),
                                          "required": list(CATEGORIES), "additionalProperties": False}},
            "required": ["rationale", "evaluation"], "additionalProperties": False}


def read(answer: dict) -> tuple[dict | None, str | None]:
    """An answer's JSON (the engine's ``parsed``) as the verdict table's parsed answer, or why it has none."""
    evaluation = (answer or {}).get("evaluation") or {}
    winner, plus = parse_verdict(evaluation.get(OVERALL))
    if winner is None:
        return None, f"no {OVERALL} verdict could be read in {evaluation.get(OVERALL)!r}"
    if winner not in ("A", "B"):
        return None, f"{OVERALL} names {winner!r}, neither shown reply (A or B)"
    return {"winner": winner, "strength": min(plus, MAX_STRENGTH), "rationale": answer.get("rationale"),
            "axes": {}}, None


# --- the kind's interface (heart.judging.kinds) -------------------------------------------------

def requests(judge, pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, template: str, rubric: dict,
             version: str, both_orders: bool = True) -> list[Request]:
    return verdict_requests(pairs, items, texts, judge.model, system_prompt(template, rubric), version,
                            response_schema(judge.rationale_max_chars), both_orders, judge.params,
                            judge.context_turns)


def answers(judge, pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True) -> dict[str, dict]:
    out = {}
    for key, result in results.items():
        parsed, error = (None, result.get("parse_error")) if result.get("parsed") is None else read(result["parsed"])
        out[key] = {**result, "parsed": parsed, "parse_error": error}
    return out
