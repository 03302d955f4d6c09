"""Tests of the heart.figures modules: bin colours, ordering, absent data, error bars, Figure 5
geometry, style files, saving, and rendering at small (4 systems) and paper (21 systems) scale from
SIMULATED tables."""

from __future__ import annotations

import itertools
import math
import os
import stat
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from heart.stats.agreement.cross_judge import cross_judge_agreement
from heart.stats.agreement.human_llm import human_llm_agreement
from heart.stats import figure4, leaderboard
from heart.stats import strategy_stats
from heart.simulation import simulate
from heart.tagging.taxonomy import load_taxonomy, strategy_keys
from heart.figures import agreement as agreement_figure
from heart.figures import bias_factors, elo_forest, elo_ttft, example_pair, strategies, style
from heart.figures import leaderboard as leaderboard_figure
from heart.common.vocabulary import AXES
from matplotlib.colors import to_rgba
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text

REPO = Path(__file__).resolve().parents[2]
TAXONOMY = REPO / "workflow" / "resources" / "taxonomy" / "strategies.yaml"
NOTE = "SIMULATED data"


# --- fixtures ----------------------------------------------------------------------------------

def _scale(n_systems: int, n_items: int, pairs_per_item: int, human_pairs: int, llm_judges: int, seed: int):
    j, _ = simulate.judgments(n_systems=n_systems, n_items=n_items, n_adversarial=max(2, n_items // 6),
                              pairs_per_item=pairs_per_item, llm_judges=llm_judges, human_raters=3,
                              human_pairs=human_pairs, seed=seed)
    ratings, _ = leaderboard.leaderboard(j, n_boot=20)
    systems = sorted(set(j["system_a"]) | set(j["system_b"]))
    keys = strategy_keys(load_taxonomy(TAXONOMY))
    tags = simulate.strategy_tags(systems, keys, n_items=min(n_items, 30), seed=seed)
    models = [s for s in systems if s.startswith("sim-model")]
    families = {s: f"sim-family-{k % 4}" for k, s in enumerate(models)}
    usage = strategy_stats.usage(tags, families=families)
    return {"judgments": j, "ratings": ratings, "leaderboard": figure4.headline(ratings), "usage": usage,
            "systems": systems, "rated": sorted(ratings["system"].unique())}  # rated: + best-human


@pytest.fixture(scope="module")
def small():
    """4 systems, no human judgments (so every human-dependent panel must say 'absent')."""
    return _scale(n_systems=4, n_items=24, pairs_per_item=5, human_pairs=0, llm_judges=2, seed=3)


@pytest.fixture(scope="module")
def large():
    """The paper's 21 systems (24 items, not 300, to keep the suite fast: figure size follows systems)."""
    return _scale(n_systems=21, n_items=24, pairs_per_item=47, human_pairs=24, llm_judges=3, seed=0)


def _cell(fig: Figure, system: str, column: str) -> Rectangle:
    found = [p for p in fig.axes[0].patches if p.get_gid() == f"cell|{system}|{column}"]
    assert len(found) == 1, (system, column)
    return found[0]


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _lb(rows: list[dict]) -> pd.DataFrame:
    base = {"status": "ok", "elo_lo_asym": np.nan, "elo_hi_asym": np.nan, "elo_lo_boot": np.nan,
            "elo_hi_boot": np.nan, "n_comparisons": 10, "win_pct": 50.0,
            **{f"{a}_pct": 50.0 for a in AXES}}
    return pd.DataFrame([{**base, **r} for r in rows])


# --- Figure 4 ----------------------------------------------------------------------------------

def test_bin_constants_and_edges():
    assert len(style.BIN_COLORS) == len(style.BIN_LABELS) == len(style.BIN_EDGES) + 1 == 6
    assert style.BIN_EDGES == (70.0, 65.0, 60.0, 55.0, 50.0)
    cases = {71: 0, 70.0: 0, 69.9: 1, 65: 1, 64.99: 1, 60: 2, 57: 3, 55: 3, 52: 4, 50.0: 4, 49.9: 5, 0: 5}
    for value, expected in cases.items():
        assert style.bin_index(value) == expected, value
        assert style.bin_color(value) == style.BIN_COLORS[expected]
    assert style.bin_index(float("nan")) is None and style.bin_color(None) is None


def test_heatmap_cell_colours_follow_bins():
    lb = _lb([{"system": "s1", "elo": 1600.0, "H_pct": 71.0, "E_pct": 70.0, "A_pct": 49.9, "R_pct": 62.0,
               "T_pct": 55.0, "win_pct": 50.0}])
    fig = leaderboard_figure.leaderboard_heatmap(lb)
    expected = {"H_pct": 0, "E_pct": 0, "A_pct": 5, "R_pct": 2, "T_pct": 3, "win_pct": 4}
    for col, k in expected.items():
        assert _cell(fig, "s1", col).get_facecolor() == to_rgba(style.BIN_COLORS[k]), col
    assert _cell(fig, "s1", "elo").get_facecolor() == to_rgba(leaderboard_figure.ELO_COLOR)
    assert {"71.0", "70.0", "49.9", "1600.0"} <= set(_texts(fig))


def test_heatmap_rows_by_elo_and_absent_rows_at_the_bottom():
    gone = {"system": "gone", "status": "absent", "elo": np.nan, "win_pct": np.nan,
            **{f"{a}_pct": np.nan for a in AXES}}
    lb = _lb([{"system": "mid", "elo": 1500.0}, gone, {"system": "top", "elo": 1650.0},
              {"system": "low", "elo": 1350.0}])
    fig = leaderboard_figure.leaderboard_heatmap(lb, title_note=NOTE)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["top", "mid", "low", "gone"]
    # the absent row is one hatched rectangle with the word "absent"; no cell, no zero
    assert [p for p in ax.patches if p.get_gid() == "absent|gone"][0].get_hatch()
    assert not [p for p in ax.patches if str(p.get_gid()).startswith("cell|gone|")]
    row_texts = [t.get_text() for t in ax.texts if 3 < t.get_position()[1] < 4]
    assert row_texts == ["absent"]
    assert NOTE in fig._suptitle.get_text()


def test_heatmap_marks_the_derived_best_human_row():
    lb = _lb([{"system": "human", "elo": 1450.0}, {"system": "best-human", "elo": 1520.0}])
    lb["derived"] = lb["system"].eq("best-human")
    fig = leaderboard_figure.leaderboard_heatmap(lb)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["best-human" + leaderboard_figure.DERIVED_MARK, "human"]
    assert leaderboard_figure.DERIVED_LEGEND in [t.get_text() for t in fig.legends[0].get_texts()]
    plain = leaderboard_figure.leaderboard_heatmap(lb.drop(columns="derived"))
    assert leaderboard_figure.DERIVED_LEGEND not in [t.get_text() for t in plain.legends[0].get_texts()]


def test_heatmap_display_names_title_legend_and_footnote():
    lb = _lb([{"system": "gpt-5", "elo": 1600.0}, {"system": "best-human", "elo": 1510.0},
              {"system": "original", "elo": 1340.0}, {"system": "unmapped-model", "elo": 1450.0}])
    lb["derived"] = lb["system"].eq("best-human")
    names = {"gpt-5": "GPT-5", "best-human": "Best Human", "original": "Original Dataset Completions"}
    fig = leaderboard_figure.leaderboard_heatmap(lb, labels=names, footnote="H–T: percentile (judges: LLM judges)")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "GPT-5", "Best Human" + leaderboard_figure.DERIVED_MARK, "unmapped-model", "Original Dataset Completions"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["H", "E", "A", "R", "T", "Overall\nwin rate",
                                                            "Elo\nrating"]
    assert fig._suptitle.get_text() == "HEART leaderboard with per-dimension percentiles"
    assert fig.legends[0].get_title().get_text() == leaderboard_figure.LEGEND_TITLES["percentile"]
    assert "judges: LLM judges" in ax.get_xlabel()
    raw = leaderboard_figure.leaderboard_heatmap(lb, columns="win_rate")
    assert "win rates" in raw._suptitle.get_text() and raw.legends[0].get_title().get_text() == "Win rate (%)"
    assert raw.axes[0].get_xlabel() == ""
    with pytest.raises(ValueError, match="columns must be one of"):
        leaderboard_figure.leaderboard_heatmap(lb, columns="rank")


def test_heatmap_missing_value_in_an_estimated_row_is_absent_not_zero():
    lb = _lb([{"system": "s1", "elo": 1500.0, "T_pct": np.nan}])
    fig = leaderboard_figure.leaderboard_heatmap(lb)
    cell = _cell(fig, "s1", "T_pct")
    assert cell.get_hatch() and cell.get_facecolor() == to_rgba(style.ABSENT_COLOR)
    assert "absent" in _texts(fig) and "0.0" not in _texts(fig) and "nan" not in _texts(fig)


def _no_overlap(boxes) -> bool:
    return all(not a.overlaps(b) for a, b in itertools.combinations(boxes, 2))


def test_heatmap_tick_labels_do_not_overlap_at_paper_scale(large):
    assert len(large["leaderboard"]) == 22  # 21 systems and the derived best-human
    fig = leaderboard_figure.leaderboard_heatmap(large["leaderboard"], title_note=NOTE)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    ylabels = [t.get_window_extent(renderer) for t in ax.get_yticklabels()]
    xlabels = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
    assert len(ylabels) == 22 and _no_overlap(ylabels) and _no_overlap(xlabels)
    # labels and legend inside the canvas
    canvas = fig.bbox
    for box in ylabels + xlabels + [fig.legends[0].get_window_extent(renderer)]:
        assert box.x0 >= canvas.x0 - 1 and box.x1 <= canvas.x1 + 1 and box.y0 >= canvas.y0 - 1
        assert box.y1 <= canvas.y1 + 1
    # a cell's number fits its cell
    cell = _cell(fig, large["leaderboard"]["system"].iloc[0], "H_pct").get_window_extent(renderer)
    text = [t for t in ax.texts if t.get_position() == (0.5, 0.5)][0].get_window_extent(renderer)
    assert text.width < cell.width and text.height < cell.height


# --- Elo forest --------------------------------------------------------------------------------

@pytest.mark.parametrize("scale", ["small", "large"])
def test_forest_two_error_bars_per_system_per_panel(scale, request):
    data = request.getfixturevalue(scale)
    fig = elo_forest.elo_forest(data["ratings"], title_note=NOTE)
    n = len(data["rated"])
    assert len(fig.axes) == 3
    for ax in fig.axes:
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 2 * n
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == style.leaderboard_order(
        data["ratings"][(data["ratings"]["axis"] == "overall") & (data["ratings"]["subset"] == "all")
                        & (data["ratings"]["source"] == "combined")])


def test_forest_absent_scope_is_labelled_absent(small):
    fig = elo_forest.elo_forest(small["ratings"], source="human")
    for ax in fig.axes:
        assert not [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert [t.get_text() for t in ax.texts].count("absent") == len(small["rated"])
        assert ax.get_title().endswith("absent")


# --- Figure 5 ----------------------------------------------------------------------------------

def _points(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"system": [f"sim-model-{k:02d}" for k in range(n)],
                         "elo": rng.normal(1500, 60, n), "ttft_s": np.exp(rng.normal(0, 1.2, n)),
                         "provider": [f"sim-provider-{k % 5}" for k in range(n)], "ttft_source": "paper"})


def test_elo_vs_ttft_log_x_mean_line_and_markers():
    pts = _points(12)
    pts.loc[0, "ttft_s"] = np.nan  # not plotted, listed in the footnote
    fig = elo_ttft.elo_vs_ttft(pts, title_note=NOTE, elo_label="HEART Elo (LLM judges)", rho="Spearman ρ = 0.10")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    mean = [ln for ln in ax.lines if ln.get_gid() == "field-mean"]
    assert len(mean) == 1 and mean[0].get_linestyle() == "--"
    assert np.allclose(mean[0].get_ydata(), pts["elo"].iloc[1:].mean())
    markers = {ln.get_gid().split("|")[2]: ln.get_marker() for ln in ax.lines
               if str(ln.get_gid()).startswith("points|")}
    assert markers == {"paper": "D"}
    plotted = sum(len(ln.get_xdata()) for ln in ax.lines if str(ln.get_gid()).startswith("points|"))
    assert plotted == 11
    assert any("sim-model-00" in t.get_text() for t in ax.texts if t.get_gid() == "no-ttft-note")
    # one TTFT source: named on the x axis, no marker legend; the y axis names the judges; rho in the legend
    assert ax.get_xlabel() == elo_ttft.TTFT_AXIS_LABELS["paper"] and ax.get_ylabel() == "HEART Elo (LLM judges)"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "Spearman ρ = 0.10" in legend and not [t for t in legend if t.startswith("TTFT ")]
    mixed = elo_ttft.elo_vs_ttft(pts.assign(ttft_source=["measured" if k % 3 else "paper" for k in range(12)]))
    markers = {ln.get_gid().split("|")[2]: ln.get_marker() for ln in mixed.axes[0].lines
               if str(ln.get_gid()).startswith("points|")}
    assert markers == {"measured": "o", "paper": "D"}
    assert {"TTFT measured", "TTFT paper"} <= {t.get_text() for t in mixed.axes[0].get_legend().get_texts()}


@pytest.mark.parametrize("n", [3, 21])
def test_elo_vs_ttft_labels_inside_axes_and_apart(n):
    fig = elo_ttft.elo_vs_ttft(_points(n))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_gid() == "point-label"]
    assert sorted(t.get_text() for t in labels) == sorted(_points(n)["system"])
    boxes = [Text.get_window_extent(t, renderer) for t in labels]  # the text, without its leader line
    frame = ax.get_window_extent(renderer)
    assert all(frame.x0 - 1 <= b.x0 and b.x1 <= frame.x1 + 1 and frame.y0 - 1 <= b.y0 and b.y1 <= frame.y1 + 1
               for b in boxes)
    assert _no_overlap(boxes)


