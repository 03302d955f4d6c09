"""heart.stats.leaderboard and heart.stats.multiple_testing on SIMULATED judgments (heart.simulation.simulate),
labelled as such."""

import numpy as np
import pandas as pd
import pytest

from heart.stats import bradley_terry as bt
from heart.stats import best_human, figure4, leaderboard
from heart.stats import multiple_testing
from heart.simulation import simulate
from heart.common import tableio
from heart.common.vocabulary import AXES


@pytest.fixture(scope="module")
def sim():
    return simulate.judgments(n_items=60, n_adversarial=6, pairs_per_item=12, human_pairs=80, seed=3)


def test_simulated_tables_say_so(sim):
    j, _ = sim
    assert j.attrs["simulated"] and j["judge"].str.contains("sim-").all()
    tableio.to_arrow(j, "judgments")  # the simulation has the real table's schema


def test_every_scope_lists_every_system_and_recovers_the_truth(sim):
    j, theta = sim
    ratings, sep = leaderboard.leaderboard(j, n_boot=50, seed=0)
    tableio.to_arrow(ratings, "ratings")
    tableio.to_arrow(sep, "separability")
    n_sources = 3 + j.loc[j["judge_kind"] == "llm", "judge"].nunique()
    assert len(sep) == 6 * 3 * n_sources
    assert ratings.groupby(["axis", "subset", "source"]).size().eq(theta.size + 1).all()  # + best-human
    overall = ratings[(ratings.axis == "overall") & (ratings.subset == "all") & (ratings.source == "llm")]
    est = overall.set_index("system")["theta"]
    assert np.corrcoef(est[theta.index], theta)[0, 1] > 0.9  # SIMULATED truth is recovered
    ok = ratings[ratings.status == "ok"]
    assert (ok.elo_lo_boot <= ok.elo).all() and (ok.elo <= ok.elo_hi_boot).all()


def test_judge_sources_are_kept_apart(sim):
    j, _ = sim
    ratings, _ = leaderboard.leaderboard(j, n_boot=0, axes=("overall",), subsets=("all",))
    n = ratings.set_index(["source", "system"])["n_comparisons"]
    human = j[(j.judge_kind == "human") & (j.status == "ok")]
    assert n[("human", "human")] == ((human.system_a == "human") | (human.system_b == "human")).sum()
    one = j[(j.judge == "sim-judge-1") & (j.status == "ok")]
    assert n[("judge:sim-judge-1", "original")] == ((one.system_a == "original") | (one.system_b == "original")).sum()


def test_absent_humans_are_absent_not_zero(sim):
    j, _ = sim
    ratings, sep = leaderboard.leaderboard(j[j.judge_kind == "llm"], n_boot=0, axes=("overall",))
    human = ratings[ratings.source == "human"]
    assert (human.status == "absent").all() and human.elo.isna().all()
    assert human.note.str.contains("no human judgments").all()
    assert (sep.loc[sep.source == "human", "status"] == "absent").all()


def test_a_scope_that_cannot_be_put_on_one_scale_says_why():
    j = pd.DataFrame({"pair_id": ["p1", "p2"], "item_id": ["i1", "i2"], "conversation_id": [1, 2],
                      "subset": "regular", "system_a": ["m1", "m3"], "system_b": ["m2", "m4"], "judge": "j",
                      "judge_kind": "llm", "status": "ok", "winner": ["a", "a"],
                      "strength": pd.array([2, 3], dtype="Int64"),
                      **{f"axis_{a}": pd.array([0, 0], dtype="Int64") for a in "HEART"}})
    ratings, _ = leaderboard.leaderboard(j, n_boot=0, axes=("overall",), subsets=("all",))
    llm = ratings[ratings.source == "llm"]
    assert (llm.status == "not_estimable").all() and llm.note.str.contains("never compared").all()


def test_headline_has_figure_4s_columns(sim):
    j, _ = sim
    ratings, _ = leaderboard.leaderboard(j, n_boot=20)
    head = figure4.headline(ratings)  # the paper's: LLM judges, per-axis percentiles
    tableio.to_arrow(head, "leaderboard")
    assert list(head["elo"]) == sorted(head["elo"], reverse=True)
    axes = head[[f"{a}_pct" for a in "HEART"]]
    assert axes.stack().between(0, 100).all()
    # percentiles of a fit's own systems average exactly 50 (the pair probabilities sum to one)
    assert np.allclose(axes[~head["derived"]].mean(), 50.0)
    llm = ratings[(ratings.source == "llm") & (ratings.subset == "all")]
    assert head.set_index("system")["win_pct"].to_dict() == pytest.approx(
        (100 * llm[llm.axis == "overall"].set_index("system")["win_rate"]).to_dict())


