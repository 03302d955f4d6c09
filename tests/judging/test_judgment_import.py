"""Imported judgments (heart.judging.judgment_import): the public format in CSV, JSON Lines and Parquet, its checks,
and the conversion to the workflow's pairs and judgments tables. The data are SYNTHETIC (see
tests/fixtures/imported/README.md)."""

import csv
import json
import math

import pandas as pd
import pytest

from support import FIXTURES
from heart.judging import human_judgments as hj
from heart.judging import combine, verdicts
from heart.judging import pairs
from heart.common import tableio
from heart.judging import judgment_import as ji
from heart.common.vocabulary import AXIS_COLUMNS
from support.judging import items_and_completions

EXAMPLE = FIXTURES / "imported" / "example_votes.csv"
BASE = {"item": "i1", "system_a": "m1", "system_b": "m2", "judge": "j1", "judge_kind": "llm", "winner": "a"}


def write_csv(path, records):
    columns = list(dict.fromkeys(c for r in records for c in r))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerows(records)
    return path


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def typed(record: dict) -> dict:
    """A CSV record as a JSON Lines writer would type it: numbers as numbers, empty fields left out or null."""
    out = {}
    for k, v in record.items():
        if v == "":
            out[k] = None
        elif k in ("strength", "seconds_spent"):
            out[k] = int(v) if v.isdigit() else float(v)
        else:
            out[k] = v
    return out


