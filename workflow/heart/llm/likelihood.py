"""The log-likelihood of a given text under a local model: computed in-process, cached like every answer.

A chat-completions call returns the log-probabilities of the tokens a model *writes*; a judge that reads
content (:mod:`heart.judging.kinds.content`) needs those of a text it did not write. The local GGUF model
(``local_gguf``) is therefore loaded in-process with llama.cpp (llama-cpp-python) and the text evaluated
after its context, as :class:`LocalScorer` does.

A likelihood request is an ordinary :class:`~heart.llm.request.Request` whose **last message is the text
scored**: the messages are written out with the model's own chat template (the GGUF's
``tokenizer.chat_template``, as llama.cpp's server applies it), and the scored tokens are the last message's
content followed by the end of its turn (ChatML: ``<|im_end|>``); everything before it is the context. The
content and the turn's end are tokenized apart, so a text is the same tokens after any context.

As for every other stage, :func:`run`

* neutralises every message first (:func:`heart.llm.request.prepare`: no dataset or model text can open,
  close or add a turn), and keys the request by :func:`heart.llm.cache.cache_key` of the neutralised
  request -- the key the call preview computes, so it counts these requests and their cache hits too;
* answers from the :class:`~heart.llm.cache.ResponseCache` (and a replayed export) first, loads the model only
  when something is left to compute, and stores each success at once, shaped like the engine's entries
  (``text``: a JSON summary; ``logprobs``: the scored tokens with their log-probabilities), so an export
  replays it without the model;
* evaluates the requests sorted by their messages, keeping the evaluated tokens in llama.cpp's KV cache:
  the replies of one item share the item's dialogue, which is evaluated once (only the last context token is
  evaluated again, for the logits that score the reply's first token).
"""

from __future__ import annotations

import json
import logging
import sys
import time

import numpy as np

from heart.llm.cache import ResponseCache, cache_key
from heart.llm.models import ModelSpec, gguf_path
from heart.llm.request import Request, prepare_all

LIKELIHOOD_FORMAT = 1  # bump when what a likelihood entry holds, or how it is computed, changes
_SENTINEL = "\u0000scored\u0000"  # stands for the scored text when the chat template is rendered


