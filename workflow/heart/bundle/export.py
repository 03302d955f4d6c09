"""A run's artifacts as one folder (rule export_bundle; ``make bundle``): the data release of the paper's §9.13.

What goes in (``FILES``; the folder's README, :mod:`heart.bundle.datasheet`, says it to a reader):

* the items (``items.parquet``, the workflow's item table: history, release key, the dataset's reply);
* every model system's completions with TTFT, latency and cost where known (``completions.parquet``, the
  format of ``imported_systems``), the human completions (``human_completions.jsonl``, the human file's);
* the pairs (``pairs.parquet``), every LLM verdict per pair and shown order with its axis marks and
  rationale (``llm_verdicts.parquet``), and the judges' known-answer quality checks
  (``judge_checks.parquet``), as the workflow's own verdict tables; the verdicts also in the public
  judgment format (``llm_verdicts.jsonl``), which ``config/analysis.yaml`` re-analyses on its own;
* every human rating (``human_judgments.jsonl``) and judgment made elsewhere (``imported_judgments.jsonl``),
  the strategy tags (``strategy_tags.parquet``) and spot-check labels (``strategy_labels.jsonl``);
* the model metadata (``models.csv``), the study's settings (``study.yaml``: what ``make paper`` reads),
  and ``manifest.json``: per file its sha256, size and rows.

Writers and raters are pseudonymised (:mod:`heart.bundle.pseudonyms`) in every file, and the pair ids that
were made from a writer's id are made again from the pseudonym. The folder is built beside its place and
moved there whole: a bundle is complete or absent.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from heart.bundle import datasheet, pseudonyms
from heart.common import records, tableio
from heart.common.atomic import sha256_file
from heart.common.vocabulary import AXIS_COLUMNS
from heart.completions.imported import HUMAN_COLUMNS, IMPORTED_NUMBERS
from heart.completions.safety_review import completion_keys, touching, without_originals
from heart.judging import human_judgments, judgment_import, pairs as pairs_mod
from heart.tagging.spot_checks import SPOT_CHECK_OPTIONAL, SPOT_CHECK_REQUIRED

FORMAT = "heart-bundle/1"
#: file -> what it holds (the manifest and the datasheet say it; a file the run has no data for is left out)
FILES = {
    "items.parquet": "the evaluation items (workflow/schemas/tables/items.schema.yaml)",
    "items.jsonl": "the evaluation items in the public format: subset, history, key, the dataset's reply "
                   "(docs/bundle-format.md; a bundle holds this or items.parquet)",
    "completions.parquet": "every model system's completions: item_id, system, model, text, ttft_s, latency_s, "
                           "cost_usd (the imported_systems format, resources/imported/README.md)",
    "completions.jsonl": "the same, as JSON Lines (a bundle holds this or completions.parquet)",
    "human_completions.jsonl": "human completions: item_id, contributor_id (pseudonymous writer), text, ... "
                               "(the human completions file, resources/human/README.md)",
    "pairs.parquet": "the compared pairs of completions (pairs.schema.yaml; optional: derived from the verdicts "
                     "and ratings where absent)",
    "llm_verdicts.parquet": "every LLM judge's verdict per pair and shown order: winner, strength, signed axis "
                            "marks, rationale, the answer as received (judge_verdicts.schema.yaml)",
    "llm_verdicts.jsonl": "the same verdicts in the public judgment format (resources/imported/README.md: item, "
                          "systems, judge, winner, order, strength, axis marks a/b/tie, rationale), which "
                          "config/analysis.yaml re-analyses on its own; unparsed answers left out",
    "judge_checks.parquet": "every LLM judge's verdicts on the known-answer quality checks, both orders "
                            "(judge_verdicts.schema.yaml)",
    "human_judgments.jsonl": "every human rating: rater_id (pseudonymous), item_id, shown_a, shown_b, choice 1-5, "
                             "seconds_spent, ... (the human judgments file, resources/human/README.md)",
    "imported_judgments.jsonl": "pairwise judgments the run imported from elsewhere (resources/imported/README.md)",
    "strategy_tags.parquet": "every completion's 15-strategy tags by each LLM tagger (strategy_tags.schema.yaml)",
    "strategy_tags.jsonl": "the tags in the public format: item_id, system, contributor_id, tagger, strategy, label, "
                           "probability, evidence (docs/bundle-format.md)",
    "strategy_labels.jsonl": "the human spot-check labels of strategies (resources/human/README.md)",
    "models.csv": "model metadata: family, the paper's Elo and win rate, Artificial Analysis index, TTFT "
                  "(workflow/resources/external/README.md)",
    "withheld.jsonl": "the completions whose text the study left out of the bundle (a confirmed safety flag, "
                      "completions.confirmed_flags: bundle): item_id, system, contributor_id, reason; their pairs and "
                      "verdicts stay, the verdicts' rationales and the tags' evidence (which may quote them) are empty",
    "study.yaml": "the study's settings: systems, judges, taggers, judging design, human protocol, statistics and "
                  "figures (what make paper ARTIFACTS=<folder> runs with)",
}
#: how each of a run's human files is read, as the workflow's own readers read it: columns required and
#: optional, whether other columns may come along, the identifier columns (normalised the same way)
_HUMAN_FORMATS = {
    "human_completions": (HUMAN_COLUMNS, (), True, ("item_id", "contributor_id")),
    "human_judgments": (human_judgments.REQUIRED, human_judgments.OPTIONAL, False,
                        ("rater_id", "item_id", ("shown_a", "shown_b"), "pair_id")),
    "strategy_labels": (SPOT_CHECK_REQUIRED, SPOT_CHECK_OPTIONAL, False,
                        ("item_id", "system", "contributor_id", "strategy")),
    "imported_judgments": (judgment_import.REQUIRED, judgment_import.OPTIONAL, False, judgment_import.ID_GROUPS),
}


def _read_human(files: dict) -> dict[str, pd.DataFrame]:
    """Each human file the run has (``files``: name -> path or None), read once, every value as text."""
    tables = {}
    for name, path in files.items():
        if path:
            required, optional, extra, ids = _HUMAN_FORMATS[name]
            tables[name] = records.read_records(path, required, optional, allow_extra=extra, ids=ids).drop(
                columns="line")
    return tables


def _human_raters(imported: pd.DataFrame) -> pd.Series:
    """The human rows of imported judgments (judge_kind "human", spaces around it allowed)."""
    return imported["judge_kind"].str.strip().eq("human")


def _write_jsonl(frame: pd.DataFrame, path: Path) -> None:
    """One JSON object per row; an empty field is left out (not given stays not given)."""
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for row in frame.to_dict("records"):
            out.write(json.dumps({k: v for k, v in row.items() if v not in ("", None)}, ensure_ascii=False) + "\n")


def _public_completions(completions: pd.DataFrame, writers: dict) -> pd.DataFrame:
    model = completions[completions["source"].eq("model")]
    columns = {"item_id": pa.string(), "system": pa.string(), "model": pa.string(), "text": pa.string(),
               **{c: pa.float64() for c in IMPORTED_NUMBERS}}
    if model["contributor_id"].notna().any():  # an imported system with several contributors per item
        columns["contributor_id"] = pa.string()   # (the pairs name them: the bundle must too)
        model = model.assign(contributor_id=pseudonyms.rename(model["contributor_id"], writers))
    out = model.reindex(columns=list(columns)).sort_values(["system", "item_id"], ignore_index=True)
    return pa.Table.from_pandas(out, schema=pa.schema(columns), preserve_index=False)


def public_verdicts(verdicts: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Per-order verdicts (judge_verdicts rows, their pairs) in the public judgment format: one record per
    parsed verdict, ``winner`` a/b of the pair's systems, ``strength`` |signed|, each axis a/b/tie by the
    sign of its mark (empty where unmarked). Axis strengths and letter margins have no column there."""
    v = verdicts[verdicts["parse_ok"] & verdicts["signed"].notna()].merge(pairs, on="pair_id", how="inner")
    signed = v["signed"].astype(int)
    out = pd.DataFrame({"item": v["item_id"], "conversation": v["conversation_id"], "subset": v["subset"],
                        "system_a": v["system_a"], "contributor_a": v["contributor_a"],
                        "system_b": v["system_b"], "contributor_b": v["contributor_b"], "judge": v["judge"],
                        "judge_kind": "llm", "winner": np.where(signed > 0, "a", np.where(signed < 0, "b", "tie")),
                        "order": v["order"], "strength": signed.abs().where(signed != 0).astype("Int64"),
                        "rationale": v["rationale"]})
    for col in AXIS_COLUMNS:
        mark = pd.to_numeric(v[col], errors="coerce")
        out[col] = np.where(mark > 0, "a", np.where(mark < 0, "b", np.where(mark == 0, "tie", None)))
    return out.astype(object).where(out.notna(), None)


