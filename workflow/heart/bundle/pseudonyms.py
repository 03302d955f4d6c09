"""Pseudonyms for the people in a data release: writers and raters get ``writer-001`` / ``rater-001``.

The ids a study holds may be a crowd platform's worker ids, which identify a person to whoever holds the
platform's records. A release replaces each with a pseudonym. The mapping keeps the ids' sort order
(the k-th id in sorted order is number k, zero-padded), because the statistics break ties by id
(Best Human's choice, heart.stats.leaderboard): the same data under pseudonyms give the same numbers.
The mapping itself is not released.
"""

from __future__ import annotations

import pandas as pd


def mapping(ids, prefix: str) -> dict[str, str]:
    """``{id: f"{prefix}-{k:03d}"}`` for the distinct non-empty ids, k = 1, 2, ... in sorted order (wider
    than three digits when there are more than 999, so the order is kept)."""
    distinct = sorted({str(i) for i in ids if i is not None and not pd.isna(i) and str(i) != ""})
    width = max(3, len(str(len(distinct))))
    return {value: f"{prefix}-{k:0{width}d}" for k, value in enumerate(distinct, start=1)}


def rename(values, names: dict[str, str]):
    """``values`` (a Series) with every id that ``names`` knows replaced; missing values stay missing."""
    return values.map(lambda v: names.get(v, v) if isinstance(v, str) else v)


def rename_ref(ref, writers: dict[str, str]):
    """A completion reference (``system`` or ``system#contributor``, heart.judging.pairs.completion_ref)
    with its contributor pseudonymised."""
    if not isinstance(ref, str) or "#" not in ref:
        return ref
    system, _, contributor = ref.partition("#")
    return f"{system}#{writers.get(contributor, contributor)}"