def _ttft_inputs():
    lb = _lb([{"system": "a", "elo": 1600.0}, {"system": "b", "elo": 1500.0}, {"system": "c", "elo": 1400.0},
              {"system": "d", "status": "absent", "elo": np.nan}, {"system": "human", "elo": 1450.0},
              {"system": "best-human", "elo": 1520.0}, {"system": "original", "elo": 1300.0}])
    models = pd.DataFrame({"model": ["Model A", "Model B"], "system": ["a", "b"], "family": ["gpt", "claude"],
                           "ttft_median_s": [9.0, 2.0]})
    completions = pd.DataFrame({"system": ["a", "a", "a", "c", "human"], "ttft_s": [0.2, 0.4, None, None, None]})
    return lb, models, completions


def test_ttft_points_take_one_source_never_mixed():
    lb, models, completions = _ttft_inputs()
    # the paper's published medians: a 9 s, b 2 s; c has none (its measured TTFT is not used)
    p = elo_ttft.ttft_points(lb, models, completions, ttft_source="paper").set_index("system")
    assert list(p.index) == ["a", "b", "c"]  # models only: no human, best-human, original; no absent row
    assert p.loc["a", "ttft_s"] == 9.0 and p.loc["b", "ttft_s"] == 2.0 and math.isnan(p.loc["c", "ttft_s"])
    assert p["ttft_source"].tolist() == ["paper", "paper", "absent"]
    assert p.loc["a", "provider"] == "OpenAI" and p.loc["a", "label"] == "Model A"
    # this run's measured medians: a = median(0.2, 0.4) = 0.3 over 2 calls; b and c measured nothing
    m = elo_ttft.ttft_points(lb, models, completions, ttft_source="measured",
                             labels={"a": "Display A"}).set_index("system")
    assert m.loc["a", "ttft_s"] == pytest.approx(0.3) and m.loc["a", "n_ttft"] == 2
    assert m["ttft_source"].tolist() == ["measured", "absent", "absent"]
    assert m.loc["a", "label"] == "Display A" and m.loc["b", "label"] == "Model B" and m.loc["c", "label"] == "c"
    with pytest.raises(ValueError, match="ttft_source"):
        elo_ttft.ttft_points(lb, models, completions, ttft_source="external")