def example_records():
    with open(EXAMPLE, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def imported(tmp_path, *records, name="votes.csv", **kwargs):
    path = write_csv(tmp_path / name, [{**BASE, **r} for r in records])
    return ji.convert(ji.read(path), **kwargs)


# --- the three formats ------------------------------------------------------------------------

def test_csv_jsonl_and_parquet_of_the_same_content_give_identical_tables(tmp_path):
    records = example_records()
    jsonl = write_jsonl(tmp_path / "votes.jsonl", [typed(r) for r in records])
    frame = pd.DataFrame([typed(r) for r in records])
    frame["strength"] = frame["strength"].astype("Int64")
    parquet = tmp_path / "votes.parquet"
    frame.to_parquet(parquet, index=False)
    tables = [ji.read(p) for p in (EXAMPLE, jsonl, parquet)]
    assert tables[0]["record"].iloc[0] == "line 2" and tables[2]["record"].iloc[0] == "row 1"
    for t in tables[1:]:
        pd.testing.assert_frame_equal(t.drop(columns=["file", "record"]), tables[0].drop(columns=["file", "record"]))
    outs = [ji.convert(t) for t in tables]
    for out in outs[1:]:
        for name in ("pairs", "verdicts", "human", "judgments"):
            pd.testing.assert_frame_equal(getattr(out, name), getattr(outs[0], name))
    # a DataFrame in the public format is checked and converted the same way
    pd.testing.assert_frame_equal(ji.to_judgments(frame), outs[0].judgments)


def test_example_fixture_converts_to_valid_workflow_tables():
    out = ji.convert(ji.read(EXAMPLE))
    tableio.to_arrow(out.judgments, "judgments")
    tableio.to_arrow(out.pairs, "pairs")
    tableio.to_arrow(out.verdicts, "judge_verdicts")
    tableio.to_arrow(out.human, "human_judgments")  # the axis columns are the schema's too
    j = out.judgments
    assert len(out.pairs) == 30 and out.pairs["item_id"].nunique() == 6
    assert set(out.pairs["kind"]) == {"model-model", "dataset-model", "human-model"}
    llm, human = j[j["judge_kind"] == "llm"], j[j["judge_kind"] == "human"]
    assert len(llm) == 2 * 30 and (llm["n_orders"] == 2).all()
    assert llm["status"].isin(["ok", "inconsistent"]).all() and (llm["status"] == "inconsistent").any()
    assert llm["flipped"].any() and not llm["flipped"].all()
    assert set(human["judge"]) == {"human:r1", "human:r2", "human:r3"}
    assert (human["status"] == "tie").any() and (human["preference"] == 0).sum() == (human["status"] == "tie").sum()
    assert (human.groupby("pair_id").size() == 3).sum() >= 20  # several raters per pair: kappa, alpha
    assert j["conversation_id"].nunique() == 5 and set(j["subset"]) == {"regular", "adversarial"}
    assert (llm[[f"axis_{k}" for k in ji.AXES]].abs() > 0).any().all()
    assert human[[f"axis_{k}" for k in ji.AXES]].isna().all().all()  # the raters gave no axis marks


# --- bad input: the file, the record, the field ------------------------------------------------

BAD_ROWS = [
    ({"judge_kind": "robot"}, r"line 2: field 'judge_kind' is 'robot'; expected human or llm"),
    ({"winner": "A"}, r"line 2: field 'winner' is 'A'; expected a \(system_a won\)"),
    ({"order": "ab"}, r"line 2: field 'order' is 'ab'; expected AB"),
    ({"strength": "6"}, r"line 2: field 'strength' is '6'; expected a whole number 1-5"),
    ({"strength": "2.5"}, r"line 2: field 'strength' is '2.5'"),
    ({"judge_kind": "human", "winner": "tie", "strength": "2"},
     r"line 2: field 'strength' is '2' but the winner is a tie"),
    ({"system_b": "m1"}, r"line 2: fields 'system_a' and 'system_b' name the same completion"),
    ({"system_a": "human", "contributor_a": "c1", "system_b": "human", "contributor_b": "c1"},
     r"line 2: fields 'system_a' and 'system_b' name the same completion \('human#c1'\)"),
    ({"winner": "tie", "strength": "2"}, r"line 2: field 'strength' is '2' but the winner is a tie"),
    ({"axis_E": "A+"}, r"line 2: field 'axis_E' is 'A\+'; expected a, b, tie"),
    ({"judge_kind": "human", "seconds_spent": "-3"}, r"line 2: field 'seconds_spent' is '-3'"),
    ({"judge": " "}, r"line 2: field 'judge' is empty"),
    ({"system_a": "human#c1"}, r"line 2: field 'system_a' is 'human#c1'; expected a system name without '#'"),
    ({"judge": "human:x"}, r"line 2: field 'judge' is 'human:x'; expected an LLM judge's name"),
    ({"rationale": "bell\x07"}, r"line 2: field 'rationale' contains the control character U\+0007"),
]


@pytest.mark.parametrize("change,message", BAD_ROWS)
def test_a_bad_record_names_file_line_and_field(tmp_path, change, message):
    path = write_csv(tmp_path / "votes.csv", [{**BASE, "strength": "", "order": "", "axis_E": "",
                                               "seconds_spent": "", "rationale": "", "contributor_a": "",
                                               "contributor_b": "", **change}])
    with pytest.raises(ji.JudgmentImportError, match=message) as err:
        ji.read(path)
    assert str(err.value).startswith(f"{path}, line 2: ")


def test_the_first_bad_record_is_named_whatever_its_fault(tmp_path):
    """Fields are read column by column (each distinct value once); the error still names the first bad record
    in file order, whichever kind of fault it and a later record hold (a control character is the reader's to
    refuse, before any record is checked)."""
    faults = [{"judge": " "}, {"winner": "A"}, {"strength": "9"}, {"system_b": "m1"}, {"strength": "2.5"}]
    for early in faults:
        for late in faults:
            rows = [BASE, {**BASE, "judge": "j2", **early}, {**BASE, "judge": "j3"}, {**BASE, "judge": "j4", **late}]
            path = write_csv(tmp_path / "votes.csv", [{"strength": "", "rationale": "", **r} for r in rows])
            with pytest.raises(ji.JudgmentImportError, match=r", line 3: field") as err:
                ji.read(path)
            with pytest.raises(ji.JudgmentImportError) as whole:
                ji.read(write_csv(tmp_path / "one.csv", [{"strength": "", "rationale": "", **BASE, **early}]))
            assert str(err.value).split(": ", 1)[1] == str(whole.value).split(": ", 1)[1]


BAD_PAIRS_OF_RECORDS = [
    # one LLM judge, one pair, the same completion (m1) shown first twice -- also when written swapped
    ([{"order": "AB"}, {"order": "AB", "winner": "b"}], r"lines 2 and 3: fields 'judge', 'item', 'system_a', "
                                                        r"'system_b', 'order': LLM judge 'j1' gave two verdicts"),
    ([{"order": "AB"}, {"system_a": "m2", "system_b": "m1", "order": "BA"}], r"lines 2 and 3: .*m1 shown first"),
    # a human rater judges a pair once, in either order
    ([{"judge_kind": "human"}, {"judge_kind": "human", "system_a": "m2", "system_b": "m1", "order": "BA"}],
     r"lines 2 and 3: fields 'judge', 'item', 'system_a', 'system_b': rater 'j1' judged m2 vs m1 on item 'i1' twice"),
    ([{"judge_kind": "human", "judge": "human:r"}, {"judge_kind": "human", "judge": "r", "winner": "tie"}],
     r"lines 2 and 3: .*rater 'r' judged"),
    ([{}, {"judge_kind": "human", "item": "i2"}],
     r"lines 2 and 3: field 'judge_kind' is 'llm' and 'human' for judge 'j1'"),
    ([{"subset": "regular"}, {"subset": "adversarial", "judge": "j2"}],
     r"lines 2 and 3: field 'subset' is 'regular' and 'adversarial' for item 'i1'"),
    ([{"conversation": "c1"}, {"judge": "j2"}],
     r"lines 2 and 3: field 'conversation' is 'c1' and empty for item 'i1'"),
    ([{}, {"system_b": "M2", "judge": "j2"}],
     r"lines 2 and 3: field 'system_b' has 'm2' and 'M2', which differ only in case"),
    # one vocabulary over two columns: the first spelling met in file order (then column order) is named first
    ([{"system_a": "m3", "system_b": "M1", "judge": "j2"}, {"judge": "j3"}],
     r"lines 2 and 3: fields 'system_b' and 'system_a' have 'M1' and 'm1', which differ only in case"),
]


@pytest.mark.parametrize("changes,message", BAD_PAIRS_OF_RECORDS)
def test_conflicting_records_name_both_lines(tmp_path, changes, message):
    path = write_csv(tmp_path / "votes.csv", [{**BASE, "order": "", "subset": "", "conversation": "", **c}
                                              for c in changes])
    with pytest.raises(ji.JudgmentImportError, match=message) as err:
        ji.read(path)
    assert str(err.value).startswith(f"{path}, ")


def test_bad_files(tmp_path):
    for name, text, message in [
        ("v.csv", "item,system_a,system_b,judge,judge_kind\ni,a,b,j,llm\n", r"v.csv: missing column\(s\) winner"),
        ("v.csv", "item,system_a,system_b,judge,judge_kind,winner,strenght\ni,a,b,j,llm,a,3\n",
         r"v.csv: unknown column\(s\) 'strenght'"),
        ("v.csv", 'item,system_a,system_b,judge,judge_kind,winner\ni,a,"b,j,llm,a\n', r"v.csv, line 2: "),
        ("v.tsv", "", r"v.tsv: unknown file type '.tsv'; name the file \*.csv, \*.jsonl or \*.parquet"),
        ("v.jsonl", json.dumps(BASE) + "\n{not json\n", r"v.jsonl, line 2: not valid JSON"),
        ("v.jsonl", "\n" + json.dumps([1, 2]) + "\n", r"v.jsonl, line 2: is a JSON list, not an object"),
        ("v.jsonl", json.dumps({**BASE, "strenght": 3}) + "\n", r"v.jsonl, line 1: unknown field\(s\) 'strenght'"),
        ("v.jsonl", json.dumps({k: v for k, v in BASE.items() if k != "judge"}) + "\n",
         r"v.jsonl, line 1: field 'judge' is missing"),
        ("v.jsonl", json.dumps({**BASE, "rationale": ["a"]}) + "\n",
         r"v.jsonl, line 1: field 'rationale' is \['a'\]; expected text"),
        ("v.jsonl", '{"item": "i", "item": "j"}\n',
         r"v.jsonl, line 1: field 'item': the key appears twice in one object"),
        ("v.jsonl", json.dumps({**BASE, "strength": True}) + "\n", r"v.jsonl, line 1: field 'strength' is True"),
        ("v.jsonl", json.dumps({**BASE, "strength": 7}) + "\n", r"v.jsonl, line 1: field 'strength' is '7'"),
        ("v.jsonl", json.dumps({**BASE, "judge": None}) + "\n", r"v.jsonl, line 1: field 'judge' is empty"),
        ("v.parquet", "not parquet", r"v.parquet: not a readable Parquet file"),
    ]:
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ji.JudgmentImportError, match=message):
            ji.read(path)


