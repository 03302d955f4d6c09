"""heart.stats.style_control: the warmth lexicon, the style-controlled Bradley–Terry fit, its intervals and tables
(SYNTHETIC judgments and completions, labelled)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from heart.stats import bradley_terry as bt
from heart.stats import style_control as sc
from heart.stats import style_features
from heart.common import tableio

LEXICON = Path(__file__).resolve().parents[2] / "workflow/resources/style/warmth.yaml"


@pytest.fixture(scope="module")
def lexicon():
    return style_features.load_lexicon(LEXICON)


# --- the lexicon and the features -------------------------------------------------------------

def test_warmth_is_lexicon_hits_per_100_words(lexicon):
    assert isinstance(lexicon.version, int) and lexicon.version >= 1
    assert {"sympathy", "validation", "reassurance", "politeness"} <= set(lexicon.groups)
    # the paper's example (§4.4): "sorry" and "That sounds really tough" = 2 hits in 11 words
    text = "I'm really sorry you're feeling this way. That sounds really tough."
    assert lexicon.hits(text) == 2 and lexicon.score(text) == pytest.approx(100 * 2 / 11)
    # "thank you for sharing" is one hit (longest term first), "I hope", "Please", "take care of yourself":
    # 4 hits in 13 words
    text = "Thank you for sharing. I hope it helps. Please take care of yourself."
    assert lexicon.hits(text) == 4 and lexicon.score(text) == pytest.approx(100 * 4 / 13)
    # a curly apostrophe reads as a straight one: "It's completely okay to", "valid", "you're not alone" = 3 in 15
    text = "It\u2019s completely okay to feel this way; your feelings are valid and you're not alone."
    assert lexicon.hits(text) == 3 and lexicon.score(text) == pytest.approx(100 * 3 / 15)
    # word-bounded: "invalidate" and "sorrys" are not hits; a concrete suggestion is not warm
    assert lexicon.hits("Do not invalidate it; sorrys are cheap.") == 0
    assert lexicon.score("You could call your landlord tomorrow and ask for a week.") == 0.0
    assert lexicon.score("") == 0.0 and lexicon.score(None) == 0.0


def test_a_broken_lexicon_names_file_and_entry(tmp_path):
    bad = tmp_path / "w.yaml"
    bad.write_text("version: 0\ngroups:\n  a: {terms: [sorry, '  ']}\n  b: {patterns: ['(']}\n  c: {words: [x]}\n")
    with pytest.raises(ValueError) as err:
        style_features.load_lexicon(bad)
    lines = str(err.value).splitlines()
    assert all(line.startswith(f"{bad}: ") for line in lines) and len(lines) == 4
    for problem in ("version must be a positive integer", "groups.a.terms[1] must be a non-empty string",
                    "groups.b.patterns[0]: bad pattern", "groups.c needs terms or patterns"):
        assert any(problem in line for line in lines), problem
    bad.write_text("version: 2\n")
    with pytest.raises(ValueError, match="groups must be a non-empty mapping"):
        style_features.load_lexicon(bad)
    bad.write_text("version: 2\ngroups:\n  a: {terms: [so sorry, sorry], patterns: ['\\bthat must hurt\\b']}\n")
    lex = style_features.load_lexicon(bad)
    # "so sorry" is one hit (the longer term first), "sorry" one, the pattern one: 3
    assert lex.version == 2 and lex.hits("So sorry. Sorry again, that must hurt.") == 3


def test_features_match_human_completions_by_contributor(lexicon):
    """SYNTHETIC: context i1 has two human completions (h1 short and warm, h2 long and plain) and one of m1; the
    pair is judged on h2, so h2's length (6 words) and warmth (0) are used, not h1's or the mean."""
    texts = pd.DataFrame([
        {"item_id": "i1", "system": "human", "contributor_id": "h1", "text": "So sorry."},
        {"item_id": "i1", "system": "human", "contributor_id": "h2", "text": "Call her tonight and ask directly."},
        {"item_id": "i1", "system": "m1", "contributor_id": None, "text": "Thank you for sharing."},
    ])
    feats = style_features.completion_features(texts, lexicon)
    assert feats["contributor"].tolist() == ["h1", "h2", ""]
    assert feats["words"].tolist() == [2, 6, 4] and feats["warmth_hits"].tolist() == [1, 0, 1]
    assert feats["warmth"].tolist() == pytest.approx([50.0, 0.0, 25.0])
    j = pd.DataFrame([{"pair_id": "p1", "item_id": "i1", "conversation_id": "c1", "system_a": "m1",
                       "contributor_a": None, "system_b": "human", "contributor_b": "h2", "status": "ok",
                       "winner": "b", "strength": 3},
                      {"pair_id": "p2", "item_id": "i1", "conversation_id": "c1", "system_a": "m1",
                       "contributor_a": None, "system_b": "human", "contributor_b": "h9", "status": "ok",
                       "winner": "a", "strength": 2}])
    comp = sc.style_comparisons(j, feats)
    assert comp["winner"].tolist() == ["human", "m1"] and comp["weight"].tolist() == [3.0, 2.0]
    assert comp.loc[0, ["winner_words", "loser_words", "winner_warmth", "loser_warmth"]].tolist() == [6, 4, 0, 25]
    assert np.isnan(comp.loc[1, "loser_words"])  # contributor h9 has no text: missing, not another human's


# --- the fit ----------------------------------------------------------------------------------

def random_design(seed=0, m=600, K=4):
    """SYNTHETIC, well conditioned: m comparisons of random distinct systems (A vs B), two covariate
    differences ~ N(0, 1), outcomes from the model with theta = (0.5, 0, -0.3, 0.2), beta = (0.8, -0.4),
    integer weights 1..5."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, K, m)
    b = (a + rng.integers(1, K, m)) % K
    cov = rng.normal(size=(m, 2))
    theta, beta = np.array([0.5, 0.0, -0.3, 0.2]), np.array([0.8, -0.4])
    y = rng.random(m) < 1 / (1 + np.exp(-(theta[a] - theta[b] + cov @ beta)))
    w = rng.integers(1, 6, m).astype(float)
    return a, b, cov, y, w, K


