"""heart.stats.rationales: the codebook, coding, agreed pairs and concordance (SYNTHETIC judgments, labelled)."""


import numpy as np
import pandas as pd
import pytest

from heart.stats import rationales
from support.synthetic import CODEBOOK, synthetic


@pytest.fixture(scope="module")
def codes():
    return rationales.load_codebook(CODEBOOK)


def test_codebook_codes_phrases_to_axes(codes):
    assert {c["axis"] for c in codes} == set("HEART")
    assert rationales.code_text("B names the feeling and asks a follow-up question.", codes) == {
        "names_feeling", "asks_detail"}
    assert rationales.code_text("A offers a doable next step and sounds natural.", codes) == {"next_step", "natural"}
    assert rationales.code_text("", codes) == set() and rationales.code_text(None, codes) == set()


def test_a_broken_codebook_is_named(tmp_path):
    bad = tmp_path / "cb.yaml"
    bad.write_text("codes:\n  - {key: x, label: x, axis: Q, micro_skill: m, patterns: ['a']}\n")
    with pytest.raises(ValueError, match=r"cb.yaml: codes\[0\].axis"):
        rationales.load_codebook(bad)
    bad.write_text("codes:\n  - {key: x, label: x, axis: E, micro_skill: m, patterns: ['(']}\n")
    with pytest.raises(ValueError, match=r"codes\[0\] \(x\): bad pattern"):
        rationales.load_codebook(bad)


def test_the_codebook_schema_names_every_problem(tmp_path):
    """workflow/schemas/codebook.schema.yaml (through heart.common.config.load_resource): one line per problem,
    each naming the file, the code and the field."""
    import jsonschema
    import yaml

    schema = yaml.safe_load((CODEBOOK.parents[2] / "schemas" / "codebook.schema.yaml").read_text())
    jsonschema.validators.validator_for(schema).check_schema(schema)
    jsonschema.validate(yaml.safe_load(CODEBOOK.read_text()), schema)  # the shipped codebook passes
    bad = tmp_path / "cb.yaml"
    bad.write_text("version: 1\ncodes:\n"
                   "  - {key: '  ', label: x, axis: E, micro_skill: m, patterns: []}\n"
                   "  - {key: y, label: x, axis: Q, patterns: ['a', ' '], colour: red}\n")
    with pytest.raises(ValueError) as err:
        rationales.load_codebook(bad)
    lines = str(err.value).splitlines()
    assert len(lines) == 6 and all(line.startswith(f"{bad}: codes[") for line in lines)
    for problem in ("codes[0].key must be a non-empty string", "codes[0].patterns: has 0 entries",
                    "codes[1].colour: unknown key", "codes[1].micro_skill must be a non-empty string",
                    "codes[1].axis must be one of H, E, A, R, T, not 'Q'",
                    "codes[1].patterns[1] must be a non-empty string"):
        assert any(problem in line for line in lines), problem
    bad.write_text("codes:\n  - {key: x, label: x, axis: E, micro_skill: m, patterns: [a]}\n"
                   "  - {key: x, label: z, axis: R, micro_skill: m, patterns: [b]}\n")
    with pytest.raises(ValueError, match=r"cb.yaml: codes\[1\]\.key 'x' is used twice"):
        rationales.load_codebook(bad)


def test_linked_mentions_are_concordant_and_associated(codes):
    j, t = synthetic(linked=True)
    summary, per_code = rationales.comention(j, t, codes, n_boot=200, seed=1)
    assert summary["measure"].tolist() == ["co-mention", "co-mention or co-omission"]
    assert (summary["status"] == "ok").all() and (summary["n_agreed_pairs"] == 120).all()
    assert summary["concordance"].tolist() == pytest.approx([1.0, 1.0])
    row = per_code.set_index("code").loc["names_feeling"]
    assert row.status == "ok" and row.partial_r > 0.9 and row.p_value < 1e-6


def test_independent_mentions_are_not(codes):
    j, t = synthetic(linked=False, seed=2)
    summary, per_code = rationales.comention(j, t, codes, n_boot=50)
    row = per_code.set_index("code").loc["names_feeling"]
    # each side mentions it in about half the pairs, independently: P(both | either) = .25 / .75 = 1/3, while
    # the co-omission-inclusive share is P(both) + P(neither) = .5
    assert abs(row.partial_r) < 0.3 and 0.2 < row.concordance < 0.45
    assert 0.35 < row.concordance_with_co_omission < 0.65
    # overall the other nine codes are omitted by both sides in every pair: the co-omission-inclusive figure is
    # (9 + ~.5) / 10 ~ .95 although the one theme either side names is shared only a third of the time
    by = summary.set_index("measure")["concordance"]
    assert by["co-mention or co-omission"] > 0.9
    assert by["co-mention"] == pytest.approx(row.concordance)


FOUR_CODES = """version: 1
codes:
  - {key: c1, label: one, axis: H, micro_skill: m, patterns: ['\\balpha\\b']}
  - {key: c2, label: two, axis: E, micro_skill: m, patterns: ['\\bbeta\\b']}
  - {key: c3, label: three, axis: A, micro_skill: m, patterns: ['\\bgamma\\b']}
  - {key: c4, label: four, axis: R, micro_skill: m, patterns: ['\\bdelta\\b']}
"""


