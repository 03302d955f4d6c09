"""Blinded pairwise judging by an LLM-judge ensemble and by humans (HEART paper §4.1-4.2, §9.1, §9.5-9.6).

The modules, by the rules of ``rules/judging.smk`` they serve:

* :mod:`.pairs` (design_pairs) -- which completions are compared, in which A/B order;
* :mod:`.judge` (judge_pairs, judge_qc) -- one LLM judge (:class:`~heart.judging.judge.Judge`), its
  requests and answers by its kind; :mod:`.kinds` -- the judge kinds, one module each, registered by their
  ``answer`` name (a JSON verdict, log-probabilities, content fit); :mod:`.material` -- what every kind
  shares (the rubric, eligibility, the blinded material in each shown order); :mod:`.verdicts` -- the
  verdict table every kind's answers become;
* :mod:`.judge_qc` (judge_qc, judge_quality) -- known-answer quality checks of the LLM judges;
* :mod:`.human_judgments` (human_judgments) -- human judgments: import, quality control, orientation;
* :mod:`.combine` (combine_judgments) -- both orders of a judge combined, the judgments table;
* :mod:`.judgment_import` (combine_judgments, import_judgments) -- judgments made elsewhere (public votes
  in their published shapes are turned into its format by :mod:`heart.tools.vote_recipes`, no rule).
"""
