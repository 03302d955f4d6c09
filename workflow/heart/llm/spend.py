"""What the run's LLM answers cost, per model and mode, from the response cache's export.

One row per (model, mode) of ``results/llm/cache.parquet`` (every answer the study paid for: this run's and
the earlier runs' it reused): answers, their tokens -- prompt, read from the provider's prompt cache and
written to it (where the provider reports them; missing where none of the model's answers say), completion
-- and their price as recorded when each answer came (``cost``: the synchronous or the batch price of the
price map at the time), with the answers that have no price counted apart, never priced at 0. What the
prompt cache saved is priced from today's price map: the cached tokens at the input price minus at the
cached-read price (missing where the map has no cached-read price for the mode).
"""

from __future__ import annotations

import json

import pandas as pd

SPEND_COLUMNS = ["model", "mode", "answers", "priced_answers", "unpriced_answers", "prompt_tokens",
                 "cached_prompt_tokens", "cache_write_tokens", "completion_tokens", "cost_usd",
                 "prompt_cache_saving_usd"]


def _sum(values) -> int | None:
    """The sum of the reported values (None where the provider reported none)."""
    known = [int(v) for v in values if v is not None and not pd.isna(v)]
    return sum(known) if known else None


def spend(cache: pd.DataFrame, litellm=None) -> pd.DataFrame:
    """Per (model, mode), from an ``llm_cache`` table (key, model, entry JSON)."""
    from heart.llm.models import prices

    rows = []
    for entry in map(json.loads, cache["entry"]):
        usage = entry.get("usage") or {}
        rows.append({"model": entry.get("model"), "mode": entry.get("mode", "sync"), "cost": entry.get("cost"),
                     **{k: usage.get(k) for k in ("prompt_tokens", "cached_tokens", "cache_write_tokens",
                                                  "completion_tokens")}})
    table = pd.DataFrame(rows, columns=["model", "mode", "cost", "prompt_tokens", "cached_tokens",
                                        "cache_write_tokens", "completion_tokens"])
    out = []
    for (model, mode), g in table.groupby(["model", "mode"], sort=True, dropna=False):
        costs = [c for c in g["cost"] if c is not None and not pd.isna(c)]
        cached = _sum(g["cached_tokens"])
        saving = None
        if cached and litellm is not None:
            p = prices(litellm, model, mode)
            if p is not None and p["cache_read"] is not None:
                saving = cached * (p["input"] - p["cache_read"])
        out.append({"model": model, "mode": mode, "answers": len(g), "priced_answers": len(costs),
                    "unpriced_answers": len(g) - len(costs),
                    "prompt_tokens": _sum(g["prompt_tokens"]),
                    "cached_prompt_tokens": cached,
                    "cache_write_tokens": _sum(g["cache_write_tokens"]),
                    "completion_tokens": _sum(g["completion_tokens"]),
                    "cost_usd": float(sum(costs)) if costs else None, "prompt_cache_saving_usd": saving})
    return pd.DataFrame(out, columns=SPEND_COLUMNS)
