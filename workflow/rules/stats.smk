# Stage 6 — statistics from the judgments and strategy tags (HEART paper §4, §9.8-9.12)
# -> results/stats/. Each rule gets only the `stats` settings its script reads, so changing one reruns
# only the rules that read it (and what reads their outputs), never an LLM call.

STATS = config["stats"]
# the conversation-level bootstrap (heart/stats/bootstrap.py): replicates, seed, coverage of the interval
BOOTSTRAP = {key: STATS[key] for key in ("n_boot", "seed", "ci")}


rule ratings:
    input:
        judgments="results/judging/judgments.parquet",
    output:
        ratings="results/stats/ratings.parquet",
        separability="results/stats/separability.parquet",
        leaderboard="results/stats/leaderboard.parquet",
    log:
        "logs/stats/ratings.log",
    benchmark:
        "benchmarks/stats/ratings.tsv"
    # the longest jobs first (tens of seconds of bootstrap fits at the paper's scale): the short
    # figure jobs then fill the other core instead of waiting for them at the end
    priority: 10
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
        bt_alpha=STATS["bt_alpha"],
        best_human=STATS["best_human"],
    script:
        "../scripts/ratings.py"


# the other way Best Human can enter (stats.best_human), all items: a labelled alternative, a job of its own
# beside rule ratings (at the paper's scale each is tens of seconds of bootstrap fits)
rule ratings_alternative:
    input:
        judgments="results/judging/judgments.parquet",
    output:
        alternative="results/stats/ratings_alternative.parquet",
    log:
        "logs/stats/ratings_alternative.log",
    benchmark:
        "benchmarks/stats/ratings_alternative.tsv"
    # a long job: started early (see rule ratings)
    priority: 10
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
        bt_alpha=STATS["bt_alpha"],
        best_human=STATS["best_human"],
    script:
        "../scripts/ratings_alternative.py"


rule agreement:
    input:
        judgments="results/judging/judgments.parquet",
        completions=COMPLETIONS,
    output:
        human_llm="results/stats/agreement_human_llm.parquet",
        cross_judge="results/stats/agreement_cross_judge.parquet",
        inter_human="results/stats/agreement_inter_human.parquet",
        stability="results/stats/judge_stability.parquet",
        trivial="results/stats/trivial_judges.parquet",
    log:
        "logs/stats/agreement.log",
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
        consensus=STATS["consensus"],
        subsample_reps=STATS["subsample_reps"],
    script:
        "../scripts/agreement.py"


rule bias_audits:
    input:
        judgments="results/judging/judgments.parquet",
        # each order's verdict: this workflow's judges' and those imported (config imported_judgments, or
        # the analysis-only table)
        verdicts=[
            *expand("results/judging/llm/{judge}.parquet", judge=[] if ANALYSIS_ONLY else JUDGES),
            "results/judging/imported_verdicts.parquet",
        ],
        completions=COMPLETIONS,
    output:
        position="results/stats/bias_position.parquet",
        length="results/stats/bias_length.parquet",
        self_preference="results/stats/bias_self_preference.parquet",
    log:
        "logs/stats/bias_audits.log",
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
        fdr_alpha=STATS["fdr_alpha"],
        families=system_families(),
        judge_families=judge_families(),
    script:
        "../scripts/bias_audits.py"


rule strategy_stats:
    input:
        tags=expand("results/tagging/{tagger}.parquet", tagger=TAGGERS),
        taxonomy=taxonomy_file(),
        systems="results/completions/systems.parquet",
        item_table="results/items/items.parquet",
    output:
        usage="results/stats/strategy_usage.parquet",
        diversity="results/stats/strategy_diversity.parquet",
        differences="results/stats/strategy_differences.parquet",
    log:
        "logs/stats/strategy_stats.log",
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
        families=system_families(),
    script:
        "../scripts/strategy_stats.py"


rule factor_analysis:
    input:
        judgments="results/judging/judgments.parquet",
    output:
        scores="results/stats/response_scores.parquet",
        loadings="results/stats/factor_loadings.parquet",
        summary="results/stats/factor_summary.parquet",
        correlations="results/stats/factor_correlations.parquet",
    log:
        "logs/stats/factor_analysis.log",
    conda:
        "../../envs/stats.yaml"
    params:
        n_factors=STATS["n_factors"],
        ci=STATS["ci"],
    script:
        "../scripts/factor_analysis.py"


rule external_correlations:
    input:
        ratings="results/stats/ratings.parquet",
        models=MODELS_CSV,
        completions=TTFT_COMPLETIONS,
    output:
        "results/stats/external_correlations.parquet",
    log:
        "logs/stats/external_correlations.log",
    conda:
        "../../envs/stats.yaml"
    params:
        ci=STATS["ci"],
        # the paper's Table 1 correlations beside this run's (config paper_reference)
        paper_reference=PAPER_REFERENCE,
        source=config["figures"]["fig4"]["source"],
        ttft_source=config["figures"]["fig5"]["ttft_source"],
    script:
        "../scripts/external_correlations.py"


