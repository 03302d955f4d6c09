"""Agreement of the judges: majorities, human–LLM, cross-judge, inter-human, judge subsampling and the trivial
judges (HEART paper §4.2-4.4, §4.9, §9.9). Definitions, scopes and counts: ``docs/methods/agreement.md``.

One module per section of that page: :mod:`.orientation`, :mod:`.majority`, :mod:`.human_llm`,
:mod:`.per_vote`, :mod:`.cross_judge`, :mod:`.inter_human`, :mod:`.stability`, :mod:`.trivial`; rule
``agreement`` (``rules/stats.smk``) writes their tables.
"""
