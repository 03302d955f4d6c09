"""SYNTHETIC inputs with a planted answer, for the statistics' tests: rationales and strategy tags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

CODEBOOK = Path(__file__).resolve().parents[2] / "workflow/resources/codebook/rationales.yaml"


def synthetic(n=120, linked=True, seed=0):
    """SYNTHETIC pairs: humans and one LLM judge agree on 'a'; the LLM names the feeling whenever the humans
    did (linked) or at random (not linked)."""
    rng = np.random.default_rng(seed)
    rows, texts = [], []
    for i in range(n):
        pid, item = f"p{i}", f"i{i}"
        human_names = rng.random() < 0.5
        llm_names = human_names if linked else rng.random() < 0.5
        base = {"pair_id": pid, "item_id": item, "conversation_id": i // 2, "subset": "regular", "system_a": "m1",
                "contributor_a": None, "system_b": "m2", "contributor_b": None, "kind": "model-model",
                "status": "ok", "winner": "a", "strength": 2}
        rows.append({**base, "judge": "human:r1", "judge_kind": "human",
                     "rationale": "It names the feeling." if human_names else "It is fine here."})
        rows.append({**base, "judge": "j1", "judge_kind": "llm",
                     "rationale": "A validates their feelings." if llm_names else "A is fine overall."})
        texts += [{"item_id": item, "system": "m1", "contributor_id": None, "text": "word " * int(rng.integers(5, 30))},
                  {"item_id": item, "system": "m2", "contributor_id": None, "text": "word " * int(rng.integers(5, 30))}]
    return pd.DataFrame(rows), pd.DataFrame(texts)


def tag_rows(item, system, present=(), contributor=None, parse_ok=True, uncertain=(), tagger="t",
             strategies=("a", "b", "c", "d")):
    """One completion's rows of a long tag table: each of ``strategies`` present, uncertain or absent."""
    return [{"item_id": item, "system": system, "contributor_id": contributor, "tagger": tagger,
             "strategy": s,
             "label": (None if not parse_ok else "present" if s in present else "uncertain" if s in uncertain
                       else "absent"),
             "probability": None, "evidence": None, "parse_ok": parse_ok} for s in strategies]


def planted(seed=1, n_conv=60, p_h=(0.7, 0.4), p_m=(0.2, 0.4)) -> tuple[pd.DataFrame, dict]:
    """SYNTHETIC: n_conv conversations x 2 items; 3 human and 4 model completions per item; strategy 'x'
    planted at 70 % (humans) vs 20 % (models), 'y' at 40 % in both."""
    rng = np.random.default_rng(seed)
    rows, conv = [], {}
    for c in range(n_conv):
        for k in range(2):
            item = f"c{c}i{k}"
            conv[item] = c
            for who, probs, n in (("human", p_h, 3), ("model", p_m, 4)):
                for j in range(n):
                    present = [s for s, p in zip("xy", probs) if rng.random() < p]
                    system = "human" if who == "human" else f"m{j}"
                    rows += tag_rows(item, system, present, contributor=f"h{j}" if who == "human" else None,
                                     strategies=["x", "y"])
    return pd.DataFrame(rows), conv
