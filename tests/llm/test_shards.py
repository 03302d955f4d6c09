"""heart.llm.shards: the item-hash split of the LLM stages and the merge back into one table."""

import random

import pandas as pd
import pytest

from heart import WORKFLOW_DIR
from heart.llm import shards


def test_names_and_parse_round_trip_and_reject_nonsense():
    assert shards.names(3) == ["1of3", "2of3", "3of3"]
    assert [shards.parse(n) for n in shards.names(3)] == [(1, 3), (2, 3), (3, 3)]
    for bad in ("0of3", "4of3", "3", "of3", "1of0", "a of b"):
        with pytest.raises(ValueError, match="expected '<k>of<n>'"):
            shards.parse(bad)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            shards.names(bad)


def test_every_item_falls_in_exactly_one_shard_whatever_the_order():
    ids = [f"item-{i:04d}" for i in range(2000)]
    items = pd.DataFrame({"item_id": ids, "x": range(len(ids))})
    parts = [shards.select(items, s) for s in shards.names(8)]
    assert sorted(sum((list(p["item_id"]) for p in parts), [])) == sorted(ids)  # a partition
    # stable: the shard depends on the id only, not on the table's order or size
    shuffled = items.sample(frac=1, random_state=1)
    assert all(set(shards.select(shuffled, s)["item_id"]) == set(p["item_id"])
               for s, p in zip(shards.names(8), parts))
    assert set(shards.select(items.head(50), "3of8")["item_id"]) <= set(parts[2]["item_id"])
    # roughly balanced: 2,000 ids over 8 shards (250 expected each)
    sizes = [len(p) for p in parts]
    assert min(sizes) > 180 and max(sizes) < 320, sizes
    assert len(shards.select(items, "1of1")) == len(items)


def test_merge_restores_one_canonical_order_whatever_the_split():
    rng = random.Random(0)
    items = pd.DataFrame({"item_id": [f"i{k}" for k in range(30)]})
    systems = ["sys-b", "sys-a", "original"]
    # a tag-like table: system-major, then item, then several rows per (system, item) in a given order
    rows = [{"system": s, "item_id": i, "strategy": st, "v": rng.random()}
            for s in systems for i in items["item_id"] for st in ("question", "affirmation")]
    whole = pd.DataFrame(rows)
    order = shards.order_of("strategy_tags", items=items, systems=systems)
    reference = shards.merge([whole], order)
    pd.testing.assert_frame_equal(reference, whole)
    for n in (2, 3, 7):
        parts = [shards.select(whole, s) for s in shards.names(n)]
        merged = shards.merge(parts[::-1], order)  # shards may arrive in any order
        pd.testing.assert_frame_equal(merged, whole)


def test_merge_keeps_an_empty_table_and_names_a_row_it_cannot_place():
    items = pd.DataFrame({"item_id": ["a", "b"]})
    empty = pd.DataFrame({"item_id": pd.Series([], dtype=object), "text": pd.Series([], dtype=object)})
    merged = shards.merge([empty, empty], shards.order_of("completions", items=items))
    assert list(merged.columns) == ["item_id", "text"] and merged.empty
    stray = pd.DataFrame({"item_id": ["a", "zzz"], "text": ["x", "y"]})
    with pytest.raises(ValueError, match="item_id = 'zzz'"):
        shards.merge([stray], shards.order_of("completions", items=items))
    with pytest.raises(ValueError, match="no shard merge"):
        shards.order_of("ratings")


def test_merged_provenance_sums_counts_and_refuses_mixed_versions():
    base = {"rule": "judge_pairs", "workflow_version": "v1", "config_sha256": "c", "packages": {},
            "resources_sha256": {"prompt.md": "aaa"}, "prompt_version": "p1", "n_excluded_family": 2}
    provs = [base, {**base, "n_excluded_family": 5, "workflow_version": "v2"}]
    merged = shards.merge_provenance(provs, ["s/1of2.parquet", "s/2of2.parquet"])
    assert merged["n_excluded_family"] == 7 and merged["shard_rule"] == "judge_pairs"
    assert merged["resources_sha256"] == {"prompt.md": "aaa"} and merged["shards"] == ["1of2", "2of2"]
    assert "workflow_version" not in merged and "rule" not in merged  # the merge job's own are used
    stale = {**base, "resources_sha256": {"prompt.md": "bbb"}}
    with pytest.raises(ValueError, match=r"s/2of2.parquet: provenance field 'resources_sha256'.*stale shard"):
        shards.merge_provenance([base, stale], ["s/1of2.parquet", "s/2of2.parquet"])


def test_the_fields_a_merge_takes_from_its_own_job_are_what_provenance_records_of_a_job(tmp_path):
    from types import SimpleNamespace

    from heart.common import provenance, tableio

    # the ESConv hash comes from the provenance of a declared Parquet input, as in every job after ingest
    items = tmp_path / "items.parquet"
    tableio.write_table(tableio.empty_like("items"), items, "items", {"esconv_sha256": "a" * 64})
    scripts = WORKFLOW_DIR / "scripts"
    job = SimpleNamespace(rule="judge_pairs", scriptdir=str(scripts), input=[str(items)], config={"x": 1})
    info = provenance.collect(job)
    assert set(info) - {"resources_sha256"} == set(provenance.JOB_FIELDS) and info["esconv_sha256"] == "a" * 64


def test_inputs_made_from_two_esconv_files_are_refused(tmp_path):
    from types import SimpleNamespace

    from heart.common import provenance, tableio

    paths = []
    for k, sha in enumerate(("a" * 64, "b" * 64)):
        paths.append(str(tmp_path / f"t{k}.parquet"))
        tableio.write_table(tableio.empty_like("items"), paths[-1], "items", {"esconv_sha256": sha})
    scripts = WORKFLOW_DIR / "scripts"
    job = SimpleNamespace(rule="design_pairs", scriptdir=str(scripts), input=paths, config={})
    with pytest.raises(ValueError, match="rule design_pairs: its inputs were made from different ESConv files"):
        provenance.collect(job)
