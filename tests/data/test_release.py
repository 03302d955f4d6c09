"""The paper's released items: reading, mapping onto ESConv, items as released (heart.data.release), and the
workflow's items.source: release on the tiny fixture and on the real release."""

import json

import pandas as pd
import pytest

from support import PAPER_KEYS, SHARED_ESCONV_DIR, SHARED_RELEASE_DIR, TINY, TINY_RELEASE, needs_release
from heart.data import release
from heart.common import tableio
from support.release import records, tiny_esconv_tables


@pytest.fixture(scope="module")
def tiny_tables():
    return tiny_esconv_tables()


def test_tiny_release_maps_each_record_with_its_quality(tiny_tables):
    mapping = release.map_regular(records("regular"), *tiny_tables)
    got = mapping.set_index("release_key")
    assert list(got["quality"]) == ["exact", "exact", "exact", "damaged", "unmatched"]
    # a newline inside an utterance is white space: regular:0 still matches exactly
    assert got.loc["regular:0", ["conversation_id", "end_turn_index"]].tolist() == [0, 1]
    # a one-entry context is a couplet too
    assert got.loc["regular:1", ["conversation_id", "end_turn_index", "n_entries"]].tolist() == [1, 0, 1]
    assert got.loc["regular:3", "differing_entries"] == [3]
    assert "kept as released" in got.loc["regular:3", "detail"]
    assert "no ESConv conversation with this situation" in got.loc["regular:4", "detail"]
    assert pd.isna(got.loc["regular:4", "conversation_id"])


def test_vanilla_completion_status(tiny_tables):
    got = release.map_regular(records("regular"), *tiny_tables).set_index("release_key")["original_status"]
    # regular:2 is the second context of conversation 1 and reuses the first one's reply
    assert got.to_dict() == {"regular:0": "next_turn", "regular:1": "next_turn", "regular:2": "sibling_context",
                             "regular:3": "next_turn", "regular:4": "not_found"}


@pytest.mark.parametrize("change, message", [
    (lambda recs: recs[0].pop("situation"), r"record 0, situation: missing"),
    (lambda recs: recs[1]["dialogue_history"].append("more"), r"record 1, prev_speakers: 1 speakers for 2"),
    (lambda recs: recs[2]["prev_speakers"].__setitem__(0, "listener"), r"record 2, prev_speakers\[0\]"),
    (lambda recs: recs[3].__setitem__("vanilla_completion", "  "), r"record 3, vanilla_completion: is empty"),
    (lambda recs: recs[4].__setitem__("dialogue_history", []), r"record 4, dialogue_history"),
])
def test_bad_release_record_names_file_record_and_field(tmp_path, change, message):
    recs = records("regular")
    change(recs)
    path = tmp_path / "dialogues_regular.json"
    path.write_text(json.dumps(recs))
    with pytest.raises(release.ReleaseFormatError, match=message) as err:
        release.read(path, "regular")
    assert str(path) in str(err.value)


def test_unreadable_release_file_says_what_to_do(tmp_path):
    with pytest.raises(release.ReleaseFormatError, match="local_copy"):
        release.read(tmp_path / "dialogues_regular.json", "regular")
    (tmp_path / "x.json").write_text('{"not": "a list"}')
    with pytest.raises(release.ReleaseFormatError, match="expected a JSON list"):
        release.read(tmp_path / "x.json", "regular")


@pytest.mark.e2e
def test_release_source_builds_items_from_the_tiny_release(workflow_copy):
    args = ["--config", f"esconv={{local_copy: {TINY}}}", "items={source: release}",
            f"release={{local_copy: {TINY_RELEASE}}}"]
    jobs = workflow_copy.jobs(*args)
    assert "screen_items" not in jobs and "make_adversarial_items" not in jobs and "download_release" not in jobs
    workflow_copy.snakemake("results/items/items.parquet", "results/data/release_source.parquet", *args)
    table = tableio.read_table(workflow_copy.root / "results/items/items.parquet")
    assert table["subset"].value_counts().to_dict() == {"regular": 5, "adversarial": 2}
    source = tableio.read_table(workflow_copy.root / "results/data/release_source.parquet")
    assert source["n_records"].tolist() == [5, 2]
    # the fixture is not the pinned upstream file: recorded, not hidden
    assert source["matches_upstream"].tolist() == [False, False]
    assert tableio.provenance_of(workflow_copy.root
                                 / "results/data/release_mapping.parquet")["release_regular_sha256"] \
        == source["sha256"].iloc[0]


@pytest.mark.dag
def test_release_without_local_copy_is_downloaded_and_a_bad_folder_is_named(workflow_copy):
    jobs = workflow_copy.jobs("--config", "items={source: release}")
    assert jobs["download_release"] == 2 and jobs["release_items"] == 1
    proc = workflow_copy.snakemake("-n", "--config", "items={source: release}", "release={local_copy: /nowhere}",
                                   check=False)
    assert proc.returncode != 0
    assert ("release.local_copy is '/nowhere', but /nowhere/dialogues_regular.json is not a file"
            in proc.stdout + proc.stderr)


