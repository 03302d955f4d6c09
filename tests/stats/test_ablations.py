"""The exploratory ablations table (heart.stats.ablations) and its figure, on SYNTHETIC judgments: the main
ranker is the leaderboard's fit, ties reach the ties model only, every row is labelled exploratory, and the
rank changes and Kendall tau are those of the scores."""

import math

import pandas as pd

import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy import stats

from support.judgments import judgment
from support.tables import judgments_frame
from heart.figures import ablations as figure
from heart.stats import ablations, leaderboard
from heart.stats import bradley_terry as bt

SOFT = {1: 0.55, 2: 0.65, 3: 0.75, 4: 0.85, 5: 0.95}


def synthetic(n_conv=60, seed=1, ties=0.1):
    """SYNTHETIC votes of two LLM judges and one human rater on 5 systems of a Bradley-Terry world."""
    rng = np.random.default_rng(seed)
    systems, theta = [f"s{k}" for k in range(5)], np.linspace(1.0, -1.0, 5)
    rows = []
    for c in range(n_conv):
        for p in range(4):
            i, j = rng.choice(5, 2, replace=False)
            pr = 1 / (1 + math.exp(-(theta[i] - theta[j])))
            for judge in ("j1", "j2", "human:r1"):
                u = rng.random()
                r = judgment(f"c{c}p{p}", f"conv{c}", judge,
                             None if u < ties else ("a" if rng.random() < pr else "b"),
                             system_a=systems[i], system_b=systems[j])
                if r["winner"]:
                    r["strength"] = int(rng.integers(1, 6))
                rows.append(r)
    return judgments_frame(rows)


def run(judgments, source="llm", n_boot=50, **kw):
    return ablations.ablations(judgments, source, n_boot=n_boot, seed=3, alpha=0.01, ci=0.95,
                               elo_k=kw.pop("elo_k", 4), soft=kw.pop("soft", SOFT), **kw)


def test_the_main_ranker_is_the_leaderboards_fit_and_every_row_is_exploratory():
    j = synthetic()
    table = run(j)
    assert (table["label"] == ablations.LABEL).all() and "exploratory" in ablations.LABEL
    assert list(dict.fromkeys(table["ranker"])) == list(ablations.RANKERS)
    main = table[table["ranker"] == ablations.MAIN].set_index("system")
    comp = bt.comparisons(leaderboard.select(j, "all", "llm"))
    want = bt.ratings(comp, sorted(main.index), n_boot=0).set_index("system")["elo"]
    assert main["score"].to_numpy() == pytest.approx(want.loc[main.index].to_numpy(), abs=1e-9)
    assert (main["rank"] == main["rank_main"]).all() and (main["tau"] == 1).all()
    assert main["n_comparisons"].iloc[0] == len(comp)


def test_ties_are_the_ties_models_only_and_rank_changes_follow_the_scores():
    j = synthetic()
    table = run(j)
    llm = leaderboard.select(j, "all", "llm")
    n_ties = int(llm["status"].isin(["tie", "inconsistent"]).sum())
    assert n_ties > 0 and (table["n_ties"] == n_ties).all()
    assert "nu = " in table.loc[table["ranker"] == "davidson_ties", "parameter"].iloc[0]
    for ranker, rows in table.groupby("ranker"):
        rows = rows.set_index("system")
        want = stats.rankdata(-rows["score"].to_numpy(), method="min")
        assert rows["rank"].tolist() == want.tolist(), ranker
        assert (rows["rank_change"] == rows["rank_main"] - rows["rank"]).all()
        main = table[table["ranker"] == ablations.MAIN].set_index("system").loc[rows.index, "score"]
        assert rows["tau"].iloc[0] == pytest.approx(stats.kendalltau(main, rows["score"]).statistic)
        assert -1 <= rows["tau_lo"].iloc[0] <= rows["tau_hi"].iloc[0] <= 1 and rows["n_tau"].iloc[0] == 50
        moved = [f"{s} {r['rank_main']}->{r['rank']}" for s, r in rows.iterrows() if r["rank"] != r["rank_main"]]
        assert rows["moved"].iloc[0] == ("; ".join(moved) or "none")
    # the human rater's "about the same" counts in the combined source, not in the LLM judges'
    combined = run(j, source="combined")
    assert combined["n_ties"].iloc[0] == int(j["status"].isin(["tie", "inconsistent"]).sum()) > n_ties


