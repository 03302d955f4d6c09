"""One LLM judge of the ensemble, carried whole from its config entry to its requests and answers.

A judge is configured once (config ``judging.judges.<name>``, plus the block's ``rationale_max_chars``);
``rules/common.smk`` builds its :class:`Judge` and hands it to the judging rules as :meth:`Judge.as_params`
(a plain dict: Snakemake compares only plain values to decide that a changed setting reruns a rule; an
object would be passed over), and the scripts and the call preview rebuild it with :meth:`Judge.from_params`.
How it asks and how its answers are read is its kind's (config ``answer``): :mod:`heart.judging.kinds`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd

from heart.common.config import PlainParams, schema_defaults
from heart.judging.kinds import KINDS, kind
from heart.llm.request import Request

#: config ``judging.judges.<name>``'s defaults: said once, in the schema
_D = schema_defaults("judging.judges.*")


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
    answer : str
        Its kind, a key of :data:`heart.judging.kinds.KINDS`: "verdict" (a JSON verdict, the paper's),
        "logprobs" (one question at a time read by log-probabilities), "content" (each reply's fit to the
        dialogue by a local model's likelihoods; no HEART axis is marked) ...
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
    prompt: str = _D["prompt"]
    answer: str = _D["answer"]
    axes: bool = _D["axes"]
    context_turns: int | None = _D["context_turns"]
    params: dict = field(default_factory=dict)
    rationale_max_chars: int | None = schema_defaults("judging")["rationale_max_chars"]
    answer_formats = property(lambda self: tuple(KINDS))  # read when a judge is made: a kind registered late counts

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
        """The judge's requests on ``pairs`` from its prompt template, by its kind: what rule judge_pairs sends
        and the call preview counts. ``texts``: :func:`heart.judging.pairs.completion_text`."""
        return kind(self.answer).requests(self, pairs, items, texts, template, rubric, version, both_orders)

    def answers(self, pairs: pd.DataFrame, results: dict[str, dict], both_orders: bool = True) -> dict[str, dict]:
        """:meth:`requests`' answers as one answer per ``<pair_id>:<order>``
        (for :func:`heart.judging.verdicts.verdict_table`)."""
        return kind(self.answer).answers(self, pairs, results, both_orders)

    def run(self, engine, requests: list[Request], desc: str) -> dict[str, dict]:
        """:meth:`requests` answered, from the cache first: by the kind's own ``run`` where it has one (a
        content judge computes likelihoods in-process), else sent by ``engine``
        (:class:`heart.llm.engine.Engine`)."""
        own = getattr(kind(self.answer), "run", None)
        return own(self, engine, requests, desc) if own else engine.run(requests, desc=desc)