def test_rho_text_is_the_figures_own_correlation():
    table = pd.DataFrame({"test": ["spearman_elo_log_ttft_paper", "spearman_elo_log_ttft_measured"],
                          "status": ["ok", "insufficient"], "estimate": [0.534, np.nan], "n": [7, 2]})
    assert elo_ttft.rho_text(table, "paper") == "Spearman ρ = 0.53 (n = 7)"
    assert elo_ttft.rho_text(table, "measured") == "Spearman ρ: insufficient (n = 2)"


# --- Figure 6 ----------------------------------------------------------------------------------

def test_strategy_heatmap_rows_sorted_by_overall_usage(large):
    usage = large["usage"]
    fig = strategies.strategy_heatmap(usage, title_note=NOTE)
    fam = usage[usage["level"] == "family"]
    overall = fam.groupby("strategy")["rate_pct"].mean().sort_values(ascending=False, kind="stable")
    names = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(names) == 15
    assert names == [strategies._pretty_strategy(s) for s in overall.index]
    shown = [float(t.get_text()) for t in fig.axes[0].texts if 0 < t.get_position()[0] < 1]
    assert len(shown) == 15


def test_strategy_heatmap_absent_group(small):
    usage = small["usage"].copy()
    gone = usage["group"] == "sim-family-1"
    assert gone.any()
    usage.loc[gone, "status"] = "absent"
    usage.loc[gone, "rate_pct"] = np.nan
    mat, status = strategies.strategy_matrix(usage)
    assert status["sim-family-1"] == "absent" and mat["sim-family-1"].isna().all()
    assert list(mat.columns)[-2:] == ["original", "human"]  # model families first, then dataset, human
    fig = strategies.strategy_heatmap(usage)
    ax = fig.axes[0]
    col = list(mat.columns).index("sim-family-1")
    assert [p for p in ax.patches if p.get_gid() == "absent|sim-family-1"]
    in_col = [t.get_text() for t in ax.texts if col < t.get_position()[0] < col + 1]
    assert in_col == ["absent"]


