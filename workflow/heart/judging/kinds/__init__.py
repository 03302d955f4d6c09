"""Judge kinds: how a judge of config ``answer: <kind>`` asks and how its answers are read.

One module per kind, registered in :data:`KINDS` under its ``answer`` name. A kind module provides

* ``requests(judge, pairs, items, texts, template, rubric, version, both_orders) -> list[Request]``:
  what rule judge_pairs sends and the call preview counts;
* ``answers(judge, pairs, results, both_orders) -> dict``: the answers to those requests as one verdict
  answer per ``<pair_id>:<order>`` (``parsed``, ``parse_error``, ``text``, ``cache_key``, ``from_cache`` ...),
  what :func:`heart.judging.verdicts.verdict_table` reads;
* optionally ``run(judge, engine, requests, desc) -> dict``: how the requests are answered (without it, by
  the engine, :meth:`heart.llm.engine.Engine.run`, from the cache first).

Adding a kind is one module here and one entry in :data:`KINDS`; the shared pieces are
:mod:`heart.judging.material` (rubric, eligibility, shown order, messages) and :mod:`heart.judging.verdicts`.
"""

from __future__ import annotations

from types import ModuleType

from heart.judging.kinds import content, logprobs, release, verdict

#: answer kind -> the module that asks and reads it
KINDS: dict[str, ModuleType] = {
    "verdict": verdict,    # a JSON verdict (winner, strength, axis marks, rationale): the paper's
    "logprobs": logprobs,  # one question at a time, read by the log-probability of "A" vs "B"
    "content": content,    # each reply's fit to the dialogue by a local model's likelihoods (not the rubric)
    "release": release,    # the authors' released judging: six categories, verdicts like "A+++" (exploratory)
}


def kind(answer: str) -> ModuleType:
    """The module of judge kind ``answer``."""
    try:
        return KINDS[answer]
    except KeyError:
        raise ValueError(f"judge answer {answer!r} is not one of {tuple(KINDS)}") from None


def config_problems(config: dict) -> list[str]:
    """A config's judges whose ``answer`` is not a registered kind, as lines naming the key (a check for
    :func:`heart.common.config.validate_config`)."""
    judges = (config.get("judging") or {}).get("judges") or {}
    return [f"judging.judges.{name}.answer: {entry.get('answer')!r} is not a judge kind (kinds: {', '.join(KINDS)})"
            for name, entry in judges.items() if entry.get("answer") not in KINDS]
