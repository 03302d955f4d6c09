"""heart.common.config: both shipped configs validate; a wrong key or type is named."""

import copy

import pytest
import yaml

from support import REPO
from heart.common.config import (ConfigError, ResourceError, load_resource, paper_reference, schema_problems,
                                 validate_config)


def load(name):
    return yaml.safe_load((REPO / "config" / name).read_text())


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "screening.yaml", "analysis.yaml"])
def test_shipped_configs_validate(name):
    validate_config(load(name))


def test_paper_config_uses_the_papers_released_items():
    cfg = validate_config(load("paper.yaml"))
    assert cfg["items"]["source"] == "release"
    # pinned to the commits and hashes the release's README gives
    assert cfg["release"]["regular"]["sha256"].startswith("75d2ca76")
    assert "560a9c195dd663be10197dcebcde4a0aecf1205b" in cfg["release"]["regular"]["url"]
    assert cfg["release"]["adversarial"]["sha256"].startswith("ddc161df")


def test_a_screened_study_needs_its_item_sections():
    cfg = load("config.yaml")
    del cfg["adversarial_items"]
    with pytest.raises(ConfigError, match="adversarial_items: required key is missing"):
        validate_config(cfg)
    cfg["items"] = {"source": "release"}
    validate_config(cfg)  # the release brings its own items


def test_defaults_are_filled():
    cfg = load("config.yaml")
    assert "min_signal" not in cfg["screening"] and "esconv" not in cfg
    filled = validate_config(cfg)
    assert filled["screening"]["min_signal"] == 1
    assert filled["esconv"]["url"].startswith("https://raw.githubusercontent.com/thu-coai/")


def _said_again(cfg: dict, schema: dict, where: str = "") -> list[str]:
    """The keys of ``cfg`` whose value is the schema's default for them."""
    out = []
    props, extra = schema.get("properties", {}), schema.get("additionalProperties")
    for key, value in cfg.items():
        path = f"{where}.{key}" if where else key
        sub = props.get(key) or (extra if isinstance(extra, dict) else {})
        if key in props and "default" in sub and sub["default"] == value:
            out.append(path)
        elif isinstance(value, dict):
            out += _said_again(value, sub, path)
    return out


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "screening.yaml", "analysis.yaml", "artifacts.yaml"])
def test_a_config_says_only_what_differs_from_the_schemas_defaults(name):
    """A default is said once, in the schema (rehearsal.yaml, an overlay on paper.yaml, sets what differs from
    paper.yaml: its nulls are not said again)."""
    from heart.common.config import _config_schema

    assert _said_again(load(name), _config_schema()) == []


def test_the_check_of_said_again_finds_a_default():
    from heart.common.config import _config_schema

    cfg = load("config.yaml")
    cfg["stats"] = {"bt_alpha": 0.01, "n_boot": 7}
    cfg["models"]["smollm2"]["timeout"] = 120
    assert _said_again(cfg, _config_schema()) == ["models.smollm2.timeout", "stats.bt_alpha"]


