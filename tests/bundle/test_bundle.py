"""heart.bundle: pseudonyms that keep the ids' order, the study settings without secrets, and a bundle that is
checked against its manifest before anything is read from it."""

import json

import pytest

from heart.bundle import load, pseudonyms
from heart.bundle.study import study_settings
from heart.common import tableio
from support.bundle import placeholder_bundle, relist


def test_pseudonyms_keep_the_order_of_the_ids_they_replace():
    names = pseudonyms.mapping(["w10", "w2", None, "", "w2", "a"], "writer")
    assert names == {"a": "writer-001", "w10": "writer-002", "w2": "writer-003"}
    assert sorted(names) == sorted(names, key=names.get)  # ties broken by id break the same way
    many = pseudonyms.mapping([f"p{k}" for k in range(1200)], "rater")
    assert len(set(map(len, many.values()))) == 1 and sorted(many) == sorted(many, key=many.get)
    assert pseudonyms.rename_ref("human#w2", names) == "human#writer-003"
    assert pseudonyms.rename_ref("gpt-4o", names) == "gpt-4o"


def test_study_settings_carry_no_key_variable_server_or_local_file():
    config = {"models": {"m": {"model": "openai/x", "family": "gpt", "api_key_env": "OPENAI_API_KEY",
                               "api_base": "http://10.0.0.1/v1", "local_gguf": "/home/me/m.gguf",
                               "params": {"temperature": 0}}},
              "systems": {"s": {"model": "m", "prompt": "supportive_listener"}},
              "human_completions": {"path": "/home/me/writers.csv", "per_context": 3},
              "tagging": {"taggers": {}, "spot_checks": "/home/me/labels.csv"}, "llm": {"cache_dir": "x"}}
    study = study_settings(config)
    assert study["models"] == {"m": {"model": "openai/x", "family": "gpt", "params": {"temperature": 0}}}
    assert "/home/me" not in json.dumps(study) and "llm" not in study
    assert study["human_completions"] == {"per_context": 3}


def _relist(folder, name, frame, schema):
    """``frame`` written as bundle file ``name`` (a table of the workflow's ``schema``), the manifest's sha256
    of it updated."""
    tableio.write_table(frame, folder / name, schema)
    relist(folder, name)


STUDY = "systems: {s: {model: m, prompt: p}}\nmodels: {m: {model: x, family: f}}\n"


def _bundle(tmp_path, study=STUDY, names=("items.parquet", "completions.parquet", "pairs.parquet")):
    """A bundle folder of placeholders (run_config reads no table), listed in its manifest."""
    return placeholder_bundle(tmp_path / "bundle", study, names)


def test_a_run_from_a_bundle_imports_every_system_and_reads_its_human_files(tmp_path):
    folder = _bundle(tmp_path)
    config = load.run_config(folder)
    assert config["systems"] == {}
    assert config["imported_systems"] == {"s": {"path": str(folder / "completions.parquet"), "family": "f"}}
    assert config["human_judgments"]["path"] == str(folder / "human_judgments.jsonl")
    assert config["artifacts"] == {"path": str(folder)}


def test_a_changed_missing_or_foreign_bundle_is_named_before_anything_runs(tmp_path):
    folder = _bundle(tmp_path)
    (folder / "study.yaml").write_text("systems: {}\n")
    with pytest.raises(load.BundleError, match=r"study.yaml: sha256 is .*\(field 'files.study.yaml.sha256'\)"):
        load.manifest(folder)
    (folder / "study.yaml").unlink()
    with pytest.raises(load.BundleError, match="file 'study.yaml' is listed but .* is not there"):
        load.manifest(folder)
    (folder / "manifest.json").write_text(json.dumps({"format": "something/2", "files": {}}))
    with pytest.raises(load.BundleError, match="field 'format' is 'something/2'"):
        load.manifest(folder)
    with pytest.raises(load.BundleError, match="is not a folder"):
        load.manifest(tmp_path / "nowhere")
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(load.BundleError, match="cannot be read as a bundle manifest"):
        load.manifest(folder)


def test_a_bundle_table_refers_only_to_what_the_bundle_has(tmp_path):
    import pandas as pd

    from heart.common import tableio

    pairs = pd.DataFrame({"pair_id": ["p1", "p2"], "item_id": ["i1", "i9"], "conversation_id": ["c", "c"],
                          "subset": ["regular"] * 2, "system_a": ["a", "a"], "contributor_a": [None, None],
                          "system_b": ["b", "b"], "contributor_b": [None, None], "kind": ["model-model"] * 2})
    tableio.write_table(pairs, tmp_path / "pairs.parquet", "pairs")
    with pytest.raises(load.BundleError, match=r"pairs.parquet, row 2: field 'item_id' is 'i9'"):
        load.table(tmp_path / "pairs.parquet", "pairs", known={"item_id": ["i1"]})
    assert len(load.table(tmp_path / "pairs.parquet", "pairs", where={"item_id": "i1"})) == 1
    with pytest.raises(load.BundleError, match="missing columns"):
        load.table(tmp_path / "pairs.parquet", "judge_verdicts")