rule multiple_testing:
    input:
        # analysis-only has no completions, so no strategy tags to test
        **({} if ANALYSIS_ONLY else {"strategy_differences": "results/stats/strategy_differences.parquet"}),
        bias_position="results/stats/bias_position.parquet",
        bias_length="results/stats/bias_length.parquet",
        bias_self_preference="results/stats/bias_self_preference.parquet",
        factor_correlations="results/stats/factor_correlations.parquet",
        external_correlations="results/stats/external_correlations.parquet",
        rationale_codes="results/stats/rationale_codes.parquet",
    output:
        "results/stats/tests.parquet",
    log:
        "logs/stats/multiple_testing.log",
    conda:
        "../../envs/stats.yaml"
    params:
        fdr_alpha=STATS["fdr_alpha"],
    script:
        "../scripts/multiple_testing.py"


rule rationale_codes:
    input:
        judgments="results/judging/judgments.parquet",
        completions=COMPLETIONS,
        codebook=workflow.source_path("../resources/codebook/rationales.yaml"),
    output:
        summary="results/stats/rationale_concordance.parquet",
        codes="results/stats/rationale_codes.parquet",
    log:
        "logs/stats/rationale_codes.log",
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
    script:
        "../scripts/rationale_codes.py"


rule preference_shares:
    # §4.5: who wins human-vs-model head-to-heads, by human raters and by LLM judges
    input:
        judgments="results/judging/judgments.parquet",
    output:
        "results/stats/preference_shares.parquet",
    log:
        "logs/stats/preference_shares.log",
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
    script:
        "../scripts/preference_shares.py"


rule style_ratings:
    # beyond the paper: Bradley-Terry with style covariates (length, warmth), beside the plain ratings
    input:
        judgments="results/judging/judgments.parquet",
        completions=COMPLETIONS,
        lexicon=workflow.source_path("../resources/style/warmth.yaml"),
    output:
        ratings="results/stats/style_ratings.parquet",
        coefficients="results/stats/style_coefficients.parquet",
        table=report(
            "results/tables/style_ratings.csv",
            caption="../report/table_style_ratings.rst",
            category="4. Tables",
            labels={"table": "style_ratings", "format": "csv"},
        ),
        coefficient_table=report(
            "results/tables/style_coefficients.csv",
            caption="../report/table_style_ratings.rst",
            category="4. Tables",
            labels={"table": "style_coefficients", "format": "csv"},
        ),
    log:
        "logs/stats/style_ratings.log",
    benchmark:
        "benchmarks/stats/style_ratings.tsv"
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
        bt_alpha=STATS["bt_alpha"],
        label=RUN_LABEL,
    script:
        "../scripts/style_ratings.py"


rule ablations:
    # HEART section 9.12's exploratory ablations: allowing draws (Davidson), other rankers (probit, win rate,
    # online Elo, the authors' released soft-score fit) beside the main Bradley-Terry ranking
    input:
        judgments="results/judging/judgments.parquet",
        models=MODELS_CSV,
    output:
        table="results/stats/ablations.parquet",
        csv=report(
            "results/tables/ablations.csv",
            caption="../report/table_ablations.rst",
            category="4. Tables",
            labels={"table": "ablations", "format": "csv"},
        ),
        tex="results/tables/ablations.tex",
    log:
        "logs/stats/ablations.log",
    benchmark:
        "benchmarks/stats/ablations.tsv"
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
        bt_alpha=STATS["bt_alpha"],
        ablations=STATS["ablations"],
        source=config["figures"]["fig4"]["source"],  # the main ranking is Figure 4's
        display_names=config["figures"]["fig4"]["display_names"],
        label=RUN_LABEL,
    script:
        "../scripts/ablations.py"


rule judge_board:
    # beyond the paper: every LLM judge and the ensemble side by side (AlpacaEval's evaluator leaderboard,
    # Judgemark), and the subsets of judges a study may choose its ensemble from
    input:
        # a study's own judges' quality checks (an analysis-only run checked none: those cells say so)
        **({} if ANALYSIS_ONLY else {"judge_quality": "results/judging/judge_quality.parquet"}),
        judgments="results/judging/judgments.parquet",
        # each order's verdict with its cost and time, as rule bias_audits reads them
        verdicts=[
            *expand("results/judging/llm/{judge}.parquet", judge=[] if ANALYSIS_ONLY else JUDGES),
            "results/judging/imported_verdicts.parquet",
        ],
        completions=COMPLETIONS,
        flips="results/judging/flip_rates.parquet",
    output:
        board="results/stats/judge_board.parquet",
        ensembles="results/stats/judge_ensembles.parquet",
        board_csv=report(
            "results/tables/judge_board.csv",
            caption="../report/judge_board.rst",
            category="2. Judges",
            labels={"table": "judge_board", "format": "csv"},
        ),
        ensembles_csv=report(
            "results/tables/judge_ensembles.csv",
            caption="../report/judge_ensembles.rst",
            category="2. Judges",
            labels={"table": "judge_ensembles", "format": "csv"},
        ),
    log:
        "logs/stats/judge_board.log",
    benchmark:
        "benchmarks/stats/judge_board.tsv"
    # a long job: started early (see rule ratings)
    priority: 10
    conda:
        "../../envs/stats.yaml"
    params:
        bootstrap=BOOTSTRAP,
        bt_alpha=STATS["bt_alpha"],
        best_human=STATS["best_human"],
        judges=JUDGES,
        judge_families=judge_families(),
        families=system_families(),
        # their empty price is "a local model", not an unknown one
        local_judges=[j for j in JUDGES if not ANALYSIS_ONLY and uses_local_model(judge_of(j).model)],
        label=RUN_LABEL,
    script:
        "../scripts/judge_board.py"
