"""Malformed user-supplied CSV files: every failure names the file, the line and the field (hardening).

The three formats of ``resources/human/README.md`` share one strict reader (heart.common.records.read_records);
each case below is a file a person could plausibly hand the workflow.
"""

import re

import pandas as pd
import pytest

from heart.completions import imported
from heart.tagging import spot_checks
from heart.judging import human_judgments
from heart.common import tableio

TAXONOMY = {"strategies": [{"key": "affirmation"}, {"key": "self_care"}]}
ITEMS = pd.DataFrame({"item_id": ["i1", "i2"]})
TAGGED = pd.DataFrame({"item_id": ["i1", "i1", "i2"], "system": ["m", "human", "m"],
                       "contributor_id": [None, "c1", None]})

HEADERS = {
    "completions": b"item_id,contributor_id,text\n",
    "judgments": b"rater_id,item_id,shown_a,shown_b,choice,seconds_spent\n",
    "labels": b"item_id,system,contributor_id,strategy,present\n",
}
GOOD_ROW = {
    "completions": b"i1,c1,That sounds hard.\n",
    "judgments": b"r1,i1,m1,m2,2,30\n",
    "labels": b"i1,m,,affirmation,1\n",
}


def read(kind, path):
    if kind == "completions":
        return imported.import_humans(path, ITEMS)
    if kind == "judgments":
        return human_judgments.read(path)
    return spot_checks.read_spot_checks(path, TAXONOMY, completions=TAGGED)


def fails(tmp_path, kind, content: bytes, expected: str):
    path = tmp_path / f"{kind}.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError) as err:
        read(kind, path)
    msg = str(err.value)
    assert msg.startswith(str(path)), msg  # the file, always
    assert re.search(expected, msg), msg
    return msg


# --- the same problems in every format -----------------------------------------------------------

COMMON = {
    "utf16": (lambda h, r: (h + r).decode().encode("utf-16"), r"looks like UTF-16; save it as UTF-8"),
    "latin1_byte": (lambda h, r: h + r + r.replace(b"hard", b"h\xe4rd").replace(b"30", b"3\xe4")
                    .replace(b"affirmation,1", b"affirmation,\xe4"), r", line 3: not valid UTF-8 \(byte \d+"),
    "nul_byte": (lambda h, r: h + r.replace(b"i1", b"i\x001", 1), r", line 2: field 'item_id' contains the control "
                 r"character U\+0000"),
    "c1_control": (lambda h, r: h + r.replace(b"i1", "i\u009b1".encode(), 1),  # CSI: drives a terminal
                   r", line 2: field 'item_id' contains the control character U\+009B"),
    "utf16_be_no_bom": (lambda h, r: (h + r).decode().encode("utf-16-be"), r"looks like UTF-16; save it as UTF-8"),
    "open_quote_truncated": (lambda h, r: h + r + b'i2,"c2,unterminated\n', r", line 3: not readable as CSV .*"
                             r"truncated"),
    "extra_field": (lambda h, r: h + r + r.rstrip(b"\n") + b",extra\n", r", line 3: has \d+ fields, the header \d+;"
                    r" .*double-quoted"),
    "missing_field": (lambda h, r: h + r.rsplit(b",", 1)[0] + b"\n", r", line 2: has \d+ fields, the header \d+"),
    "missing_column": (lambda h, r: h.replace(b"item_id,", b"", 1) + r.split(b",", 1)[1],
                       r": missing column\(s\) item_id; expected "),
    "repeated_column": (lambda h, r: h.rstrip(b"\n") + b",item_id\n" + r.rstrip(b"\n") + b",i1\n",
                        r": column\(s\) 'item_id' appear more than once"),
    "empty_file": (lambda h, r: b"", r": is empty; expected a header line"),
    "blank_lines_only": (lambda h, r: b"\n\n  \n", r": missing column\(s\)|: is empty"),
}


