"""Rationale coding: do humans and LLM judges give the same reasons when they agree? (HEART paper §4.3)
The codebook, the agreed pairs and the concordance: ``docs/methods/rationales.md``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from scipy import stats

from heart.stats import bootstrap
from heart.stats.agreement.majority import majority
from heart.common.config import ResourceError, load_resource
from heart.stats.factors import fisher_ci
from heart.judging.pairs import completion_text

#: the summary's two rows: the default measure first, then the paper's co-omission-inclusive variant
MEASURES = ("co-mention", "co-mention or co-omission")
SUMMARY_COLUMNS = ["measure", "status", "n_agreed_pairs", "n_codes", "n_cells", "n_concordant_cells", "concordance",
                   "ci_low", "ci_high", "n_conversations", "note"]
CODE_COLUMNS = ["family", "code", "label", "axis", "micro_skill", "status", "n_pairs", "human_rate", "llm_rate",
                "n_mentioned", "n_co_mentioned", "concordance", "concordance_with_co_omission", "partial_r", "ci_low",
                "ci_high", "p_value", "note"]


def load_codebook(path) -> list[dict]:
    """The codebook's codes, checked against ``workflow/schemas/codebook.schema.yaml``.

    Errors (:class:`heart.common.config.ResourceError`) name the file, the code and the field, one line per
    problem (``<file>: codes[1].axis must be one of H, E, A, R, T, not 'Q'``). Beyond the schema: every
    key is used once and every pattern compiles. Each code gets its compiled patterns under ``_regex``.
    """
    codes = load_resource(path, "codebook", unique_keys="codes")["codes"]
    for i, code in enumerate(codes):
        try:
            code["_regex"] = [re.compile(p, re.IGNORECASE) for p in code["patterns"]]
        except re.error as exc:
            raise ResourceError(f"{path}: codes[{i}] ({code['key']}): bad pattern: {exc}") from exc
    return codes


def code_text(text, codes: list[dict]) -> set[str]:
    """The codes a rationale mentions."""
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return set()
    return {c["key"] for c in codes if any(r.search(str(text)) for r in c["_regex"])}


def _words(text) -> int:
    return len(str(text).split()) if isinstance(text, str) else 0


def agreed_pairs(judgments: pd.DataFrame, texts: pd.DataFrame) -> pd.DataFrame:
    """One row per agreed pair: winner, both sides' rationales and the presentation covariates."""
    hum, llm = majority(judgments, "human"), majority(judgments, "llm")
    both = hum[["pair_id", "winner"]].merge(llm[["pair_id", "winner"]], on="pair_id", suffixes=("_h", "_l"))
    both = both[both["winner_h"].notna() & (both["winner_h"] == both["winner_l"])]
    if both.empty:
        return pd.DataFrame()
    winners = dict(zip(both["pair_id"], both["winner_h"]))
    rows = judgments[judgments["pair_id"].isin(winners) & judgments["winner"].notna()]
    rows = rows[rows["winner"] == rows["pair_id"].map(winners)]
    text = rows.groupby(["pair_id", "judge_kind"])["rationale"].agg(
        lambda s: " | ".join(str(t) for t in s if isinstance(t, str) and t.strip()))
    meta = judgments.drop_duplicates("pair_id").set_index("pair_id")
    length = {key: _words(text) for key, text in completion_text(texts).items()}
    out = []
    for pid, w in winners.items():
        m = meta.loc[pid]
        key_a = (m.item_id, m.system_a, None if pd.isna(m.contributor_a) else m.contributor_a)
        key_b = (m.item_id, m.system_b, None if pd.isna(m.contributor_b) else m.contributor_b)
        la, lb = length.get(key_a, np.nan), length.get(key_b, np.nan)
        h, ll = text.get((pid, "human"), ""), text.get((pid, "llm"), "")
        out.append({"pair_id": pid, "conversation_id": m.conversation_id, "winner": w,
                    "length_advantage": (la - lb) if w == "a" else (lb - la), "winner_shown_first": float(w == "a"),
                    "human_rationale": h, "llm_rationale": ll, "human_words": _words(h), "llm_words": _words(ll)})
    return pd.DataFrame(out)


