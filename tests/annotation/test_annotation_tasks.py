"""heart.annotation.tasks (§9.3 writing, §4.2 rating, §9.10 spot checks): small hand-built items, completions
and pairs; properties of the assignment checked row by row."""

import json
import math

import pandas as pd
import pytest
import yaml

from support import REPO
from heart.judging import pairs as pairs_mod
from heart.annotation import tasks
from heart.judging.pairs import completion_ref

SEED = 11
QC = yaml.safe_load((REPO / "workflow/resources/annotation/qc_replies.yaml").read_text())["replies"]


def make_items(n=6):
    """n items; the last has no original reply (never a quality check)."""
    return pd.DataFrame([{
        "item_id": f"i{i}", "conversation_id": i, "subset": "regular",
        "history": [{"role": "seeker", "text": f"I feel low {i}"},
                    {"role": "supporter", "text": "Tell me more."},
                    {"role": "seeker", "text": f"Work {i} — it never stops"}],
        "original_reply": None if i == n - 1 else f"That sounds exhausting ({i}).",
    } for i in range(n)])


def make_completions(items, systems=("m1", "m2")):
    rows = []
    for it in items.itertuples():
        rows += [{"item_id": it.item_id, "system": s, "source": "model", "contributor_id": None,
                  "text": f"{s} on {it.item_id}"} for s in systems]
        if pd.notna(it.original_reply):
            rows.append({"item_id": it.item_id, "system": "original", "source": "dataset",
                         "contributor_id": None, "text": it.original_reply})
        rows += [{"item_id": it.item_id, "system": "human", "source": "human", "contributor_id": w,
                  "text": f"{w} wrote for {it.item_id}"} for w in ("w1", "w2")]
    return pd.DataFrame(rows)


@pytest.fixture
def data():
    items = make_items()
    comp = make_completions(items)
    return items, comp, pairs_mod.design(comp, items, SEED)


def rate(data, **kw):
    items, comp, pairs = data
    args = {"raters": 6, "per_pair": 3, "qc_rate": 0.0, "qc_replies": QC, "seed": SEED} | kw
    return tasks.rating_tasks(items, pairs, comp, **args)


def assert_positions_contiguous(df):
    for _, g in df.groupby(["kind", "person_id"]):
        assert sorted(g["position"]) == list(range(len(g)))


def assert_balanced(df, pool):
    loads = df["person_id"].value_counts().reindex(pool, fill_value=0)
    assert loads.max() - loads.min() <= 1


def test_writing_distinct_writers_balanced_loads_contiguous_positions():
    items = make_items(7)
    out = tasks.writing_tasks(items, writers=4, per_context=3, seed=SEED)
    assert list(out.columns) == tasks.TASK_COLUMNS and len(out) == 21
    assert (out.groupby("item_id")["person_id"].nunique() == 3).all() and out["item_id"].nunique() == 7
    assert not out.duplicated(["person_id", "item_id"]).any()  # no writer sees a context twice
    assert_balanced(out, tasks.person_ids("writer", 4))  # 21 over 4: loads 5 or 6
    assert_positions_contiguous(out)
    assert out["position"].dtype == "int64" and out["task_id"].str.startswith("w-").all()
    assert out[tasks.TASK_COLUMNS[6:]].isna().all().all()
    ctx = out.drop_duplicates("item_id").set_index("item_id")["context"]
    assert json.loads(ctx["i3"]) == items.at[3, "history"] and "—" in ctx["i3"]  # not \u-escaped
    pd.testing.assert_frame_equal(out, tasks.writing_tasks(items, writers=4, per_context=3, seed=SEED))
    other = tasks.writing_tasks(items, writers=4, per_context=3, seed=SEED + 1)
    assert set(zip(other["person_id"], other["item_id"])) != set(zip(out["person_id"], out["item_id"]))


def test_person_ids_pad_to_the_pool():
    assert tasks.person_ids("writer", 12)[::11] == ["writer-01", "writer-12"]
    assert tasks.person_ids("rater", 100)[::99] == ["rater-001", "rater-100"]


@pytest.mark.parametrize("writers, per_context, setting", [(2, 3, "per_context"), (0, 1, "writers"),
                                                           (3, 0, "per_context")])
def test_writing_bad_settings_name_the_setting(writers, per_context, setting):
    with pytest.raises(ValueError, match=setting):
        tasks.writing_tasks(make_items(), writers=writers, per_context=per_context, seed=SEED)


