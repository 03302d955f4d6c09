"""Rule figure_example_pair (paper Figures 2/3): one judged pair as HTML and as a figure."""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from heart.common.vocabulary import AXES
from heart.completions.safety_review import touching
from heart.figures.style import FONT, headline, new_figure, num, status_word


def format_mark(value) -> str:
    """A signed axis mark as the judges write it: +3 -> 'A+++', -1 -> 'B+', 0 -> 'none', missing -> '–'."""
    v = num(value)
    if math.isnan(v):
        return "–"
    v = int(v)
    return "none" if v == 0 else ("A" if v > 0 else "B") + "+" * abs(v)


_PREFERENCE = {2: "A significantly better", 1: "A slightly better", 0: "about the same",
               -1: "B slightly better", -2: "B significantly better"}


def _plain_text(ax, x, y, text, **kw):
    """Text drawn verbatim: a '$' in a dialogue is a dollar sign, not mathtext."""
    return ax.text(x, y, text, parse_math=False, **kw)


def _turns(dialogue) -> list[tuple[str, str]]:
    if isinstance(dialogue, pd.DataFrame):
        d = dialogue.sort_values("turn_index") if "turn_index" in dialogue else dialogue
        return [(str(r), str(t)) for r, t in zip(d["role"], d["text"])]
    out = []
    for t in dialogue:
        if isinstance(t, Mapping):
            out.append((str(t.get("role", "")), str(t.get("text", ""))))
        else:
            role, text = t
            out.append((str(role), str(text)))
    return out


def _response(resp, default: str) -> tuple[str, str]:
    if isinstance(resp, Mapping):
        return str(resp.get("system") or default), str(resp.get("text", ""))
    return default, str(resp)


def _verdict_rows(verdicts: pd.DataFrame) -> list[dict]:
    rows = []
    for v in (verdicts.to_dict("records") if verdicts is not None else []):
        kind = v.get("judge_kind") or ("human" if str(v.get("judge", "")).startswith("human:") else "llm")
        winner = v.get("winner")
        winner = winner.upper() if isinstance(winner, str) and winner else None
        strength = num(v.get("strength"))
        pref = num(v.get("preference"))
        if kind == "human" and not math.isnan(pref):
            verdict = _PREFERENCE.get(int(pref), str(int(pref)))
        elif winner:
            verdict = f"{winner} wins" + ("" if math.isnan(strength) else f" (strength {int(strength)})")
        else:
            verdict = status_word(v.get("status")) if v.get("status") not in (None, "ok") else "no verdict"
        marks = {a: format_mark(v.get(f"axis_{a}")) for a in AXES} if kind == "llm" else {}
        rationale = v.get("rationale")
        rows.append({"judge": str(v.get("judge", "")), "kind": kind, "verdict": verdict, "marks": marks,
                     "rationale": rationale if isinstance(rationale, str) else ""})
    return rows


def example_pair(dialogue, response_a, response_b, verdicts: pd.DataFrame, title: str = "Example judged pair",
                 title_note: str | None = None, max_turns: int = 8, wrap: int = 74,
                 max_lines: int = 10) -> tuple[str, Figure]:
    """One judged pair rendered like the paper's Figures 2/3: dialogue, both responses, every verdict.

    Parameters
    ----------
    dialogue : DataFrame or sequence
        The dialogue history: a ``turns`` table slice (``role``, ``text``, optional ``turn_index``) or
        a sequence of (role, text) / {"role", "text"}.
    response_a, response_b : str or mapping
        The two responses in the pair's order (system_a, system_b): text, or {"system", "text"}.
    verdicts : DataFrame
        ``judgments.schema.yaml`` rows of this pair: ``judge``, ``judge_kind``, ``winner`` (a/b),
        ``strength``, ``preference`` (humans), ``axis_H`` ... ``axis_T`` (signed, positive = A),
        ``rationale``, ``status``.
    title, title_note : str
        Title and a note appended to it.
    max_turns : int
        Only the last ``max_turns`` turns are shown (the figure says how many were left out).
    wrap : int
        Characters per line of the figure's text columns.
    max_lines : int
        Lines shown per turn, response or rationale in the figure (the rest is cut with "…"; the
        HTML keeps every word).

    Returns
    -------
    (str, Figure)
        A self-contained HTML fragment (every text HTML-escaped) and the same content as a figure.
    """
    turns = _turns(dialogue)
    hidden = max(0, len(turns) - max_turns)
    responses = (_response(response_a, "A"), _response(response_b, "B"))
    rows = _verdict_rows(verdicts)
    head = headline(title, title_note)
    shown = turns[hidden:]
    return _html(head, hidden, shown, responses, rows), _figure(head, hidden, shown, responses, rows, wrap,
                                                                 max_lines)