def _residual(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    design = np.column_stack([np.ones(len(y)), x])
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    return y - design @ beta


def _code_concordance(human: np.ndarray, llm: np.ndarray) -> dict:
    c = concordance(human, llm)
    return {"n_mentioned": c["n_mentioned_cells"], "n_co_mentioned": c["n_co_mentioned_cells"],
            "concordance": c["concordance"], "concordance_with_co_omission": c["concordance_with_co_omission"]}


def _not_computed(codes: list[dict], status: str, note: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    summary = pd.DataFrame([{"measure": m, "status": status, "n_agreed_pairs": 0, "n_codes": len(codes), "note": note}
                            for m in MEASURES])
    per_code = pd.DataFrame([{"family": "rationale_codes", "code": c["key"], "label": c["label"], "axis": c["axis"],
                              "micro_skill": c["micro_skill"], "status": status, "n_pairs": 0, "note": note}
                             for c in codes])
    return summary.reindex(columns=SUMMARY_COLUMNS), per_code.reindex(columns=CODE_COLUMNS)


def concordance(human: np.ndarray, llm: np.ndarray) -> dict:
    """Both concordances of two 0/1 mention matrices (pairs x codes), pooled over all cells.

    Returns
    -------
    dict
        ``n_cells``, ``n_mentioned_cells`` (either side mentions), ``n_co_mentioned_cells`` (both do),
        ``concordance`` = co-mentioned / mentioned (NaN when nothing is mentioned) and
        ``concordance_with_co_omission`` = (co-mentioned + co-omitted) / all cells (NaN without cells).
    """
    human, llm = np.asarray(human, dtype=bool), np.asarray(llm, dtype=bool)
    cells, either, both = human.size, int((human | llm).sum()), int((human & llm).sum())
    return {"n_cells": cells, "n_mentioned_cells": either, "n_co_mentioned_cells": both,
            "concordance": both / either if either else np.nan,
            "concordance_with_co_omission": float((human == llm).sum()) / cells if cells else np.nan}


def comention(judgments: pd.DataFrame, texts: pd.DataFrame, codes: list[dict], n_boot: int = 1000, seed: int = 0,
              ci: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Concordance of coded themes on agreed pairs (summary) and the per-code association table.

    Returns
    -------
    (DataFrame, DataFrame)
        ``SUMMARY_COLUMNS``, one row per measure (:data:`MEASURES`): "co-mention", the default --
        ``n_cells`` the cells at least one side mentions, ``n_concordant_cells`` those both mention --
        and "co-mention or co-omission", the paper's definition -- ``n_cells`` all pairs x codes,
        ``n_concordant_cells`` those both mention or both omit; ``concordance`` =
        ``n_concordant_cells / n_cells`` with its bootstrap ``ci_low``/``ci_high`` (``docs/methods/rationales.md``).
        ``CODE_COLUMNS``, one row per code: ``n_mentioned`` (pairs where either side mentions it),
        ``n_co_mentioned`` (both), both concordances for that code and the partial correlation.
    """
    if not (judgments["judge_kind"] == "human").any():
        return _not_computed(codes, "absent", "human judgments are absent: there are no human rationales to compare")
    pairs = agreed_pairs(judgments, texts)
    pairs = pairs[(pairs["human_words"] > 0) & (pairs["llm_words"] > 0)] if len(pairs) else pairs
    if len(pairs) == 0:
        return _not_computed(codes, "no_pairs", "no pair where humans and LLM judges agree and both gave a rationale")
    keys = [c["key"] for c in codes]
    hm = np.array([[k in code_text(t, codes) for k in keys] for t in pairs["human_rationale"]], dtype=float)
    lm = np.array([[k in code_text(t, codes) for k in keys] for t in pairs["llm_rationale"]], dtype=float)
    counts = concordance(hm, lm)
    # per pair: cells either side mentions, cells both mention, cells both mention or both omit
    either, both, same = np.maximum(hm, lm).sum(axis=1), (hm * lm).sum(axis=1), (hm == lm).sum(axis=1)
    conv = pairs["conversation_id"].to_numpy()
    boot = bootstrap.ClusterBootstrap(conv, n_boot, seed)
    lo, hi = bootstrap.interval(boot.ratio(conv, both, either), ci)
    lo_o, hi_o = bootstrap.interval(boot.ratio(conv, same, np.full(len(pairs), len(codes))), ci)
    common = {"n_agreed_pairs": len(pairs), "n_codes": len(codes), "n_conversations": len(boot.ids)}
    defined = counts["n_mentioned_cells"] > 0
    summary = pd.DataFrame([
        {"measure": MEASURES[0], "status": "ok" if defined else "undefined", **common,
         "n_cells": counts["n_mentioned_cells"], "n_concordant_cells": counts["n_co_mentioned_cells"],
         "concordance": counts["concordance"], "ci_low": lo, "ci_high": hi,
         "note": ("the default: of the (pair, code) cells that at least one side mentions, the share both mention"
                  if defined else "no code is mentioned by either side on any agreed pair: nothing to agree on")},
        {"measure": MEASURES[1], "status": "ok", **common, "n_cells": counts["n_cells"],
         "n_concordant_cells": int(same.sum()), "concordance": counts["concordance_with_co_omission"],
         "ci_low": lo_o, "ci_high": hi_o,
         "note": "variant, the paper's definition (§4.3, 68 %): of all (pair, code) cells, the share both mention "
                 "or both omit -- inflated by the many codes neither side mentions"}])
    cov = pairs[["length_advantage", "winner_shown_first", "human_words", "llm_words"]].to_numpy(dtype=float)
    known = np.isfinite(cov).any(axis=0)  # a covariate with no value at all (lengths without texts) is left out
    cov = cov[:, known]
    cov = np.where(np.isfinite(cov), cov, np.nanmean(cov, axis=0)) if cov.size else cov
    rows = []
    for j, c in enumerate(codes):
        row = {"family": "rationale_codes", "code": c["key"], "label": c["label"], "axis": c["axis"],
               "micro_skill": c["micro_skill"], "n_pairs": len(pairs), "human_rate": hm[:, j].mean(),
               "llm_rate": lm[:, j].mean(), **_code_concordance(hm[:, j], lm[:, j])}
        rh, rl = _residual(hm[:, j], cov), _residual(lm[:, j], cov)
        if len(pairs) < 8 or rh.std() < 1e-12 or rl.std() < 1e-12:
            row.update(status="undefined", note="too few pairs or a side that never (or always) mentions it")
        else:
            r, p = stats.pearsonr(rh, rl)
            lo, hi = fisher_ci(float(r), len(pairs) - cov.shape[1], ci)  # a partial r loses one df per covariate
            row.update(status="ok", partial_r=float(r), ci_low=lo, ci_high=hi, p_value=float(p), note=None)
        rows.append(row)
    return summary.reindex(columns=SUMMARY_COLUMNS), pd.DataFrame(rows).reindex(columns=CODE_COLUMNS)
