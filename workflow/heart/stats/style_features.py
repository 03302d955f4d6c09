"""Style features of a completion for the style-controlled ratings: its length in words, and its warmth
against the versioned lexicon ``workflow/resources/style/warmth.yaml`` (definitions:
:mod:`heart.stats.style_control`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from heart.judging import pairs


FEATURE_COLUMNS = ["item_id", "system", "contributor", "words", "warmth_hits", "warmth"]
_GROUP_KEYS = {"terms", "patterns"}


# --- the warmth lexicon -----------------------------------------------------------------------

@dataclass(frozen=True)
class Lexicon:
    """The compiled warmth lexicon: its ``version``, group names and one union pattern."""

    version: int
    groups: tuple[str, ...]
    pattern: re.Pattern

    def hits(self, text) -> int:
        """Non-overlapping matches of the union pattern (curly apostrophes read as straight ones)."""
        if not isinstance(text, str):
            return 0
        return sum(1 for _ in self.pattern.finditer(text.replace("\u2019", "'")))

    def score(self, text) -> float:
        """Warmth: ``100 * hits / words``; 0 for an empty text."""
        n = words(text)
        return 100.0 * self.hits(text) / n if n else 0.0


def _term_regex(term: str) -> str:
    parts = [re.escape(w[:-1]) + r"\w*" if w.endswith("*") else re.escape(w) for w in term.split()]
    return r"\s+".join(parts)


def load_lexicon(path) -> Lexicon:
    """The warmth lexicon file (format in its header), checked: errors name the file and the entry.

    Terms of all groups and the groups' patterns are united into one case-insensitive pattern; terms
    are word-bounded and tried longest first, so "thank you for sharing" is one hit, not two.

    Raises
    ------
    ValueError
        Not a mapping, ``version`` not a positive integer, no ``groups``, a group with unknown keys,
        without terms and patterns, an entry that is not a non-empty string, or a pattern that does
        not compile.
    """
    path = Path(path)
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid UTF-8 YAML: {exc}") from None
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: must be a mapping with version and groups")
    problems = []
    version = spec.get("version")
    if not (isinstance(version, int) and not isinstance(version, bool) and version >= 1):
        problems.append(f"version must be a positive integer, not {version!r}")
    extra = sorted(set(spec) - {"version", "groups"})
    if extra:
        problems.append(f"unknown keys {extra}")
    groups = spec.get("groups")
    if not isinstance(groups, dict) or not groups:
        problems.append("groups must be a non-empty mapping of group name -> {terms, patterns}")
        groups = {}
    terms, patterns = [], []
    for name, group in groups.items():
        if not isinstance(group, dict) or not (set(group) & _GROUP_KEYS):
            problems.append(f"groups.{name} needs terms or patterns")
            continue
        if set(group) - _GROUP_KEYS:
            problems.append(f"groups.{name}: unknown keys {sorted(set(group) - _GROUP_KEYS)}")
        for key in sorted(_GROUP_KEYS & set(group)):
            entries = group[key]
            if not isinstance(entries, list) or not entries:
                problems.append(f"groups.{name}.{key} must be a non-empty list")
                continue
            for i, entry in enumerate(entries):
                if not isinstance(entry, str) or not entry.strip():
                    problems.append(f"groups.{name}.{key}[{i}] must be a non-empty string, not {entry!r}")
                elif key == "terms":
                    terms.append(entry.strip().replace("\u2019", "'"))
                else:
                    try:
                        re.compile(entry)
                    except re.error as exc:
                        problems.append(f"groups.{name}.patterns[{i}]: bad pattern: {exc}")
                        continue
                    patterns.append(entry)
    if problems:
        raise ValueError("\n".join(f"{path}: {p}" for p in problems))
    alternatives = []
    if terms:
        ordered = sorted(set(terms), key=lambda t: (-len(t), t))
        alternatives.append(r"(?<!\w)(?:" + "|".join(_term_regex(t) for t in ordered) + r")(?!\w)")
    alternatives += [f"(?:{p})" for p in patterns]
    return Lexicon(version=version, groups=tuple(groups), pattern=re.compile("|".join(alternatives), re.IGNORECASE))


def words(text) -> int:
    """Whitespace-separated words (0 for a missing text)."""
    return len(text.split()) if isinstance(text, str) else 0


def completion_features(completions: pd.DataFrame, lexicon: Lexicon) -> pd.DataFrame:
    """Length and warmth of every completion.

    Parameters
    ----------
    completions : DataFrame
        ``results/completions/{system}.parquet`` rows: ``item_id``, ``system``, ``contributor_id``, ``text``.
    lexicon : Lexicon
        :func:`load_lexicon`.

    Returns
    -------
    DataFrame
        ``FEATURE_COLUMNS``: ``item_id`` (text), ``system``, ``contributor`` ("" where missing),
        ``words``, ``warmth_hits`` and ``warmth`` (``100 * warmth_hits / words``, 0 when empty);
        the first row of a repeated (item, system, contributor) key wins.
    """
    missing = [c for c in ("item_id", "system", "contributor_id", "text") if c not in completions.columns]
    if missing:
        raise ValueError(f"completions: missing columns {missing}")
    text = completions["text"].to_numpy(dtype=object)
    n = np.array([words(t) for t in text], dtype=np.int64)
    hits = np.array([lexicon.hits(t) for t in text], dtype=np.int64)
    out = pd.DataFrame({"item_id": completions["item_id"].astype(str).to_numpy(dtype=object),
                        "system": completions["system"].to_numpy(dtype=object),
                        "contributor": pairs.key_text(completions["contributor_id"]),
                        "words": n, "warmth_hits": hits,
                        "warmth": np.where(n > 0, 100.0 * hits / np.maximum(n, 1), 0.0)})
    return out.drop_duplicates(["item_id", "system", "contributor"], ignore_index=True)[FEATURE_COLUMNS]
