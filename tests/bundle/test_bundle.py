"""heart.bundle: pseudonyms that keep the ids' order, the study settings without secrets, and a bundle that is
checked against its manifest before anything is read from it."""

import json

import pytest

from heart.bundle import export, load, pseudonyms
from heart.bundle.study import study_settings
from heart.common.atomic import sha256_file


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


def _bundle(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "study.yaml").write_text("systems: {s: {model: m, prompt: p}}\nmodels: {m: {model: x, family: f}}\n")
    files = {"study.yaml": {"sha256": sha256_file(folder / "study.yaml"), "bytes": 1, "rows": None, "what": ""}}
    (folder / "manifest.json").write_text(json.dumps({"format": export.FORMAT, "files": files}))
    return folder


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
