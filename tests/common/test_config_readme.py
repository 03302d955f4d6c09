"""config/README.md cannot drift from the config schema: every key it documents is a key of
workflow/schemas/config.schema.yaml, every default it states is the schema's, and every key of the schema is
documented (a default is said once, in the schema; the README only repeats it, checked)."""

import re

import yaml

from heart.common.config import _config_schema
from support import REPO

README = REPO / "config" / "README.md"
#: defaults the README words in prose where the schema's value is too long to read (a URL, a hash, a list),
#: or is null meaning something the reader needs said
PROSE = {
    "release.regular.url": "the upstream files at pinned commits",
    "release.adversarial.url": "the upstream files at pinned commits",
    "release.regular.sha256": "the release's hashes", "release.adversarial.sha256": "the release's hashes",
    "imported_systems.<name>.family": "the name", "adversarial_items.profiles": "all four",
}
NO_DEFAULT = ("—", "")


def node_at(parts: list[str]) -> dict | None:
    node = _config_schema()
    for part in parts:
        if part.startswith("<") and part.endswith(">"):
            node = node.get("additionalProperties")
        else:
            node = (node.get("properties") or {}).get(part)
        if not isinstance(node, dict):
            return None
    return node


def documented(text: str):
    """(dotted key, the README's default cell or None) of every key row of every key table, and every
    section heading with no table (``### `simulated` ``)."""
    section, header = None, None
    for line in text.splitlines():
        heading = re.match(r"^### `([^`]+)`", line)
        if heading:
            section, header = heading.group(1), None
            yield section, None
            continue
        if line.startswith("## "):
            section = None
        if not (section and line.startswith("|")):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if header is None:
            header = [c.lower() for c in cells]
        elif not set(line) <= set("|-: "):
            row = dict(zip(header, cells))
            keys = re.findall(r"`([^`]+)`", row["key"])
            defaults = row["default"].split(" / ") if "default" in row else [None] * len(keys)
            if len(defaults) != len(keys):
                defaults = [row["default"]] * len(keys)
            for key, default in zip(keys, defaults):
                yield f"{section}.{key}", None if default is None else default.strip()


def default_problem(key: str, node: dict, cell: str) -> str | None:
    if key in PROSE:
        return None if cell == PROSE[key] else f"{key}: README default {cell!r}, expected the prose {PROSE[key]!r}"
    if cell in NO_DEFAULT:
        return f"{key}: README says no default, the schema's is {node['default']!r}" if "default" in node else None
    try:
        value = yaml.safe_load(cell.strip("`"))
    except yaml.YAMLError:
        return f"{key}: README default {cell!r} is not a value"
    if node.get("default", "<none>") != value:
        return f"{key}: README default {cell!r}, the schema's {node.get('default', '<none>')!r}"
    return None


def schema_keys(node: dict, path=()):
    for name, sub in (node.get("properties") or {}).items():
        yield ".".join((*path, name))
        yield from schema_keys(sub, (*path, name))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("properties"):
        yield from schema_keys(extra, (*path, "<name>"))


def test_every_documented_key_is_the_schemas_with_the_schemas_default():
    problems = []
    for key, cell in documented(README.read_text()):
        node = node_at(key.split("."))
        if node is None:
            problems.append(f"{key}: not a key of the schema")
        elif cell is not None:
            problems.append(default_problem(key, node, cell))
    assert [p for p in problems if p] == []


def test_every_key_of_the_schema_is_documented():
    """A key counts as documented when it, an object holding it (``params``, ``pair_sample``) or a key inside it
    (``models.<name>.model``) has a row."""
    keys = {key for key, _ in documented(README.read_text())}
    missing = [k for k in schema_keys(_config_schema())
               if not any(k == d or k.startswith(d + ".") or d.startswith(k + ".") for d in keys)]
    assert missing == []


def test_the_check_sees_a_drifted_default_and_an_unknown_key():
    text = ("### `stats` — x\n| key | default | meaning |\n|---|---|---|\n| `bt_alpha` | 0.02 | r |\n"
            "| `nope` | 1 | m |\n")
    found = {key: default_problem(key, node_at(key.split(".")), cell) if node_at(key.split(".")) else "unknown"
             for key, cell in documented(text) if cell is not None}
    assert found == {"stats.bt_alpha": "stats.bt_alpha: README default '0.02', the schema's 0.01",
                     "stats.nope": "unknown"}