# --- agreement / bias --------------------------------------------------------------------------

def test_agreement_panel_human_absent_says_so(small):
    hl = human_llm_agreement(small["judgments"], n_boot=20)
    cj = cross_judge_agreement(small["judgments"], n_boot=20)
    trivial = pd.DataFrame(columns=["reference", "judge", "judge_type", "agreement", "ci_low", "ci_high",
                                    "status"])
    fig = agreement_figure.agreement_panel(hl, cj, trivial, title_note=NOTE)
    left = fig.axes[0]
    assert "human judgments absent" in [t.get_text() for t in left.texts]
    assert not left.lines and not left.containers
    assert any("%" in t.get_text() for t in fig.axes[1].texts)


def test_agreement_panel_reference_lines(large):
    j = large["judgments"]
    hl = human_llm_agreement(j, n_boot=20)
    cj = cross_judge_agreement(j, n_boot=20)
    trivial = pd.DataFrame([
        {"reference": "human-majority", "judge": "always-longer", "judge_type": "trivial", "agreement": 0.45,
         "ci_low": 0.4, "ci_high": 0.5, "status": "ok"},
        {"reference": "human-majority", "judge": "human-loo-ceiling", "judge_type": "human", "agreement": 0.8,
         "ci_low": 0.75, "ci_high": 0.85, "status": "ok"}])
    fig = agreement_figure.agreement_panel(hl, cj, trivial)
    left = fig.axes[0]
    gids = {ln.get_gid() for ln in left.lines}
    assert {"trivial|always-longer", "human-ceiling"} <= gids
    judges = [t.get_text() for t in left.get_yticklabels()]
    assert judges[:2] == ["llm-ensemble", "mean-of-judges"] and len(judges) == 5
    assert len([c for c in left.containers if isinstance(c, ErrorbarContainer)]) == 5


