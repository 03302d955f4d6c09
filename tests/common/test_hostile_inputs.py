"""Inputs made by attack, across every reader: each is rejected naming the file, the record and the field,
or accepted correctly (issue 29). Each case was a defect before: a bare RecursionError, a UnicodeEncodeError
from pyarrow, a ValueError about Python's digit limit, a value silently kept or silently turned into another.
"""

import json
import re

import pandas as pd
import pytest

from support import TINY_RELEASE
from heart.common import records
from heart.completions import imported
from heart.data import release
from heart.judging import human_judgments
from heart.judging import judgment_import as ji
from heart.tagging import spot_checks

BASE = {"item": "i1", "system_a": "m1", "system_b": "m2", "judge": "j1", "judge_kind": "llm", "winner": "a"}


# --- JSON Lines: what json.loads lets through ------------------------------------------------------

def jsonl(tmp_path, *lines: str, name="votes.jsonl"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


JSONL_ATTACKS = [
    ("deep_nesting", '{"item": ' + "[" * 100_000 + "]" * 100_000 + "}",
     r"line 1: nested more than \d+ levels deep"),
    ("lone_surrogate_value", json.dumps(BASE)[:-1] + ', "rationale": "a \\ud800 b"}',
     r"line 1: field 'rationale' contains a lone surrogate U\+D800"),
    ("lone_surrogate_id", json.dumps({**BASE, "judge": "j\\udfff"}).replace("\\\\", "\\"),
     r"line 1: field 'judge' contains a lone surrogate U\+DFFF"),
    ("huge_integer", json.dumps(BASE)[:-1] + ', "strength": ' + "9" * 50_000 + "}",
     r"line 1: field 'strength': a number of 50000 digits"),
    ("nan_strength", json.dumps(BASE)[:-1] + ', "strength": NaN}',
     r"line 1: field 'strength': NaN is not a JSON number; leave the field empty"),
    ("infinity_seconds", json.dumps({**BASE, "judge_kind": "human"})[:-1] + ', "seconds_spent": Infinity}',
     r"line 1: field 'seconds_spent': Infinity is not a JSON number"),
    ("minus_infinity", json.dumps({**BASE, "judge_kind": "human"})[:-1] + ', "seconds_spent": -Infinity}',
     r"line 1: field 'seconds_spent': -Infinity is not a JSON number"),
    ("duplicate_key", '{"item": "i1", "item": "i2", "system_a": "m1", "system_b": "m2", "judge": "j1", '
                      '"judge_kind": "llm", "winner": "a"}',
     r"line 1: field 'item': the key appears twice in one object"),
    ("escape_character", json.dumps({**BASE, "judge": "j\u001b[31m"}),
     r"line 1: field 'judge' contains the control character U\+001B"),
    ("nul_character", json.dumps({**BASE, "item": "i\u00001"}),
     r"line 1: field 'item' contains the control character U\+0000"),
    ("oversized_field", json.dumps({**BASE, "rationale": "x" * 131_073}),
     r"line 1: field 'rationale' holds 131,073 characters; at most 131,072"),
    ("nested_value", json.dumps({**BASE, "strength": {"value": 3}}),
     r"line 1: field 'strength' is \{'value': 3\}; expected text or a number"),
    ("a_list_not_an_object", json.dumps([BASE]), r"line 1: is a JSON list, not an object"),
    ("truncated_line", json.dumps(BASE)[:-5], r"line 1: not valid JSON"),
    ("huge_float_strength", json.dumps(BASE)[:-1] + ', "strength": 1e999}',
     r"line 1: field 'strength' is '1E\+999'; expected a whole number 1-5"),
    ("fractional_strength", json.dumps(BASE)[:-1] + ', "strength": 2.5}',
     r"line 1: field 'strength' is '2.5'; expected a whole number 1-5"),
    ("boolean_winner", json.dumps({**BASE, "winner": True}), r"line 1: field 'winner' is True"),
    ("second_line_bad", json.dumps(BASE) + "\n" + json.dumps({**BASE, "judge": "j2", "order": "XY"}),
     r"line 2: field 'order' is 'XY'"),
]


@pytest.mark.parametrize("content,message", [c[1:] for c in JSONL_ATTACKS], ids=[c[0] for c in JSONL_ATTACKS])
def test_a_hostile_json_lines_record_is_named(tmp_path, content, message):
    path = jsonl(tmp_path, content)
    with pytest.raises(ji.JudgmentImportError) as err:
        ji.read(path)
    assert str(err.value).startswith(f"{path}, ") and re.search(message, str(err.value)), str(err.value)


def test_json_numbers_that_are_whole_are_accepted_as_their_text(tmp_path):
    path = jsonl(tmp_path, json.dumps(BASE)[:-1] + ', "strength": 3.0, "seconds_spent": 12.50}')
    table = ji.read(path)
    assert table.loc[0, "strength"] == 3 and table.loc[0, "seconds_spent"] == 12.5


# --- Parquet ---------------------------------------------------------------------------------------

def parquet(tmp_path, frame):
    path = tmp_path / "votes.parquet"
    frame.to_parquet(path)
    return path


def test_an_oversized_parquet_field_is_named(tmp_path):
    path = parquet(tmp_path, pd.DataFrame([{**BASE, "rationale": "y" * 200_000}]))
    with pytest.raises(ji.JudgmentImportError, match=r"votes.parquet, row 1: field 'rationale' holds 200,000"):
        ji.read(path)


def test_an_infinite_parquet_strength_is_named(tmp_path):
    path = parquet(tmp_path, pd.DataFrame([{**BASE, "strength": float("inf")}]))
    with pytest.raises(ji.JudgmentImportError, match=r"votes.parquet, row 1: field 'strength' is 'inf'"):
        ji.read(path)


def test_a_nan_parquet_strength_is_no_strength(tmp_path):
    """A float column's NaN is how pandas writes "missing": read as not given (and stored as not given)."""
    path = parquet(tmp_path, pd.DataFrame([{**BASE, "strength": float("nan")}]))
    assert pd.isna(ji.read(path).loc[0, "strength"])
    assert pd.isna(ji.convert(path).judgments.loc[0, "strength"])


# --- look-alike ids --------------------------------------------------------------------------------

def votes_csv(tmp_path, *records, name="votes.csv"):
    frame = pd.DataFrame([{**BASE, **r} for r in records])
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("field,a,b", [
    ("system_a", "gpt-4o", "g\u0440t-4o"),  # Cyrillic er
    ("judge", "claude", "cl\u0430ude"),  # Cyrillic a
    ("judge", "gemini", "gemin\u0456"),  # Cyrillic byelorussian-ukrainian i
    ("item", "item-o", "item-\u03bf"),  # Greek omicron
    ("contributor_b", "c1", "C1"),  # case
])
def test_look_alike_ids_are_an_error_naming_both_records(tmp_path, field, a, b):
    extra = {"system_b": "human"} if field == "contributor_b" else {}
    path = votes_csv(tmp_path, {**extra, field: a}, {**extra, field: b, "item": "i2" if field != "item" else b})
    with pytest.raises(ji.JudgmentImportError, match=r"votes.csv, lines 2 and 3: field .*(look alike|only in case)"):
        ji.read(path)


def test_look_alike_raters_and_contributors_in_the_human_files(tmp_path):
    judgments = tmp_path / "judgments.csv"
    judgments.write_text("rater_id,item_id,shown_a,shown_b,choice,seconds_spent\n"
                         "r\u043e1,i1,m1,m2,2,30\nro1,i2,m1,m2,2,30\n", encoding="utf-8")
    with pytest.raises(human_judgments.HumanJudgmentError, match=r"judgments.csv, lines 2 and 3: field 'rater_id'"):
        human_judgments.read(judgments)
    completions = tmp_path / "completions.csv"
    completions.write_text("item_id,contributor_id,text\ni1,c\u0430,Hello.\ni1,ca,Hi.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"completions.csv, lines 2 and 3: field 'contributor_id' .* look alike"):
        imported.import_humans(completions, pd.DataFrame({"item_id": ["i1"]}))


def test_distinct_scripts_that_do_not_look_alike_are_two_ids(tmp_path):
    path = votes_csv(tmp_path, {"judge": "\u0436\u044e\u0440\u0438"}, {"judge": "j1", "item": "i2"})
    assert set(ji.read(path)["judge"]) == {"\u0436\u044e\u0440\u0438", "j1"}


# --- the human judgments file: one rater, one pair ---------------------------------------------------

def test_a_rater_judging_a_pair_twice_with_a_and_b_swapped_is_an_error(tmp_path):
    path = tmp_path / "judgments.csv"
    path.write_text("rater_id,item_id,shown_a,shown_b,choice,seconds_spent\nr1,i1,m1,m2,1,30\nr1,i1,m2,m1,1,30\n")
    with pytest.raises(human_judgments.HumanJudgmentError,
                       match=r"judgments.csv, lines 2 and 3: fields 'rater_id', 'item_id', 'shown_a', 'shown_b'"):
        human_judgments.read(path)


def test_a_rater_judging_a_pair_by_item_id_and_by_release_key_is_an_error(tmp_path):
    path = tmp_path / "judgments.csv"
    path.write_text("rater_id,item_id,shown_a,shown_b,choice,seconds_spent\n"
                    "r1,abc123,m1,m2,1,30\nr1,regular:0,m2,m1,5,30\n")
    items = pd.DataFrame({"item_id": ["abc123"], "release_key": ["regular:0"]})
    with pytest.raises(human_judgments.HumanJudgmentError, match=r"lines 2 and 3: rater 'r1' judged the same"):
        human_judgments.resolve_items(human_judgments.read(path), items, path)


# --- imported completions: numbers ------------------------------------------------------------------

@pytest.mark.parametrize("field,value", [("cost_usd", "1e999"), ("latency_s", "1e400"), ("ttft_s", "-1"),
                                         ("cost_usd", "NaN")])
def test_an_imported_number_that_is_not_finite_is_a_named_violation(tmp_path, field, value):
    path = tmp_path / "gpt.csv"
    path.write_text(f"item_id,text,{field}\ni1,Hello.,{value}\n")
    table, violations = imported.import_system(path, pd.DataFrame({"item_id": ["i1"]}), "gpt")
    assert table.empty and len(violations) == 1
    assert violations.loc[0, "line"] == 2 and f"field {field!r} is {value!r}" in violations.loc[0, "problem"]


# --- spot checks -----------------------------------------------------------------------------------

def test_a_spot_check_file_in_json_lines_with_a_nan_is_named(tmp_path):
    path = jsonl(tmp_path, '{"item_id": "i1", "system": "m", "strategy": "affirmation", "present": NaN}',
                 name="labels.jsonl")
    with pytest.raises(ValueError, match=r"labels.jsonl, line 1: field 'present': NaN is not a JSON number"):
        spot_checks.read_spot_checks(path, {"strategies": [{"key": "affirmation"}]})


# --- the release files -----------------------------------------------------------------------------

def release_file(tmp_path, text: str):
    path = tmp_path / "dialogues_regular.json"
    path.write_text(text, encoding="utf-8")
    return path


def good_records():
    return json.loads((TINY_RELEASE / "dialogues_regular.json").read_text())


RELEASE_ATTACKS = [
    ("huge_number", lambda t: t.replace('"turn": ', '"turn": ' + "1" * 50_000 + ", \"x\": ", 1),
     r"record 0, turn: a number of 50000 digits"),
    ("duplicate_key", lambda t: t.replace('"situation": ', '"situation": "first", "situation": ', 1),
     r"record 0, situation: the key appears twice"),
    ("nul_in_history", None, r"record 0, dialogue_history\[0\]: contains the control character U\+0000"),
    ("escape_in_history", None, r"record 0, dialogue_history\[0\]: contains the control character U\+001B"),
    ("lone_surrogate", None, r"record 0, dialogue_history\[0\]: contains a lone surrogate U\+D83D"),
    ("invisible_only_entry", None, r"record 0, dialogue_history\[1\]: is empty or blank"),
    ("invisible_only_emotion", None, r"record 0, emotion_type: is empty or blank"),
    ("nan_turn", lambda t: t.replace('"turn": ', '"turn": NaN, "y": ', 1), r"record 0, turn: NaN is not a JSON number"),
    ("deep_nesting", lambda t: "[" * 100_000 + "]" * 100_000, r"nested more than \d+ levels deep"),
]


def _edit(name, records):
    first = records[0]
    if name == "nul_in_history":
        first["dialogue_history"][0] = "hello\x00there"
    elif name == "escape_in_history":
        first["dialogue_history"][0] = "\x1b]0;pwned\x07 hello"
    elif name == "lone_surrogate":
        first["dialogue_history"][0] = "hello \ud83d"
    elif name == "invisible_only_entry":
        first["dialogue_history"][1] = "\u200b\u2060"
    elif name == "invisible_only_emotion":
        first["emotion_type"] = "\ufeff"
    return records


@pytest.mark.parametrize("name,edit,message", RELEASE_ATTACKS, ids=[a[0] for a in RELEASE_ATTACKS])
def test_a_hostile_release_record_is_named(tmp_path, name, edit, message):
    if edit is None:
        text = json.dumps(_edit(name, good_records()))
    else:
        text = edit(json.dumps(good_records()))
    path = release_file(tmp_path, text)
    with pytest.raises(release.ReleaseFormatError) as err:
        release.read(path, "regular")
    assert str(err.value).startswith(str(path)) and re.search(message, str(err.value)), str(err.value)


def test_the_tiny_release_still_reads():
    assert len(release.read(TINY_RELEASE / "dialogues_regular.json", "regular")) == len(good_records())


def test_the_record_reader_caps_fields_in_every_format(tmp_path):
    assert records.MAX_FIELD_CHARS == 131_072
    path = tmp_path / "x.csv"
    path.write_text("item_id,contributor_id,text\ni1,c1," + "z" * 131_073 + "\n")
    with pytest.raises(records.RecordError, match=r"x.csv, line 2: a field is longer than 131,072"):
        records.read_records(path, ["item_id", "contributor_id", "text"])


def test_a_blank_value_under_a_blank_key_is_named(tmp_path):
    """The blank check reads values, never keys: a value equal to its key is still checked."""
    records = good_records()
    records[0]["\u200b"] = "\u200b"
    path = release_file(tmp_path, json.dumps(records))
    with pytest.raises(release.ReleaseFormatError, match=r"record 0, .*: is empty or blank"):
        release.read(path, "regular")
