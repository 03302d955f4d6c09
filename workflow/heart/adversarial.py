"""Adversarial emotional-resistance items (HEART paper §9.2).

A stratified subset of ESConv conversations is cut to a window that starts with
the supporter's greeting and ends with a seeker turn; an LLM rewrites only the
seeker turns to a hostility target (0-10) set per turn by one of four escalation
profiles, keeping the situation and the supporter's turns. A structural
validator checks each rewritten dialogue; a failing item is retried with a new
seed (a bounded number of times) and then dropped with its reason logged.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from heart import screening
from heart.llm import Request

PROFILES = ["Always-10", "Linear-Ramp", "Mid-Spike", "Mid-Ramp"]
HIGH = 8  # a seeker turn with target >= HIGH is "high-adversarial"
# text a model copies from the prompt instead of rewriting (template placeholders, instructions)
PLACEHOLDER = re.compile(r"<[^>]*>|\{[a-z]+\}|rewritten (?:seeker )?message|hostility \d+ out of 10",
                         re.IGNORECASE)
REWRITE_SCHEMA = {
    "type": "object",
    "properties": {"rewrite": {"type": "string", "minLength": 1}},
    "required": ["rewrite"],
    "additionalProperties": False,
}


def targets(profile: str, m: int, low: int = 2, high: int = 10) -> list[int]:
    """Hostility targets for ``m`` seeker turns under an escalation profile.

    Always-10: high throughout. Linear-Ramp: low to high evenly. Mid-Spike: low,
    then high from the middle turn on (sudden). Mid-Ramp: low for the first half,
    then a ramp that reaches high on the last turn (late onset). Every profile
    ends on ``high``.
    """
    if m < 1:
        raise ValueError("a profile needs at least one seeker turn")
    if profile == "Always-10" or m == 1:
        return [high] * m
    if profile == "Linear-Ramp":
        return [round(low + (high - low) * j / (m - 1)) for j in range(m)]
    half = m // 2
    if profile == "Mid-Spike":
        return [low if j < half else high for j in range(m)]
    if profile == "Mid-Ramp":
        ramp = m - half
        return [low] * half + [round(low + (high - low) * (j + 1) / ramp) for j in range(ramp)]
    raise ValueError(f"unknown escalation profile {profile!r} (known: {', '.join(PROFILES)})")


def windows(conversations: pd.DataFrame, turns: pd.DataFrame, max_turns: int,
            exclude_conversations=(), lexicon=None) -> pd.DataFrame:
    """Candidate windows: supporter greeting first, >= 4 turns, last turn a seeker turn
    followed in the data by a supporter reply; at most ``max_turns`` turns. Conversations
    with safety or clinical cues (per the screening lexicon) are left out."""
    labels = conversations.set_index("conversation_id")
    excluded = set(exclude_conversations)
    rows = []
    for cid, conv in turns.sort_values(["conversation_id", "turn_index"]).groupby("conversation_id"):
        if cid in excluded:
            continue
        roles, texts = conv["role"].tolist(), conv["text"].tolist()
        if roles[0] != "supporter":
            continue
        ends = [k for k in range(3, min(len(roles) - 1, max_turns)) if roles[k] == "seeker"]
        if not ends:
            continue
        k = ends[-1]
        if lexicon is not None and any(any(lexicon.exclusions(t)) for t in texts[: k + 2]):
            continue
        lab = labels.loc[cid]
        rows.append({
            "conversation_id": int(cid), "emotion_type": lab["emotion_type"],
            "problem_type": lab["problem_type"], "situation": lab["situation"],
            "stratum": f"{lab['emotion_type']} x {lab['problem_type']}",
            "history": [{"role": r, "text": t} for r, t in zip(roles[: k + 1], texts[: k + 1])],
            "original_reply": texts[k + 1],
            "original_strategies": list(conv["strategies"].tolist()[k + 1]),
            "seeker_turn_index": int(conv["turn_index"].tolist()[k]),
        })
    return pd.DataFrame(rows)


def choose(candidates: pd.DataFrame, n: int, seed: int, profiles=PROFILES) -> pd.DataFrame:
    """Stratified, seeded choice of ``n`` windows; profiles assigned in balanced rotation."""
    if n > len(candidates):
        raise ValueError(
            f"asked for {n} adversarial items but only {len(candidates)} conversations have a usable "
            "window (supporter greeting first, >= 4 turns, no safety or clinical cues, not used by a "
            "regular item); lower adversarial_items.n or raise adversarial_items.max_turns"
        )
    if n == 0:
        return candidates.iloc[0:0].assign(profile=pd.Series(dtype=str))
    alloc = screening.allocate(candidates["stratum"].value_counts().to_dict(), n, min_per_stratum=0)
    picked = []
    for stratum, k in sorted(alloc.items()):
        pool = candidates[candidates["stratum"] == stratum].sort_values("conversation_id")
        rng = np.random.default_rng(screening._stratum_seed(seed, stratum))
        picked.append(pool.iloc[np.sort(rng.choice(len(pool), size=k, replace=False))])
    chosen = pd.concat(picked).sort_values("conversation_id").reset_index(drop=True)
    order = np.random.default_rng(seed).permutation(len(chosen))
    chosen["profile"] = [profiles[i % len(profiles)] for i in np.argsort(order)]
    return chosen


def rewrite_requests(chosen: pd.DataFrame, model: str, prompt: str, version: str, attempt: int,
                     base_params: dict) -> list[Request]:
    """One request per seeker turn of every chosen window, for one attempt.

    Attempt 0 uses the model's configured (deterministic) params; a retry samples
    with temperature 0.8 and seed = attempt, so it can produce something new. Either
    way at least 200 tokens are allowed, so the JSON answer is not cut off.
    """
    # room for the JSON wrapper: a rewrite cut off at max_tokens does not parse
    room = {"max_tokens": max(int(base_params.get("max_tokens", 0)), 200)}
    params = room if attempt == 0 else {**base_params, **room, "temperature": 0.8, "seed": attempt}
    reqs = []
    for row in chosen.itertuples():
        seeker = [j for j, t in enumerate(row.history) if t["role"] == "seeker"]
        for j, level in zip(seeker, targets(row.profile, len(seeker))):
            text = prompt.format(situation=row.situation, message=row.history[j]["text"], hostility=level)
            reqs.append(Request(
                id=f"{row.conversation_id}:{j}", model=model,
                messages=({"role": "user", "content": text},),
                template_version=f"adversarial:{version}", schema=REWRITE_SCHEMA, params=params))
    return reqs


def validate(history: list[dict], levels: list[int], originals: list[str]) -> str:
    """Structural check of a rewritten dialogue; returns "" if valid, else the reason."""
    roles = [t["role"] for t in history]
    if len(history) < 4:
        return "fewer than four turns"
    if roles[0] != "supporter":
        return "does not start with a supporter greeting"
    if any(a == b for a, b in zip(roles, roles[1:])):
        return "speakers do not strictly alternate"
    if roles[-1] != "seeker" or not levels or levels[-1] < HIGH:
        return "does not end with a high-adversarial seeker turn"
    seeker = [t["text"] for t in history if t["role"] == "seeker"]
    if len({" ".join(s.lower().split()) for s in seeker}) < len(seeker):
        return "the same rewrite for different seeker turns"
    for new, old in zip(seeker, originals):
        if not new.strip():
            return "empty rewritten seeker turn"
        if PLACEHOLDER.search(new):
            return "rewrite echoes the prompt (placeholder or example text)"
        if " ".join(new.split()).lower() == " ".join(old.split()).lower():
            return "seeker turn left unchanged"
        if len(new) > 4 * max(len(old), 60):
            return "rewritten seeker turn far longer than the original"
    return ""


def assemble(chosen_row, results: dict) -> tuple[list[dict] | None, list[int], str]:
    """The rewritten history of one window from the rewrite results, and its validation."""
    history = [dict(t) for t in chosen_row.history]
    seeker = [j for j, t in enumerate(history) if t["role"] == "seeker"]
    levels = targets(chosen_row.profile, len(seeker))
    originals = [history[j]["text"] for j in seeker]
    for j in seeker:
        r = results[f"{chosen_row.conversation_id}:{j}"]
        if r.get("parsed") is None:
            return None, levels, f"unparseable rewrite ({r.get('parse_error')})"
        history[j]["text"] = " ".join(r["parsed"]["rewrite"].split())
    return history, levels, validate(history, levels, originals)


def item_rows(chosen_row, history) -> dict:
    """An adversarial item in the items table's shape."""
    return {
        "item_id": screening.item_id(history), "conversation_id": chosen_row.conversation_id,
        "subset": "adversarial", "profile": chosen_row.profile,
        "seeker_turn_index": chosen_row.seeker_turn_index, "history": history,
        "original_reply": chosen_row.original_reply, "original_strategies": chosen_row.original_strategies,
        "emotion_type": chosen_row.emotion_type, "problem_type": chosen_row.problem_type,
        "situation": chosen_row.situation, "response_potential": None,
        "distress": None, "conflict": None, "help_request": None, "n_strategy_families": None,
    }


