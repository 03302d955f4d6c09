"""The human review of the safety screen's flags (heart.completions.safety_review, HEART paper §6): the reviews
file as an outsider writes it (tests/fixtures/safety/reviews.csv, worked by hand in its README), the state of
each flag, and what a confirmed flag leaves out (completions.confirmed_flags)."""

import pandas as pd
import pytest

from heart.completions import safety_review
from support import FIXTURES

REVIEWS = FIXTURES / "safety/reviews.csv"


def completions():
    rows = [("i1", "model-a", None), ("i2", "model-a", None), ("i3", "human", "w7"), ("i4", "model-b", None),
            ("i1", "original", None), ("i5", "model-b", None)]
    return pd.DataFrame([{"item_id": i, "system": s, "contributor_id": c, "text": f"reply {i} {s}"}
                         for i, s, c in rows])


def screen():
    """The screen's rows: i1/model-a flagged twice (two categories), i2/model-a, i3/human#w7 and i4/model-b
    flagged once, i5/model-b screened and not flagged, i1/original not screened (no text)."""
    def row(i, s, c, category, flagged, status="screened"):
        return {"item_id": i, "system": s, "contributor_id": c, "screen": "lexicon", "screen_version": "1",
                "category": category, "status": status, "score": None if flagged is None else float(flagged),
                "flagged": flagged, "evidence": None}
    return pd.DataFrame([row("i1", "model-a", None, "self-harm", True),
                         row("i1", "model-a", None, "self-harm/instructions", True),
                         row("i2", "model-a", None, "violence", True),
                         row("i3", "human", "w7", "harassment", True),
                         row("i4", "model-b", None, "self-harm", True),
                         row("i5", "model-b", None, "self-harm", False),
                         row("i1", "original", None, "self-harm", None, "no_text")])


def test_the_outsiders_reviews_file_reads_as_written():
    r = safety_review.read_reviews(REVIEWS, completions())
    assert r["decision"].tolist() == ["confirm", "confirm", "clear", "confirm", "clear"]
    assert "\n" in r.loc[1, "reason"]  # a reason with a line break is kept whole
    assert pd.isna(r.loc[1, "seconds_spent"]) and r.loc[0, "seconds_spent"] == 31.5  # not filled stays missing
    assert r.loc[4, "contributor_id"] == "w7"


def test_each_flag_is_confirmed_cleared_disputed_or_unreviewed_as_worked_by_hand():
    flags = safety_review.flags(screen(), safety_review.read_reviews(REVIEWS, completions())).set_index(
        ["item_id", "system"])
    assert flags["review"].to_dict() == {("i1", "model-a"): "confirmed", ("i2", "model-a"): "disputed",
                                         ("i3", "human"): "cleared", ("i4", "model-b"): "unreviewed"}
    assert flags.loc[("i1", "model-a"), "categories"] == "self-harm, self-harm/instructions"
    assert flags[["n_confirmed", "n_cleared"]].loc[("i2", "model-a")].tolist() == [1, 1]
    assert (flags["left_out_of"] == "").all()  # the default: kept, and reported
    assert pd.isna(flags.loc[("i1", "model-a"), "contributor_id"])
    assert flags.loc[("i3", "human"), "contributor_id"] == "w7"


def test_a_confirmed_or_disputed_flag_is_left_out_where_the_study_says():
    reviews = safety_review.read_reviews(REVIEWS, completions())
    flags = safety_review.flags(screen(), reviews, ["bundle", "rating_pages"])
    by = flags.set_index(["item_id", "system"])["left_out_of"].to_dict()
    assert by[("i1", "model-a")] == by[("i2", "model-a")] == "rating pages, bundle"
    assert by[("i3", "human")] == by[("i4", "model-b")] == ""  # cleared, and not yet reviewed: kept
    assert safety_review.left_out(flags, "bundle") == {("i1", "model-a", ""), ("i2", "model-a", "")}
    only = safety_review.flags(screen(), reviews, ["bundle"])
    assert safety_review.left_out(only, "rating_pages") == set()
    with pytest.raises(ValueError, match="'web' is not one of rating_pages, bundle"):
        safety_review.flags(screen(), reviews, ["web"])


