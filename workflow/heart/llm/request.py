"""One call as a stage builds it: its messages (material as JSON, chat tokens neutralised) and its prompt.

Every LLM stage (completions, adversarial rewriting, judging, tagging) builds a list of :class:`Request`
and hands it to :func:`heart.llm.engine.run_requests`. :func:`prepare` breaks every chat-template control
token in a request's material (:mod:`heart.llm.chat_tokens`) before its cache key is computed, so no text
from a dataset or a model can open, close or add a turn.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from heart.llm.chat_tokens import Neutraliser, gguf_special_tokens
from heart.llm.models import ModelSpec, gguf_path


#: how a dialogue role is named in every prompt that shows a dialogue (judge, rewriter)
SPEAKER = {"seeker": "Seeker", "supporter": "Supporter"}


def json_messages(instructions: str, material: dict, indent: int | None = None) -> tuple:
    """The two turns of every structured stage: the instructions (a prompt file) as the system turn, then
    all the material -- dataset and model text -- as one JSON object in the user turn.

    JSON keeps every text inside its own string, so a newline, a quote or a speaker label inside a text
    starts nothing; :func:`prepare` then breaks chat-template control tokens, so no text can open, close
    or add a turn. (``indent`` is part of each stage's request, so of its cache keys: keep it per stage.)
    """
    text = json.dumps(material, ensure_ascii=False) if indent is None else indented_json(material, indent)
    return ({"role": "system", "content": instructions}, {"role": "user", "content": text})


#: json's own string encoder (C) with ensure_ascii=False: a str as json.dumps writes it
_quoted = json.encoder.encode_basestring


class Encoded(str):
    """A value :func:`indented_json` has already written at the depth it is placed at: written as it is (a
    dialogue that several pairs show is encoded once, :func:`heart.judging.material.shown`)."""


def indented_json(value, indent: int, depth: int = 0) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=indent)``, the same text: json's indented encoder runs in
    Python (a judging stage's ~85,000 prompts spent half a minute in it); here only the containers are walked in
    Python and every string and number is encoded by json's C encoder. An :class:`Encoded` value is taken as
    written."""
    if type(value) is str:
        return _quoted(value)
    if type(value) is Encoded:
        return str(value)
    if isinstance(value, dict) and value and all(type(k) is str for k in value):
        pad = "\n" + " " * (indent * (depth + 1))
        body = ("," + pad).join(f"{_quoted(k)}: {indented_json(v, indent, depth + 1)}"
                                for k, v in value.items())
        return "{" + pad + body + "\n" + " " * (indent * depth) + "}"
    if isinstance(value, (list, tuple)) and value:
        pad = "\n" + " " * (indent * (depth + 1))
        body = ("," + pad).join(indented_json(v, indent, depth + 1) for v in value)
        return "[" + pad + body + "\n" + " " * (indent * depth) + "]"
    if isinstance(value, (dict, list, tuple)) and value:  # a dict with keys json would convert: json's own
        return json.dumps(value, ensure_ascii=False, indent=indent).replace("\n", "\n" + " " * (indent * depth))
    return json.dumps(value, ensure_ascii=False)


#: where a structured stage's material stops being shared between calls: the judge's material opens with
#: the dialogue, which every pair of an item shares, and goes on with the replies, which differ. A provider
#: that caches only up to a mark (Anthropic) gets a second mark before the first of these in a user turn
#: (:func:`heart.llm.wire.wire_messages`); the call preview counts the shared prefix up to it too.
SHARED_PREFIX_ENDS = ('\n "response_A"',)


def shared_prefix_end(content: str) -> int | None:
    """The index in a user turn's ``content`` where its shared prefix ends (None: no known boundary)."""
    found = [i for marker in SHARED_PREFIX_ENDS if (i := content.find(marker)) > 0]
    return min(found) if found else None


@dataclass(frozen=True)
class Request:
    """One call: ``id`` is the caller's handle (item x system, pair x order, ...)."""

    id: str
    model: str  # a ModelSpec name
    messages: tuple  # tuple of {"role", "content"} dicts (hashable order)
    template_version: str
    schema: dict | None = None
    params: dict | None = None  # overrides of the model's decoding params for this request (None: drop one)
    paper_decoding: bool = False  # start from decoding(spec).params (completions) instead of spec.params
    # streamed (when the model's spec streams): only where the time to first token is wanted (completions);
    # litellm spends ~13 ms of client CPU per streamed call against ~5 ms unstreamed, so at paper scale
    # streaming every judge call would make the client, not the provider, the bottleneck
    stream: bool = False


def neutraliser_for(spec: ModelSpec) -> Neutraliser:
    """The chat-token neutraliser for a model: the common templates' tokens, plus a local GGUF's own specials."""
    return Neutraliser(gguf_special_tokens(str(gguf_path(spec.local_gguf))) if spec.local_gguf else ())


def _neutralised(value, neutralise: Neutraliser) -> tuple[object, int]:
    """``value`` (a string, or lists/dicts of them: content parts) with special tokens broken; how many."""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, (list, tuple)):
        done = [_neutralised(v, neutralise) for v in value]
        return type(value)(v for v, _ in done), sum(n for _, n in done)
    if isinstance(value, dict):
        done = {k: _neutralised(v, neutralise) for k, v in value.items()}
        return {k: v for k, (v, _) in done.items()}, sum(n for _, n in done.values())
    return value, 0


def prepare(req: Request, neutralise: Neutraliser) -> tuple[Request, int]:
    """The request as it is sent and cached: special tokens broken in every field of every message but
    its role (content, content parts, a ``name`` a template may render); and how many were."""
    messages, total = [], 0
    for m in req.messages:
        if m.keys() == {"role", "content"} and isinstance(m["content"], str):  # what the workflow builds
            content, n = neutralise(m["content"])
            clean = {"content": content}
        else:
            clean, n = _neutralised({k: v for k, v in m.items() if k != "role"}, neutralise)
        messages.append({**m, **clean})
        total += n
    return (dataclasses.replace(req, messages=tuple(messages)), total) if total else (req, 0)


def prepare_all(specs: dict[str, ModelSpec], requests: list[Request]) -> tuple[list[Request], dict[str, int]]:
    """:func:`prepare` for a batch: the prepared requests and, per request id, the tokens neutralised."""
    neutralisers = {name: neutraliser_for(specs[name]) for name in {r.model for r in requests}}
    prepared = [prepare(r, neutralisers[r.model]) for r in requests]
    return [r for r, _ in prepared], {r.id: n for r, n in prepared}


def template(path) -> tuple[str, str]:
    """A prompt template's text and version (sha256 of the file's bytes, 12 hex digits)."""
    raw = Path(path).read_bytes()
    return raw.decode("utf-8").strip(), hashlib.sha256(raw).hexdigest()[:12]
