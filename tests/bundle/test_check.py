"""python -m heart.bundle check: a bundle's files and cross-references checked before a run from it, and what it
holds said (on a SIMULATED bundle of the paper's study shape, 30 items)."""

import json
import shutil

import pytest
import yaml

from heart import WORKFLOW_DIR
from heart.bundle import check, load
from heart.bundle.__main__ import main
from heart.common import tableio
from heart.common.config import validate_config
from heart.simulation import paper_bundle
from heart.stats import external
from heart.tables import paper_comparison
from support import REPO
from support.bundle import relist


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sim")
    config = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    validate_config(config, source="config/paper.yaml")
    truth = paper_comparison.figure4_elo(paper_comparison.load(WORKFLOW_DIR / "resources/paper/headline_numbers.yaml"),
                                         external.load_models())
    paper_bundle.write(tmp / "bundle", config, truth.rename({"best-human": "human"}), tmp, n_items=30)
    return tmp / "bundle"


def _edited(bundle, tmp_path, name, change):
    """A copy of ``bundle`` with table ``name`` changed by ``change`` and the manifest's sha256 updated."""
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    schema = {"pairs.parquet": "pairs", "llm_verdicts.parquet": "judge_verdicts"}[name]
    tableio.write_table(change(tableio.read_table(copy / name)), copy / name, schema)
    relist(copy, name)
    return copy


