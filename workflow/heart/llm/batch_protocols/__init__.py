"""The providers' batch interfaces, one module a protocol, registered in :data:`PROTOCOLS` under the name a
model's config gives (``models.<name>.batch``), each an adapter for :mod:`heart.llm.batch`.

Every adapter answers in one vocabulary: a batch is ``{"id", "status", "request_counts": {"total",
"completed", "failed"}, ...}`` with OpenAI's statuses (validating, in_progress, completed, expired, failed,
cancelled), and its results are OpenAI-shaped ``chat.completion`` bodies per custom id (the request's cache
key), so the journal, the cache entries and the tables do not depend on the provider. An adapter class takes
the model's :class:`~heart.llm.models.ModelSpec` and provides

* ``submit(token, requests, wire) -> batch``: one batch of ``(custom id, Request)`` pairs, carrying the
  journal's token where the provider keeps something of the caller's;
* ``find(record, taken) -> batch | None``: the batch a journal record submitted before a kill;
* ``status(batch_id) -> batch`` and ``results(batch) -> (answered, failed)``.

Adding a protocol is one module here and one entry in :data:`PROTOCOLS`; what they share is
:mod:`.base`.
"""

from __future__ import annotations

from heart.llm.batch_protocols.anthropic import AnthropicBatches
from heart.llm.batch_protocols.gemini import GeminiBatches
from heart.llm.batch_protocols.openai import OpenAIBatches
from heart.llm.models import ModelSpec

#: protocol name (config ``models.<name>.batch``) -> its adapter class
PROTOCOLS: dict[str, type] = {
    "openai": OpenAIBatches,        # OpenAI's Batch API, through litellm
    "anthropic": AnthropicBatches,  # Anthropic's Message Batches, over httpx
    "gemini": GeminiBatches,        # the Gemini API's batch mode, over httpx
}


def adapter(spec: ModelSpec):
    """The batch interface of ``spec``'s provider (``spec.batch``)."""
    if spec.batch not in PROTOCOLS:
        raise ValueError(f"model {spec.name}: batch: {spec.batch!r} is not one of {tuple(PROTOCOLS)}")
    return PROTOCOLS[spec.batch](spec)


def config_problems(config: dict) -> list[str]:
    """A config's models whose ``batch`` names no registered protocol, as lines naming the key (a check for
    :func:`heart.common.config.validate_config`)."""
    return [f"models.{name}.batch: {entry['batch']!r} is not a batch protocol (protocols: {', '.join(PROTOCOLS)})"
            for name, entry in (config.get("models") or {}).items()
            if entry.get("batch") is not None and entry["batch"] not in PROTOCOLS]