def test_bias_panel_absent_tables_are_text(small):
    empty = pd.DataFrame(columns=["judge", "share_shown_a", "ci_low", "ci_high", "status", "note"])
    flips = pd.DataFrame({"judge": ["sim-judge-1"] * 2, "axis": ["overall", "H"], "n_pairs": [10, 10],
                          "flip_rate": [0.1, np.nan]})
    length = pd.DataFrame({"judge": ["sim-judge-1"], "share_longer_wins": [0.55], "ci_low": [0.5],
                           "ci_high": [0.6], "reject": [True], "status": ["ok"]})
    self_pref = pd.DataFrame({"judge": ["sim-judge-1"], "difference": [np.nan], "ci_low": [np.nan],
                              "ci_high": [np.nan], "status": ["no_pairs"],
                              "note": ["no pair judged by both"]})
    loadings = pd.DataFrame(columns=["variable", "factor", "loading", "communality"])
    fig = bias_factors.bias_panel(empty, length, self_pref, flips, loadings, title_note=NOTE)
    texts = _texts(fig)
    assert "Position bias: absent" in texts and "Self-preference: absent" in texts
    assert "factor loadings: absent" in texts and "absent" in texts  # the NaN flip cell
    assert "no pair judged by both" in texts
    assert "sim-judge-1 *" in [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]