def test_parquet_errors_name_the_row(tmp_path):
    frame = pd.DataFrame([BASE, {**BASE, "judge": "j2", "strength": 9}])
    frame["strength"] = frame["strength"].astype("Int64")
    frame.to_parquet(tmp_path / "v.parquet", index=False)
    with pytest.raises(ji.JudgmentImportError, match=r"v.parquet, row 2: field 'strength' is '9'"):
        ji.read(tmp_path / "v.parquet")
    pd.DataFrame([{**BASE, "extra": 1}]).to_parquet(tmp_path / "w.parquet", index=False)
    with pytest.raises(ji.JudgmentImportError, match=r"w.parquet: unknown column\(s\) 'extra'"):
        ji.read(tmp_path / "w.parquet")
    pd.DataFrame([{**BASE, "judge_kind": "human", "winner": "tie", "judge": "h"}, BASE]).to_parquet(
        tmp_path / "x.parquet", index=False)
    out = ji.to_judgments(tmp_path / "x.parquet")
    assert sorted(out["status"]) == ["ok", "tie"]


def test_empty_files_hold_no_judgments(tmp_path):
    csv_path = tmp_path / "v.csv"
    csv_path.write_text(",".join(ji.REQUIRED) + "\n")
    jsonl_path = tmp_path / "v.jsonl"
    jsonl_path.write_text("\n")
    for path in (csv_path, jsonl_path):
        out = ji.convert(ji.read(path))
        assert out.judgments.empty and out.pairs.empty
        tableio.to_arrow(out.judgments, "judgments")
        tableio.to_arrow(out.pairs, "pairs")