def test_the_rating_pages_lose_the_pairs_of_a_left_out_completion_and_its_quality_checks():
    screen_rows = pd.concat([screen(), screen().iloc[[0]].assign(system="original")], ignore_index=True)
    reviews = pd.DataFrame([{"item_id": "i1", "system": s, "contributor_id": "", "reviewer_id": "r",
                             "decision": "confirm", "reason": "harmful"} for s in ("model-a", "original")])
    flags = safety_review.flags(screen_rows, reviews, ["rating_pages"])
    items = pd.DataFrame({"item_id": ["i1", "i2"], "original_reply": ["o1", "o2"]})
    pairs = pd.DataFrame([("i1", "model-a", None, "model-b", None), ("i1", "model-b", None, "human", "w7"),
                          ("i2", "model-a", None, "model-b", None)],
                         columns=["item_id", "system_a", "contributor_a", "system_b", "contributor_b"])
    kept_items, kept_pairs = safety_review.for_rating(items, pairs, flags)
    assert kept_pairs.index.tolist() == [1, 2]  # i1/model-a's pair is gone, i2/model-a's (not flagged) stays
    assert kept_items["original_reply"].isna().tolist() == [True, False]  # no quality check shows i1's original
    same_items, same_pairs = safety_review.for_rating(items, pairs, safety_review.flags(screen_rows, reviews))
    assert len(same_pairs) == 3 and same_items is items


def test_the_report_counts_flags_per_system_by_review_state():
    flags = safety_review.flags(screen(), safety_review.read_reviews(REVIEWS, completions()))
    report = safety_review.per_system(screen(), flags).set_index("system")
    assert report.loc["model-a", ["completions", "flagged", "confirmed", "disputed"]].tolist() == [2, 2, 1, 1]
    assert report.loc["model-b", ["completions", "flagged", "unreviewed"]].tolist() == [2, 1, 1]
    assert report.loc["human", "cleared"] == 1
    assert "original" not in report.index  # nothing screened there: no text


def test_a_review_of_a_completion_the_screen_no_longer_flags_is_counted_apart():
    reviews = safety_review.read_reviews(REVIEWS, completions())
    assert safety_review.unflagged_reviews(screen().iloc[:2], reviews) == 3  # only i1/model-a is flagged now


@pytest.mark.parametrize("line, message", [
    ("i1,model-a,,rev-C,,because", r"line 2: field 'decision' is empty: say confirm or clear"),
    ("i1,model-a,,rev-C,maybe,because", r"line 2: field 'decision' is 'maybe'; expected confirm or clear"),
    ("i1,model-a,,rev-C,confirm,", r"line 2: field 'reason' is empty"),
    ("i1,modle-a,,rev-C,confirm,because", r"line 2: .*name no completion of the run \(system 'modle-a' .*did you "
                                          r"mean 'model-a'\?\)"),
    ("i3,human,w8,rev-C,confirm,because", r"line 2: .*\(i3, human, w8\) name no completion"),
    ("i1,model-a,,rev-C,confirm,because,fast", r"line 2: field 'seconds_spent' is 'fast'"),
])
def test_a_bad_review_names_the_file_the_line_and_the_field(tmp_path, line, message):
    path = tmp_path / "reviews.csv"
    header = "item_id,system,contributor_id,reviewer_id,decision,reason" + (",seconds_spent" if line.count(",") == 6
                                                                              else "")
    path.write_text(f"{header}\n{line}\n")
    with pytest.raises(ValueError, match=message) as err:
        safety_review.read_reviews(path, completions())
    assert str(path) in str(err.value)


def test_a_reviewer_who_reviewed_one_completion_twice_is_an_error_naming_both_lines(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text("item_id,system,reviewer_id,decision,reason\ni1,model-a,r1,confirm,harmful\n"
                    "i2,model-a,r1,clear,fine\ni1,model-a,r1,clear,changed my mind\n")
    with pytest.raises(ValueError, match=r"lines 2 and 4: reviewer 'r1' reviewed the same completion twice"):
        safety_review.read_reviews(path, completions())


def test_no_flag_at_all_leaves_everything_in():
    """A run whose screen flags nothing (the usual case): an empty flags table, read back from its Parquet file,
    leaves every pair on the rating pages and nothing out of the bundle."""
    from heart.common import tableio

    flags = safety_review.flags(screen().assign(flagged=False), None, ["rating_pages", "bundle"])
    assert flags.empty
    pairs = pd.DataFrame([("i1", "m", None, "n", None)],
                         columns=["item_id", "system_a", "contributor_a", "system_b", "contributor_b"])
    items = pd.DataFrame({"item_id": ["i1"], "original_reply": ["o1"]})
    for table in (flags, tableio.to_arrow(flags, "safety_flags").to_pandas()):
        assert safety_review.left_out(table, "bundle") == set()
        assert len(safety_review.for_rating(items, pairs, table)[1]) == 1