class LocalScorer:
    """A local GGUF model in-process: per-token log-probabilities of a chat turn after its context.

    Parameters
    ----------
    spec : ModelSpec
        The model; its ``local_gguf`` is loaded.
    n_ctx : int
        The context window (context and scored text together; longer raises a ValueError).
    vocab_only : bool
        Load the vocabulary only: formatting and tokenizing (:meth:`tokens`) work, scoring does not.
    threads : int
        CPU threads of the model (the job's: Snakemake's ``threads``).
    """

    n_batch = 512

    def __init__(self, spec: ModelSpec, n_ctx: int = 4096, vocab_only: bool = False, threads: int = 1):
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        if not spec.local_gguf:
            raise ValueError(f"model {spec.name} ({spec.model}): a text's likelihood is computed in-process, "
                             "which needs a local GGUF model (models.<name>.local_gguf)")
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
        self._lib = llama_cpp
        self.llm = llama_cpp.Llama(str(gguf_path(spec.local_gguf)), n_ctx=n_ctx, n_batch=self.n_batch,
                                   n_threads=threads, n_threads_batch=threads,  # reading a prompt too
                                   logits_all=False, vocab_only=vocab_only, verbose=False)
        meta = self.llm.metadata
        if not meta.get("tokenizer.chat_template"):
            raise ValueError(f"{spec.local_gguf}: the GGUF has no chat template (tokenizer.chat_template)")
        piece = lambda key: self.llm.detokenize([int(meta[key])], special=True).decode()  # noqa: E731
        self.format = Jinja2ChatFormatter(template=meta["tokenizer.chat_template"], add_generation_prompt=False,
                                          eos_token=piece("tokenizer.ggml.eos_token_id"),
                                          bos_token=piece("tokenizer.ggml.bos_token_id"))
        self.n_ctx, self.vocab_only = n_ctx, vocab_only
        self.evaluations = 0  # tokens sent through the model (a test counts them)
        self._past: list[int] = []  # the tokens in the KV cache, in order
        self._batch = None

    def split(self, messages) -> tuple[str, str, str]:
        """(context, scored text, end of its turn) of ``messages`` in the model's chat template."""
        *before, last = messages
        rendered = self.format(messages=[*before, {**last, "content": _SENTINEL}]).prompt
        context, found, after = rendered.partition(_SENTINEL)
        if not found:
            raise ValueError("the chat template does not show the last message's content")
        # the turn's end: what the template closes the turn with, up to the whitespace before the next turn
        return context, last["content"], after.rstrip()

    def tokens(self, messages) -> tuple[list[int], list[int]]:
        """(context tokens, scored tokens): the context with the model's BOS if it adds one, special tokens
        parsed as the server parses them; the scored text and its turn's end tokenized apart."""
        context, text, end = self.split(messages)
        tok = lambda s, bos=False: self.llm.tokenize(s.encode(), add_bos=bos, special=True) if s else []  # noqa: E731
        return tok(context, bos=True), tok(text) + tok(end)

    def piece(self, token: int) -> str:
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    def score(self, messages) -> dict:
        """The scored tokens of ``messages`` (:meth:`tokens`) with their log-probabilities after the context:
        ``{"tokens": [...], "logprobs": [...], "context_tokens": n}``."""
        if self.vocab_only:
            raise RuntimeError("a vocab-only scorer cannot score")
        context, scored = self.tokens(messages)
        if not context or not scored:
            raise ValueError("nothing to score: an empty context or text")
        full = context + scored
        if len(full) > self.n_ctx:
            raise ValueError(f"{len(full)} tokens (context and text) exceed the context window of {self.n_ctx}")
        common = next((k for k, (a, b) in enumerate(zip(self._past, full)) if a != b), min(len(self._past), len(full)))
        start = min(common, len(context) - 1)  # the last context token again: its logits score the first token
        rows = self._decode(full, start, want=range(len(context) - 1, len(full) - 1))
        logprobs = []
        for pos, token in zip(range(len(context) - 1, len(full) - 1), scored):
            row = rows[pos].astype(np.float64)
            top = row.max()
            logprobs.append(float(row[token] - top - np.log(np.exp(row - top).sum())))
        return {"tokens": scored, "logprobs": logprobs, "context_tokens": len(context)}

    def _decode(self, full: list[int], start: int, want: range) -> dict[int, np.ndarray]:
        """Evaluate ``full[start:]`` after the KV cache's first ``start`` tokens; the logits of the positions
        in ``want``, by position."""
        lib, ctx = self._lib, self.llm.ctx
        if self._batch is None:
            self._batch = lib.llama_batch_init(self.n_batch, 0, 1)
        lib.llama_memory_seq_rm(lib.llama_get_memory(ctx), 0, start, -1)
        self._past = self._past[:start]
        n_vocab, rows, batch = self.llm.n_vocab(), {}, self._batch
        for first in range(start, len(full), self.n_batch):
            chunk = full[first:first + self.n_batch]
            batch.n_tokens = len(chunk)
            for i, token in enumerate(chunk):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, first + i, 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = (first + i) in want
            if (code := lib.llama_decode(ctx, batch)) != 0:
                raise RuntimeError(f"llama_decode returned {code}")
            self.evaluations += len(chunk)
            self._past += chunk
            for i in range(len(chunk)):
                if (first + i) in want:
                    rows[first + i] = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx, i), shape=(n_vocab,)).copy()
        return rows

    def close(self) -> None:
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        self.llm.close()


def entry_of(spec: ModelSpec, req: Request, scored: dict, pieces: list[str], latency: float) -> dict:
    """A likelihood as a cache entry, shaped like the engine's: ``text`` the JSON summary (sum of the
    log-probabilities and the number of tokens), ``logprobs`` one ``{"token", "logprob", "top": []}`` per
    scored token."""
    total = float(sum(scored["logprobs"]))
    n = len(scored["tokens"]) + scored["context_tokens"]
    return {"model": spec.model, "text": json.dumps({"logprob": total, "tokens": len(scored["tokens"])}),
            "parsed": None, "parse_error": None,
            "usage": {"prompt_tokens": n, "completion_tokens": 0, "total_tokens": n}, "cost": None,
            "ttft_s": None, "latency_s": latency, "created": time.time(), "template_version": req.template_version,
            "format": LIKELIHOOD_FORMAT,
            "logprobs": [{"token": p, "logprob": lp, "top": []} for p, lp in zip(pieces, scored["logprobs"])]}


