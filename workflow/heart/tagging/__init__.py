"""Support-strategy tagging of every completion (HEART paper §9.10), by the rules of ``rules/tagging.smk``:

* :mod:`.taxonomy` -- the 15-strategy taxonomy file, the one loader (schema-checked);
* :mod:`.tagger` (tag_strategies) -- an LLM tagger (:class:`~heart.tagging.tagger.Tagger`): prompts,
  answer formats, requests and the long table of labels;
* :mod:`.spot_checks` (strategy_f1) -- human spot-check labels and the tagger's F1 against them.
"""
