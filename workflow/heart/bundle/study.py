"""A study's settings as a bundle carries them (``study.yaml``): the sections of a run's config that say what
was studied and how it is analysed, without key names, servers, local files or cache paths. Read at
parse time by rule export_bundle, so it imports nothing heavy."""

from __future__ import annotations

import json

from heart.common.config import paper_reference

#: the config sections a study's settings are made of (study.yaml); keys, paths and the LLM engine are left out
STUDY_SECTIONS = ("items", "models", "systems", "imported_systems", "judging", "human_completions", "human_judgments",
                  "tagging", "stats", "figures", "simulated")
_MODEL_KEYS = ("model", "family", "params", "reasoning")


def study_settings(config: dict) -> dict:
    """The study's settings from a run's config: no key names, servers, local files or cache paths."""
    study = {k: json.loads(json.dumps(config[k])) for k in STUDY_SECTIONS if k in config}
    study["models"] = {name: {k: m[k] for k in _MODEL_KEYS if k in m} for name, m in config.get("models", {}).items()}
    for section, key in (("human_completions", "path"), ("human_judgments", "path"), ("tagging", "spot_checks")):
        study.get(section, {}).pop(key, None)
    # as this run resolved it: a bundle of a HEART study keeps the paper's comparison, another study's never gets it
    study["paper_reference"] = paper_reference(config)
    study["imported_systems"] = {name: {"family": s.get("family")} for name, s in config.get("imported_systems",
                                                                                            {}).items()}
    return study