# --- Figures 2/3 -------------------------------------------------------------------------------

def test_the_example_pair_is_never_one_with_a_flagged_reply():
    """The report shows no text the safety screen flagged: the pair judged by the most judges is passed over
    when one of its replies is flagged, and no pair is shown when every judged pair has one."""
    rows = [("p1", "i1", "a", None, "human", "w1"), ("p1", "i1", "a", None, "human", "w1"),
            ("p2", "i2", "a", None, "b", None)]
    judgments = pd.DataFrame([{"pair_id": p, "item_id": i, "system_a": sa, "contributor_a": ca, "system_b": sb,
                               "contributor_b": cb, "status": "ok", "judge_kind": "llm", "judge": f"j{k}"}
                              for k, (p, i, sa, ca, sb, cb) in enumerate(rows)])
    assert example_pair.pick_example(judgments) == "p1"
    assert example_pair.pick_example(judgments, {("i1", "human", "w1")}) == "p2"
    assert example_pair.pick_example(judgments, {("i1", "human", "w1"), ("i2", "b", "")}) is None


def test_example_pair_escapes_html_and_renders():
    dialogue = pd.DataFrame({"turn_index": [1, 0], "role": ["supporter", "seeker"],
                             "text": ["How are you coping?",
                                      "I lost $5 and then $10 <script>x</script> & more"]})
    verdicts = pd.DataFrame([
        {"judge": "sim-judge-1", "judge_kind": "llm", "winner": "a", "strength": 3, "axis_H": 2, "axis_E": -1,
         "axis_A": 0, "axis_R": None, "axis_T": 1, "rationale": "A is <b>specific</b>", "status": "ok"},
        {"judge": "human:sim-rater-1", "judge_kind": "human", "winner": None, "strength": None,
         "preference": 0, "rationale": "same", "status": "tie"}])
    response_a = {"system": "sim-model-01", "text": "Reply \"A\" <i>"}
    out, fig = example_pair.example_pair(dialogue, response_a, "Reply B", verdicts, title_note=NOTE)
    assert "<script>" not in out and "&lt;script&gt;" in out and "&lt;b&gt;specific&lt;/b&gt;" in out
    assert "&amp; more" in out and "&quot;A&quot;" in out and NOTE in out
    assert out.index("Seeker") < out.index("Supporter")  # turns in turn order
    assert "A++" in out and "B+" in out and "about the same" in out
    assert isinstance(fig, Figure)
    fig.canvas.draw()  # '$5 ... $10' must not be parsed as mathtext
    assert any("$5" in t for t in _texts(fig))
    assert example_pair.format_mark(3) == "A+++" and example_pair.format_mark(-2) == "B++"
    assert example_pair.format_mark(0) == "none" and example_pair.format_mark(None) == "–"