def test_a_sound_bundle_is_summed_up_with_what_will_be_absent(bundle, capsys):
    summary = check.check(bundle)
    assert summary["items"] == {"regular": 10, "adversarial": 20} and len(summary["systems"]) == 18
    assert set(summary["verdicts"]) == {f"{j}-judge {o}" for j in ("o3", "claude-4.5-sonnet", "gemini-2.5-pro")
                                        for o in ("AB", "BA")}
    # each pair once per judge, in one order, but those holding the judge's own family's output (paper §9.6)
    assert summary["pairs"] < sum(summary["verdicts"].values()) < 3 * summary["pairs"]
    assert set(summary["absent"]) == {"human ratings", "strategy spot-check labels", "judge quality checks",
                                      "strategy tags"}
    assert main(["check", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "a bundle make paper can run" in out and "verdicts o3-judge AB: " in out
    assert "absent: human ratings -- no human judgment" in out


def test_a_misspelt_system_in_a_pair_stops_the_check_with_file_row_and_field(bundle, tmp_path, capsys):
    def typo(pairs):
        pairs.loc[3, "system_b"] = "gpt-6"
        return pairs

    broken = _edited(bundle, tmp_path, "pairs.parquet", typo)
    with pytest.raises(load.BundleError, match=r"pairs.parquet, row 4: field 'system_b' is 'gpt-6'"):
        check.check(broken)
    assert main(["check", str(broken)]) == 1
    assert "row 4: field 'system_b' is 'gpt-6'" in capsys.readouterr().err


def test_a_duplicated_verdict_stops_the_check(bundle, tmp_path):
    import pandas as pd

    broken = _edited(bundle, tmp_path, "llm_verdicts.parquet",
                     lambda v: pd.concat([v, v.iloc[[5]]], ignore_index=True))
    with pytest.raises(load.BundleError, match=r"llm_verdicts.parquet, row \d+: field 'order' is '(AB|BA)': the same "
                                               "judge's verdict on this pair"):
        check.check(broken)


def test_a_study_that_leaves_sections_out_gets_their_defaults(bundle, tmp_path):
    """A hand-written study.yaml need not say what the schema's defaults say (no tagging section, no qc)."""
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    study = yaml.safe_load((copy / "study.yaml").read_text())
    study.pop("tagging", None)
    study["judging"].pop("qc", None)
    (copy / "study.yaml").write_text(yaml.safe_dump(study))
    relist(copy, "study.yaml")
    summary = check.check(copy)
    assert summary["absent"]["strategy tags"] == "the study names no tagger (tagging.taggers)"


def test_an_imported_system_with_its_own_contributors_keeps_them_in_the_bundle():
    """Pairs name an imported system's contributors (pseudonymous); the bundle's completions must too."""
    import pandas as pd

    from heart.bundle import export

    completions = pd.DataFrame({"item_id": ["i1", "i1", "i1"], "system": ["polaris", "polaris", "gpt-4o"],
                                "source": ["model"] * 3, "contributor_id": ["s2", "s1", None],
                                "model": [None, None, "openai/gpt-4o"], "text": ["a", "b", "c"],
                                **{c: [None] * 3 for c in export.IMPORTED_NUMBERS}})
    public = export._public_completions(completions, {"s1": "writer-001", "s2": "writer-002"}).to_pandas()
    named = public.set_index("text")["contributor_id"]
    assert named[["a", "b"]].tolist() == ["writer-002", "writer-001"] and pd.isna(named["c"])
    # a study of models alone keeps the format it had: no contributor column
    assert "contributor_id" not in export._public_completions(completions.iloc[[2]], {}).column_names


def test_a_folder_made_by_hand_gets_its_manifest_and_is_then_checked(bundle, tmp_path, capsys):
    """--write-manifest: the authors' own folder (here the simulated bundle without its manifest, plus a note of
    theirs) gets a manifest listing every bundle file with its sha256 and rows; the check then runs on it."""
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    original = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").unlink()
    (copy / "notes.txt").write_text("how we made these files")
    assert main(["check", str(copy), "--write-manifest"]) == 0
    out = capsys.readouterr().out
    assert f"{len(original['files'])} files listed; not bundle files, left out: notes.txt" in out
    assert "a bundle make paper can run" in out
    written = json.loads((copy / "manifest.json").read_text())
    assert {n: (f["sha256"], f["rows"]) for n, f in written["files"].items()} == {
        n: (f["sha256"], f["rows"]) for n, f in original["files"].items()}
    assert written["label"] is None  # a label (SIMULATED) is the author's to give, not the tool's


def _with_ratings(bundle, tmp_path, records):
    """A copy of ``bundle`` with a human ratings file of ``records`` (JSON Lines, written by hand) listed."""
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    (copy / "human_judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    check.write_manifest(copy)
    return copy


def _rating(pair, rater, **change):
    return {"rater_id": rater, "item_id": pair["item_id"], "shown_a": pair["system_a"], "shown_b": pair["system_b"],
            "choice": 2, "seconds_spent": 30, **change}


def test_human_ratings_name_a_pair_of_the_bundle_once_per_rater(bundle, tmp_path):
    pairs = tableio.read_table(bundle / "pairs.parquet")
    one, two = pairs.iloc[0], pairs.iloc[1]
    sound = _with_ratings(bundle, tmp_path / "a", [_rating(one, "r1"), _rating(one, "r2", shown_a=one["system_b"],
                                                                             shown_b=one["system_a"], choice=4),
                                                   _rating(two, "r1")])
    assert check.check(sound)["human_ratings"] == 3
    typo = _with_ratings(bundle, tmp_path / "b", [_rating(one, "r1"), _rating(two, "r1", shown_b="gpt-6")])
    with pytest.raises(load.BundleError, match=r"human_judgments.jsonl, line 2: fields 'item_id', 'shown_a', "
                                               r"'shown_b' .* name no pair of pairs.parquet"):
        check.check(typo)
    twice = _with_ratings(bundle, tmp_path / "c", [_rating(one, "r1"), _rating(two, "r2"),
                                                   _rating(one, "r1", choice=5)])
    with pytest.raises(load.BundleError, match=r"lines 1 and 3: .*rater 'r1' judged the same pair"):
        check.check(twice)


def test_a_tag_of_a_completion_the_bundle_lacks_stops_the_check(bundle, tmp_path):
    import pandas as pd

    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    completions = pd.read_parquet(copy / "completions.parquet")
    row = completions.iloc[0]
    tags = pd.DataFrame([{"item_id": row["item_id"], "system": system, "contributor_id": None, "tagger": "t",
                          "strategy": "question", "label": "present", "probability": None, "evidence": None,
                          "parse_ok": True, "parse_error": None, "cache_key": "k", "from_cache": False,
                          "neutralised_tokens": 0} for system in (row["system"], "gpt-6")])
    tableio.write_table(tags, copy / "strategy_tags.parquet", "strategy_tags")
    check.write_manifest(copy)
    with pytest.raises(load.BundleError, match=r"strategy_tags.parquet, row 2: field 'system' is 'gpt-6': the "
                                               "bundle has no such completion"):
        check.check(copy)


def test_a_completion_withheld_for_safety_is_named_in_withheld_jsonl_and_its_pairs_stay(bundle, tmp_path):
    """completions.confirmed_flags: bundle leaves a completion's row out of completions.parquet and lists it in
    withheld.jsonl: the check (and a run) takes its pairs as naming a withheld completion; the same bundle
    without withheld.jsonl names the pair whose completion is missing."""
    import pandas as pd

    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    completions = pd.read_parquet(copy / "completions.parquet")
    pairs = pd.read_parquet(copy / "pairs.parquet")
    row = completions[completions["system"].isin(pairs["system_a"])].iloc[0]
    completions.drop(index=row.name).to_parquet(copy / "completions.parquet", index=False)
    (copy / "withheld.jsonl").write_text(json.dumps({"item_id": row["item_id"], "system": row["system"],
                                                     "reason": "confirmed safety flag"}) + "\n")
    check.write_manifest(copy)
    summary = check.check(copy)
    assert summary["pairs"] == len(pairs)
    (copy / "withheld.jsonl").unlink()
    check.write_manifest(copy)
    with pytest.raises(load.BundleError, match=r"pairs.parquet, row \d+: field 'system_[ab]' is "
                                               f"'{row['system']}': the bundle has no completion"):
        check.check(copy)