def test_rating_raters_orders_and_texts(data):
    items, comp, pairs = data
    out = rate(data)
    assert out["pair_id"].nunique() == len(pairs)
    by_pair = out.groupby("pair_id")
    assert (by_pair["person_id"].nunique() == 3).all() and (by_pair.size() == 3).all()
    text = {(r.item_id, completion_ref(r.system, r.contributor_id)): r.text for r in comp.itertuples()}
    assert "human#w1" in set(out["ref_a"]) | set(out["ref_b"])
    for r in out.itertuples():
        assert (r.text_a, r.text_b) == (text[r.item_id, r.ref_a], text[r.item_id, r.ref_b])
    refs = {p.pair_id: (completion_ref(p.system_a, p.contributor_a),
                        completion_ref(p.system_b, p.contributor_b)) for p in pairs.itertuples()}
    as_designed = pd.Series([(r.ref_a, r.ref_b) == refs[r.pair_id] for r in out.itertuples()])
    swapped = pd.Series([(r.ref_b, r.ref_a) == refs[r.pair_id] for r in out.itertuples()])
    assert (as_designed ^ swapped).all()  # every row shows the pair's two sides, one way or the other
    both = out.assign(s=swapped.to_numpy()).groupby("pair_id")["s"].nunique()
    assert (both == 2).sum() > len(pairs) / 2  # raters of one pair see it in different orders
    assert out["qc_expected"].isna().all() and out[["system", "contributor_id", "text"]].isna().all().all()
    assert_positions_contiguous(out)
    pd.testing.assert_frame_equal(out, rate(data))


def test_rating_stable_when_pairs_are_added(data):
    items, comp, pairs = data
    before = rate(data)
    more = make_completions(items, systems=("m1", "m2", "m3"))
    pairs_more = pairs_mod.design(more, items, SEED)
    assert len(pairs_more) > len(pairs)
    after = tasks.rating_tasks(items, pairs_more, more, raters=6, per_pair=3, qc_rate=0.0, qc_replies=QC,
                               seed=SEED)
    key = ["pair_id", "person_id", "ref_a", "ref_b", "task_id"]
    old = after[after["pair_id"].isin(pairs["pair_id"])]
    assert set(map(tuple, old[key].to_numpy())) == set(map(tuple, before[key].to_numpy()))


def test_pair_sample_rate_zero_drops_exactly_that_kind(data):
    _, _, pairs = data
    out = rate(data, pair_sample={"human-model": 0.0})
    kept = set(out["pair_id"])
    assert kept == set(pairs.loc[pairs["kind"] != "human-model", "pair_id"])
    half = set(rate(data, pair_sample={"model-model": 0.5})["pair_id"])
    assert set(pairs.loc[pairs["kind"] != "model-model", "pair_id"]) <= half
    with pytest.raises(ValueError, match="pair_sample"):
        rate(data, pair_sample={"robot-model": 1.0})


def test_quality_checks_count_and_expected_side(data):
    items, _, _ = data
    q = 0.3
    out = rate(data, qc_rate=q)
    originals = dict(zip(items["item_id"], items["original_reply"]))
    for person, g in out.groupby("person_id"):
        real, qc = g[g["pair_id"].notna()], g[g["qc_expected"].notna()]
        assert len(real) + len(qc) == len(g) and len(qc) == math.ceil(len(real) * q / (1 - q))
    qc = out[out["qc_expected"].notna()]
    assert qc["pair_id"].isna().all() and set(qc["qc_expected"]) == {"A", "B"}
    assert not qc.duplicated(["person_id", "item_id", "ref_a", "ref_b"]).any()
    bad = {f"qc:{r['key']}": r["text"] for r in QC}
    for r in qc.itertuples():
        good, worse = ("a", "b") if r.qc_expected == "A" else ("b", "a")
        assert getattr(r, f"ref_{good}") == "original" and getattr(r, f"text_{good}") == originals[r.item_id]
        assert bad[getattr(r, f"ref_{worse}")] == getattr(r, f"text_{worse}")
    assert "i5" not in set(qc["item_id"])  # no original reply, never a check
    assert_positions_contiguous(out)
    s = tasks.summary(out).set_index("person_id")
    assert (s["n_qc"] == qc.groupby("person_id").size()).all()
    assert (s["n_tasks"] == out.groupby("person_id").size()).all()


