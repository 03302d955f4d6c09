"""A judge read by its log-probabilities (``answer: logprobs``), not by a sampled verdict.

A small local model cannot write a sound JSON verdict: SmolLM2-135M's sampled winner followed the A/B
order in every pair. A judge with ``answer: logprobs`` is instead asked one question at a time -- the
overall one, then one per HEART axis -- after the same blinded material, and answers with one token;
what is read is the model's log-probability of "A" against "B" (``d`` = log P(A) - log P(B)), not a
sampled letter. Per order and question:

* the shown winner is the letter with the larger probability (``d`` > 0: A);
* the strength is |d| in nats on a fixed scale (LETTER_STRENGTH_NATS: < 0.5 -> 1, < 1 -> 2, < 2 -> 3,
  < 3 -> 4, else 5);
* an axis whose |d| is below AXIS_NONE_NATS is marked "none" (no clear advantage).

The verdict is then an ordinary parsed answer, combined over both orders by
:func:`heart.judging.combine.combine_signed`: a judge that always prefers the first letter by the same
margin cancels out to "inconsistent". The material (system turn, one JSON user turn) is the verdict
judge's (:mod:`heart.judging.material`); the question is a second user turn, so that consecutive
questions share the model's evaluated prefix (llama.cpp reuses it).
"""

from __future__ import annotations

import json

import pandas as pd

from heart.common.vocabulary import AXES
from heart.judging.material import orders, shown, system_prompt
from heart.llm.request import Request


LETTER_QUESTIONS = ("overall", *AXES)
LETTER_STRENGTH_NATS = (0.5, 1.0, 2.0, 3.0)
AXIS_NONE_NATS = 0.25
TOP_LOGPROBS = 20


def letter_prompt(template: str, rubric: dict) -> tuple[str, dict[str, str]]:
    """A letter judge's prompt file -> (instructions, question per LETTER_QUESTIONS entry).

    The file holds the instructions (``{rubric}`` / ``{checklist}`` filled in as for the verdict judge),
    then a line ``<!-- questions -->``, then ``overall: ...`` and ``axis: ...`` lines; the axis line's
    ``{name}`` and ``{description}`` are filled from each rubric axis.
    """
    head, sep, tail = template.partition("<!-- questions -->")
    if not sep:
        raise ValueError("a logprobs judge prompt needs a '<!-- questions -->' line followed by "
                         "'overall: ...' and 'axis: ...' lines")
    lines = dict(line.split(":", 1) for line in tail.strip().splitlines() if ":" in line)
    if {"overall", "axis"} - lines.keys():
        raise ValueError("a logprobs judge prompt's questions need an 'overall:' and an 'axis:' line")
    questions = {"overall": lines["overall"].strip()}
    for a in rubric["axes"]:
        questions[a["key"]] = lines["axis"].strip().format(name=a["name"], description=a["description"])
    return system_prompt(head.strip(), rubric), questions


def letter_requests(pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, judge_model: str,
                    instructions: str, questions: dict[str, str], version: str, both_orders: bool = True,
                    params: dict | None = None, asked=LETTER_QUESTIONS, context_turns: int | None = None
                    ) -> list[Request]:
    """One request per (pair, order, question in ``asked``); ids ``<pair_id>:<order>:<question>``. Each
    asks for one token and its TOP_LOGPROBS most likely alternatives, non-streamed."""
    call = {**(params or {}), "max_tokens": 1, "logprobs": True, "top_logprobs": TOP_LOGPROBS}
    return [Request(id=f"{pid}:{order}:{q}", model=judge_model,
                    messages=(*material, {"role": "user", "content": questions[q]}),
                    template_version=f"judge-letter:{version}", params=call)
            for pid, order, material in shown(pairs, items, texts, instructions, both_orders, context_turns)
            for q in asked]


def letter_margin(entry: dict) -> float | None:
    """log P("A") - log P("B") of an answer's first token (its top alternatives, surrounding space
    ignored); None when neither letter is among them. A letter missing from the alternatives gets the
    least listed log-probability (an upper bound of its own)."""
    tokens = entry.get("logprobs") or []
    if not tokens:
        return None
    found: dict[str, float] = {}
    for token, lp in tokens[0]["top"]:
        key = (token or "").strip()
        if key in ("A", "B") and lp is not None and key not in found:
            found[key] = float(lp)
    if not found:
        return None
    floor = min(float(lp) for _, lp in tokens[0]["top"] if lp is not None)
    return found.get("A", floor) - found.get("B", floor)


def margin_strength(margin: float) -> int:
    return 1 + sum(abs(margin) >= t for t in LETTER_STRENGTH_NATS)


def letter_results(pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True,
                   asked=LETTER_QUESTIONS) -> dict[str, dict]:
    """The answers of a letter judge as verdict answers, one per ``<pair_id>:<order>`` (what
    :func:`verdict_table` reads): ``parsed`` built from the margins (module notes above), the margins
    themselves as ``text``; unparsed when the overall question's margin is missing. An axis not
    ``asked`` has no mark (null), which is not "none" (asked, no clear advantage)."""
    out = {}
    for p in pairs.itertuples():
        for order in orders(both_orders):
            got = {q: results[f"{p.pair_id}:{order}:{q}"] for q in asked}
            margins = {q: letter_margin(r) for q, r in got.items()}
            overall = margins["overall"]
            parsed, error = None, None
            if overall is None:
                error = "neither 'A' nor 'B' among the overall answer's most likely tokens"
            else:
                axes = {}
                for q in LETTER_QUESTIONS[1:]:
                    m = margins.get(q)
                    axes[q] = (None if q not in asked else "none" if m is None or abs(m) < AXIS_NONE_NATS
                               else ("A" if m > 0 else "B") + "+" * margin_strength(m))
                parsed = {"rationale": f"log P(A) - log P(B) = {overall:+.2f} nats (overall)",
                          "winner": "A" if overall > 0 else "B", "strength": margin_strength(overall), "axes": axes}
            lead = got["overall"]
            costs = [r.get("cost") for r in got.values()]
            out[f"{p.pair_id}:{order}"] = {
                "parsed": parsed, "parse_error": error, "margins": margins if parsed is not None else {},
                "text": json.dumps({q: None if m is None else round(m, 4) for q, m in margins.items()}),
                "cache_key": lead["cache_key"], "from_cache": all(r["from_cache"] for r in got.values()),
                "neutralised_tokens": sum(r.get("neutralised_tokens", 0) for r in got.values()),
                "latency_s": sum(r.get("latency_s") or 0 for r in got.values()),
                "cost": None if any(c is None for c in costs) else sum(costs)}
    return out


def asked_questions(axes: bool) -> tuple[str, ...]:
    """A letter judge's questions: the overall one, and the axes' when it marks axes."""
    return LETTER_QUESTIONS if axes else LETTER_QUESTIONS[:1]


# --- the kind's interface (heart.judging.kinds) -------------------------------------------------

def requests(judge, pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, template: str, rubric: dict,
             version: str, both_orders: bool = True) -> list[Request]:
    """The overall question per (pair, order), and each axis's when the judge marks ``axes``."""
    instructions, questions = letter_prompt(template, rubric)
    return letter_requests(pairs, items, texts, judge.model, instructions, questions, version, both_orders,
                           judge.params, asked_questions(judge.axes), judge.context_turns)


def answers(judge, pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True) -> dict[str, dict]:
    return letter_results(pairs, results, both_orders, asked_questions(judge.axes))
