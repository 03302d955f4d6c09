"""SIMULATED benchmark of the adaptive pair design against the paper's fixed design (issue 44; prints its figures,
not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_adaptive.py [--seeds 10] [--n-boot 200] [--write PATH]

``--write workflow/resources/adaptive/expected.yaml`` keeps the two medians (a new study's share of the fixed
design's verdicts, a newcomer's share of its own comparisons at +-15 Elo) as the call preview's SIMULATED
expectation of an adaptive design's cost (rule preview_llm_calls).

The world (heart.simulation.adaptive, labelled SIMULATED: no model or person made these verdicts): the paper's 18
Figure 4 Elo values, 300 items in 250 conversations, three judges (gpt, claude, gemini families, never on their own
family) in both shown orders, an item effect shared by a pair's six verdicts. Printed, with the fixed design's
figures of the same run:

- a new study: the verdicts the adaptive design needed to reach the fixed design's rank stability (mean Kendall τ
  of the bootstrap replicates with the point ranking, and the rank intervals' widths summed), as a share of the
  fixed design's verdicts (target <= 50 %);
- one model added to the 17 others: the share of its fixed-design comparisons needed to place it to +-15 Elo
  (95 %, judged by the Fisher information of its comparisons), how often it lands within +-15 Elo of its
  full-design estimate (target <= 25 %);
- coverage of the true values by the 95 % bootstrap intervals, both designs, in a world without the item effect
  (where the Bradley-Terry model is the true one, so that any shortfall is the design's, not the model's).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow"))

from heart import WORKFLOW_DIR  # noqa: E402
from heart.simulation import adaptive as sim  # noqa: E402
from heart.stats import external  # noqa: E402
from heart.tables import paper_comparison  # noqa: E402


def paper_world():
    """The paper's 18 Figure 4 systems: Elo and model family (the dataset's reply and Best Human: their own)."""
    truth = paper_comparison.figure4_elo(paper_comparison.load(WORKFLOW_DIR / "resources/paper/headline_numbers.yaml"),
                                         external.load_models())
    families = external.load_models().set_index("system")["family"]
    return truth, [families.get(s, s) for s in truth.index]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--write", type=Path, help="keep the medians here (the preview's expected adaptive cost)")
    args = ap.parse_args(argv)
    truth, families = paper_world()
    start = time.time()
    print(f"{sim.LABEL}: {len(truth)} systems at the paper's Figure 4 Elo, 300 items, 3 judges in both orders; "
          f"{args.seeds} seeds, {args.n_boot} bootstrap replicates")

    shares, fixed_v, rows = [], [], []
    for seed in range(args.seeds):
        r = sim.new_study(sim.World(truth.to_numpy(), families, seed=seed), n_boot=args.n_boot, seed=seed)
        a, f = r["adaptive"], r["fixed"]
        shares.append(a["verdicts"] / f["verdicts"])
        fixed_v.append(f["verdicts"])
        rows.append((seed, f["verdicts"], f["tau"], f["width_sum"], a["verdicts"], a["tau"], a["width_sum"],
                     a["rounds"], a["met"]))
    print("\nA new study (stop: the fixed design's rank stability reached)")
    print("seed  fixed verdicts  tau    widths | adaptive verdicts  tau    widths  rounds  met")
    for s, fv, ft, fw, av, at, aw, n, met in rows:
        print(f"{s:4d}  {fv:14,d}  {ft:.4f} {fw:5.0f}  | {av:17,d}  {at:.4f} {aw:5.0f}  {n:6d}  {met}")
    print(f"adaptive / fixed verdicts: median {np.median(shares):.1%} (range {min(shares):.1%}-{max(shares):.1%}); "
          "target <= 50 %")

    print("\nOne model added to the 17 others (stop: +-15 Elo at 95 % by the information of its comparisons)")
    placed = []
    for seed in range(max(1, args.seeds // 2)):
        world = sim.World(truth.to_numpy(), families, seed=100 + seed)
        for new in range(len(truth)):
            placed.append(sim.add_model(world, new, n_boot=args.n_boot, seed=seed))
    share = np.array([p["share"] for p in placed])
    near = np.array([abs(p["estimate"] - p["full_estimate"]) <= 15 for p in placed])
    print(f"{len(placed)} placements (every system as the newcomer, {max(1, args.seeds // 2)} seeds): its own "
          f"fixed-design comparisons used, median {np.median(share):.1%} (range {share.min():.1%}-{share.max():.1%}; "
          f"target <= 25 %); within +-15 Elo of its full-design estimate {near.mean():.1%}; full-design half-width "
          f"median {np.median([p['full_half_width'] for p in placed]):.1f} Elo")

    print("\nCoverage of the true Elo by the 95 % bootstrap intervals, a world without the item effect")
    cov = {"fixed": [], "adaptive": []}
    for seed in range(args.seeds):
        r = sim.new_study(sim.World(truth.to_numpy(), families, seed=200 + seed, item_sd=0.0), n_boot=args.n_boot,
                          seed=seed)
        cov["fixed"] += list(r["fixed"]["covered"])
        cov["adaptive"] += list(r["adaptive"]["covered"])
    newcomer = []
    for seed in range(args.seeds):
        world = sim.World(truth.to_numpy(), families, seed=300 + seed, item_sd=0.0)
        newcomer += [sim.add_model(world, new, n_boot=args.n_boot, seed=seed)["covers"] for new in range(len(truth))]
    cov["added model (adaptive)"] = newcomer
    for name, c in cov.items():
        print(f"{name:22s} {np.mean(c):.1%} of {len(c)} intervals")
    print(f"\n{time.time() - start:.0f} s")
    if args.write:
        import yaml

        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(
            "# SIMULATED (tests/benchmarks/bench_adaptive.py --write; docs/benchmarks.md): the adaptive design's\n"
            "# median share of the fixed design in the paper's Figure 4 world, the call preview's expected cost\n"
            + yaml.safe_dump({"label": sim.LABEL, "seeds": args.seeds, "n_boot": args.n_boot,
                              "new_study_share": round(float(np.median(shares)), 4),
                              "newcomer_share": round(float(np.median(share)), 4), "newcomer_half_width": 15.0},
                             sort_keys=False))
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