# --- the two orders of an LLM judge -----------------------------------------------------------

def combined(tmp_path, ab: dict, ba: dict):
    out = imported(tmp_path, {"order": "AB", **ab}, {"order": "BA", **ba})
    assert len(out.judgments) == 1
    return out.judgments.iloc[0]


def test_two_orders_that_agree_combine_to_ok(tmp_path):
    row = combined(tmp_path, {"strength": "5", "axis_E": "a"}, {"strength": "2", "axis_E": "a", "axis_T": "b"})
    assert (row["status"], row["winner"], row["strength"], row["n_orders"]) == ("ok", "a", 4, 2)  # ceil(7 / 2)
    assert (not row["flipped"] and row["axis_E"] == 1 and row["axis_T"] == -1
            and pd.isna(row["axis_H"]))  # not marked: stays unmarked
    assert pd.isna(row["rationale"])  # no rationale given: none, not "AB: None | BA: None"
    one = imported(tmp_path, {"order": "AB", "rationale": "warmer"}, {"order": "BA"}).judgments.iloc[0]
    assert one["rationale"] == "AB: warmer"


def test_two_orders_that_disagree_are_flipped_or_inconsistent(tmp_path):
    row = combined(tmp_path, {"strength": "5"}, {"winner": "b", "strength": "1"})
    assert (row["status"], row["winner"], row["strength"], bool(row["flipped"])) == ("ok", "a", 2, True)
    row = combined(tmp_path, {"strength": "3"}, {"winner": "b", "strength": "3"})  # a pure position effect
    assert row["status"] == "inconsistent" and pd.isna(row["winner"]) and bool(row["flipped"])
    row = combined(tmp_path, {"strength": "3", "axis_A": "b"}, {"winner": "b", "strength": "3"})  # axes break it
    assert (row["status"], row["winner"], row["strength"]) == ("ok", "b", 1)


NONE_EAT = {"axis_E": "tie", "axis_A": "tie", "axis_T": "tie"}  # "none" on E, A, T: no clear advantage


def test_orders_combine_exactly_as_judging_combine(tmp_path):
    """The same two answers as workflow verdict rows (heart.judging.verdicts.orient) and as imported records."""
    out = imported(tmp_path,
                   {"order": "AB", "winner": "a", "strength": "4", "axis_H": "a", **NONE_EAT, "axis_R": "tie"},
                   # written the other way round: system_a is m2, shown first; the judge prefers m1
                   {"system_a": "m2", "system_b": "m1", "order": "AB", "winner": "b", "strength": "1",
                    "axis_H": "a", **NONE_EAT, "axis_R": "tie"})
    pair = out.pairs
    axes = list(ji.AXES)
    rows = []
    for order, parsed in (("AB", {"winner": "A", "strength": 4, "axes": {"H": "A+", "E": "none", "A": "none",
                                                                        "R": "none", "T": "none"}}),
                          ("BA", {"winner": "B", "strength": 1, "axes": {"H": "A+", "E": "none", "A": "none",
                                                                        "R": "none", "T": "none"}})):
        rows.append({"pair_id": pair["pair_id"].iloc[0], "judge": "j1", "order": order, "parse_ok": True,
                     "rationale": None, **verdicts.orient(parsed, order, axes)})
    expected = combine.combine(pd.DataFrame(rows), pair, axes)
    got = combine.combine(out.verdicts, pair, axes)
    cols = ["winner", "strength", "status", "flipped", "n_orders", *AXIS_COLUMNS]
    assert got[cols].to_dict("records") == expected[cols].to_dict("records")
    row = out.judgments.iloc[0]
    assert (row["winner"], row["strength"], row["axis_H"], bool(row["flipped"])) == ("a", 3, 0, False)
    assert list(out.verdicts["order"]) == ["AB", "BA"] and list(out.verdicts["winner_shown"]) == ["A", "B"]
    assert list(out.verdicts["shown_a"]) == ["m1", "m2"]


