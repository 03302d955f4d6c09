"""The strategy taxonomy (``workflow/resources/taxonomy/strategies.yaml``): the one loader, schema-checked."""

from __future__ import annotations

from heart.common.config import load_resource


def load_taxonomy(path) -> dict:
    """The taxonomy file (``workflow/resources/taxonomy/strategies.yaml``), checked against
    ``workflow/schemas/taxonomy.schema.yaml``; every strategy key is used once."""
    return load_resource(path, "taxonomy", unique_keys="strategies")


def strategy_keys(taxonomy: dict) -> list[str]:
    return [s["key"] for s in taxonomy["strategies"]]