def _people(completions, pairs, tags, human: dict) -> tuple[dict, dict]:
    """The writer and rater pseudonyms: every contributor id and rater id the run's tables and human files
    (:func:`_read_human`) hold."""
    writers = [*completions["contributor_id"], *pairs["contributor_a"], *pairs["contributor_b"],
               *tags["contributor_id"]]
    raters = []
    if "human_completions" in human:
        writers += human["human_completions"]["contributor_id"].tolist()
    if "human_judgments" in human:
        rated = human["human_judgments"]
        raters += rated["rater_id"].tolist()
        writers += [ref.partition("#")[2] for ref in [*rated["shown_a"], *rated["shown_b"]] if "#" in ref]
    if "strategy_labels" in human and "contributor_id" in human["strategy_labels"]:
        writers += human["strategy_labels"]["contributor_id"].tolist()
    if "imported_judgments" in human:
        imported = human["imported_judgments"]
        writers += [v for c in ("contributor_a", "contributor_b") if c in imported for v in imported[c]]
        raters += imported.loc[_human_raters(imported), "judge"].str.removeprefix("human:").tolist()
    return pseudonyms.mapping(writers, "writer"), pseudonyms.mapping(raters, "rater")


def _renamed_pairs(pairs: pd.DataFrame, writers: dict) -> tuple[pd.DataFrame, dict]:
    out = pairs.copy()
    for side in "ab":
        out[f"contributor_{side}"] = pseudonyms.rename(out[f"contributor_{side}"], writers)
    out["pair_id"] = [pairs_mod.pair_id(r.item_id, pairs_mod.completion_ref(r.system_a, r.contributor_a),
                                        pairs_mod.completion_ref(r.system_b, r.contributor_b))
                      for r in out.itertuples()]
    return out, dict(zip(pairs["pair_id"], out["pair_id"]))


