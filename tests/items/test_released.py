"""The paper's released contexts as the study's items (heart.items.released), on the tiny release fixture."""

import pytest

from heart.common import tableio
from heart.data import release
from heart.items import item_table as items
from heart.items import released
from support.release import records, tiny_esconv_tables


@pytest.fixture(scope="module")
def tiny_tables():
    return tiny_esconv_tables()


def test_items_are_kept_as_released_and_flagged(tiny_tables):
    conversations, turns = tiny_tables
    recs = records("regular")
    table = released.regular_items(recs, release.map_regular(recs, conversations, turns),
                                   turns).set_index("release_key")
    tableio.to_arrow(table.reset_index(), "items")  # a valid items table
    damaged = table.loc["regular:3"]
    assert [t["text"] for t in damaged["history"]] == recs[3]["dialogue_history"]  # never repaired
    assert "damaged" in damaged["flags"]
    assert table.loc["regular:2", "flags"] == ["original_sibling_context"]
    assert table.loc["regular:0", "flags"] == ["contains_newlines"]
    assert set(table.loc["regular:4", "flags"]) == {"unmatched", "original_not_found"}
    # item ids stay content hashes of the history; the cluster is the conversation, else the release key
    assert all(len(i) == 16 for i in table["item_id"])
    assert table.loc["regular:1", "cluster"] == table.loc["regular:2", "cluster"] == "1"
    assert table.loc["regular:4", "cluster"] == "regular:4"
    assert table.loc["regular:0", "original_reply"] == recs[0]["vanilla_completion"]
    assert list(table.loc["regular:0", "original_strategies"])  # the ESConv labels of that reply


def test_adversarial_items_as_released(tiny_tables):
    conversations, turns = tiny_tables
    recs = records("adversarial")
    mapping = release.map_adversarial(recs, conversations, turns)
    assert mapping["quality"].tolist() == ["shared_text", "unmatched"]
    table = released.adversarial_items(recs, mapping)
    tableio.to_arrow(table, "items")
    assert table["subset"].eq("adversarial").all() and table["profile"].isna().all()
    assert all("profile_unknown" in f for f in table["flags"])
    assert [h[0]["role"] for h in table["history"]] == ["supporter", "supporter"]
    assert [h[-1]["role"] for h in table["history"]] == ["seeker", "seeker"]
    assert table["original_reply"].isna().all() and table["original_status"].isna().all()
    assert table["cluster"].tolist() == ["2", "adversarial:1"]


def test_release_keys_and_item_ids_name_the_same_items(tiny_tables):
    conversations, turns = tiny_tables
    recs = records("regular")
    table = released.regular_items(recs, release.map_regular(recs, conversations, turns), turns)
    first = table["item_id"].iloc[0]
    keys = items.lookup(table)
    assert keys["regular:0"] == keys[first] == first and keys["regular:1"] == table["item_id"].iloc[1]
    assert "regular:99" not in keys
    assert items.key_hint(table) == "a release key such as 'regular:0' or an item_id of results/items/items.parquet"
