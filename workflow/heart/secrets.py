"""Keep API keys out of everything the workflow writes or prints.

A provider may echo the key it was sent ("Incorrect API key provided: sk-...") in an
error body, an error JSON or a header, whole or cut off. :class:`Redactor` blanks out
every run of :data:`MIN_RUN` or more consecutive characters of any secret, so a
truncated echo is caught as well as a whole one. It must run *before* anything
shortens a text (a cut could otherwise split a key into pieces too short to see).

The secrets are the values of the environment variables the config names as
``api_key_env`` plus every variable whose name says it holds a credential
(``*API_KEY*``, ``*_TOKEN``, ``*_SECRET``...): litellm reads e.g. ``OPENAI_API_KEY``
by itself when a model names no key variable.

:class:`RedactingStream` wraps a text stream (a rule's log, the terminal) and redacts
each line before it is written; :func:`redacted_logging` redacts every log record of
every library (the OpenAI SDK logs response headers at DEBUG level) when it is made,
before any handler sees it. This module imports nothing of the package.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import traceback

MIN_RUN = 8  # a run this long of a key's characters is redacted wherever it appears
MASK = "[REDACTED]"
_CREDENTIAL_NAME = re.compile(r"API_?KEY|_TOKEN$|^TOKEN$|SECRET|PASSWORD|_AUTH$", re.IGNORECASE)


def secret_names(extra=()) -> list[str]:
    """Environment variables whose values are treated as secrets: ``extra`` and every credential-named one."""
    names = {n for n in extra if n}
    names |= {n for n in os.environ if _CREDENTIAL_NAME.search(n)}
    return sorted(names)


class Redactor:
    """Replace every run of >= ``MIN_RUN`` consecutive characters of any secret by ``MASK``."""

    def __init__(self, secrets=()):
        self.secrets = sorted({s for s in secrets if s and len(s) >= MIN_RUN}, key=len, reverse=True)
        self._grams = {s[i:i + MIN_RUN] for s in self.secrets for i in range(len(s) - MIN_RUN + 1)}
        # a run of MIN_RUN (8) key characters always holds one of the key's 4-grams at offsets 0, 4, 8 ...
        # (the first such offset is at most 3 past the run's start), so a text holding none of them is clean
        self._probes = tuple({s[i:i + 4] for s in self.secrets for i in range(0, len(s) - 3, 4)})

    @classmethod
    def from_env(cls, extra_names=()) -> "Redactor":
        return cls(os.environ.get(n, "") for n in secret_names(extra_names))

    def __bool__(self) -> bool:
        return bool(self._grams)

    def redact(self, text):
        """``text`` with every key run masked (non-strings are returned as they are)."""
        if not self._grams or not isinstance(text, str) or len(text) < MIN_RUN:
            return text
        if not any(p in text for p in self._probes):
            return text
        grams, n = self._grams, MIN_RUN
        spans = []  # merged [start, end) of characters covered by some secret gram
        for i in range(len(text) - n + 1):
            if text[i:i + n] in grams:
                if spans and i <= spans[-1][1]:
                    spans[-1][1] = i + n
                else:
                    spans.append([i, i + n])
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(MASK)
            last = end
        out.append(text[last:])
        return "".join(out)

    def redact_obj(self, obj):
        """Redact every string inside nested dicts/lists/tuples (keys too)."""
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, dict):
            return {self.redact(k): self.redact_obj(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.redact_obj(v) for v in obj)
        return obj


class RedactingStream(io.TextIOBase):
    """A text stream that redacts whole lines before passing them on (a key never spans a newline)."""

    def __init__(self, target, redactor: Redactor):
        self.target, self.redactor, self._pending = target, redactor, ""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self._pending += s
        if "\n" in self._pending:
            done, _, self._pending = self._pending.rpartition("\n")
            self.target.write(self.redactor.redact(done + "\n"))
        return len(s)

    def flush(self) -> None:
        if self._pending:
            self.target.write(self.redactor.redact(self._pending))
            self._pending = ""
        self.target.flush()

    def fileno(self) -> int:
        return self.target.fileno()

    def isatty(self) -> bool:
        return self.target.isatty()


@contextlib.contextmanager
def redacted_logging(redactor: Redactor):
    """While the block runs, every log record is made with its message and traceback already redacted.

    A record factory (not a handler filter) so that it covers every handler, also ones added later
    (pytest's, a library's own). The exception text is formatted here, redacted, and stored as the
    record's ``exc_text``, which formatters print instead of formatting the exception again.
    """
    if not redactor:
        yield
        return
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        record = previous(*args, **kwargs)
        message = record.getMessage()
        clean = redactor.redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redactor.redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
        if record.stack_info:
            record.stack_info = redactor.redact(record.stack_info)
        return record

    logging.setLogRecordFactory(factory)
    try:
        yield
    finally:
        logging.setLogRecordFactory(previous)
