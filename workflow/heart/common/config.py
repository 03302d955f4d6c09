"""Validate the workflow config and the versioned resource files against their JSON schemas.

:func:`validate_config` checks a config against ``workflow/schemas/config.schema.yaml``.
Snakemake's own ``validate()`` reports type errors without the key they concern;
this one names the key path (``screening.min_signal: 'x' is not of type
'integer'``) and lists every problem at once, then fills in schema defaults.

:func:`load_resource` reads a versioned resource file (the rubric, the strategy taxonomy, the
rationale codebook ...) and checks it against ``workflow/schemas/<name>.schema.yaml``; every
problem is one line naming the file, the entry and the field
(``heart.yaml: axes[1].high must be a non-empty string, not ' '``).

Both word their errors with :func:`schema_problems`. A schema may give a subschema an
``errorMessage`` (the ajv-errors keyword; JSON Schema ignores it): a value failing that subschema is
reported as ``<field> <errorMessage>, not <value>``, a required key missing where that subschema is
expected as ``<field> <errorMessage>; it is missing``.
"""

from __future__ import annotations

import copy
import dataclasses

import functools
from pathlib import Path

import jsonschema
import yaml

from heart.common.strict_json import format_path
from heart import WORKFLOW_DIR

SCHEMA_DIR = WORKFLOW_DIR / "schemas"
SCHEMA_PATH = SCHEMA_DIR / "config.schema.yaml"


class ConfigError(ValueError):
    """The config does not match its schema; the message names every offending key."""


class ResourceError(ValueError):
    """A versioned resource file does not match its schema; one line per problem, each naming the
    file, the entry and the field."""


def _key(path) -> str:
    return format_path(path) or "(top level)"


def _error_message(root: dict, sub) -> str | None:
    """The ``errorMessage`` of subschema ``sub``, or of the local definition (``#/...``) it refers to."""
    while isinstance(sub, dict):
        if "errorMessage" in sub:
            return sub["errorMessage"]
        ref = sub.get("$ref", "")
        if not ref.startswith("#/"):
            return None
        sub = functools.reduce(lambda node, part: node[part], ref[2:].split("/"), root)
    return None


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(e: jsonschema.ValidationError, root: dict) -> list[str]:
    """One jsonschema error as lines that name the key path."""
    path = list(e.absolute_path)
    if e.validator == "additionalProperties":
        allowed = sorted(e.schema.get("properties", {}))
        return [f"{_key(path + [name])}: unknown key (allowed here: {', '.join(allowed)})"
                for name in sorted(set(e.instance) - set(allowed), key=str)]
    if e.validator == "required":
        lines = []
        for name in (m for m in e.validator_value if m not in e.instance):
            must = _error_message(root, e.schema.get("properties", {}).get(name))
            lines.append(f"{_key(path + [name])} {must}; it is missing" if must
                         else f"{_key(path + [name])}: required key is missing")
        return lines
    must = _error_message(root, e.schema)
    if must:
        return [f"{_key(path)} {must}, not {_short(e.instance)}"]
    if e.validator in ("minItems", "maxItems"):
        bound = "at least" if e.validator == "minItems" else "at most"
        return [f"{_key(path)}: has {len(e.instance)} entries, {bound} {e.validator_value} expected"]
    message = e.message
    if message.startswith(repr(e.instance)):  # "<the whole value> is not of type ...": shorten the value
        message = _short(e.instance) + message[len(repr(e.instance)):]
    if e.validator == "const":  # "'R' was expected" says what is wanted, not what is there
        message += f", not {_short(e.instance)}"
    return [f"{_key(path)}: {message}"]


def _document_order(error: jsonschema.ValidationError):
    return [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.absolute_path]


def schema_problems(instance, schema: dict) -> list[str]:
    """Every way ``instance`` breaks ``schema``: one line each, in document order, naming the key path
    (``axes[1].high``; see :func:`heart.common.strict_json.format_path`). Empty when it matches."""
    cls = jsonschema.validators.validator_for(schema)
    lines = []
    for error in sorted(cls(schema).iter_errors(instance), key=_document_order):
        lines += [line for line in _describe(error, schema) if line not in lines]
    return lines


@functools.lru_cache(maxsize=None)
def _resource_schema(name: str) -> dict:
    schema = yaml.safe_load((SCHEMA_DIR / f"{name}.schema.yaml").read_text())
    jsonschema.validators.validator_for(schema).check_schema(schema)
    return schema


