"""Known-answer quality checks for LLM judges (the paper gives its human raters such checks, §4.2, §9.6).

Every LLM judge also judges, in both A/B orders, pairs whose better side is known:

* ``unhelpful``: the context's real supporter reply against a deliberately unhelpful one (the human
  raters' quality-check replies, ``workflow/resources/annotation/qc_replies.yaml``: dismissive,
  minimising, off-topic, role-breaking), chosen per item by its own hash;
* ``other-conversation``: the real reply against the real reply of another conversation's item (so
  just as fluent and supportive in tone, but about someone else's situation).

Only items with a real next-turn reply (``original_reply``) take part. The sides are named
``original`` and ``qc:<reply key>`` / ``qc:other:<item id>``; each pair's A/B order is its own seeded
coin, as for the study's pairs (:func:`heart.judging.pairs.unit`). These pairs never enter ratings.

:func:`summary` gives each judge's QC accuracy (share of checks whose combined verdict picks the real
reply, with a Wilson interval), its per-order accuracy (each order on its own) and its flip rate, on
the checks and on the study's own pairs. A judge that follows position, not content, shows QC
accuracy near 50 % and a flip rate near 1.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from heart.judging import pairs as pairs_lib

KINDS = ("unhelpful", "other-conversation")
#: what a judge must reach for its verdicts to be read as judging content (issue: the default judge)
TARGET_ACCURACY = 0.70
TARGET_FLIP_RATE = 0.50
SUMMARY_COLUMNS = ["judge", "kind", "n_checks", "n_verdicts", "qc_accuracy", "ci_low", "ci_high",
                   "order_accuracy", "qc_flip_rate", "study_flip_rate", "study_pairs_both_orders", "meets_targets",
                   "status", "note"]


def load_replies(path) -> list[dict]:
    """The unhelpful replies (key, text) of the human raters' quality checks."""
    spec = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    replies = spec.get("replies") or []
    if not replies or any(not isinstance(r, dict) or not r.get("key") or not r.get("text") for r in replies):
        raise ValueError(f"{path}: 'replies' must be a non-empty list of {{key, text}}")
    return replies


def design(items: pd.DataFrame, replies: list[dict], seed: int, kinds=KINDS) -> tuple[pd.DataFrame, dict]:
    """The quality-check pairs (columns of :data:`heart.judging.pairs.COLUMNS` plus ``expected``: the side holding
    the real reply) and their texts, keyed like :func:`heart.judging.pairs.completion_text`."""
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"judging.qc.kinds: unknown {sorted(unknown)}; known: {list(KINDS)}")
    real = items[items["original_reply"].map(lambda t: isinstance(t, str) and bool(t.strip()))]
    real = real.sort_values("item_id")
    texts, rows = {}, []
    ids = real["item_id"].tolist()
    for k, r in enumerate(real.itertuples()):
        texts[(r.item_id, "original", None)] = r.original_reply
        sides = []
        if "unhelpful" in kinds:
            pick = replies[int(pairs_lib.unit(seed, "qc-reply", r.item_id) * len(replies))]
            sides.append(("unhelpful", f"qc:{pick['key']}", pick["text"]))
        if "other-conversation" in kinds and len(ids) > 1:
            others = real[real["conversation_id"] != r.conversation_id]
            if len(others):
                other = others.iloc[int(pairs_lib.unit(seed, "qc-other", r.item_id) * len(others))]
                sides.append(("other-conversation", f"qc:other:{other.item_id}", other.original_reply))
        for kind, system, text in sides:
            texts[(r.item_id, system, None)] = text
            pid = pairs_lib.pair_id(r.item_id, "original", system)
            real_first = pairs_lib.unit(seed, "qc-order", pid) < 0.5
            a, b = ("original", system) if real_first else (system, "original")
            rows.append({"pair_id": pid, "item_id": r.item_id, "conversation_id": r.conversation_id,
                         "subset": r.subset, "system_a": a, "contributor_a": None, "system_b": b,
                         "contributor_b": None, "kind": kind, "expected": "a" if real_first else "b"})
    table = pd.DataFrame(rows, columns=[*pairs_lib.COLUMNS, "expected"])
    for col in ("contributor_a", "contributor_b"):
        table[col] = table[col].astype(object)
    return table, texts


def _wilson(k: int, n: int) -> tuple[float | None, float | None]:
    if not n:
        return None, None
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(lo), float(hi)