# --- Figure 4's percentiles, columns and judges (hand-built ratings) --------------------------------

LN3 = np.log(3.0)


def _scope(axis, source, thetas, win_rates=None, status="ok", derived=()):
    """Rating rows of one hand-built scope: theta per system (None: absent), Elo from theta (§9.8)."""
    rows = []
    for system, theta in thetas.items():
        ok = theta is not None and status == "ok"
        rows.append({"axis": axis, "subset": "all", "source": source, "status": "ok" if ok else status,
                     "note": None, "derived": system in derived, "system": system,
                     "theta": theta if ok else np.nan, "elo": bt.ELO_BASE + bt.ELO_SCALE * theta if ok else np.nan,
                     "n_comparisons": 10 if ok else pd.NA, "wins": pd.NA,
                     "win_rate": (win_rates or {}).get(system, np.nan) if ok else np.nan})
    return rows


def _hand_ratings(human_axes_status="absent"):
    """Three systems with theta ln 3, 0, -ln 3 on every scope of "llm"; "combined" has other thetas; the
    human raters rated the overall verdict only (no axis marks, unless ``human_axes_status`` is "ok")."""
    thetas = {"a": LN3, "b": 0.0, "c": -LN3}
    rows = []
    for axis in ("overall", *AXES):
        rows += _scope(axis, "llm", thetas, {"a": 0.7, "b": 0.5, "c": 0.25})
        rows += _scope(axis, "combined", {"a": 0.0, "b": LN3, "c": -LN3}, {"a": 0.45, "b": 0.6, "c": 0.2})
        rows += _scope(axis, "judge:j1", thetas, {"a": 0.7, "b": 0.5, "c": 0.25})
        human_ok = axis == "overall" or human_axes_status == "ok"
        rows += _scope(axis, "human", {"a": 0.1, "b": 0.0, "c": -0.1}, {"a": 0.5, "b": 0.5, "c": 0.5},
                       status="ok" if human_ok else human_axes_status)
    return pd.DataFrame(rows).reindex(columns=leaderboard.COLUMNS)


def test_percentiles_of_three_systems_with_known_theta():
    # theta a = ln 3, b = 0, c = -ln 3: sigmoid(ln 3) = 3/4, sigmoid(2 ln 3) = 9/10, so
    # a: (3/4 + 9/10) / 2 = 82.5 %; b: (1/4 + 3/4) / 2 = 50 %; c: (1/10 + 1/4) / 2 = 17.5 %
    scope = pd.DataFrame(_scope("H", "llm", {"a": LN3, "b": 0.0, "c": -LN3, "gone": None}))
    pct = figure4.percentiles(scope)
    assert pct[["a", "b", "c"]].tolist() == pytest.approx([82.5, 50.0, 17.5])
    assert np.isnan(pct["gone"])  # no estimate: no percentile, not zero
    # best-human (theta 2 ln 3) against the field without the pooled human (here "c") and without itself:
    # sigmoid(2 ln 3 - ln 3) = 3/4 against a, sigmoid(2 ln 3) = 9/10 against b: 82.5 %; it is in nobody's field
    scope = pd.DataFrame(_scope("H", "llm", {"a": LN3, "b": 0.0, "human": -LN3, "best-human": 2 * LN3},
                                derived=("best-human",)))
    pct = figure4.percentiles(scope)
    assert pct.tolist() == pytest.approx([82.5, 50.0, 17.5, 82.5])


