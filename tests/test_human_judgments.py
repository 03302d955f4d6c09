"""Human pairwise judgments: the file format, quality control, orientation. The data here are SYNTHETIC,
written by the tests to exercise the import; they are not human judgments."""

import pandas as pd
import pytest

from heart import human_judgments as hj
from heart import pairs
from test_judging import items_and_completions

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
                           f"r1,{p.item_id},{b},{a},2,30,,\n"  # swapped: the shown A (= system_b) slightly
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