@pytest.mark.parametrize("kind", sorted(HEADERS))
@pytest.mark.parametrize("case", sorted(COMMON))
def test_common_problems_are_named(tmp_path, kind, case):
    make, expected = COMMON[case]
    fails(tmp_path, kind, make(HEADERS[kind], GOOD_ROW[kind]), expected)


@pytest.mark.parametrize("kind", sorted(HEADERS))
def test_a_byte_order_mark_and_a_multiline_quoted_field_are_fine(tmp_path, kind):
    path = tmp_path / f"{kind}.csv"
    path.write_bytes(b"\xef\xbb\xbf" + HEADERS[kind] + GOOD_ROW[kind])
    read(kind, path)
    if kind == "completions":  # a reply over two lines: the record's line is where it starts
        path.write_bytes(HEADERS[kind] + b'i1,c1,"Two\nlines"\ni9,c2,unknown item\n')
        table, violations = read(kind, path)
        assert table["text"].tolist() == ["Two\nlines"] and violations["line"].tolist() == [4]
        # separators that str.splitlines would break at are ordinary characters of a field
        path.write_bytes(HEADERS[kind] + "i1,c1,a\u2028b\u2029d\ni2,c1,fine\n".encode())
        table, violations = read(kind, path)
        assert table["text"].tolist() == ["a\u2028b\u2029d", "fine"] and violations.empty


def test_unknown_columns_are_refused_where_a_typo_would_change_the_meaning(tmp_path):
    # a misspelt qc_expected would silently turn quality checks into judgments
    fails(tmp_path, "judgments", HEADERS["judgments"].rstrip(b"\n") + b",qc_expect\n" + b"r1,i1,m1,m2,2,30,A\n",
          r": unknown column\(s\) 'qc_expect'; expected rater_id, .* \(\+ optional pair_id, rationale, qc_expected, "
          r"axis_H, axis_E, axis_A, axis_R, axis_T\)")
    fails(tmp_path, "labels", b"item_id,system,strategy,present,contributor\ni1,m,affirmation,1,c1\n",
          r": unknown column\(s\) 'contributor'")
    # the completions format documents other columns as ignored (e.g. seconds_spent)
    path = tmp_path / "c.csv"
    path.write_bytes(b"item_id,contributor_id,text,seconds_spent\ni1,c1,Hi there.,31\n")
    assert len(read("completions", path)[0]) == 1


