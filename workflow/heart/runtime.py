"""Helpers for the thin ``script:`` adapters: logging to the rule's log file.

A script's stderr goes to its log; on failure the error message is also printed
to the terminal's stderr, so the user sees *what* went wrong without opening
the log, and the log keeps the full traceback. Everything written to the log,
stdout and the terminal passes a :class:`heart.secrets.Redactor` first, so no
fragment of an API key a provider echoed reaches either.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback

from heart.secrets import RedactingStream, Redactor, redacted_logging


def key_env_names(config: dict | None) -> list[str]:
    """The ``api_key_env`` names of every configured model."""
    models = (config or {}).get("models") or {}
    return [m.get("api_key_env") for m in models.values() if isinstance(m, dict) and m.get("api_key_env")]


@contextlib.contextmanager
def logged(log_path, smk=None, name: str = "heart"):
    """Send logging and stderr to ``log_path``; echo a failure's message to the terminal.

    With the script's ``snakemake`` object, the job's provenance (:mod:`heart.provenance`) is recorded
    for every table it writes.
    """
    if smk is not None:
        from heart import provenance

        provenance.set_from(smk)
    redactor = Redactor.from_env(key_env_names(getattr(smk, "config", None)))
    terminal, stdout = sys.stderr, sys.stdout
    with open(log_path, "w", buffering=1) as raw, redacted_logging(redactor):
        fh = RedactingStream(raw, redactor)
        sys.stderr, sys.stdout = fh, RedactingStream(stdout, redactor)
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            yield logging.getLogger(name)
        except Exception as exc:
            traceback.print_exc(file=fh)
            print(redactor.redact(f"\nERROR ({type(exc).__name__}): {exc}\n(full traceback in {log_path})"),
                  file=terminal)
            raise SystemExit(1) from None
        finally:
            root.removeHandler(handler)
            sys.stdout.flush()
            fh.flush()
            sys.stderr, sys.stdout = terminal, stdout
