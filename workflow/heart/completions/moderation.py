"""A provider's moderation endpoint as a screen of the completions (``safety.moderation``: a key of ``models``),
beside the offline lexicon of :mod:`heart.completions.safety`: every completion sent once through
``litellm.moderation``, the answer kept in the response cache (a rerun pays nothing), categories and scores as the
endpoint gives them. A failed call is a row of status ``failed`` with the (redacted) reason, never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import pandas as pd

from heart.common.redaction import Redactor
from heart.completions.safety import COLUMNS
from heart.llm import load_litellm
from heart.llm.cache import ResponseCache
from heart.llm.models import ModelSpec

CACHE_FORMAT = 1
#: litellm's field names -> the endpoint's category names
NAMES = {"harassment_threatening": "harassment/threatening", "hate_threatening": "hate/threatening",
         "illicit_violent": "illicit/violent", "self_harm": "self-harm",
         "self_harm_instructions": "self-harm/instructions", "self_harm_intent": "self-harm/intent",
         "sexual_minors": "sexual/minors", "violence_graphic": "violence/graphic"}


def cache_key(spec: ModelSpec, text: str) -> str:
    payload = {"format": CACHE_FORMAT, "endpoint": "moderations", "model": spec.model, "input": text}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def categories(result: dict) -> dict[str, tuple[float | None, bool | None]]:
    """One moderation result -> category -> (score, flagged), by the endpoint's names (litellm gives some twice,
    once under a field name, once as sent; a category the endpoint did not answer is left out)."""
    scores, flags = result.get("category_scores") or {}, result.get("categories") or {}
    out = {}
    for raw in sorted(set(scores) | set(flags)):
        score, flag = scores.get(raw), flags.get(raw)
        if score is None and flag is None:
            continue
        name = NAMES.get(raw, raw)
        old = out.get(name, (None, None))
        out[name] = (old[0] if score is None else float(score), old[1] if flag is None else bool(flag))
    return out


def _call(spec: ModelSpec, text: str) -> dict:
    litellm = load_litellm()  # only a job that calls the endpoint loads litellm
    import openai

    key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    if spec.api_base and not key:
        key = "no-key-needed"
    # litellm's moderation builds an OpenAI client that retries twice on its own and takes no timeout: give it
    # one that does neither (retried here, spec.max_retries times, and timed out at spec.timeout)
    client = openai.OpenAI(api_key=key, base_url=spec.api_base, max_retries=0, timeout=spec.timeout)
    answer = litellm.moderation(input=text, model=spec.model, client=client)
    return answer.model_dump() if hasattr(answer, "model_dump") else dict(answer)


def screen(completions: pd.DataFrame, spec: ModelSpec, cache: ResponseCache, redactor: Redactor | None = None,
           backoff: float = 1.0) -> pd.DataFrame:
    """One row per (completion, category the endpoint answered) (``COLUMNS``, screen ``moderation:<name>``),
    from the cache first; each distinct text is sent once."""
    redactor = redactor or Redactor.from_env([spec.api_key_env] if spec.api_key_env else [])
    answers: dict[str, dict | str] = {}
    for text in dict.fromkeys(t for t in completions["text"] if isinstance(t, str) and t.strip()):
        key = cache_key(spec, text)
        entry = cache.get(key)
        if entry is None:
            for attempt in range(spec.max_retries + 1):
                try:
                    entry = {"model": spec.model, "endpoint": "moderations",
                             "response": redactor.redact_obj(_call(spec, text))}
                    break
                except Exception as exc:  # noqa: BLE001 - any provider failure: retried, then reported
                    answers[text] = redactor.redact(str(exc))[:300]
                    time.sleep(backoff * 2 ** attempt)
            if entry is None:
                continue
            cache.put(key, entry)  # only an answer is stored: a failure is never a result
        answers[text] = entry
    rows = []
    for r in completions.itertuples():
        base = {"item_id": r.item_id, "system": r.system,
                "contributor_id": None if pd.isna(getattr(r, "contributor_id", None)) else r.contributor_id,
                "screen": f"moderation:{spec.name}", "screen_version": spec.model}
        text = r.text if isinstance(r.text, str) else ""
        got = answers.get(text)
        if not text.strip():
            rows.append({**base, "category": None, "status": "no_text"})
        elif not isinstance(got, dict):
            rows.append({**base, "category": None, "status": "failed", "evidence": got})
        else:
            result = (got["response"].get("results") or [{}])[0]
            rows += [{**base, "category": c, "status": "screened", "score": s, "flagged": f}
                     for c, (s, f) in categories(result).items()]
    return pd.DataFrame(rows, columns=COLUMNS)