@pytest.mark.parametrize("study, missing, setting", [
    (STUDY, None, None),
    # the defect of issue 40: no judge_checks.parquet under the default quality checks scheduled judge_qc,
    # which called the judge (1,120 o3 requests for the paper's study)
    (STUDY + "judging: {judges: {j: {model: m}}}\n", "judge_checks.parquet",
     r"judging.qc.kinds \['unhelpful', 'other-conversation'\] for judging.judges \(j\)"),
    (STUDY + "judging: {judges: {j: {model: m}}, qc: {kinds: []}}\n", None, None),
    (STUDY + "tagging: {taggers: {t: {model: m}}}\n", "strategy_tags.parquet or strategy_tags.jsonl",
     r"tagging.taggers \(t\)"),
])
def test_a_file_the_study_asks_for_is_named_with_its_setting_and_never_made_by_a_model(tmp_path, study, missing,
                                                                                      setting):
    base = ["items.parquet", "completions.parquet", "pairs.parquet"]
    if "judges" in study:
        base.append("llm_verdicts.parquet")
    folder = _bundle(tmp_path, study, names=base)
    if missing is None:
        assert load.run_config(folder)["artifacts"] == {"path": str(folder)}
        return
    with pytest.raises(load.BundleError, match=rf"lists no {missing}, which the study's {setting} \(study.yaml\) "
                                               "asks for; a run from a bundle calls no model"):
        load.run_config(folder)


def test_a_data_file_beside_the_manifest_but_not_in_it_is_refused(tmp_path):
    """Issue 40: an edited human_judgments.jsonl left out of the manifest was read without any check."""
    folder = _bundle(tmp_path)
    (folder / "human_judgments.jsonl").write_text('{"rater_id": "r"}\n')
    with pytest.raises(load.BundleError, match=r"human_judgments.jsonl in the folder but not listed in the "
                                               r"manifest \(field 'files'\)"):
        load.run_config(folder)
    (folder / "human_judgments.jsonl").unlink()
    (folder / "notes.txt").write_text("not a bundle file: no table is read from it")
    assert load.run_config(folder)["artifacts"] == {"path": str(folder)}


#: the rules that send requests to a model (their params carry the engine's settings, rules/*.smk ``llm=ENGINE``)
PROVIDER_RULES = {"generate_completions", "make_adversarial_items", "judge_pairs", "judge_qc", "tag_strategies",
                  "preview_llm_calls"}


@pytest.mark.dag
def test_a_run_from_a_bundle_has_no_rule_that_calls_a_model(tmp_path, workflow_copy):
    """No call, provably: in a run from a bundle the rules that call a provider are not defined, so no missing
    table can schedule one (a bundle without judge_checks.parquet used to schedule judge_qc)."""
    names = ["items.parquet", "completions.parquet", "pairs.parquet", "llm_verdicts.parquet",
             "judge_checks.parquet", "strategy_tags.parquet"]
    folder = _bundle(tmp_path, STUDY + "judging: {judges: {j: {model: m}}}\ntagging: {taggers: {t: {model: m}}}\n",
                     names=names)
    _relist(folder, "judge_checks.parquet", tableio.empty_like("judge_verdicts"), "judge_verdicts")
    args = ["--configfile", "config/artifacts.yaml", "--config", f"artifacts={{path: {folder}}}"]
    rules = set(workflow_copy.snakemake("--list-rules", *args, env={"OPENAI_API_KEY": None}).stdout.split())
    assert {"bundle_items", "bundle_pairs", "bundle_verdicts", "bundle_checks", "bundle_tags"} <= rules
    assert not PROVIDER_RULES & rules
    # the same workflow in a study defines them all (the list above is not stale)
    assert PROVIDER_RULES <= set(workflow_copy.snakemake("--list-rules").stdout.split())


def test_a_bundle_whose_judges_ran_no_quality_check_says_so(tmp_path):
    """Issue 40: the report said every judge ran quality checks when the bundle held none."""
    names = ["items.parquet", "completions.parquet", "pairs.parquet", "llm_verdicts.parquet", "judge_checks.parquet"]
    folder = _bundle(tmp_path, STUDY + "judging: {judges: {j: {model: m}}}\n", names=names)
    with pytest.raises(load.BundleError, match="judge_checks.parquet: cannot be read as a Parquet file"):
        load.run_config(folder)
    _relist(folder, "judge_checks.parquet", tableio.empty_like("judge_verdicts"), "judge_verdicts")
    assert load.run_config(folder)["judging"]["qc"]["kinds"] == []


