"""The MT-Bench and Arena recipes on the sources' real shapes (heart.tools.vote_recipes)."""

import json

import pandas as pd
import pytest

from support import FIXTURES
from heart.judging import judgment_import as ji
from heart.tools import vote_recipes as recipes

MT = FIXTURES / "imported" / "mt_bench"


def test_mt_bench_both_splits_become_the_public_format():
    out = recipes.mt_bench(recipes.load(MT / "human.jsonl"), recipes.load(MT / "gpt4_pair.jsonl"))
    assert out.report["human_repeated_votes_dropped"] == 1 and out.report["gpt4_inconsistent"] == 1
    v = out.votes
    assert v["order"].isna().all()  # neither split records which model was shown first
    expert_0 = v[(v["judge"] == "expert_0") & (v["item"] == "81/turn1")]
    assert len(expert_0) == 1 and expert_0.iloc[0]["system_b"] == "gpt-4" and expert_0.iloc[0]["winner"] == "b"
    gpt4 = v[v["judge_kind"] == "llm"]
    assert set(gpt4["judge"]) == {"gpt4-pair"} and len(gpt4) == 8
    by_item = gpt4.groupby("item")["winner"].apply(list).to_dict()
    assert by_item == {"81/turn1": ["a", "a"], "81/turn2": ["a", "b"], "82/turn1": ["tie", "tie"],
                       "82/turn2": ["b", "b"]}
    converted = ji.convert(ji.from_frame(v))
    status = converted.combined.set_index("item_id")["status"].to_dict()
    assert status == {"81/turn1": "ok", "81/turn2": "inconsistent", "82/turn1": "tie", "82/turn2": "ok"}


def test_mt_bench_human_split_alone_and_the_real_parquet_shape(tmp_path):
    human = recipes.load(MT / "human.jsonl")
    human.to_parquet(tmp_path / "human.parquet")  # nested conversations survive the round trip
    out = recipes.mt_bench(recipes.load(tmp_path / "human.parquet"))
    assert len(out.votes) == 8 and set(out.votes["judge_kind"]) == {"human"}
    ji.from_frame(out.votes)  # passes the importer's checks: one judgment per rater and pair


def test_an_unknown_winner_names_the_split_row_and_field(tmp_path):
    rows = [json.loads(line) for line in (MT / "gpt4_pair.jsonl").read_text().splitlines()]
    rows[2]["winner"] = "tie (bothbad)"
    with pytest.raises(recipes.RecipeError, match=r"gpt4_pair.jsonl, row 3: field 'winner' is 'tie \(bothbad\)'"):
        recipes.mt_bench(gpt4_pair=pd.DataFrame(rows), gpt4_source=str(MT / "gpt4_pair.jsonl"))
    with pytest.raises(recipes.RecipeError, match=r"human, row 2: field 'judge' is empty"):
        bad = recipes.load(MT / "human.jsonl")
        bad.loc[1, "judge"] = None
        recipes.mt_bench(bad)
    with pytest.raises(recipes.RecipeError, match=r"missing column\(s\) \['turn'\]"):
        recipes.mt_bench(recipes.load(MT / "human.jsonl").drop(columns="turn"))


def test_without_the_recipe_the_repeated_vote_is_still_refused():
    raw = recipes.load(MT / "human.jsonl")
    votes = pd.DataFrame({"item": raw["question_id"].astype(str) + "/turn" + raw["turn"].astype(str),
                          "system_a": raw["model_a"], "system_b": raw["model_b"], "judge": raw["judge"],
                          "judge_kind": "human", "winner": raw["winner"].map({"model_a": "a", "model_b": "b",
                                                                              "tie": "tie"})})
    with pytest.raises(ji.JudgmentImportError, match=r"rows 1 and 4: .*rater 'expert_0' judged .* twice"):
        ji.from_frame(votes)


