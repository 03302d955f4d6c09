"""A SIMULATED bundle at known Elo ratings: the paper's Figure 4 as a known-answer test of ``make paper``.

:func:`write` makes a whole study's tables -- items, every system's completions, one human writer per
context, the pair design, every LLM judge's verdict per pair in one shown order -- with verdicts drawn from
a Bradley–Terry model at the given Elo values (no conversation effect, no judge noise), and exports them
with :func:`heart.bundle.export.write`, as a real run would. A run from it must give the Elo values back.
Nothing here is data: every text says SIMULATED, the study's settings carry ``simulated: true`` (so every
figure and table of the run says so), and the bundle's manifest and README are labelled SIMULATED.

The human system is one writer per context, so Best Human (chosen per context after judging) is that
writer's completion and its known value is the writer's; with several writers the chosen one is flattered
(heart.stats.leaderboard), and no value could be given back.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from heart import WORKFLOW_DIR
from heart.bundle import export
from heart.bundle.study import study_settings
from heart.common import tableio
from heart.common.vocabulary import AXIS_COLUMNS
from heart.completions.generate import static_rows
from heart.judging import material
from heart.judging import pairs as pairs_mod
from heart.simulation import simulate

WRITER = "sim-writer"


def items(n_items: int = 300, n_adversarial: int = 20) -> pd.DataFrame:
    """SIMULATED items (items.schema.yaml): a short history each, the last n_adversarial adversarial (no
    dataset reply)."""
    rows = []
    for i in range(n_items):
        adversarial = i >= n_items - n_adversarial
        rows.append({
            "item_id": f"sim-item-{i:03d}", "conversation_id": 100000 + i, "cluster": str(100000 + i),
            "release_key": None, "subset": "adversarial" if adversarial else "regular", "profile": None,
            "seeker_turn_index": None,
            "history": [{"role": "seeker", "text": f"[SIMULATED] seeker, context {i}"},
                        {"role": "supporter", "text": "[SIMULATED] supporter"},
                        {"role": "seeker", "text": f"[SIMULATED] seeker again, context {i}"}],
            "original_reply": None if adversarial else f"[SIMULATED] the dataset's reply, context {i}",
            "original_status": None if adversarial else "next_turn", "original_strategies": [],
            "emotion_type": "sadness", "problem_type": "SIMULATED", "situation": None, "flags": [],
            "response_potential": None, "distress": None, "conflict": None, "help_request": None,
            "n_strategy_families": None})
    return pd.DataFrame(rows)


def completions(item_table: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Every model's completion of every item, the dataset's reply where there is one, one human writer's."""
    ids = item_table["item_id"].tolist()
    parts = [static_rows(ids, m, "model", [f"[SIMULATED] {m} on {i}" for i in ids]).assign(model=f"sim/{m}")
             for m in models]
    has = item_table[item_table["original_reply"].notna()]
    parts.append(static_rows(has["item_id"], "original", "dataset", has["original_reply"]))
    parts.append(static_rows(ids, "human", "human", [f"[SIMULATED] a writer on {i}" for i in ids], [WRITER] * len(ids)))
    return pd.concat(parts, ignore_index=True)


def verdicts(pairs: pd.DataFrame, elo: pd.Series, judges: list[str], seed: int = 0,
             eligible: dict | None = None) -> pd.DataFrame:
    """Each judge's verdict on every pair it may judge (``eligible``: judge -> mask of ``pairs``; default all) in
    one random shown order (judge_verdicts.schema.yaml): system_a wins with its Bradley–Terry probability at
    ``elo`` (:func:`heart.simulation.simulate.win_probability`); strength 3, every axis marked for the winner
    (+-2)."""
    rng = np.random.default_rng(seed)
    missing = sorted((set(pairs["system_a"]) | set(pairs["system_b"])) - set(elo.index))
    if missing:
        raise ValueError(f"elo: no value for system(s) {missing}")
    p_a = simulate.win_probability(elo.reindex(pairs["system_a"]), elo.reindex(pairs["system_b"]))
    frames = []
    for judge in judges:
        a_wins = rng.random(len(pairs)) < p_a
        ab = rng.random(len(pairs)) < 0.5
        signed = np.where(a_wins, 3, -3)
        shown_first = np.where(ab, pairs["system_a"], pairs["system_b"])
        frames.append(pd.DataFrame({
            "pair_id": pairs["pair_id"].to_numpy(), "judge": judge, "order": np.where(ab, "AB", "BA"),
            "shown_a": shown_first, "parse_ok": True, "parse_error": None,
            "winner_shown": np.where(a_wins == ab, "A", "B"), "signed": signed,
            "rationale": "SIMULATED", "raw_text": "SIMULATED", "cache_key": "simulated", "from_cache": False,
            "neutralised_tokens": 0, "latency_s": None, "cost_usd": None,
            **{col: np.where(a_wins, 2, -2) for col in AXIS_COLUMNS},
            "margin": None, **{f"margin_{c[-1]}": None for c in AXIS_COLUMNS}})[
                np.asarray((eligible or {}).get(judge, np.ones(len(pairs), dtype=bool)), dtype=bool)])
    out = pd.concat(frames, ignore_index=True)
    for col in ("signed", *AXIS_COLUMNS):
        out[col] = out[col].astype("Int64")
    return out


def write(folder, config: dict, elo: pd.Series, tmp, n_items: int = 300, seed: int = 0) -> dict:
    """Export a SIMULATED study at ``elo`` (system -> Elo; "human" is the writer) under ``config`` (a whole,
    validated config: its judges, pair design and statistics are the study's) to bundle ``folder``; ``tmp``
    is a scratch folder for the human file. Systems of ``elo`` that the config does not list become
    imported systems of their own family. Returns the manifest."""
    config = copy.deepcopy(config)
    models = [s for s in elo.index if s not in ("human", "original")]
    config["simulated"] = True
    config["imported_systems"] = {s: {"path": "bundle", "family": s.split("-")[0]} for s in models
                                  if s not in config["systems"]}
    item_table = items(n_items)
    comp = completions(item_table, models)
    pair_table = pairs_mod.design(comp, item_table, config["judging"]["seed"], config["judging"]["pair_sample"])
    human = comp[comp["source"].eq("human")][["item_id", "contributor_id", "text"]]
    human_file = tmp / "human_completions.csv"
    human.to_csv(human_file, index=False)
    # a judge never judges its own family's output (judging.exclude_own_family, paper §9.6), as in the study
    families = {s: config["models"][c["model"]]["family"] for s, c in config["systems"].items()}
    families |= {s: c["family"] for s, c in config["imported_systems"].items()} | {"original": "dataset",
                                                                                   "human": "human"}
    mine = {j: material.eligible(pair_table, config["models"][spec["model"]]["family"], families,
                                 config["judging"]["exclude_own_family"]).to_numpy()
            for j, spec in config["judging"]["judges"].items()}
    # no known-answer checks and no strategy tags: the run from the bundle says they are absent
    return export.write(folder, items=item_table, completions=comp, pairs=pair_table,
                        verdicts=verdicts(pair_table, elo, sorted(config["judging"]["judges"]), seed, mine),
                        checks=tableio.empty_like("judge_verdicts"), tags=tableio.empty_like("strategy_tags"),
                        files={"human_completions": human_file},
                        models_csv=WORKFLOW_DIR / "resources/external/models.csv", study=study_settings(config))