# --- values, per format ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind, row, expected", [(k, r, e) for k, cases in {"judgments": [
    (b"r1,i1,m1,m2,0,30", r"line 2: field 'choice' is '0'; expected 1-5"),
    (b"r1,i1,m1,m2,2.5,30", r"line 2: field 'choice' is '2.5'"),
    (b"r1,i1,m1,m2,1e400,30", r"line 2: field 'choice' is '1e400'"),
    (b"r1,i1,m1,m2,two,30", r"line 2: field 'choice' is 'two'"),
    (b"r1,i1,m1,m2,2,NaN", r"line 2: field 'seconds_spent' is 'NaN'; expected a number of seconds from 0 to 86400"),
    (b"r1,i1,m1,m2,2,1e300", r"line 2: field 'seconds_spent' is '1e300'"),
    (b"r1,i1,m1,m2,2,", r"line 2: field 'seconds_spent' is ''"),
    (b"\xe2\x80\x8b,i1,m1,m2,2,30", r"line 2: field 'rater_id' is empty"),
    (b"r1,i1,m1,m2,2,30\nr1,i1,m1,m2,4,20", r"lines 2 and 3: .*rater 'r1' judged the same pair of an item twice"),
    # found by a second review: accepted before
    (b"r1,i1,m1,m2,\xef\xbc\x95,30", r"line 2: field 'choice' is '\uff15'; expected 1-5"),  # a full-width 5
    (b"r1,i1,m1,m2,3.0,30", r"line 2: field 'choice' is '3.0'"),
    (b"r1,i1,m1,m2,+2,30", r"line 2: field 'choice' is '\+2'"),
    (b"r1,i1,m1,m2,2,1_000", r"line 2: field 'seconds_spent' is '1_000'"),
    (b"r1,i1,m1,m2,2,1e3", r"line 2: field 'seconds_spent' is '1e3'"),
    (b"r1,i1,m1,m2,2,30\nR1,i1,m1,m2,4,20", r"lines 2 and 3: field 'rater_id' has 'r1' and 'R1', "
                                            r"which differ only in case"),
    (b"r1,i1,m1,m2,2,30\n r1 ,i1,m1,m2,4,20", r"lines 2 and 3: .*rater 'r1' judged the same pair"),
    (b"r1,i1,m1,M2,2,30\nr2,i1,m2,m1,4,20", r"lines 2 and 3: fields 'shown_b' and 'shown_a' have 'M2' and 'm2'"),
], "completions": [
    (b"i1,c1,Hello.\ni1,C1,Hi.", r"lines 2 and 3: field 'contributor_id' has 'c1' and 'C1'"),
], "labels": [
    (b"i3,m,,affirmation,1", r"line 2: fields 'item_id', 'system', 'contributor_id' \(i3, m, -\) name no completion"),
    (b"i1,human,c9,affirmation,1", r"line 2: .*\(i1, human, c9\) name no completion"),
    (b",m,,affirmation,1", r"line 2: field 'item_id' is empty"),
    (b"i1,m,,affirmation,1\ni1,m,,affirmation,0",
     r"lines 2 and 3: the same completion and strategy are labelled twice"),
]}.items() for r, e in cases])
def test_bad_values_are_named(tmp_path, kind, row, expected):
    fails(tmp_path, kind, HEADERS[kind] + row + b"\n", expected)


def test_ids_are_normalised_so_a_contributor_cannot_repeat_a_context_in_disguise(tmp_path):
    path = tmp_path / "c.csv"
    path.write_bytes(HEADERS["completions"] + "i1,c1,Hello.\ni1, c1\u200b ,Hi again.\ni1,c\u20601,Hi.\n"
                     "i1,\uff43\uff11,Full width.\n".encode())
    table, violations = read("completions", path)
    assert table["contributor_id"].tolist() == ["c1"]
    assert violations[["line", "problem"]].values.tolist() == [[k, "contributor already completed this context"]
                                                                for k in (3, 4, 5)]
    # the digits of a number may be padded with spaces or tabs, nothing else
    judged = tmp_path / "j.csv"
    judged.write_bytes(HEADERS["judgments"] + b"r1,i1,m1,m2, 2\t,30 \n")
    assert read("judgments", judged)[["choice", "seconds_spent"]].values.tolist() == [[2, 30.0]]
    judged.write_bytes(HEADERS["judgments"] + "r1,i1,m1,m2,\u00a02,30\n".encode())
    with pytest.raises(ValueError, match=re.escape("field 'choice' is '\\xa02'")):
        read("judgments", judged)


@pytest.mark.parametrize("kind", sorted(HEADERS))
def test_a_field_too_long_for_csv_is_named_as_such(tmp_path, kind):
    row = GOOD_ROW[kind].replace(b"i1", b'"' + b"x" * 200_000 + b'"', 1)
    fails(tmp_path, kind, HEADERS[kind] + row, r", line 2: a field is longer than 131,072 characters")


def test_a_quality_check_side_must_be_a_or_b_and_checks_may_repeat(tmp_path):
    header = b"rater_id,item_id,shown_a,shown_b,choice,seconds_spent,qc_expected\n"
    fails(tmp_path, "judgments", header + b"r1,i1,m1,m2,2,30,a\n", r"line 2: field 'qc_expected' is 'a'; expected A, B")
    path = tmp_path / "qc.csv"
    path.write_bytes(header + b"r1,qc1,good,bad,1,20,A\nr1,qc1,good,bad,2,25,A\n")
    assert len(read("judgments", path)) == 2