def test_the_fit_is_statsmodels_logistic_regression():
    """Unpenalised, the fit is the logistic regression of "A wins" on the system indicator differences (+1 A,
    -1 B; system 0 dropped as reference) and the covariate differences, without intercept, weighted: statsmodels'
    GLM Binomial with freq_weights. Our fit is oriented winner/loser (its outcome always 1), so this also checks
    that orientation gives the same likelihood. With the weights rescaled to mean 1 statsmodels' standard
    errors are ours (covariance())."""
    a, b, cov, y, w, K = random_design()
    Xab = np.zeros((len(a), K))
    Xab[np.arange(len(a)), a] += 1
    Xab[np.arange(len(a)), b] -= 1
    exog = np.column_stack([Xab[:, 1:], cov])
    glm = sm.GLM(y.astype(float), exog, family=sm.families.Binomial(), freq_weights=w / w.mean()).fit(tol=1e-12)
    logit = sm.Logit(y.astype(float), exog).fit(disp=0, method="newton", tol=1e-12)  # unweighted
    winners, losers = np.where(y, a, b), np.where(y, b, a)
    sign = np.where(y, 1.0, -1.0)[:, None]
    X = sc.design(winners, losers, K, sign * cov)
    ours = sc.fit(X, w, K, alpha=0.0)
    assert ours[:K].sum() == pytest.approx(0.0, abs=1e-12)  # centred
    np.testing.assert_allclose(ours[1:K] - ours[0], glm.params[:K - 1], atol=1e-6)
    np.testing.assert_allclose(ours[K:], glm.params[K - 1:], atol=1e-6)
    unweighted = sc.fit(X, np.ones(len(a)), K, alpha=0.0)
    np.testing.assert_allclose(np.r_[unweighted[1:K] - unweighted[0], unweighted[K:]], logit.params, atol=1e-6)
    # standard errors: the covariates' directly, a system's as the contrast theta_k - theta_0
    sigma = sc.covariance(X, w, ours, K, alpha=0.0)
    np.testing.assert_allclose(np.sqrt(np.diag(sigma)[K:]), glm.bse[K - 1:], rtol=1e-6)
    for k in range(1, K):
        c = np.zeros(K + 2)
        c[k], c[0] = 1.0, -1.0
        assert math.sqrt(c @ sigma @ c) == pytest.approx(glm.bse[k - 1], rel=1e-6)
    # the true values are recovered roughly (600 comparisons)
    np.testing.assert_allclose(ours[K:], [0.8, -0.4], atol=0.2)