def write(folder, *, items: pd.DataFrame, completions: pd.DataFrame, pairs: pd.DataFrame, verdicts: pd.DataFrame,
          checks: pd.DataFrame, tags: pd.DataFrame, files: dict, models_csv, study: dict,
          provenance: dict | None = None, withheld=frozenset()) -> dict:
    """Write the bundle to ``folder`` (which must not exist) and return its manifest.

    ``files`` maps ``human_completions``, ``human_judgments``, ``strategy_labels`` and ``imported_judgments``
    to the run's file, or to None where the run has none (the bundle then has none: absent stays absent).
    ``study`` is the study's settings (:func:`heart.bundle.study.study_settings` of the run's config).
    ``withheld``: the (item_id, system, contributor_id or "") of completions whose text stays out of the bundle
    (:func:`withhold`).
    """
    folder = Path(folder)
    if folder.exists():
        raise FileExistsError(f"{folder} exists: remove it, or export to another folder")
    human = _read_human(files)
    withheld_rows = pd.DataFrame(sorted(withheld), columns=["item_id", "system", "contributor_id"])
    if withheld:
        items, completions, verdicts, tags, human = withhold(withheld, items, completions, pairs, verdicts, tags, human)
    writers, raters = _people(completions, pairs, tags, human)
    pairs_out, pair_ids = _renamed_pairs(pairs, writers)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        rows = {}
        tableio.write_table(items, tmp / "items.parquet", "items", provenance)
        public = _public_completions(completions, writers)
        pq.write_table(public, tmp / "completions.parquet")
        tableio.write_table(pairs_out, tmp / "pairs.parquet", "pairs", provenance)
        v = verdicts.assign(pair_id=verdicts["pair_id"].map(pair_ids),
                            shown_a=verdicts["shown_a"].map(lambda r: pseudonyms.rename_ref(r, writers)))
        tableio.write_table(v, tmp / "llm_verdicts.parquet", "judge_verdicts", provenance)
        public_view = public_verdicts(v, pairs_out)
        _write_jsonl(public_view, tmp / "llm_verdicts.jsonl")
        tableio.write_table(checks, tmp / "judge_checks.parquet", "judge_verdicts", provenance)
        t = tags.assign(contributor_id=pseudonyms.rename(tags["contributor_id"], writers))
        tableio.write_table(t, tmp / "strategy_tags.parquet", "strategy_tags", provenance)
        rows.update({"items.parquet": len(items), "completions.parquet": public.num_rows,
                     "pairs.parquet": len(pairs_out), "llm_verdicts.parquet": len(v),
                     "llm_verdicts.jsonl": len(public_view),
                     "judge_checks.parquet": len(checks), "strategy_tags.parquet": len(t)})
        rows.update(_human_files(tmp, human, writers, raters, pair_ids))
        if len(withheld_rows):
            renamed = pseudonyms.rename(withheld_rows["contributor_id"].replace("", None), writers)
            _write_jsonl(withheld_rows.assign(contributor_id=renamed.astype(object).where(renamed.notna(), None),
                                              reason="confirmed safety flag (completions.confirmed_flags: bundle)"),
                         tmp / "withheld.jsonl")
            rows["withheld.jsonl"] = len(withheld_rows)
        shutil.copyfile(models_csv, tmp / "models.csv")
        (tmp / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=True, allow_unicode=True), encoding="utf-8")
        counts = {"items": len(items), "model_systems": int(public.column("system").unique().__len__()),
                  "pairs": len(pairs_out), "llm_judges": int(verdicts["judge"].nunique()),
                  "llm_verdicts": len(v), "writers": len(writers), "raters": len(raters),
                  "taggers": int(tags["tagger"].nunique()), "withheld_completions": len(withheld_rows)}
        manifest = {"format": FORMAT, "label": study.get("simulated") and "SIMULATED" or None,
                    "counts": counts, "files": {}}
        for name in sorted(p.name for p in tmp.iterdir()):
            manifest["files"][name] = {"sha256": sha256_file(tmp / name), "bytes": (tmp / name).stat().st_size,
                                       "rows": rows.get(name), "what": FILES[name]}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        (tmp / "README.md").write_text(datasheet.text(manifest, study), encoding="utf-8")
        os.chmod(tmp, 0o755)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def withhold(withheld, items, completions, pairs, verdicts, tags, human: dict):
    """The run's tables without the text of the ``withheld`` completions ((item_id, system, contributor or "")):
    their rows left out of the completions and the human completions, a withheld original reply taken off its
    item, and whatever may quote them emptied: the rationales of every verdict and rating on their pairs, the
    evidence of their strategy tags. Pairs, verdicts and tags stay: every number from the judgments is the
    same, and what needs the text (lengths, style) is missing for them, never made up."""
    def hit(item_ids, systems, contributors) -> np.ndarray:
        return np.array([k in withheld for k in completion_keys(item_ids, systems, contributors)], dtype=bool)

    keep = ~hit(completions["item_id"], completions["system"], completions["contributor_id"])
    touched = set(pairs.loc[touching(pairs, withheld), "pair_id"])
    verdicts = verdicts.assign(rationale=verdicts["rationale"].where(~verdicts["pair_id"].isin(touched), None))
    tags = tags.assign(evidence=tags["evidence"].where(~hit(tags["item_id"], tags["system"], tags["contributor_id"]),
                                                       None))
    human = dict(human)
    if "human_completions" in human:
        h = human["human_completions"]
        human["human_completions"] = h[~hit(h["item_id"], ["human"] * len(h), h["contributor_id"])]
    if "human_judgments" in human:  # a rating names its completions as <system> or <system>#<contributor>
        h = human["human_judgments"]
        quoted = np.zeros(len(h), dtype=bool)
        for col in ("shown_a", "shown_b"):
            refs = [ref.partition("#") for ref in h[col]]
            quoted |= hit(h["item_id"], [r[0] for r in refs], [r[2] for r in refs])
        human["human_judgments"] = h.assign(rationale=h["rationale"].mask(quoted, ""))
    return without_originals(items, withheld), completions[keep], verdicts, tags, human


