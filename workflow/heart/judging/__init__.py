"""Blinded pairwise judging with the HEART rubric (HEART paper §4.1, §9.1, §9.5-9.6).

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

Combining the two orders (:func:`combine_signed`), documented rule:

1. Only one order parsed: that verdict.
2. Both: s = s_AB + s_BA. If s != 0 the winner is sign(s) and the strength is
   ceil(|s| / 2) (both orders agree on a: the mean strength, rounded up; they
   disagree: the margin, halved, rounded up).
3. s == 0 (equal and opposite: a pure position effect): broken by the sum of the
   signed axis marks of both orders; if that is 0 too, the pair has no combined
   verdict (``winner`` null, status "inconsistent") and is left out of ratings.
   Ties are never invented.

The same rule combines each axis over the parsed orders ("none" counts as 0), except
that an axis with s == 0 is simply "no clear advantage" (0). A *flip* is a pair whose two orders name different
winners (overall, or per axis among orders that marked it).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from heart.common.config import load_resource
from heart.llm.request import SPEAKER, Request, json_messages
from heart.common.vocabulary import AXES

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


def combine_signed(values, tiebreak: int = 0) -> int | None:
    """The documented rule (module docstring) for one pair: signed verdicts -> one signed verdict."""
    vals = [int(v) for v in values if v is not None and not pd.isna(v)]
    if not vals:
        return None
    if len(vals) == 1:
        return vals[0]
    s = sum(vals)
    if s == 0:
        s = tiebreak
        if s == 0:
            return None
        return int(np.sign(s))  # broken by the axes: the smallest strength
    return int(np.sign(s)) * math.ceil(abs(s) / len(vals))


def combine_margins(margins, orders, none_below: float = 0.0) -> int | None:
    """A letter judge's orders combined by their margins (log P(A) - log P(B) as shown): oriented to the
    pair (an order "BA" margin negated) and averaged; the sign is the winner and the mean's size the
    strength (:func:`_strength`). A judge that prefers the first letter by the same margin in both orders
    cancels out, and what is left is the content signal. A mean below ``none_below`` in size: None."""
    oriented = [float(m) * (1 if o == "AB" else -1) for m, o in zip(margins, orders)]
    if not oriented:
        return None
    mean = sum(oriented) / len(oriented)
    if mean == 0 or abs(mean) < none_below:
        return None
    return int(np.sign(mean)) * _strength(mean)


def combine(verdicts: pd.DataFrame, pairs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """One row per (pair, judge): the combined verdict, per-axis marks and whether the orders flipped.

    A letter judge's orders (rows with a ``margin``) combine by their margins (:func:`combine_margins`);
    every other judge's by :func:`combine_signed` (module docstring)."""
    rows = []
    has_margins = "margin" in verdicts.columns
    for (pid, judge), g in verdicts.groupby(["pair_id", "judge"], sort=True):
        ok = g[g["parse_ok"]]
        by_margin = has_margins and len(ok) and ok["margin"].notna().all()
        axis_sum = int(sum(ok[f"axis_{k}"].fillna(0).sum() for k in axes))
        signed = (combine_margins(ok["margin"], ok["order"]) if by_margin
                  else combine_signed(ok["signed"].tolist(), tiebreak=axis_sum))
        row = {"pair_id": pid, "judge": judge, "n_orders": len(ok),
               "flipped": bool(len(ok) == 2 and np.sign(ok["signed"]).nunique() == 2) if len(ok) == 2 else None,
               "status": "ok" if signed is not None else ("unparsed" if ok.empty else "inconsistent"),
               "winner": None if signed is None else ("a" if signed > 0 else "b"),
               "strength": None if signed is None else abs(signed),
               "rationale": " | ".join(f"{o}: {t}" for o, t in zip(ok["order"], ok["rationale"])
                                       if isinstance(t, str)) or None}  # imported verdicts may have none
        for k in axes:
            marks = ok[f"axis_{k}"].dropna().astype(int).tolist()  # 0 = that order saw no clear edge
            if by_margin and ok[f"margin_{k}"].notna().all():
                row[f"axis_{k}"] = combine_margins(ok[f"margin_{k}"], ok["order"]) or 0
            else:
                row[f"axis_{k}"] = combine_signed(marks) or 0
            row[f"flipped_{k}"] = bool(len(marks) == 2 and marks[0] * marks[1] < 0)
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        out = pd.DataFrame(columns=["pair_id", "judge", "n_orders", "flipped", "status", "winner", "strength",
                                    "rationale",
                                    *(f"axis_{k}" for k in axes), *(f"flipped_{k}" for k in axes)])
    out["strength"] = out["strength"].astype("Int64")
    return pairs.merge(out, on="pair_id", how="inner")


