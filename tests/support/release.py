"""The tiny release fixture (tests/fixtures/release_tiny, written for this project) and the tiny ESConv it maps
onto, read the workflow's way."""

from __future__ import annotations

from heart.data import esconv, release
from support import TINY, TINY_RELEASE


def tiny_esconv_tables():
    """The tiny ESConv fixture's (conversations, turns)."""
    conversations, turns, _ = esconv.ingest(TINY)
    return conversations, turns


def records(subset, folder=TINY_RELEASE):
    return release.read(folder / f"dialogues_{subset}.json", subset)
