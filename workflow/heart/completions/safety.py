"""The automated safety screen of the completions (HEART paper §6: "All materials underwent automated safety
screening and human review"), and of the items a model wrote (the adversarial rewrites, :func:`model_written_items`):
every completion's score and flag per moderation category, by the offline
lexicon (``workflow/resources/safety/lexicon.yaml``, the embedded default's screen) with the categories named
as OpenAI's moderation endpoint names them. What it can and cannot catch: ``docs/methods/safety.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

COLUMNS = ["item_id", "system", "contributor_id", "screen", "screen_version", "category", "status", "score",
           "flagged", "evidence"]
#: the screen's name in the table
LEXICON = "lexicon"
#: the longest evidence kept: the matched phrase (the table holds no more of a reply than the match)
EVIDENCE_MAX = 80
#: the ``system`` of an item's rows: the seeker turns a model wrote (the adversarial rewrites), screened as a
#: completion is; reported beside the systems, never a system of the statistics nor a review task
MODEL_ITEMS = "(model-written items)"


@dataclass(frozen=True)
class Lexicon:
    """The versioned phrases by category, compiled, and the categories it does not look for."""

    version: str
    patterns: dict[str, re.Pattern]
    not_screened: tuple[str, ...]


def load_lexicon(path) -> Lexicon:
    """Read ``lexicon.yaml``; errors name the file and the category."""
    path = Path(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if "version" not in data or not isinstance(data.get("categories"), dict) or not data["categories"]:
        raise ValueError(f"{path}: needs 'version' and a mapping 'categories' (category -> patterns/terms)")
    compiled = {}
    for name, entry in data["categories"].items():
        parts = [str(p) for p in (entry or {}).get("patterns", [])]
        parts += [r"\b" + re.escape(str(t)) + r"\b" for t in (entry or {}).get("terms", [])]
        if not parts:
            raise ValueError(f"{path}: category {name!r} has no patterns or terms")
        try:
            compiled[name] = re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"{path}: category {name!r}: a pattern does not compile ({exc})") from None
    return Lexicon(str(data["version"]), compiled, tuple(data.get("not_screened") or ()))


def screen(completions: pd.DataFrame, lexicon: Lexicon) -> pd.DataFrame:
    """One row per (completion, moderation category) (``COLUMNS``): score 1.0 and flagged where the reply holds
    a phrase of the category (``evidence``: the first match), 0.0 where it holds none; a category the lexicon
    does not look for is ``not_screened`` with no score (never 0: not looked at is not safe). A completion
    without text (a failed call) is ``no_text``."""
    rows = []
    for r in completions.itertuples():
        text = r.text if isinstance(r.text, str) else ""
        key = {"item_id": r.item_id, "system": r.system,
               "contributor_id": None if pd.isna(getattr(r, "contributor_id", None)) else r.contributor_id,
               "screen": LEXICON, "screen_version": lexicon.version}
        for category, pattern in lexicon.patterns.items():
            found = pattern.search(text) if text.strip() else None
            rows.append({**key, "category": category, "status": "screened" if text.strip() else "no_text",
                         "score": (1.0 if found else 0.0) if text.strip() else None,
                         "flagged": bool(found) if text.strip() else None,
                         "evidence": found.group(0)[:EVIDENCE_MAX] if found else None})
        rows += [{**key, "category": c, "status": "not_screened", "score": None, "flagged": None, "evidence": None}
                 for c in lexicon.not_screened]
    return pd.DataFrame(rows, columns=COLUMNS)


def model_written_items(items: pd.DataFrame) -> pd.DataFrame:
    """The items a model wrote part of, as rows the screens read (item_id, system :data:`MODEL_ITEMS`,
    contributor_id None, text): the adversarial items this workflow rewrote (no release key: the paper's released
    ones were screened by its authors), their seeker turns joined by line breaks (every seeker turn of such a
    window is a rewrite)."""
    made = items[(items["subset"] == "adversarial") & items["release_key"].isna()]
    texts = ["\n".join(t["text"] for t in history if t["role"] == "seeker") for history in made["history"]]
    return pd.DataFrame({"item_id": made["item_id"].tolist(), "system": MODEL_ITEMS, "contributor_id": None,
                         "text": texts}, columns=["item_id", "system", "contributor_id", "text"])