def test_arena_battles_keep_the_last_vote_by_time_and_fold_both_ties():
    battles = pd.DataFrame({
        "question_id": ["q1", "q1", "q2", "q3"], "model_a": ["m1", "m2", "m1", "m2"],
        "model_b": ["m2", "m1", "m3", "m3"], "winner": ["model_b", "model_a", "tie (bothbad)", "tie"],
        "judge": ["u1", "u1", "u1", "u2"], "turn": [1, 1, 1, 2], "tstamp": [20.0, 10.0, 5.0, 6.0]})
    out = recipes.arena(battles)
    assert out.report["repeated_votes_dropped"] == 1
    q1 = out.votes[out.votes["item"] == "q1"]
    assert len(q1) == 1 and q1.iloc[0]["system_a"] == "m1"  # the later vote (t = 20) is kept
    assert list(out.votes["winner"]) == ["b", "tie", "tie"] and set(out.votes["order"]) == {"AB"}
    ji.from_frame(out.votes)


def test_the_command_line_writes_the_votes(tmp_path, capsys):
    dest = tmp_path / "votes.csv"
    assert recipes.main(["mt-bench", "--gpt4-pair", str(MT / "gpt4_pair.jsonl"), "-o", str(dest)]) == 0
    assert "8 records" in capsys.readouterr().out
    assert len(ji.read(dest)) == 8
    assert recipes.main(["arena", str(tmp_path / "nope.txt"), "-o", str(dest)]) == 2
    assert "unknown file type" in capsys.readouterr().err


AH = FIXTURES / "imported" / "arena_hard" / "gpt-4-1106-preview"  # arena-hard-auto's model_judgment shape


def test_arena_hard_games_are_the_two_shown_orders_with_graded_strengths():
    """Values worked by hand in tests/fixtures/imported/README.md: per model the last line of a question holds,
    game 1 shows the baseline as A, ">>" is strength 3 and ">" 1, a null score is an unparsed answer."""
    parts = [recipes.arena_hard(recipes.load(AH / f"{m}.jsonl"), "gpt-4-0314", m) for m in ("model-x", "model-y")]
    assert parts[0].report == {"lines": 4, "repeated_lines_dropped": 1, "games": 6, "games_unparsed": 1,
                               "models": 1}
    v = pd.concat([p.votes for p in parts], ignore_index=True)
    got = [(r.system_b, r.item, r.order, r.winner, None if pd.isna(r.strength) else int(r.strength))
           for r in v.itertuples()]
    assert sorted(got) == sorted([
        ("model-x", "q1", "AB", "b", 1), ("model-x", "q1", "BA", "b", 1),  # the rerun's line, not the first
        ("model-x", "q2", "AB", "b", 1), ("model-x", "q2", "BA", "unparsed", None),
        ("model-x", "q3", "AB", "tie", None), ("model-x", "q3", "BA", "a", 3),
        ("model-y", "q1", "AB", "a", 3), ("model-y", "q1", "BA", "a", 3),
        ("model-y", "q2", "AB", "b", 1), ("model-y", "q2", "BA", "b", 1)])
    assert set(v["system_a"]) == {"gpt-4-0314"} and set(v["judge_kind"]) == {"llm"}
    out = ji.convert(ji.from_frame(v))
    combined = out.combined.set_index(["item_id", "pair_id"])
    by = {(i, s): r for (i, _), r in combined.iterrows() for s in [r["system_b"] if r["system_a"] == "gpt-4-0314"
                                                                     else r["system_a"]]}
    assert (by[("q2", "model-x")]["status"], by[("q2", "model-x")]["n_orders"]) == ("ok", 1)  # the order read
    assert by[("q3", "model-x")]["status"] == "ok" and by[("q3", "model-x")]["strength"] == 2  # tie + a3
    assert out.source_rows("arena-hard")[0]["n_unparsed"] == 1
    shown_first_won = out.verdicts["winner_shown"].eq("A").sum()
    assert (out.verdicts["winner_shown"].isin(["A", "B"]).sum(), shown_first_won) == (8, 3)


def test_an_arena_hard_score_outside_its_labels_names_the_line():
    rows = [json.loads(line) for line in (AH / "model-y.jsonl").read_text().splitlines()]
    rows[1]["games"][1]["score"] = "A>>>B"
    with pytest.raises(recipes.RecipeError, match=r"model-y, row 2: field 'games\[1\].score' is 'A>>>B'"):
        recipes.arena_hard(pd.DataFrame(rows), "gpt-4-0314", "model-y")
    rows[1]["games"] = rows[1]["games"][:1]
    with pytest.raises(recipes.RecipeError, match=r"row 2: field 'games' holds 1 game\(s\)"):
        recipes.arena_hard(pd.DataFrame(rows), "gpt-4-0314", "model-y")


