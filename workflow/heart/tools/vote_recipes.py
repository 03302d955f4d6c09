"""Public pairwise-vote datasets in their real shapes -> the imported-judgments format: MT-Bench's human and
GPT-4-pair splits (:func:`mt_bench`), Chatbot Arena's battles (:func:`arena`), arena-hard-auto's judgments of
two games per question (:func:`arena_hard`), PandaLM's human test set with three annotators' labels in
columns (:func:`pandalm`) and AlpacaEval/AlpacaFarm preference annotations with the annotator's id
(:func:`alpaca_eval`), read as published, every value outside their vocabularies an error naming the file,
the row and the field. How each source maps: ``docs/methods/vote-recipes.md``. ``python -m
heart.tools.vote_recipes`` runs them from the command line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from heart.common import export
from heart.judging.judgment_import import UNPARSED

MT_BENCH_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie"}
#: gpt4_pair: the verdict FastChat combined over both orders -> the two orders' winners
MT_BENCH_GPT4_ORDERS = {"model_a": ("a", "a"), "model_b": ("b", "b"), "tie": ("tie", "tie"),
                        "tie (inconsistent)": ("a", "b")}
ARENA_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie"}
#: arena-hard's per-game verdict (the judge's [[...]] label; A is the model shown first) -> (winner of the game's
#: A/B, strength): ">>" three times ">", as arena-hard's own leaderboard weighs it; a game nobody could parse
#: (score null) stays an unparsed answer, never a tie
ARENA_HARD_SCORES = {"A>>B": ("A", 3), "A>B": ("A", 1), "A=B": ("tie", None), "B>A": ("B", 1),
                     "B>>A": ("B", 3)}
#: PandaLM's label per annotator: 0 = about the same, 1 = response1 better, 2 = response2 better
PANDALM_LABELS = {"0": "tie", "1": "a", "2": "b"}
#: AlpacaEval's preference -> winner: 1 output_1, 2 output_2, 1.5 (and 0, as its length-controlled win rate reads
#: it) a draw
ALPACA_PREFERENCES = {1.0: "a", 2.0: "b", 1.5: "tie", 0.0: "tie"}
VOTE_COLUMNS = ["item", "conversation", "system_a", "system_b", "judge", "judge_kind", "winner", "strength", "order"]


class RecipeError(ValueError):
    """A source row outside the source's documented shape; names the file, the row and the field."""


class Votes(NamedTuple):
    """Records in the imported-judgments format and what was done to get them."""

    votes: pd.DataFrame
    report: dict

    def describe(self) -> str:
        return "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in self.report.items())


