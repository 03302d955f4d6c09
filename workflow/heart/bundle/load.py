"""A bundle read back (``make paper ARTIFACTS=<folder>``, ``config/artifacts.yaml``): checked against its
manifest, its study settings made the run's config, its tables made the workflow's own.

In such a run no model is called: every system's completions are imported (``imported_systems``, from
``completions.parquet``), the human files are the bundle's, and the rules that would call a judge or a
tagger are replaced by rules that take their tables from the bundle (bundle_items, bundle_pairs,
bundle_verdicts, bundle_checks, bundle_tags). Everything after them -- combining the orders, the human
ratings' quality control, the statistics, figures, tables and the report -- runs as in the study.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from heart.bundle.export import FORMAT
from heart.common import tableio
from heart.common.atomic import sha256_file


class BundleError(ValueError):
    """A bundle that cannot be used: the message names the folder, the file and what to do."""


def manifest(folder) -> dict:
    """The bundle's manifest, after checking that every file it lists is there with its sha256.

    Raises
    ------
    BundleError
        No folder, no or a broken ``manifest.json``, another format, a listed file missing or changed.
    """
    folder = Path(folder)
    path = folder / "manifest.json"
    if not folder.is_dir():
        raise BundleError(f"artifacts: {folder} is not a folder (give the folder a bundle was exported to: "
                          "make paper ARTIFACTS=/path/to/bundle)")
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{path}: cannot be read as a bundle manifest ({exc}); a bundle is made by "
                          "make bundle (rule export_bundle)") from None
    if not isinstance(found, dict) or found.get("format") != FORMAT or not isinstance(found.get("files"), dict):
        raise BundleError(f"{path}: field 'format' is {found.get('format') if isinstance(found, dict) else None!r}; "
                          f"expected {FORMAT!r} with a 'files' object")
    for name, entry in found["files"].items():
        file = folder / name
        if Path(name).name != name or not file.is_file():
            raise BundleError(f"{path}: file {name!r} is listed but {file} is not there; the bundle is incomplete "
                              "(copy it again whole)")
        digest = sha256_file(file)
        if digest != entry.get("sha256"):
            raise BundleError(f"{file}: sha256 is {digest}, the manifest says {entry.get('sha256')} (field "
                              f"'files.{name}.sha256'): the file changed after export; restore it, or export again")
    return found


def run_config(folder) -> dict:
    """The config of a run from bundle ``folder``: its ``study.yaml`` with every system imported from the
    bundle's completions, and the human files, spot-check labels and model metadata its own."""
    folder = Path(folder).resolve()
    found = manifest(folder)
    if "study.yaml" not in found["files"]:
        raise BundleError(f"{folder / 'manifest.json'}: lists no study.yaml (the study's settings)")
    study = yaml.safe_load((folder / "study.yaml").read_text(encoding="utf-8")) or {}
    models = study.get("models", {})
    systems = {name: {"path": str(folder / "completions.parquet"), "family": models.get(s.get("model"), {})
                      .get("family")} for name, s in study.get("systems", {}).items()}
    systems |= {name: {"path": str(folder / "completions.parquet"), "family": s.get("family")}
                for name, s in study.get("imported_systems", {}).items()}
    config = {**study, "artifacts": {"path": str(folder)}, "systems": {}, "imported_systems": systems}
    config["human_completions"] = {**study.get("human_completions", {}),
                                   "path": str(folder / "human_completions.jsonl")}
    config["human_judgments"] = {**study.get("human_judgments", {}), "path": str(folder / "human_judgments.jsonl")}
    config["tagging"] = {**study.get("tagging", {}), "spot_checks": str(folder / "strategy_labels.jsonl")}
    config["imported_judgments"] = {"path": str(folder / "imported_judgments.jsonl")}
    return config


def table(path, name: str, where: dict | None = None, known: dict | None = None) -> pd.DataFrame:
    """Table ``name`` (a workflow schema) from bundle file ``path``, its rows where ``where`` holds
    (column -> value); ``known`` maps a column to the values it may take (pair ids, item ids).

    Raises
    ------
    BundleError
        A column missing or of the wrong type (the schema check names it), or a row whose value in a
        ``known`` column is unknown (named by row and field).
    """
    frame = tableio.read_table(path)
    try:
        tableio.to_arrow(frame, name)
    except tableio.TableSchemaError as exc:
        raise BundleError(f"{path}: {exc}") from None
    for column, value in (where or {}).items():
        frame = frame[frame[column] == value]
    for column, values in (known or {}).items():
        bad = ~frame[column].isin(set(values))
        if bad.any():
            row = int(frame.index[bad.to_numpy()][0])
            raise BundleError(f"{path}, row {row + 1}: field {column!r} is {frame.at[row, column]!r}, which the "
                              f"bundle's other tables do not have ({int(bad.sum())} such rows)")
    return frame.reset_index(drop=True)