@pytest.mark.e2e
@needs_release
def test_paper_config_builds_the_300_released_items(workflow_copy):
    """snakemake --configfile config/paper.yaml (with the local copies) builds exactly the released items."""
    workflow_copy.snakemake("results/items/items.parquet", "results/data/release_mapping.parquet",
                            "--configfile", "config/paper.yaml", "--config",
                            f"esconv={{local_copy: {SHARED_ESCONV_DIR / 'ESConv.json'}}}",
                            f"release={{local_copy: {SHARED_RELEASE_DIR}}}", env=PAPER_KEYS)
    table = tableio.read_table(workflow_copy.root / "results/items/items.parquet").set_index("release_key")
    assert table["subset"].value_counts().to_dict() == {"regular": 280, "adversarial": 20}
    assert table["item_id"].is_unique
    mapping = tableio.read_table(workflow_copy.root / "results/data/release_mapping.parquet").set_index("release_key")
    regular = mapping[mapping.index.str.startswith("regular:")]
    # the facts of the release's README: 276 exact, 4 damaged (66, 80, 82, 90); 262 conversations
    assert regular["quality"].value_counts().to_dict() == {"exact": 276, "damaged": 4}
    assert sorted(regular.index[regular["quality"].eq("damaged")]) == ["regular:66", "regular:80", "regular:82",
                                                                        "regular:90"]
    assert regular["conversation_id"].nunique() == 262
    assert regular["original_status"].value_counts().to_dict() == {"next_turn": 265, "sibling_context": 12,
                                                                   "other_turn": 3}
    # known mappings (conversation = 0-based position in ESConv.json)
    assert table.loc["regular:17", ["conversation_id", "seeker_turn_index"]].tolist() == [776, 1]
    assert table.loc["regular:82", ["conversation_id", "seeker_turn_index"]].tolist() == [902, 9]
    assert {"damaged", "ends_on_supporter", "original_sibling_context"} <= set(table.loc["regular:82", "flags"])
    assert sum("contains_newlines" in f for f in table["flags"]) == 72
    released = json.loads((SHARED_RELEASE_DIR / "dialogues_regular.json").read_text())
    assert [t["text"] for t in table.loc["regular:82", "history"]] == released[82]["dialogue_history"]
    adversarial = table[table["subset"].eq("adversarial")]
    assert adversarial["profile"].isna().all() and adversarial["original_reply"].isna().all()

    # the call preview plans the paper's judging design: each pair once, in one order, ~42,000 pairs (all
    # 13,500 human-model and 4,200 dataset-model pairs, model-model ones at rate 0.7714 of 31,500)
    proc = workflow_copy.snakemake("results/llm/calls_preview.parquet", "--configfile", "config/paper.yaml",
                                   "--config", f"esconv={{local_copy: {SHARED_ESCONV_DIR / 'ESConv.json'}}}",
                                   f"release={{local_copy: {SHARED_RELEASE_DIR}}}", env=PAPER_KEYS)
    preview = tableio.read_table(workflow_copy.root / "results/llm/calls_preview.parquet")
    judging = preview[preview["stage"].str.startswith("judging")]
    assert len(judging) == 3 and judging["stage"].str.endswith("one order)").all()
    n_pairs = {int(s.split(", ")[1].split()[0]) for s in judging["stage"]}
    assert len(n_pairs) == 1 and 41_500 <= n_pairs.pop() <= 42_500
    log = (workflow_copy.root / "logs/llm/preview_llm_calls.log").read_text()
    assert "'human-model': 13500, 'dataset-model': 4200" in log
    # family exclusion: each judge sees the pairs holding no model of its family, once each
    assert (judging["calls"] < 42_500).all() and (judging["calls"] > 20_000).all()
    # the judges' known-answer quality checks are counted too: 280 regular items x 2 kinds, both orders, each judge
    checks = preview[preview["stage"].str.startswith("quality checks")]
    assert len(checks) == 3 and (checks["calls"] == 280 * 2 * 2).all()
    # the total is honest about what it cannot price
    unpriced = preview[preview["cost_status"].eq("unpriced")]
    assert len(unpriced) and unpriced["est_max_cost_usd"].isna().all()
    assert f"{int(unpriced['to_call'].sum()):,} calls" in proc.stdout + proc.stderr + log
    assert "unpriced: cost unknown" in log


@pytest.mark.e2e
@needs_release
def test_screening_config_calibration_table_shows_the_recall(workflow_copy):
    """config/screening.yaml (a new study screened from ESConv) writes its calibration against the release."""
    jobs = workflow_copy.jobs("--configfile", "config/screening.yaml", env=PAPER_KEYS)
    assert jobs["screening_calibration"] == 1 and jobs["map_release"] == 1 and "release_items" not in jobs
    workflow_copy.snakemake("results/items/screening_calibration.parquet", "--configfile", "config/screening.yaml",
                            "--config", f"esconv={{local_copy: {SHARED_ESCONV_DIR / 'ESConv.json'}}}",
                            f"release={{local_copy: {SHARED_RELEASE_DIR}}}", env=PAPER_KEYS)
    table = tableio.read_table(workflow_copy.root / "results/items/screening_calibration.parquet")
    value = table.set_index(["section", "measure"])["value"]
    assert value[("recall", "n_released")] == 280 and value[("recall", "recall")] >= 0.80
    assert value[("selectivity", "n_couplets")] == 14642 and value[("selectivity", "selectivity")] < 0.6
    lengths = table[table["section"].eq("context_length")]
    assert {"release", "sample"} <= set(lengths["population"])