def _human_files(tmp: Path, human: dict, writers: dict, raters: dict, pair_ids: dict) -> dict:
    """The run's human files (:func:`_read_human`), pseudonymised, as JSON Lines (the importers' format);
    returns the rows per file."""
    rename = {  # what each file names a writer, a rater or a pair by
        "human_completions": lambda t: t.assign(contributor_id=pseudonyms.rename(t["contributor_id"], writers)),
        "human_judgments": lambda t: t.assign(
            rater_id=pseudonyms.rename(t["rater_id"], raters),
            shown_a=t["shown_a"].map(lambda r: pseudonyms.rename_ref(r, writers)),
            shown_b=t["shown_b"].map(lambda r: pseudonyms.rename_ref(r, writers)),
            # the store's export names the pair it showed
            **({"pair_id": t["pair_id"].map(lambda p: pair_ids.get(p, p))} if "pair_id" in t else {})),
        "strategy_labels": lambda t: t.assign(**(
            {"contributor_id": pseudonyms.rename(t["contributor_id"], writers)} if "contributor_id" in t else {})),
        "imported_judgments": lambda t: t.assign(
            judge=[raters.get(j.removeprefix("human:"), j) if is_human else j
                   for j, is_human in zip(t["judge"], _human_raters(t))],
            **{c: pseudonyms.rename(t[c], writers) for c in ("contributor_a", "contributor_b") if c in t}),
    }
    rows = {}
    for name, table in human.items():
        _write_jsonl(rename[name](table), tmp / f"{name}.jsonl")
        rows[f"{name}.jsonl"] = len(table)
    return rows
