r"""Keep API keys out of everything the workflow writes or prints.

A provider may echo the key it was sent ("Incorrect API key provided: sk-...") in an
error body, an error JSON or a header, whole or cut off. :class:`Redactor` blanks out
every run of :data:`MIN_RUN` or more consecutive characters of any secret, so a
truncated echo is caught as well as a whole one. It must run *before* anything
shortens a text (a cut could otherwise split a key into pieces too short to see).

The secrets are the values of the environment variables the config names as
``api_key_env`` plus every variable whose name says it holds a credential
(``*API_KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*CREDENTIALS*``, ``*_JWT``, ``*_PAT``...): litellm
reads e.g. ``OPENAI_API_KEY`` or ``AWS_BEARER_TOKEN_BEDROCK`` by itself when a model names no key
variable.

A key can also come back JSON-escaped (``sk-ab\/cd...``, ``\u0073k-...``) inside an answer that
is later decoded: :meth:`Redactor.redact_json` masks the decoded form too.

:class:`RedactingStream` wraps a text stream (a rule's log, the terminal) and redacts
each line before it is written (a partial line waits for its end, so a key written in
pieces is still seen whole); :func:`redacted_logging` redacts every log record of
every library (the OpenAI SDK logs response headers at DEBUG level) when it is made,
before any handler sees it. This module imports nothing of the package.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import traceback

MIN_RUN = 8  # a run this long of a key's characters is redacted wherever it appears
MASK = "[REDACTED]"
_CREDENTIAL_NAME = re.compile(
    r"API_?KEY|APIKEY|TOKEN|SECRET|PASSW(?:OR)?D|CREDENTIAL|PRIVATE_?KEY|ACCESS_?KEY|(?:^|_)AUTH(?:_|$)|JWT"
    r"|(?:^|_)PAT$|_KEY$", re.IGNORECASE)


#: credential-like names that hold where a secret is, not the secret (a path, a URL, a socket), and
#: litellm's own TIKTOKEN_CACHE_DIR: masking their values would mask ordinary words and paths
_NOT_A_SECRET = re.compile(r"_(?:FILE|PATH|DIR|SOCK|URL|URI|ENDPOINT|HOST|PORT)$|^TIKTOKEN_", re.IGNORECASE)


def secret_names(extra=()) -> list[str]:
    """Environment variables whose values are treated as secrets: ``extra`` (named by the config: always)
    and every credential-named one whose value is not a path that exists (``GOOGLE_APPLICATION_CREDENTIALS``
    names a file; its words must not be masked in every answer and traceback)."""
    names = {n for n in extra if n}
    for name, value in os.environ.items():
        if _CREDENTIAL_NAME.search(name) and not _NOT_A_SECRET.search(name) and not _is_path(value):
            names.add(name)
    return sorted(names)


def _is_path(value: str) -> bool:
    return value.startswith(("/", "~", "./")) and os.path.exists(os.path.expanduser(value))


_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))", re.DOTALL)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _unescaped(text: str) -> str:
    """``text`` with JSON string escapes undone wherever they stand (a reader's view of hidden characters)."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else _SIMPLE.get(m.group(2), m.group(2)),
                       text)


#: lowercase letters from the most to the least common in English prose
_PROSE = "etaoinshrdlcumwfgypbvkjxqz"
PROBE = 4  # characters per probe


def _probes(secret: str) -> set[str]:
    """4-grams of ``secret`` such that every run of MIN_RUN of its characters holds one whole: for a run
    starting at p, one starting in [p, p + MIN_RUN - PROBE]. Each is chosen, within its window, to start
    with the character rarest in prose (a digit or sign, then a capital, then a rare letter), so that the
    regular expression of all probes, which first checks a character's membership in the set of probe
    starts, passes over most positions of an ordinary answer at once (4x faster than aligned 4-grams)."""
    def commonness(i):
        c = secret[i]
        return (2, len(_PROSE) - _PROSE.index(c)) if c in _PROSE else (1 if c.isupper() else 0, 0)

    out, start = set(), 0
    while start <= len(secret) - MIN_RUN:
        q = min(range(start, start + MIN_RUN - PROBE + 1), key=lambda i: (commonness(i), -i))
        out.add(secret[q:q + PROBE])
        start = q + 1  # every run starting in [q - (MIN_RUN - PROBE), q] holds this one
    return out


