"""SIMULATED people doing a study's human tasks through the annotation store (the rehearsal's human half).

``python -m heart.simulation.people --tasks results/annotation/tasks.parquet --kinds writing`` loads the task
table into the store the config names (as ``python -m heart.annotation serve`` does) and has every person of
those kinds answer every task of theirs, in their order, through :mod:`heart.annotation.store` -- the calls a
page makes: next task, serve, answer. Nothing here is data: every text says SIMULATED.

* A writer writes "[SIMULATED] ..." (a few words, different per writer and context).
* A rater prefers the completion of higher latent quality -- a number fixed by the completion's reference
  (system, or ``human#writer``) and context, so every rater sees the same two completions the same way --
  with their own noise, on the 5-point scale; a quality check goes to the real reply 19 times in 20; where the
  task asks for axis marks, each axis follows the overall preference with its own noise ("same" when small).
* A labeller ticks strategies by a coin per (completion, strategy), agreeing with the other labeller 9
  times in 10.
* Time on task is a simulated clock (20-90 s a task), so the workflow's quality control (median seconds
  per judgment) sees plausible times; the store records it like a page's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from heart.annotation import db as store_db, store


def _unit(*parts) -> float:
    """A number in [0, 1) fixed by ``parts``."""
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "big") / 2 ** 64


def _quality(item: str, ref: str) -> float:
    """A completion's latent quality (about N(0, 1)): fixed by its context and reference."""
    from statistics import NormalDist

    if ref == "original":
        return 0.3
    if ref.startswith("qc:"):
        return -3.0
    return NormalDist().inv_cdf(min(max(_unit("quality", item, ref), 1e-9), 1 - 1e-9))


def rating(task: dict, person: str, seed: int) -> dict:
    """A SIMULATED rater's answer to a rating task (choice 1-5, rationale, axis marks if asked)."""
    rng = np.random.default_rng(int(_unit(seed, "rating", person, task["task_id"]) * 2 ** 32))
    if task.get("qc_expected"):
        good = task["qc_expected"] if rng.random() < 0.95 else ("B" if task["qc_expected"] == "A" else "A")
        choice = 1 if good == "A" else 5
        diff = 2.0 if good == "A" else -2.0
    else:
        diff = _quality(task["item_id"], task["ref_a"]) - _quality(task["item_id"], task["ref_b"]) + rng.normal(0, 0.8)
        choice = int(np.clip(3 - np.round(diff), 1, 5))
    answer = {"choice": choice, "rationale": "[SIMULATED] a simulated rater's reason"}
    if task.get("axes"):
        marks = {}
        for axis in json.loads(task["axes"]):
            d = diff + rng.normal(0, 0.6)
            marks[axis["key"]] = "A" if d > 0.5 else "B" if d < -0.5 else "same"
        answer["axes"] = marks
    return answer


def spot_check(task: dict, person: str, strategies: list[str], seed: int) -> dict:
    """A SIMULATED labeller's strategies: a coin per (completion, strategy), flipped 1 time in 10 per person."""
    key = f"{task['item_id']}|{task.get('system')}|{task.get('contributor_id')}"
    present = [s for s in strategies if (_unit(seed, "uses", key, s) < 0.3) != (_unit(seed, person, key, s) < 0.1)]
    return {"present": present}


def safety_review(task: dict, person: str, seed: int) -> dict:
    """A SIMULATED reviewer's decision: a coin per flagged completion (confirm 1 time in 3), flipped 1 time in 10
    per person, with a SIMULATED reason."""
    key = f"{task['item_id']}|{task.get('system')}|{task.get('contributor_id')}"
    confirm = (_unit(seed, "harmful", key) < 1 / 3) != (_unit(seed, person, key, "review") < 0.1)
    return {"decision": "confirm" if confirm else "clear",
            "reason": f"[SIMULATED] {person} {'confirms' if confirm else 'clears'} the {task.get('categories')} flag"}


def writing(task: dict, person: str) -> dict:
    return {"text": f"[SIMULATED] {person} writes to the seeker of {task['item_id']}: that sounds hard, "
                    "what would help most right now?", "pasted": False}


def answer_all(db, tasks: pd.DataFrame, kinds, strategies: list[str], seed: int = 0) -> dict[str, int]:
    """Load ``tasks`` into the store ``db`` and answer every unanswered task of ``kinds``; returns answers
    stored per kind."""
    store.create(db)
    conn = store_db.connect(db)
    done = dict.fromkeys(kinds, 0)
    try:
        store.load_tasks(conn, tasks, source="simulated people")
        people = sorted(set(tasks.loc[tasks["kind"].isin(kinds), "person_id"]))
        clock = time.time()
        for person in people:
            while (task := store.next_task(conn, person)) is not None:
                kind = task["kind"]
                if kind not in kinds:
                    break
                seconds = 20 + 70 * _unit(seed, "seconds", person, task["task_id"])
                nonce = store.serve(conn, person, task["task_id"], at=clock)
                value = (writing(task, person) if kind == "writing"
                         else rating(task, person, seed) if kind == "rating"
                         else safety_review(task, person, seed) if kind == "safety_review"
                         else spot_check(task, person, strategies, seed))
                store.answer(conn, store.served(conn, nonce, person), kind, value, at=clock + seconds)
                clock += seconds
                done[kind] += 1
    finally:
        conn.close()
    return done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=Path, default=Path("results/annotation/tasks.parquet"))
    ap.add_argument("--db", type=Path, default=None, help="default: the store rule annotation_tasks recorded "
                    "beside --tasks (serve.json)")
    ap.add_argument("--kinds", nargs="+", choices=("writing", "rating", "spot_check", "safety_review"),
                    required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    recorded = json.loads((args.tasks.parent / "serve.json").read_text())
    db = args.db or Path(recorded["db"])
    from heart import WORKFLOW_DIR
    from heart.tagging.taxonomy import load_taxonomy, strategy_keys

    taxonomy = WORKFLOW_DIR / "resources" / "taxonomy" / f"{recorded.get('taxonomy', 'strategies')}.yaml"
    start = time.time()
    done = answer_all(db, pd.read_parquet(args.tasks), args.kinds, strategy_keys(load_taxonomy(taxonomy)), args.seed)
    print(f"SIMULATED people answered {done} in {time.time() - start:.1f} s (store {db})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
