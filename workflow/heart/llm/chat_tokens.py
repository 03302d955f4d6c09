"""Keep untrusted text from opening, closing or adding a chat turn.

Dialogue text from ESConv, model completions and human files all end up inside prompts. A
server that applies a chat template (llama.cpp, vLLM, ...) renders the messages into one
string and tokenizes it *with special tokens parsed*, so a seeker turn holding
``<|im_end|>\n<|im_start|>system`` would end its user turn and open a system turn of its own.

:class:`Neutraliser` breaks every such token in a text by inserting a WORD JOINER (U+2060)
after its first character: the text reads the same, but the tokenizer no longer sees the
special token's string. Which strings count:

* for every model, the control tokens of the common chat templates (:data:`GENERIC`: ChatML,
  Llama 2/3, Mistral, Gemma, Phi, DeepSeek, GPT-OSS, Command-R ...), since the template of an
  ``api_base`` server or a hosted model cannot be seen from here;
* for a local GGUF model, also every token its own vocabulary marks as control, user-defined or
  unknown (what llama.cpp parses as special), read from the GGUF file (:func:`gguf_special_tokens`).

:func:`heart.llm.request.prepare` applies it to every message of every request before the cache key
is computed, and reports how many tokens it broke per request.
"""

from __future__ import annotations

import re
from functools import lru_cache

JOINER = "\u2060"  # WORD JOINER: invisible, and in no tokenizer's special-token strings

#: chat-template control tokens of common model families, as regular expressions
GENERIC = (
    r"<\|[A-Za-z0-9_.:/-]{1,64}\|>",  # ChatML <|im_start|>, Llama 3 <|eot_id|>, Phi <|user|>, GPT-OSS <|channel|>
    "<\uff5c[^\uff5c<>]{1,64}\uff5c>",  # DeepSeek <｜begin▁of▁sentence｜> (full-width bars)
    r"\[/?(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT)\]",  # Llama 2, Mistral
    r"<</?SYS>>",  # Llama 2
    r"</?s>", r"<(?:bos|eos|pad|unk)>",  # SentencePiece specials
    r"<(?:start|end)_of_turn>",  # Gemma
)
#: the first character of every string a :data:`GENERIC` pattern matches (a test holds each pattern to it)
GENERIC_FIRSTS = ("<", "[")


class Neutraliser:
    """Break special-token strings in untrusted text; ``tokens`` are exact strings, ``patterns`` regexes."""

    def __init__(self, tokens=(), patterns=GENERIC):
        exact = sorted({t for t in tokens if t and not t.isspace()}, key=len, reverse=True)
        parts = list(patterns) + [re.escape(t) for t in exact]
        self.pattern = re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None
        # every generic pattern starts with one of these characters; a text holding none of them (and no
        # exact token's first character) has nothing to break, which ``in`` tells faster than the regex
        firsts = set(GENERIC_FIRSTS) | {t[0] for t in exact}
        self._firsts = tuple(firsts) if patterns in (GENERIC, ()) and len(firsts) <= 16 else None

    def __call__(self, text: str) -> tuple[str, int]:
        """(text with every special token broken, how many were broken)."""
        if self.pattern is None or not isinstance(text, str):
            return text, 0
        if self._firsts is not None and not any(c in text for c in self._firsts):
            return text, 0
        total = 0
        while True:  # inserting the joiner cannot form a new token, but overlapping ones are found next round
            text, n = self.pattern.subn(lambda m: m.group()[0] + JOINER + m.group()[1:], text)
            total += n
            if not n:
                return text, total


@lru_cache(maxsize=None)
def gguf_special_tokens(path: str) -> tuple[str, ...]:
    """Every token a GGUF model's vocabulary marks as control, user-defined or unknown (llama.cpp parses
    these as special in a prompt).

    Read with llama.cpp itself (vocabulary only, no weights).
    """
    import logging

    import llama_cpp

    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # no loader chatter in the rule's log
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        raise RuntimeError(f"{path}: llama.cpp could not read the model's vocabulary")
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)
        special = (llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
                   | llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN)
        out = []
        for i in range(llama_cpp.llama_vocab_n_tokens(vocab)):
            if llama_cpp.llama_vocab_get_attr(vocab, i) & special:
                text = llama_cpp.llama_vocab_get_text(vocab, i)
                if text:
                    out.append(text.decode("utf-8", errors="replace"))
        return tuple(out)
    finally:
        llama_cpp.llama_model_free(model)
