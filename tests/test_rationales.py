"""heart.rationales: the codebook, coding, agreed pairs and concordance (SYNTHETIC judgments, labelled)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from heart import rationales

CODEBOOK = Path(__file__).resolve().parents[1] / "workflow/resources/codebook/rationales.yaml"


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
    """workflow/schemas/codebook.schema.yaml (through heart.config.load_resource): one line per problem,
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


def synthetic(n=120, linked=True, seed=0):
    """SYNTHETIC pairs: humans and one LLM judge agree on 'a'; the LLM names the feeling whenever the humans
    did (linked) or at random (not linked)."""
    rng = np.random.default_rng(seed)
    rows, texts = [], []
    for i in range(n):
        pid, item = f"p{i}", f"i{i}"
        human_names = rng.random() < 0.5
        llm_names = human_names if linked else rng.random() < 0.5
        base = {"pair_id": pid, "item_id": item, "conversation_id": i // 2, "subset": "regular", "system_a": "m1",
                "contributor_a": None, "system_b": "m2", "contributor_b": None, "kind": "model-model",
                "status": "ok", "winner": "a", "strength": 2}
        rows.append({**base, "judge": "human:r1", "judge_kind": "human",
                     "rationale": "It names the feeling." if human_names else "It is fine here."})
        rows.append({**base, "judge": "j1", "judge_kind": "llm",
                     "rationale": "A validates their feelings." if llm_names else "A is fine overall."})
        texts += [{"item_id": item, "system": "m1", "contributor_id": None, "text": "word " * int(rng.integers(5, 30))},
                  {"item_id": item, "system": "m2", "contributor_id": None, "text": "word " * int(rng.integers(5, 30))}]
    return pd.DataFrame(rows), pd.DataFrame(texts)


def test_linked_mentions_are_concordant_and_associated(codes):
    j, t = synthetic(linked=True)
    summary, per_code = rationales.comention(j, t, codes, n_boot=200, seed=1)
    assert summary.at[0, "status"] == "ok" and summary.at[0, "n_agreed_pairs"] == 120
    assert summary.at[0, "concordance"] == pytest.approx(1.0)
    row = per_code.set_index("code").loc["names_feeling"]
    assert row.status == "ok" and row.partial_r > 0.9 and row.p_value < 1e-6


def test_independent_mentions_are_not(codes):
    j, t = synthetic(linked=False, seed=2)
    _, per_code = rationales.comention(j, t, codes, n_boot=50)
    row = per_code.set_index("code").loc["names_feeling"]
    assert abs(row.partial_r) < 0.3 and 0.3 < row.concordance < 0.7


def test_absent_humans_say_so(codes):
    j, t = synthetic()
    summary, per_code = rationales.comention(j[j.judge_kind == "llm"], t, codes)
    assert summary.at[0, "status"] == "absent" and (per_code["status"] == "absent").all()
    assert per_code["partial_r"].isna().all()
