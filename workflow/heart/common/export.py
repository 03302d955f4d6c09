"""Tables for people: CSV safe to open in a spreadsheet, LaTeX safe to ``\\input``.

Names in the tables (systems, judges, raters) come from config and from files made elsewhere, so they are
untrusted text.

* **CSV** (:func:`write_csv`). A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as
  a formula (and tab / carriage return can smuggle one in). Such a text cell is written with a leading
  apostrophe (``'=cmd|...``), OWASP's advice for CSV injection, so it shows as text; a cell that is a
  plain number written as text ("-3.2", "+4") is left as it is, since it cannot be a formula. Numeric
  columns are never touched.
* **LaTeX** (:func:`latex_table`). Every cell, header and the caption are escaped
  (:func:`latex_escape`: ``\\ { } $ & # ^ _ % ~``), so ``\\input{...}`` or ``$\\foo{$`` in a name is
  printed, never run.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pandas as pd

from heart.common.atomic import atomic_path

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_LATEX_CHAR = re.compile("[" + re.escape("".join(_LATEX_SPECIAL)) + "]")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


def _visible_start(text: str) -> str:
    """``text`` from its first character that is neither whitespace nor an invisible format character (a
    spreadsheet may trim a leading space, NBSP or zero-width space and then run the formula behind it)."""
    i = 0
    while i < len(text) and (text[i] in " \u00a0\u3000" or unicodedata.category(text[i]) == "Cf"):
        i += 1
    return text[i:]


def spreadsheet_cell(value):
    """One cell as a spreadsheet will not run it: text starting like a formula -- after any leading spaces or
    invisible characters, and with a full-width ``＝ ＋ － ＠`` too -- gets a leading ``'``."""
    return "'" + value if isinstance(value, str) and looks_like_formula(value) else value


def looks_like_formula(text: str) -> bool:
    """True if a spreadsheet could run ``text`` (see :func:`spreadsheet_cell`); a plain number cannot."""
    return ((text.startswith(FORMULA_START) or _visible_start(text).startswith(FORMULA_START))
            and not _PLAIN_NUMBER.fullmatch(text))


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are :func:`spreadsheet_cell`-safe."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col].dtype):
            out[col] = out[col].map(spreadsheet_cell, na_action="ignore")
    out.columns = [spreadsheet_cell(str(c)) for c in out.columns]
    return out


def write_csv(frame: pd.DataFrame, path) -> None:
    """``frame`` as a spreadsheet-safe CSV (no index), written atomically."""
    with atomic_path(path) as tmp:
        spreadsheet_safe(frame).to_csv(tmp, index=False)


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's ten special characters escaped, in one pass (so an escape is never escaped again)."""
    return _LATEX_CHAR.sub(lambda m: _LATEX_SPECIAL[m.group()], str(text))


def latex_table(frame: pd.DataFrame, caption: str) -> str:
    """``frame`` as a LaTeX ``table`` (booktabs rules), every cell, header and the caption escaped."""
    shown = frame.copy()
    shown.columns = [latex_escape(c) for c in shown.columns]
    for col in shown.columns:
        if shown[col].dtype == object or pd.api.types.is_string_dtype(shown[col].dtype):
            shown[col] = shown[col].map(latex_escape, na_action="ignore")
    return (shown.style.hide(axis="index").format(na_rep="--", precision=2)
            .to_latex(caption=latex_escape(caption), hrules=True, position="htbp"))


def write_latex(frame: pd.DataFrame, path, caption: str) -> None:
    """:func:`latex_table` written atomically."""
    with atomic_path(path) as tmp:
        Path(tmp).write_text(latex_table(frame, caption), encoding="utf-8")
