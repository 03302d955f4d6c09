"""heart.tables.paper_tables: the paper's tables name the intervals' coverage the configuration asked for (stats.ci)."""

import numpy as np
import pandas as pd
import pytest

from heart.tables import paper_tables as tables


def test_interval_columns_are_named_after_the_configured_coverage():
    board = pd.DataFrame({"system": ["a"], "status": ["estimated"], "elo": [1010.0], "elo_lo_asym": [990.0],
                          "elo_hi_asym": [1030.0], "elo_lo_boot": [985.0], "elo_hi_boot": [1035.0],
                          "win_pct": [55.0], "n_comparisons": [40], **{f"{a}_pct": [50.0] for a in "HEART"}})
    assert (tables.ci_label(0.95) == "95% CI" and tables.ci_label(0.9) == "90% CI"
            and tables.ci_label(0.995) == "99.5% CI")
    at_90 = tables.leaderboard(board, ci=0.9)
    assert "Elo 90% CI (asymptotic)" in at_90 and "Elo 90% CI (bootstrap)" in at_90
    assert not [c for c in at_90 if "95%" in c]
    assert at_90.loc[0, "Elo 90% CI (bootstrap)"] == tables.leaderboard(board).loc[0, "Elo 95% CI (bootstrap)"]


def _board():
    """A headline table (heart.stats.figure4.headline) of three systems, the derived best-human among them."""
    return pd.DataFrame({"system": ["gpt-5", "best-human", "new-model"], "status": ["ok", "ok", "ok"],
                         "derived": [False, True, False], "note": [None, "derived (Best Human): chosen after judging",
                                                                   None],
                         "elo": [1600.04, 1510.0, 1450.0], "elo_lo_asym": [1590.0, 1500.0, 1440.0],
                         "elo_hi_asym": [1610.0, 1520.0, 1460.0], "elo_lo_boot": [np.nan] * 3,
                         "elo_hi_boot": [np.nan] * 3, "n_comparisons": [40, 30, 20], "win_pct": [80.0, 55.0, 40.0],
                         **{f"{a}_pct": [82.5, 50.0, 17.5] for a in "HEART"}})


def test_leaderboard_table_has_figure_4s_columns_names_and_dagger():
    names = {"gpt-5": "GPT-5", "best-human": "Best Human"}
    out = tables.leaderboard(_board(), labels=names)
    assert list(out.columns[:8]) == ["System", "H percentile", "E percentile", "A percentile", "R percentile",
                                     "T percentile", "Overall win %", "Elo"]
    assert out["System"].tolist() == ["GPT-5", "Best Human" + tables.DERIVED_MARK, "new-model"]  # unmapped: as is
    assert out.loc[1, "note"].startswith("derived") and out.loc[0, "Elo"] == 1600.0
    assert out["Elo 95% CI (bootstrap)"].eq("").all()  # absent interval: empty, not zero
    raw = tables.leaderboard(_board(), columns="win_rate")
    assert "H win %" in raw and "H percentile" not in raw and raw["System"].tolist()[0] == "gpt-5"
    with pytest.raises(ValueError, match="columns must be one of"):
        tables.leaderboard(_board(), columns="rank")


def test_table1_uses_the_display_names():
    models = pd.DataFrame({"model": ["GPT-5"], "system": ["gpt-5"], "in_table_1": [True], "elo_paper": [1611.8],
                           "win_pct_paper": [85.9], "aa_index_v3": [66.0]})
    external = pd.DataFrame({"test": ["pearson_elo_aa"], "data": ["this run"], "estimate": [np.nan], "n": [1],
                             "status": ["insufficient"], "note": ["1 model(s) with both values"]})
    out = tables.table1(_board(), models, external, labels={"gpt-5": "GPT-5 (run)"})
    run = out[out["data"] == "this run"].set_index("model")
    assert run.index.tolist() == ["GPT-5 (run)", "best-human" + tables.DERIVED_MARK, "new-model"]
    assert run.loc["GPT-5 (run)", "AA"] == 66.0 and np.isnan(run.loc["new-model", "AA"])
    assert run["Pearson r (Elo, AA)"].str.startswith("insufficient").all()


def test_a_simulated_table_says_so_in_its_csv_and_caption(tmp_path):
    table = pd.DataFrame({"judge": ["j"], "agreement %": [71.2]})
    tables.write(table, tmp_path / "t.csv", tmp_path / "t.tex", "Agreement", label="SIMULATED")
    csv = pd.read_csv(tmp_path / "t.csv")
    assert list(csv.columns) == ["run", "judge", "agreement %"] and set(csv["run"]) == {"SIMULATED"}
    assert "SIMULATED" in (tmp_path / "t.tex").read_text() and list(table.columns) == ["judge", "agreement %"]
    tables.write(table, tmp_path / "u.csv", tmp_path / "u.tex", "Agreement")
    assert "run" not in pd.read_csv(tmp_path / "u.csv").columns
    assert "SIMULATED" not in (tmp_path / "u.tex").read_text()