def test_without_covariates_it_is_the_plain_bradley_terry_fit():
    a, b, _, y, w, K = random_design(seed=3)
    winners, losers = np.where(y, a, b), np.where(y, b, a)
    for alpha in (0.0, bt.DEFAULT_ALPHA, 5.0):
        np.testing.assert_allclose(sc.fit(sc.design(winners, losers, K), w, K, alpha=alpha),
                                   bt.fit(winners, losers, w, K, alpha=alpha), atol=1e-8)


def test_alpha_zero_without_an_estimate_raises():
    # system 0 won all its comparisons: no maximum-likelihood estimate; the ridge gives a finite one
    X = sc.design([0, 0, 1, 2], [1, 2, 2, 1], 3)  # d = (1, 0, 0): X d = (1, 1, 0, 0) >= 0
    assert sc.separable(X)
    with pytest.raises(ValueError, match="maximum-likelihood estimate does not exist"):
        sc.fit(X, np.ones(4), 3, alpha=0.0)
    assert np.isfinite(sc.fit(X, np.ones(4), 3)).all()
    # one more comparison, 1 beats 0: every system won and lost -- no separation by the systems alone
    X = sc.design([0, 0, 1, 2, 1], [1, 2, 2, 1, 0], 3)
    assert not sc.separable(X) and np.isfinite(sc.fit(X, np.ones(5), 3, alpha=0.0)).all()
    # ... but a covariate that is larger for the winner in every comparison orders every verdict
    assert sc.separable(sc.design([0, 0, 1, 2, 1], [1, 2, 2, 1, 0], 3, np.array([1.0, 2.0, 0.5, 1.0, 3.0])))


# --- the tables -------------------------------------------------------------------------------

