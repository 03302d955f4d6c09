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


def test_a_csv_written_safe_reads_back_as_written(tmp_path):
    """The workflow's own exports (the human-data files) go through the same reader: the apostrophe a
    formula-like text gets is taken off again, so a crowd worker's "- I hear you" survives the round trip."""
    from heart.common import records

    texts = ["- I hear you.", "=SUM(A1)", "+1 to that", "@you", "plain", "-3", "'quoted' already"]
    export.write_csv(pd.DataFrame({"item_id": [f"i{k}" for k in range(len(texts))], "text": texts}),
                     tmp_path / "c.csv")
    assert "'- I hear you." in (tmp_path / "c.csv").read_text()
    assert records.read_records(tmp_path / "c.csv", ["item_id", "text"])["text"].tolist() == texts


def test_a_csv_strength_written_by_pandas_beside_gaps_is_a_whole_number(tmp_path):
    from heart.judging import judgment_import as ji

    path = tmp_path / "votes.csv"
    path.write_text("item,system_a,system_b,judge,judge_kind,winner,strength\n"
                    "i1,m1,m2,j1,llm,a,4.0\ni2,m1,m2,j1,llm,a,\ni3,m1,m2,j1,llm,a,4.5\n")
    with pytest.raises(ji.JudgmentImportError, match=r"votes.csv, line 4: field 'strength' is '4.5'"):
        ji.read(path)
    path.write_text("\n".join(path.read_text().splitlines()[:3]) + "\n")
    assert ji.read(path)["strength"].tolist()[0] == 4