def _hidden_note(hidden: int) -> str:
    return f"… {hidden} earlier turn{'s' if hidden > 1 else ''} not shown"


def _html(head: str, hidden: int, shown: list[tuple[str, str]], responses: tuple, rows: list[dict]) -> str:
    """The pair as an HTML fragment: every text escaped, every word kept."""
    (name_a, text_a), (name_b, text_b) = responses
    e = html.escape

    def para(text: str) -> str:
        return e(text).replace("\n", "<br>")

    parts = ['<div class="heart-example" style="font-family:sans-serif;font-size:14px;max-width:960px">',
             f"<h3>{e(head)}</h3>", '<div class="dialogue"><h4>Dialogue</h4>']
    if hidden:
        parts.append(f"<p><em>{_hidden_note(hidden)}</em></p>")
    for role, text in shown:
        parts.append(f'<p class="turn {e(role)}"><strong>{e(role.capitalize())}:</strong> {para(text)}</p>')
    parts.append("</div>")
    for label, name, text in (("A", name_a, text_a), ("B", name_b, text_b)):
        who = "" if name == label else f" ({e(name)})"
        parts.append(f'<div class="response"><h4>Response {label}{who}</h4><p>{para(text)}</p></div>')
    parts.append('<table class="verdicts" border="1" style="border-collapse:collapse"><thead><tr>'
                 "<th>judge</th><th>verdict</th>" + "".join(f"<th>{a}</th>" for a in AXES)
                 + "<th>rationale</th></tr></thead><tbody>")
    for r in rows:
        marks = "".join(f"<td>{e(r['marks'].get(a, '–'))}</td>" for a in AXES)
        parts.append(f"<tr><td>{e(r['judge'])}</td><td>{e(r['verdict'])}</td>{marks}"
                     f"<td>{para(r['rationale'])}</td></tr>")
    if not rows:
        parts.append(f'<tr><td colspan="{len(AXES) + 3}"><em>no verdicts (absent)</em></td></tr>')
    parts.append("</tbody></table></div>")
    return "\n".join(parts)