def judgments_from(rows):
    base = {"subset": "regular", "kind": "model-model", "contributor_a": None, "contributor_b": None,
            "status": "ok", "strength": 1, "judge": "j1", "judge_kind": "llm"}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_two_systems_by_hand(lexicon):
    """SYNTHETIC: A beats B in 8 of 10 unit-weight comparisons (10 conversations), every completion 'word word'
    (no variation in length or warmth). By hand, alpha = 0:
      theta_A - theta_B = ln(8/2) = ln 4, so Elo A = 1500 + (400/ln 10) * ln(4)/2 = 1620.41, B = 1379.59;
      Fisher information of the difference n p (1-p) = 10 * .8 * .2 = 1.6, Var(centred theta_A) = 1/(4 * 1.6),
      so SE(Elo) = (400/ln 10) * sqrt(0.15625) = 68.67 and the 95 % interval is Elo +- 1.96 * 68.67.
    Both covariates are undefined (no variation): the style-controlled fit is the plain one, and its bootstrap
    (the same conversations drawn) reproduces the plain bootstrap."""
    rows, texts = [], []
    for i in range(10):
        rows.append({"pair_id": f"p{i}", "item_id": f"i{i}", "conversation_id": f"c{i}", "system_a": "A",
                     "system_b": "B", "winner": "a" if i < 8 else "b"})
        texts += [{"item_id": f"i{i}", "system": s, "contributor_id": None, "text": "word word"} for s in "AB"]
    j, t = judgments_from(rows), pd.DataFrame(texts)
    ratings, coef = sc.style_control(j, t, lexicon, n_boot=0, alpha=0.0, sources=("combined",))
    r = ratings.set_index("system")
    half = 400 / math.log(10) * math.log(4) / 2
    assert r.at["A", "elo_plain"] == pytest.approx(1500 + half) and r.at["B", "elo_plain"] == pytest.approx(1500 - half)
    se = 400 / math.log(10) * math.sqrt(1 / (4 * 1.6))
    assert se == pytest.approx(68.67, abs=0.01)
    assert r.at["A", "elo_plain_hi_asym"] - r.at["A", "elo_plain"] == pytest.approx(1.959964 * se, rel=1e-5)
    assert r.at["B", "elo_style"] - r.at["B", "elo_style_lo_asym"] == pytest.approx(1.959964 * se, rel=1e-5)
    # the bootstrap (default ridge: with alpha = 0 a replicate without B's two wins has no estimate)
    ratings, coef = sc.style_control(j, t, lexicon, n_boot=200, seed=4, sources=("combined",))
    r = ratings.set_index("system")
    assert r["elo_plain_lo_boot"].notna().all()
    for col in ("elo", "elo_lo_asym", "elo_hi_asym", "elo_lo_boot", "elo_hi_boot"):
        np.testing.assert_allclose(r[col.replace("elo", "elo_style", 1)], r[col.replace("elo", "elo_plain", 1)],
                                   atol=1e-6)
    assert (r["rank_plain"].tolist(), r["rank_change"].tolist()) == ([1, 2], [0, 0])
    assert (coef["status"] == "undefined").all() and coef["coefficient"].isna().all()


def length_explains_everything():
    """SYNTHETIC. Three systems L, M, S and three kinds of context, lengths (words)
         kind 1: L 100, M 80, S 60      kind 2: L 80, M 100, S 60      kind 3: L 80, M 60, S 100
    so L is longest on average (86.7, M 80, S 73.3). Every pair of a context is judged as often as the model
    P(longer wins) = sigmoid(b * difference), b = ln(4) / 20 per word, says *exactly*: a 20-word difference 5
    times (the longer wins 4, odds 4), a 40-word one 17 times (16, odds 16). Two contexts of each kind, each its
    own conversation."""
    kinds = [{"L": 100, "M": 80, "S": 60}, {"L": 80, "M": 100, "S": 60}, {"L": 80, "M": 60, "S": 100}]
    rows, texts = [], []
    for i in range(6):
        length = kinds[i % 3]
        texts += [{"item_id": f"i{i}", "system": s, "contributor_id": None, "text": "word " * n}
                  for s, n in length.items()]
        for a, b in (("L", "M"), ("L", "S"), ("M", "S")):
            n, longer = (5, 4) if abs(length[a] - length[b]) == 20 else (17, 16)
            a_longer = length[a] > length[b]
            for k in range(n):
                a_won = (k < longer) == a_longer
                rows.append({"pair_id": f"p{i}{a}{b}", "item_id": f"i{i}", "conversation_id": f"c{i}",
                             "system_a": a, "system_b": b, "winner": "a" if a_won else "b",
                             "judge": f"j{k}"})
    return judgments_from(rows), pd.DataFrame(texts)


