"""Judge kinds are registered, not branched on: a new kind is one module and one entry of
heart.judging.kinds.KINDS, and then runs the whole way from a config entry to the combined verdicts."""

import types

import pytest
import yaml

from support import REPO
from heart.common.config import ConfigError, validate_config
from heart.judging import combine, kinds, material, pairs, verdicts
from heart.judging.judge import Judge
from heart.llm.request import Request

from support.judging import items_and_completions

RUBRIC = material.load_rubric(REPO / "workflow/resources/rubric/heart.yaml")
AXES = material.axis_keys(RUBRIC)


def toy_kind() -> types.ModuleType:
    """A kind written as a newcomer would, from the registry's docstring alone: one request per pair and
    order (the blinded material, no schema), answered "A" or "B"; read as a strength-2 verdict."""
    toy = types.ModuleType("toy")

    def requests(judge, design, items, texts, template, rubric, version, both_orders=True):
        return [Request(id=f"{pid}:{order}", model=judge.model, messages=msgs, template_version=f"toy:{version}")
                for pid, order, msgs in material.shown(design, items, texts, template, both_orders)]

    def answers(judge, design, results, both_orders=True):
        out = {}
        for key, r in results.items():
            letter = r["text"].strip()
            parsed = ({"rationale": "toy", "winner": letter, "strength": 2, "axes": {k: None for k in AXES}}
                      if letter in ("A", "B") else None)
            out[key] = {**r, "parsed": parsed, "parse_error": None if parsed else f"not a letter: {letter!r}"}
        return out

    toy.requests, toy.answers = requests, answers
    return toy


class FirstShownEngine:
    """An engine that answers every request "A" (a pure position preference), counting what it is sent."""

    def __init__(self):
        self.sent = []

    def run(self, requests, desc=""):
        self.sent += requests
        return {r.id: {"text": "A", "cache_key": f"k-{r.id}", "from_cache": False, "latency_s": 0.1, "cost": 0.0}
                for r in requests}


def test_a_toy_kind_registered_by_one_entry_runs_from_its_config_entry_to_combined_verdicts(monkeypatch):
    monkeypatch.setitem(kinds.KINDS, "toy", toy_kind())
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["judging"]["judges"] = {"toy-judge": {"model": "smollm2", "prompt": "heart_pairwise", "answer": "toy"}}
    validate_config(config, checks=[kinds.config_problems])  # the schema names no kinds: the registry does
    judge = Judge.from_config("toy-judge", config["judging"])

    items, comp = items_and_completions(n_items=2, humans=0)
    design = pairs.design(comp, items, seed=1)
    engine = FirstShownEngine()
    reqs = judge.requests(design, items, pairs.completion_text(comp), "Judge.", RUBRIC, "v1")
    results = judge.run(engine, reqs, desc="toy")  # a kind without its own run is answered by the engine
    assert len(engine.sent) == len(reqs) == 2 * len(design)
    table = verdicts.verdict_table(design, judge.name, judge.answers(design, results), AXES)
    assert table["parse_ok"].all() and set(table["winner_shown"]) == {"A"}
    assert table["axis_E"].isna().all()  # not asked: missing, never "none"
    combined = combine.combine(table, design, AXES)
    assert (combined["status"] == "inconsistent").all()  # "A" in both orders: a position preference cancels


def test_an_unknown_kind_is_refused_at_start_up_and_by_the_judge():
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["judging"]["judges"]["j"] = {"model": "smollm2", "answer": "toy"}
    with pytest.raises(ConfigError, match=r"judging\.judges\.j\.answer: 'toy' is not a judge kind "
                                          r"\(kinds: verdict, logprobs, content, release\)"):
        validate_config(config, checks=[kinds.config_problems])
    with pytest.raises(ValueError, match="answer 'toy' is not one of"):
        Judge("j", "smollm2", answer="toy")


def test_every_registered_kind_provides_requests_and_answers():
    for name, module in kinds.KINDS.items():
        assert callable(module.requests) and callable(module.answers), name
        assert not hasattr(module, "run") or callable(module.run), name
