"""The LLM judge's blinded material and its verdicts, with the HEART rubric (HEART paper §4.1, §9.1, §9.5-9.6).

LLM judges see the dialogue and two replies under the neutral labels
"response_A" / "response_B" inside one JSON object (so quotes, tags or
instructions inside a reply stay data: they cannot close a delimiter or add a
message), never a system, model or contributor name. They answer a JSON object
checked against :func:`response_schema`: a winner (no ties), its strength 1-5,
a mark per HEART axis ("A+" ... "B+++++" or "none") and a rationale.

Orientation. A pair stores ``system_a`` / ``system_b`` (its randomized order);
order "AB" shows system_a as response A, order "BA" swaps them. Every verdict
is stored *oriented to the pair*: ``signed`` > 0 means system_a won, with
``|signed|`` the strength; axis marks likewise (0 = no clear advantage).
The two orders are combined in :mod:`heart.judging.combine`; a judge read by its
log-probabilities instead of a sampled verdict is :mod:`heart.judging.letter_judge`.
"""

from __future__ import annotations

import pandas as pd

from heart.common.config import load_resource
from heart.common.vocabulary import AXES
from heart.llm.request import SPEAKER, Request, json_messages


ORDERS = ("AB", "BA")
VERDICT_COLUMNS = ["pair_id", "judge", "order", "shown_a", "parse_ok", "parse_error", "winner_shown", "signed",
                   "rationale", "raw_text", "cache_key", "from_cache", "neutralised_tokens", "latency_s", "cost_usd"]
#: a letter judge's margins (log P(A) - log P(B) as shown), overall and per axis; null for other judges
MARGIN_COLUMNS = ["margin", *(f"margin_{k}" for k in AXES)]


# --- the rubric and the prompt ----------------------------------------------------------------

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


def axis_marks() -> list[str]:
    return ["none"] + [f"{side}{'+' * k}" for side in "AB" for k in range(1, 6)]


def response_schema(rubric: dict, rationale_max_chars: int | None = None) -> dict:
    """JSON schema of a judge's answer (rationale first, so it is written before the verdict).

    ``rationale_max_chars`` bounds the rationale, so a grammar-constrained local model always reaches the
    verdict within its token budget.
    """
    mark = {"type": "string", "enum": axis_marks()}
    rationale = {"type": "string"} if rationale_max_chars is None else {"type": "string", "maxLength": rationale_max_chars}
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


def messages(instructions: str, history, response_a: str, response_b: str, context_turns: int | None = None
             ) -> tuple:
    """The blinded judge messages: instructions, then one JSON object holding all the material.

    ``context_turns`` keeps the last N turns of the dialogue (a small local model's prompt cost grows with
    every token); the material then says how many earlier turns were left out. None: the whole dialogue.
    """
    turns = list(history)
    omitted = max(0, len(turns) - context_turns) if context_turns else 0
    material = {"earlier_turns_omitted": omitted} if omitted else {}
    material.update({
        "dialogue": [{"speaker": SPEAKER.get(t["role"], t["role"]), "text": t["text"]} for t in turns[omitted:]],
        "response_A": response_a,
        "response_B": response_b,
    })
    return json_messages(instructions, material, indent=1)


# --- which pairs a judge sees, and its requests ------------------------------------------------

def eligible(pairs: pd.DataFrame, judge_family: str, families: dict[str, str], exclude_own: bool
             ) -> pd.Series:
    """Mask of pairs a judge may judge: with ``exclude_own``, none holding its family's output."""
    if not exclude_own:
        return pd.Series(True, index=pairs.index)
    fam_a = pairs["system_a"].map(families)
    fam_b = pairs["system_b"].map(families)
    return (fam_a != judge_family) & (fam_b != judge_family)


def _key(system, contributor):
    return system, (None if contributor is None or pd.isna(contributor) else contributor)