@pytest.mark.parametrize("mutate, expected", [
    (lambda c: c["regular_items"].update(n="many"), "regular_items.n: 'many' is not of type 'integer'"),
    (lambda c: c["screening"].update(min_signall=2), "screening.min_signall: unknown key"),
    (lambda c: c.update(judges={}), "judges: unknown key"),
    (lambda c: c.setdefault("esconv", {}).update(sha256="abc"), "esconv.sha256: 'abc' does not match"),
    (lambda c: c["regular_items"].pop("seed"), "regular_items.seed: required key is missing"),
    (lambda c: c["screening"].update(method="llm"), "screening.method: 'llm' is not one of ['lexicon']"),
    (lambda c: c["screening"].update(max_items_per_conversation=0),
     "screening.max_items_per_conversation: 0 is less than the minimum of 1"),
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
    cfg["esconv"] = {"sha256": "null"}
    cfg["esconv"]["local_copy"] = "data/1.json"
    out = validate_config(cfg)
    assert out["regular_items"] == {"n": 5, "seed": 1}
    assert out["esconv"]["sha256"] is None and out["esconv"]["local_copy"] == "data/1.json"


def test_system_must_name_a_configured_model():
    cfg = load("config.yaml")
    cfg["systems"]["ghost"] = {"model": "gpt-9", "prompt": "supportive_listener"}
    with pytest.raises(ConfigError,
                       match=r"systems.ghost.model: 'gpt-9' is not a configured model \(models: smollm2\)"):
        validate_config(cfg)


def test_the_moderation_screen_must_name_a_configured_model():
    cfg = load("config.yaml")
    cfg["completions"] = {"moderation": "omni-moderation"}
    with pytest.raises(ConfigError, match=r"completions.moderation: 'omni-moderation' is not a configured model"):
        validate_config(cfg)


# --- versioned resource files: heart.common.config.load_resource ---------------------------------------

RESOURCES = REPO / "workflow" / "resources"
RUBRIC = RESOURCES / "rubric" / "heart.yaml"
TAXONOMY = RESOURCES / "taxonomy" / "strategies.yaml"


def _set(doc, path, value):
    *parents, last = path
    for part in parents:
        doc = doc[part]
    doc[last] = value


def _drop(doc, path):
    *parents, last = path
    for part in parents:
        doc = doc[part]
    del doc[last]


@pytest.mark.parametrize("src, loader, mutate, expected", [
    # wrong type
    (RUBRIC, "heart.judging.material:load_rubric", lambda d: _set(d, ["axes", 2, "high"], 3),
     "axes[2].high must be a non-empty string, not 3"),
    (RUBRIC, "heart.judging.material:load_rubric", lambda d: _set(d, ["version"], "one"),
     "version: 'one' is not of type 'integer'"),
    (TAXONOMY, "heart.tagging.taxonomy:load_taxonomy", lambda d: _set(d, ["strategies", 4], "Offer Hope"),
     "strategies[4]: 'Offer Hope' is not of type 'object'"),
    (TAXONOMY, "heart.tagging.taxonomy:load_taxonomy", lambda d: _set(d, ["strategies"], {"offer_hope": "..."}),
     "strategies: {'offer_hope': '...'} is not of type 'array'"),
    # unknown key
    (RUBRIC, "heart.judging.material:load_rubric", lambda d: _set(d, ["axes", 0, "colour"], "red"),
     "axes[0].colour: unknown key (allowed here: criteria, description, high, key, low, name)"),
    (RUBRIC, "heart.judging.material:load_rubric", lambda d: _set(d, ["checklst"], []),
     "checklst: unknown key (allowed here: axes, checklist, version)"),
    (TAXONOMY, "heart.tagging.taxonomy:load_taxonomy", lambda d: _set(d, ["strategies", 5, "examples"], "x"),
     "strategies[5].examples: unknown key (allowed here: definition, example, key, name)"),
    # missing field
    (RUBRIC, "heart.judging.material:load_rubric", lambda d: _drop(d, ["axes", 1, "name"]),
     "axes[1].name must be a non-empty string; it is missing"),
    (TAXONOMY, "heart.tagging.taxonomy:load_taxonomy", lambda d: _drop(d, ["strategies", 7, "key"]),
     "strategies[7].key: required key is missing"),
    (TAXONOMY, "heart.tagging.taxonomy:load_taxonomy", lambda d: _drop(d, ["strategies"]),
     "strategies: required key is missing"),
    # a value the schema rules out
    (RUBRIC, "heart.judging.material:load_rubric", lambda d: _set(d, ["checklist", 1], " \n"),
     "checklist[1] must be a non-empty string, not ' \\n'"),
    (TAXONOMY, "heart.tagging.taxonomy:load_taxonomy",
     lambda d: _set(d, ["strategies", 3, "key"], "Collaborative planning"),
     "strategies[3].key: 'Collaborative planning' does not match '^[a-z][a-z0-9_]*$'"),
    (TAXONOMY, "heart.tagging.taxonomy:load_taxonomy", lambda d: _set(d, ["strategies"], []),
     "strategies: has 0 entries, at least 1 expected"),
])
def test_a_resource_that_breaks_its_schema_names_file_entry_and_field(tmp_path, src, loader, mutate, expected):
    import importlib

    module, func = loader.split(":")
    load = getattr(importlib.import_module(module), func)
    doc = yaml.safe_load(src.read_text())
    mutate(doc)
    bad = tmp_path / src.name
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ResourceError) as err:
        load(bad)
    assert f"{bad}: {expected}" in str(err.value).splitlines()


def test_every_problem_of_a_resource_is_listed_in_document_order(tmp_path):
    doc = yaml.safe_load(TAXONOMY.read_text())
    doc["strategies"][10]["name"] = ""
    doc["strategies"][2]["example"] = ["a list"]
    bad = tmp_path / "t.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ResourceError) as err:
        load_resource(bad, "taxonomy")
    assert str(err.value).splitlines() == [
        f"{bad}: strategies[2].example must be a non-empty string, not ['a list']",
        f"{bad}: strategies[10].name must be a non-empty string, not ''"]


def test_unreadable_resource_names_the_file_and_line(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text("version: 1\naxes: [\n")
    with pytest.raises(ResourceError, match=rf"(?s){bad}: not valid UTF-8 YAML: .*{bad}\", line 3"):
        load_resource(bad, "rubric")
    bad.write_text("")
    with pytest.raises(ResourceError, match=rf"{bad}: \(top level\): None is not of type 'object'"):
        load_resource(bad, "rubric")


def test_unique_keys_are_checked_beyond_the_schema(tmp_path):
    doc = {"strategies": [{"key": k, "name": "N", "definition": "D", "example": "E"} for k in ("a", "b", "a")]}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert load_resource(path, "taxonomy") == doc  # the schema has no word on repeats
    with pytest.raises(ResourceError,
                       match=rf"^{path}: strategies\[2\].key 'a' is used twice \(first at strategies\[0\].key\)$"):
        load_resource(path, "taxonomy", unique_keys="strategies")


def test_error_message_of_a_referenced_definition_and_long_values():
    schema = {"type": "object", "required": ["name"],
              "properties": {"name": {"$ref": "#/$defs/text"},
                             "tags": {"type": "array", "items": {"type": "string"}}},
              "$defs": {"text": {"type": "string", "minLength": 1, "errorMessage": "must be some text"}}}
    assert schema_problems({}, schema) == ["name must be some text; it is missing"]
    assert schema_problems({"name": ""}, schema) == ["name must be some text, not ''"]
    long = {"key": "x" * 100}
    assert schema_problems({"name": "n", "tags": ["a", long]}, schema) == [
        f"tags[1]: {repr(long)[:57]}... is not of type 'string'"]
    assert schema_problems(["a", "list"], schema) == ["(top level): ['a', 'list'] is not of type 'object'"]


@pytest.mark.parametrize("name", ["rubric", "taxonomy"])
def test_resource_schemas_are_valid_and_describe_every_field(name):
    import jsonschema

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / f"{name}.schema.yaml").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema.get("description")

    def fields(node, where):
        """(name, subschema) of every field below ``node``."""
        for key, sub in (node.get("properties") or {}).items():
            yield f"{where}.{key}", sub
            yield from fields(sub, f"{where}.{key}")
        if isinstance(node.get("items"), dict):
            yield from fields(node["items"], f"{where}[]")

    named = [*fields(schema, name), *(f for key, d in schema.get("$defs", {}).items() for f in fields(d, key))]
    assert [where for where, sub in named if not sub.get("description")] == []


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "screening.yaml"])
def test_report_caption_renders_for_every_shipped_config(name):
    # Snakemake renders workflow/report/workflow.rst with the run's config; a key only one config has
    # (regular_items) broke `--report` for the paper's run
    import jinja2

    cfg = validate_config(load(name))
    src = (REPO / "workflow" / "report" / "workflow.rst").read_text()
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    text = env.from_string(src).render(snakemake=type("S", (), {"config": cfg})())
    assert "Configuration of this run:" in text
    if cfg["items"]["source"] == "release":
        assert "released dialogue contexts" in text
    else:
        assert f'{cfg["regular_items"]["n"]} regular' in text


