"""Per-vote agreement of each LLM judge with the human votes: FastChat's definition (Zheng et al. 2023, §4.2
and Table 5), beside the majority-based rows of :mod:`heart.stats.agreement.human_llm`.

(:mod:`heart.stats.agreement`: per-vote agreement.)

Every human vote on a pair is compared with the judge's one verdict on the same pair (both orders
combined, :mod:`heart.judging.combine`); a pair with several human votes counts several times. Labels:
a, b or tie -- a human "about the same" is a tie, and so is a judge's verdict without a winner because its
orders tied (status "tie") or cancelled out (status "inconsistent"), as FastChat folds "tie
(inconsistent)" into tie. An unparsed verdict is no verdict (counted in ``n_no_verdict``).

* reference ``human-votes-with-ties``: every (human vote, verdict) comparison; agreement = same label.
* reference ``human-votes-without-ties``: comparisons where neither the vote nor the verdict is a tie
  (the dropped ones are ``n_no_reference``).

``n_pairs`` counts comparisons (vote, verdict), not pairs. The interval is the conversation-level
bootstrap's (comparisons of one conversation are resampled together).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from heart.stats import bootstrap
from heart.stats.agreement.human_llm import AGREEMENT_COLUMNS
from heart.stats.agreement.majority import frame, no_rate, rate_row
from heart.stats.agreement.orientation import orient

WITH_TIES = "human-votes-with-ties"
WITHOUT_TIES = "human-votes-without-ties"
#: statuses without a winner that are a judgment of "tie": a human's "about the same"; an LLM judge's tied
#: or cancelling orders
TIE_STATUS = {"human": ("tie",), "llm": ("tie", "inconsistent")}


def _labels(rows: pd.DataFrame, kind: str) -> np.ndarray:
    """a / b / tie per row; None where the row carries no judgment (an unparsed verdict)."""
    decided = rows["winner"].isin(["a", "b"]).to_numpy(bool)
    tie = rows["status"].isin(TIE_STATUS[kind]).to_numpy(bool)
    return np.where(decided, rows["winner"].astype(object).to_numpy(), np.where(tie, "tie", None)).astype(object)


def per_vote_agreement(judgments: pd.DataFrame, n_boot: int = 1000, seed: int = 0,
                       ci: float = 0.95) -> pd.DataFrame:
    """Per LLM judge, its agreement with every human vote on the pairs both judged (``docs/methods/agreement.md``).

    Returns
    -------
    pandas.DataFrame
        ``AGREEMENT_COLUMNS``, scope "all", two rows per LLM judge (references ``WITH_TIES`` and
        ``WITHOUT_TIES``); "absent" rows (agreement NaN) without human votes or LLM verdicts.
    """
    j = orient(judgments)
    human = j[j["judge_kind"] == "human"]
    llm = j[j["judge_kind"] == "llm"]
    judges = sorted(llm["judge"].unique())
    missing = [why for why, gone in (("human judgments are absent", human.empty),
                                     ("LLM judgments are absent", llm.empty)) if gone]
    if missing:
        return frame([{"reference": ref, "judge": judge, "scope": "all", **no_rate(), "n_no_verdict": 0,
                       "n_no_reference": 0, "status": "absent",
                       "note": "; ".join(missing) + ": per-vote agreement cannot be computed"}
                      for judge in (judges or [None]) for ref in (WITH_TIES, WITHOUT_TIES)], AGREEMENT_COLUMNS)
    boot = bootstrap.ClusterBootstrap(j["conversation_id"], n_boot, seed)
    votes = pd.DataFrame({"pair_id": human["pair_id"].to_numpy(),
                          "conversation_id": human["conversation_id"].to_numpy(),
                          "vote": _labels(human, "human")})
    votes = votes[pd.notna(votes["vote"])]
    rows = []
    for judge in judges:
        mine = llm[llm["judge"] == judge]
        verdict = pd.Series(_labels(mine, "llm"), index=mine["pair_id"].to_numpy())
        on = votes[votes["pair_id"].isin(verdict.index)].assign(
            verdict=lambda d: verdict.reindex(d["pair_id"]).to_numpy())
        judged = on[pd.notna(on["verdict"])]
        n_no_verdict = len(on) - len(judged)
        for ref in (WITH_TIES, WITHOUT_TIES):
            use = judged if ref == WITH_TIES else judged[(judged["vote"] != "tie") & (judged["verdict"] != "tie")]
            row = {"reference": ref, "judge": judge, "scope": "all", "n_no_verdict": n_no_verdict,
                   "n_no_reference": len(judged) - len(use)}
            note = ("FastChat's per-vote agreement: each human vote vs the judge's verdict on the same pair; "
                    "n_pairs counts (vote, verdict) comparisons; a judge's tie or inconsistent orders is a tie"
                    + ("" if ref == WITH_TIES else "; comparisons with a tie on either side left out "
                       "(n_no_reference)"))
            if len(use):
                row.update(rate_row(boot, use["conversation_id"].to_numpy(),
                                    (use["vote"] == use["verdict"]).to_numpy(float), ci), status="ok", note=note)
            else:
                row.update(no_rate(), status="no_pairs",
                           note=note + "; no human vote on a pair this judge gave a verdict on")
            rows.append(row)
    return frame(rows, AGREEMENT_COLUMNS)