def _figure(head: str, hidden: int, shown: list[tuple[str, str]], responses: tuple, rows: list[dict],
            wrap: int, max_lines: int) -> Figure:
    """The pair as a figure: text blocks laid out top-down in inches on one invisible axes."""
    (name_a, text_a), (name_b, text_b) = responses
    line_h = 1.3 * FONT / 72
    width = 11.0
    col_w = (width - 0.5) / 2

    def lines_of(text: str, width: int) -> list[str]:
        out = textwrap.wrap(text, width) or [""]
        if len(out) > max_lines:
            out = out[:max_lines]
            out[-1] = out[-1][:max(0, width - 2)] + " …"
        return out

    left = []
    if hidden:
        left.append(("note", [_hidden_note(hidden)]))
    for role, text in shown:
        left.append((role, lines_of(f"{role.capitalize()}: {text}", wrap)))
    right = [(f"Response A{'' if name_a == 'A' else f' ({name_a})'}", lines_of(text_a, wrap)),
             (f"Response B{'' if name_b == 'B' else f' ({name_b})'}", lines_of(text_b, wrap))]
    vrows = []
    for r in rows:
        marks = "   ".join(f"{a}: {m}" for a, m in r["marks"].items())
        header = f"{r['judge']} — {r['verdict']}" + (f"   |   {marks}" if marks else "")
        vrows.append((header, lines_of(r["rationale"], int(wrap * 2.05)) if r["rationale"] else []))
    if not vrows:
        vrows.append(("no verdicts (absent)", []))

    def block_h(lines: int) -> float:
        return lines * line_h + 0.22

    left_h = sum(block_h(len(lines)) + 0.1 for _, lines in left) + 0.35
    right_h = sum(block_h(len(lines) + 1) + 0.1 for _, lines in right) + 0.35
    verdict_h = sum((len(lines) + 1) * line_h + 0.14 for _, lines in vrows) + 0.45
    height = 0.55 + max(left_h, right_h) + verdict_h
    fig = new_figure(width, height, layout=None)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    _plain_text(ax, 0.25, 0.2, head, fontsize=FONT + 3, fontweight="bold", va="top")
    y0 = 0.55
    _plain_text(ax, 0.25, y0, "Dialogue", fontsize=FONT + 1, fontweight="bold", va="top")
    y = y0 + 0.3
    colors = {"seeker": "#fdf1e6", "supporter": "#e8f1fb", "note": "#ffffff"}
    for role, lines in left:
        h = block_h(len(lines))
        ax.add_patch(Rectangle((0.25, y), col_w - 0.2, h, facecolor=colors.get(role, "#f4f4f4"),
                               edgecolor="#cccccc", linewidth=0.6))
        _plain_text(ax, 0.35, y + 0.11, "\n".join(lines), fontsize=FONT, va="top", linespacing=1.3,
                    fontstyle="italic" if role == "note" else None)
        y += h + 0.1
    x = 0.25 + col_w + 0.05
    _plain_text(ax, x, y0, "Responses", fontsize=FONT + 1, fontweight="bold", va="top")
    y = y0 + 0.3
    for header, lines in right:
        h = block_h(len(lines) + 1)
        ax.add_patch(Rectangle((x, y), col_w - 0.1, h, facecolor="#f5f5f5", edgecolor="#999999",
                               linewidth=0.8))
        _plain_text(ax, x + 0.1, y + 0.11, header, fontsize=FONT, fontweight="bold", va="top")
        _plain_text(ax, x + 0.1, y + 0.11 + line_h, "\n".join(lines), fontsize=FONT, va="top",
                    linespacing=1.3)
        y += h + 0.1
    y = y0 + max(left_h, right_h)
    _plain_text(ax, 0.25, y, "Verdicts (axis marks: A+ … A+++++ favour response A; none = no clear "
                "advantage)", fontsize=FONT + 1, fontweight="bold", va="top")
    y += 0.32
    for header, lines in vrows:
        _plain_text(ax, 0.25, y, header, fontsize=FONT, fontweight="bold", va="top")
        if lines:
            _plain_text(ax, 0.45, y + line_h, "\n".join(lines), fontsize=FONT - 0.5, va="top",
                        linespacing=1.3, color="#333333")
        y += (len(lines) + 1) * line_h + 0.14
    return fig


def pick_example(judgments: pd.DataFrame, hidden=frozenset()):
    """The pair shown as the example (deterministic): judged by humans and LLMs if any, then by the most
    judges with a verdict, then the smallest pair id. Never a pair with a ``hidden`` reply ((item_id, system,
    contributor_id or ""): one the safety screen flagged, so that the report shows no flagged text, or one whose
    text is not there). None when no pair has a verdict (or every such pair has a hidden reply)."""
    ok = judgments[judgments["status"] == "ok"]
    if hidden and len(ok):
        ok = ok[~touching(ok, hidden)]
    if ok.empty:
        return None
    score = ok.groupby("pair_id").agg(kinds=("judge_kind", "nunique"), n=("judge", "size"))
    score = score.reset_index().sort_values(["kinds", "n", "pair_id"], ascending=[False, False, True])
    return score.iloc[0]["pair_id"]
