"""Human pairwise judgments: the file format, quality control, orientation. The data here are SYNTHETIC,
written by the tests to exercise the import; they are not human judgments."""

import pandas as pd
import pytest

from heart.judging import human_judgments as hj
from heart.items import item_table as items_mod
from heart.judging import pairs
from support.judging import items_and_completions

HEADER = "rater_id,item_id,shown_a,shown_b,choice,seconds_spent,rationale,qc_expected\n"
STRENGTHS = {"slight": 2, "significant": 4}


@pytest.fixture
def design():
    items, comp = items_and_completions(n_items=2, humans=2)
    return pairs.design(comp, items, seed=1)


def write(tmp_path, body):
    path = tmp_path / "judgments.csv"
    path.write_text(HEADER + body)
    return path


def test_orientation_of_the_five_point_choice(tmp_path, design):
    p = design.iloc[0]
    ref = lambda s, c: s if pd.isna(c) else f"{s}#{c}"  # noqa: E731
    a, b = ref(p.system_a, p.contributor_a), ref(p.system_b, p.contributor_b)
    path = write(tmp_path, f"r1,{p.item_id},{a},{b},1,30,,\n"  # shown as in the pair: A much better
                           f"r3,{p.item_id},{b},{a},2,30,,\n"  # swapped: the shown A (= system_b) slightly
                           f"r2,{p.item_id},{a},{b},3,30,same,\n")  # about the same
    raw = hj.read(path)
    raters = hj.quality_control(raw, 0.5, 5, 900)
    out = hj.orient(raw, design, raters, STRENGTHS, path)
    assert out["pair_id"].eq(p.pair_id).all()
    assert list(out["preference"]) == [2, -1, 0]
    assert [None if pd.isna(w) else w for w in out["winner"]] == ["a", "b", None]
    assert list(out["strength"].astype("object")) == [4, 2, pd.NA]
    assert list(out["order"]) == ["AB", "BA", "AB"]


def test_quality_control_excludes_and_says_why(tmp_path, design):
    p = design.iloc[0]
    a = p.system_a if pd.isna(p.contributor_a) else f"{p.system_a}#{p.contributor_a}"
    b = p.system_b if pd.isna(p.contributor_b) else f"{p.system_b}#{p.contributor_b}"
    rows = [f"good,{p.item_id},{a},{b},2,40,,",
            "good,qc1,x,y,1,40,,A", "good,qc2,x,y,5,40,,B",
            f"sloppy,{p.item_id},{a},{b},2,40,,",
            "sloppy,qc1,x,y,5,40,,A", "sloppy,qc2,x,y,4,40,,B",  # 1 of 2 failed: 50 % -> out
            f"hasty,{p.item_id},{a},{b},2,1,,", "hasty,qc1,x,y,1,2,,A"]
    raw = hj.read(write(tmp_path, "\n".join(rows) + "\n"))
    raters = hj.quality_control(raw, 0.5, 5, 900).set_index("rater_id")
    assert not raters.loc["good", "excluded"] and raters.loc["good", "qc_fail_share"] == 0
    assert raters.loc["sloppy", "excluded"] and "failed 1 of 2 quality checks" in raters.loc["sloppy", "reason"]
    assert raters.loc["hasty", "excluded"] and "median 1.5 s" in raters.loc["hasty", "reason"]
    out = hj.orient(raw, design, raters.reset_index(), STRENGTHS, "f")
    assert set(out["rater_id"]) == {"good"} and len(out) == 1  # quality-check rows are not judgments


@pytest.mark.parametrize("row,message", [
    ("r1,i0,m1,m2,6,30,,", r"line 2: field 'choice' is '6'; expected 1-5"),
    ("r1,i0,m1,m2,2,-3,,", r"line 2: field 'seconds_spent'"),
    (",i0,m1,m2,2,3,,", r"line 2: field 'rater_id' is empty"),
    ("r1,i0,m1,m1,2,3,,", r"line 2: fields 'shown_a' and 'shown_b' name the same completion"),
    ("r1,i0,m1,m2,2,3,,C", r"line 2: field 'qc_expected' is 'C'"),
])
def test_bad_rows_name_file_row_and_field(tmp_path, row, message):
    path = write(tmp_path, row + "\n")
    with pytest.raises(hj.HumanJudgmentError, match=message) as err:
        hj.read(path)
    assert str(path) in str(err.value)