def request(rid: str, model: str, messages, version: str) -> Request:
    """A likelihood request: ``messages`` (the last one scored) under the caller's ``version``. Its cache key
    covers the model's params too, as every request's does, though they play no part in a likelihood."""
    return Request(id=rid, model=model, messages=tuple(messages),
                   template_version=f"likelihood{LIKELIHOOD_FORMAT}:{version}")


def run(specs: dict[str, ModelSpec], requests: list[Request], cache: ResponseCache, desc: str = "likelihoods",
        scorer=LocalScorer) -> dict[str, dict]:
    """Every request's likelihood, from the cache or computed (module docstring).

    Parameters
    ----------
    specs : dict
        Model name -> spec; a model with something to compute needs ``local_gguf``.
    requests : list of Request
        Made by :func:`request`; ids unique.
    cache : ResponseCache
    desc : str
        The progress bar's label (tqdm, to the terminal).
    scorer : callable
        ``scorer(spec)`` -> an object with ``score(messages)``, ``piece(token)`` and ``close()``
        (:class:`LocalScorer`; a test passes a counting stand-in).

    Returns
    -------
    dict
        Request id -> its cache entry plus ``cache_key``, ``from_cache`` and ``neutralised_tokens``.

    Raises
    ------
    ValueError
        A request names an unconfigured model, its model has no local GGUF, or its text does not fit.
    """
    from tqdm import tqdm

    ids = [r.id for r in requests]
    if len(set(ids)) != len(ids):
        raise ValueError("request ids must be unique")
    if unknown := {r.model for r in requests} - set(specs):
        raise ValueError(f"requests name unconfigured models: {sorted(unknown)}")
    prepared, neutralised = prepare_all(specs, requests)
    keys = {r.id: cache_key(specs[r.model], r) for r in prepared}
    results, todo = {}, {}
    for r in prepared:
        if (hit := cache.get(keys[r.id])) is not None:
            results[r.id] = {**hit, "cache_key": keys[r.id], "from_cache": True}
        else:
            todo.setdefault(keys[r.id], r)  # the same text after the same context: computed once
    # by context, then text: the texts after one context follow each other, and it is evaluated once
    order = sorted(todo.values(), key=lambda r: (r.model, json.dumps(r.messages[:-1], ensure_ascii=False),
                                                 json.dumps(r.messages[-1], ensure_ascii=False)))
    done: dict[str, dict] = {}
    scorers = {}
    try:
        with tqdm(total=len(order), desc=desc, unit="text", file=sys.__stderr__, mininterval=1.0) as bar:
            bar.set_postfix({"cached": len(results)}, refresh=False)
            for r in order:
                spec = specs[r.model]
                if r.model not in scorers:
                    scorers[r.model] = scorer(spec)
                s, start = scorers[r.model], time.monotonic()
                try:
                    scored = s.score(r.messages)
                except ValueError as exc:
                    raise ValueError(f"{desc}: request {r.id} ({r.model}): {exc}") from None
                entry = entry_of(spec, r, scored, [s.piece(t) for t in scored["tokens"]], time.monotonic() - start)
                cache.put(keys[r.id], entry)
                done[keys[r.id]] = entry
                bar.update(1)
    finally:
        for s in scorers.values():
            s.close()
    for r in prepared:
        if r.id not in results:
            first = todo[keys[r.id]].id == r.id
            results[r.id] = {**done[keys[r.id]], "cache_key": keys[r.id], "from_cache": not first}
        results[r.id]["neutralised_tokens"] = neutralised[r.id]
    logging.getLogger("heart.llm").info("%s: %d texts, %d from cache, %d computed", desc, len(requests),
                                        len(requests) - len(order), len(order))
    return results