def test_headline_columns_and_source_switches():
    ratings = _hand_ratings()
    head = figure4.headline(ratings).set_index("system")  # default: the paper's llm / percentile
    assert head.index.tolist() == ["a", "b", "c"]  # by Elo
    for axis in AXES:
        assert head[f"{axis}_pct"].tolist() == pytest.approx([82.5, 50.0, 17.5])
    assert head["win_pct"].tolist() == pytest.approx([70.0, 50.0, 25.0])  # raw overall win rate, not a percentile
    raw = figure4.headline(ratings, columns="win_rate").set_index("system")
    assert raw["H_pct"].tolist() == pytest.approx([70.0, 50.0, 25.0])
    combined = figure4.headline(ratings, source="combined").set_index("system")
    assert combined.index.tolist() == ["b", "a", "c"]  # combined's thetas: b ln 3, a 0, c -ln 3
    assert combined.loc[["b", "a", "c"], "T_pct"].tolist() == pytest.approx([82.5, 50.0, 17.5])
    assert combined.loc["a", "win_pct"] == pytest.approx(45.0)
    human = figure4.headline(ratings, source="human").set_index("system")
    assert human[[f"{a}_pct" for a in AXES]].isna().all().all()  # no axis marks: absent, not 0
    with pytest.raises(ValueError, match="not in the ratings"):
        figure4.headline(ratings, source="judge:nobody")
    with pytest.raises(ValueError, match="columns must be one of"):
        figure4.headline(ratings, columns="rank")


def test_column_sources_say_who_judged_each_column():
    ratings = _hand_ratings()
    assert figure4.column_sources(ratings, "llm") == {"elo": "LLM judges", "win": "LLM judges",
                                                           "axes": "LLM judges"}
    # combined: humans judged the overall verdict but marked no axis
    assert figure4.column_sources(ratings, "combined") == {
        "elo": "LLM judges and human raters", "win": "LLM judges and human raters", "axes": "LLM judges"}
    assert figure4.column_sources(ratings, "human")["axes"] == "absent (no axis marks from human raters)"
    assert figure4.column_sources(ratings, "judge:j1")["elo"] == "LLM judge j1"
    marked = figure4.column_sources(_hand_ratings(human_axes_status="ok"), "combined")
    assert marked["axes"] == "LLM judges and human raters"
    failed = figure4.column_sources(_hand_ratings(human_axes_status="not_estimable"), "human")
    assert failed["axes"].startswith("not estimable")
    text = figure4.describe(ratings, "combined")
    assert "percentile" in text and "(judges: LLM judges)" in text and "LLM judges and human raters" in text
    assert "win rate = share" in figure4.describe(ratings, "llm", "win_rate")


# --- Best Human (Figure 4, §9.3) ----------------------------------------------------------------

def _judgment(item, a, b, winner, conv=None, contributor_a=None, contributor_b=None, strength=3, judge="j1"):
    return {"pair_id": f"{item}|{a}{contributor_a or ''}|{b}{contributor_b or ''}|{judge}", "item_id": item,
            "conversation_id": conv or f"conv-{item}", "subset": "regular", "system_a": a,
            "contributor_a": contributor_a, "system_b": b, "contributor_b": contributor_b, "judge": judge,
            "judge_kind": "llm", "status": "ok", "winner": winner, "strength": strength}


def _frame(rows):
    j = pd.DataFrame(rows)
    j["strength"] = j["strength"].astype("Int64")
    for a in "HEART":
        j[f"axis_{a}"] = pd.array([pd.NA] * len(j), dtype="Int64")
    return j


def _hand_made():
    """Three contexts, hand-made: i1 has a clear best writer (w2), i2 a tie on win share broken by the
    number of comparisons (b), i3 a full tie broken by the contributor id (y)."""
    h = "human"
    rows = [  # i1: w2 wins 2 of 2, w1 1 of 2, w3 0 of 2
        _judgment("i1", "m1", h, "b", contributor_b="w2"), _judgment("i1", h, "m2", "a", contributor_a="w2"),
        _judgment("i1", "m1", h, "a", contributor_b="w1"), _judgment("i1", h, "m2", "a", contributor_a="w1"),
        _judgment("i1", "m1", h, "a", contributor_b="w3"), _judgment("i1", h, "m2", "b", contributor_a="w3"),
        # i2: a wins 1 of 2, b wins 2 of 4 (same share, more comparisons)
        _judgment("i2", "m1", h, "b", contributor_b="a"), _judgment("i2", "m2", h, "a", contributor_b="a"),
        _judgment("i2", "m1", h, "b", contributor_b="b"), _judgment("i2", "m2", h, "a", contributor_b="b"),
        _judgment("i2", "m1", h, "b", contributor_b="b", judge="j2"),
        _judgment("i2", "m2", h, "a", contributor_b="b", judge="j2"),
        # i3: z and y each win 1 of 2
        _judgment("i3", "m1", h, "a", contributor_b="z"), _judgment("i3", "m2", h, "b", contributor_b="z"),
        _judgment("i3", "m1", h, "b", contributor_b="y"), _judgment("i3", "m2", h, "a", contributor_b="y"),
        # the models among themselves
        _judgment("i1", "m1", "m2", "a"), _judgment("i2", "m1", "m2", "b"), _judgment("i3", "m1", "m2", "a"),
    ]
    return _frame(rows)