def test_one_order_and_a_missing_strength(tmp_path):
    """Not given stays not given: the strength of a verdict whose records give none is null (the fit
    weighs it 1, as any strength-less win)."""
    row = imported(tmp_path, {"winner": "b"}).judgments.iloc[0]
    assert (row["status"], row["winner"], row["n_orders"]) == ("ok", "b", 1)
    assert pd.isna(row["strength"]) and pd.isna(row["flipped"])
    row = imported(tmp_path, {"winner": "b", "order": "AB"}, {"winner": "b", "order": "BA"}).judgments.iloc[0]
    assert (row["status"], row["winner"]) == ("ok", "b") and pd.isna(row["strength"])
    row = imported(tmp_path, {"winner": "b", "order": "AB", "strength": "3"},
                   {"winner": "b", "order": "BA"}).judgments.iloc[0]
    assert row["strength"] == 2  # one order gave 3, the other none (counted 1 to combine): ceil(4 / 2)


# --- human raters -----------------------------------------------------------------------------

def test_human_records_map_like_the_human_judgments_import(tmp_path):
    """The same four judgments in the human CSV (Figure-2 choices) and as imported records."""
    items, comp = items_and_completions(n_items=1, humans=1)
    design = pairs.design(comp, items, seed=1)
    p = design[design["kind"] == "human-model"].iloc[0]
    ref = lambda s, c: s if pd.isna(c) else f"{s}#{c}"  # noqa: E731
    a, b = ref(p.system_a, p.contributor_a), ref(p.system_b, p.contributor_b)
    human_csv = tmp_path / "human.csv"
    human_csv.write_text("rater_id,item_id,shown_a,shown_b,choice,seconds_spent\n"
                         f"r1,{p.item_id},{a},{b},1,30\nr2,{p.item_id},{b},{a},2,30\n"
                         f"r3,{p.item_id},{a},{b},3,30\nr4,{p.item_id},{b},{a},5,30\n")
    raw = hj.read(human_csv)
    want = hj.orient(raw, design, hj.quality_control(raw, 0.5, 5, 900), ji.DEFAULT_STRENGTH_MAP, human_csv)
    rec_a = {"system_a": p.system_a, "contributor_a": "" if pd.isna(p.contributor_a) else p.contributor_a,
             "system_b": p.system_b, "contributor_b": "" if pd.isna(p.contributor_b) else p.contributor_b}
    rec_b = {"system_a": p.system_b, "contributor_a": "" if pd.isna(p.contributor_b) else p.contributor_b,
             "system_b": p.system_a, "contributor_b": "" if pd.isna(p.contributor_a) else p.contributor_a}
    records = [{**rec_a, "judge": "r1", "order": "AB", "winner": "a", "strength": "5"},  # shown A much better
               {**rec_b, "judge": "r2", "order": "AB", "winner": "a", "strength": "2"},  # shown A (= b) slightly
               {**rec_a, "judge": "r3", "order": "AB", "winner": "tie", "strength": ""},
               {**rec_a, "judge": "r4", "order": "BA", "winner": "a", "strength": "4"}]  # shown B (= a) much
    out = imported(tmp_path, *[{**r, "item": p.item_id, "judge_kind": "human", "seconds_spent": "30"}
                               for r in records], pairs=design)
    got = out.human
    cols = ["pair_id", "judge", "rater_id", "order", "preference", "winner", "strength", "seconds_spent"]
    pd.testing.assert_frame_equal(got[cols].reset_index(drop=True), want[cols].reset_index(drop=True),
                                  check_dtype=False)
    j = out.judgments.set_index("judge")
    assert j.loc["human:r3", "status"] == "tie" and j.loc["human:r1", "status"] == "ok"
    tableio.to_arrow(out.judgments, "judgments")


