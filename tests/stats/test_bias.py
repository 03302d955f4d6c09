"""heart.stats.bias: position, length and self-preference audits detect a planted bias and only that (SYNTHETIC
tables, made by the tests)."""

import numpy as np
import pandas as pd

from heart.stats import bias
from support.tables import judgments_frame as table
from support.judgments import judgment


def test_position_bias_detects_planted_bias_only():
    """Synthetic verdicts: 'biased' picks the response shown as A 65% of the time, 'fair' 50%."""
    rng = np.random.default_rng(0)
    rows = []
    for judge, p_a in (("biased", 0.65), ("fair", 0.5)):
        for i in range(600):
            rows.append({"pair_id": f"p{i}", "judge": judge, "order": "AB" if i % 2 else "BA",
                         "shown_a": "m1", "parse_ok": True,
                         "winner_shown": "A" if rng.random() < p_a else "B"})
    rows.append({"pair_id": "x", "judge": "fair", "order": "AB", "shown_a": "m1", "parse_ok": False,
                 "winner_shown": None})
    out = bias.position_bias(pd.DataFrame(rows)).set_index("judge")
    assert out.loc["biased", "reject"] and out.loc["biased", "p_value"] < 1e-6
    assert out.loc["biased", "ci_low"] > 0.5
    assert not out.loc["fair", "reject"] and out.loc["fair", "p_value"] > 0.05
    assert out.loc["fair", "n_verdicts"] == 600  # the unparsed verdict is left out
    assert out.loc["fair", "ci_low"] < 0.5 < out.loc["fair", "ci_high"]
    assert (out["family"] == "position_bias").all()


def test_length_bias_detects_planted_bias_only():
    """Synthetic pairs with random A/B lengths; 'verbose' picks the longer reply 75%, 'fair' at random."""
    rng = np.random.default_rng(1)
    texts, rows = [], []
    for i in range(400):
        la, lb = rng.choice(np.arange(1, 60), size=2, replace=False)
        texts += [{"item_id": f"item-p{i}", "system": s, "contributor_id": None, "text": " ".join(["w"] * n)}
                  for s, n in (("m1", la), ("m2", lb))]
        longer, shorter = ("a", "b") if la > lb else ("b", "a")
        rows.append(judgment(f"p{i}", i, "verbose", longer if rng.random() < 0.75 else shorter))
        rows.append(judgment(f"p{i}", i, "fair", "ab"[rng.integers(2)]))
    out = bias.length_bias(table(rows), pd.DataFrame(texts)).set_index("judge")
    assert out.loc["verbose", "reject"] and out.loc["verbose", "share_longer_wins"] > 0.65
    assert not out.loc["fair", "reject"] and out.loc["fair", "p_value"] > 0.05
    assert out.loc["fair", "n_pairs"] == 400
    assert out.loc["human-majority", "status"] == "absent"
    assert out.loc["human-majority", "note"] == "human judgments are absent"


def test_length_bias_tells_equal_lengths_from_unknown_ones():
    """A missing text is not a length: its pair is counted unknown, never equal (issue: n_equal_length was every
    decided pair when no text existed)."""
    texts = pd.DataFrame([{"item_id": f"item-p{i}", "system": s, "contributor_id": None, "text": t}
                          for i, pair in enumerate([("a b c", "a"), ("a b", "c d"), ("a b c", None)])
                          for s, t in zip(("m1", "m2"), pair) if t is not None])
    rows = [judgment(f"p{i}", i, "j", "a") for i in range(3)]
    row = bias.length_bias(table(rows), texts).set_index("judge").loc["j"]
    assert (row["n_pairs"], row["n_equal_length"], row["n_unknown_length"]) == (1, 1, 1)
    assert "1 pair(s) of unknown length" in row["note"]
    none = bias.length_bias(table(rows), texts.iloc[:0]).set_index("judge").loc["j"]
    assert none["status"] == "absent" and pd.isna(none["n_equal_length"]) and none["n_unknown_length"] == 3


def test_self_preference_planted_and_family_exclusion():
    """Synthetic: 'gpt-judge' always picks its family's system; 'claude-judge' picks at random."""
    rng = np.random.default_rng(2)
    rows = []
    for i in range(300):
        gpt_side = "a" if i % 2 else "b"
        sa, sb = ("gpt-x", "llama-y") if gpt_side == "a" else ("llama-y", "gpt-x")
        rows.append(judgment(f"p{i}", i // 3, "gpt-judge", gpt_side, system_a=sa, system_b=sb))
        rows.append(judgment(f"p{i}", i // 3, "claude-judge", "ab"[rng.integers(2)], system_a=sa,
                             system_b=sb))
    judge_fam = {"gpt-judge": "gpt", "claude-judge": "claude"}
    sys_fam = {"gpt-x": "gpt", "llama-y": "llama"}
    out = bias.self_preference(table(rows), judge_fam, sys_fam, n_boot=400, seed=0).set_index("judge")
    g = out.loc["gpt-judge"]
    assert g["win_rate_self"] == 1.0 and 0.4 < g["win_rate_others"] < 0.6
    assert g["ci_low"] > 0.3 and g["reject"]
    assert out.loc["claude-judge", "status"] == "absent"  # never saw a claude system
    # the unbiased case: a gpt judge that picks at random is not flagged
    fair = [dict(r, winner="ab"[rng.integers(2)]) if r["judge"] == "gpt-judge" else r for r in rows]
    out = bias.self_preference(table(fair), judge_fam, sys_fam, n_boot=400, seed=0).set_index("judge")
    assert out.loc["gpt-judge", "ci_low"] < 0 < out.loc["gpt-judge", "ci_high"]
    assert not out.loc["gpt-judge", "reject"]


def test_position_bias_leaves_verdicts_of_unknown_order_out():
    """Unordered imported verdicts were counted as shown A-first: a bias that was not there."""
    n = 40
    known = pd.DataFrame({"judge": "j1", "parse_ok": True, "order": ["AB", "BA"] * (n // 2),
                          "winner_shown": ["A", "B"] * (n // 2)})
    unknown = pd.DataFrame({"judge": ["j1"] * n + ["j2"] * n, "parse_ok": True, "order": None,
                            "winner_shown": None})
    out = bias.position_bias(pd.concat([known, unknown], ignore_index=True)).set_index("judge")
    assert out.loc["j1", "n_verdicts"] == n and out.loc["j1", "share_shown_a"] == 0.5
    assert "40 verdict(s) of unknown shown order left out" in out.loc["j1", "note"]
    assert out.loc["j2", "status"] == "absent" and out.loc["j2", "note"].startswith("order unknown")
    assert not out["reject"].fillna(False).any()