def test_best_human_is_the_top_completion_per_context_with_documented_tie_breaks():
    choice = best_human.best_human(leaderboard.judged(_hand_made()))
    assert list(choice.columns) == best_human.BEST_HUMAN_COLUMNS
    best = choice[choice["best"]].set_index("item_id")
    assert best["contributor"].to_dict() == {"i1": "w2", "i2": "b", "i3": "y"}
    assert choice.loc[choice.item_id == "i1", "contributor"].tolist() == ["w2", "w1", "w3"]  # ranked
    assert best.loc["i1", ["n_comparisons", "wins"]].tolist() == [2, 2]
    assert best.loc["i2", ["n_comparisons", "wins"]].tolist() == [4, 2]  # 2/4 beats 1/2: more comparisons
    assert choice.groupby("item_id")["best"].sum().eq(1).all()


def test_a_missing_contributor_id_is_one_completion_per_context():
    j = _hand_made().drop(columns=["contributor_a", "contributor_b"])
    choice = best_human.best_human(leaderboard.judged(j))
    assert choice["contributor"].eq("").all() and choice["best"].all() and len(choice) == 3
    with pytest.raises(ValueError, match="item_id"):
        best_human.best_human(leaderboard.judged(j.drop(columns="item_id")))


def test_best_human_is_rated_on_the_chosen_comparisons_and_flagged():
    j = _hand_made()
    ratings, _ = leaderboard.leaderboard(j, n_boot=0, axes=("overall",), subsets=("all",))
    tableio.to_arrow(ratings, "ratings")
    r = ratings[ratings.source == "combined"].reset_index(drop=True)
    assert r.system.tolist().index("best-human") == r.system.tolist().index("human") + 1  # next to it
    best = r.set_index("system").loc["best-human"]
    assert best.status == "ok" and best.derived and not r.loc[r.system != "best-human", "derived"].any()
    assert "after judging" in best.note and "flattered" in best.note
    # its record: the chosen completions' comparisons only (w2 2/2, b 2/4, y 1/2)
    assert (best.n_comparisons, best.wins) == (8, 5)
    human = r.set_index("system").loc["human"]
    assert (human.n_comparisons, human.wins) == (16, 8)
    assert best.elo > human.elo  # chosen after judging: flattered
    head = figure4.headline(ratings)
    tableio.to_arrow(head, "leaderboard")
    row = head.set_index("system").loc["best-human"]
    assert row.derived and "after judging" in row.note and row.win_pct == pytest.approx(62.5)
    assert not head.loc[head.system != "best-human", "derived"].any()


def test_best_human_elo_is_put_on_the_main_fits_scale():
    j = _hand_made()
    ratings, _ = leaderboard.leaderboard(j, n_boot=0, axes=("overall",), subsets=("all",))
    r = ratings[ratings.source == "combined"].set_index("system")
    full = leaderboard.judged(j)
    second = bt.ratings(best_human.best_human_comparisons(full, best_human.best_human(full)),
                        n_boot=0).set_index("system")
    shared = ["m1", "m2"]
    shift = (r.loc[shared, "elo"] - second.loc[shared, "elo"]).mean()
    assert shift > 0  # a stronger system lowers the centre of the second fit's raw Elo scale
    assert r.loc["best-human", "elo"] == pytest.approx(second.loc["best-human", "elo"] + shift)
    assert r.loc["best-human", "theta"] == pytest.approx((r.loc["best-human", "elo"] - 1500) / bt.ELO_SCALE)
    lo, hi = r.loc["best-human", ["elo_lo_asym", "elo_hi_asym"]]
    lo2, hi2 = second.loc["best-human", ["elo_lo_asym", "elo_hi_asym"]]
    assert (lo, hi) == (pytest.approx(lo2 + shift), pytest.approx(hi2 + shift))


