"""Strategy usage, diversity and humans vs models on hand-made tag tables (all data synthetic)."""

import math

import pandas as pd
import pytest

from heart.stats import strategy_stats as ss
from support.synthetic import planted, tag_rows

STRATS = ["a", "b", "c", "d"]
FAMILIES = {"m1": "fam", "m2": "fam", "human": "human"}
SOURCES = {"m1": "model", "m2": "model", "human": "human", "ghost": "model"}


def hand_table() -> pd.DataFrame:
    """SYNTHETIC. m1: rates a 100, b 50, c 25, d 0 (+1 unparsed, +1 'uncertain' d); m2: only d;
    humans: one contributor uses all four, the other none."""
    rows = (tag_rows("i1", "m1", "abc") + tag_rows("i2", "m1", "ab", uncertain="d")
            + tag_rows("i3", "m1", "a") + tag_rows("i4", "m1", "a")
            + tag_rows("i5", "m1", "abcd", parse_ok=False)
            + [r for i in ("i1", "i2", "i3", "i4") for r in tag_rows(i, "m2", "d")]
            + tag_rows("i1", "human", "abcd", contributor="c1")
            + tag_rows("i1", "human", "", contributor="c2"))
    return pd.DataFrame(rows)


def test_usage_rates_hand_table():
    u = ss.usage(hand_table(), FAMILIES, SOURCES, STRATS)
    m1 = u[(u["level"] == "system") & (u["group"] == "m1")].set_index("strategy")
    assert m1["rate_pct"].tolist() == [100.0, 50.0, 25.0, 0.0]  # 'uncertain' d is not used
    assert (m1["n_completions"] == 4).all() and (m1["n_unparsed"] == 1).all()
    fam = u[(u["level"] == "family") & (u["group"] == "fam")].set_index("strategy")
    assert fam["rate_pct"].tolist() == [50.0, 25.0, 12.5, 50.0]  # pooled over m1 and m2's 8 completions
    hum = u[(u["level"] == "system") & (u["group"] == "human")]
    assert hum["rate_pct"].tolist() == [50.0] * 4 and (hum["n_completions"] == 2).all()
    src = u[(u["level"] == "source") & (u["group"] == "model")].set_index("strategy")
    assert src.loc["d", "n_used"] == 4 and src.loc["d", "n_completions"] == 8
    ghost = u[(u["level"] == "system") & (u["group"] == "ghost")]  # mapped source, no tags
    assert len(ghost) == 4 and (ghost["status"] == "absent").all() and ghost["rate_pct"].isna().all()


def test_diversity_hand_table():
    d = ss.diversity(hand_table(), FAMILIES, SOURCES, STRATS).set_index(["level", "group"])
    m1 = d.loc[("system", "m1")]
    assert m1["coverage"] == 3 and m1["mean_unique_per_completion"] == 1.75
    # uses 4, 2, 1, 0 of 7: H = log2 7 - (4*2 + 2*1 + 1*0) / 7
    assert m1["entropy_bits"] == pytest.approx(math.log2(7) - 10 / 7)
    assert m1["entropy_max_bits"] == 2.0
    # rates 100, 50, 25, 0: mean 43.75, sum of squared deviations 5468.75, sample SD sqrt(5468.75 / 3)
    assert m1["rate_sd_pct"] == pytest.approx(math.sqrt(5468.75 / 3)) and m1["rate_range_pct"] == 100.0
    fam = d.loc[("family", "fam")]
    assert fam["rate_sd_pct"] == pytest.approx(18.75) and fam["rate_range_pct"] == 37.5
    assert fam["coverage"] == 4
    hum = d.loc[("system", "human")]
    assert hum["entropy_bits"] == pytest.approx(2.0) and hum["evenness"] == pytest.approx(1.0)
    assert hum["rate_sd_pct"] == 0.0 and hum["rate_range_pct"] == 0.0 and hum["coverage"] == 4
    assert hum["mean_unique_per_completion"] == 2.0
    pop = ss.diversity(hand_table(), FAMILIES, SOURCES, STRATS, ddof=0).set_index(["level", "group"])
    assert pop.loc[("system", "m1"), "rate_sd_pct"] == pytest.approx(math.sqrt(5468.75 / 4))
    ghost = d.loc[("system", "ghost")]
    assert ghost["status"] == "absent" and pd.isna(ghost["coverage"]) and math.isnan(ghost["entropy_bits"])


def test_all_unparsed_system_is_absent():
    t = pd.DataFrame(tag_rows("i1", "m1", "a", parse_ok=False)
                     + tag_rows("i1", "human", "a", contributor="c"))
    u = ss.usage(t, sources={"m1": "model", "human": "human"}, strategies=STRATS)
    m1 = u[(u["level"] == "system") & (u["group"] == "m1")]
    assert (m1["status"] == "absent").all() and m1["rate_pct"].isna().all() and (m1["n_unparsed"] == 1).all()
    assert "unparsed" in m1["note"].iloc[0]


def test_unknown_strategy_rejected():
    t = pd.DataFrame(tag_rows("i1", "m1", "a", strategies=["a", "zzz"]))
    with pytest.raises(ValueError, match="zzz"):
        ss.usage(t, strategies=STRATS)


def test_planted_difference_detected():
    tags, conv = planted()
    out = ss.human_vs_model(tags, clusters=conv, n_boot=1000, seed=7).set_index("strategy")
    x, y = out.loc["x"], out.loc["y"]
    assert x["status"] == "present" and x["cluster_unit"] == "conversation" and x["n_clusters"] == 60
    assert x["n_human"] == 360 and x["n_model"] == 480
    assert x["ci_low_pct"] > 0 and 35 < x["diff_pct"] < 65
    assert x["ci_low_pct"] < x["diff_pct"] < x["ci_high_pct"]
    assert x["p_value"] < 1e-6 and x["cohens_h"] > 0.8 and x["h_ci_low"] > 0
    assert x["diff_pct"] == pytest.approx(x["rate_human_pct"] - x["rate_model_pct"])
    assert y["ci_low_pct"] < 0 < y["ci_high_pct"] and y["p_value"] > 0.05
    assert set(out["family"]) == {ss.TEST_FAMILY}
    again = ss.human_vs_model(tags, clusters=conv, n_boot=1000, seed=7).set_index("strategy")
    assert again.loc["x", "ci_low_pct"] == x["ci_low_pct"]  # seeded


def test_cluster_map_must_cover_items():
    tags, conv = planted(n_conv=5)
    conv.pop("c0i0")
    with pytest.raises(ValueError, match="c0i0"):
        ss.human_vs_model(tags, clusters=conv, n_boot=10)


def test_absent_humans_are_absent_not_zero():
    tags, _ = planted(n_conv=5)
    tags = tags[tags["system"] != "human"]
    out = ss.human_vs_model(tags, n_boot=50)
    assert len(out) == 2 and (out["status"] == "absent").all()
    assert out["diff_pct"].isna().all() and out["p_value"].isna().all() and out["rate_human_pct"].isna().all()
    assert out["note"].str.contains("human").all()
