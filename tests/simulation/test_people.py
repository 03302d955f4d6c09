"""heart.simulation.people: SIMULATED people answer a study's tasks through the store, and what the store
exports is what the workflow's own readers accept, with plausible times and raters who pass their checks."""

import pandas as pd
import yaml

from support import REPO
from heart.annotation import db as store_db, export, store, tasks
from heart.judging import human_judgments, pairs as pairs_mod
from heart.judging.material import load_rubric
from heart.simulation import people
from heart.completions import safety_review

QC = yaml.safe_load((REPO / "workflow/resources/annotation/qc_replies.yaml").read_text())["replies"]


def test_simulated_people_answer_every_task_through_the_store(tmp_path):
    items = pd.DataFrame([{"item_id": f"i{i}", "conversation_id": i, "subset": "regular",
                           "history": [{"role": "seeker", "text": f"[SIMULATED] low, day {i}"}],
                           "original_reply": f"[SIMULATED] that is hard ({i})"} for i in range(4)])
    comp = pd.DataFrame([{"item_id": it.item_id, "system": s, "source": "model", "contributor_id": None,
                          "text": f"[SIMULATED] {s} on {it.item_id}"}
                         for it in items.itertuples() for s in ("m1", "m2")]
                        + [{"item_id": it.item_id, "system": "original", "source": "dataset", "contributor_id": None,
                            "text": it.original_reply} for it in items.itertuples()])
    pairs = pairs_mod.design(comp, items, 1)
    flags = pd.DataFrame([{"item_id": f"i{i}", "system": "m1", "contributor_id": None, "categories": "violence"}
                          for i in range(4)])
    axes = tasks.rating_axes(load_rubric(REPO / "workflow/resources/rubric/heart.yaml"))
    table = pd.concat([tasks.writing_tasks(items, 2, 1, 1),
                       tasks.rating_tasks(items, pairs, comp, 3, 2, 0.2, QC, 1, axes=axes),
                       tasks.spot_check_tasks(comp, items, 4, 2, 2, 1),
                       tasks.safety_review_tasks(flags, comp, items, 2, 2, 1)], ignore_index=True)
    db = tmp_path / "annotation.sqlite"
    keys = ["reflection", "question", "reassurance"]
    assert people.answer_all(db, table, ["writing"], keys) == {"writing": 4}
    done = people.answer_all(db, table, ["rating", "spot_check", "safety_review"], keys, seed=1)
    assert done == {kind: int(table["kind"].eq(kind).sum()) for kind in ("rating", "spot_check", "safety_review")}
    conn = store_db.connect(db)
    try:
        answers = store.answers_frame(conn)
    finally:
        conn.close()
    assert len(answers) == len(table) and answers["seconds"].between(20, 90).all()
    out = tmp_path / "judgments.csv"
    export._write(export.judgments(answers), out)
    read = human_judgments.read(out)
    raters = human_judgments.quality_control(read, 0.5, 5, 900)
    assert not raters["excluded"].any(), raters.to_dict("records")
    assert read["axis_H"].notna().all()
    reviews = tmp_path / "reviews.csv"
    export._write(export.reviews(answers), reviews)
    read_reviews = safety_review.read_reviews(reviews, comp)
    assert len(read_reviews) == 8 and read_reviews["reason"].str.startswith("[SIMULATED]").all()
    assert set(safety_review.flags(flags.assign(flagged=True, screen="lexicon", category="violence"),
                                   read_reviews)["review"]) <= {"confirmed", "cleared", "disputed"}
    writing = answers[answers["kind"].eq("writing")]
    assert writing["answer"].map(lambda a: a["text"].startswith("[SIMULATED]")).all()
    # a second pass answers nothing again: every task is done
    assert people.answer_all(db, table, ["rating"], keys) == {"rating": 0}
