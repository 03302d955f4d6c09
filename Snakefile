# heart — HEART benchmark workflow: raw ESConv -> items -> completions -> judgments
# -> statistics -> figures. Run `make run` (see README.md); every stage's rules are
# in workflow/rules/<stage>.smk, its outputs in results/<stage>/.
from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


# The embedded default, unless a complete config is given with --configfile (e.g.
# config/paper.yaml): that one replaces the default instead of being merged into it
# (as --replace-workflow-config would), so the paper's model list is not mixed with
# the local model's. --config overrides apply on top of either.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


# {system} in a completion path is one of the configured model or imported systems (each rule narrows it)
wildcard_constraints:
    system="|".join(map(re.escape, MODEL_SYSTEMS + IMPORTED_SYSTEMS)) or "(?!)",
    judge="|".join(map(re.escape, JUDGES)) or "(?!)",
    tagger="|".join(map(re.escape, TAGGERS)) or "(?!)",
    shard=r"\d+of\d+|round\d+",


# what each item source leaves to look at besides the items
ITEM_SOURCE_TABLES = (
    ["results/data/release_mapping.parquet", "results/data/release_source.parquet"]
    if RELEASED_ITEMS
    else ["results/items/screening_audit.parquet"]
    + (["results/items/screening_calibration.parquet"] if config["screening"]["calibrate"] else [])
)


# judging.smk: in an analysis-only run, only the import of the judgments made elsewhere
include: "workflow/rules/judging.smk"
include: "workflow/rules/stats.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/tables.smk"


if not ANALYSIS_ONLY:

    include: "workflow/rules/completions.smk"
    include: "workflow/rules/tagging.smk"
    # bundle.smk: export_bundle, or in a run from a bundle (ARTIFACTS) the rules reading its tables
    include: "workflow/rules/bundle.smk"

    # merging shards reads and writes a few Parquet files: never worth a cluster job
    localrules:
        merge_completions,
        merge_judgments,
        merge_tags,


if not (ANALYSIS_ONLY or ARTIFACTS):

    include: "workflow/rules/data.smk"
    include: "workflow/rules/items.smk"
    include: "workflow/rules/llm.smk"
    include: "workflow/rules/annotation.smk"


# API keys: the ones set are declared, so Snakemake passes them to cluster jobs; the LLM engine reads
# them from the environment, never from params or config. A missing one does not stop a dry run, the
# call preview or any job that calls no provider: the jobs that would call it stop before their first
# call, naming every missing variable (heart.llm.engine.MissingKeyError).
envvars:
    *[key for key in required_keys() if os.environ.get(key)],


if missing_keys := [key for key in required_keys() if not os.environ.get(key)]:
    print(
        f"heart: API keys not set: {', '.join(missing_keys)}. Dry runs, the call preview and every job "
        "that calls no provider run; a job that would call one stops before its first call and names "
        "what to export.",
        file=sys.stderr,
    )


# the paper's tables (rules paper_tables and paper_comparison), CSV and LaTeX each
PAPER_TABLES = (
    "table1",
    "table2_rubric",
    "leaderboard",
    "leaderboard_alternative",
    "agreement",
    "judge_quality",
    "strategy_diversity",
    "factors",
    "tests",
    "ablations",  # exploratory (HEART section 9.12): rule ablations
    *(["paper_comparison"] if PAPER_REFERENCE else []),
)


# a study: every table, figure and the response cache (from a bundle: no data, item source or cache)
STUDY_TARGETS = [
    *([] if ARTIFACTS else ["results/data/esconv_source.parquet", ITEM_SOURCE_TABLES]),
    "results/items/items.parquet",
    "results/completions/systems.parquet",
    "results/completions/safety.parquet",
    "results/completions/safety_flags.parquet",
    "results/judging/judgments.parquet",
    *(["results/judging/adaptive.parquet"] if ADAPTIVE else []),
    expand("results/tagging/{tagger}_f1.parquet", tagger=TAGGERS),
    "results/stats/ratings.parquet",
    "results/stats/agreement_human_llm.parquet",
    "results/stats/strategy_usage.parquet",
    "results/stats/factor_summary.parquet",
    "results/stats/tests.parquet",
    "results/stats/rationale_concordance.parquet",
    expand(
        "results/figures/{figure}.{ext}",
        ext=("png", "pdf"),
        figure=(
            "fig1_rubric",
            "fig4_leaderboard",
            "fig5_elo_ttft",
            "fig6_strategies",
            "fig7_protocol",
            "elo_forest",
            "agreement",
            "bias_factors",
            "example_pair",
            "judge_board",
            "ablations",
        ),
    ),
    "results/figures/example_pair.html",
    expand("results/tables/{table}.{ext}", ext=("csv", "tex"), table=PAPER_TABLES),
    "results/stats/preference_shares.parquet",
    "results/stats/style_ratings.parquet",
    *([] if ARTIFACTS else ["results/llm/cache.parquet", "results/llm/spend.parquet"]),
]


# an analysis-only run: the statistics and figures that need nothing but judgments
ANALYSIS_TARGETS = [
    "results/stats/ratings.parquet",
    "results/stats/agreement_human_llm.parquet",
    "results/stats/bias_position.parquet",
    "results/stats/factor_summary.parquet",
    "results/stats/preference_shares.parquet",
    "results/stats/tests.parquet",
    # the judge leaderboard: each judge's agreement with people (Cohen's kappa), biases, flips, separability
    "results/stats/judge_board.parquet",
    *expand(
        "results/figures/{figure}.{ext}",
        ext=("png", "pdf"),
        figure=(
            "fig1_rubric",
            "fig4_leaderboard",
            "elo_forest",
            "agreement",
            "bias_factors",
            "judge_board",
            "ablations",
        ),
    ),
    *expand("results/tables/{table}.{ext}", ext=("csv", "tex"), table=PAPER_TABLES),
]


rule all:
    default_target: True
    input:
        ANALYSIS_TARGETS if ANALYSIS_ONLY else STUDY_TARGETS,
