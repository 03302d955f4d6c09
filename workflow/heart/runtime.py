"""Helpers for the thin ``script:`` adapters: logging to the rule's log file.

A script's stderr goes to its log; on failure the error message is also printed
to the terminal's stderr, so the user sees *what* went wrong without opening
the log, and the log keeps the full traceback.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback


@contextlib.contextmanager
def logged(log_path, smk=None, name: str = "heart"):
    """Send logging and stderr to ``log_path``; echo a failure's message to the terminal.

    With the script's ``snakemake`` object, the job's provenance (:mod:`heart.provenance`) is recorded
    for every table it writes.
    """
    if smk is not None:
        from heart import provenance

        provenance.set_from(smk)
    terminal = sys.stderr
    with open(log_path, "w", buffering=1) as fh:
        sys.stderr = fh
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            yield logging.getLogger(name)
        except Exception as exc:
            traceback.print_exc(file=fh)
            print(f"\nERROR ({type(exc).__name__}): {exc}\n(full traceback in {log_path})",
                  file=terminal)
            raise SystemExit(1) from None
        finally:
            root.removeHandler(handler)
            sys.stderr = terminal
