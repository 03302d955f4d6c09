"""A bundle checked before anything runs from it (``python -m heart.bundle check <folder>``, ``make check-bundle
ARTIFACTS=<folder>``, and first in ``make paper``): the manifest and the files the study asks for
(:func:`heart.bundle.load.run_config`), every table against its schema and the ids of the others, and the
cross-references no schema holds -- pairs to completions, verdicts to pairs (once per shown order), human
ratings to pairs (a rater once per shown pair), tags to completions. The first problem stops it, named by file,
row and field; a clean bundle gets a summary of what it holds and of what the outputs will say is absent, and
why.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from heart.bundle import load
from heart.completions import imported


def _completions(folder: Path, items: pd.DataFrame) -> pd.DataFrame:
    """Every completion the bundle holds, as (item_id, system, contributor_id): the models' (completions.parquet),
    the dataset's reply where its item has one, the writers' (human_completions.jsonl, if listed)."""
    models = pd.read_parquet(folder / "completions.parquet")
    models = models.reindex(columns=["item_id", "system", "contributor_id"])  # contributor_id: optional
    original = items.loc[items["original_reply"].notna(), ["item_id"]].assign(system="original")
    parts = [models, original.assign(contributor_id=None)]
    human = folder / "human_completions.jsonl"
    if human.is_file():
        writers, _ = imported.import_humans(human, items)  # as rule human_completions reads it (violations out)
        parts.append(writers[["item_id", "contributor_id"]].assign(system="human"))
    return pd.concat(parts, ignore_index=True)


def check(folder) -> dict:
    """Check bundle ``folder`` (raises :class:`heart.bundle.load.BundleError` at the first problem) and return
    what it holds: counts per table, verdicts per judge and shown order, and the absent parts with why."""
    folder = Path(folder).resolve()
    found = load.manifest(folder)  # every file's sha256, once
    config, files = load.run_config(folder, found), set(found["files"])
    items = load.table(folder / "items.parquet", "items")
    completions = _completions(folder, items)
    unknown = ~completions["item_id"].isin(set(items["item_id"]))
    if unknown.any():
        raise load.BundleError(f"{folder / 'completions.parquet'}: item_id {completions['item_id'][unknown].iloc[0]!r} "
                               f"is not in items.parquet ({int(unknown.sum())} such completions)")
    pairs = load.table(folder / "pairs.parquet", "pairs", known={"item_id": items["item_id"]},
                       check=lambda p: load.check_pairs(folder / "pairs.parquet", p, completions))
    summary = {"items": items["subset"].value_counts().to_dict(),
               "systems": sorted(set(completions["system"])), "pairs": len(pairs), "verdicts": {}, "absent": {}}
    if "llm_verdicts.parquet" in files:
        path = folder / "llm_verdicts.parquet"
        verdicts = load.table(path, "judge_verdicts", known={"pair_id": pairs["pair_id"]},
                              check=lambda v: load.check_verdicts(path, v, pairs))
        summary["verdicts"] = {f"{j} {o}": int(n) for (j, o), n in
                               verdicts.groupby(["judge", verdicts["order"].fillna("order not known")]).size().items()}
    if "judge_checks.parquet" in files:
        path = folder / "judge_checks.parquet"
        checks = load.table(path, "judge_verdicts", check=lambda v: load.check_verdicts(path, v))
        summary["quality_check_verdicts"] = len(checks)
    if "strategy_tags.parquet" in files:
        path = folder / "strategy_tags.parquet"
        tags = load.table(path, "strategy_tags", known={"item_id": items["item_id"]},
                          check=lambda t: load.check_tags(path, t, completions))
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
             f"pairs: {summary['pairs']}"]
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