PANDALM = FIXTURES / "imported" / "pandalm" / "testset.json"  # PandaLM's testset-v1.json shape


def test_pandalm_annotator_columns_become_three_raters_and_a_missing_label_stays_missing():
    out = recipes.pandalm(recipes.load(PANDALM), "testset.json")
    assert out.report == {"rows": 4, "votes": 9, "labels_missing": 1, "repeated_votes_dropped": 2,
                          "annotators": 3}
    v = out.votes
    assert v["order"].isna().all() and v["strength"].isna().all()  # neither is in the source
    p3 = v[(v["item"] == "user_oriented_task_2")].set_index("judge")["winner"].to_dict()
    assert p3 == {"annotator1": "a", "annotator2": "b", "annotator3": "b"}  # the later record's labels
    from heart.stats.agreement.inter_human import inter_human

    table = ji.convert(ji.from_frame(v)).judgments
    agreement = inter_human(table, n_boot=0).set_index(["measure", "labels"])
    # by hand: P1 b b tie (1 of 3 rater pairs agree), P2 a a a (3 of 3), P3 a b b (1 of 3): 5 / 9
    assert agreement.loc[("percent_agreement", "winner (a/tie/b)"), "value"] == pytest.approx(5 / 9)
    assert agreement.loc[("fleiss_kappa", "preference (-2..2)"), "note"].startswith("no strengths given")


def test_a_pandalm_key_or_label_outside_the_shape_names_the_row(tmp_path):
    rows = json.loads(PANDALM.read_text())
    rows[1]["cmp_key"] = "opt_7b_llama-7b"
    with pytest.raises(recipes.RecipeError, match=r"row 2: field 'cmp_key' is 'opt_7b_llama-7b'"):
        recipes.pandalm(pd.DataFrame(rows))
    rows = json.loads(PANDALM.read_text())
    rows[0]["label_2"] = "3"
    with pytest.raises(recipes.RecipeError, match=r"row 1: field 'label_2' is '3'"):
        recipes.pandalm(pd.DataFrame(rows))


ALPACA = FIXTURES / "imported" / "alpaca_eval" / "annotations.json"  # AlpacaEval's annotations shape


def test_alpaca_eval_annotations_keep_each_annotators_last_vote_and_no_preference_is_no_vote():
    out = recipes.alpaca_eval(recipes.load(ALPACA), source="annotations.json")
    assert out.report == {"rows": 8, "votes": 6, "preferences_missing": 1, "repeated_votes_dropped": 1,
                          "annotators": 3}
    v = out.votes
    assert v["item"].str.fullmatch(r"alpaca-[0-9a-f]{12}").all() and v["item"].nunique() == 2
    assert v["order"].isna().all() and v["strength"].isna().all() and set(v["judge_kind"]) == {"human"}
    table = ji.convert(ji.from_frame(v)).judgments
    france = table[table["item_id"] == v.loc[v["winner"] == "tie", "item"].iloc[0]]
    won = {r.judge: (None if pd.isna(r.winner) else r.system_a if r.winner == "a" else r.system_b)
           for r in france.itertuples()}
    # worker_12 voted twice, the second time written the other way round: the last vote (alpaca-7b) holds
    assert won == {"human:worker_11": None, "human:worker_12": "alpaca-7b", "human:worker_13": "text_davinci_003"}
    from heart.stats.agreement.inter_human import inter_human

    agreement = inter_human(table, n_boot=0).set_index(["measure", "labels"])
    # by hand: health davinci, davinci, alpaca (1 of 3 rater pairs agree); France tie, alpaca, davinci (0 of 3)
    assert agreement.loc[("percent_agreement", "winner (a/tie/b)"), "value"] == pytest.approx(1 / 6)


def test_a_soft_preference_is_not_read_as_a_choice():
    rows = json.loads(ALPACA.read_text())
    rows[0]["preference"] = 1.73  # a weighted LLM annotator's expected preference
    with pytest.raises(recipes.RecipeError, match=r"row 1: field 'preference' is 1.73; .*soft preference"):
        recipes.alpaca_eval(pd.DataFrame(rows))
