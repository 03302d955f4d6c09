"""A bundle checked before anything runs from it (``python -m heart.bundle check <folder>``, ``make check-bundle
ARTIFACTS=<folder>``, and first in ``make paper``): the manifest and the files the study asks for
(:func:`heart.bundle.load.run_config`), every table against its schema and the ids of the others, and the
cross-references no schema holds -- pairs to completions, verdicts to pairs (once per shown order), human
ratings to pairs (a rater once per shown pair), tags to completions. The first problem stops it, named by file,
row and field; a clean bundle gets a summary of what it holds and of what the outputs will say is absent, and
why.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd

from heart.bundle import load
from heart.common.config import ConfigError, validate_config
from heart.common.records import RecordError, record_label
from heart.completions import imported


def _completions(folder: Path, parts: dict, items: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Every completion the bundle holds, as (item_id, system, contributor_id), read as the run reads them: each
    imported system's rows of the completions file (rule import_completions; a row it would leave out is an
    error here), the dataset's reply where its item has one, the writers' (human_completions.jsonl, if listed)."""
    path = parts["completions"][0]
    tables = []
    for system in sorted(config.get("imported_systems") or {}):
        try:
            table, violations = imported.import_system(path, items, system)
        except (RecordError, imported.CompletionImportError) as exc:
            raise load.BundleError(str(exc)) from None
        if len(violations):
            v = violations.iloc[0]
            raise load.BundleError(f"{path}, {record_label(path, v['line'])}: system {system!r}, item "
                                   f"{v['item_id']!r}: {v['problem']} ({len(violations)} such rows)")
        tables.append(table[["item_id", "system", "contributor_id"]])
    original = items.loc[items["original_reply"].notna(), ["item_id"]].assign(system="original")
    parts_ = [*tables, original.assign(contributor_id=None)]
    human = folder / "human_completions.jsonl"
    if human.is_file():
        writers, _ = imported.import_humans(human, items)  # as rule human_completions reads it (violations out)
        parts_.append(writers[["item_id", "contributor_id"]].assign(system="human"))
    return pd.concat(parts_, ignore_index=True)


def check(folder) -> dict:
    """Check bundle ``folder`` (raises :class:`heart.bundle.load.BundleError` at the first problem) and return
    what it holds: counts per table, verdicts per judge and shown order, and the absent parts with why."""
    folder = Path(folder).resolve()
    found = load.manifest(folder)  # every file's sha256, once
    config, files = load.run_config(folder, found), set(found["files"])
    # the study's settings as the run reads them: checked against the schema, its defaults filled in
    try:
        study = validate_config(copy.deepcopy(config), source=str(folder / "study.yaml"))
    except ConfigError as exc:
        raise load.BundleError(str(exc)) from None
    parts = load.parts(folder)
    items = load.read_items(parts["items"][0])
    completions = load.with_withheld(_completions(folder, parts, items, config), (parts["withheld"] or [None])[0])
    verdicts_file = (parts["llm_verdicts"] or [None])[0]
    pairs = load.read_pairs(items, completions, pairs_path=(parts["pairs"] or [None])[0],
                            verdicts_path=verdicts_file, ratings_path=(parts["human_judgments"] or [None])[0])
    summary = {"items": items["subset"].value_counts().to_dict(), "systems": sorted(set(completions["system"])),
               "pairs": len(pairs), "pairs_from": "pairs.parquet" if parts["pairs"] else "derived from the verdicts "
               "and ratings", "verdicts": {}, "absent": {}}
    if verdicts_file:
        verdicts = load.read_verdicts(verdicts_file, items, pairs, study)
        summary["verdicts"] = {f"{j} {o}": int(n) for (j, o), n in
                               verdicts.groupby(["judge", verdicts["order"].fillna("order not known")]).size().items()}
    if "judge_checks.parquet" in files:
        path = folder / "judge_checks.parquet"
        checks = load.table(path, "judge_verdicts", check=lambda v: load.check_verdicts(path, v))
        summary["quality_check_verdicts"] = len(checks)
    if parts["strategy_tags"]:
        tags = load.read_tags(parts["strategy_tags"][0], items, completions)
        summary["tags"] = tags.groupby("tagger").size().to_dict()
    if "human_judgments.jsonl" in files:
        summary["human_ratings"] = load.check_ratings(folder / "human_judgments.jsonl", items, pairs)
    absent = {
        "human completions": ("human_completions.jsonl", "no human writer's reply: Best Human and every human "
                              "row say absent"),
        "human ratings": ("human_judgments.jsonl", "no human judgment: agreement with people and the human "
                          "columns of the judge board say absent"),
        "strategy spot-check labels": ("strategy_labels.jsonl", "no human label: the taggers' F1 says absent"),
    }
    summary["absent"] = {what: why for what, (name, why) in absent.items() if name not in files}
    # the study's settings as written: a key left out has its default
    if not (config.get("judging") or {}).get("judges"):
        summary["absent"]["LLM verdicts"] = "the study names no LLM judge (judging.judges)"
    elif not load.qc_kinds(config):
        summary["absent"]["judge quality checks"] = "the judges ran none (judging.qc.kinds: [] or an empty table)"
    if not (config.get("tagging") or {}).get("taggers"):
        summary["absent"]["strategy tags"] = "the study names no tagger (tagging.taggers)"
    elif not sum(summary.get("tags", {}).values()):
        summary["absent"]["strategy tags"] = "strategy_tags.parquet holds no row: no strategy statistic to compute"
    return summary


