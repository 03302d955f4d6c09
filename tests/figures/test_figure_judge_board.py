"""heart.figures.judge_board: absent cells are drawn as absent (never a zero bar), the targets and the
recommended ensemble are shown (SYNTHETIC tables of tests/support/judge_board_example.py)."""

import pytest

from heart.figures import judge_board as figure
from heart.stats import judge_board
from support import judge_board_example as example  # the hand-worked example of the statistics' tests


def gids(fig):
    return {str(a.get_gid()) for ax in fig.axes for a in [*ax.patches, *ax.texts] if a.get_gid()}


def text(fig):
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts) + " " + fig._supxlabel.get_text()


def test_rows_absent_cells_targets_and_the_chosen_ensemble():
    board = example.board().reset_index()
    fig = figure.judge_board_figure(board, judge_board.ensembles(*example.choice_tables()))
    g = gids(fig)
    # j2 agrees best, the ensemble is last; j3 judged nothing: its cells absent, never bars
    assert [t.get_text().split("\n")[0] for t in fig.axes[0].get_yticklabels()] == ["j2", "j1", "j3", "ensemble"]
    assert {"bar|flip_rate|j1", "bar|qc_accuracy|j2", "bar|self_preference|j1"} <= g
    assert {"absent|flip_rate|j3", "absent|qc_accuracy|j3", "absent|self_preference|j2"} <= g
    assert not {x for x in g if x.startswith("bar|") and x.endswith("|j3")}
    # j1 misses the QC target (50 % < 70 %): its bar is red, j2's blue
    bars = {p.get_gid(): p for ax in fig.axes for p in ax.patches}
    assert bars["bar|qc_accuracy|j1"].get_facecolor()[:3] == pytest.approx((0xb2 / 255, 0x18 / 255, 0x2b / 255))
    assert bars["bar|qc_accuracy|j2"].get_facecolor()[:3] == pytest.approx((0x1f / 255, 0x4e / 255, 0x99 / 255))
    assert "no price (local)" in text(fig) and "Ensemble chooser: A+C" in text(fig)


def test_without_humans_the_agreement_panel_says_absent():
    board = example.board(humans=False).reset_index()
    fig = figure.judge_board_figure(board, judge_board.ensembles(*example.choice_tables(humans=False)))
    assert "absent-panel" in gids(fig) and "absent: no human judgments" in text(fig).replace("\n", " ")
    assert "nothing recommended (absent: no human judgments)" in text(fig)
    assert not [ln for ln in fig.axes[0].lines if ln.get_marker() in ("o", "D")]  # no agreement point drawn