def test_when_length_explains_every_verdict_the_style_ratings_collapse(lexicon):
    """By hand (length_explains_everything): the observed share of every cell equals sigmoid(b * d), so the
    unpenalised maximum-likelihood estimate is exactly theta = 0 (all style-controlled Elo 1500) and the length
    coefficient b per word; the length SD over the completions (60, 80, 100 in every context) is
    sqrt(800 / 3) = 16.33 words, so beta = ln(4) / 20 * 16.33 = 1.1319 per SD. The plain fit sees, per three
    contexts (one of each kind; there are two), L beat M 4+1+4 : 1+4+1 = 9:6, L beat S 16+4+1 : 1+1+4 = 21:6,
    M beat S 4+16+1 : 1+1+16 = 21:18, and ranks L > M > S, well apart."""
    j, t = length_explains_everything()
    ratings, coef = sc.style_control(j, t, lexicon, n_boot=100, seed=1, alpha=0.0, sources=("combined",))
    r = ratings.set_index("system")
    assert r["wins"].to_dict() == {"L": 60, "M": 54, "S": 48}  # twice 9 + 21, 6 + 21, 6 + 18
    np.testing.assert_allclose(r["elo_style"], 1500.0, atol=1e-6)
    assert r.at["L", "elo_plain"] > r.at["M", "elo_plain"] > r.at["S", "elo_plain"]
    assert r.at["L", "elo_plain"] - r.at["S", "elo_plain"] > 100
    assert r.loc[["L", "M", "S"], "rank_plain"].tolist() == [1, 2, 3]
    length = coef.set_index("covariate").loc["length"]
    assert length["status"] == "ok"
    assert length["scale"] == pytest.approx(math.sqrt(800 / 3))
    assert length["coefficient"] == pytest.approx(math.log(4) / 20 * math.sqrt(800 / 3), rel=1e-8)
    assert length["elo_per_sd"] == pytest.approx(400 / math.log(10) * length["coefficient"])
    assert length["z"] > 3 and length["p_value"] < 0.01 and length["ci_low_boot"] > 0.5
    assert coef.set_index("covariate").at["warmth", "status"] == "undefined"  # no warm word anywhere
    # with the default ridge the collapse is the same to well under an Elo point
    ratings, _ = sc.style_control(j, t, lexicon, n_boot=0, sources=("combined",))
    assert np.ptp(ratings["elo_style"]) < 1.0 and np.ptp(ratings["elo_plain"]) > 100


def test_warmth_is_held_constant_too(lexicon):
    """SYNTHETIC: systems W and P write equally long replies, W's warm ('so sorry' once), P's plain; judges
    prefer warmth: the warm reply wins 4 of 5 times. Plain, W rates far above P; controlling for warmth they
    tie, and the warmth coefficient is positive (by hand as above, log-odds ln 4 per warmth difference)."""
    rows, texts = [], []
    warm, plain = "so sorry " + "word " * 8, "word " * 10  # 10 words each; 1 hit ("sorry") or none
    for i in range(8):
        warm_w = i % 4 != 3  # W is the warm one in 6 contexts, P in 2
        texts += [{"item_id": f"i{i}", "system": "W", "contributor_id": None, "text": warm if warm_w else plain},
                  {"item_id": f"i{i}", "system": "P", "contributor_id": None, "text": plain if warm_w else warm}]
        for k in range(5):
            w_won = (k < 4) == warm_w  # the warm reply wins 4 of 5
            rows.append({"pair_id": f"p{i}", "item_id": f"i{i}", "conversation_id": f"c{i}", "system_a": "W",
                         "system_b": "P", "winner": "a" if w_won else "b", "judge": f"j{k}"})
    ratings, coef = sc.style_control(judgments_from(rows), pd.DataFrame(texts), lexicon, n_boot=0, alpha=0.0,
                                     sources=("combined",))
    r = ratings.set_index("system")
    # plain: W won 6 * 4 + 2 * 1 = 26 of 40
    assert r.at["W", "wins"] == 26 and r.at["W", "elo_plain"] - r.at["P", "elo_plain"] > 50
    np.testing.assert_allclose(r["elo_style"], 1500.0, atol=1e-6)
    warmth = coef.set_index("covariate").loc["warmth"]
    # warmth 10 hits per 100 words vs 0 (1 hit in 10 words); SD over 16 completions, half 10 and half 0 = 5
    assert warmth["scale"] == pytest.approx(5.0)
    assert warmth["coefficient"] == pytest.approx(math.log(4) / 2, rel=1e-8)  # ln 4 per 10 = 2 SD
    assert coef.set_index("covariate").at["length", "status"] == "undefined"  # all 10 words