def two_pairs(human, llm):
    """SYNTHETIC: pair k (its own conversation) judged 'a' by one human and one LLM judge with these rationales."""
    rows, texts = [], []
    for k, (h, ll) in enumerate(zip(human, llm)):
        base = {"pair_id": f"p{k}", "item_id": f"i{k}", "conversation_id": f"c{k}", "subset": "regular",
                "system_a": "m1", "contributor_a": None, "system_b": "m2", "contributor_b": None,
                "kind": "model-model", "status": "ok", "winner": "a", "strength": 3}
        rows += [{**base, "judge": "human:r1", "judge_kind": "human", "rationale": h},
                 {**base, "judge": "j1", "judge_kind": "llm", "rationale": ll}]
        texts += [{"item_id": f"i{k}", "system": s, "contributor_id": None, "text": "some words"} for s in ("m1", "m2")]
    return pd.DataFrame(rows), pd.DataFrame(texts)


def test_hand_worked_concordance_counts_only_mentioned_codes(tmp_path):
    """2 agreed pairs x 4 codes, by hand:

    pair 0: human {c1, c2}, LLM {c1}  -> c1 both, c2 human only, c3 and c4 neither
    pair 1: human {c3},     LLM {c3}  -> c3 both, c1, c2, c4 neither
    cells 8; mentioned by either side: (0,c1) (0,c2) (1,c3) = 3; by both: (0,c1) (1,c3) = 2
      concordance (default)        = 2 / 3
      with co-omission (paper's)   = (2 both + 5 neither) / 8 = 7 / 8
    per code: c1 1/1 = 1 (co-omission 2/2), c2 0/1 = 0 (1/2), c3 1/1 = 1 (2/2), c4 never mentioned: NaN (2/2)
    """
    path = tmp_path / "cb.yaml"
    path.write_text(FOUR_CODES)
    codes = rationales.load_codebook(path)
    j, t = two_pairs(["alpha and beta", "gamma"], ["alpha only", "gamma too"])
    summary, per_code = rationales.comention(j, t, codes, n_boot=200, seed=0)
    assert summary["measure"].tolist() == ["co-mention", "co-mention or co-omission"]  # the default first
    assert (summary["status"] == "ok").all() and (summary["n_agreed_pairs"] == 2).all()
    mention, variant = summary.iloc[0], summary.iloc[1]
    assert (mention["n_concordant_cells"], mention["n_cells"]) == (2, 3)
    assert (variant["n_concordant_cells"], variant["n_cells"]) == (7, 8)
    assert mention["concordance"] == pytest.approx(2 / 3)
    assert variant["concordance"] == pytest.approx(7 / 8)
    # replicates draw {p0,p0}: 2/4, {p0,p1}: 2/3 or {p1,p1}: 2/2; with co-omission 6/8, 7/8 or 8/8
    assert 0.5 <= mention["ci_low"] <= 2 / 3 <= mention["ci_high"] <= 1 and mention["ci_low"] < mention["ci_high"]
    assert 0.75 <= variant["ci_low"] <= 7 / 8 <= variant["ci_high"] <= 1
    assert "variant" in variant["note"] and "default" in mention["note"]
    pc = per_code.set_index("code")
    assert pc["n_mentioned"].tolist() == [1, 1, 1, 0] and pc["n_co_mentioned"].tolist() == [1, 0, 1, 0]
    assert pc["concordance"].iloc[:3].tolist() == [1.0, 0.0, 1.0] and np.isnan(pc.at["c4", "concordance"])
    assert pc["concordance_with_co_omission"].tolist() == [1.0, 0.5, 1.0, 1.0]
    # the pure function, on the same mention matrices
    assert rationales.concordance(np.array([[1, 1, 0, 0], [0, 0, 1, 0]]), np.array([[1, 0, 0, 0], [0, 0, 1, 0]])) == {
        "n_cells": 8, "n_mentioned_cells": 3, "n_co_mentioned_cells": 2, "concordance": 2 / 3,
        "concordance_with_co_omission": 7 / 8}


def test_nothing_mentioned_leaves_the_concordance_undefined(tmp_path):
    """Neither side names any code: every cell is co-omitted, so the paper's share is 1 but there is no theme to
    agree on: the default is undefined (NaN, status "undefined"), never 1 or 0."""
    path = tmp_path / "cb.yaml"
    path.write_text(FOUR_CODES)
    codes = rationales.load_codebook(path)
    j, t = two_pairs(["fine", "ok"], ["good", "nice"])
    summary, _ = rationales.comention(j, t, codes, n_boot=20)
    mention, variant = summary.iloc[0], summary.iloc[1]
    assert mention["status"] == "undefined" and np.isnan(mention["concordance"]) and np.isnan(mention["ci_low"])
    assert mention["n_cells"] == 0
    assert variant["status"] == "ok" and variant["concordance"] == 1.0 and variant["n_cells"] == 8


def test_the_tables_match_their_schemas(codes, tmp_path):
    from heart.common import tableio
    j, t = synthetic(n=20)
    summary, per_code = rationales.comention(j, t, codes, n_boot=20)
    tableio.to_arrow(summary, "rationale_concordance")
    tableio.to_arrow(per_code, "rationale_codes")
    absent = rationales.comention(j[j.judge_kind == "llm"], t, codes)
    tableio.to_arrow(absent[0], "rationale_concordance")
    tableio.to_arrow(absent[1], "rationale_codes")


def test_absent_humans_say_so(codes):
    j, t = synthetic()
    summary, per_code = rationales.comention(j[j.judge_kind == "llm"], t, codes)
    assert (summary["status"] == "absent").all() and (per_code["status"] == "absent").all()
    assert summary["measure"].tolist() == list(rationales.MEASURES) and summary["concordance"].isna().all()
    assert per_code["partial_r"].isna().all()
