"""heart.config: both shipped configs validate; a wrong key or type is named."""

import copy

import pytest
import yaml

from conftest import REPO
from heart.config import ConfigError, validate_config


def load(name):
    return yaml.safe_load((REPO / "config" / name).read_text())


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml"])
def test_shipped_configs_validate(name):
    validate_config(load(name))


def test_paper_config_is_paper_scale():
    cfg = validate_config(load("paper.yaml"))
    assert cfg["regular_items"]["n"] == 280
    assert cfg["screening"]["max_items_per_conversation"] == 2


def test_defaults_are_filled():
    cfg = load("config.yaml")
    del cfg["screening"]["min_signal"]
    assert validate_config(cfg)["screening"]["min_signal"] == 1


@pytest.mark.parametrize("mutate, expected", [
    (lambda c: c["regular_items"].update(n="many"), "regular_items.n: 'many' is not of type 'integer'"),
    (lambda c: c["screening"].update(min_signall=2), "screening.min_signall: unknown key"),
    (lambda c: c.update(judges={}), "judges: unknown key"),
    (lambda c: c["esconv"].update(sha256="abc"), "esconv.sha256: 'abc' does not match"),
    (lambda c: c["regular_items"].pop("seed"), "regular_items.seed: required key is missing"),
    (lambda c: c["screening"].update(method="llm"), "screening.method: 'llm' is not one of ['lexicon']"),
    (lambda c: c["screening"].update(max_items_per_conversation=0), "screening.max_items_per_conversation: 0 is less than the minimum of 1"),
])
def test_bad_config_names_the_key(mutate, expected):
    cfg = copy.deepcopy(load("config.yaml"))
    mutate(cfg)
    with pytest.raises(ConfigError) as err:
        validate_config(cfg)
    assert expected in str(err.value)


def test_command_line_strings_get_their_declared_type():
    # snakemake --config 'regular_items={n: 5, seed: 1}' delivers nested values as strings
    cfg = load("config.yaml")
    cfg["regular_items"] = {"n": "5", "seed": "1"}
    cfg["esconv"]["sha256"] = "null"
    cfg["esconv"]["local_copy"] = "data/1.json"
    out = validate_config(cfg)
    assert out["regular_items"] == {"n": 5, "seed": 1}
    assert out["esconv"]["sha256"] is None and out["esconv"]["local_copy"] == "data/1.json"


def test_system_must_name_a_configured_model():
    cfg = load("config.yaml")
    cfg["systems"]["ghost"] = {"model": "gpt-9", "prompt": "supportive_listener"}
    with pytest.raises(ConfigError, match=r"systems.ghost.model: 'gpt-9' is not a configured model \(models: smollm2\)"):
        validate_config(cfg)