def flip_rates(combined: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Per judge: share of pairs judged in both orders whose winner flipped, overall and per axis."""
    rows = []
    for judge, g in combined.groupby("judge", sort=True):
        both = g[g["n_orders"] == 2]
        rows.append({"judge": judge, "axis": "overall", "n_pairs": len(both),
                     "flip_rate": float(both["flipped"].astype(bool).mean()) if len(both) else None})
        for k in axes:
            rows.append({"judge": judge, "axis": k, "n_pairs": len(both),
                         "flip_rate": float(both[f"flipped_{k}"].mean()) if len(both) else None})
    return pd.DataFrame(rows, columns=["judge", "axis", "n_pairs", "flip_rate"])


JUDGMENT_COLUMNS = ["pair_id", "item_id", "conversation_id", "subset", "system_a", "contributor_a", "system_b",
                    "contributor_b", "kind", "judge", "judge_kind", "status", "winner", "strength", "preference",
                    "n_orders", "flipped", "axis_H", "axis_E", "axis_A", "axis_R", "axis_T", "rationale"]


def judgments(pairs: pd.DataFrame, combined: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """The statistics' input: combined LLM verdicts and human judgments, one schema."""
    llm = combined.assign(judge_kind="llm", preference=pd.NA)
    hum = pairs.merge(human, on="pair_id", how="inner").assign(
        judge_kind="human", status=lambda d: np.where(d["winner"].isna(), "tie", "ok"),
        n_orders=pd.NA, flipped=pd.NA)
    parts = [t.reindex(columns=JUDGMENT_COLUMNS) for t in (llm, hum) if not t.empty]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=JUDGMENT_COLUMNS)
    for col in ("strength", "preference", "n_orders", "axis_H", "axis_E", "axis_A", "axis_R", "axis_T"):
        out[col] = out[col].astype("Int64")
    out["flipped"] = out["flipped"].astype("boolean")
    return out.sort_values(["pair_id", "judge_kind", "judge"], ignore_index=True)


def source_row(judge: str, verdicts: pd.DataFrame, combined: pd.DataFrame, n_excluded: int) -> dict:
    """An LLM judge's line in results/judging/sources.parquet."""
    n = int(combined["status"].eq("ok").sum())
    note = (f"{n} pairs judged; {n_excluded} left out by family exclusion" if n
            else "no pair judged" + (f" ({n_excluded} left out by family exclusion)" if n_excluded else ""))
    return {"judge": judge, "judge_kind": "llm", "status": "present" if n else "absent", "n_pairs": n,
            "n_excluded_family": int(n_excluded), "n_unparsed": int((~verdicts["parse_ok"]).sum()),
            "n_inconsistent": int(combined["status"].eq("inconsistent").sum()), "note": note}


# --- judges read by their logprobs (answer: logprobs) -------------------------------------------
#
# A small local model cannot write a sound JSON verdict: SmolLM2-135M's sampled winner followed the A/B
# order in every pair. A judge with ``answer: logprobs`` is instead asked one question at a time -- the
# overall one, then one per HEART axis -- after the same blinded material, and answers with one token;
# what is read is the model's log-probability of "A" against "B" (``d`` = log P(A) - log P(B)), not a
# sampled letter. Per order and question:
#
# * the shown winner is the letter with the larger probability (``d`` > 0: A);
# * the strength is |d| in nats on a fixed scale (LETTER_STRENGTH_NATS: < 0.5 -> 1, < 1 -> 2, < 2 -> 3,
#   < 3 -> 4, else 5);
# * an axis whose |d| is below AXIS_NONE_NATS is marked "none" (no clear advantage).
#
# The verdict is then an ordinary parsed answer, combined over both orders by :func:`combine_signed`:
# a judge that always prefers the first letter by the same margin cancels out to "inconsistent". The
# material (system turn, one JSON user turn) is the verdict judge's; the question is a second user turn,
# so that consecutive questions share the model's evaluated prefix (llama.cpp reuses it).

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


def _strength(margin: float) -> int:
    return 1 + sum(abs(margin) >= t for t in LETTER_STRENGTH_NATS)


def letter_results(pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True,
                   asked=LETTER_QUESTIONS) -> dict[str, dict]:
    """The answers of a letter judge as verdict answers, one per ``<pair_id>:<order>`` (what
    :func:`verdict_table` reads): ``parsed`` built from the margins (module notes above), the margins
    themselves as ``text``; unparsed when the overall question's margin is missing. An axis not
    ``asked`` has no mark (null), which is not "none" (asked, no clear advantage)."""
    out = {}
    for p in pairs.itertuples():
        for order in ORDERS if both_orders else ORDERS[:1]:
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
                               else ("A" if m > 0 else "B") + "+" * _strength(m))
                parsed = {"rationale": f"log P(A) - log P(B) = {overall:+.2f} nats (overall)",
                          "winner": "A" if overall > 0 else "B", "strength": _strength(overall), "axes": axes}
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


def judge_requests(answer: str, pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, judge_model: str,
                   template: str, rubric: dict, version: str, both_orders: bool = True,
                   params: dict | None = None, rationale_max_chars: int | None = None,
                   axes: bool = True, context_turns: int | None = None) -> list[Request]:
    """A judge's requests from its prompt template, by its ``answer`` format ("verdict": :func:`requests`,
    "logprobs": :func:`letter_requests`, asking the axes' questions too when ``axes``): what rule
    judge_pairs sends and the call preview counts. ``context_turns``: :func:`messages`."""
    if answer == "logprobs":
        instructions, questions = letter_prompt(template, rubric)
        return letter_requests(pairs, items, texts, judge_model, instructions, questions, version, both_orders,
                               params, asked_questions(axes), context_turns)
    return requests(pairs, items, texts, judge_model, system_prompt(template, rubric), version,
                    response_schema(rubric, rationale_max_chars), both_orders, params, context_turns)


def judge_answers(answer: str, pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True,
                  axes: bool = True) -> dict[str, dict]:
    """:func:`judge_requests`' answers as one answer per ``<pair_id>:<order>`` (for :func:`verdict_table`)."""
    if answer == "logprobs":
        return letter_results(pairs, results, both_orders, asked_questions(axes))
    return results