# --- the run's config as the workflow starts (heart.common.config.start) ---------------------------

PROMPTS = REPO / "workflow" / "resources" / "prompts"


def test_start_validates_fills_defaults_and_checks_the_names():
    from heart.common.config import start

    cfg = load("config.yaml")
    assert start(cfg, {}, PROMPTS) is cfg and cfg["stats"]["bt_alpha"] == 0.01


@pytest.mark.parametrize("change, message", [
    (lambda c: c["systems"]["smollm2-brief"].update(prompt="brief_advise"),
     r"config systems\.smollm2-brief\.prompt: no template 'brief_advise' \(expected .*completion/brief_advise\.md\)"),
    (lambda c: c["judging"]["judges"]["smollm2-judge"].update(prompt="heart_leter"),
     r"config judging\.judges\.smollm2-judge\.prompt: no template 'heart_leter'"),
    (lambda c: c["tagging"]["taggers"]["smollm2-tagger"].update(prompt="nope"),
     r"config tagging\.taggers\.smollm2-tagger\.prompt: no template 'nope' \(expected .*tagging/nope\.md\)"),
    (lambda c: c.update(imported_systems={"original": {"path": "x.csv"}, "smollm2-brief": {"path": "y.csv"}}),
     r"imported_systems\.original: the name is taken(.|\n)*imported_systems\.smollm2-brief: the name is taken"),
    (lambda c: c.update(artifacts={}), r"config artifacts\.path is not set: give the bundle's folder"),
])
def test_start_names_the_key_that_points_nowhere(change, message):
    from heart.common.config import StartupError, start

    cfg = load("config.yaml")
    change(cfg)
    with pytest.raises(StartupError, match=message):
        start(cfg, {}, PROMPTS)


