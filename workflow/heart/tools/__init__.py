"""Stand-alone command-line tools: no rule runs them, and nothing of the workflow imports them.

* :mod:`.vote_recipes` (``python -m heart.tools.vote_recipes``) -- public pairwise-vote datasets (MT-Bench,
  Chatbot Arena) in their published shapes, turned into the imported-judgments format that an
  analysis-only run reads (``docs/reanalysis.md``).
"""