def describe(summary: dict) -> str:
    """The summary as the lines ``check`` prints."""
    lines = [f"items: {', '.join(f'{n} {s}' for s, n in sorted(summary['items'].items()))}",
             f"systems ({len(summary['systems'])}): {', '.join(summary['systems'])}",
             f"pairs: {summary['pairs']} ({summary['pairs_from']})"]
    lines += [f"verdicts {key}: {n}" for key, n in sorted(summary["verdicts"].items())]
    if "quality_check_verdicts" in summary:
        lines.append(f"quality-check verdicts: {summary['quality_check_verdicts']}")
    lines += [f"tags by {tagger}: {n}" for tagger, n in sorted(summary.get("tags", {}).items())]
    if "human_ratings" in summary:
        lines.append(f"human ratings: {summary['human_ratings']} (quality-check rows aside)")
    lines += [f"absent: {what} -- {why}" for what, why in summary["absent"].items()]
    return "\n".join(lines)


def write_manifest(folder) -> dict:
    """Write ``manifest.json`` for a bundle folder made by hand: every bundle file in it (names of
    :data:`heart.bundle.export.FILES`; other files are left out and named) with its sha256, bytes, rows
    (Parquet: from its footer; JSON Lines: its non-empty lines) and what it holds. An existing manifest is
    replaced; the label stays as it was (None for a new one). Returns the manifest, with ``not_listed``: the
    folder's other files (not written to it)."""
    import json

    from heart.bundle.export import FILES, FORMAT
    from heart.common.atomic import atomic_path, sha256_file

    folder = Path(folder)
    if not folder.is_dir():
        raise load.BundleError(f"{folder}: not a folder")
    old = folder / "manifest.json"
    label = json.loads(old.read_text(encoding="utf-8")).get("label") if old.is_file() else None
    manifest = {"format": FORMAT, "label": label, "files": {}}
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name in FILES):
        if path.suffix == ".parquet":
            rows = load._rows(path)
        elif path.suffix == ".jsonl":
            rows = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
        else:
            rows = None
        manifest["files"][path.name] = {"sha256": sha256_file(path), "bytes": path.stat().st_size, "rows": rows,
                                        "what": FILES[path.name]}
    with atomic_path(old) as tmp:
        Path(tmp).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    others = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name not in FILES
                    and p.name not in ("manifest.json", "README.md"))
    return {**manifest, "not_listed": others}
