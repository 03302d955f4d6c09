"""heart.tables: the paper's tables name the intervals' coverage the configuration asked for (stats.ci)."""

import pandas as pd

from heart import tables


def test_interval_columns_are_named_after_the_configured_coverage():
    board = pd.DataFrame({"system": ["a"], "status": ["estimated"], "elo": [1010.0], "elo_lo_asym": [990.0],
                          "elo_hi_asym": [1030.0], "elo_lo_boot": [985.0], "elo_hi_boot": [1035.0],
                          "win_pct": [55.0], "n_comparisons": [40], **{f"{a}_pct": [50.0] for a in "HEART"}})
    assert tables.ci_label(0.95) == "95% CI" and tables.ci_label(0.9) == "90% CI" and tables.ci_label(0.995) == "99.5% CI"
    at_90 = tables.leaderboard(board, ci=0.9)
    assert "Elo 90% CI (asymptotic)" in at_90 and "Elo 90% CI (bootstrap)" in at_90
    assert not [c for c in at_90 if "95%" in c]
    assert at_90.loc[0, "Elo 90% CI (bootstrap)"] == tables.leaderboard(board).loc[0, "Elo 95% CI (bootstrap)"]