@pytest.mark.parametrize("kw, match", [({"qc_rate": 1.0}, "qc_rate"), ({"qc_rate": -0.1}, "qc_rate"),
                                       ({"qc_rate": 0.2, "qc_replies": []}, "qc_replies"),
                                       ({"per_pair": 7}, "per_pair")])
def test_rating_bad_settings(data, kw, match):
    with pytest.raises(ValueError, match=match):
        rate(data, **kw)


def test_quality_checks_need_an_original_reply(data):
    items, comp, pairs = data
    with pytest.raises(ValueError, match="original reply"):
        rate((items.assign(original_reply=None), comp, pairs), qc_rate=0.2)


def test_missing_completion_text_names_the_pair(data):
    items, comp, pairs = data
    broken = comp.copy()
    broken.loc[(broken["item_id"] == "i2") & (broken["contributor_id"] == "w2"), "text"] = " "
    has_w2 = pairs["contributor_b"].eq("w2") | pairs["contributor_a"].eq("w2")
    pid = pairs.loc[(pairs["item_id"] == "i2") & has_w2, "pair_id"].min()
    with pytest.raises(ValueError, match=f"pair {pid}.*human#w2"):
        rate((items, broken, pairs))


def spot_data():
    items = make_items()
    comp = make_completions(items)
    tiny = {"item_id": "i0", "system": "tiny", "source": "model", "contributor_id": None, "text": "ok"}
    return items, pd.concat([comp, pd.DataFrame([tiny])], ignore_index=True)