def summary(checks: pd.DataFrame, verdicts: pd.DataFrame, flips: pd.DataFrame) -> pd.DataFrame:
    """Per judge and kind (and "all"): QC accuracy, per-order accuracy, flip rates (module docstring).

    ``checks``: every judge's combined QC verdicts (:func:`heart.judging.combine` on the QC pairs, with
    ``expected``); ``verdicts``: their per-order rows; ``flips``: results/judging/flip_rates.parquet (the
    study's pairs). A check with no combined verdict (inconsistent orders, unparsed) counts as a miss.
    """
    rows = []
    if checks.empty:  # no verdicts at all (no checks run, or a bundle that has none): every judge's are absent
        checks = pd.DataFrame(columns=["pair_id", "judge", "kind", "expected", "winner", "n_orders", "flipped"])
    study = flips[flips["axis"] == "overall"].set_index("judge") if len(flips) else pd.DataFrame()
    per_order = verdicts.merge(checks[["pair_id", "judge", "kind", "expected"]].drop_duplicates(),
                               on=["pair_id", "judge"], how="inner")
    per_order = per_order.assign(hit=lambda d: d["parse_ok"] & (
        (d["signed"].fillna(0) > 0) & (d["expected"] == "a") | (d["signed"].fillna(0) < 0) & (d["expected"] == "b")))
    for judge in sorted(set(checks["judge"]) | set(study.index)):
        mine, orders = checks[checks["judge"] == judge], per_order[per_order["judge"] == judge]
        sflip = study.loc[judge] if judge in study.index else None
        for kind in ("all", *KINDS):
            g = mine if kind == "all" else mine[mine["kind"] == kind]
            o = orders if kind == "all" else orders[orders["kind"] == kind]
            if kind != "all" and g.empty:
                continue
            n = len(g)
            hits = int((g["winner"] == g["expected"]).sum())
            both = g[g["n_orders"] == 2]
            lo, hi = _wilson(hits, n)
            accuracy = hits / n if n else None
            flip = float(both["flipped"].astype(bool).mean()) if len(both) else None
            study_flip = None if sflip is None or pd.isna(sflip["flip_rate"]) else float(sflip["flip_rate"])
            worst_flip = max([f for f in (flip, study_flip) if f is not None], default=None)
            meets = (None if accuracy is None else
                     bool(accuracy >= TARGET_ACCURACY and (worst_flip is None or worst_flip <= TARGET_FLIP_RATE)))
            if not n:
                status, note = "absent", ("no item has a real next-turn reply to check against" if len(verdicts)
                                          else "no quality-check verdicts of this judge (none were run, or the "
                                               "judgments came from elsewhere without them)")
            else:
                status = "present"
                note = (f"{hits} of {n} checks won by the real reply; flip rate {flip:.2f} on checks"
                        if flip is not None else f"{hits} of {n} checks won by the real reply")
                if meets is False:
                    note += (f"; below the targets (QC accuracy >= {TARGET_ACCURACY:.0%}, flip rate <= "
                             f"{TARGET_FLIP_RATE:.2f}): its verdicts do not show that it judges content")
            rows.append({"judge": judge, "kind": kind, "n_checks": n, "n_verdicts": len(o),
                         "qc_accuracy": accuracy, "ci_low": lo, "ci_high": hi,
                         "order_accuracy": float(o["hit"].mean()) if len(o) else None,
                         "qc_flip_rate": flip, "study_flip_rate": study_flip,
                         "study_pairs_both_orders": None if sflip is None else int(sflip["n_pairs"]),
                         "meets_targets": meets, "status": status, "note": note})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def warning(quality: pd.DataFrame, judges=None) -> str | None:
    """One line for a figure or caption when any of ``judges`` (default: all) misses the targets."""
    q = quality[(quality["kind"] == "all") & quality["meets_targets"].eq(False)]
    if judges is not None:
        q = q[q["judge"].isin(list(judges))]
    if q.empty:
        return None
    parts = [f"{r.judge}: QC accuracy {r.qc_accuracy:.0%}"
             + (f", flip rate {r.study_flip_rate:.2f}" if pd.notna(r.study_flip_rate) else "")
             for r in q.itertuples()]
    return ("Judges below the quality targets (QC accuracy >= 70 %, flip rate <= 0.5), so these "
            "verdicts do not show content judgement: " + "; ".join(parts))


def quality_warning(inputs) -> str | None:
    """:func:`warning` for a figure rule whose inputs may name ``judge_quality`` (absent in an analysis-only
    run, whose judges were not checked here)."""
    from heart.common import tableio

    path = getattr(inputs, "judge_quality", None)
    return warning(tableio.read_table(path)) if path else None