class Redactor:
    """Replace every run of >= ``MIN_RUN`` consecutive characters of any secret by ``MASK``."""

    def __init__(self, secrets=()):
        self.secrets = sorted({s for s in secrets if s and len(s) >= MIN_RUN}, key=len, reverse=True)
        self._grams = {s[i:i + MIN_RUN] for s in self.secrets for i in range(len(s) - MIN_RUN + 1)}
        probes = sorted({p for s in self.secrets for p in _probes(s)})
        self._probe = re.compile("|".join(map(re.escape, probes))) if probes else None
        # no quote, backslash or control character in any secret: json.dumps leaves a run of one as it is
        self._json_verbatim = not any(c in '"\\' or ord(c) < 0x20 for s in self.secrets for c in s)

    @classmethod
    def from_env(cls, extra_names=()) -> "Redactor":
        return cls(os.environ.get(n, "") for n in secret_names(extra_names))

    def __bool__(self) -> bool:
        return bool(self._grams)

    def redact(self, text):
        """``text`` with every key run masked (non-strings are returned as they are)."""
        if not self._grams or not isinstance(text, str) or len(text) < MIN_RUN:
            return text
        # masking can make a new run where a key holds the mask's own characters ("...D]x..."): repeat
        for _ in range(8):
            if not self._probe.search(text):
                break
            clean = self._mask(text)
            if clean == text:
                break
            text = clean
        return text

    def _mask(self, text: str) -> str:
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

    def redact_json(self, text):
        """:meth:`redact`, and key runs hidden by JSON escapes (``\\/``, ``\\u0073``) that a reader would decode.

        When the text with its escapes undone holds a key run, a JSON text is re-serialised from its
        decoded value with the runs masked (what any JSON reader gets is then clean, duplicate members
        included); any other text, or JSON too deep to walk, is given with its escapes undone and masked.
        """
        text = self.redact(text)
        if not self._grams or not isinstance(text, str) or "\\" not in text:
            return text
        flat = _unescaped(text)
        if self.redact(flat) == flat:
            return text
        try:
            out = json.dumps(self.redact_obj(json.loads(text, strict=False)), ensure_ascii=False)
            if self.redact(_unescaped(out)) == _unescaped(out):
                return out
        except (ValueError, RecursionError):
            pass
        return self.redact(flat)

    def key_tail(self, text: str) -> int:
        """Length of the longest ending of ``text`` that occurs in a secret, if shorter than MIN_RUN (else 0:
        a longer one is a run, masked where it stands)."""
        def in_a_secret(piece):
            return any(piece in secret for secret in self.secrets)

        if len(text) >= MIN_RUN and in_a_secret(text[-MIN_RUN:]):
            return 0
        return next((n for n in range(min(len(text), MIN_RUN - 1), 0, -1) if in_a_secret(text[-n:])), 0)

    def holds_secret(self, obj, json_texts=()) -> bool:
        """Whether :meth:`redact_obj` of ``obj`` or :meth:`redact_json` of any of ``json_texts`` could change
        anything: one probe over every string (keys too, and each JSON text with its escapes undone). False
        means both would return their input unchanged, so a caller may skip them (a clean cache hit)."""
        if not self._grams:
            return False
        strings = []

        def walk(value):
            if isinstance(value, str):
                strings.append(value)
            elif isinstance(value, dict):
                for k, v in value.items():
                    walk(k)
                    walk(v)
            elif isinstance(value, (list, tuple)):
                for v in value:
                    walk(v)

        dumped = None
        if self._json_verbatim:  # JSON escapes no character of any secret: each string as it is, at C speed
            try:
                dumped = json.dumps(obj, ensure_ascii=False)
            except (TypeError, ValueError):  # not JSON (a set, bytes)
                pass
        if dumped is None:
            walk(obj)
        else:
            strings.append(dumped)
        for text in json_texts:
            strings.append(text)
            if "\\" in text:
                strings.append(_unescaped(text))
        # NUL between the strings: a probe across a boundary is only a false alarm (the slow path runs)
        return self._probe.search("\0".join(strings)) is not None

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
        end = max(self._pending.rfind("\n"), self._pending.rfind("\r"))
        if end >= 0:  # whole lines (a progress bar's "\r" ends one too) go on at once
            done, self._pending = self._pending[:end + 1], self._pending[end + 1:]
            self.target.write(self.redactor.redact(done))
        return len(s)

    def flush(self) -> None:
        """Pass on what is pending but its longest ending that is a piece of a key (under MIN_RUN
        characters): a key written in pieces, with a flush after each, is still seen whole. No run of key
        characters can then straddle two pieces passed on."""
        tail = self.redactor.key_tail(self._pending)
        head = self._pending[:len(self._pending) - tail]
        if head:
            self.target.write(self.redactor.redact(head))
            self._pending = self._pending[len(head):]
        self.target.flush()

    def drain(self) -> None:
        """Pass on everything, the partial last line too (when the stream is done)."""
        if self._pending:
            self.target.write(self.redactor.redact(self._pending))
            self._pending = ""
        self.target.flush()

    def fileno(self) -> int:
        return self.target.fileno()

    def isatty(self) -> bool:
        return self.target.isatty()

    @property
    def encoding(self):  # tqdm picks its bar characters by the stream's encoding
        return getattr(self.target, "encoding", None)


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
