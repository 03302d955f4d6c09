"""Trivial judges (always-longer, always-position-A) and the leave-one-out human ceiling.

(:mod:`heart.stats.agreement`: trivial judges and the human ceiling.)
"""

from __future__ import annotations

import functools
import numpy as np
import pandas as pd

from heart.judging.pairs import key_text
from heart.stats import bootstrap
from heart.stats.agreement.majority import (
    ENSEMBLE, HUMAN_CEILING, HUMAN_MAJORITY, LLM_MAJORITY, LONGER, POSITION_A, frame, join_notes, loo_majority,
    majority_oriented, no_rate, rate_row, shown_pairs, winners)
from heart.stats.agreement.orientation import orient, pair_meta


#: why "always-longer" and the length audit have nothing to measure in an analysis-only run
NO_TEXTS = "no completion texts (analysis-only re-analyses judgments without the texts judged)"
TRIVIAL_COLUMNS = ["reference", "judge", "judge_type", "n_pairs", "n_agree", "agreement", "ci_low", "ci_high",
                   "n_conversations", "n_no_verdict", "status", "note"]


def pair_lengths(judgments: pd.DataFrame, texts: pd.DataFrame) -> pd.DataFrame:
    """Length in words (whitespace-separated) of both completions of every pair.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (pair_id, item_id, system_a/b, contributor_a/b; oriented first,
        :func:`orient`).
    texts : pandas.DataFrame
        Completions: item_id, system, contributor_id, text.

    Returns
    -------
    pandas.DataFrame
        Indexed by pair_id: ``len_a``, ``len_b`` (NaN when a text is missing) and ``longer``
        ("a"/"b", None when equal or unknown).
    """
    return _pair_lengths(orient(judgments), texts)


def _pair_lengths(judgments: pd.DataFrame, texts: pd.DataFrame) -> pd.DataFrame:
    meta = pair_meta(judgments)
    t = texts.copy()
    lengths = pd.Series(t["text"].fillna("").astype(str).str.split().str.len().to_numpy(),
                        index=pd.MultiIndex.from_arrays([t["item_id"].astype(str).to_numpy(),
                                                         key_text(t["system"]),
                                                         key_text(t["contributor_id"])]))
    lengths = lengths[~lengths.index.duplicated()]
    out = pd.DataFrame(index=meta.index)
    for side in ("a", "b"):
        idx = pd.MultiIndex.from_arrays([meta["item_id"].astype(str).to_numpy(),
                                         key_text(meta[f"system_{side}"]),
                                         key_text(meta[f"contributor_{side}"])])
        out[f"len_{side}"] = lengths.reindex(idx).to_numpy(dtype=float)
    diff = out["len_a"] - out["len_b"]
    out["longer"] = np.where(diff > 0, "a", np.where(diff < 0, "b", None)).astype(object)
    return out