def test_spot_checks_stratified_sample_and_balanced_labellers():
    items, comp = spot_data()  # m1 6, m2 6, original 5, human 12, tiny 1
    out = tasks.spot_check_tasks(comp, items, n=13, labellers=5, per_completion=2, seed=SEED)
    per_completion = out.groupby(["item_id", "system", out["contributor_id"].fillna("")])
    assert len(per_completion) == 13 and (per_completion["person_id"].nunique() == 2).all()
    assert (per_completion.size() == 2).all()
    # 13 over 5 systems: tiny has 1 of its share of 2 or 3, the other 4 share 12
    shares = per_completion.size().groupby(level="system").size().to_dict()
    assert shares == {"tiny": 1, "m1": 3, "m2": 3, "original": 3, "human": 3}
    assert len(out) == 26
    assert_balanced(out, tasks.person_ids("labeller", 5))  # 26 tasks: loads 5 or 6
    assert_positions_contiguous(out)
    human = out[out["system"] == "human"]
    assert human["contributor_id"].notna().all()
    assert out.loc[out["system"] != "human", "contributor_id"].isna().all()
    comp_keys = zip(comp["item_id"], comp["system"], pairs_mod.key_text(comp["contributor_id"]))
    text = dict(zip(comp_keys, comp["text"]))
    keys = zip(out["item_id"], out["system"], pairs_mod.key_text(out["contributor_id"]))
    assert [text[k] for k in keys] == out["text"].tolist()
    pd.testing.assert_frame_equal(out, tasks.spot_check_tasks(comp, items, 13, 5, 2, SEED))
    even = tasks.spot_check_tasks(comp[comp["system"] != "tiny"], items, n=10, labellers=3, per_completion=2,
                                  seed=SEED)
    assert sorted(even.groupby("system")["item_id"].size() // 2) == [2, 2, 3, 3]
    with pytest.raises(ValueError, match="per_completion"):
        tasks.spot_check_tasks(comp, items, n=5, labellers=2, per_completion=3, seed=SEED)


def test_task_ids_unique_across_kinds(data):
    items, comp, _ = data
    everything = pd.concat([tasks.writing_tasks(items, 4, 3, SEED), rate(data, qc_rate=0.4),
                            tasks.spot_check_tasks(comp, items, 12, 3, 2, SEED)], ignore_index=True)
    assert everything["task_id"].is_unique
    assert set(tasks.summary(everything)["kind"]) == {"writing", "rating", "spot_check"}


def test_empty_inputs_give_empty_tables(data):
    items, comp, pairs = data
    for out in (tasks.writing_tasks(items.iloc[:0], 4, 3, SEED),
                rate((items.iloc[:0], comp.iloc[:0], pairs.iloc[:0]), qc_rate=0.2),
                tasks.spot_check_tasks(comp.iloc[:0], items.iloc[:0], 10, 3, 2, SEED)):
        assert out.empty and list(out.columns) == tasks.TASK_COLUMNS and out["position"].dtype == "int64"
    assert tasks.summary(tasks.writing_tasks(items.iloc[:0], 4, 3, SEED)).empty


def test_a_count_of_pairs_for_people_is_exact_and_takes_the_smallest_coins(data):
    items, comp, pairs = data
    every = rate(data, per_pair=1)
    some = rate(data, per_pair=1, n_pairs=5)
    assert some["pair_id"].nunique() == 5
    coin = {p: pairs_mod.unit(SEED, "rating-sample", p) for p in pairs["pair_id"]}
    assert set(some["pair_id"]) == set(sorted(coin, key=coin.get)[:5])
    assert set(some["pair_id"]) < set(every["pair_id"])
    assert rate(data, per_pair=1, n_pairs=10_000)["pair_id"].nunique() == every["pair_id"].nunique()
    with pytest.raises(ValueError, match="pairs: 0 is not a number of pairs"):
        rate(data, n_pairs=0)


def test_the_paper_config_gives_the_papers_human_design():
    """config/paper.yaml's annotation settings on the paper's shape (300 contexts, 280 with a dataset reply, 15
    model systems, 3 writers per context) and its LLM judging budget: 12 writers, 3 per context (900
    completions); 15 raters, exactly 1,125 pairs (§4.4's human-LLM agreement subset) 5 times each; ~42,000
    pairs for the LLM judges (§4.2). The paper's own items need ../shared; these stand in for them."""
    from heart.completions import generate

    from heart.common.config import validate_config

    cfg = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    validate_config(cfg, source="config/paper.yaml")  # with the schema's defaults
    a = cfg["annotation"]
    items = make_items(300).assign(original_reply=[f"reply {i}" if i < 280 else None for i in range(300)])
    comp = generate.stand_ins(items, sorted(cfg["systems"]), cfg["human_completions"]["per_context"])
    llm_pairs = pairs_mod.design(comp, items, cfg["judging"]["seed"], sample=cfg["judging"]["pair_sample"])
    assert 41_500 <= len(llm_pairs) <= 42_500
    writing = tasks.writing_tasks(items, a["writing"]["writers"], a["writing"]["per_context"], a["seed"])
    assert len(writing) == 900 and writing["person_id"].nunique() == 12
    assert writing.groupby("item_id")["person_id"].nunique().eq(3).all()
    rating = tasks.rating_tasks(items, llm_pairs, comp, a["rating"]["raters"], a["rating"]["per_pair"],
                                a["rating"]["qc_rate"], QC, a["seed"], pair_sample=a["rating"]["pair_sample"],
                                n_pairs=a["rating"]["pairs"])
    real = rating[rating["qc_expected"].isna()]
    assert real["pair_id"].nunique() == 1125 and len(real) == 5625 and rating["person_id"].nunique() == 15
    assert real.groupby("pair_id")["person_id"].nunique().eq(5).all()
    # every kind of pair is among them, about as often as in the design (13,500 of ~42,000 are human-model)
    kinds = llm_pairs.set_index("pair_id").loc[real["pair_id"].unique(), "kind"].value_counts()
    assert set(kinds.index) == {"model-model", "human-model", "dataset-model"} and 250 < kinds["human-model"] < 480


def test_every_flagged_completion_goes_to_per_flag_reviewers_with_balanced_loads_and_no_system_shown():
    from support.annotation import make_completions as comps, make_items as its

    items = its(5)
    comp = comps(items)
    flags = pd.DataFrame([{"item_id": f"item{i}", "system": "secret-model-x", "contributor_id": None,
                           "categories": "violence"} for i in range(5)])
    t = tasks.safety_review_tasks(flags, comp, items, reviewers=3, per_flag=2, seed=5)
    assert len(t) == 10 and t["kind"].eq("safety_review").all()
    assert t.groupby("item_id")["person_id"].nunique().eq(2).all()
    assert sorted(t["person_id"].value_counts().tolist()) == [3, 3, 4]  # 10 reviews over 3 people
    assert set(t["text"]) == {f"Reply 0 to item{i}." for i in range(5)} and set(t["categories"]) == {"violence"}
    assert t.equals(tasks.safety_review_tasks(flags, comp, items, 3, 2, 5))  # seeded
    with pytest.raises(ValueError, match="per_flag: 4 distinct people per task but only 3"):
        tasks.safety_review_tasks(flags, comp, items, 3, 4, 5)
    with pytest.raises(ValueError, match="safety flags: completion secret-model-z of item 'item.' has no text"):
        tasks.safety_review_tasks(flags.assign(system="secret-model-z"), comp, items, 3, 2, 5)
