"""The authors' released judging as a judge kind (heart.judging.kinds.release): its verdict strings read as the
release's code reads them (Hippocratic-AI-Research/HEART, bradley-terry.py), and its answers as verdict rows."""

import pandas as pd
import pytest

from heart.judging import kinds, verdicts
from heart.judging.kinds import release

RELEASE_STRINGS = [
    ("A0493+++", ("A0493", 3)),       # the release's own example: a model id and three plus signs
    ("B1207", ("B1207", 1)),          # no plus sign: strength 1
    ("gpt-4o_mini.v2+++++", ("gpt-4o_mini.v2", 5)),
    ("A+++++++", ("A", 7)),           # more than five: the release gives it the same soft score as five
    (" B++ ", ("B", 2)),              # surrounding space
    ("A++ because it is warmer", ("A", 2)),  # read from the start, the rest ignored (as the release does)
    ("Error", (None, 0)), ("", (None, 0)), (None, (None, 0)), ("+++", (None, 0)),
]


@pytest.mark.parametrize("text, expected", RELEASE_STRINGS)
def test_verdict_strings_read_as_the_release_reads_them(text, expected):
    assert release.parse_verdict(text) == expected


def test_the_kind_is_registered_and_its_schema_asks_the_six_categories():
    assert kinds.kind("release") is release
    schema = release.response_schema()
    assert schema["properties"]["evaluation"]["required"] == list(release.CATEGORIES)
    assert len(release.CATEGORIES) == 6 and release.OVERALL == "overall_eq"


def answer(evaluation, rationale="B is warmer."):
    return {"parsed": {"rationale": rationale, "evaluation": evaluation}, "parse_error": None,
            "text": "{...}", "cache_key": "k", "from_cache": False}


def test_answers_become_verdict_rows_overall_eq_the_verdict_and_no_axis_marked():
    pairs = pd.DataFrame({"pair_id": ["p1"], "system_a": ["m1"], "system_b": ["m2"]})
    full = dict.fromkeys(release.CATEGORIES, "A+")
    results = {"p1:AB": answer({**full, "overall_eq": "B++++"}), "p1:BA": answer({**full, "overall_eq": "C+"})}
    read = release.answers(None, pairs, results)
    assert read["p1:AB"]["parsed"]["winner"] == "B" and read["p1:AB"]["parsed"]["strength"] == 4
    assert read["p1:BA"]["parsed"] is None and "neither shown reply" in read["p1:BA"]["parse_error"]
    table = verdicts.verdict_table(pairs, "release-judge", read, list("HEART"))
    ab = table.set_index("order").loc["AB"]
    assert ab["signed"] == -4 and ab["parse_ok"]  # B shown second in order AB is system m2: m2 won
    assert table[[f"axis_{k}" for k in "HEART"]].isna().all().all()
    assert not table.set_index("order").loc["BA", "parse_ok"]
    # an answer the engine could not parse stays unparsed with the engine's reason
    failed = {"p1:AB": {**answer({}), "parsed": None, "parse_error": "not JSON"}}
    assert release.answers(None, pairs, failed)["p1:AB"]["parse_error"] == "not JSON"