def _pairs(*rows):
    import pandas as pd

    return pd.DataFrame([dict(zip(("pair_id", "item_id", "system_a", "contributor_a", "system_b", "contributor_b"),
                                  row)) for row in rows])


def _completions(*refs):
    import pandas as pd

    return pd.DataFrame([{"item_id": i, "system": s, "contributor_id": c} for i, s, c in refs])


HAVE = _completions(("r1", "gpt-4o", None), ("r1", "original", None), ("r1", "human", "w1"), ("adv1", "gpt-4o", None),
                    ("adv1", "claude", None))


@pytest.mark.parametrize("pair, field, value", [
    # issue 40's defects, each ran clean before: a typo in a system name became a 19th row of Figure 4 ...
    (("p", "r1", "gpt-4o", None, "gpt-6", None), "system_b", "gpt-6"),
    # ... human-model pairs with the human files removed (then a bare KeyError in figure_example_pair) ...
    (("p", "r1", "human", "w2", "gpt-4o", None), "system_a", "human"),
    # ... and the dataset's reply on an adversarial item, which has none ("original" got an adversarial rating)
    (("p", "adv1", "original", None, "gpt-4o", None), "system_a", "original"),
])
def test_a_pair_without_its_completions_is_named(pair, field, value):
    load.check_pairs("b/pairs.parquet", _pairs(("ok", "r1", "gpt-4o", None, "human", "w1"),
                                               ("ok2", "adv1", "gpt-4o", None, "claude", None)), HAVE)
    with pytest.raises(load.BundleError, match=rf"b/pairs.parquet, row 2: field '{field}' is '{value}': the bundle "
                                               "has no completion of it for the pair's item"):
        load.check_pairs("b/pairs.parquet", _pairs(("ok", "r1", "gpt-4o", None, "original", None), pair), HAVE)


def test_a_verdict_shows_its_own_pair_in_the_order_it_says_once():
    import pandas as pd

    pairs = _pairs(("p1", "r1", "gpt-4o", None, "human", "w1"))
    ok = pd.DataFrame({"pair_id": ["p1", "p1"], "judge": ["j", "j"], "order": ["AB", "BA"],
                       "shown_a": ["gpt-4o", "human"]})  # the system shown (a writer's: "human")
    load.check_verdicts("v.parquet", ok, pairs)
    with pytest.raises(load.BundleError, match=r"v.parquet, row 2: field 'shown_a' is 'claude': not one of its "
                                               r"pair's two systems"):
        load.check_verdicts("v.parquet", ok.assign(shown_a=["gpt-4o", "claude"]), pairs)
    with pytest.raises(load.BundleError, match=r"v.parquet, row 1: field 'order' is 'AB': does not match field "
                                               "'shown_a'"):
        load.check_verdicts("v.parquet", ok.iloc[[0]].assign(shown_a="human"), pairs)
    # a verdict row duplicated counted as a third order of its pair
    twice = pd.concat([ok, ok.iloc[[1]]], ignore_index=True)
    with pytest.raises(load.BundleError, match=r"v.parquet, row 3: field 'order' is 'BA': the same judge's verdict "
                                               "on this pair in this shown order is already in an earlier row"):
        load.check_verdicts("v.parquet", twice, pairs)
    with pytest.raises(load.BundleError, match="row 3"):
        load.check_verdicts("checks.parquet", twice)  # the quality checks: no pairs table, still once per order
    # an unknown shown order (imported verdicts whose source does not say) stays unknown: not a duplicate
    load.check_verdicts("v.parquet", pd.DataFrame({"pair_id": ["p1", "p1"], "judge": ["j", "j"],
                                                   "order": [None, None], "shown_a": [None, None]}), pairs)


def test_a_bundle_without_a_table_every_bundle_holds_is_named(tmp_path):
    folder = _bundle(tmp_path, names=("items.parquet", "pairs.parquet"))
    with pytest.raises(load.BundleError, match=r"lists no completions.parquet or completions.jsonl, which every "
                                               r"bundle holds. Add it \(and list it in the manifest: python -m heart."
                                               r"bundle check --write-manifest <folder>; docs/bundle-format.md\)$"):
        load.run_config(folder)
    # the pairs are not asked of a bundle: they are derived from what was judged
    (tmp_path / "derived").mkdir()
    assert load.run_config(_bundle(tmp_path / "derived", names=("items.jsonl", "completions.jsonl")))
