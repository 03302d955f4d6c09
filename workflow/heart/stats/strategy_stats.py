"""Support-strategy usage, diversity and human–model differences (HEART paper §4.8, §9.10, §9.12).
Definitions, groups and tests: ``docs/methods/strategies.md``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_effectsize, proportions_ztest

from heart.stats import bootstrap

TEST_FAMILY = "strategy_human_vs_model"
LEVELS = ("system", "family", "source")
_KEY = ["tagger", "item_id", "system", "contributor_id"]

USAGE_COLUMNS = ["level", "group", "tagger", "strategy", "status", "n_completions", "n_unparsed", "n_items",
                 "n_used", "rate_pct", "note"]
DIVERSITY_COLUMNS = ["level", "group", "tagger", "status", "n_completions", "n_unparsed", "n_strategies",
                     "coverage", "mean_unique_per_completion", "sd_unique_per_completion", "entropy_bits",
                     "entropy_max_bits", "evenness", "rate_sd_pct", "rate_range_pct", "rate_max_pct",
                     "rate_min_pct", "note"]
HVM_COLUMNS = ["family", "tagger", "strategy", "status", "n_human", "n_model", "used_human", "used_model",
               "rate_human_pct", "rate_model_pct", "diff_pct", "ci_low_pct", "ci_high_pct", "se_boot_pct",
               "cohens_h", "h_ci_low", "h_ci_high", "p_value", "p_value_ztest", "n_clusters", "cluster_unit",
               "n_boot", "n_boot_valid", "note"]


# --- completions ------------------------------------------------------------------------------

def default_source(system: str) -> str:
    """The source of a system when no map is given: "human", "dataset" ("original") or "model"."""
    return {"human": "human", "original": "dataset"}.get(system, "model")


def _contributor(value) -> str:
    return "" if value is None or pd.isna(value) else str(value)


def strategy_list(tags: pd.DataFrame, strategies=None) -> list[str]:
    """The strategies to report: ``strategies`` (taxonomy order) or those in the table, in table order."""
    seen = list(pd.unique(tags["strategy"].dropna())) if len(tags) else []
    if strategies is None:
        return [str(s) for s in seen]
    strategies = list(strategies)
    unknown = sorted(set(seen) - set(strategies))
    if unknown:
        raise ValueError(f"tag table has strategies outside the taxonomy: {', '.join(unknown)}")
    return strategies


def completion_matrix(tags: pd.DataFrame, strategies=None, families: Mapping | None = None,
                      sources: Mapping | None = None) -> pd.DataFrame:
    """One row per completion: key, ``parse_ok``, ``family``, ``source`` and a boolean column per strategy.

    A completion is parsed when all its rows have ``parse_ok``; it uses a strategy when that row's
    label is "present".
    """
    strategies = strategy_list(tags, strategies)
    cols = [*_KEY, "parse_ok", "family", "source", *strategies]
    if tags.empty:
        return pd.DataFrame(columns=cols)
    t = tags.assign(contributor_id=tags["contributor_id"].map(_contributor),
                    used=tags["label"].eq("present").fillna(False).astype(bool),
                    parse_ok=tags["parse_ok"].fillna(False).astype(bool))
    ok = t.groupby(_KEY, sort=True)["parse_ok"].all()
    used = (t.groupby([*_KEY, "strategy"], sort=True)["used"].any()
            .unstack("strategy", fill_value=False).reindex(columns=strategies, fill_value=False).astype(bool))
    comp = used.join(ok).reset_index()
    comp["family"] = comp["system"].map(lambda s: (families or {}).get(s, s))
    comp["source"] = comp["system"].map(lambda s: (sources or {}).get(s, default_source(s)))
    return comp[cols]


def _groups(comp: pd.DataFrame, sources: Mapping | None, families: Mapping | None):
    """(level, group, its completions) for every level, including mapped systems without rows."""
    systems = list(dict.fromkeys([*comp["system"], *(sources or {})]))
    fam = {s: (families or {}).get(s, s) for s in systems}
    src = {s: (sources or {}).get(s, default_source(s)) for s in systems}
    for level, names, column in (("system", systems, "system"),
                                 ("family", list(dict.fromkeys(fam[s] for s in systems)), "family"),
                                 ("source", list(dict.fromkeys(src[s] for s in systems)), "source")):
        for name in names:
            yield level, name, comp[comp[column] == name]


def _taggers(tags: pd.DataFrame) -> list:
    return list(pd.unique(tags["tagger"])) if len(tags) else [None]


# --- usage and diversity ---------------------------------------------------------------------

def _parsed_groups(tags, strategies, families, sources):
    """Per tagger and group: (tagger, level, group, parsed completions, n parsed, n unparsed, status, note)."""
    comp_all = completion_matrix(tags, strategies, families, sources)
    for tagger in _taggers(tags):
        comp = comp_all[comp_all["tagger"] == tagger] if tagger is not None else comp_all
        for level, name, g in _groups(comp, sources, families):
            parsed = g[g["parse_ok"].astype(bool)]
            n, n_bad = len(parsed), len(g) - len(parsed)
            yield (tagger, level, name, parsed, n, n_bad, *_status(n, n_bad))


def usage(tags: pd.DataFrame, families: Mapping | None = None, sources: Mapping | None = None,
          strategies=None) -> pd.DataFrame:
    """Share of completions using each strategy, per system, family and source (percentage points).

    Parameters
    ----------
    tags : DataFrame
        The long tag table (``strategy_tags.schema.yaml``).
    families : mapping, optional
        system -> family (e.g. "gpt-5" -> "gpt"); unmapped systems are their own family.
    sources : mapping, optional
        system -> "model" / "human" / "dataset"; defaults to :func:`default_source`. Systems listed
        here without tagged completions are reported with status "absent".
    strategies : list, optional
        The taxonomy keys in report order (defaults to those in ``tags``).

    Returns
    -------
    DataFrame
        ``USAGE_COLUMNS``: one row per (level, group, tagger, strategy). ``rate_pct`` is NaN and
        ``status`` "absent" when the group has no parsed completion.
    """
    strategies = strategy_list(tags, strategies)
    rows = []
    for tagger, level, name, parsed, n, n_bad, status, note in _parsed_groups(tags, strategies, families, sources):
        for s in strategies:
            k = int(parsed[s].sum()) if n else 0
            rows.append({"level": level, "group": name, "tagger": tagger, "strategy": s, "status": status,
                         "n_completions": n, "n_unparsed": n_bad,
                         "n_items": int(parsed["item_id"].nunique()),
                         "n_used": k if n else np.nan, "rate_pct": 100.0 * k / n if n else np.nan,
                         "note": note})
    out = pd.DataFrame(rows, columns=USAGE_COLUMNS)
    out["n_used"] = out["n_used"].astype("Int64")
    return out


def _status(n: int, n_bad: int) -> tuple[str, str]:
    if n:
        return "present", f"{n} parsed completions" + (f"; {n_bad} unparsed left out" if n_bad else "")
    if n_bad:
        return "absent", f"all {n_bad} completions unparsed"
    return "absent", "no tagged completions"


def shannon_entropy_bits(counts) -> float:
    """Shannon entropy (base 2) of the distribution proportional to ``counts``; NaN when all are 0."""
    c = np.asarray(counts, dtype=float)
    total = c.sum()
    if total <= 0:
        return float("nan")
    p = c[c > 0] / total
    return float(-(p * np.log2(p)).sum()) + 0.0


def diversity(tags: pd.DataFrame, families: Mapping | None = None, sources: Mapping | None = None,
              strategies=None, ddof: int = 1) -> pd.DataFrame:
    """Coverage, unique strategies per completion, entropy and the spread of strategy rates, per group.

    Parameters
    ----------
    tags, families, sources, strategies
        As in :func:`usage`.
    ddof : int
        Delta degrees of freedom of the SD of the K strategy rates (1: sample SD, the default;
        0: population SD).

    Returns
    -------
    DataFrame
        ``DIVERSITY_COLUMNS``: one row per (level, group, tagger); definitions in ``docs/methods/strategies.md``.
    """
    strategies = strategy_list(tags, strategies)
    k_total = len(strategies)
    rows = []
    for tagger, level, name, parsed, n, n_bad, status, note in _parsed_groups(tags, strategies, families, sources):
        row = {"level": level, "group": name, "tagger": tagger, "status": status, "n_completions": n,
               "n_unparsed": n_bad, "n_strategies": k_total, "note": note,
               "entropy_max_bits": float(np.log2(k_total)) if k_total else np.nan}
        if n and k_total:
            used = parsed[strategies].to_numpy(dtype=bool)
            uses = used.sum(axis=0)
            per_completion = used.sum(axis=1)
            rates = 100.0 * uses / n
            h = shannon_entropy_bits(uses)
            row.update({
                "coverage": int((uses > 0).sum()),
                "mean_unique_per_completion": float(per_completion.mean()),
                "sd_unique_per_completion": float(per_completion.std(ddof=1)) if n > 1 else np.nan,
                "entropy_bits": h,
                "evenness": h / np.log2(k_total) if k_total > 1 and not np.isnan(h) else np.nan,
                "rate_sd_pct": float(np.std(rates, ddof=ddof)) if k_total > ddof else np.nan,
                "rate_range_pct": float(rates.max() - rates.min()),
                "rate_max_pct": float(rates.max()), "rate_min_pct": float(rates.min()),
            })
            if uses.sum() == 0:
                row["note"] += "; no strategy used (entropy undefined)"
        rows.append(row)
    out = pd.DataFrame(rows, columns=DIVERSITY_COLUMNS)
    out["coverage"] = out["coverage"].astype("Int64")
    return out


# --- humans vs models ------------------------------------------------------------------------

def _cluster_of(items: pd.Series, clusters) -> tuple[pd.Series, str]:
    if clusters is None:
        return items.astype(str), "item"
    if isinstance(clusters, pd.DataFrame):
        clusters = clusters.set_index("item_id")["conversation_id"]
    mapped = items.map(clusters)
    missing = sorted(set(items[mapped.isna()]))
    if missing:
        raise ValueError(f"no conversation for item(s) {', '.join(map(str, missing[:5]))}"
                         + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    return mapped.astype(str), "conversation"


def _ztest_p(k1: int, n1: int, k2: int, n2: int) -> float:
    pooled = (k1 + k2) / (n1 + n2)
    if pooled in (0.0, 1.0):
        return 1.0  # both groups all-absent or all-present: no difference to test
    return float(proportions_ztest([k1, k2], [n1, n2])[1])


def _h(p1, p2):
    return 2 * np.arcsin(np.sqrt(p1)) - 2 * np.arcsin(np.sqrt(p2))


def human_vs_model(tags: pd.DataFrame, sources: Mapping | None = None, clusters=None, n_boot: int = 2000,
                   seed: int = 0, strategies=None, ci: float = 0.95) -> pd.DataFrame:
    """Per strategy: usage rate of humans minus models, with a conversation-cluster bootstrap CI.

    Parameters
    ----------
    tags : DataFrame
        The long tag table.
    sources : mapping, optional
        system -> "model" / "human" / "dataset" (default :func:`default_source`).
    clusters : mapping, Series or DataFrame, optional
        item_id -> conversation_id (a DataFrame needs ``item_id`` and ``conversation_id``, e.g. the
        items table). Without it each item is its own cluster (``cluster_unit`` "item").
    n_boot, seed : int
        Bootstrap resamples and their seed (:mod:`heart.stats.bootstrap`).
    strategies : list, optional
        Taxonomy keys in report order.
    ci : float
        Level of the percentile interval.

    Returns
    -------
    DataFrame
        ``HVM_COLUMNS``: one row per (tagger, strategy). Without parsed human (or model) completions
        every row has status "absent", a note and NaN statistics.
    """
    strategies = strategy_list(tags, strategies)
    comp_all = completion_matrix(tags, strategies, None, sources)
    comp_all = comp_all[comp_all["parse_ok"].astype(bool)]
    rows = []
    for tagger in _taggers(tags):
        comp = comp_all[comp_all["tagger"] == tagger] if tagger is not None else comp_all
        hum, mod = comp[comp["source"] == "human"], comp[comp["source"] == "model"]
        base = {"family": TEST_FAMILY, "tagger": tagger, "n_human": len(hum), "n_model": len(mod),
                "n_boot": n_boot}
        if hum.empty or mod.empty:
            who = " and ".join(w for w, g in (("human", hum), ("model", mod)) if g.empty)
            for s in strategies:
                rows.append({**base, "strategy": s, "status": "absent",
                             "note": f"no parsed {who} completions: the comparison is not available"})
            continue
        both = pd.concat([hum, mod])
        cl, unit = _cluster_of(both["item_id"], clusters)
        cl = cl.to_numpy()
        boot = bootstrap.ClusterBootstrap(cl, n_boot, seed)
        n_cl = len(boot.ids)
        is_h = (both["source"] == "human").to_numpy()
        used = both[strategies].to_numpy(dtype=float)
        (p_h, r_h), (p_m, r_m) = boot.rate(cl[is_h], used[is_h]), boot.rate(cl[~is_h], used[~is_h])
        diff_b = 100.0 * (r_h - r_m)
        h_b = _h(r_h, r_m)
        valid = np.isfinite(diff_b[:, 0])
        for j, s in enumerate(strategies):
            k_h, k_m = int(used[is_h, j].sum()), int(used[~is_h, j].sum())
            diff = 100.0 * (p_h[j] - p_m[j])
            d, hb = diff_b[valid, j], h_b[valid, j]
            note = f"{n_cl} {unit} clusters"
            if n_cl < 2 or len(d) < 2:
                lo = hi = se = h_lo = h_hi = p = np.nan
                note += "; fewer than 2 clusters: no bootstrap interval"
            else:
                lo, hi = bootstrap.interval(d, ci)
                h_lo, h_hi = bootstrap.interval(hb, ci)
                se, p = bootstrap.standard_error(d), bootstrap.p_value(diff, d)
            p_z = _ztest_p(k_h, len(hum), k_m, len(mod))
            if not se > 0:  # NaN too
                p = p_z if diff != 0 else 1.0
                note += "; bootstrap SE unavailable or 0: p_value is the z-test's"
            rows.append({**base, "strategy": s, "status": "present", "used_human": k_h, "used_model": k_m,
                         "rate_human_pct": 100.0 * p_h[j], "rate_model_pct": 100.0 * p_m[j], "diff_pct": diff,
                         "ci_low_pct": float(lo), "ci_high_pct": float(hi), "se_boot_pct": se,
                         "cohens_h": float(proportion_effectsize(p_h[j], p_m[j])), "h_ci_low": float(h_lo),
                         "h_ci_high": float(h_hi), "p_value": p, "p_value_ztest": p_z, "n_clusters": n_cl,
                         "cluster_unit": unit, "n_boot_valid": int(valid.sum()), "note": note})
    out = pd.DataFrame(rows, columns=HVM_COLUMNS)
    for col in ("used_human", "used_model", "n_clusters", "n_boot_valid"):
        out[col] = out[col].astype("Int64")
    return out
