"""Orientation of judgments to their pair's canonical order of sides, and per-pair axis marks.

(:mod:`heart.stats.agreement`: orientation.) Every statistic of the package orients the rows of each pair
first, so that "a", a positive preference and a positive axis mark always favour the same side.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from heart.judging.pairs import key_text


SIDES = ("system_a", "contributor_a", "system_b", "contributor_b")


def axis_columns(judgments: pd.DataFrame) -> list[str]:
    """The signed per-axis mark columns of a judgments table (``axis_H`` ... ``axis_T``)."""
    return [c for c in judgments.columns if str(c).startswith("axis_")]


def axis_marks(rows: pd.DataFrame, columns) -> np.ndarray:
    """The signed axis marks of ``rows`` as floats, shape (n, len(columns)): NaN where a mark is missing,
    and a whole column of NaN where the table has no such column."""
    out = np.full((len(rows), len(columns)), np.nan)
    for k, c in enumerate(columns):
        if c in rows.columns:
            out[:, k] = pd.to_numeric(rows[c], errors="coerce").astype("Float64").to_numpy(float, na_value=np.nan)
    return out


def pair_axis_votes(marks: np.ndarray, pair_ids) -> pd.DataFrame:
    """Per pair (index, sorted) and axis: judges whose mark is > 0 minus those whose mark is < 0 (a zero or
    missing mark is no vote, and a mark's strength does not weigh) -- > 0: the axis's majority is side a."""
    return pd.DataFrame(np.sign(np.nan_to_num(marks, nan=0.0)),
                        index=np.asarray(pair_ids, dtype=object)).groupby(level=0, sort=True).sum()


def _side_key(system, contributor, n: int) -> np.ndarray:
    """(system, contributor) as one text key per row; a table without contributors: "" for all."""
    contributor = key_text(contributor) if contributor is not None else np.full(n, "", dtype=object)
    return (key_text(system) + "\x1f" + contributor).astype(object)


def _show_side(key: str) -> str:
    system, contributor = key.split("\x1f", 1)
    return f"{system} ({contributor})" if contributor else system


def orient(judgments: pd.DataFrame, pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Judgments with every row oriented to its pair's canonical order of sides (``docs/methods/agreement.md``).

    Parameters
    ----------
    judgments : pandas.DataFrame
        The judgments table: ``pair_id``, ``system_a``, ``system_b`` (and ``contributor_a`` /
        ``contributor_b`` where present; missing contributors are the same as none).
    pairs : pandas.DataFrame, optional
        A table giving each pair's canonical sides (``pair_id``, ``system_a``, ``contributor_a``,
        ``system_b``, ``contributor_b``), e.g. ``results/pairs.parquet``. Default: the sides of each
        pair's first row in ``judgments``.

    Returns
    -------
    pandas.DataFrame
        A copy, same index and row order. Rows whose sides are the canonical order are unchanged;
        rows giving them the other way round get the canonical sides, ``winner`` "a" <-> "b" (no
        winner stays none), ``preference`` and every ``axis_*`` mark negated (missing stays missing);
        everything else (strength, status, rationale ...) is unchanged.

    Raises
    ------
    ValueError
        When a row's sides are neither the canonical order nor its reverse, or (with ``pairs``)
        its pair is not in ``pairs`` or ``pairs`` gives one pair two different orders; the message
        names the pair_id and the row index.
    """
    out = judgments.copy()
    if out.empty:
        return out
    missing = [c for c in ("pair_id", "system_a", "system_b") if c not in out.columns]
    if missing:
        raise ValueError(f"orient: the judgments lack column(s) {missing}")
    n = len(out)
    ka = _side_key(out["system_a"], out.get("contributor_a"), n)
    kb = _side_key(out["system_b"], out.get("contributor_b"), n)
    pid = out["pair_id"].to_numpy(dtype=object)
    if pairs is None:
        first = ~out["pair_id"].duplicated(keep="first").to_numpy()
        canon = pd.DataFrame({"a": ka[first], "b": kb[first]}, index=pid[first])
    else:
        m = len(pairs)
        canon = pd.DataFrame({"a": _side_key(pairs["system_a"], pairs.get("contributor_a"), m),
                              "b": _side_key(pairs["system_b"], pairs.get("contributor_b"), m)},
                             index=pairs["pair_id"].to_numpy(dtype=object))
        conflict = (canon.groupby(level=0).nunique() > 1).any(axis=1)
        if conflict.any():
            raise ValueError(f"orient: the pairs table gives pair_id {conflict[conflict].index[0]!r} two "
                             "different orders of sides")
        canon = canon[~canon.index.duplicated()]
        unknown = ~pd.Index(pid).isin(canon.index)
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            raise ValueError(f"orient: pair_id {pid[i]!r} (row {out.index[i]!r}) is not in the pairs table "
                             f"({int(unknown.sum())} row(s) of unknown pairs)")
    ca = canon["a"].reindex(pid).to_numpy(dtype=object)
    cb = canon["b"].reindex(pid).to_numpy(dtype=object)
    same = (ka == ca) & (kb == cb)
    swapped = ~same & (ka == cb) & (kb == ca)
    bad = ~(same | swapped)
    if bad.any():
        pos = np.flatnonzero(bad)
        shown = "; ".join(f"pair_id {pid[i]!r}, row {out.index[i]!r}: sides {_show_side(ka[i])} vs "
                          f"{_show_side(kb[i])} are neither {_show_side(ca[i])} vs {_show_side(cb[i])} "
                          "nor the reverse" for i in pos[:5])
        raise ValueError(f"orient: {len(pos)} judgment row(s) whose sides match neither order of their pair: "
                         f"{shown}")
    if not swapped.any():
        return out
    pos = np.flatnonzero(swapped)
    for x, y in (("system_a", "system_b"), ("contributor_a", "contributor_b")):
        if x in out.columns and y in out.columns:
            vx, vy = judgments[x].iloc[pos].array, judgments[y].iloc[pos].array
            out.iloc[pos, out.columns.get_loc(x)] = vy
            out.iloc[pos, out.columns.get_loc(y)] = vx
    if "winner" in out.columns:
        w = judgments["winner"].iloc[pos]
        flipped = np.where(w.isin(["a"]), "b", np.where(w.isin(["b"]), "a", None)).astype(object)
        keep = ~w.isin(["a", "b"]).to_numpy()
        flipped[keep] = w.to_numpy(dtype=object)[keep]
        out.iloc[pos, out.columns.get_loc("winner")] = flipped
    for col in ["preference", *axis_columns(out)]:
        if col in out.columns:
            values = judgments[col].iloc[pos]
            negated = -pd.to_numeric(values, errors="coerce")
            out.iloc[pos, out.columns.get_loc(col)] = negated.array
    return out


def pair_meta(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per pair (sorted by pair_id, its index): item, conversation, subset, kind and both sides
    (those of the pair's first row: orient the table first, :func:`orient`)."""
    cols = [c for c in ("pair_id", "item_id", "conversation_id", "subset", "kind", "system_a",
                        "contributor_a", "system_b", "contributor_b") if c in judgments.columns]
    return judgments[cols].drop_duplicates("pair_id").sort_values("pair_id").set_index("pair_id")
