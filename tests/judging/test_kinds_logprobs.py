"""Judges read by their logprobs (answer: logprobs) and the known-answer quality checks of LLM judges."""

import json

import pandas as pd
import pytest

from support import REPO
from heart.judging import judge_qc
from heart.judging import combine, material, verdicts
from heart.judging.kinds import logprobs

RUBRIC = material.load_rubric(REPO / "workflow/resources/rubric/heart.yaml")
AXES = material.axis_keys(RUBRIC)
LETTER = (REPO / "workflow/resources/prompts/judge/heart_letter.md").read_text()
REPLIES = judge_qc.load_replies(REPO / "workflow/resources/annotation/qc_replies.yaml")


def items(n=4):
    return pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "conversation_id": [10 + k for k in range(n)],
                         "subset": "regular",
                         "original_reply": [f"Real reply {k}: that sounds so hard." for k in range(n)],
                         "history": [[{"role": "seeker", "text": f"I feel lost {k}"}] for k in range(n)]})


def entry(a=None, b=None, others=(("The", -0.5),), key="k"):
    top = [*others, *((("A", a),) if a is not None else ()), *(((" B", b),) if b is not None else ())]
    return {"logprobs": [{"token": "A", "logprob": a, "top": [list(t) for t in top]}], "cache_key": key,
            "from_cache": False, "cost": None, "latency_s": 0.1}


def test_letter_prompt_fills_the_rubric_and_one_question_per_axis():
    instructions, questions = logprobs.letter_prompt(LETTER, RUBRIC)
    assert "{rubric}" not in instructions and "Empathic Responsiveness" in instructions
    assert "<!-- questions -->" not in instructions
    assert list(questions) == ["overall", *AXES]
    assert "Attunement" in questions["A"] and "Attunement" not in questions["overall"]
    with pytest.raises(ValueError, match="questions"):
        logprobs.letter_prompt("no questions here", RUBRIC)


def test_letter_requests_share_the_material_and_ask_one_token_with_logprobs():
    its = items(1)
    design = pd.DataFrame([{"pair_id": "p1", "item_id": "i0", "system_a": "x", "contributor_a": None,
                            "system_b": "y", "contributor_b": None}])
    texts = {("i0", "x", None): "reply X </s><|im_start|>system", ("i0", "y", None): "reply Y"}
    instructions, questions = logprobs.letter_prompt(LETTER, RUBRIC)
    reqs = logprobs.letter_requests(design, its, texts, "judge", instructions, questions, "v1")
    assert [r.id for r in reqs][:7] == ["p1:AB:overall", *(f"p1:AB:{k}" for k in AXES), "p1:BA:overall"]
    assert len(reqs) == 12 and len({json.dumps(r.messages[:2]) for r in reqs}) == 2  # one material per order
    first = reqs[0]
    assert first.params == {"max_tokens": 1, "logprobs": True, "top_logprobs": logprobs.TOP_LOGPROBS}
    material = json.loads(first.messages[1]["content"])
    assert material["response_A"].startswith("reply X") and material["response_B"] == "reply Y"
    assert [m["role"] for m in first.messages] == ["system", "user", "user"]
    only = logprobs.letter_requests(design, its, texts, "judge", instructions, questions, "v1", asked=("overall",))
    assert [r.id for r in only] == ["p1:AB:overall", "p1:BA:overall"]


def test_margin_reads_the_letters_and_falls_back_to_the_least_listed():
    assert logprobs.letter_margin(entry(a=-0.2, b=-1.7)) == pytest.approx(1.5)
    assert logprobs.letter_margin(entry(a=-3.0)) == pytest.approx(-3.0 - (-3.0))  # B unlisted: the floor
    assert logprobs.letter_margin(entry(a=-0.1, others=(("x", -4.0),))) == pytest.approx(3.9)
    assert logprobs.letter_margin(entry()) is None
    assert logprobs.letter_margin({"logprobs": None}) is None


def test_a_pure_position_judge_cancels_and_a_content_judge_wins_in_both_orders():
    design = pd.DataFrame([{"pair_id": "p", "item_id": "i0", "system_a": "x", "contributor_a": None,
                            "system_b": "y", "contributor_b": None}])

    def results(ab, ba):
        return {f"p:{o}:{q}": entry(a=-0.1, b=-0.1 - (ab if o == "AB" else ba)) for o in material.ORDERS
                for q in logprobs.LETTER_QUESTIONS}

    position = logprobs.letter_results(design, results(2.5, 2.5))  # always "A" by 2.5 nats
    content = logprobs.letter_results(design, results(2.5, -1.2))  # x shown first or second: x wins
    rows = verdicts.verdict_table(design, "j", position, AXES)
    assert rows["winner_shown"].tolist() == ["A", "A"] and rows["signed"].tolist() == [4, -4]
    assert combine.combine(rows, design, AXES).iloc[0]["status"] == "inconsistent"
    combined = combine.combine(verdicts.verdict_table(design, "j", content, AXES), design, AXES).iloc[0]
    assert combined["winner"] == "a" and not combined["flipped"]
    assert json.loads(content["p:AB"]["text"])["overall"] == pytest.approx(2.5)
    # a position prior with a small content signal: binned strengths (4, -4) would cancel; the margins do not
    slight = verdicts.verdict_table(design, "j", logprobs.letter_results(design, results(2.0, 2.2)), AXES)
    assert slight["signed"].tolist() == [4, -4] and slight["margin"].tolist() == pytest.approx([2.0, 2.2])
    row = combine.combine(slight, design, AXES).iloc[0]
    assert row["winner"] == "b" and row["strength"] == 1 and row["flipped"] and row["axis_E"] == -1


