"""What an LLM stage would call and roughly what it costs, before paying for anything."""

from __future__ import annotations

import pandas as pd

from heart.llm.cache import ResponseCache, cache_key
from heart.llm.decoding import resolved_params
from heart.llm.models import ModelSpec, cost_usd
from heart.llm.request import Request, prepare_all


PREVIEW_COLUMNS = ["stage", "model", "litellm_model", "calls", "cached", "to_call", "est_prompt_tokens",
                   "max_completion_tokens", "est_max_cost_usd", "cost_status"]


def preview(specs: dict[str, ModelSpec], requests_by_stage: dict[str, list[Request]],
            cache: ResponseCache) -> pd.DataFrame:
    """Calls each stage would make, how many are cached, and a rough cost, before paying for any.

    Prompt tokens are counted with the gpt-4o tokenizer for every model, on an
    even sample of at most ~2,000 requests per stage, scaled up (a rough estimate: litellm would fetch other models' tokenizers from a hub, which must
    not happen before a run or offline); completion tokens are taken at the
    requests' ``max_tokens`` (an upper bound); prices come from litellm's local price map.

    ``cost_status`` says what ``est_max_cost_usd`` is: "priced" (the upper bound from the price map),
    "unpriced" (the map has no price for the model: null, never 0), "local" (a model served on this
    machine, ``local_gguf``: 0, nothing is paid), "none to call" (every call cached: 0).
    """
    import litellm

    litellm.suppress_debug_info = True
    rows = []
    for stage, requests in requests_by_stage.items():
        requests, _ = prepare_all(specs, requests)
        by_model: dict[str, list[Request]] = {}
        for r in requests:
            by_model.setdefault(r.model, []).append(r)
        for name, reqs in sorted(by_model.items()):
            spec = specs[name]
            todo = [r for r in reqs if cache.get(cache_key(spec, r)) is None]
            # tokenizing is slow at paper scale (~10^5 judge calls): count an even sample, scale up
            sample = todo[:: max(1, len(todo) // 2000)]
            counted = sum(litellm.token_counter(model="gpt-4o", messages=list(r.messages)) for r in sample)
            prompt_tokens = round(counted * len(todo) / len(sample)) if sample else 0
            completion_tokens = sum(int(resolved_params(spec, r).get("max_tokens", 256)) for r in todo)
            if not todo:
                cost, status = 0.0, "none to call"
            elif spec.local_gguf:
                cost, status = 0.0, "local"
            else:  # (at least one prompt token: cost_usd tells "no price" from a 0 total only with some)
                cost = cost_usd(litellm, spec.model, {"prompt_tokens": max(prompt_tokens, 1),
                                                    "completion_tokens": completion_tokens})
                status = "unpriced" if cost is None else "priced"
            rows.append({"stage": stage, "model": name, "litellm_model": spec.model, "calls": len(reqs),
                         "cached": len(reqs) - len(todo), "to_call": len(todo),
                         "est_prompt_tokens": prompt_tokens, "max_completion_tokens": completion_tokens,
                         "est_max_cost_usd": cost, "cost_status": status})
    return pd.DataFrame(rows, columns=PREVIEW_COLUMNS)


def preview_summary(table: pd.DataFrame) -> str:
    """One line about a :func:`preview` table: calls to make, the upper bound on what the priced ones cost,
    and how many calls (of which models) have no known price -- whose cost is unknown, never $0.

    E.g. "126,380 calls to make (0 cached); at most $4,609.12 for the 100,000 priced calls; 26,380 calls
    (2 models: kimi-k2, llama-3.1-405b) unpriced: cost unknown".
    """
    to_call, cached = int(table["to_call"].sum()), int(table["cached"].sum())
    todo = table[table["to_call"] > 0]
    parts = [f"{to_call:,} calls to make ({cached:,} cached)"]
    if not to_call:
        parts.append("nothing to pay")
    priced = todo[todo["cost_status"] == "priced"]
    if len(priced):
        n = int(priced["to_call"].sum())
        cost = float(priced["est_max_cost_usd"].sum())
        parts.append(f"at most ${cost:,.2f}" + ("" if n == to_call else f" for the {n:,} priced calls"))
    local = todo[todo["cost_status"] == "local"]
    if len(local):
        parts.append(f"{int(local['to_call'].sum()):,} calls to local models (nothing to pay)")
    unpriced = todo[todo["cost_status"] == "unpriced"]
    if len(unpriced):
        models = sorted(set(unpriced["model"]))
        named = f"{len(models)} model{'' if len(models) == 1 else 's'}: {', '.join(models)}"
        parts.append(f"{int(unpriced['to_call'].sum()):,} calls ({named}) unpriced: cost unknown")
    return "; ".join(parts)
