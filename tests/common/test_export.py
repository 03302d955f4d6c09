"""Tables for people: spreadsheet-safe CSV and \\input-safe LaTeX (heart.common.export)."""

import csv

import pandas as pd
import pytest

from heart.common import export


@pytest.mark.parametrize("cell,shown", [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("+SUM(A1:A2)", "'+SUM(A1:A2)"),
    ("-2+3", "'-2+3"),
    ("@SUM(1)", "'@SUM(1)"),
    ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"),
    ("-3.2", "-3.2"),  # a plain number cannot be a formula
    ("+4", "+4"),
    ("-1e-05", "-1e-05"),
    ("12.5%", "12.5%"),
    ("gpt-4o", "gpt-4o"),
    ("a=b", "a=b"),
])
def test_a_text_cell_that_starts_like_a_formula_is_written_as_text(cell, shown):
    assert export.spreadsheet_cell(cell) == shown


def test_the_csv_keeps_numbers_and_missing_values(tmp_path):
    frame = pd.DataFrame({"system": ["=HYPERLINK(\"x\")", None, "ok"], "elo": [-12.5, 3.0, float("nan")],
                          "=header": ["a", "b", "c"]})
    export.write_csv(frame, tmp_path / "t.csv")
    rows = list(csv.reader(open(tmp_path / "t.csv", newline="", encoding="utf-8")))
    assert rows[0] == ["system", "elo", "'=header"]
    assert rows[1] == ["'=HYPERLINK(\"x\")", "-12.5", "a"] and rows[2] == ["", "3.0", "b"]


@pytest.mark.parametrize("text,escaped", [
    (r"\input{/etc/passwd}", r"\textbackslash{}input\{/etc/passwd\}"),
    (r"gpt $\foo{$ 4o", r"gpt \$\textbackslash{}foo\{\$ 4o"),
    ("50% a_b #1 & ~^", r"50\% a\_b \#1 \& \textasciitilde{}\textasciicircum{}"),
    ("plain", "plain"),
])
def test_latex_special_characters_are_escaped_once(text, escaped):
    assert export.latex_escape(text) == escaped


def test_a_latex_table_escapes_cells_headers_and_caption():
    frame = pd.DataFrame({"sys_name": [r"\input{x}", "a"], "p": [0.5, None]})
    tex = export.latex_table(frame, r"caption with \def and 5%")
    assert r"\input" not in tex and r"\def" not in tex
    assert r"sys\_name" in tex and r"\textbackslash{}input\{x\}" in tex and r"5\%" in tex
    assert "--" in tex and tex.startswith(r"\begin{table}")