def load_resource(path, schema_name: str, unique_keys: str | None = None) -> dict:
    """The YAML file ``path``, checked against ``workflow/schemas/<schema_name>.schema.yaml``.

    ``unique_keys`` names a top-level list whose entries' ``key`` must all differ (JSON Schema's
    ``uniqueItems`` compares whole entries, so this one check is made here).

    Raises
    ------
    ResourceError
        One line per problem, each ``<path>: <entry>.<field> <problem>``, e.g.
        ``.../heart.yaml: axes[1].high must be a non-empty string, not ' '``.
    """
    try:
        with open(path, encoding="utf-8") as stream:  # a YAML error then names the file and the line
            doc = yaml.safe_load(stream)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ResourceError(f"{path}: not valid UTF-8 YAML: {exc}") from None
    lines = schema_problems(doc, _resource_schema(schema_name))
    if not lines and unique_keys:
        first: dict = {}
        for i, entry in enumerate(doc.get(unique_keys) or []):
            where = f"{unique_keys}[{i}].key"
            if entry["key"] in first:
                lines.append(f"{where} {entry['key']!r} is used twice (first at {first[entry['key']]})")
            first.setdefault(entry["key"], where)
    if lines:
        raise ResourceError("\n".join(f"{path}: {line}" for line in lines))
    return doc


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