@pytest.fixture(scope="module")
def sim_writers():
    """SIMULATED judgments whose human completions come from three writers (random per pair)."""
    j, _ = simulate.judgments(n_items=40, n_adversarial=4, pairs_per_item=12, human_pairs=60, seed=5)
    rng = np.random.default_rng(1)
    for side in "ab":
        human = j[f"system_{side}"].eq("human")
        j.loc[human, f"contributor_{side}"] = rng.choice(["w1", "w2", "w3"], human.sum())
    return j


def test_best_human_leaves_the_main_fit_unchanged(sim_writers):
    j = sim_writers
    ratings, sep = leaderboard.leaderboard(j, n_boot=30, seed=4, axes=("overall", "H"), subsets=("all",))
    cols = [c for c in bt.RATING_COLUMNS if c != "system"]
    for axis in ("overall", "H"):
        for source in ("combined", "llm", "human"):
            r = ratings[(ratings.axis == axis) & (ratings.source == source)].set_index("system")
            comp = bt.comparisons(leaderboard.select(j, "all", source),
                                  axis=None if axis == "overall" else axis)
            if comp.empty:
                assert (r.status == "absent").all() and "best-human" in r.index
                continue
            main = bt.ratings(comp, n_boot=30, seed=4).set_index("system")
            # every fitted system, the pooled human included, is exactly the fit without best-human
            got = r.loc[main.index, cols].astype(main[cols].dtypes.to_dict())
            pd.testing.assert_frame_equal(got, main[cols])
            assert r.loc["best-human", "status"] == "ok" and r.loc["best-human", "derived"]
            assert r.loc["best-human", "n_comparisons"] < r.loc["human", "n_comparisons"]
            s = sep[(sep.axis == axis) & (sep.source == source)].iloc[0]
            assert s.n_systems == len(main)  # separability is the main fit's


def test_one_human_completion_per_context_repeats_the_pooled_row(sim):
    j, _ = sim  # every human completion from "sim-person-1"
    ratings, _ = leaderboard.leaderboard(j, n_boot=10, axes=("overall",), subsets=("all",))
    r = ratings[ratings.source == "combined"].set_index("system")
    cols = [c for c in bt.RATING_COLUMNS if c != "system"]
    assert r.loc["best-human", cols].tolist() == r.loc["human", cols].tolist()
    assert "repeats the pooled human row" in r.loc["best-human", "note"]


def test_no_human_completions_no_best_human_row(sim):
    j, _ = sim
    models_only = j[(j.system_a != "human") & (j.system_b != "human")]
    ratings, _ = leaderboard.leaderboard(models_only, n_boot=0, axes=("overall", "H"))
    assert not ratings.system.isin(["human", "best-human"]).any() and not ratings.derived.any()
    assert "best-human" not in set(figure4.headline(ratings).system)


def test_string_conversation_ids_give_the_integer_ids_ratings(sim):
    j, _ = sim  # ids 100000 + i: as text they sort in the same order
    scopes = {"n_boot": 20, "axes": ("overall",), "subsets": ("all", "regular")}
    as_int, sep_int = leaderboard.leaderboard(j.assign(conversation_id=j.conversation_id.astype(int)), **scopes)
    as_str, sep_str = leaderboard.leaderboard(j.assign(conversation_id=j.conversation_id.astype(str)), **scopes)
    pd.testing.assert_frame_equal(as_int, as_str)
    pd.testing.assert_frame_equal(sep_int, sep_str)


def test_multiple_testing_adjusts_within_families_only():
    a = pd.DataFrame({"judge": ["x", "y", "z"], "share_shown_a": [0.6, 0.5, 0.7], "ci_low": 0.4, "ci_high": 0.8,
                      "p_value": [0.01, 0.04, 0.03], "family": "position_bias", "status": "ok"})
    b = pd.DataFrame({"measure": ["z_mean"], "r": [0.3], "ci_low": 0.1, "ci_high": 0.5, "p_value": [0.04],
                      "family": "factor_win_correlation", "status": "ok"})
    out = multiple_testing.collect({"bias_position": a, "factor_correlations": b})
    tableio.to_arrow(out, "tests")
    pos = out[out.family == "position_bias"].set_index("test")["p_adj"]
    expected, _ = multiple_testing.bh([0.01, 0.04, 0.03])
    assert np.allclose(pos[["x", "y", "z"]], expected)
    assert out.loc[out.family == "factor_win_correlation", "p_adj"].item() == pytest.approx(0.04)
    with pytest.raises(ValueError, match="no test specification"):
        multiple_testing.collect({"mystery": a})


