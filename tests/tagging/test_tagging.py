"""Strategy tagging: the taxonomy, the response schema, the long table, F1 against spot checks."""

import jsonschema
import pandas as pd
import pytest

from support import REPO
from heart.llm import shards
from heart.tagging import spot_checks, tagger
from heart.tagging.taxonomy import load_taxonomy, strategy_keys

TAXONOMY = load_taxonomy(REPO / "workflow/resources/taxonomy/strategies.yaml")
PAPER_15 = ["Affirmation", "Avoid Judgment and Criticism", "Clarification", "Collaborative Planning",
            "Emotional Validation", "Normalize Experiences", "Offer Hope", "Promote Self-Care Practices",
            "Provide Different Perspectives", "Reflective Statements", "Reframe Negative Thoughts",
            "Share Information", "Stress Management", "Suggest Options", "Chit Chat"]


def test_taxonomy_is_the_papers_fifteen():
    assert [s["name"] for s in TAXONOMY["strategies"]] == PAPER_15


def answer(present=()):
    return {k: ({"label": "present", "p": 0.9, "evidence": "it sounds"} if k in present
                else {"label": "absent", "p": 0.05, "evidence": ""}) for k in strategy_keys(TAXONOMY)}


def test_schema_is_strict():
    schema = tagger.response_schema(TAXONOMY)
    jsonschema.validate(answer(["reflective_statements"]), schema)
    missing = answer()
    missing.pop("chit_chat")
    for bad in (missing, {**answer(), "affirmation": {"label": "maybe", "p": 0.5, "evidence": ""}},
                {**answer(), "affirmation": {"label": "present", "p": 1.5, "evidence": ""}},
                {**answer(), "extra": {"label": "present", "p": 0.5, "evidence": ""}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def completions():
    return pd.DataFrame({"item_id": ["i1", "i1", "i2"], "system": ["m", "human", "m"],
                         "contributor_id": [None, "c1", None],
                         "text": ["It sounds heavy.", "Try a walk.", "Hi! How's your day?"]})


def test_requests_and_long_table():
    comp = completions()
    reqs = tagger.requests(comp, "tagger-model", "instr", "v1", tagger.response_schema(TAXONOMY))
    assert [r.id for r in reqs] == ["i1:m", "i1:human#c1", "i2:m"]
    assert reqs[1].messages[1]["content"] == '{"response": "Try a walk."}'
    results = {"i1:m": {"parsed": answer(["reflective_statements"]), "cache_key": "k1", "from_cache": False},
               "i1:human#c1": {"parsed": answer(["self_care", "suggest_options"]), "cache_key": "k2",
                               "from_cache": True},
               "i2:m": {"parsed": None, "parse_error": "JSONDecodeError", "cache_key": "k3", "from_cache": False}}
    table = tagger.tag_table(comp, "t", results, TAXONOMY)
    assert len(table) == 3 * 15
    present = table[table["label"] == "present"]
    assert sorted(present["strategy"]) == ["reflective_statements", "self_care", "suggest_options"]
    bad = table[table["item_id"] == "i2"]
    assert (~bad["parse_ok"]).all() and bad["label"].isna().all() and (bad["parse_error"] == "JSONDecodeError").all()


def test_f1_against_hand_counted_spot_checks():
    comp = completions()
    results = {"i1:m": {"parsed": answer(["reflective_statements", "affirmation"]), "cache_key": "k", "from_cache": 0},
               "i1:human#c1": {"parsed": answer(["self_care"]), "cache_key": "k", "from_cache": 0},
               "i2:m": {"parsed": answer(["chit_chat"]), "cache_key": "k", "from_cache": 0}}
    tags = tagger.tag_table(comp, "t", results, TAXONOMY)
    spot = pd.DataFrame({
        "item_id": ["i1", "i1", "i1", "i2", "i2"], "system": ["m", "m", "human", "m", "m"],
        "contributor_id": [None, None, "c1", None, None],
        "strategy": ["reflective_statements", "affirmation", "self_care", "chit_chat", "reflective_statements"],
        "present": [True, False, True, True, True]})
    f1 = spot_checks.f1_scores(tags, spot, TAXONOMY).set_index("strategy")
    assert f1.loc["reflective_statements", ["tp", "fp", "fn"]].tolist() == [1, 0, 1]
    assert f1.loc["reflective_statements", "f1"] == pytest.approx(2 / 3)
    assert f1.loc["affirmation", "f1"] == 0.0 and f1.loc["self_care", "f1"] == 1.0
    scored = f1.drop("macro")["f1"].dropna()
    assert f1.loc["macro", "f1"] == pytest.approx(scored.mean())


def test_spot_check_errors_name_row_and_field(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("item_id,system,strategy,present\ni1,m,empathy,1\n")
    with pytest.raises(ValueError, match=r"labels.csv, line 2: field 'strategy' is 'empathy'"):
        spot_checks.read_spot_checks(path, TAXONOMY)
    path.write_text("item_id,system,strategy,present\ni1,m,chit_chat,maybe\n")
    with pytest.raises(ValueError, match=r"line 2: field 'present' is 'maybe'"):
        spot_checks.read_spot_checks(path, TAXONOMY)


def test_a_spot_check_file_with_only_its_header_gives_an_absent_f1(tmp_path):
    taxonomy = {"strategies": [{"key": "affirmation"}, {"key": "self_care"}]}
    path = tmp_path / "labels.csv"
    path.write_text("item_id,system,contributor_id,strategy,present\n")
    assert spot_checks.read_spot_checks(path, taxonomy).empty
    table = spot_checks.absent_f1(taxonomy)
    assert table["status"].eq("absent").all() and table["f1"].isna().all() and table["strategy"].tolist()[-1] == "macro"


def test_a_strategy_key_used_twice_is_named(tmp_path):
    import yaml

    doc = yaml.safe_load((REPO / "workflow/resources/taxonomy/strategies.yaml").read_text())
    doc["strategies"][6]["key"] = "clarification"
    bad = tmp_path / "strategies.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match=rf"^{bad}: strategies\[6\].key 'clarification' is used twice "
                                         r"\(first at strategies\[2\].key\)$"):
        load_taxonomy(bad)


def test_present_list_answers_are_labels_only_and_need_one_to_three_keys():
    schema = tagger.answer_schema("present_list", TAXONOMY)
    jsonschema.validate({"present": [1, 7]}, schema)
    for bad in ({"present": []}, {"present": [0]}, {"present": [16]}, {"present": ["offer_hope"]},
                {"present": [1, 2, 3, 4]}, {}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert tagger.answer_schema("per_strategy", TAXONOMY) == tagger.response_schema(TAXONOMY)
    with pytest.raises(ValueError, match="not one of"):
        tagger.answer_schema("free_text", TAXONOMY)
    comp = pd.DataFrame([{"item_id": "i1", "system": "m", "contributor_id": None, "text": "You can do it."}])
    hope = strategy_keys(TAXONOMY).index("offer_hope") + 1
    result = {"i1:m": {"parsed": {"present": [hope, hope]}, "cache_key": "k", "from_cache": False}}
    table = tagger.tag_table(comp, "t", result, TAXONOMY).set_index("strategy")
    assert table.loc["offer_hope", "label"] == "present" and (table["label"] == "present").sum() == 1
    assert table["probability"].isna().all() and table["evidence"].isna().all() and table["parse_ok"].all()
    prompt = tagger.system_prompt("{taxonomy_numbered}", TAXONOMY)
    assert prompt.splitlines()[hope - 1].startswith(f"{hope}. Offer Hope")


def test_a_reply_text_is_tagged_in_one_shard_only():
    # the rehearsal found 34 identical tagging requests called by two shards (identical replies of two items)
    texts = ["I'm sorry to hear that.", "That sounds hard.", "I'm sorry to hear that.", "Tell me more?"] * 5
    completions = pd.DataFrame({"item_id": [f"i{k}" for k in range(len(texts))], "system": "s", "text": texts})
    parts = [tagger.shard_rows(completions, name) for name in shards.names(3)]
    assert sorted(pd.concat(parts).index) == list(completions.index)
    owners = {t: {k for k, part in enumerate(parts) if t in set(part["text"])} for t in set(texts)}
    assert all(len(o) == 1 for o in owners.values()), owners
