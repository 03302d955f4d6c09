"""The words every stage shares: the HEART rubric's five axes, and the two item subsets.

The rubric file (``workflow/resources/rubric/heart.yaml``) defines the axes' meaning and its schema admits
exactly these five keys; the tables carry one signed mark per axis in the columns :data:`AXIS_COLUMNS`.
"""

#: Human alignment, Empathic responsiveness, Attunement, Resonance, Task-following (HEART paper §3)
AXES = ("H", "E", "A", "R", "T")
#: the judgments table's signed per-axis marks (``workflow/schemas/tables/judgments.schema.yaml``)
AXIS_COLUMNS = [f"axis_{a}" for a in AXES]
#: the item subsets: the screened ESConv contexts, and the emotional-resistance rewrites (paper §9.2, §4.9)
SUBSETS = ("regular", "adversarial")
#: the scopes of the leaderboard and the preference shares: every item, and each subset alone
SUBSET_SCOPES = ("all", *SUBSETS)
#: the names figures and tables give the systems every study has (a model's is its models.csv row's)
SYSTEM_NAMES = {"best-human": "Best Human", "human": "Human (pooled)", "original": "Original Dataset Completions"}