def _paper_figure4_elo() -> pd.Series:
    from heart import WORKFLOW_DIR
    from heart.stats import external
    from heart.tables import paper_comparison

    spec = paper_comparison.load(WORKFLOW_DIR / "resources/paper/headline_numbers.yaml")
    return paper_comparison.figure4_elo(spec, external.load_models())


def test_the_papers_figure_4_elo_values_are_one_fit_of_18_systems():
    elo = _paper_figure4_elo()
    assert len(elo) == 18 and {"best-human", "original", "polaris-4.0"} <= set(elo.index)
    assert elo.sum() / 18 == pytest.approx(1500.0, abs=1e-9)  # what tells a single fit: the Elo centre


def test_in_fit_gives_the_papers_figure_4_back_known_answer():
    """SIMULATED judgments drawn at the paper's 18 Figure 4 Elo values (Best Human one writer per context, so
    the chosen completion is the only one): the paper's way (best_human in_fit) fits Best Human as one of 18
    systems with no pooled human row, their Elo average 1500, and the values come back inside their 95 %
    bootstrap intervals. Each interval covers with 95 %, so all 18 at once only with 0.95^18 = 40 %: measured
    over 30 draws, 94.8 % of the values were inside, a mean error of 2.7-5.0 Elo, at most 16.9. Asked here:
    16 of 18 inside (a draw fails this 6 % of the time; this one is fixed), mean error under 6, none over 20;
    a shifted or shrunk scale fails all three."""
    truth = _paper_figure4_elo()
    j = simulate.at_elo(truth.rename({"best-human": "human"}), seed=0)
    ratings, _ = leaderboard.leaderboard(j, n_boot=200, seed=3, axes=("overall",), subsets=("all",),
                                         best_human="in_fit")
    tableio.to_arrow(ratings, "ratings")
    head = figure4.headline(ratings).set_index("system")
    assert len(head) == 18 and "human" not in head.index and head["elo"].mean() == pytest.approx(1500.0)
    h = head.loc[truth.index]
    assert ((h["elo_lo_boot"] <= truth) & (truth <= h["elo_hi_boot"])).sum() >= 16
    error = (h["elo"] - truth).abs()
    assert error.mean() < 6 and error.max() < 20
    best = head.loc["best-human"]
    assert best["derived"] and "one fit in place of the pooled human" in best["note"]
    # the default (derived) lists the pooled human and best-human beside it: 19 rows, not the paper's figure
    derived, _ = leaderboard.leaderboard(j, n_boot=0, axes=("overall",), subsets=("all",))
    assert len(figure4.headline(derived)) == 19


def test_in_fit_with_three_writers_is_the_second_fit_itself(sim_writers):
    """With several writers per context, best_human in_fit is one fit on the chosen completions' comparisons
    (the others' left out), untranslated: exactly bradley_terry on best_human_comparisons, Elo mean 1500,
    percentiles over the fit's own systems (best-human among them) averaging 50."""
    j = sim_writers
    ratings, sep = leaderboard.leaderboard(j, n_boot=20, seed=4, axes=("overall", "H"), subsets=("all",),
                                           best_human="in_fit")
    for axis in ("overall", "H"):
        r = ratings[(ratings.axis == axis) & (ratings.source == "llm")].set_index("system")
        assert "human" not in r.index and r.loc["best-human", "derived"]
        full = leaderboard.judged(leaderboard.select(j, "all", "llm"), axis)
        one = bt.ratings(best_human.best_human_comparisons(full, best_human.best_human(full)), n_boot=20,
                         seed=4).set_index("system")
        cols = ["elo", "elo_lo_asym", "elo_hi_asym", "elo_lo_boot", "elo_hi_boot", "n_comparisons"]
        pd.testing.assert_frame_equal(r.loc[one.index, cols].astype(one[cols].dtypes.to_dict()), one[cols])
        assert r["elo"].mean() == pytest.approx(1500.0)
        assert figure4.percentiles(r.reset_index()).mean() == pytest.approx(50.0)
    with pytest.raises(ValueError, match="best_human must be one of"):
        leaderboard.leaderboard(j, best_human="pooled")
