"""The paper's judge (``answer: verdict``): a JSON verdict per pair and shown order (HEART paper §4.1, §9.5-9.6).

The judge answers a JSON object checked against :func:`response_schema`: a rationale, a winner (no ties),
its strength 1-5 and a mark per HEART axis ("A+" ... "B+++++" or "none"). The answer is read as it is: the
engine parses it against the schema, and :func:`heart.judging.verdicts.verdict_table` orients it.
"""

from __future__ import annotations

import pandas as pd

from heart.judging.material import axis_keys, shown, system_prompt
from heart.judging.verdicts import axis_marks
from heart.llm.request import Request


def response_schema(rubric: dict, rationale_max_chars: int | None = None) -> dict:
    """JSON schema of a judge's answer (rationale first, so it is written before the verdict).

    ``rationale_max_chars`` bounds the rationale, so a grammar-constrained local model always reaches the
    verdict within its token budget.
    """
    mark = {"type": "string", "enum": axis_marks()}
    rationale = ({"type": "string"} if rationale_max_chars is None
                 else {"type": "string", "maxLength": rationale_max_chars})
    return {
        "type": "object",
        "properties": {
            "rationale": rationale,
            "winner": {"type": "string", "enum": ["A", "B"]},
            "strength": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
            "axes": {"type": "object", "properties": {k: mark for k in axis_keys(rubric)},
                     "required": axis_keys(rubric), "additionalProperties": False},
        },
        "required": ["rationale", "winner", "strength", "axes"],
        "additionalProperties": False,
    }


def verdict_requests(pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, judge_model: str, instructions: str,
                     version: str, schema: dict, both_orders: bool = True, params: dict | None = None,
                     context_turns: int | None = None) -> list[Request]:
    """One request per (pair, order); the request id is ``<pair_id>:<order>``."""
    return [Request(id=f"{pid}:{order}", model=judge_model, messages=material, schema=schema,
                    template_version=f"judge:{version}", params=params or None)
            for pid, order, material in shown(pairs, items, texts, instructions, both_orders, context_turns)]


# --- the kind's interface (heart.judging.kinds) -------------------------------------------------

def requests(judge, pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, template: str, rubric: dict,
             version: str, both_orders: bool = True) -> list[Request]:
    return verdict_requests(pairs, items, texts, judge.model, system_prompt(template, rubric), version,
                            response_schema(rubric, judge.rationale_max_chars), both_orders, judge.params,
                            judge.context_turns)


def answers(judge, pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True) -> dict[str, dict]:
    return results