def trivial_judges(judgments: pd.DataFrame, texts: pd.DataFrame, n_boot: int = 1000, seed: int = 0,
                   ci: float = 0.95) -> pd.DataFrame:
    """Real, trivial and ceiling judges side by side, against the human and the LLM-ensemble majority.

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table (oriented first, :func:`orient`).
    texts : pandas.DataFrame
        Completions (item_id, system, contributor_id, text), for "always-longer".
    n_boot, seed, ci
        Conversation-level bootstrap (:mod:`heart.stats.bootstrap`): replicates (0: no interval), seed, and
        coverage of the percentile interval.

    Returns
    -------
    pandas.DataFrame
        ``TRIVIAL_COLUMNS``. Against "human-majority": the LLM ensemble, each LLM judge,
        "always-longer", "always-position-A" and the leave-one-out human ceiling
        ("human-loo-ceiling"). Against "llm-ensemble-majority": each LLM judge against the majority
        of the *other* LLM judges (leave-one-out), the two trivial judges, and the human majority.
        Counts as in :func:`human_llm_agreement`: a pair a judge was never shown (no row of it) is
        neither in its ``n_pairs`` nor in its ``n_no_verdict``; ``n_no_verdict`` = pairs shown, with a
        reference winner, but without the judge's winner (the trivial judges are shown every pair;
        "always-longer" has no verdict on equal or unknown lengths). The reference winners do not
        depend on ``stats.consensus``, so there is no such parameter. A missing reference gives
        "absent" rows.
    """
    judgments = orient(judgments)
    meta = pair_meta(judgments)
    boot = bootstrap.ClusterBootstrap(judgments["conversation_id"], n_boot, seed)
    row = functools.partial(_row, boot, meta["conversation_id"].to_numpy(), ci)
    human = majority_oriented(judgments, "human").set_index("pair_id")["winner"].reindex(meta.index)
    ens = majority_oriented(judgments, "llm").set_index("pair_id")["winner"].reindex(meta.index)
    wide = winners(judgments, "llm")
    llm_judges = list(wide.columns)
    longer = _pair_lengths(judgments, texts)["longer"].reindex(meta.index)
    pos_a = pd.Series("a", index=meta.index, dtype=object)
    has_llm, has_human = bool(llm_judges), bool(human.notna().any())
    every_pair = np.ones(len(meta), bool)
    shown_llm = shown_pairs(judgments, meta.index, "llm")
    shown = {j: shown_pairs(judgments, meta.index, "llm", j) for j in llm_judges}
    no_texts = texts is None or len(texts) == 0
    rows = []
    # reference: human majority
    why_h = ("human judgments are absent" if not (judgments["judge_kind"] == "human").any()
             else "no pair has a human majority winner")
    entries = [(ENSEMBLE, "llm-ensemble", ens, shown_llm, ""),
               *((j, "llm", wide[j], shown[j], "") for j in llm_judges),
               (LONGER, "trivial", longer, every_pair, LONGER_NOTE),
               (POSITION_A, "trivial", pos_a, every_pair, POSITION_NOTE)]
    for judge, jtype, comp, judged, note in entries:
        if not has_human:
            rows.append(_absent(HUMAN_MAJORITY, judge, jtype, why_h))
        elif judge == LONGER and no_texts:
            rows.append(_absent(HUMAN_MAJORITY, judge, jtype, NO_TEXTS))
        elif jtype.startswith("llm") and not has_llm:
            rows.append(_absent(HUMAN_MAJORITY, judge, jtype, "LLM judgments are absent"))
        else:
            rows.append(row(HUMAN_MAJORITY, judge, jtype, human, comp, judged, note))
    rows.append(_human_ceiling(judgments, meta, boot, ci,
                               why_h if not has_human else "no pair with two or more decisive human raters"))
    # reference: LLM-ensemble majority
    if not has_llm:
        for judge, jtype in ((LONGER, "trivial"), (POSITION_A, "trivial"), (HUMAN_MAJORITY, "human")):
            rows.append(_absent(LLM_MAJORITY, judge, jtype, "LLM judgments are absent"))
        return frame(rows, TRIVIAL_COLUMNS)
    loo_llm = loo_majority(judgments, "llm")
    for j in llm_judges:
        lj = loo_llm[loo_llm["judge"] == j].drop_duplicates("pair_id").set_index("pair_id")
        rows.append(row(LLM_MAJORITY, j, "llm", lj["other_winner"].reindex(meta.index), wide[j], shown[j],
                        "against the majority of the other LLM judges (leave-one-out)"))
    rows.append(_absent(LLM_MAJORITY, LONGER, "trivial", NO_TEXTS) if no_texts
                else row(LLM_MAJORITY, LONGER, "trivial", ens, longer, every_pair, LONGER_NOTE))
    rows.append(row(LLM_MAJORITY, POSITION_A, "trivial", ens, pos_a, every_pair, POSITION_NOTE))
    rows.append(row(LLM_MAJORITY, HUMAN_MAJORITY, "human", ens, human, shown_pairs(judgments, meta.index, "human"))
                if has_human else _absent(LLM_MAJORITY, HUMAN_MAJORITY, "human", why_h))
    return frame(rows, TRIVIAL_COLUMNS)


LONGER_NOTE = "longer in words; equal lengths give no verdict"
POSITION_NOTE = ("always the pair's system_a (the pairs table's side a: randomised per pair by design_pairs in a "
                 "study; in imported judgments the system_a of the first record naming the pair)")


def _row(boot, conv, ci, reference, judge, judge_type, ref, comp, judged, note="") -> dict:
    """A judge's agreement with a reference winner on the pairs it was shown (``judged``) where both have one."""
    ref, comp = np.asarray(ref, object), np.asarray(comp, object)
    use = pd.notna(ref) & pd.notna(comp) & judged
    out = {"reference": reference, "judge": judge, "judge_type": judge_type,
           "n_no_verdict": int((pd.notna(ref) & pd.isna(comp) & judged).sum())}
    if use.any():
        out.update(rate_row(boot, conv[use], (ref[use] == comp[use]).astype(float), ci), status="ok", note=note)
    else:
        out.update(no_rate(), status="no_pairs", note=join_notes(note, "no common pair"))
    return out


def _absent(reference, judge, judge_type, why) -> dict:
    return {"reference": reference, "judge": judge, "judge_type": judge_type, **no_rate(),
            "n_no_verdict": 0, "status": "absent", "note": why}


def _human_ceiling(judgments: pd.DataFrame, meta: pd.DataFrame, boot, ci: float, why_absent: str) -> dict:
    """The leave-one-out human ceiling: each rater's winner against the majority of the pair's other raters."""
    loo = loo_majority(judgments, "human")
    loo = loo[loo["winner"].notna()]  # raters who named a winner
    loo_use = loo[loo["other_winner"].notna()]
    if loo_use.empty:
        return _absent(HUMAN_MAJORITY, HUMAN_CEILING, "human", why_absent)
    c = meta["conversation_id"].reindex(loo_use["pair_id"]).to_numpy()
    r = {"reference": HUMAN_MAJORITY, "judge": HUMAN_CEILING, "judge_type": "human",
         "n_no_verdict": int(loo["other_winner"].isna().sum()), "status": "ok",
         "note": "leave-one-out human ceiling: each rater's winner vs the majority of the other raters "
                 "of the pair, pooled over (rater, pair); n_pairs counts rater-pair comparisons, "
                 "n_no_verdict those whose other raters are tied; not the paper's rater-to-rater percent "
                 "agreement (agreement_inter_human, measure percent_agreement)"}
    r.update(rate_row(boot, c, (loo_use["winner"] == loo_use["other_winner"]).to_numpy(float), ci))
    r["n_conversations"] = int(len(np.unique(c)))
    return r