def chosen_windows(conversations, turns, regular_items, settings: dict, lexicon=None) -> pd.DataFrame:
    """Windows outside the regular items' conversations, chosen per the ``adversarial_items`` settings."""
    cands = windows(conversations, turns, settings["max_turns"],
                    exclude_conversations=regular_items["conversation_id"], lexicon=lexicon)
    return choose(cands, settings["n"], settings["seed"], settings["profiles"])


def first_attempt_requests(conversations, turns, regular_items, settings: dict, prompt: str, version: str,
                           model: str, base_params: dict, lexicon=None) -> list[Request]:
    """The rewrite requests of the first attempt (what a cost preview counts)."""
    chosen = chosen_windows(conversations, turns, regular_items, settings, lexicon)
    return rewrite_requests(chosen, model, prompt, version, 0, base_params)


def build(conversations, turns, regular_items, run, settings: dict, prompt: str, version: str,
          model: str, base_params: dict, lexicon=None, log=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Choose windows, rewrite, validate, retry failures; return (items, attempts log).

    ``run(requests) -> results`` is the engine (heart.llm.run_requests bound to the specs
    and cache); ``settings`` is the ``adversarial_items`` config section.
    """
    pending = list(chosen_windows(conversations, turns, regular_items, settings, lexicon).itertuples())
    items, attempts = [], []
    for attempt in range(settings["max_attempts"]):
        if not pending:
            break
        results = run(rewrite_requests(pd.DataFrame(pending), model, prompt, version, attempt, base_params))
        retry = []
        for row in pending:
            history, levels, reason = assemble(row, results)
            attempts.append({"conversation_id": row.conversation_id, "profile": row.profile,
                             "attempt": attempt, "targets": levels, "valid": reason == "",
                             "reason": reason or "valid",
                             "neutralised_tokens": sum(r.get("neutralised_tokens", 0) for rid, r in results.items()
                                                       if rid.startswith(f"{row.conversation_id}:"))})
            if reason:
                retry.append(row)
                if log:
                    log.info("adversarial item from conversation %s (%s), attempt %d failed: %s",
                             row.conversation_id, row.profile, attempt, reason)
            else:
                items.append(item_rows(row, history))
        pending = retry
    for row in pending:
        if log:
            log.warning("dropped adversarial item from conversation %s (%s) after %d attempts",
                        row.conversation_id, row.profile, settings["max_attempts"])
    return pd.DataFrame(items), pd.DataFrame(attempts)