def test_blank_human_completions_are_listed_as_violations(tmp_path):
    path = tmp_path / "c.csv"
    path.write_bytes(HEADERS["completions"] + "i1,c1,\u200b\u200d \ni2,c2,Fine.\ni2,\u2060,Fine too.\n".encode())
    table, violations = read("completions", path)
    assert violations[["line", "problem"]].values.tolist() == [[2, "empty text"], [4, "empty contributor_id"]]
    assert table["contributor_id"].tolist() == ["c2"]


def test_a_failing_script_leaves_none_of_its_tables(tmp_path):
    """write_tables checks every table before any is moved into place: none or all."""
    good = pd.DataFrame({"rater_id": ["r1"], "n_judgments": [1], "n_qc": [0], "qc_failed": [0], "qc_fail_share": [None],
                         "median_seconds": [3.0], "majority_agreement": [None], "n_compared": [0],
                         "outlier_q": [None], "excluded": [False], "reason": [""]})
    bad = good.drop(columns="reason")
    with pytest.raises(tableio.TableSchemaError):
        tableio.write_tables([(good, tmp_path / "a.parquet", "human_raters"),
                              (bad, tmp_path / "b.parquet", "human_raters")])
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    tableio.write_tables([(good, tmp_path / "a.parquet", "human_raters"),
                          (good, tmp_path / "b.parquet", "human_raters")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet"]


@pytest.mark.parametrize("blocked", ["first", "last"])
def test_a_failing_move_takes_back_the_tables_already_moved(tmp_path, monkeypatch, blocked):
    """A move that fails (here: a full disk on one rename) leaves every path as it was before the call."""
    import errno
    import os

    good = pd.DataFrame({"rater_id": ["r1"], "n_judgments": [1], "n_qc": [0], "qc_failed": [0],
                         "qc_fail_share": [None], "median_seconds": [3.0], "majority_agreement": [None],
                         "n_compared": [0],
                         "outlier_q": [None], "excluded": [False], "reason": [""]})
    paths = [tmp_path / f"{k}.parquet" for k in ("a", "b", "c")]
    tableio.write_table(good.assign(reason="old"), paths[1], "human_raters")  # an older b exists, a and c do not
    target = paths[0] if blocked == "first" else paths[2]
    real = os.replace

    def replace(src, dst):
        if str(dst) == str(target):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="No space"):
        tableio.write_tables([(good, p, "human_raters") for p in paths])
    monkeypatch.setattr(os, "replace", real)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.parquet"]  # no temporary or backup file either
    assert tableio.read_table(paths[1])["reason"].tolist() == ["old"]
    # a directory in the way of the first table: the same
    paths[0].mkdir()
    (paths[0] / "x").write_text("")
    with pytest.raises(OSError):
        tableio.write_tables([(good, p, "human_raters") for p in paths])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet"]
    assert tableio.read_table(paths[1])["reason"].tolist() == ["old"] and not paths[2].exists()


def test_an_undone_move_puts_back_a_symbolic_link_too(tmp_path, monkeypatch):
    import errno
    import os

    good = pd.DataFrame({"rater_id": ["r1"], "n_judgments": [1], "n_qc": [0], "qc_failed": [0],
                         "qc_fail_share": [None], "median_seconds": [3.0], "majority_agreement": [None],
                         "n_compared": [0],
                         "outlier_q": [None], "excluded": [False], "reason": [""]})
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    a.symlink_to(tmp_path / "nowhere.parquet")  # a dangling link was there before
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda s, d: (_ for _ in ()).throw(OSError(errno.EIO, "I/O error"))
                        if str(d) == str(b) else real(s, d))
    with pytest.raises(OSError, match="I/O error"):
        tableio.write_tables([(good, a, "human_raters"), (good, b, "human_raters")])
    assert a.is_symlink() and os.readlink(a) == str(tmp_path / "nowhere.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet"]