def test_without_ties_the_ties_model_is_bradley_terry_on_counts():
    j = synthetic(ties=0.0)
    table = run(j, n_boot=0).set_index(["ranker", "system"])
    assert (table["n_ties"] == 0).all()
    counts = bt.comparisons(leaderboard.select(j, "all", "llm"), weighted=False)
    systems = sorted(set(counts["winner"]) | set(counts["loser"]))
    want = bt.ratings(counts, systems, n_boot=0).set_index("system")["elo"]
    got = table.loc["davidson_ties"].loc[systems, "score"]
    assert got.to_numpy() == pytest.approx(want.to_numpy(), abs=1e-6)
    assert "no ties" in table.loc["davidson_ties", "parameter"].iloc[0]
    assert table["tau_lo"].isna().all()  # no bootstrap, no interval


def test_soft_scores_of_one_half_give_no_information_and_bad_ones_are_refused():
    j = synthetic()
    flat = run(j, n_boot=0, soft=dict.fromkeys(range(1, 6), 0.5))
    assert flat.loc[flat["ranker"] == "release_soft", "score"].to_numpy() == pytest.approx(1500.0)
    with pytest.raises(ValueError, match="release_soft_scores"):
        run(j, soft={1: 0.6})
    # string keys, as a YAML file may give them, are read as strengths
    assert run(j, n_boot=0, soft={str(k): v for k, v in SOFT.items()})["score"].notna().all()


def test_no_judgments_of_the_source_say_absent():
    j = synthetic()
    table = run(j[j["judge_kind"] == "human"], source="llm")
    assert (table["status"] == "absent").all() and table["note"].str.contains("no decided comparison").all()
    assert "absent" in ablations.wide(table).iloc[0, 0]
    assert isinstance(figure.ablations(table), Figure)


def test_the_wide_table_and_the_figure():
    table = run(synthetic())
    wide = ablations.wide(table, {"s0": "System Zero"})
    assert wide.columns[0].startswith("exploratory") and wide.iloc[0, 0] == "System Zero"
    assert wide.iloc[-1, 0] == "Kendall tau [CI]" and wide.iloc[-1, 1].startswith("1.000 [")
    fig = figure.ablations(table, labels={"s0": "System Zero"})
    left, right = fig.axes[:2]
    assert len(left.lines) == table["system"].nunique()
    assert "System Zero" in left.get_yticklabels()[0].get_text()
    assert len(right.get_yticklabels()) == len(ablations.RANKERS) - 1
    assert "EXPLORATORY" in fig._supxlabel.get_text()


def test_online_elos_interval_comes_from_the_bootstraps_first_replicates():
    table = run(synthetic(n_conv=20), n_boot=ablations.ONLINE_BOOT + 10).drop_duplicates("ranker").set_index("ranker")
    assert table.at["online_elo", "n_tau"] == ablations.ONLINE_BOOT
    assert table.at["davidson_ties", "n_tau"] == ablations.ONLINE_BOOT + 10


def test_the_release_soft_score_fit_by_hand():
    """One comparison: s0 beats s1 at strength 3. The release gives the winner 0.75 and the loser 0.25, so the
    fit (the release's ridge, 2e-6) has exp(theta_0 - theta_1) = 0.75 / 0.25 = 3: 400 log10(3) = 190.8 Elo."""
    rows = [judgment("p1", "c1", "j1", "a", system_a="s0", system_b="s1")]
    rows[0]["strength"] = 3
    table = run(judgments_frame(rows), n_boot=0).set_index(["ranker", "system"])["score"]
    gap = table[("release_soft", "s0")] - table[("release_soft", "s1")]
    assert gap == pytest.approx(400 * math.log10(3), abs=0.01)  # the ridge moves it by 0.001
    assert table[("release_soft", "s0")] + table[("release_soft", "s1")] == pytest.approx(3000)


def test_a_system_with_only_ties_has_no_win_rate_and_ranks_last_there():
    j = synthetic(n_conv=20)
    tie = judgment("tie-only", "conv-x", "j1", None, system_a="s0", system_b="s9")  # s9 only ever tied
    table = run(judgments_frame([*j.to_dict("records"), tie]), n_boot=0).set_index(["ranker", "system"])
    assert np.isnan(table.loc[("win_rate", "s9"), "score"])
    assert table.loc[("win_rate", "s9"), "rank"] == table.xs("win_rate")["rank"].max() == 6


def test_online_elo_does_not_depend_on_the_tables_row_order():
    """A bundle's pseudonymous pair ids reorder the judgments table: every ranker, online Elo included, gives the
    same table for the same judgments in any row order."""
    j = synthetic(n_conv=30)
    one = run(j, n_boot=20)
    other = run(j.sample(frac=1, random_state=5).reset_index(drop=True), n_boot=20)
    pd.testing.assert_frame_equal(one, other)
