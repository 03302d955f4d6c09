"""Next-turn completions from models, the dataset and humans (HEART paper §9.3-9.4), by the rules of
``rules/completions.smk``:

* :mod:`.generate` (generate_completions, original_completions) -- model completions decoded as the paper's,
  their post-processing, and the dataset's own reply as the "original" system;
* :mod:`.imported` (human_completions, import_completions) -- the human writers' file and systems whose
  completions were made elsewhere, checked row by row;
* :mod:`.summary` (summarize_systems) -- one row per system, present or absent and why.
"""