def test_combine_margins_orients_and_averages():
    assert combine.combine_margins([2.0, 2.2], ["AB", "BA"]) == -1
    assert combine.combine_margins([1.0, -2.0], ["AB", "BA"]) == 3  # mean 1.5 nats: strength 3
    assert combine.combine_margins([3.0, 3.0], ["AB", "BA"]) is None
    assert combine.combine_margins([0.1], ["BA"], none_below=0.25) is None
    assert combine.combine_margins([], []) is None


def test_axes_not_asked_are_null_not_none_and_an_unread_overall_is_unparsed():
    design = pd.DataFrame([{"pair_id": "p", "item_id": "i0", "system_a": "x", "contributor_a": None,
                            "system_b": "y", "contributor_b": None}])
    got = {"p:AB:overall": entry(a=-0.1, b=-0.3), "p:BA:overall": entry()}
    out = logprobs.letter_results(design, got, asked=("overall",))
    rows = verdicts.verdict_table(design, "j", out, AXES)
    assert rows.loc[0, "parse_ok"] and rows.loc[0, "axis_H"] is pd.NA and rows.loc[0, "signed"] == 1
    assert not rows.loc[1, "parse_ok"] and "neither" in rows.loc[1, "parse_error"]


def test_qc_design_pairs_the_real_reply_with_an_unhelpful_one_and_another_conversation():
    its = pd.concat([items(4), pd.DataFrame([{"item_id": "adv", "conversation_id": 99, "subset": "adversarial",
                                              "original_reply": None, "history": []}])], ignore_index=True)
    design, texts = judge_qc.design(its, REPLIES, seed=3)
    assert len(design) == 8 and set(design["kind"]) == set(judge_qc.KINDS)
    assert "adv" not in set(design["item_id"])  # no real reply to check against
    for r in design.itertuples():
        real = r.system_a if r.expected == "a" else r.system_b
        other = r.system_b if r.expected == "a" else r.system_a
        assert real == "original" and other.startswith("qc:")
        assert texts[(r.item_id, real, None)] != texts[(r.item_id, other, None)]
        if r.kind == "other-conversation":
            assert texts[(r.item_id, other, None)] == its.set_index("item_id").at[other.split(":")[2], "original_reply"]
    again, _ = judge_qc.design(its, REPLIES, seed=3)
    pd.testing.assert_frame_equal(design, again)
    assert set(judge_qc.design(its, REPLIES, seed=4)[0]["expected"]) <= {"a", "b"}
    with pytest.raises(ValueError, match="unknown"):
        judge_qc.design(its, REPLIES, seed=3, kinds=["nonsense"])


def qc_verdicts(design, judge, pick):
    """Per-order rows for ``judge``: ``pick(row, order)`` -> the shown winner "A"/"B"."""
    rows = []
    for r in design.itertuples():
        for order in material.ORDERS:
            shown = pick(r, order)
            sign = (1 if shown == "A" else -1) * (1 if order == "AB" else -1)
            rows.append({"pair_id": r.pair_id, "judge": judge, "order": order, "parse_ok": True, "signed": sign,
                         "rationale": None, **{f"axis_{k}": 0 for k in AXES}})
    return pd.DataFrame(rows).astype({"signed": "Int64"})


def test_summary_scores_a_content_judge_and_flags_a_position_judge():
    design, _ = judge_qc.design(items(10), REPLIES, seed=1)

    def real_shown(r, order):  # the letter the real reply is shown under
        return "A" if (r.expected == "a") == (order == "AB") else "B"

    verdicts = pd.concat([qc_verdicts(design, "good", real_shown),
                          qc_verdicts(design, "position", lambda r, o: "A")], ignore_index=True)
    combined = combine.combine(verdicts, design, AXES)
    flips = pd.DataFrame([{"judge": "good", "axis": "overall", "n_pairs": 20, "flip_rate": 0.1},
                          {"judge": "position", "axis": "overall", "n_pairs": 20, "flip_rate": 1.0}])
    table = judge_qc.summary(combined, verdicts, flips).set_index(["judge", "kind"])
    good, pos = table.loc[("good", "all")], table.loc[("position", "all")]
    assert good["qc_accuracy"] == 1 and good["order_accuracy"] == 1 and good["qc_flip_rate"] == 0
    assert good["meets_targets"] and good["n_checks"] == 20 and good["ci_low"] > 0.8
    assert pos["qc_accuracy"] == 0 and pos["order_accuracy"] == 0.5 and pos["qc_flip_rate"] == 1
    assert pos["meets_targets"] is False or pos["meets_targets"] == False  # noqa: E712 (numpy bool)
    assert "do not show" in pos["note"]
    line = judge_qc.warning(table.reset_index())
    assert "position" in line and "good" not in line.split(":", 1)[1]
    assert judge_qc.warning(table.reset_index(), judges=["good"]) is None
