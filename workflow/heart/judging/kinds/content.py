"""A judge that reads content and has no position to prefer (``answer: content``): each reply scored on its own
by its fit to the dialogue, log P(reply | dialogue) - log P(reply) per token under a local model, computed
in-process and cached. What it measures, what it does not, and how it was chosen:
``docs/methods/content-judge.md``.
"""

from __future__ import annotations

import functools
import json
from collections import Counter

import pandas as pd

from heart.common.vocabulary import AXES
from heart.completions.generate import chat_messages
from heart.judging.material import orders, sides
from heart.llm import likelihood
from heart.llm.request import Request

#: bump when what is scored changes (the messages already carry the prompt text and the dialogue)
CONTENT_VERSION = "content-fit-1"
#: how a reply's per-token PMIs become its score: "mean" (chosen, ``docs/methods/content-judge.md``) or "sum"
NORMALISATION = "mean"
#: fit difference (nats per token) -> strength: < 0.1 -> 1, < 0.25 -> 2, < 0.5 -> 3, < 1 -> 4, else 5
CONTENT_STRENGTH_NATS = (0.1, 0.25, 0.5, 1.0)
CONTEXTS = ("given", "alone")


def side_id(item_id: str, system: str, contributor, context: str) -> str:
    """The request id of one reply's likelihood in one context ("given" the dialogue, or "alone")."""
    return f"{item_id}|{system}|{'' if contributor is None else contributor}|{context}"


def messages(instructions: str, history, reply: str, context_turns: int | None = None) -> dict[str, tuple]:
    """The two scorings of ``reply``, as chat messages whose last one (the supporter's turn) is scored:
    "given" the dialogue (its last ``context_turns`` turns; None: all), and "alone" (the system turn only)."""
    turns = list(history)
    shown = turns[-context_turns:] if context_turns else turns
    turn = {"role": "assistant", "content": reply}
    return {"given": (*chat_messages(instructions, shown), turn),
            "alone": ({"role": "system", "content": instructions}, turn)}


def replies(pairs: pd.DataFrame):
    """Every (item id, system, contributor) that ``pairs`` show, in order, once."""
    seen = {}
    for p in pairs.itertuples():
        for side in sides(p):
            seen.setdefault(side, None)
    return list(seen)


def fit_requests(pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, judge_model: str, instructions: str,
                 context_turns: int | None = None) -> list[Request]:
    """Two likelihood requests per reply that ``pairs`` show (:func:`messages`), ids :func:`side_id`.

    ``texts``: :func:`heart.judging.pairs.completion_text`. The rubric plays no part; the template version
    is CONTENT_VERSION, so a rubric edit reuses every likelihood."""
    history = items.set_index("item_id")["history"]
    out = []
    for item, system, contributor in replies(pairs):
        reply = texts[(item, system, contributor)]
        for context, msgs in messages(instructions, history[item], reply, context_turns).items():
            out.append(likelihood.request(side_id(item, system, contributor, context), judge_model, msgs,
                                          CONTENT_VERSION))
    return out


def fit(given: list[float], alone: list[float], normalisation: str = NORMALISATION) -> float:
    """A reply's fit from its tokens' log-probabilities after the dialogue and alone (the same tokens):
    the per-token PMIs' mean (or sum)."""
    if len(given) != len(alone) or not given:
        raise ValueError(f"the two scorings of a reply hold {len(given)} and {len(alone)} tokens")
    pmi = sum(g - a for g, a in zip(given, alone))
    if normalisation == "sum":
        return pmi
    if normalisation == "mean":
        return pmi / len(given)
    raise ValueError(f"normalisation {normalisation!r}: 'mean' or 'sum'")


def _logprobs(entry: dict) -> list[float]:
    return [float(t["logprob"]) for t in entry["logprobs"]]


def strength(difference: float) -> int:
    """A fit difference (nats per token) as a strength 1-5 on CONTENT_STRENGTH_NATS."""
    return 1 + sum(abs(difference) >= t for t in CONTENT_STRENGTH_NATS)


def verdict(score_a: float, score_b: float) -> tuple[dict | None, str | None]:
    """(parsed answer, parse error) for shown replies with fits ``score_a``, ``score_b``: the higher fit
    wins, strength from the difference, every HEART axis unmarked (None: not judged)."""
    if score_a == score_b:
        return None, f"both replies fit the dialogue equally ({score_a:+.4f} nats per token): no verdict"
    diff = score_a - score_b
    return {"rationale": f"fit to the dialogue ({NORMALISATION} PMI per token): A {score_a:+.3f}, "
                         f"B {score_b:+.3f} nats; not the HEART rubric",
            "winner": "A" if diff > 0 else "B", "strength": strength(diff),
            "axes": {k: None for k in AXES}}, None


def fit_answers(pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True) -> dict[str, dict]:
    """The likelihoods of :func:`requests` as verdict answers, one per ``<pair_id>:<order>`` (what
    :func:`heart.judging.verdicts.verdict_table` reads): both orders the same verdict
    (``docs/methods/content-judge.md``); the
    fits as ``text``, no margins (so :func:`heart.judging.combine.combine` combines the equal signed
    verdicts, unchanged). A reply's scorings serve every row that shows it, so each row's ``latency_s`` is
    its share: a scoring's time divided among the rows that read it (not counted once per row)."""
    asked = orders(both_orders)
    shown = [sides(p) for p in pairs.itertuples()]
    uses = Counter(side for both in shown for side in both)
    out = {}
    for p, (a, b) in zip(pairs.itertuples(), shown):
        got = {(s, c): results[side_id(*s, c)] for s in (a, b) for c in CONTEXTS}
        score = {s: fit(_logprobs(got[(s, "given")]), _logprobs(got[(s, "alone")])) for s in (a, b)}
        tokens = {s: len(got[(s, "given")]["logprobs"]) for s in (a, b)}
        latency = sum((r.get("latency_s") or 0) / (uses[s] * len(asked)) for (s, _), r in got.items())
        for order in asked:
            first, second = (a, b) if order == "AB" else (b, a)
            parsed, error = verdict(score[first], score[second])
            out[f"{p.pair_id}:{order}"] = {
                "parsed": parsed, "parse_error": error,
                "text": json.dumps({"fit_A": round(score[first], 6), "fit_B": round(score[second], 6),
                                    "tokens_A": tokens[first], "tokens_B": tokens[second],
                                    "normalisation": NORMALISATION}),
                "cache_key": got[(first, "given")]["cache_key"],
                "from_cache": all(r["from_cache"] for r in got.values()),
                "neutralised_tokens": sum(r.get("neutralised_tokens", 0) for r in got.values()),
                "latency_s": latency, "cost": None}
    return out


# --- the kind's interface (heart.judging.kinds) -------------------------------------------------

def requests(judge, pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, template: str, rubric: dict,
             version: str, both_orders: bool = True) -> list[Request]:
    """:func:`fit_requests` with the judge's prompt file as the system turn (the rubric plays no part)."""
    return fit_requests(pairs, items, texts, judge.model, template, judge.context_turns)


def answers(judge, pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True) -> dict[str, dict]:
    return fit_answers(pairs, results, both_orders)


def run(judge, engine, requests: list[Request], desc: str) -> dict[str, dict]:
    """The likelihoods computed in-process by the judge's local model (:func:`heart.llm.likelihood.run`, with
    the engine's specs and cache), from the cache first."""
    return likelihood.run(engine.specs, requests, engine.cache, desc=desc,
                          scorer=functools.partial(likelihood.LocalScorer, threads=engine.threads))
