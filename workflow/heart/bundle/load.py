"""A bundle read back (``make paper ARTIFACTS=<folder>``, ``config/artifacts.yaml``): checked against its
manifest, its study settings made the run's config, its tables made the workflow's own.

In such a run no model is called: every system's completions are imported (``imported_systems``, from
``completions.jsonl`` or ``.parquet``), the human files are the bundle's, and the rules that would call a judge
or a tagger are replaced by rules that take their tables from the bundle (bundle_items, bundle_pairs,
bundle_verdicts, bundle_checks, bundle_tags): each part in its public format (:mod:`heart.bundle.public`,
docs/bundle-format.md) or as the workflow's own table, the pairs derived from what was judged where the bundle
has none. Everything after them -- combining the orders, the human
ratings' quality control, the statistics, figures, tables and the report -- runs as in the study.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import yaml

from heart.bundle.export import FILES, FORMAT
from heart.common import tableio
from heart.common.atomic import sha256_file
from heart.common.config import schema_default
from heart.judging.pairs import completion_ref


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
                              f"'files.{name}.sha256'): the file changed after the manifest was written; restore it, "
                              "or export again (a bundle written by hand: python -m heart.bundle check "
                              "--write-manifest <folder>)")
    return found


#: a part of a bundle and the files that may hold it, the one read first first: the workflow's own table (an
#: exported bundle's, exact) or the public format (docs/bundle-format.md); pairs are derived from the verdicts
#: and ratings where a bundle has no pairs.parquet
SLOTS = {
    "items": ("items.parquet", "items.jsonl"),
    "completions": ("completions.parquet", "completions.jsonl"),
    "pairs": ("pairs.parquet",),
    "llm_verdicts": ("llm_verdicts.parquet", "llm_verdicts.jsonl"),
    "judge_checks": ("judge_checks.parquet",),
    "strategy_tags": ("strategy_tags.parquet", "strategy_tags.jsonl"),
    "study": ("study.yaml",),
}
#: the parts every bundle holds, and those its study's settings ask for (setting -> part): a run from a bundle
#: never makes what is missing by calling a model (those rules are not even defined in such a run)
ALWAYS = ("items", "completions", "study")


def pick(listed, slot: str) -> str | None:
    """The file of ``slot`` (:data:`SLOTS`) a bundle whose manifest lists ``listed`` is read from, or None."""
    return next((name for name in SLOTS[slot] if name in listed), None)


def parts(folder) -> dict[str, list[str]]:
    """Part -> [the path it is read from] ([] when the bundle has none) of bundle ``folder``, whose manifest
    the run's start has checked: :data:`SLOTS`, the human ratings (``human_judgments``), the model metadata
    (``models``; the workflow's own where the bundle has none) and the completions whose text the study withheld
    (``withheld``)."""
    folder = Path(folder)
    listed = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["files"]
    out = {slot: [str(folder / name)] if (name := pick(listed, slot)) else [] for slot in SLOTS}
    for name in ("human_judgments.jsonl", "models.csv", "withheld.jsonl"):
        out[name.split(".")[0]] = [str(folder / name)] if name in listed else []
    return out


def qc_kinds(study: dict) -> list:
    """The quality-check kinds of ``study`` (a bundle's study.yaml, or its run config), the schema's default
    where it says none."""
    return ((study.get("judging") or {}).get("qc") or {}).get("kinds", schema_default("judging.qc.kinds"))


def required_files(study: dict) -> dict[str, str]:
    """Part (:data:`SLOTS`) -> the setting of ``study`` (a bundle's study.yaml) that asks for it."""
    need = {slot: "every bundle" for slot in ALWAYS}  # (the message says so for these)
    judges = sorted((study.get("judging") or {}).get("judges") or {})
    if judges:
        need["llm_verdicts"] = f"judging.judges ({', '.join(judges)})"
        kinds = qc_kinds(study)
        if kinds:
            need["judge_checks"] = (f"judging.qc.kinds {list(kinds)} for judging.judges "
                                    f"({', '.join(judges)})")
    taggers = sorted((study.get("tagging") or {}).get("taggers") or {})
    if taggers:
        need["strategy_tags"] = f"tagging.taggers ({', '.join(taggers)})"
    return need


def check_files(folder: Path, found: dict, study: dict) -> None:
    """Every file the study's settings ask for is in the manifest, and every data file in the folder is listed
    (a file left out of the manifest is never read unchecked).

    Raises
    ------
    BundleError
        Naming the file and the setting that asks for it, or the unlisted file.
    """
    listed = set(found["files"])
    for slot, setting in required_files(study).items():
        if pick(listed, slot) is None:
            name = " or ".join(SLOTS[slot])
            why = ("every bundle holds" if slot in ALWAYS else
                   f"the study's {setting} (study.yaml) asks for; a run from a bundle calls no model to make it")
            raise BundleError(f"{folder / 'manifest.json'}: lists no {name}, which {why}. Add it (and list it "
                              "in the manifest: python -m heart.bundle check --write-manifest <folder>; "
                              "docs/bundle-format.md)" + ("" if slot in ALWAYS else
                                                          ", or change the setting in study.yaml"))
    unlisted = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name in FILES and p.name not in listed)
    if unlisted:
        raise BundleError(f"{folder / 'manifest.json'}: {', '.join(unlisted)} in the folder but not listed in the "
                          "manifest (field 'files'): a file is read only with its sha256 checked; list it, or "
                          "remove it")


def run_config(folder, found: dict | None = None) -> dict:
    """The config of a run from bundle ``folder``: its ``study.yaml`` with every system imported from the
    bundle's completions, and the human files, spot-check labels and model metadata its own. ``found``: its
    :func:`manifest`, when the caller has checked it already."""
    folder = Path(folder).resolve()
    found = manifest(folder) if found is None else found
    if "study.yaml" not in found["files"]:
        raise BundleError(f"{folder / 'manifest.json'}: lists no study.yaml (the study's settings)")
    study = yaml.safe_load((folder / "study.yaml").read_text(encoding="utf-8")) or {}
    check_files(folder, found, study)
    models = study.get("models", {})
    completions = str(folder / pick(found["files"], "completions"))
    systems = {name: {"path": completions, "family": models.get(s.get("model"), {}).get("family")}
               for name, s in study.get("systems", {}).items()}
    systems |= {name: {"path": completions, "family": s.get("family")}
                for name, s in study.get("imported_systems", {}).items()}
    config = {**study, "artifacts": {"path": str(folder)}, "systems": {}, "imported_systems": systems}
    config["human_completions"] = {**study.get("human_completions", {}),
                                   "path": str(folder / "human_completions.jsonl")}
    config["human_judgments"] = {**study.get("human_judgments", {}), "path": str(folder / "human_judgments.jsonl")}
    config["tagging"] = {**study.get("tagging", {}), "spot_checks": str(folder / "strategy_labels.jsonl")}
    config["imported_judgments"] = {"path": str(folder / "imported_judgments.jsonl")}
    if "judge_checks.parquet" in found["files"] and not _rows(folder / "judge_checks.parquet"):
        # the study's judges ran no quality check that the bundle holds: the run (its report) says none ran
        config["judging"] = {**study.get("judging", {}), "qc": {**study.get("judging", {}).get("qc", {}), "kinds": []}}
    return config


def _rows(path: Path) -> int:
    """The rows of Parquet file ``path``, from its footer."""
    try:
        return pq.read_metadata(path).num_rows
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise BundleError(f"{path}: cannot be read as a Parquet file ({exc})") from None


def table(path, name: str, where: dict | None = None, known: dict | None = None, check=None) -> pd.DataFrame:
    """Table ``name`` (a workflow schema) from bundle file ``path``, its rows where ``where`` holds
    (column -> value); ``known`` maps a column to the values it may take (pair ids, item ids), and ``check``
    (``check(frame)``, e.g. :func:`check_verdicts`) holds what no schema can. Both see the whole file, so a
    row is named by its place in the file.

    Raises
    ------
    BundleError
        A column missing or of the wrong type (the schema check names it), a row whose value in a ``known``
        column is unknown, or what ``check`` finds (named by row and field).
    """
    frame = tableio.read_table(path)
    try:
        tableio.to_arrow(frame, name)
    except tableio.TableSchemaError as exc:
        raise BundleError(f"{path}: {exc}") from None
    for column, values in (known or {}).items():
        _first_bad(path, frame, ~frame[column].isin(set(values)), column, "not in the bundle's other tables")
    if check is not None:
        check(frame)
    for column, value in (where or {}).items():
        frame = frame[frame[column] == value]
    return frame.reset_index(drop=True)


def _first_bad(path, frame: pd.DataFrame, bad: pd.Series, field: str, why: str) -> None:
    """Raise for the first row of ``frame`` where ``bad`` holds, naming file, row (1-based) and field."""
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise BundleError(f"{path}, row {row + 1}: field {field!r} is {frame[field].iloc[row]!r}: {why} "
                          f"({int(bad.sum())} such rows)")


def with_withheld(completions: pd.DataFrame, path) -> pd.DataFrame:
    """``completions`` and, as rows without text, the completions ``withheld.jsonl`` (``path``; None: none) lists:
    what the bundle's pairs, verdicts and tags may name though their text was left out (a confirmed safety
    flag). Errors name the file, the line and the field."""
    if path is None:
        return completions
    from heart.common import records

    listed = _public(records.read_records, path, ["item_id", "system"], ["contributor_id", "reason"],
                     False, ("item_id", "system", "contributor_id"))
    for row in listed.itertuples():
        for col in ("item_id", "system"):
            if records.is_blank(getattr(row, col)):
                raise BundleError(f"{path}, line {row.line}: field {col!r} is empty")
    rows = listed.assign(contributor_id=listed["contributor_id"].replace("", None), text=None)
    return pd.concat([completions, rows[["item_id", "system", "contributor_id", "text"]]], ignore_index=True)


def _refs(completions: pd.DataFrame) -> set:
    """(item_id, completion reference) of every completion."""
    return set(zip(completions["item_id"], map(completion_ref, completions["system"], completions["contributor_id"])))


def check_pairs(path, pairs: pd.DataFrame, completions: pd.DataFrame) -> None:
    """Every pair's two completions exist for its item: a system nobody wrote (a typo), a writer whose file
    is not in the bundle, the dataset's reply on an item that has none (an adversarial one) are named."""
    have = _refs(completions)
    for side in ("a", "b"):
        refs = pd.Series(list(map(completion_ref, pairs[f"system_{side}"], pairs[f"contributor_{side}"])),
                         index=pairs.index)
        bad = pd.Series([(i, r) not in have for i, r in zip(pairs["item_id"], refs)], index=pairs.index)
        _first_bad(path, pairs, bad, f"system_{side}", "the bundle has no completion of it for the pair's item "
                   "(completions.parquet, human_completions.jsonl; the dataset's reply exists on regular items only)")


def check_verdicts(path, verdicts: pd.DataFrame, pairs: pd.DataFrame | None = None) -> None:
    """Each (pair, judge, shown order) is there at most once (a repeated row would count as a third order);
    with ``pairs``, each verdict shows one of its pair's two systems as A, the one its order says."""
    twice = verdicts["order"].notna() & verdicts.duplicated(["pair_id", "judge", "order"], keep="first")
    _first_bad(path, verdicts, twice, "order", "the same judge's verdict on this pair in this shown order is "
               "already in an earlier row; keep one")
    if pairs is None:
        return
    ref_a = dict(zip(pairs["pair_id"], pairs["system_a"]))  # shown_a names the system (a writer's: "human")
    ref_b = dict(zip(pairs["pair_id"], pairs["system_b"]))
    known = verdicts["shown_a"].notna()
    bad = known & pd.Series([s not in (ref_a.get(p), ref_b.get(p)) for p, s in zip(verdicts["pair_id"],
                                                                                     verdicts["shown_a"])],
                            index=verdicts.index)
    _first_bad(path, verdicts, bad, "shown_a", "not one of its pair's two systems (pairs.parquet)")
    expected = pd.Series([ref_a.get(p) if o == "AB" else ref_b.get(p) if o == "BA" else s
                          for p, o, s in zip(verdicts["pair_id"], verdicts["order"], verdicts["shown_a"])],
                         index=verdicts.index)
    _first_bad(path, verdicts, known & verdicts["order"].notna() & (expected != verdicts["shown_a"]), "order",
               "does not match field 'shown_a' (AB shows the pair's system_a as A)")


def check_tags(path, tags: pd.DataFrame, completions: pd.DataFrame) -> None:
    """Every tag names a completion the bundle holds: its item, system and writer (a tag of a completion that
    is not there, or of the right system on the wrong item, would be counted as that system's strategy)."""
    have = _refs(completions)
    contributors = tags["contributor_id"] if "contributor_id" in tags else pd.Series(None, index=tags.index)
    bad = pd.Series([(i, completion_ref(s, c)) not in have for i, s, c in zip(tags["item_id"], tags["system"],
                                                                               contributors)], index=tags.index)
    _first_bad(path, tags, bad, "system", "the bundle has no such completion for the row's item_id "
               "(completions.parquet, the dataset's reply, human_completions.jsonl)")


def check_ratings(path, items: pd.DataFrame, pairs: pd.DataFrame) -> int:
    """The human ratings file as rule human_judgments reads it (:func:`heart.judging.human_judgments.read`):
    each rating's item (its id or release key) and shown completions name a pair of the bundle, a rater judges
    a shown pair of an item once; quality-check rows (``qc_expected``) are not pairs. Returns the ratings."""
    from heart.judging import human_judgments as hj
    from heart.judging import pairs as pairs_mod

    try:
        table = hj.resolve_items(hj.read(path), items, path)
    except (hj.HumanJudgmentError, ValueError) as exc:
        raise BundleError(str(exc)) from None
    known = set(pairs["pair_id"])
    rated = table[table["qc_expected"].isna() | table["qc_expected"].eq("")]
    for r in rated.itertuples():
        pid = pairs_mod.pair_id(r.item_id, r.shown_a, r.shown_b)
        if pid not in known:
            raise BundleError(f"{path}, line {r.line}: fields 'item_id', 'shown_a', 'shown_b' ({r.item_id}: "
                              f"{r.shown_a} vs {r.shown_b}) name no pair of pairs.parquet (a completion is "
                              "'<system>' or 'human#<contributor_id>'; a typo in a name, or a pair nobody judged)")
        if not pd.isna(r.pair_id) and r.pair_id != pid:
            raise BundleError(f"{path}, line {r.line}: field 'pair_id' is {r.pair_id!r} but item {r.item_id} with "
                              f"{r.shown_a} vs {r.shown_b} is pair {pid}")
    return len(rated)


# --- a bundle's parts as the workflow's tables (rules bundle_items, bundle_pairs, bundle_verdicts, bundle_tags
# and the checker read them the same way) -----------------------------------------------------------------

def _public(call, *args):
    from heart.bundle.public import PublicFormatError
    from heart.common.records import RecordError
    from heart.judging.human_judgments import HumanJudgmentError
    from heart.judging.judgment_import import JudgmentImportError

    try:
        return call(*args)
    except (PublicFormatError, RecordError, HumanJudgmentError, JudgmentImportError) as exc:
        raise BundleError(str(exc)) from None


def read_items(path) -> pd.DataFrame:
    """The bundle's items (``items.parquet``, or ``items.jsonl`` in the public format), checked against the
    items schema."""
    from heart.bundle import public

    path = Path(path)
    if path.suffix == ".parquet":
        return table(path, "items")
    items = _public(public.read_items, path)
    try:
        tableio.to_arrow(items, "items")
    except tableio.TableSchemaError as exc:
        raise BundleError(f"{path}: {exc}") from None
    return items


def read_pairs(items: pd.DataFrame, completions: pd.DataFrame, pairs_path=None, verdicts_path=None,
               ratings_path=None) -> pd.DataFrame:
    """The bundle's pairs: ``pairs.parquet`` where it has one (checked against the completions), else derived
    from what was judged: the LLM verdicts of ``llm_verdicts.jsonl`` and the human ratings (each completion
    they name checked against the bundle's completions first, so a misspelt system names its record)."""
    from heart.bundle import public
    from heart.judging import judgment_import as ji

    if pairs_path is not None:
        return table(pairs_path, "pairs", known={"item_id": items["item_id"]},
                     check=lambda p: check_pairs(pairs_path, p, completions))
    judged = []
    if verdicts_path is not None and Path(verdicts_path).suffix == ".jsonl":
        verdicts = _public(public.read_verdicts, verdicts_path, items)
        _public(ji.check_completions, verdicts[ji.TABLE_COLUMNS], items, completions)
        judged.append(verdicts)
    if ratings_path is not None:
        rated = _public(public.rating_records, ratings_path, items)
        have = _refs(completions)
        for r in rated.itertuples():
            for side in ("a", "b"):
                ref = completion_ref(getattr(r, f"system_{side}"), getattr(r, f"contributor_{side}"))
                if (r.item_id, ref) not in have:
                    raise BundleError(f"{ratings_path}, line {r.line}: field 'shown_{side}' is {ref!r}: the bundle "
                                      f"has no such completion of item {_named(items, r.item_id)} (a completion is "
                                      "'<system>' or 'human#<contributor_id>')")
        judged.append(rated)
    return public.derive_pairs(items, *judged)


def _named(items: pd.DataFrame, item_id: str) -> str:
    """An item as its file names it: its key (and id), else its id."""
    keys = items.set_index("item_id")["release_key"] if "release_key" in items else {}
    key = keys.get(item_id) if len(keys) else None
    return f"{key!r} ({item_id})" if isinstance(key, str) else repr(item_id)


def read_verdicts(path, items: pd.DataFrame, pairs: pd.DataFrame, study: dict | None = None) -> pd.DataFrame:
    """The bundle's LLM verdicts, every judge's (``llm_verdicts.parquet``, or ``llm_verdicts.jsonl`` in the
    public judgment format), each on a pair of ``pairs`` and once per shown order; with ``study`` (the run's
    config, defaults filled), each by one of its judges and, under ``judging.exclude_own_family``, never on a
    pair holding the judge's own family's output (:func:`check_judges`)."""
    from heart.bundle import public

    path = Path(path)
    if path.suffix == ".parquet":
        verdicts = table(path, "judge_verdicts", known={"pair_id": pairs["pair_id"]},
                         check=lambda v: check_verdicts(path, v, pairs))
        if study is not None:
            systems = pairs.set_index("pair_id")[["system_a", "system_b"]]
            named = verdicts[["judge"]].join(systems, on=verdicts["pair_id"])
            check_judges(named, study, [f"{path}, row {k + 1}" for k in range(len(named))])
        return verdicts
    records = _public(public.read_verdicts, path, items)
    if study is not None:
        check_judges(records, study, [f"{r.file}, {r.record}" for r in records.itertuples()])
    verdicts = _public(public.verdict_table, records, items, pairs)
    check_verdicts(path, verdicts, pairs)
    return verdicts


def check_judges(verdicts: pd.DataFrame, study: dict, where: list[str]) -> None:
    """Every verdict (``judge``, ``system_a``, ``system_b``) is by a judge of ``study`` (judging.judges) and,
    under ``judging.exclude_own_family``, on no pair holding its own model family's output (paper §9.6).
    ``where`` names each row (file and line or row)."""
    from heart.judging.material import eligible

    judges = study["judging"]["judges"]
    unknown = ~verdicts["judge"].isin(set(judges))
    if unknown.any():
        k = int(unknown.to_numpy().nonzero()[0][0])
        raise BundleError(f"{where[k]}: field 'judge' is {verdicts['judge'].iloc[k]!r}, not a judge of study.yaml "
                          f"(judging.judges: {', '.join(sorted(judges)) or 'none'}); name it there with its model "
                          f"({int(unknown.sum())} such records)")
    families = {s: c["family"] or s for s, c in study["imported_systems"].items()}
    families |= {s: study["models"][c["model"]]["family"] for s, c in study["systems"].items()}
    families |= {"original": "dataset", "human": "human"}
    exclude = study["judging"]["exclude_own_family"]
    for judge, spec in judges.items():
        family = study["models"].get(spec["model"], {}).get("family")
        mine = verdicts["judge"].eq(judge)
        own = mine & ~eligible(verdicts, family, families, exclude)
        if own.any():
            k = int(own.to_numpy().nonzero()[0][0])
            raise BundleError(f"{where[k]}: judge {judge!r} (family {family!r}) judged a pair holding its own "
                              f"family's output ({verdicts['system_a'].iloc[k]} vs {verdicts['system_b'].iloc[k]}), "
                              "which judging.exclude_own_family (true by default) leaves out; remove those records, "
                              "or set judging.exclude_own_family: false in study.yaml")


def read_tags(path, items: pd.DataFrame, completions: pd.DataFrame) -> pd.DataFrame:
    """The bundle's strategy tags (``strategy_tags.parquet``, or ``.jsonl`` in the public format), each of a
    completion the bundle holds."""
    from heart.bundle import public

    path = Path(path)
    if path.suffix == ".parquet":
        return table(path, "strategy_tags", known={"item_id": items["item_id"]},
                     check=lambda t: check_tags(path, t, completions))
    tags = _public(public.read_tags, path, items)
    check_tags(path, tags, completions)
    return tags