# --- save --------------------------------------------------------------------------------------

def test_save_writes_png_and_pdf_atomically(tmp_path):
    fig = leaderboard_figure.leaderboard_heatmap(_lb([{"system": "s1", "elo": 1500.0}]))
    png, pdf = tmp_path / "out" / "fig.png", tmp_path / "out" / "fig.pdf"
    style.save(fig, png, pdf)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["fig.pdf", "fig.png"]
    # the permissions of any file this process makes (not mkstemp's 0600: the report must be readable)
    umask = os.umask(0)
    os.umask(umask)
    assert {stat.S_IMODE(p.stat().st_mode) for p in (png, pdf)} == {0o666 & ~umask}


def test_a_simulated_figure_carries_its_label_inside_the_block_only(tmp_path):
    path = tmp_path / "fig.yaml"
    path.write_text("dpi: 60\n")

    def texts(fig):
        return [t.get_text() for t in fig.texts]

    with style.applied(path, "SIMULATED") as dpi:
        fig = leaderboard_figure.leaderboard_heatmap(_lb([{"system": "s1", "elo": 1500.0}]))
        style.save(fig, tmp_path / "a.png", tmp_path / "a.pdf", dpi=dpi)
    assert "SIMULATED" in texts(fig) and any(t.startswith("SIMULATED:") for t in texts(fig))
    with style.applied(path) as dpi:
        plain = leaderboard_figure.leaderboard_heatmap(_lb([{"system": "s1", "elo": 1500.0}]))
        style.save(plain, tmp_path / "b.png", tmp_path / "b.pdf", dpi=dpi)
    assert not any("SIMULATED" in t for t in texts(plain))


def test_style_file_is_applied_inside_the_block_only(tmp_path):
    path = tmp_path / "fig.yaml"
    path.write_text("dpi: 150\nrc:\n  font.size: 13\n  axes.linewidth: 2.5\n")
    before = matplotlib.rcParams["font.size"]
    with style.applied(path) as dpi:
        assert dpi == 150
        assert matplotlib.rcParams["font.size"] == 13 and matplotlib.rcParams["axes.linewidth"] == 2.5
        fig = leaderboard_figure.leaderboard_heatmap(_lb([{"system": "s1", "elo": 1500.0}]))
        assert fig.axes[0].spines["left"].get_linewidth() == 2.5
    assert matplotlib.rcParams["font.size"] == before
    path.write_text("rc: {}\n")
    with style.applied(path) as dpi:
        assert dpi == 200  # the default


@pytest.mark.parametrize("text, message", [("rc:\n  font.sise: 10\n", "unknown matplotlib settings"),
                                           ("dpi: 20\n", "dpi must be an integer"),
                                           ("dpi: 150.0\n", "dpi must be an integer")])
def test_style_file_errors_name_the_setting(tmp_path, text, message):
    path = tmp_path / "fig.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message), style.applied(path):
        pass


def test_save_failure_leaves_no_temp_file(tmp_path, monkeypatch):
    fig = leaderboard_figure.leaderboard_heatmap(_lb([{"system": "s1", "elo": 1500.0}]))

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(fig, "savefig", boom)
    with pytest.raises(RuntimeError):
        style.save(fig, tmp_path / "f.png", tmp_path / "f.pdf")
    assert list(tmp_path.iterdir()) == []


# --- every figure at both scales ---------------------------------------------------------------

