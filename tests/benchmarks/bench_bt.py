"""Benchmark of heart.stats.bradley_terry (prints its figures; not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_bt.py [--choix-budget 180]

On simulated data at the paper's scale (42,000 comparisons, 21 systems, 300
conversations, strengths 1-5):

1. heart.stats.bradley_terry: the fit plus 1,000 conversation-level bootstrap replicates
   (vectorised: one matmul for the replicates' win matrices, one batched Newton
   fit), best of ``--repeats`` runs; and the whole ``ratings()`` leaderboard.
2. The same 1,000 replicates as a loop that resamples the conversations and calls
   choix once per replicate: ``choix.ilsr_pairwise`` on the comparison list (each
   comparison repeated ``strength`` times, choix's format for weighted data) --
   run in full if it fits in ``--choix-budget`` seconds, else for as many
   replicates as fit and extrapolated (printed) -- and ``choix.ilsr_pairwise_dense``
   on each replicate's aggregated win matrix (choix's fastest pairwise path).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "workflow")]

import choix  # noqa: E402

from heart.stats import bootstrap as cluster_bootstrap  # noqa: E402
from heart.stats import bradley_terry as bt  # noqa: E402


def simulate(rng, n_systems, n_conv, n_comp):
    """Simulated judgments: true theta ~ N(0, 0.5^2), each conversation with its own shift of every
    system's strength (sd 0.3, so comparisons cluster by conversation), strengths 1-5."""
    theta = rng.normal(0, 0.5, n_systems)
    shift = rng.normal(0, 0.3, (n_conv, n_systems))
    conv = rng.integers(0, n_conv, n_comp)
    i = rng.integers(0, n_systems, n_comp)
    j = (i + rng.integers(1, n_systems, n_comp)) % n_systems
    d = theta[i] + shift[conv, i] - theta[j] - shift[conv, j]
    a_won = rng.random(n_comp) < 1 / (1 + np.exp(-d))
    names = np.array([f"sys{k:02d}" for k in range(n_systems)])
    comp = pd.DataFrame({"winner": names[np.where(a_won, i, j)], "loser": names[np.where(a_won, j, i)],
                         "weight": rng.integers(1, 6, n_comp).astype(float), "conversation_id": conv})
    return comp, list(names)


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=21)
    ap.add_argument("--conversations", type=int, default=300)
    ap.add_argument("--comparisons", type=int, default=42_000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5,
                    help="runs of the vectorised fit + bootstrap (best is shown)")
    ap.add_argument("--choix-budget", type=float, default=180.0,
                    help="seconds for the choix.ilsr_pairwise loop; beyond, extrapolate")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    comp, systems = simulate(rng, args.systems, args.conversations, args.comparisons)
    K, B = len(systems), args.boot
    print(f"simulated data: {len(comp):,} comparisons, {K} systems, {comp['conversation_id'].nunique()} "
          f"conversations, strengths 1-5 (total weight {comp['weight'].sum():,.0f}); {os.cpu_count()} CPUs")

    # 1. vectorised fit + bootstrap
    index = pd.Index(systems)
    w_idx, l_idx = index.get_indexer(comp["winner"]), index.get_indexer(comp["loser"])
    weights = comp["weight"].to_numpy()

    def ours():
        theta = bt.fit(w_idx, l_idx, weights, K)
        return theta, bt.bootstrap(comp, systems, n_boot=B, seed=args.seed, theta0=theta)

    ours()  # warm-up
    t_ours, (_, boot) = best_of(ours, args.repeats)
    t_fit, _ = best_of(lambda: bt.fit(w_idx, l_idx, weights, K), args.repeats)
    t_ratings, table = best_of(lambda: bt.ratings(comp, systems, n_boot=B, seed=args.seed), args.repeats)
    print(f"heart.stats.bradley_terry fit: {t_fit * 1e3:.1f} ms; fit + {B} conversation-level bootstrap "
          f"replicates: {t_ours:.3f} s (best of {args.repeats}); whole ratings() table: {t_ratings:.3f} s")
    print(f"  separability: asymptotic (paper) {table.attrs['separability_asym']:.3f}, "
          f"bootstrap {table.attrs['separability_boot']:.3f}; median 95 % interval width: asymptotic "
          f"{np.median(table['elo_hi_asym'] - table['elo_lo_asym']):.1f} Elo, bootstrap "
          f"{np.median(table['elo_hi_boot'] - table['elo_lo_boot']):.1f} Elo")

    # 2. a loop calling choix once per replicate, on the same resampled conversations
    conv_ids, conv = np.unique(comp["conversation_id"].to_numpy(), return_inverse=True)
    rows_of = [np.flatnonzero(conv == c) for c in range(len(conv_ids))]
    counts = cluster_bootstrap.counts(len(conv_ids), B, seed=args.seed)

    def resampled(b):
        rows = np.concatenate([np.tile(rows_of[c], k) for c, k in enumerate(counts[b]) if k])
        return w_idx[rows], l_idx[rows], weights[rows]

    def choix_list(b):
        w, los, x = resampled(b)
        reps = x.astype(int)
        data = np.stack([np.repeat(w, reps), np.repeat(los, reps)], axis=1).tolist()
        return choix.ilsr_pairwise(K, data, alpha=0.0, max_iter=1000)

    def choix_dense(b):
        w, los, x = resampled(b)
        return choix.ilsr_pairwise_dense(bt.win_matrix(w, los, x, K), alpha=0.0, max_iter=1000)

    t0, done, diff = time.perf_counter(), 0, 0.0
    while done < B and time.perf_counter() - t0 < args.choix_budget:
        diff = max(diff, np.abs(bt.elo(choix_list(done)) - boot[done]).max())
        done += 1
    t_list = time.perf_counter() - t0
    t_list_full = t_list / done * B
    how = (f"all {B} replicates run" if done == B else
           f"{done} of {B} replicates run in {t_list:.1f} s (budget {args.choix_budget:.0f} s), extrapolated")
    print(f"choix.ilsr_pairwise loop (comparison list, weights as repeats): {t_list_full:.1f} s for {B} "
          f"replicates ({how}); {t_list / done:.3f} s per replicate")

    t0 = time.perf_counter()
    for b in range(B):
        e = bt.elo(choix_dense(b))
        diff = max(diff, np.abs(e - boot[b]).max())
    t_dense = time.perf_counter() - t0
    print(f"choix.ilsr_pairwise_dense loop (aggregated win matrix): {t_dense:.1f} s for {B} replicates "
          f"(all run); {t_dense / B * 1e3:.1f} ms per replicate")
    print(f"largest Elo difference, choix (ML, alpha=0) vs heart.stats.bradley_terry (alpha={bt.DEFAULT_ALPHA}) "
          f"on the same replicates: {diff:.4f} Elo")
    print(f"ratio: choix.ilsr_pairwise loop / vectorised = {t_list_full / t_ours:.0f}x; "
          f"choix.ilsr_pairwise_dense loop / vectorised = {t_dense / t_ours:.1f}x "
          f"(vectorised fit + {B} replicates {t_ours:.3f} s; target <= 1 s)")


if __name__ == "__main__":
    main()