def load(path) -> pd.DataFrame:
    """A source file as published: ``.parquet``, ``.jsonl``/``.ndjson`` or ``.json`` (a JSON list)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix in (".jsonl", ".ndjson"):
        return pd.read_json(path, lines=True, dtype=False)
    if suffix == ".json":
        with path.open(encoding="utf-8") as f:
            return pd.DataFrame(json.load(f))
    raise RecipeError(f"{path}: unknown file type {path.suffix!r}; expected .parquet, .jsonl or .json")


def _need(frame: pd.DataFrame, columns: list[str], where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise RecipeError(f"{where}: missing column(s) {missing}; expected the source's columns "
                          f"{', '.join(columns)}")


def _missing(value) -> bool:
    """A field nobody filled: null, NaN or blank text."""
    return value is None or (isinstance(value, float) and value != value) or (isinstance(value, str)
                                                                               and not value.strip())


def _text(frame: pd.DataFrame, col: str, where: str) -> pd.Series:
    values = frame[col]
    for i, v in enumerate(values):
        if _missing(v):
            raise RecipeError(f"{where}, row {i + 1}: field {col!r} is empty")
    return values.astype(str)


def _mapped(frame: pd.DataFrame, vocab: dict, where: str) -> list:
    out = []
    for i, v in enumerate(frame["winner"]):
        if v not in vocab:
            raise RecipeError(f"{where}, row {i + 1}: field 'winner' is {v!r}; expected one of "
                              f"{', '.join(map(repr, vocab))}")
        out.append(vocab[v])
    return out


def _last_vote_per_pair(votes: pd.DataFrame, order_key: pd.Series | None = None) -> tuple[pd.DataFrame, int]:
    """One vote per (rater, item, unordered pair of systems): the last (by ``order_key``, else file order)."""
    key = votes["judge"] + "\x1f" + votes["item"] + "\x1f" + [
        "\x1f".join(sorted(p)) for p in zip(votes["system_a"], votes["system_b"])]
    rank = pd.Series(range(len(votes)), index=votes.index) if order_key is None else order_key
    ordered = votes.assign(_key=key.to_numpy(), _rank=rank.to_numpy()).sort_values("_rank", kind="stable")
    kept = ordered.drop_duplicates("_key", keep="last").sort_index()
    return kept.drop(columns=["_key", "_rank"]), len(votes) - len(kept)


def _turn_items(frame: pd.DataFrame, where: str) -> tuple[pd.Series, pd.Series]:
    question = _text(frame, "question_id", where)
    turn = _text(frame, "turn", where)
    return question + "/turn" + turn, question


def mt_bench(human: pd.DataFrame | None = None, gpt4_pair: pd.DataFrame | None = None,
             llm_judge: str = "gpt4-pair", human_source: str = "human", gpt4_source: str = "gpt4_pair") -> Votes:
    """MT-Bench's two splits as imported-judgment records (``docs/methods/vote-recipes.md`` for every rule).

    Parameters
    ----------
    human, gpt4_pair : pandas.DataFrame, optional
        The splits as published (:func:`load`); either may be left out.
    llm_judge : str
        The id the GPT-4 pair judge gets.
    human_source, gpt4_source : str
        How errors name the two inputs (their file paths, when read from files).
    """
    parts, report = [], {}
    if human is not None:
        _need(human, ["question_id", "model_a", "model_b", "winner", "judge", "turn"], human_source)
        item, question = _turn_items(human, human_source)
        votes = pd.DataFrame({"item": item, "conversation": question,
                              "system_a": _text(human, "model_a", human_source),
                              "system_b": _text(human, "model_b", human_source),
                              "judge": _text(human, "judge", human_source), "judge_kind": "human",
                              "winner": _mapped(human, MT_BENCH_WINNERS, human_source), "order": None})
        votes, dropped = _last_vote_per_pair(votes)
        parts.append(votes)
        report.update(human_votes=len(human), human_repeated_votes_dropped=dropped,
                      human_raters=int(votes["judge"].nunique()))
    if gpt4_pair is not None:
        _need(gpt4_pair, ["question_id", "model_a", "model_b", "winner", "turn"], gpt4_source)
        item, question = _turn_items(gpt4_pair, gpt4_source)
        orders = _mapped(gpt4_pair, MT_BENCH_GPT4_ORDERS, gpt4_source)
        base = pd.DataFrame({"item": item, "conversation": question,
                             "system_a": _text(gpt4_pair, "model_a", gpt4_source),
                             "system_b": _text(gpt4_pair, "model_b", gpt4_source),
                             "judge": llm_judge, "judge_kind": "llm", "order": None})
        first = base.assign(winner=[o[0] for o in orders])
        second = base.assign(winner=[o[1] for o in orders])
        both = pd.concat([first, second]).sort_index(kind="stable")  # a verdict's two records together
        parts.append(both)
        verdicts = pd.Series(list(gpt4_pair["winner"]))
        report.update(gpt4_verdicts=len(gpt4_pair), gpt4_records=len(both),
                      gpt4_wins=int(verdicts.isin(["model_a", "model_b"]).sum()),
                      gpt4_ties=int((verdicts == "tie").sum()),
                      gpt4_inconsistent=int((verdicts == "tie (inconsistent)").sum()))
    votes = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=VOTE_COLUMNS)
    return Votes(votes.reindex(columns=VOTE_COLUMNS), report)


def arena(battles: pd.DataFrame, source: str = "arena") -> Votes:
    """Chatbot-Arena battles as imported-judgment records (``docs/methods/vote-recipes.md`` for every rule)."""
    _need(battles, ["question_id", "model_a", "model_b", "winner", "judge"], source)
    item = _text(battles, "question_id", source)
    votes = pd.DataFrame({"item": item, "conversation": item,
                          "system_a": _text(battles, "model_a", source),
                          "system_b": _text(battles, "model_b", source),
                          "judge": _text(battles, "judge", source), "judge_kind": "human",
                          "winner": _mapped(battles, ARENA_WINNERS, source), "order": "AB"})
    stamp = pd.to_numeric(battles["tstamp"], errors="raise") if "tstamp" in battles.columns else None
    votes, dropped = _last_vote_per_pair(votes, stamp)
    report = {"battles": len(battles), "repeated_votes_dropped": dropped, "voters": int(votes["judge"].nunique())}
    return Votes(votes.reindex(columns=VOTE_COLUMNS).reset_index(drop=True), report)


def arena_hard(judgments: pd.DataFrame, baseline: str, source: str = "arena-hard") -> Votes:
    """arena-hard-auto's ``model_judgment/<judge>/<model>.jsonl`` lines as imported-judgment records: each line
    one question and model, its ``games`` the two shown orders against ``baseline`` (the judge config's
    ``baseline_model``; game 1 shows the baseline as A, game 2 the model) (``docs/methods/vote-recipes.md``)."""
    _need(judgments, ["question_id", "model", "judge", "games"], source)
    question, model = _text(judgments, "question_id", source), _text(judgments, "model", source)
    judge = _text(judgments, "judge", source)
    rows = []
    for i, games in enumerate(judgments["games"]):
        if not isinstance(games, (list, tuple)) or len(games) != 2:
            raise RecipeError(f"{source}, row {i + 1}: field 'games' holds {_count(games)}; expected the two "
                              "games of a pairwise judgment (baseline shown first, then the model)")
        if model.iloc[i] == baseline:
            raise RecipeError(f"{source}, row {i + 1}: field 'model' is the baseline {baseline!r}; a model is "
                              "judged against the baseline, not against itself")
        for game, order in zip(games, ("AB", "BA")):  # system_a = the baseline: game 1 shows it as A
            score = game.get("score") if isinstance(game, dict) else None
            if _missing(score):
                winner, strength = UNPARSED, None
            elif score in ARENA_HARD_SCORES:
                shown, strength = ARENA_HARD_SCORES[score]
                winner = "tie" if shown == "tie" else ("a" if (shown == "A") == (order == "AB") else "b")
            else:
                raise RecipeError(f"{source}, row {i + 1}: field 'games[{order != 'AB':d}].score' is {score!r}; "
                                  f"expected one of {', '.join(ARENA_HARD_SCORES)} or null (no verdict parsed)")
            rows.append({"item": question.iloc[i], "conversation": question.iloc[i], "system_a": baseline,
                         "system_b": model.iloc[i], "judge": judge.iloc[i], "judge_kind": "llm",
                         "winner": winner, "strength": strength, "order": order, "_line": i})
    votes = pd.DataFrame(rows, columns=[*VOTE_COLUMNS, "_line"])
    # a line repeated (a rerun appended to the file): the last line of a (judge, question, model) holds
    line_key = votes["judge"] + "\x1f" + votes["item"] + "\x1f" + votes["system_b"]
    last = votes.groupby(line_key.to_numpy())["_line"].transform("max")
    kept = votes[votes["_line"] == last].drop(columns="_line").reset_index(drop=True)
    kept["strength"] = kept["strength"].astype("Int64")
    report = {"lines": len(judgments), "repeated_lines_dropped": (len(votes) - len(kept)) // 2,
              "games": len(kept), "games_unparsed": int(kept["winner"].eq(UNPARSED).sum()),
              "models": int(kept["system_b"].nunique())}
    return Votes(kept.reindex(columns=VOTE_COLUMNS), report)


def _count(value) -> str:
    return f"{len(value)} game(s)" if isinstance(value, (list, tuple)) else repr(value)


def pandalm(testset: pd.DataFrame, source: str = "pandalm") -> Votes:
    """PandaLM's human test set (``data/testset-v1.json``): one row per (task, pair of models), ``cmp_key``
    naming response1's model and response2's, three annotators' labels in ``label_0`` ... ``label_2``
    (``docs/methods/vote-recipes.md``)."""
    labels = sorted(c for c in testset.columns if c.startswith("label_"))
    _need(testset, ["task_id", "cmp_key", *(labels or ["label_0"])], source)
    task = _text(testset, "task_id", source)
    rows, missing = [], 0
    for i, key in enumerate(_text(testset, "cmp_key", source)):
        models = key.split("_")
        if len(models) != 2 or not all(models) or models[0] == models[1]:
            raise RecipeError(f"{source}, row {i + 1}: field 'cmp_key' is {key!r}; expected "
                              "'<response1 model>_<response2 model>', two different models")
        for col in labels:
            value = testset[col].iloc[i]
            if _missing(value):
                missing += 1  # this annotator gave no label here: no vote, never a tie
                continue
            label = str(int(value)) if isinstance(value, (int, float)) else str(value).strip()
            if label not in PANDALM_LABELS:
                raise RecipeError(f"{source}, row {i + 1}: field {col!r} is {value!r}; expected 0 (about the "
                                  "same), 1 (response1 better), 2 (response2 better) or empty")
            rows.append({"item": task.iloc[i], "conversation": task.iloc[i], "system_a": models[0],
                         "system_b": models[1], "judge": f"annotator{int(col.removeprefix('label_')) + 1}",
                         "judge_kind": "human", "winner": PANDALM_LABELS[label], "strength": None, "order": None})
    votes, dropped = _last_vote_per_pair(pd.DataFrame(rows, columns=VOTE_COLUMNS))
    report = {"rows": len(testset), "votes": len(votes), "labels_missing": missing,
              "repeated_votes_dropped": dropped, "annotators": int(votes["judge"].nunique())}
    return Votes(votes.reset_index(drop=True), report)


def alpaca_eval(annotations: pd.DataFrame, judge_kind: str = "human", source: str = "alpaca-eval") -> Votes:
    """AlpacaEval/AlpacaFarm preference annotations: one row per (instruction, pair of outputs, annotator) with
    ``generator_1``, ``generator_2``, ``annotator`` and ``preference`` (1: output_1 better, 2: output_2; 1.5 and 0
    a draw, as AlpacaEval reads them; empty: no preference given) (``docs/methods/vote-recipes.md``)."""
    _need(annotations, ["instruction", "generator_1", "generator_2", "annotator", "preference"], source)
    instruction = _text(annotations, "instruction", source)
    first, second, annotator = (_text(annotations, c, source) for c in ("generator_1", "generator_2", "annotator"))
    given_input = (annotations["input"].fillna("").astype(str) if "input" in annotations.columns
                   else pd.Series("", index=annotations.index))
    rows, missing = [], 0
    for i, value in enumerate(annotations["preference"]):
        if _missing(value):
            missing += 1  # no preference given: no vote, never a draw
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if number not in ALPACA_PREFERENCES:
            raise RecipeError(f"{source}, row {i + 1}: field 'preference' is {value!r}; expected 1 (output_1 "
                              "better), 2 (output_2 better), 1.5 or 0 (a draw) or empty; a weighted annotator's "
                              "soft preference is not a choice")
        text = instruction.iloc[i] + "\x1f" + given_input.iloc[i]
        item = "alpaca-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        rows.append({"item": item, "conversation": item, "system_a": first.iloc[i], "system_b": second.iloc[i],
                     "judge": annotator.iloc[i], "judge_kind": judge_kind,
                     "winner": ALPACA_PREFERENCES[number], "strength": None, "order": None})
    votes, dropped = _last_vote_per_pair(pd.DataFrame(rows, columns=VOTE_COLUMNS))
    report = {"rows": len(annotations), "votes": len(votes), "preferences_missing": missing,
              "repeated_votes_dropped": dropped, "annotators": int(votes["judge"].nunique())}
    return Votes(votes.reset_index(drop=True), report)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m heart.tools.vote_recipes", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="source", required=True)
    mt = sub.add_parser("mt-bench", help="MT-Bench human and/or gpt4_pair splits")
    mt.add_argument("--human", type=Path, help="the human split (.parquet, .jsonl or .json)")
    mt.add_argument("--gpt4-pair", type=Path, help="the gpt4_pair split")
    mt.add_argument("--llm-judge", default="gpt4-pair", help="the GPT-4 judge's id (default gpt4-pair)")
    ar = sub.add_parser("arena", help="Chatbot-Arena battles")
    ar.add_argument("battles", type=Path)
    ah = sub.add_parser("arena-hard", help="arena-hard-auto's model_judgment/<judge>/<model>.jsonl files")
    ah.add_argument("judgments", type=Path, nargs="+")
    ah.add_argument("--baseline", required=True, help="the judge config's baseline_model (e.g. gpt-4-0314)")
    pl = sub.add_parser("pandalm", help="PandaLM's human test set (testset-v1.json)")
    pl.add_argument("testset", type=Path)
    ae = sub.add_parser("alpaca-eval", help="AlpacaEval/AlpacaFarm preference annotations with annotator ids")
    ae.add_argument("annotations", type=Path)
    ae.add_argument("--judge-kind", choices=("human", "llm"), default="human",
                    help="whether the annotators are people (default) or LLM annotators")
    for p in (mt, ar, ah, pl, ae):
        p.add_argument("-o", "--output", type=Path, required=True, help="the votes file to write (.csv)")
    args = parser.parse_args(argv)
    try:
        if args.source == "mt-bench":
            if args.human is None and args.gpt4_pair is None:
                parser.error("give --human, --gpt4-pair or both")
            out = mt_bench(None if args.human is None else load(args.human),
                           None if args.gpt4_pair is None else load(args.gpt4_pair), args.llm_judge,
                           str(args.human), str(args.gpt4_pair))
        elif args.source == "arena-hard":  # one file per judged model: each file's rows are named in its errors
            parts = [arena_hard(load(p), args.baseline, str(p)) for p in args.judgments]
            report = {k: sum(part.report[k] for part in parts) for k in parts[0].report}
            out = Votes(pd.concat([part.votes for part in parts], ignore_index=True), report)
        elif args.source == "alpaca-eval":
            out = alpaca_eval(load(args.annotations), args.judge_kind, str(args.annotations))
        elif args.source == "pandalm":
            out = pandalm(load(args.testset), str(args.testset))
        else:
            out = arena(load(args.battles), str(args.battles))
    except RecipeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    export.write_csv(out.votes, args.output)  # atomically; safe to open in a spreadsheet (read back as written)
    print(f"{args.output}: {len(out.votes)} records ({out.describe()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
