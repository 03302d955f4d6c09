"""What the tests share that is not a fixture: where things are, the test tiers' data markers, the keys the
redaction tests plant. Fixtures are in ``tests/conftest.py``; the helpers that build and run a throwaway copy
of the workflow are :mod:`support.workflow`, the servers the tests start on 127.0.0.1 :mod:`support.llm_server`,
:mod:`support.annotation_server` and :mod:`support.annotation_proxy`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
TINY = FIXTURES / "esconv_tiny.json"  # the tiny ESConv fixture written for this project
TINY_RELEASE = FIXTURES / "release_tiny"  # a tiny release (two files) mapping onto the tiny ESConv fixture
SHARED_ESCONV_DIR = Path(os.environ.get("HEART_SHARED_ESCONV", REPO.parent / "shared" / "data" / "esconv"))
SHARED_RELEASE_DIR = Path(os.environ.get("HEART_SHARED_RELEASE", REPO.parent / "shared" / "data" / "heart-release"))
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")

_shared_esconv = pytest.mark.skipif(
    not (SHARED_ESCONV_DIR / "ESConv.json").is_file(),
    reason=f"real ESConv not found at {SHARED_ESCONV_DIR} (set HEART_SHARED_ESCONV)",
)
_shared_release = pytest.mark.skipif(
    not (SHARED_RELEASE_DIR / "dialogues_regular.json").is_file()
    or not (SHARED_ESCONV_DIR / "ESConv.json").is_file(),
    reason=f"the paper's release not found at {SHARED_RELEASE_DIR} (set HEART_SHARED_RELEASE) or ESConv missing",
)


def needs_shared(test):
    """A test on the real ESConv of ../shared: marked shared_data (make test runs it; make test-fast, the quick
    loop on the project's own fixtures, does not), skipped where the data are absent."""
    return pytest.mark.shared_data(_shared_esconv(test))


def needs_release(test):
    """A test on the paper's release (and the real ESConv) of ../shared: as :func:`needs_shared`."""
    return pytest.mark.shared_data(_shared_release(test))


# placeholders for the paper config's key variables (dry runs and key-free stages only)
PAPER_KEYS = {k: "dry-run-placeholder" for k in
              ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "TOGETHERAI_API_KEY", "DEEPINFRA_API_KEY")}


KEY_ENV = {"HEART_TEST_API_KEY": "sk-judge-test"}
#: a key the redaction tests put where a provider may echo it (44 characters, like a real key)
KEY = "sk-proj-Zq81vXc0LmN4tR7yWp2KdF9sGh3JbA6eUo5iQ"


def key_pieces(text: str, key: str = KEY) -> list[str]:
    """Every run of MIN_RUN characters of ``key`` that occurs in ``text`` (what must never be there)."""
    from heart.common.redaction import MIN_RUN

    return sorted({key[i:i + MIN_RUN] for i in range(len(key) - MIN_RUN + 1) if key[i:i + MIN_RUN] in text})