@functools.lru_cache(maxsize=None)
def _config_schema() -> dict:
    """The config schema, read once (with libyaml where pyyaml has it: Snakemake reads it at every start).
    Callers copy what they hand out: a default filled into a config must not alias the schema's."""
    return yaml.load(SCHEMA_PATH.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _schema_node(path: str) -> dict:
    """The subschema at a dotted ``path`` of the config schema: a key is a property, ``*`` an entry of a
    mapping (``models.*``, ``judging.judges.*``)."""
    node = _config_schema()
    for part in filter(None, path.split(".")):
        node = node["additionalProperties"] if part == "*" else node["properties"][part]
    return node


def schema_defaults(path: str) -> dict:
    """The defaults the config schema gives the keys of the object at ``path`` (``"llm"``, ``"models.*"``):
    the one place a default is said; the library's dataclasses and functions take theirs from here."""
    return copy.deepcopy({name: sub["default"] for name, sub in _schema_node(path).get("properties", {}).items()
                          if "default" in sub})


def schema_default(path: str):
    """The config schema's default of the key at a dotted ``path`` (``"stats.bt_alpha"``)."""
    parent, _, key = path.rpartition(".")
    return schema_defaults(parent)[key]


def validate_config(config: dict, schema_path=SCHEMA_PATH, source: str = "config", checks=()) -> dict:
    """Check ``config`` in place against the schema and fill defaults.

    ``checks``: more checks of the filled-in config, each a function returning its problems as lines that
    name the key (what the schema cannot say: a judge kind is a key of a registry, for example,
    :func:`heart.judging.kinds.config_problems`).

    Raises
    ------
    ConfigError
        One line per problem, each naming the key, e.g.
        ``config: regular_items.n: 'many' is not of type 'integer'``.
    """
    schema = (copy.deepcopy(_config_schema()) if Path(schema_path) == SCHEMA_PATH
              else yaml.safe_load(Path(schema_path).read_text()))
    _coerce_strings(config, schema)
    lines = schema_problems(config, schema)
    if lines:
        _fail(source, schema_path, lines)
    cls = jsonschema.validators.validator_for(schema)
    _with_defaults(cls)(schema).validate(config)
    lines = _dangling_references(config) + [line for check in checks for line in check(config)]
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
    if (config.get("completions") or {}).get("moderation"):
        refs.append(("completions.moderation", config["completions"]["moderation"]))
    for key, model in refs:
        if model not in models:
            lines.append(f"{key}: {model!r} is not a configured model (models: {', '.join(sorted(models)) or 'none'})")
    return lines


class PlainParams:
    """A frozen dataclass that a rule takes as one param (a judge, a tagger): Snakemake compares only plain
    values (dicts, lists, strings, numbers) to decide that a changed setting reruns a rule, and passes an
    object over, so the object travels as :meth:`as_params` and a script rebuilds it with :meth:`from_params`.
    A subclass with an ``answer`` field names the formats it accepts in ``answer_formats``."""

    answer_formats: tuple = ()  # (a class attribute: not a dataclass field, having no annotation in the subclass)

    def __post_init__(self):
        if self.answer_formats and self.answer not in self.answer_formats:
            raise ValueError(f"{type(self).__name__.lower()} {self.name}: answer {self.answer!r} is not one of "
                             f"{self.answer_formats}")

    def as_params(self) -> dict:
        """The object as a rule's param: a plain dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_params(cls, params: dict):
        """The object back from :meth:`as_params`."""
        return cls(**params)


# --- the run's config as the workflow starts --------------------------------------------------------

class StartupError(ConfigError):
    """The config validates, but a name in it points nowhere or clashes; the message names the key."""


def paper_reference(config: dict) -> bool:
    """Whether the run sets the HEART paper's own numbers beside its own (config ``paper_reference``): as set,
    else only for a HEART study -- not for votes analysed alone (``analysis_only``) nor for a bundle that does
    not say so (``artifacts``): another study's tests never share a Benjamini-Hochberg family with the paper's."""
    if config.get("paper_reference") is not None:
        return bool(config["paper_reference"])
    return "analysis_only" not in config and not (config.get("artifacts") or {}).get("path")


#: system names every study has, which an imported system may not take
RESERVED_SYSTEMS = ("original", "human", "best-human")


def start(config: dict, overrides: dict, prompts_dir, bundle_config=None, checks=(),
          source: str = "config (config/config.yaml and any --configfile/--config)") -> dict:
    """The run's config, in place, as ``rules/common.smk`` starts the workflow.

    A run from a bundle (an ``artifacts`` section, ``make paper ARTIFACTS=``) replaces the config with the
    bundle's study settings (``bundle_config(path)``, :func:`heart.bundle.load.run_config`), the command
    line's ``overrides`` (``--config``) applied on top; then the config is validated (:func:`validate_config`,
    with ``checks``), and the names it gives are checked: an imported system may not take a configured or a
    reserved name, and every system's, judge's and tagger's prompt template must exist under ``prompts_dir``
    (``workflow/resources/prompts``).

    Raises
    ------
    ConfigError
        The config does not match its schema (one line per key).
    StartupError
        ``artifacts.path`` unset, a taken name, a missing prompt template.
    """
    if "artifacts" in config:
        path = (config.get("artifacts") or {}).get("path")
        if not path:
            raise StartupError("config artifacts.path is not set: give the bundle's folder (make paper "
                               "ARTIFACTS=/path/to/bundle, or --config 'artifacts={path: /path/to/bundle}'); "
                               "make bundle writes one")
        study = bundle_config(path)
        config.clear()
        config.update(study)
        _merge(config, {k: v for k, v in overrides.items() if k != "artifacts"})
    validate_config(config, source=source, checks=checks)
    problems = name_clashes(config) + missing_prompts(config, prompts_dir)
    if problems:
        raise StartupError("\n".join(problems))
    return config


def _merge(config: dict, overrides: dict) -> None:
    """``overrides`` over ``config``, nested mappings merged key by key (as Snakemake's ``--config``)."""
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            _merge(config[key], value)
        else:
            config[key] = value


def name_clashes(config: dict) -> list[str]:
    """Imported systems named like a configured system or a reserved one, each a line naming the key."""
    systems = config.get("systems") or {}
    return [f"config imported_systems.{name}: the name is taken (a configured system, or one of "
            f"{', '.join(RESERVED_SYSTEMS)}); give the imported system another name"
            for name in sorted(config.get("imported_systems") or {})
            if name in systems or name in RESERVED_SYSTEMS]


def missing_prompts(config: dict, prompts_dir) -> list[str]:
    """Systems, judges and taggers whose prompt template is not a file of ``prompts_dir``, a line each."""
    prompts_dir = Path(prompts_dir)
    entries = [(f"systems.{name}", "completion", entry) for name, entry in (config.get("systems") or {}).items()]
    for stage, group, folder in (("judging", "judges", "judge"), ("tagging", "taggers", "tagging")):
        entries += [(f"{stage}.{group}.{name}", folder, entry)
                    for name, entry in ((config.get(stage) or {}).get(group) or {}).items()]
    return [f"config {key}.prompt: no template {entry['prompt']!r} "
            f"(expected {prompts_dir / folder / (entry['prompt'] + '.md')})"
            for key, folder, entry in entries if not (prompts_dir / folder / f"{entry['prompt']}.md").is_file()]