def test_human_strength_levels_follow_the_strength_map(tmp_path):
    out = imported(tmp_path, *[{"judge_kind": "human", "judge": f"r{s}", "strength": str(s)} for s in range(1, 6)],
                   strength_map={"slight": 1, "significant": 3})
    h = out.human.set_index("rater_id")
    assert list(h["preference"]) == [1, 1, 2, 2, 2] and list(h["strength"]) == [1, 1, 3, 3, 3]


# --- items, release keys, conversations, pairs --------------------------------------------------

ITEMS = pd.DataFrame({"item_id": ["3f2a9c0d11aa22bb", "77aa00bb11cc22dd"],
                      "release_key": ["regular:17", "adversarial:3"],
                      "cluster": ["esconv-17", "esconv-3"], "subset": ["regular", "adversarial"]})


def test_release_keys_resolve_through_the_items_table(tmp_path):
    out = imported(tmp_path, {"item": "regular:17"}, {"item": "adversarial:3", "judge": "j2"},
                   {"item": "77aa00bb11cc22dd", "judge": "j1", "system_b": "original"}, items=ITEMS)
    j = out.judgments.set_index(["judge", "system_b"])
    assert j.loc[("j1", "m2"), "item_id"] == "3f2a9c0d11aa22bb"
    assert j.loc[("j1", "m2"), "pair_id"] == pairs.pair_id("3f2a9c0d11aa22bb", "m1", "m2")
    assert (j.loc[("j2", "m2"), "conversation_id"], j.loc[("j2", "m2"), "subset"]) == ("esconv-3", "adversarial")
    assert j.loc[("j1", "original"), "kind"] == "dataset-model"
    tableio.to_arrow(out.judgments, "judgments")
    tableio.to_arrow(out.pairs, "pairs")


@pytest.mark.parametrize("records,message", [
    ([{"item": "regular:18"}], r"line 2: field 'item' is 'regular:18', neither an item_id nor a release_key"),
    ([{"item": "regular:17", "subset": "adversarial"}],
     r"line 2: field 'subset' is 'adversarial' but item 'regular:17' has subset 'regular' in the items table"),
    ([{"item": "regular:17", "conversation": "17"}], r"line 2: field 'conversation' is '17' but item"),
    ([{"item": "regular:17", "order": "AB"}, {"item": "3f2a9c0d11aa22bb", "order": "AB"}],
     r"lines 2 and 3: .*LLM judge 'j1' gave two verdicts"),
])
def test_unknown_or_conflicting_item_keys_name_the_record(tmp_path, records, message):
    with pytest.raises(ji.JudgmentImportError, match=message):
        imported(tmp_path, *records, items=ITEMS)


def test_string_conversation_ids_and_defaults(tmp_path):
    out = imported(tmp_path, {"item": "q81", "conversation": "turn-1 of MT-bench 81"},
                   {"item": "q81", "conversation": "turn-1 of MT-bench 81", "judge": "j2"},
                   {"item": "q82", "judge": "j2"})
    j = out.judgments.set_index(["item_id", "judge"])
    assert j.loc[("q81", "j1"), "conversation_id"] == "turn-1 of MT-bench 81"
    assert j.loc[("q82", "j2"), "conversation_id"] == "q82"  # default: the item key
    assert set(j["subset"]) == {"regular"}
    jsonl = write_jsonl(tmp_path / "v.jsonl", [{**BASE, "item": 81, "conversation": 81}])
    row = ji.to_judgments(jsonl).iloc[0]
    assert (row["item_id"], row["conversation_id"]) == ("81", "81")  # a number key is its text
    tableio.to_arrow(out.judgments, "judgments")


def test_kind_from_sources_and_override(tmp_path):
    records = [{"system_b": "original"}, {"system_b": "human", "contributor_b": "c1", "judge": "j2"},
               {"system_a": "human", "system_b": "original", "judge_kind": "human", "judge": "r"},
               {"system_b": "expert", "contributor_b": "e1", "judge": "j3"}]
    p = imported(tmp_path, *records).pairs
    assert sorted(p["kind"]) == ["dataset-human", "dataset-model", "human-model", "human-model"]
    p = imported(tmp_path, *records, sources={"m1": "human", "original": "model"}).pairs
    assert sorted(p["kind"]) == ["human-human", "human-human", "human-model", "human-model"]
    with pytest.raises(ValueError, match="sources"):
        imported(tmp_path, *records, sources={"m1": "robot"})


