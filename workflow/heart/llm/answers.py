"""Reading an answer: a structured one against its JSON schema, and per-token log-probabilities."""

from __future__ import annotations

import json

import jsonschema

from heart.common.redaction import Redactor


def token_logprobs(raw) -> list[dict] | None:
    """An answer's ``choices[0].logprobs`` (OpenAI format, as litellm returns it) as plain data:
    per generated token ``{"token", "logprob", "top": [[token, logprob], ...]}`` (None: none sent)."""
    if raw is None:
        return None
    if hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    content = (raw or {}).get("content") or []
    return [{"token": t.get("token"), "logprob": t.get("logprob"),
             "top": [[c.get("token"), c.get("logprob")] for c in (t.get("top_logprobs") or [])]}
            for t in content]


_VALIDATORS: dict[str, object] = {}


def _validator(schema: dict):
    """A checked validator for ``schema``, made once (``jsonschema.validate`` checks the schema against its
    meta-schema on every call: ~2.4 ms, a third of the client's CPU per judge call)."""
    memo = json.dumps(schema, sort_keys=True)
    if memo not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[memo] = cls(schema)
    return _VALIDATORS[memo]


def parse_structured(text: str, schema: dict | None, redactor: Redactor | None = None
                     ) -> tuple[object, str | None]:
    """(parsed, None) when ``text`` is JSON valid against ``schema``; (None, why) when not; (None, None) without one.

    Control characters inside strings are accepted (``strict=False``): llama.cpp's JSON grammar lets a raw
    newline through, and it carries no meaning a judge could hide. Nothing else is repaired. With a
    ``redactor``, key runs are masked in the decoded value (JSON escapes can hide them from the raw text)
    and in the error message, before it is shortened.
    """
    if schema is None:
        return None, None
    redact = redactor or Redactor()
    try:
        parsed = redact.redact_obj(json.loads(text, strict=False))
        error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(parsed))  # what validate() raises
        if error is not None:
            raise error
    except (json.JSONDecodeError, jsonschema.ValidationError, RecursionError) as exc:
        return None, f"{type(exc).__name__}: {redact.redact(str(exc)).splitlines()[0][:200]}"
    return parsed, None