def shown(pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, instructions: str, both_orders: bool = True,
          context_turns: int | None = None):
    """(pair id, order, the blinded messages) for every pair in each order it is shown in."""
    history = items.set_index("item_id")["history"]
    for p in pairs.itertuples():
        a = texts[(p.item_id, *_key(p.system_a, p.contributor_a))]
        b = texts[(p.item_id, *_key(p.system_b, p.contributor_b))]
        for order in ORDERS if both_orders else ORDERS[:1]:
            first, second = (a, b) if order == "AB" else (b, a)
            yield p.pair_id, order, messages(instructions, history[p.item_id], first, second, context_turns)


def requests(pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, judge_model: str, instructions: str,
             version: str, schema: dict, both_orders: bool = True, params: dict | None = None,
             context_turns: int | None = None) -> list[Request]:
    """One request per (pair, order); the request id is ``<pair_id>:<order>``."""
    return [Request(id=f"{pid}:{order}", model=judge_model, messages=material, schema=schema,
                    template_version=f"judge:{version}", params=params or None)
            for pid, order, material in shown(pairs, items, texts, instructions, both_orders, context_turns)]


# --- verdicts -------------------------------------------------------------------------------

def parse_mark(mark: str | None) -> int | None:
    """'A+++' -> +3, 'B+' -> -1, 'none' -> 0 (in the shown order: positive = response A); None (an axis a
    letter judge was not asked about) -> None."""
    if mark is None:
        return None
    if mark == "none":
        return 0
    return (1 if mark[0] == "A" else -1) * mark.count("+")


def orient(parsed: dict, order: str, axes: list[str]) -> dict:
    """A parsed answer as signed values oriented to the pair (positive = system_a)."""
    flip = 1 if order == "AB" else -1
    shown = parsed["strength"] * (1 if parsed["winner"] == "A" else -1)
    out = {"signed": flip * shown}
    for k in axes:
        mark = parse_mark(parsed["axes"][k])
        out[f"axis_{k}"] = None if mark is None else flip * mark
    return out


def verdict_table(pairs: pd.DataFrame, judge: str, results: dict[str, dict], axes: list[str],
                  both_orders: bool = True) -> pd.DataFrame:
    """One row per (pair, order): the answer oriented to the pair (``judgments_llm.schema.yaml``)."""
    rows = []
    for p in pairs.itertuples():
        for order in ORDERS if both_orders else ORDERS[:1]:
            r = results[f"{p.pair_id}:{order}"]
            ok = r.get("parsed") is not None
            row = {"pair_id": p.pair_id, "judge": judge, "order": order,
                   "shown_a": p.system_a if order == "AB" else p.system_b,
                   "parse_ok": ok, "parse_error": r.get("parse_error"),
                   "winner_shown": r["parsed"]["winner"] if ok else None,
                   "signed": None, "rationale": r["parsed"]["rationale"] if ok else None,
                   "raw_text": r["text"], "cache_key": r["cache_key"], "from_cache": bool(r["from_cache"]),
                   "neutralised_tokens": r.get("neutralised_tokens", 0),
                   "latency_s": r.get("latency_s"), "cost_usd": r.get("cost")}
            row.update({f"axis_{k}": None for k in axes})
            if ok:
                row.update(orient(r["parsed"], order, axes))
            margins = r.get("margins") or {}  # a letter judge's log P(A) - log P(B), as shown
            row["margin"] = margins.get("overall")
            row.update({f"margin_{k}": margins.get(k) for k in axes})
            rows.append(row)
    margin_cols = MARGIN_COLUMNS
    table = pd.DataFrame(rows, columns=[*VERDICT_COLUMNS, *(f"axis_{k}" for k in axes), *margin_cols])
    for col in ["signed", *(f"axis_{k}" for k in axes)]:
        table[col] = table[col].astype("Int64")
    for col in margin_cols:
        table[col] = table[col].astype("float64")
    return table