def test_unknown_pair_and_missing_column(tmp_path, design):
    path = write(tmp_path, "r1,i0,m1,nobody,2,30,,\n")
    raw = hj.read(path)
    with pytest.raises(hj.HumanJudgmentError, match=r"line 2: fields 'item_id', 'shown_a', 'shown_b'"):
        hj.orient(raw, design, hj.quality_control(raw, 0.5, 5, 900), STRENGTHS, path)
    bad = tmp_path / "b.csv"
    bad.write_text("rater_id,item_id\nr,i\n")
    with pytest.raises(hj.HumanJudgmentError, match="missing column.*shown_a"):
        hj.read(bad)


def _refs(p):
    ref = lambda s, c: s if pd.isna(c) else f"{s}#{c}"  # noqa: E731
    return ref(p.system_a, p.contributor_a), ref(p.system_b, p.contributor_b)


def _items(design):
    ids = sorted(design["item_id"].unique())
    return pd.DataFrame({"item_id": ids, "release_key": [f"regular:{k + 1}" for k in range(len(ids))],
                         "subset": "regular"})


def test_item_id_may_be_a_release_key(tmp_path, design):
    items = _items(design)
    p, q = design.iloc[0], design[design["item_id"] != design.iloc[0]["item_id"]].iloc[0]
    key = dict(zip(items["item_id"], items["release_key"]))
    (a, b), (c, d) = _refs(p), _refs(q)
    path = write(tmp_path, f"r1,{key[p.item_id]},{a},{b},1,30,,\n"  # by release key
                           f"r1,{q.item_id},{d},{c},4,30,,\n"  # by item_id: still accepted
                           "r1,anything,x,y,1,30,,A\n")  # a quality check keeps its free item_id
    raw = hj.read(path)
    out = hj.orient(raw, design, hj.quality_control(raw, 0.5, 5, 900), STRENGTHS, path, items=items)
    assert list(out["pair_id"]) == [p.pair_id, q.pair_id]
    assert list(out["preference"]) == [2, 1] and list(out["order"]) == ["AB", "BA"]
    resolved = hj.resolve_items(raw, items, path)
    assert list(resolved["item_id"]) == [p.item_id, q.item_id, "anything"]
    assert list(raw["item_id"])[0] == key[p.item_id]  # the read table is left as it was


def test_release_key_errors_name_file_line_and_field(tmp_path, design):
    items = _items(design)
    p = design.iloc[0]
    a, b = _refs(p)
    key = dict(zip(items["item_id"], items["release_key"]))[p.item_id]
    path = write(tmp_path, f"r1,{p.item_id},{a},{b},1,30,,\nr1,regular:99,{a},{b},1,30,,\n")
    raw = hj.read(path)
    with pytest.raises(hj.HumanJudgmentError, match=r"line 3: field 'item_id' is 'regular:99', neither an item_id "
                                                     r"nor a release_key") as err:
        hj.orient(raw, design, hj.quality_control(raw, 0.5, 5, 900), STRENGTHS, path, items=items)
    assert str(path) in str(err.value)
    path = write(tmp_path, f"r1,{p.item_id},{a},{b},1,30,,\nr1,{key},{a},{b},2,30,,\n")  # one item, two keys
    raw = hj.read(path)
    with pytest.raises(hj.HumanJudgmentError, match=r"lines 2 and 3: rater 'r1' judged the same shown pair of an "
                                                     r"item twice \(field 'item_id' names the item by two keys\)"):
        hj.orient(raw, design, hj.quality_control(raw, 0.5, 5, 900), STRENGTHS, path, items=items)
    # without the items table a release key is simply an unknown item (as before)
    path = write(tmp_path, f"r1,{key},{a},{b},1,30,,\n")
    raw = hj.read(path)
    with pytest.raises(hj.HumanJudgmentError, match=r"line 2: fields 'item_id', 'shown_a', 'shown_b'"):
        hj.orient(raw, design, hj.quality_control(raw, 0.5, 5, 900), STRENGTHS, path)


def test_item_keys_must_name_one_item_each():
    items = pd.DataFrame({"item_id": ["i0", "i1", "i2"], "release_key": ["regular:1", "regular:1", None]})
    with pytest.raises(ValueError, match=r"key 'regular:1' names two items \('i0' and 'i1'\)"):
        items_mod.lookup(items)
    assert items_mod.lookup(items.iloc[[0, 2]]) == {"i0": "i0", "i2": "i2", "regular:1": "i0"}
    assert items_mod.lookup(items[["item_id"]]) == {"i0": "i0", "i1": "i1", "i2": "i2"}
