"""A configured model (config ``models.<name>``), where a local model's file is, and what a call costs."""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from heart.common.config import schema_defaults

#: config ``models.<name>``'s defaults: said once, in the schema
_D = schema_defaults("models.*")

#: how a model is called, not what it answers (config ``models.<name>``; and ``llm``: where the response cache
#: lives, how retries back off, how batches are polled and cut). A rule's params leave them out
#: (:func:`answering`) and its job takes them from the run's config (:func:`calling`): changing them reruns
#: nothing, since every answer so far is in the response cache and would be the same
CALLING = {"models": ("max_concurrency", "rpm", "tpm", "timeout", "max_retries", "api_key_env"),
           "llm": ("cache_dir", "backoff_s", "batch_poll_s", "batch_max_requests", "local_threads")}


def answering(entry: dict, section: str) -> dict:
    """Config entry ``entry`` of ``section`` (``"models"``: one model's; ``"llm"``) without how it is called."""
    return {k: v for k, v in entry.items() if k not in CALLING[section]}


def calling(config: dict, section: str, name: str | None = None) -> dict:
    """How the run's ``config`` says to call model ``name`` (``section`` ``"models"``) or what the engine does
    between calls (``"llm"``): the settings :func:`answering` leaves out of a rule's params."""
    entry = config[section] if name is None else config[section][name]
    return {k: entry[k] for k in CALLING[section] if k in entry}


def as_called(params: dict, config: dict) -> dict:
    """A rule's params of one model (:func:`answering`, with its ``name``) with how the run's ``config`` says to
    call it put back: what :meth:`ModelSpec.from_params` takes."""
    return {**params, **calling(config, "models", params["name"])}


@dataclass(frozen=True)
class ModelSpec:
    """A configured model (config ``models.<name>``; its defaults are the config schema's)."""

    name: str
    model: str  # litellm model string, e.g. "openai/gpt-4o" or "anthropic/claude-..."
    family: str = _D["family"]
    params: dict = field(default_factory=dict)  # temperature, top_p, max_tokens, seed ...
    api_base: str | None = _D["api_base"]
    api_key_env: str | None = _D["api_key_env"]  # name of the environment variable holding the key
    local_gguf: str | None = _D["local_gguf"]  # "package/file.gguf": serve this file on 127.0.0.1
    # the limits are the model's (one key's), whatever the number of jobs calling it: see share()
    max_concurrency: int = _D["max_concurrency"]
    rpm: int | None = _D["rpm"]  # requests per minute at most
    tpm: int | None = _D["tpm"]  # tokens per minute at most (estimated before, booked per call)
    timeout: float = _D["timeout"]
    max_retries: int = _D["max_retries"]
    stream: bool = _D["stream"]  # stream to measure time to first token; False is cheaper (no TTFT)
    reasoning: str = _D["reasoning"]  # completions (decoding): the "least" reasoning, or the provider's "default"
    # the provider's batch interface for this model's judge, tagger and rewrite calls (half price, answers
    # within hours; heart.llm.batch): a protocol of heart.llm.batch_protocols, or None. Completions stay
    # synchronous: they are timed to the first token.
    batch: str | None = _D["batch"]

    @classmethod
    def from_config(cls, name: str, cfg: dict) -> "ModelSpec":
        return cls(name=name, **cfg)

    def share(self, n: int) -> "ModelSpec":
        """This model as one of ``n`` jobs that call it at once (the shards of a stage) sees it: the limits
        (``max_concurrency``, ``rpm``, ``tpm``) are the model's, so each job keeps an n-th of them, rounded
        down and at least 1 -- n shards together never exceed the config's limits (unless a limit is below
        n, when each job still needs one)."""
        if n == 1:
            return self
        part = lambda limit: None if limit is None else max(1, limit // n)  # noqa: E731
        return dataclasses.replace(self, max_concurrency=part(self.max_concurrency), rpm=part(self.rpm),
                                   tpm=part(self.tpm))

    @classmethod
    def from_params(cls, params: dict) -> "ModelSpec":
        """From a rule's params: the config entry with its ``name`` key added."""
        cfg = dict(params)
        return cls.from_config(cfg.pop("name"), cfg)


def gguf_path(ref: str) -> Path:
    package, _, filename = ref.partition("/")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        raise RuntimeError(f"local model package {package!r} is not installed (pip install {package})")
    path = Path(spec.origin).parent / filename
    if not path.is_file():
        raise RuntimeError(f"local model file {filename!r} not found in package {package!r}")
    return path


_UNPRICED: set[str] = set()


def cost_usd(litellm, model: str, usage: dict) -> float | None:
    """USD cost from litellm's (local) price map; None for models it has no price for."""
    if model in _UNPRICED or usage["prompt_tokens"] is None:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"] or 0,
            cache_read_input_tokens=usage.get("cached_tokens") or 0,
            cache_creation_input_tokens=usage.get("cache_write_tokens") or 0)
        total = float(prompt + completion)
        if total == 0 and usage["prompt_tokens"]:
            raise ValueError("no price")  # litellm answers 0 for some models it has no price for
        return total
    except Exception:  # noqa: BLE001 - litellm raises several kinds for unknown models
        _UNPRICED.add(model)
        return None


#: price-map fields per (mode, kind of token): a field the map lacks leaves that mode unpriced
PRICE_FIELDS = {
    "sync": {"input": "input_cost_per_token", "output": "output_cost_per_token",
             "cache_read": "cache_read_input_token_cost", "cache_write": "cache_creation_input_token_cost"},
    "batch": {"input": "input_cost_per_token_batches", "output": "output_cost_per_token_batches",
              "cache_read": "cache_read_input_token_cost_batches",
              "cache_write": "cache_creation_input_token_cost_batches"},
}


def model_info(litellm, model: str) -> dict:
    """litellm's price-map entry of ``model`` ({} for a model the map does not know)."""
    try:
        return litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises several kinds for unknown models
        return {}


def prices(litellm, model: str, mode: str = "sync") -> dict | None:
    """Per-token prices of ``model`` in ``mode`` ("sync" or "batch") from litellm's local price map:
    input, output, and (None where the map has none) cache_read and cache_write; None when the map has no
    input or output price for the mode (a model it does not know, or no batch price)."""
    info = model_info(litellm, model)
    fields = PRICE_FIELDS[mode]
    got = {kind: info.get(name) for kind, name in fields.items()}
    if got["input"] is None or got["output"] is None or not (got["input"] or got["output"]):
        return None
    return got


def priced(table: dict | None, prompt_tokens: int, completion_tokens: int, cache_read: int = 0,
           cache_write: int = 0) -> float | None:
    """USD for a call's tokens at ``table`` (:func:`prices`; None without one). Cached reads and cache writes
    are at their own prices where the map has them, else at the input price: an upper bound, never a
    discount the map does not state (o3's batch mode has no cached-read price, so none is taken)."""
    if table is None:
        return None
    read = table["cache_read"] if table["cache_read"] is not None else table["input"]
    write = table["cache_write"] if table["cache_write"] is not None else table["input"]
    fresh = max(0, prompt_tokens - cache_read - cache_write)
    return float(fresh * table["input"] + cache_read * read + cache_write * write
                 + completion_tokens * table["output"])