def test_an_existing_pairs_table_orients_the_judgments(tmp_path):
    items, comp = items_and_completions(n_items=1, humans=1)
    design = pairs.design(comp, items, seed=1)
    p = design[design["kind"] == "model-model"].iloc[0]
    out = imported(tmp_path, {"item": p.item_id, "system_a": p.system_b, "system_b": p.system_a, "winner": "a",
                              "strength": "3"}, pairs=design)
    row = out.judgments.iloc[0]
    assert (row["pair_id"], row["system_a"], row["winner"], row["strength"]) == (p.pair_id, p.system_a, "b", 3)
    assert list(out.pairs["pair_id"]) == [p.pair_id]
    with pytest.raises(ji.JudgmentImportError, match=r"line 2: fields 'item', 'system_a', 'system_b' .* name no pair"):
        imported(tmp_path, {"item": p.item_id, "system_a": "m1", "system_b": "nobody"}, pairs=design)


def test_seconds_and_rationale_survive(tmp_path):
    out = imported(tmp_path, {"judge_kind": "human", "judge": "r", "seconds_spent": "12.5",
                              "rationale": 'A said "that sounds exhausting", B lectured'})
    assert out.human["seconds_spent"].iloc[0] == 12.5
    assert out.judgments["rationale"].iloc[0] == 'A said "that sounds exhausting", B lectured'
    assert math.isnan(imported(tmp_path, {"judge_kind": "human", "judge": "r"}).human["seconds_spent"].iloc[0])


def test_a_study_accepts_judgments_of_its_own_completions_only(tmp_path):
    items = pd.DataFrame({"item_id": ["i1"], "release_key": ["regular:0"], "cluster": ["7"], "subset": ["regular"]})
    completions = pd.DataFrame({"item_id": ["i1", "i1", "i1"], "system": ["gpt-4o", "original", "human"],
                                "contributor_id": [None, None, "w1"]})
    path = tmp_path / "votes.csv"
    path.write_text("item,system_a,system_b,contributor_b,judge,judge_kind,winner\n"
                    "regular:0,gpt-4o,human,w1,j1,llm,a\n")
    ji.check_completions(path, items, completions)
    path.write_text("item,system_a,system_b,contributor_b,judge,judge_kind,winner\n"
                    "regular:0,gpt-4o,human,w1,j1,llm,a\n"
                    "regular:0,gpt4o,original,,j1,llm,a\n")
    with pytest.raises(ji.JudgmentImportError, match=r"votes.csv, line 3: field 'system_a': item 'regular:0' has no "
                                                    r"completion 'gpt4o'"):
        ji.check_completions(path, items, completions)
    path.write_text("item,system_a,system_b,contributor_b,judge,judge_kind,winner\n"
                    "regular:0,gpt-4o,human,w9,j1,llm,a\n")
    with pytest.raises(ji.JudgmentImportError, match=r"line 2: field 'contributor_b'.*'human#w9'"):
        ji.check_completions(path, items, completions)