def _all_figures(data) -> dict[str, Figure]:
    j = data["judgments"]
    hl = human_llm_agreement(j, n_boot=10)
    cj = cross_judge_agreement(j, n_boot=10)
    lb = data["leaderboard"]
    pts = _points(len(lb)).assign(system=lb["system"].to_numpy(), elo=lb["elo"].to_numpy())
    flips = pd.DataFrame([{"judge": judge, "axis": a, "n_pairs": 50, "flip_rate": 0.1}
                          for judge in sorted(j.loc[j["judge_kind"] == "llm", "judge"].unique())
                          for a in ("overall", *AXES)])
    pos = pd.DataFrame({"judge": ["sim-judge-1"], "share_shown_a": [0.6], "ci_low": [0.55], "ci_high": [0.65],
                        "reject": [True], "status": ["ok"]})
    loadings = pd.DataFrame({"variable": [f"z_{a}" for a in AXES], "factor": "F1",
                             "loading": [0.5, 0.6, 0.4, 0.55, 0.3],
                             "communality": [0.25, 0.36, 0.16, 0.3, 0.09]})
    names = {s["key"]: s["name"] for s in load_taxonomy(TAXONOMY)["strategies"]}
    return {
        "leaderboard": leaderboard_figure.leaderboard_heatmap(lb, title_note=NOTE),
        "ttft": elo_ttft.elo_vs_ttft(pts, title_note=NOTE),
        "strategy": strategies.strategy_heatmap(data["usage"], names=names, title_note=NOTE),
        "strategy_system": strategies.strategy_heatmap(data["usage"], level="system", title_note=NOTE),
        "forest": elo_forest.elo_forest(data["ratings"], title_note=NOTE),
        "agreement": agreement_figure.agreement_panel(hl, cj, pd.DataFrame(columns=["reference", "status"]),
                                             title_note=NOTE),
        "bias": bias_factors.bias_panel(pos, pos.iloc[0:0], pos.iloc[0:0], flips, loadings, title_note=NOTE),
        "example": example_pair.example_pair([("seeker", "hello")], "A", "B",
                                        j[j["pair_id"] == j["pair_id"].iloc[0]], title_note=NOTE)[1],
    }


@pytest.mark.parametrize("scale", ["small", "large"])
def test_every_figure_renders_with_nothing_empty(scale, request, tmp_path):
    data = request.getfixturevalue(scale)
    for name, fig in _all_figures(data).items():
        style.save(fig, tmp_path / f"{name}.png", tmp_path / f"{name}.pdf", dpi=60)
        assert (tmp_path / f"{name}.png").stat().st_size > 0
        for ax in fig.axes:
            drawn = ax.lines or ax.patches or ax.images or ax.collections or ax.texts or ax.containers
            assert drawn, f"{scale}/{name}: empty axes {ax.get_title()!r}"
        title = fig._suptitle.get_text() if fig._suptitle else " ".join(_texts(fig)[:1])
        assert NOTE in title, name
        width, height = fig.get_size_inches()
        assert 3 < width < 40 and 2 < height < 30, (name, width, height)


def test_figure_height_grows_with_rows(small, large):
    h_small = leaderboard_figure.leaderboard_heatmap(small["leaderboard"]).get_size_inches()[1]
    h_large = leaderboard_figure.leaderboard_heatmap(large["leaderboard"]).get_size_inches()[1]
    assert h_large > h_small + 3
    f_small = elo_forest.elo_forest(small["ratings"]).get_size_inches()[1]
    f_large = elo_forest.elo_forest(large["ratings"]).get_size_inches()[1]
    assert f_large > f_small + 3


def test_quality_warning_is_drawn_below_an_outside_legend_in_the_saved_png(tmp_path):
    # saving with bbox_inches="tight" enlarges the canvas; an "outside lower" legend anchored to the canvas
    # edge then moved onto a text placed under the figure (seen in the default run's Figure 4)
    from matplotlib.image import imread
    from matplotlib.patches import Patch

    fig = style.new_figure(6, 3)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], color="white")
    ax.set_axis_off()
    fig.legend(handles=[Patch(facecolor="black", label=f"bin {i}") for i in range(8)], loc="outside lower center",
               ncols=4, frameon=False, title="legend")
    style.warn(fig, "Judges below the quality targets " * 8)
    style.save(fig, tmp_path / "f.png", tmp_path / "f.pdf", dpi=100)
    img = imread(tmp_path / "f.png")[..., :3]
    black = np.where((img < 0.1).all(axis=2).any(axis=1))[0]  # the legend's patches
    red = np.where(((img[..., 0] > 0.6) & (img[..., 1] < 0.4) & (img[..., 2] < 0.4)).any(axis=1))[0]
    assert len(black) and len(red)
    assert red.min() > black.max(), (black.max(), red.min())
