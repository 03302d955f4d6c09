"""One LLM judge of the ensemble, carried whole from its config entry to its requests and answers.

A judge is configured once (config ``judging.judges.<name>``, plus the block's ``rationale_max_chars``);
``rules/common.smk`` builds its :class:`Judge` and hands it to the judging rules as :meth:`Judge.as_params`
(a plain dict: Snakemake compares only plain values to decide that a changed setting reruns a rule; an
object would be passed over), and the scripts and the call preview rebuild it with :meth:`Judge.from_params`.
Everything a judge asks and how its answers are read is here: a JSON verdict judge
(:mod:`heart.judging.llm_judge`), a judge read by its log-probabilities
(:mod:`heart.judging.letter_judge`), or a judge that scores each reply's fit to the dialogue by the
likelihoods of a local model, computed in-process (:mod:`heart.judging.content_judge`; not the HEART rubric).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd

from heart.judging import content_judge, letter_judge, llm_judge
from heart.common.config import PlainParams
from heart.llm import likelihood
from heart.llm.request import Request

ANSWERS = ("verdict", "logprobs", "content")


@dataclass(frozen=True)
class Judge(PlainParams):
    """An LLM judge (config ``judging.judges.<name>``; the defaults are the config schema's).

    Attributes
    ----------
    name : str
        The judge's name (a key of ``judging.judges``; the ``judge`` column of every table).
    model : str
        The model it calls (a key of ``models``).
    prompt : str
        Its prompt template, ``workflow/resources/prompts/judge/<prompt>.md``.
    answer : {"verdict", "logprobs", "content"}
        A JSON verdict (the paper's), one question at a time read by log-probabilities, or each reply's fit
        to the dialogue (a local model's likelihoods; no HEART axis is marked).
    axes : bool
        A logprobs judge is asked each HEART axis's question too (a content judge marks none).
    context_turns : int or None
        The judge sees the last N turns of each dialogue (None: all of it).
    params : dict
        Decoding params of its calls, over the model's.
    rationale_max_chars : int or None
        The verdict's rationale is at most this long (``judging.rationale_max_chars``).
    """

    name: str
    model: str
    prompt: str = "heart_pairwise"
    answer: str = "verdict"
    axes: bool = True
    context_turns: int | None = None
    params: dict = field(default_factory=dict)
    rationale_max_chars: int | None = None
    answer_formats = ANSWERS

    @classmethod
    def from_config(cls, name: str, judging: dict) -> "Judge":
        """Judge ``name`` of a validated config's ``judging`` block (the schema filled in its defaults)."""
        entry = judging["judges"][name]
        return cls(name, **{**entry, "params": dict(entry["params"])},
                   rationale_max_chars=judging["rationale_max_chars"])

    def for_quality_checks(self) -> "Judge":
        """The judge as the known-answer checks ask it: the overall question only (the checks test the
        overall verdict), so a change of ``axes`` does not rerun them."""
        return dataclasses.replace(self, axes=False)

    def requests(self, pairs: pd.DataFrame, items: pd.DataFrame, texts: dict, template: str, rubric: dict,
                 version: str, both_orders: bool = True) -> list[Request]:
        """The judge's requests on ``pairs`` from its prompt template, by its ``answer`` format ("verdict":
        :func:`heart.judging.llm_judge.requests`; "logprobs": :func:`heart.judging.letter_judge.letter_requests`,
        asking the axes' questions too when ``axes``): what rule judge_pairs sends and the call preview
        counts; "content": :func:`heart.judging.content_judge.requests`, likelihoods that :meth:`run` computes
        in-process and the preview counts). ``texts``: :func:`heart.judging.pairs.completion_text`."""
        if self.answer == "content":
            return content_judge.requests(pairs, items, texts, self.model, template, self.context_turns)
        if self.answer == "logprobs":
            instructions, questions = letter_judge.letter_prompt(template, rubric)
            return letter_judge.letter_requests(pairs, items, texts, self.model, instructions, questions, version,
                                                both_orders, self.params, letter_judge.asked_questions(self.axes),
                                                self.context_turns)
        return llm_judge.requests(pairs, items, texts, self.model, llm_judge.system_prompt(template, rubric), version,
                                  llm_judge.response_schema(rubric, self.rationale_max_chars), both_orders,
                                  self.params, self.context_turns)

    def answers(self, pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True) -> dict[str, dict]:
        """:meth:`requests`' answers as one answer per ``<pair_id>:<order>``
        (for :func:`heart.judging.llm_judge.verdict_table`)."""
        if self.answer == "content":
            return content_judge.answers(pairs, results, both_orders)
        if self.answer == "logprobs":
            return letter_judge.letter_results(pairs, results, both_orders, letter_judge.asked_questions(self.axes))
        return results

    def run(self, engine, requests: list[Request], desc: str) -> dict[str, dict]:
        """:meth:`requests` answered, from the cache first: sent by ``engine``
        (:class:`heart.llm.engine.Engine`), or, for a content judge, computed in-process by its local model
        (:func:`heart.llm.likelihood.run`, with the engine's specs and cache)."""
        if self.answer == "content":
            return likelihood.run(engine.specs, requests, engine.cache, desc=desc)
        return engine.run(requests, desc=desc)