def test_absent_sources_and_systems_say_so(lexicon):
    j, t = length_explains_everything()
    j = pd.concat([j, judgments_from([{"pair_id": "px", "item_id": "i0", "conversation_id": "c0",
                                       "system_a": "L", "system_b": "Z", "winner": None, "status": "tie"}])],
                  ignore_index=True)  # Z appears in a pair but was never in a decided comparison
    ratings, coef = sc.style_control(j, t, lexicon, n_boot=20)
    human = ratings[ratings["source"] == "human"]
    assert set(human["system"]) == {"L", "M", "S", "Z"} and (human["status"] == "absent").all()
    assert human["elo_style"].isna().all() and human["elo_plain"].isna().all()
    assert human["note"].str.contains("no human judgments").all()
    combined = ratings[ratings["source"] == "combined"].set_index("system")
    assert combined.at["Z", "status"] == "absent" and math.isnan(combined.at["Z", "elo_style"])
    assert (combined.loc[["L", "M", "S"], "status"] == "ok").all()
    assert (coef.loc[coef["source"] == "human", "status"] == "absent").all()
    assert coef["lexicon_version"].eq(1).all()
    # a completion without a text: its comparisons leave both fits, and the note says how many
    ratings, coef = sc.style_control(j, t[~((t["item_id"] == "i0") & (t["system"] == "S"))], lexicon, n_boot=0,
                                     sources=("combined",))
    # i0 is of kind 1 (L 100, M 80, S 60): L-S 17 judgments and M-S 5 leave; L keeps 2 * (5 + 17 + 5 + 5 + 5 + 5)
    # - 17 = 67 comparisons
    ok = ratings[ratings["status"] == "ok"]
    assert len(ok) == 3 and ok["note"].str.contains("22 comparisons without both").all()
    assert ratings.set_index("system").at["L", "n_comparisons"] == 67
    # no texts at all
    ratings, coef = sc.style_control(j, t.iloc[:0], lexicon, n_boot=0, sources=("llm",))
    assert (ratings["status"] == "absent").all() and ratings["note"].str.contains("has both completions").all()
    for table, name in ((ratings, "style_ratings"), (coef, "style_coefficients")):
        tableio.to_arrow(table, name)


def test_the_tables_match_their_schemas(lexicon):
    j, t = length_explains_everything()
    ratings, coef = sc.style_control(j, t, lexicon, n_boot=20)
    assert list(ratings.columns) == sc.RATING_COLUMNS and list(coef.columns) == sc.COEFFICIENT_COLUMNS
    assert tableio.to_arrow(ratings, "style_ratings").num_rows == len(ratings) == 9
    assert tableio.to_arrow(coef, "style_coefficients").num_rows == len(coef) == 6
    table, coef_table = sc.report_tables(ratings, coef, ci=0.9)
    assert len(table) == 6 and set(table["source"]) == {"combined", "llm"}  # 3 ok rows each; "human" is absent
    assert "Elo 90% CI (bootstrap)" in table.columns and table["rank change"].tolist() == ratings.loc[
        ratings["status"] == "ok", "rank_change"].tolist()
    row = ratings[ratings["status"] == "ok"].iloc[0]
    assert table.at[0, "Elo 90% CI (asymptotic)"] == f"[{row.elo_plain_lo_asym:.0f}, {row.elo_plain_hi_asym:.0f}]"
    assert len(coef_table) == 6 and coef_table.loc[coef_table["status"] == "undefined", "SE"].isna().all()
