"""What an LLM stage would call and roughly what it costs, before paying for anything."""

from __future__ import annotations

import pandas as pd

from heart.llm import load_litellm
from heart.llm.cache import ResponseCache, cache_key
from heart.llm.decoding import resolved_params
from heart.llm.models import ModelSpec
from heart.llm.request import Request, prepare_all, shared_prefix_end


PREVIEW_COLUMNS = ["stage", "model", "litellm_model", "mode", "calls", "cached", "to_call", "est_prompt_tokens",
                   "est_shared_prefix_tokens", "est_cache_read_tokens", "max_completion_tokens", "est_max_cost_usd",
                   "est_max_cost_sync_usd", "est_max_cost_batch_usd", "est_cost_with_prompt_cache_usd",
                   "cost_status", "scenario"]

#: smallest prefix a provider caches, where the price map gives none (OpenAI caches 1,024 tokens and up)
DEFAULT_CACHE_MIN_TOKENS = 1024


def common_prefix_length(a: str | bytes, b: str | bytes) -> int:
    """How many leading characters (or bytes) ``a`` and ``b`` share (``len(os.path.commonprefix([a, b]))``,
    which walks the strings a character at a time in Python: ~40,000 judge prompts of several thousand
    characters took a minute). A binary search on the length, each step one comparison of two slices."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:  # the first lo characters are known equal
            lo = mid
        else:
            hi = mid - 1
    return lo


def shared_prefix_chars(spec: ModelSpec, reqs: list[Request]) -> list[int]:
    """Per request (in the order given), the characters of its prompt a provider's prefix cache could serve:
    the prefix it shares with the request before it, sorted by prompt (the judge's instructions and rubric,
    and a dialogue judged in several pairs, come first in every prompt). Anthropic caches only up to its
    ``cache_control`` mark, the system turn (:func:`heart.llm.wire.wire_messages`)."""
    # sorted and compared as UTF-8, which orders as the characters do: bytes compare as memory, while a text
    # holding one character past Latin-1 compares a character at a time; the shared bytes are taken back to
    # the start of a character they end inside, then counted as characters
    texts = ["\x1e".join(m["content"] for m in r.messages if isinstance(m.get("content"), str)).encode(
        "utf-8", "surrogatepass") for r in reqs]
    order = sorted(range(len(texts)), key=texts.__getitem__)
    shared = [0] * len(texts)
    for prev, cur in zip(order, order[1:]):
        text, n = texts[cur], common_prefix_length(texts[prev], texts[cur])
        while n and n < len(text) and text[n] & 0xC0 == 0x80:  # a continuation byte: a character cut in two
            n -= 1
        shared[cur] = len(text[:n].decode("utf-8", "surrogatepass"))
    if spec.model.startswith("anthropic/"):
        for i, r in enumerate(reqs):
            marked = 0  # up to its last cache mark: the system turn, then a user turn's shared part
            for m in r.messages:
                content = m["content"] if isinstance(m.get("content"), str) else ""
                end = len(content) if m["role"] == "system" else shared_prefix_end(content)
                if end is None:
                    break
                marked += end + 1
            shared[i] = min(shared[i], marked)
    return shared


def preview(specs: dict[str, ModelSpec], requests_by_stage: dict[str, list[Request]],
            cache: ResponseCache, scenarios: dict[str, str] | None = None) -> pd.DataFrame:
    """Calls each stage would make, how many are cached, and what they would cost, before paying for any.

    Prompt tokens are counted with the gpt-4o tokenizer for every model, on an
    even sample of at most ~2,000 requests per stage, scaled up (a rough estimate: litellm would fetch
    other models' tokenizers from a hub, which must
    not happen before a run or offline); completion tokens are taken at the
    requests' ``max_tokens`` (an upper bound); prices come from litellm's local price map.

    Costs, per row: ``est_max_cost_sync_usd`` synchronously and ``est_max_cost_batch_usd`` through the
    provider's batch interface (the map's batch prices; null where it has none), both with no prompt cache
    (upper bounds); ``est_max_cost_usd`` in the mode this config runs the row (``mode``: batch for a model
    with ``batch`` set, except completions). ``est_cache_read_tokens`` estimates the prompt tokens a
    provider's prefix cache would serve (:func:`shared_prefix_chars`, at least the model's minimum cacheable
    prompt, for models the map says cache) and ``est_cost_with_prompt_cache_usd`` the configured mode's cost
    with them read at the cached price (a write at the map's cache-write price, where it has one, once per
    distinct prefix) -- an estimate: providers keep a prefix minutes, not a run. Prices are per-call base
    prices (:func:`heart.llm.models.prices`): no call here nears a long-context tier (Gemini 2.5 Pro's above
    200k prompt tokens), which litellm's ``cost_per_token`` applied to a whole stage's summed tokens,
    overpricing Gemini's judging by half before 2026-11-26.

    ``cost_status`` says what ``est_max_cost_usd`` is: "priced" (the upper bound from the price map),
    "unpriced" (the map has no price for the model or this mode: null, never 0), "local" (a model served
    on this machine, ``local_gguf``: 0, nothing is paid), "none to call" (every call cached: 0).

    ``scenarios`` (stage -> label) marks stages that are not this run's calls but a design to compare it with
    (the adaptive design's preview: the fixed design, the adaptive one as expected); their rows carry the label
    in ``scenario`` (null for the run's own) and :func:`preview_summary` leaves them out of its totals.
    """
    litellm = load_litellm()

    from heart.llm.wire import by_batch
    from heart.llm.models import model_info, priced, prices

    litellm.suppress_debug_info = True
    rows = []
    nothing_cached = cache.holds_nothing()
    for stage, requests in requests_by_stage.items():
        requests, _ = prepare_all(specs, requests)
        by_model: dict[str, list[Request]] = {}
        for r in requests:
            by_model.setdefault(r.model, []).append(r)
        for name, reqs in sorted(by_model.items()):
            spec = specs[name]
            todo = list(reqs) if nothing_cached else [r for r in reqs if cache.get(cache_key(spec, r)) is None]
            mode = "batch" if todo and all(by_batch(spec, r) for r in todo) else "sync"
            # tokenizing is slow at paper scale (~10^5 judge calls): count an even sample, scale up
            sample = todo[:: max(1, len(todo) // 2000)]
            counted = sum(litellm.token_counter(model="gpt-4o", messages=list(r.messages)) for r in sample)
            prompt_tokens = round(counted * len(todo) / len(sample)) if sample else 0
            completion_tokens = sum(int(resolved_params(spec, r).get("max_tokens", 256)) for r in todo)
            chars = sum(len(m["content"]) for r in sample for m in r.messages if isinstance(m.get("content"), str))
            per_char = counted / chars if chars else 0.0
            shared = shared_prefix_chars(spec, todo)
            info = model_info(litellm, spec.model)  # a model the map does not know: no caching assumed
            floor = info.get("prompt_cache_min_tokens") or DEFAULT_CACHE_MIN_TOKENS
            shared_tokens = [round(c * per_char) for c in shared]
            reads = (sum(t for t in shared_tokens if t >= floor) if info.get("supports_prompt_caching") else 0)
            # one cache write per distinct shared prefix (told apart by its length), of that prefix's tokens
            writes = (sum({t for t in shared_tokens if t >= floor})
                      if reads and spec.model.startswith("anthropic/") else 0)
            costs = {}
            for m in ("sync", "batch"):
                table = prices(litellm, spec.model, m)
                costs[m] = priced(table, max(prompt_tokens, 1), completion_tokens)
                costs[m + "_cached"] = priced(table, max(prompt_tokens, 1), completion_tokens, reads, writes)
            if not todo:
                status, cost, sync, batch, cached_cost = "none to call", 0.0, 0.0, 0.0, 0.0
            elif spec.local_gguf:
                status, cost, sync, batch, cached_cost = "local", 0.0, 0.0, 0.0, 0.0
            else:
                sync, batch = costs["sync"], costs["batch"]
                cost, cached_cost = costs[mode], costs[mode + "_cached"]
                status = "unpriced" if cost is None else "priced"
            rows.append({"stage": stage, "model": name, "litellm_model": spec.model, "mode": mode,
                         "calls": len(reqs), "cached": len(reqs) - len(todo), "to_call": len(todo),
                         "est_prompt_tokens": prompt_tokens,
                         "est_shared_prefix_tokens": round(sum(shared_tokens) / len(todo)) if todo else 0,
                         "est_cache_read_tokens": reads if todo and not spec.local_gguf else 0,
                         "max_completion_tokens": completion_tokens, "est_max_cost_usd": cost,
                         "est_max_cost_sync_usd": sync, "est_max_cost_batch_usd": batch,
                         "est_cost_with_prompt_cache_usd": cached_cost, "cost_status": status,
                         "scenario": (scenarios or {}).get(stage)})
    return pd.DataFrame(rows, columns=PREVIEW_COLUMNS)


def preview_summary(table: pd.DataFrame) -> str:
    """One line about a :func:`preview` table: calls to make, the upper bound on what the priced ones cost,
    and how many calls (of which models) have no known price -- whose cost is unknown, never $0.

    E.g. "126,380 calls to make (0 cached); at most $4,609.12 for the 100,000 priced calls; 26,380 calls
    (2 models: kimi-k2, llama-3.1-405b) unpriced: cost unknown".
    """
    if "scenario" in table:
        table = table[table["scenario"].isna()]  # a design to compare with is not this run's calls
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
        if "mode" in priced and priced["mode"].eq("batch").any() and priced["est_max_cost_sync_usd"].notna().all():
            sync = float(priced["est_max_cost_sync_usd"].sum())
            batched = int(priced.loc[priced["mode"] == "batch", "to_call"].sum())
            parts.append(f"{batched:,} of them through batch interfaces (${sync:,.2f} if all were synchronous: "
                         f"{1 - cost / sync:.0%} less)")
        if "est_cost_with_prompt_cache_usd" in priced and priced["est_cost_with_prompt_cache_usd"].notna().all():
            with_cache = float(priced["est_cost_with_prompt_cache_usd"].sum())
            reads = int(priced["est_cache_read_tokens"].sum())
            if reads:
                parts.append(f"about ${with_cache:,.2f} if the providers' prompt caches serve the estimated "
                             f"{reads:,} shared prompt tokens")
    local = todo[todo["cost_status"] == "local"]
    if len(local):
        parts.append(f"{int(local['to_call'].sum()):,} calls to local models (nothing to pay)")
    unpriced = todo[todo["cost_status"] == "unpriced"]
    if len(unpriced):
        models = sorted(set(unpriced["model"]))
        named = f"{len(models)} model{'' if len(models) == 1 else 's'}: {', '.join(models)}"
        parts.append(f"{int(unpriced['to_call'].sum()):,} calls ({named}) unpriced: cost unknown")
    return "; ".join(parts)


def scenario_summary(table: pd.DataFrame) -> str:
    """One line per compared design of a :func:`preview` table (``scenario``) and the run's own judging: calls to
    make and their upper-bound cost, e.g. "judging, fixed design: 40,000 calls, at most $1,266.00"."""
    if "scenario" not in table or table["scenario"].isna().all():
        return ""
    lines = []
    judging = table["stage"].str.startswith("judging ")
    for label, rows in [("this run (adaptive, worst case)", table[judging & table["scenario"].isna()]),
                        *((str(s), table[table["scenario"] == s]) for s in table["scenario"].dropna().unique())]:
        todo = rows[rows["to_call"] > 0]
        priced = todo[todo["cost_status"] == "priced"]
        cost = (f", at most ${float(priced['est_max_cost_usd'].sum()):,.2f}" if len(priced) == len(todo) and len(todo)
                else " (cost unknown: unpriced or local calls)" if len(todo) else "")
        lines.append(f"judging, {label}: {int(todo['to_call'].sum()):,} calls to make{cost}")
    return "\n".join(lines)
