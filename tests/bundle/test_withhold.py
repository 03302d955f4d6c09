"""A completion whose safety flag is confirmed, left out of the bundle's public files (completions.confirmed_flags:
bundle; heart.bundle.export.withhold): its text goes, and with it everything that may quote it; its pairs and
verdicts stay. SYNTHETIC rows, written here."""

import pandas as pd

from heart.bundle import export


def test_withholding_removes_the_text_and_what_may_quote_it_and_keeps_the_judgments():
    items = pd.DataFrame({"item_id": ["i1", "i2"], "original_reply": ["o1", "o2"]})
    completions = pd.DataFrame([("i1", "m", None, "harmful text"), ("i2", "m", None, "fine"),
                                ("i1", "n", None, "other")], columns=["item_id", "system", "contributor_id", "text"])
    pairs = pd.DataFrame([("p1", "i1", "m", None, "n", None), ("p2", "i2", "m", None, "original", None),
                          ("p3", "i1", "human", "w1", "n", None)],
                         columns=["pair_id", "item_id", "system_a", "contributor_a", "system_b", "contributor_b"])
    verdicts = pd.DataFrame({"pair_id": ["p1", "p2", "p3"], "rationale": ["A says 'harmful text'", "ok", "w1 said"]})
    tags = pd.DataFrame({"item_id": ["i1", "i1"], "system": ["m", "n"], "contributor_id": [None, None],
                         "evidence": ["harmful text", "other"]})
    human = {"human_completions": pd.DataFrame({"item_id": ["i1", "i2"], "contributor_id": ["w1", "w1"],
                                                "text": ["human harm", "human fine"]}),
             "human_judgments": pd.DataFrame({"item_id": ["i1", "i2"], "shown_a": ["human#w1", "m"],
                                              "shown_b": ["n", "original"], "rationale": ["quotes it", "fine"]})}
    withheld = {("i1", "m", ""), ("i1", "human", "w1"), ("i2", "original", "")}
    it, comp, ver, tg, hum = export.withhold(withheld, items, completions, pairs, verdicts, tags, human)
    assert comp["text"].tolist() == ["fine", "other"]
    assert it["original_reply"].isna().tolist() == [False, True]
    assert ver["rationale"].isna().all() and len(ver) == 3  # every pair touches a withheld one
    assert tg["evidence"].isna().tolist() == [True, False]
    assert hum["human_completions"]["text"].tolist() == ["human fine"]
    assert hum["human_judgments"]["rationale"].tolist() == ["", ""]
    untouched = export.withhold({("i2", "m", "")}, items, completions, pairs, verdicts, tags, human)[2]
    assert untouched["rationale"].isna().tolist() == [False, True, False]
