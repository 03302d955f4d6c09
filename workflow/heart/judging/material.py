"""What every judge kind shares before it asks: the rubric, which pairs a judge may see, and the blinded
material of each pair in each shown order (HEART paper §4.1, §9.1, §9.5).

A judge sees the dialogue and two replies under the neutral labels "response_A" / "response_B" inside one
JSON object (so quotes, tags or instructions inside a reply stay data: they cannot close a delimiter or add
a message), never a system, model or contributor name. Order "AB" shows the pair's ``system_a`` as response
A, order "BA" swaps them. How a kind asks and reads its answers: :mod:`heart.judging.kinds`; the verdict
table every kind's answers become: :mod:`heart.judging.verdicts`.
"""

from __future__ import annotations

import pandas as pd

from heart.common.config import load_resource
from heart.llm.request import SPEAKER, Encoded, indented_json, json_messages

ORDERS = ("AB", "BA")
JUDGE_INDENT = 1  # part of every judge request, so of its cache key


# --- the rubric and the instructions ------------------------------------------------------------

def load_rubric(path) -> dict:
    """The rubric file (``workflow/resources/rubric/heart.yaml``), checked against
    ``workflow/schemas/rubric.schema.yaml`` (the five HEART axes in order, each with its texts)."""
    return load_resource(path, "rubric")


def axis_keys(rubric: dict) -> list[str]:
    return [a["key"] for a in rubric["axes"]]


def system_prompt(template: str, rubric: dict) -> str:
    """The judge's instructions: the template with the rubric (``{rubric}``: each axis with its high and low
    examples; ``{rubric_brief}``: each axis's name and description only, for a small local model) and the
    checklist filled in."""
    rubric_text = "\n".join(
        f"- {a['key']} — {a['name']}: {a['description']}\n  High: {a['high']}\n  Low: {a['low']}"
        for a in rubric["axes"])
    brief = "\n".join(f"- {a['name']}: {a['description']}" for a in rubric["axes"])
    checklist = "\n".join(f"- {c}" for c in rubric.get("checklist", []))
    return (template.replace("{rubric}", rubric_text).replace("{rubric_brief}", brief)
            .replace("{checklist}", checklist))


# --- which pairs a judge sees, and how ----------------------------------------------------------

def eligible(pairs: pd.DataFrame, judge_family: str, families: dict[str, str], exclude_own: bool
             ) -> pd.Series:
    """Mask of pairs a judge may judge: with ``exclude_own``, none holding its family's output."""
    if not exclude_own:
        return pd.Series(True, index=pairs.index)
    fam_a = pairs["system_a"].map(families)
    fam_b = pairs["system_b"].map(families)
    return (fam_a != judge_family) & (fam_b != judge_family)


def messages(instructions: str, history, response_a: str, response_b: str, context_turns: int | None = None,
             encoded: Encoded | None = None) -> tuple:
    """The blinded judge messages: instructions, then one JSON object holding all the material.

    ``context_turns`` keeps the last N turns of the dialogue (a small local model's prompt cost grows with
    every token); the material then says how many earlier turns were left out. None: the whole dialogue.
    ``encoded``: the dialogue as :func:`encoded_dialogue` wrote it for this ``history`` and ``context_turns``
    (the same text, encoded once for all the pairs of an item).
    """
    turns = list(history)
    omitted = omitted_turns(turns, context_turns)
    material = {"earlier_turns_omitted": omitted} if omitted else {}
    material.update({
        "dialogue": encoded if encoded is not None else dialogue(turns[omitted:]),
        "response_A": response_a,
        "response_B": response_b,
    })
    return json_messages(instructions, material, indent=JUDGE_INDENT)


def omitted_turns(turns: list, context_turns: int | None) -> int:
    """How many earlier turns a judge with ``context_turns`` does not see (None: it sees them all)."""
    return max(0, len(turns) - context_turns) if context_turns else 0


def dialogue(turns) -> list[dict]:
    """The turns as the judge sees them: speaker and text."""
    return [{"speaker": SPEAKER.get(t["role"], t["role"]), "text": t["text"]} for t in turns]


def encoded_dialogue(history, context_turns: int | None = None) -> Encoded:
    """The material's dialogue of :func:`messages`, written once (JSON at its place in the material)."""
    turns = list(history)
    omitted = omitted_turns(turns, context_turns)
    return Encoded(indented_json(dialogue(turns[omitted:]), JUDGE_INDENT, 1))


def reply_key(system, contributor) -> tuple:
    """A reply's key in :func:`heart.judging.pairs.completion_text`'s texts (after the item id): a missing
    contributor is None."""
    return system, (None if contributor is None or pd.isna(contributor) else contributor)


def sides(pair) -> tuple[tuple, tuple]:
    """The two replies a pair shows, as (item id, system, contributor): system_a's, then system_b's."""
    return ((pair.item_id, *reply_key(pair.system_a, pair.contributor_a)),
            (pair.item_id, *reply_key(pair.system_b, pair.contributor_b)))


def orders(both_orders: bool) -> tuple[str, ...]:
    """The shown orders a judge asks in: both, or "AB" only."""
    return ORDERS if both_orders else ORDERS[:1]


def shown(pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, instructions: str, both_orders: bool = True,
          context_turns: int | None = None):
    """(pair id, order, the blinded messages) for every pair in each order it is shown in."""
    history = dict(zip(items["item_id"], items["history"]))  # a dict: a Series lookup per pair cost seconds
    encoded: dict = {}  # item id -> its dialogue, encoded once for all its pairs (~140 per item in the paper)
    for p in pairs.itertuples():
        a, b = (texts[side] for side in sides(p))
        if p.item_id not in encoded:
            encoded[p.item_id] = encoded_dialogue(history[p.item_id], context_turns)
        for order in orders(both_orders):
            first, second = (a, b) if order == "AB" else (b, a)
            yield p.pair_id, order, messages(instructions, history[p.item_id], first, second, context_turns,
                                             encoded[p.item_id])