def test_two_completions_of_one_system_are_no_judgment(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text("item,system_a,contributor_a,system_b,contributor_b,judge,judge_kind,winner\n"
                    "q1,human,w1,human,w2,r1,human,a\n")
    with pytest.raises(ji.JudgmentImportError, match=r"votes.csv, line 2: fields 'system_a' and 'system_b' are both "
                                                    r"'human'"):
        ji.read(path)


# --- real shapes: not given stays not given ---------------------------------------------------

def test_verdicts_without_axis_marks_stay_unmarked(tmp_path):
    """combine turned "no mark in any order" into 0 (no clear advantage) on every axis."""
    row = combined(tmp_path, {}, {})
    assert all(pd.isna(row[c]) for c in AXIS_COLUMNS)
    out = imported(tmp_path, {"order": "AB", "axis_E": "a"}, {"order": "BA"})
    assert out.judgments.iloc[0]["axis_E"] == 1 and pd.isna(out.judgments.iloc[0]["axis_H"])
    flips = combine.flip_rates(out.combined, list(ji.AXES)).set_index("axis")
    assert flips.loc["E", "n_pairs"] == 0 and pd.isna(flips.loc["E", "flip_rate"])  # one order marked E


def test_a_record_without_an_order_has_an_unknown_order(tmp_path):
    """order defaulted to AB, so unordered votes fed the position audit as if shown A-first."""
    out = imported(tmp_path, {}, {"winner": "a"}, {**BASE, "judge": "r1", "judge_kind": "human"})
    assert out.verdicts["order"].isna().all() and out.verdicts["winner_shown"].isna().all()
    assert out.verdicts["shown_a"].isna().all() and out.human["order"].isna().all()
    tableio.to_arrow(out.verdicts, "judge_verdicts")
    tableio.to_arrow(out.judgments, "judgments")


def test_two_records_of_unknown_order_are_the_two_orders_and_a_third_is_refused(tmp_path):
    row = combined(tmp_path, {"order": ""}, {"order": "", "winner": "b"})
    assert row["status"] == "inconsistent" and pd.isna(row["winner"])  # opposite: no verdict
    with pytest.raises(ji.JudgmentImportError, match=r"lines 3 and 4: .*gave a third verdict"):
        imported(tmp_path, {}, {"order": "AB"}, {})
    with pytest.raises(ji.JudgmentImportError, match=r"lines 2 and 3: .*two verdicts .* with m1 shown first"):
        imported(tmp_path, {"order": "AB"}, {"order": "AB"})


def test_an_imported_llm_judge_may_tie_and_its_ties_stay_ties(tmp_path):
    row = combined(tmp_path, {"winner": "tie"}, {"winner": "tie"})
    assert (row["status"], row["n_orders"]) == ("tie", 2) and pd.isna(row["winner"]) and pd.isna(row["strength"])
    row = imported(tmp_path, {"winner": "tie"}).judgments.iloc[0]
    assert row["status"] == "tie" and pd.isna(row["winner"])  # one order, a tie: not a win for b
    row = combined(tmp_path, {"winner": "tie"}, {"winner": "a", "strength": "3"})
    assert (row["status"], row["winner"], row["strength"]) == ("ok", "a", 2)  # rule 2: ceil(3 / 2)


def test_a_human_win_without_a_strength_has_no_strength(tmp_path):
    """It was stored as strength_map["slight"] = 2, so a strength-less human vote weighed twice an LLM's."""
    out = imported(tmp_path, {"judge": "r1", "judge_kind": "human"},
                   {"judge": "r2", "judge_kind": "human", "winner": "b", "strength": "5"},
                   {"judge": "r3", "judge_kind": "human", "winner": "tie"})
    h = out.human.set_index("rater_id")
    assert pd.isna(h.loc["r1", "preference"]) and pd.isna(h.loc["r1", "strength"]) and h.loc["r1", "winner"] == "a"
    assert (h.loc["r2", "preference"], h.loc["r2", "strength"]) == (-2, 4)
    assert h.loc["r3", "preference"] == 0 and pd.isna(h.loc["r3", "winner"])


def test_an_answer_nobody_could_parse_is_counted_unparsed_never_a_choice(tmp_path):
    """25 of 999 verdicts of a real source were garbage: the format says so (winner "unparsed"), and the tables
    count them as the workflow's own unparsed answers are counted."""
    out = imported(tmp_path, {"winner": "unparsed", "order": "AB"}, {"winner": "unparsed", "order": "BA"},
                   {"item": "i2", "winner": "unparsed"}, {"item": "i2", "winner": "b", "strength": "4"})
    assert out.verdicts["parse_ok"].tolist().count(False) == 3 and out.verdicts["signed"].isna().sum() == 3
    assert out.verdicts.loc[~out.verdicts["parse_ok"], "parse_error"].str.contains("no verdict could be read").all()
    rows = out.judgments.set_index("item_id")
    assert rows.loc["i1", "status"] == "unparsed" and pd.isna(rows.loc["i1", "winner"])
    assert (rows.loc["i2", "status"], rows.loc["i2", "winner"]) == ("ok", "b")  # the order that was read decides
    assert out.source_rows("votes.csv")[0]["n_unparsed"] == 3


@pytest.mark.parametrize("record, message", [
    ({"winner": "unparsed", "judge_kind": "human", "judge": "r1"}, "a person's rating is a choice"),
    ({"winner": "unparsed", "strength": "3"}, "field 'strength' is '3' but the winner is unparsed"),
    ({"winner": "unparsed", "axis_E": "a"}, "field 'axis_E' is 'a' but the winner is unparsed"),
])
def test_an_unparsed_answer_has_no_choice_in_it(tmp_path, record, message):
    with pytest.raises(ji.JudgmentImportError, match=message):
        imported(tmp_path, record)