def test_start_from_a_bundle_takes_its_study_and_the_command_lines_overrides_on_top():
    from heart.common.config import start

    study = load("config.yaml")
    study["stats"] = {"n_boot": 500, "seed": 3}
    seen = []

    def bundle_config(path):
        seen.append(path)
        return {**study, "artifacts": {"path": f"/resolved/{path}"}}

    cfg = {"artifacts": {"path": "b"}, "stats": {"n_boot": 1}}  # config/artifacts.yaml and a --config
    out = start(cfg, {"artifacts": {"path": "b"}, "stats": {"n_boot": 200}}, PROMPTS, bundle_config=bundle_config)
    assert seen == ["b"] and out["artifacts"]["path"] == "/resolved/b"
    assert out["stats"]["n_boot"] == 200 and out["stats"]["seed"] == 3  # merged key by key, the study's kept
    assert out["systems"] == study["systems"]


def test_start_runs_the_registries_checks():
    from heart.common.config import ConfigError, start
    from heart.judging import kinds

    cfg = load("config.yaml")
    cfg["judging"]["judges"]["smollm2-judge"]["answer"] = "telepathy"
    with pytest.raises(ConfigError, match=r"judging\.judges\.smollm2-judge\.answer: 'telepathy' is not a judge kind"):
        start(cfg, {}, PROMPTS, checks=[kinds.config_problems])


def test_the_papers_numbers_sit_beside_a_heart_study_only_unless_set():
    """Another study's votes (analysis-only) or a bundle that does not say so get no comparison with the HEART
    paper and none of its tests in their Benjamini-Hochberg families; a setting overrides either way."""
    from heart.bundle.study import study_settings

    assert paper_reference({}) is True  # a HEART study: items from ESConv or the release
    assert paper_reference({"analysis_only": {"judgments": "v.csv"}}) is False
    assert paper_reference({"artifacts": {"path": "bundle"}}) is False
    assert paper_reference({"artifacts": {"path": None}}) is True
    assert paper_reference({"analysis_only": {"judgments": "v.csv"}, "paper_reference": True}) is True
    assert paper_reference({"paper_reference": False}) is False
    # a bundle carries what its run resolved: a HEART study's bundle keeps the comparison
    assert study_settings({"paper_reference": None})["paper_reference"] is True
