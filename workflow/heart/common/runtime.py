"""Helpers for the thin ``script:`` adapters: logging to the rule's log file.

A script's stderr goes to its log; on failure the error message is also printed
to the terminal's stderr, so the user sees *what* went wrong without opening
the log, and the log keeps the full traceback. Everything written to the log,
stdout and the terminal passes a :class:`heart.common.redaction.Redactor` first, so no
fragment of an API key a provider echoed reaches either.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import traceback

from heart.common.redaction import RedactingStream, Redactor, redacted_logging


_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def terminal_safe(text: str) -> str:
    """``text`` with control characters (an escape sequence from a hostile file) and lone surrogates
    written as escapes, so that printing it can neither drive the terminal nor fail."""
    return _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], text)


def key_env_names(config: dict | None) -> list[str]:
    """The ``api_key_env`` names of every configured model."""
    models = (config or {}).get("models") or {}
    return [m.get("api_key_env") for m in models.values() if isinstance(m, dict) and m.get("api_key_env")]


def tell(text: str, smk=None) -> None:
    """Print ``text`` to the terminal even while a rule's stderr goes to its log: redacted, terminal-safe."""
    redactor = Redactor.from_env(key_env_names(getattr(smk, "config", None)))
    print(terminal_safe(redactor.redact(text)), file=sys.__stderr__, flush=True)


@contextlib.contextmanager
def logged(log_path, smk=None, name: str = "heart"):
    """Send logging and stderr to ``log_path``; echo a failure's message to the terminal.

    With the script's ``snakemake`` object, the keys of the configured models are masked too.
    """
    redactor = Redactor.from_env(key_env_names(getattr(smk, "config", None)))
    terminal, stdout = sys.stderr, sys.stdout
    # backslashreplace: an error quoting a lone surrogate from a hostile file must not fail the log itself
    with open(log_path, "w", buffering=1, encoding="utf-8", errors="backslashreplace") as raw, \
            redacted_logging(redactor):
        fh = RedactingStream(raw, redactor)
        out = RedactingStream(stdout, redactor)
        sys.stderr, sys.stdout = fh, out
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            yield logging.getLogger(name)
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                raise
            # sys.exit("message") would print the message to the real stderr after this block, unredacted
            print(terminal_safe(redactor.redact(f"\nERROR: {exc.code}\n(full traceback in {log_path})")),
                  file=terminal)
            traceback.print_exc(file=fh)
            raise SystemExit(1) from None
        except BaseException as exc:
            # also an interrupt (Ctrl-C, scancel --signal=INT) or a cancellation: Python would print its
            # traceback, with the provider's exception chained to it, to the real stderr, unredacted
            traceback.print_exc(file=fh)
            what = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"ERROR ({type(exc).__name__}): {exc}"
            print(terminal_safe(redactor.redact(f"\n{what}\n(full traceback in {log_path})")), file=terminal)
            raise SystemExit(130 if isinstance(exc, KeyboardInterrupt) else 1) from None
        finally:
            root.removeHandler(handler)
            out.drain()
            fh.drain()
            sys.stderr, sys.stdout = terminal, stdout
