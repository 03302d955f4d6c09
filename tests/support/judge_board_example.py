"""The judge leaderboard's hand-worked example (SYNTHETIC tables): read by the statistics' tests
(tests/stats/test_judge_board.py, every number worked by hand there) and by the figure's."""

from __future__ import annotations

import pandas as pd

from heart.stats import judge_board as jb
from support.judgments import judgment
from support.tables import judgments_frame as table

# --- the example -------------------------------------------------------------------------------------------
#
# Systems x, y (family fx) and z (family fz). Judges j1 (family fx, a local model: no price) and j2 (family fq,
# $0.001 a call); j3 is configured but judged nothing. Five pairs, all of ONE conversation (so every bootstrap
# replicate is the data itself: intervals collapse onto the point estimates):
#
#   pair  sides   human votes (3 raters)  human majority   j1   j2   ensemble majority (j1, j2)
#   p1    x - y   a a b                   a                a    a    a (2-0)
#   p2    x - z   b b b                   b                a    b    none (1-1)
#   p3    y - z   a tie a                 a                a    b    none (1-1)
#   p4    x - y   a b tie                 none (1-1)       a    a    a (2-0)
#   p5    y - z   b b a                   b                -    b    b (j1's orders cancel: a vote for neither)
#
# Reply lengths (words): p1 x 5 / y 3 (longer a); p2 x 4 / z 4 (equal); p3 y 2 / z 6 (b); p4 x 3 / y 7 (b);
# p5 y 5 / z 1 (a).


PAIRS = {"p1": ("x", "y"), "p2": ("x", "z"), "p3": ("y", "z"), "p4": ("x", "y"), "p5": ("y", "z")}


HUMAN = {"p1": "aab", "p2": "bbb", "p3": "a-a", "p4": "ab-", "p5": "bba"}  # "-": about the same


J1 = {"p1": "a", "p2": "a", "p3": "a", "p4": "a", "p5": None}


J2 = {"p1": "a", "p2": "b", "p3": "b", "p4": "a", "p5": "b"}


LENGTHS = {"p1": (5, 3), "p2": (4, 4), "p3": (2, 6), "p4": (3, 7), "p5": (5, 1)}


JUDGE_FAMILIES = {"j1": "fx", "j2": "fq", "j3": "fx"}


SYSTEM_FAMILIES = {"x": "fx", "y": "fx", "z": "fz"}


# per-order verdicts, shown winner in order AB then BA (None: unparsed). j1 says A first every time and B
# second on p1-p4 (consistent, a), A both times on p5 (a flip: inconsistent); j2 follows content.
SHOWN = {"j1": {p: ("A", "A") if p == "p5" else ("A", "B") for p in PAIRS},
         "j2": {"p1": ("A", "B"), "p2": ("B", "A"), "p3": ("B", "A"), "p4": ("A", "B"), "p5": ("B", None)}}


def judgments(humans=True):
    rows = []
    for p, (sa, sb) in PAIRS.items():
        for judge, verdicts in (("j1", J1), ("j2", J2)):
            rows.append(judgment(p, "c1", judge, verdicts[p], system_a=sa, system_b=sb))
        for k, vote in enumerate(HUMAN[p] if humans else ""):
            rows.append(judgment(p, "c1", f"human:r{k}", None if vote == "-" else vote, system_a=sa, system_b=sb))
    return table(rows)


def verdicts():
    cost = {"j1": None, "j2": 0.001}
    latency = {"j1": 0.5, "j2": 2.0}
    rows = []
    for judge, shown in SHOWN.items():
        for p, orders in shown.items():
            for order, w in zip(("AB", "BA"), orders):
                rows.append({"pair_id": p, "judge": judge, "order": order, "parse_ok": w is not None,
                             "winner_shown": w, "cost_usd": cost[judge], "latency_s": latency[judge]})
    return pd.DataFrame(rows)


def texts():
    return pd.DataFrame([{"item_id": f"item-{p}", "system": s, "contributor_id": None, "text": " ".join(["w"] * n)}
                         for p, (sa, sb) in PAIRS.items() for s, n in zip((sa, sb), LENGTHS[p])])


# flip_rates.parquet as combine.flip_rates writes it: j1 flipped 1 of its 5 pairs judged in both orders (p5),
# j2 none of its 4 (p5 has one parsed order)
FLIPS = pd.DataFrame([{"judge": "j1", "axis": "overall", "n_pairs": 5, "flip_rate": 0.2},
                      {"judge": "j1", "axis": "H", "n_pairs": 5, "flip_rate": 0.8},
                      {"judge": "j2", "axis": "overall", "n_pairs": 4, "flip_rate": 0.0}])


# judge_quality.parquet: j1 2 of 4 checks (misses the 70 % target), j2 5 of 6
QUALITY = pd.DataFrame([{"judge": "j1", "kind": "all", "n_checks": 4, "qc_accuracy": 0.5, "meets_targets": False},
                        {"judge": "j1", "kind": "unhelpful", "n_checks": 2, "qc_accuracy": 1.0, "meets_targets": True},
                        {"judge": "j2", "kind": "all", "n_checks": 6, "qc_accuracy": 5 / 6, "meets_targets": True}])


def board(humans=True, **kw):
    args = dict(judges=["j1", "j2", "j3"], judge_families=JUDGE_FAMILIES, system_families=SYSTEM_FAMILIES,
                local_judges=["j1", "j3"], n_boot=50, seed=3)
    out = jb.judge_board(judgments(humans), verdicts(), texts(), FLIPS, QUALITY, **{**args, **kw})
    return out.set_index("judge")


CHOICE = {"A": "ababaa", "B": "abbbab", "C": "bbaaab"}


CHOICE_HUMAN = "ababab"


PRICE = {"A": 0.001, "B": 0.004, "C": 0.0005}


def choice_tables(humans=True, price=PRICE):
    rows, verdict_rows = [], []
    for i in range(6):
        p = f"q{i + 1}"
        for judge, winners in CHOICE.items():
            rows.append(judgment(p, f"c{i}", judge, winners[i]))
            verdict_rows.append({"pair_id": p, "judge": judge, "order": "AB", "parse_ok": True, "winner_shown": "A",
                                 "cost_usd": price[judge], "latency_s": 1.0})
        if humans:
            rows.append(judgment(p, f"c{i}", "human:r1", CHOICE_HUMAN[i]))
    return table(rows), pd.DataFrame(verdict_rows)
