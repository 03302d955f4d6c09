"""Validate a workflow config against ``workflow/schemas/config.schema.yaml``.

Snakemake's own ``validate()`` reports type errors without the key they concern;
this one names the key path (``screening.min_signal: 'x' is not of type
'integer'``) and lists every problem at once, then fills in schema defaults.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from heart.tableio import format_path

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """The config does not match its schema; the message names every offending key."""


def _key(path) -> str:
    return format_path(path) or "(top level)"


def _with_defaults(validator_cls):
    set_props = validator_cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = sub["default"]
        yield from set_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_cls, {"properties": set_defaults})


_JSON_TYPES = {"integer": int, "number": (int, float), "boolean": bool, "null": type(None)}


def _coerce_strings(instance, schema):
    """Give ``snakemake --config`` values their declared type.

    Snakemake parses nested ``--config key={a: 1}`` values with YAML's BaseLoader,
    so every nested scalar arrives as a string; where the schema declares a
    non-string type and the string reads as that type in YAML, use the typed value.
    """
    if not isinstance(instance, dict):
        return
    for name, sub in schema.get("properties", {}).items():
        if name not in instance:
            continue
        value = instance[name]
        if isinstance(value, dict):
            _coerce_strings(value, sub)
            continue
        types = sub.get("type", [])
        types = [types] if isinstance(types, str) else types
        if not isinstance(value, str) or "string" in types and value != "null":
            continue
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            continue
        wanted = tuple(_JSON_TYPES[t] for t in types if t in _JSON_TYPES)
        if wanted and isinstance(parsed, wanted) and not (isinstance(parsed, bool) and bool not in wanted):
            instance[name] = parsed


def validate_config(config: dict, schema_path=SCHEMA_PATH, source: str = "config") -> dict:
    """Check ``config`` in place against the schema and fill defaults.

    Raises
    ------
    ConfigError
        One line per problem, each naming the key, e.g.
        ``config: regular_items.n: 'many' is not of type 'integer'``.
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    _coerce_strings(config, schema)
    cls = jsonschema.validators.validator_for(schema)
    errors = sorted(cls(schema).iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        lines = []
        for e in errors:
            if e.validator == "additionalProperties":
                unknown = sorted(set(e.instance) - set(e.schema.get("properties", {})))
                for name in unknown:
                    key = _key(list(e.absolute_path) + [name])
                    lines.append(f"{key}: unknown key (allowed here: "
                                 f"{', '.join(sorted(e.schema.get('properties', {})))})")
            elif e.validator == "required":
                missing = [m for m in e.validator_value if m not in e.instance]
                lines += [f"{_key(list(e.absolute_path) + [m])}: required key is missing" for m in missing]
            else:
                lines.append(f"{_key(e.absolute_path)}: {e.message}")
        _fail(source, schema_path, lines)
    _with_defaults(cls)(schema).validate(config)
    lines = _dangling_references(config)
    if lines:
        _fail(source, schema_path, lines)
    return config


def _fail(source: str, schema_path, lines: list[str]):
    raise ConfigError(
        f"{source} does not match {Path(schema_path).name}:\n  " + "\n  ".join(lines)
        + "\nSee config/README.md for what each key means."
    )


def _dangling_references(config: dict) -> list[str]:
    """Names that must point at other config entries (systems -> models, ...) but do not."""
    models = config.get("models", {})
    lines = []
    refs = [(f"systems.{name}.model", s["model"]) for name, s in config.get("systems", {}).items()]
    for stage, group in (("judging", "judges"), ("tagging", "taggers")):
        for name, entry in (config.get(stage) or {}).get(group, {}).items():
            refs.append((f"{stage}.{group}.{name}.model", entry["model"]))
    if "adversarial_items" in config:
        refs.append(("adversarial_items.model", config["adversarial_items"]["model"]))
    for key, model in refs:
        if model not in models:
            lines.append(f"{key}: {model!r} is not a configured model (models: {', '.join(sorted(models)) or 'none'})")
    return lines
