"""A request as it goes over the wire: its params and messages as sent, and the usage that comes back.

Shared by the synchronous calls (:mod:`heart.llm.engine`) and the batch interfaces (:mod:`heart.llm.batch`,
:mod:`heart.llm.batch_protocols`), so both send the same request and keep the same answer.
"""

from __future__ import annotations

from heart.llm.decoding import resolved_params
from heart.llm.models import ModelSpec
from heart.llm.request import Request, shared_prefix_end


class RetryableResponse(Exception):
    """A response that arrived but cannot be used (empty content): retried like a 5xx."""


def wire_params(spec: ModelSpec, req: Request, api_base: str | None) -> dict:
    """The params a request is sent with: :func:`resolved_params` and its response format."""
    kwargs = resolved_params(spec, req)
    if req.schema is not None:
        # OpenAI-compatible servers (llama.cpp, vLLM) take a schema inside json_object;
        # hosted APIs take the json_schema form
        if api_base or spec.local_gguf:
            kwargs["response_format"] = {"type": "json_object", "schema": req.schema}
        else:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "response", "schema": req.schema}}
    return kwargs


def wire_messages(spec: ModelSpec, req: Request) -> list:
    """The messages as sent: the request's, with the shared prefix marked where the provider needs a mark to
    cache it. Anthropic caches a prefix only up to a ``cache_control`` mark: the system turn (the judge's
    instructions and rubric, the tagger's taxonomy: the same in every call of a stage) is marked. OpenAI and
    Gemini cache a long enough shared prefix by themselves. The mark is not part of the cache key: it
    changes the price of a call, not its answer."""
    messages = list(req.messages)
    if spec.model.startswith("anthropic/"):
        messages = [anthropic_cache_marks(m) for m in messages]
    return messages


def anthropic_cache_marks(message: dict) -> dict:
    """A message with Anthropic's ``cache_control`` marks: a system turn marked whole; a user turn whose
    material opens with a shared part (:func:`heart.llm.request.shared_prefix_end`: the dialogue every pair
    of an item shares) split there into two text blocks, the first marked. The text is unchanged."""
    content, mark = message.get("content"), {"type": "ephemeral"}
    if not isinstance(content, str):
        return message
    if message["role"] == "system":
        return {**message, "content": [{"type": "text", "text": content, "cache_control": mark}]}
    end = shared_prefix_end(content) if message["role"] == "user" else None
    if end is None:
        return message
    return {**message, "content": [{"type": "text", "text": content[:end], "cache_control": mark},
                                   {"type": "text", "text": content[end:]}]}


def usage_of(usage) -> dict:
    """A provider's usage (an object or a dict) as the cache keeps it: prompt, completion and total tokens,
    and the prompt tokens read from the provider's prompt cache and written to it (None: not reported)."""
    get = (lambda o, k: o.get(k) if isinstance(o, dict) else getattr(o, k, None))  # noqa: E731
    out = {k: get(usage, k) if usage is not None else None
           for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    details = get(usage, "prompt_tokens_details") if usage is not None else None
    cached = get(details, "cached_tokens") if details is not None else None
    read = get(usage, "cache_read_input_tokens") if usage is not None else None
    write = get(usage, "cache_creation_input_tokens") if usage is not None else None
    out["cached_tokens"] = read if read is not None else cached
    out["cache_write_tokens"] = write
    return out


def by_batch(spec: ModelSpec, req: Request) -> bool:
    """Whether a request goes through its model's batch interface (:mod:`heart.llm.batch`): the model has
    one configured, and the request is not timed to its first token (completions stay synchronous)."""
    return bool(spec.batch) and not req.stream and not spec.local_gguf
