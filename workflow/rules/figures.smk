# Stage 7 — the paper's figures and tables from results/stats (Parquet only) -> results/figures/, results/tables/
# Each figure has its own rule, so changing one figure's style reruns only that figure.


rule figure_leaderboard:
    input:
        # whether the LLM judges behind the figure pass their known-answer checks (a study's own judges)
        **({} if ANALYSIS_ONLY else {"judge_quality": "results/judging/judge_quality.parquet"}),
        ratings="results/stats/ratings.parquet",
        models=MODELS_CSV,  # each model's display name (figure_name)
        style=figure_style("fig4_leaderboard"),
    output:
        png=report(
            "results/figures/fig4_leaderboard.png",
            caption="../report/fig4_leaderboard.rst",
            category="1. Leaderboard",
            labels={"figure": "Figure 4: leaderboard heatmap"},
        ),
        pdf="results/figures/fig4_leaderboard.pdf",
    log:
        "logs/figures/fig4_leaderboard.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
        fig4=config["figures"]["fig4"],
    script:
        "../scripts/figure_leaderboard.py"


rule figure_elo_ttft:
    input:
        # whether the LLM judges behind the figure pass their known-answer checks (a study's own judges)
        **({} if ANALYSIS_ONLY else {"judge_quality": "results/judging/judge_quality.parquet"}),
        ratings="results/stats/ratings.parquet",
        models=MODELS_CSV,
        completions=TTFT_COMPLETIONS,
        correlations="results/stats/external_correlations.parquet",  # its rho, not computed again
        style=figure_style("fig5_elo_ttft"),
    output:
        png=report(
            "results/figures/fig5_elo_ttft.png",
            caption="../report/fig5_elo_ttft.rst",
            category="1. Leaderboard",
            labels={"figure": "Figure 5: Elo vs TTFT"},
        ),
        pdf="results/figures/fig5_elo_ttft.pdf",
    log:
        "logs/figures/fig5_elo_ttft.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
        source=config["figures"]["fig4"]["source"],
        display_names=config["figures"]["fig4"]["display_names"],
        ttft_source=config["figures"]["fig5"]["ttft_source"],
    script:
        "../scripts/figure_elo_ttft.py"


rule figure_strategies:
    input:
        usage="results/stats/strategy_usage.parquet",
        style=figure_style("fig6_strategies"),
    output:
        png=report(
            "results/figures/fig6_strategies.png",
            caption="../report/fig6_strategies.rst",
            category="3. Strategies",
            labels={"figure": "Figure 6: strategy usage"},
        ),
        pdf="results/figures/fig6_strategies.pdf",
    log:
        "logs/figures/fig6_strategies.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
    script:
        "../scripts/figure_strategies.py"


rule figure_elo_forest:
    input:
        # whether the LLM judges behind the figure pass their known-answer checks (a study's own judges)
        **({} if ANALYSIS_ONLY else {"judge_quality": "results/judging/judge_quality.parquet"}),
        ratings="results/stats/ratings.parquet",
        style=figure_style("elo_forest"),
    output:
        png=report(
            "results/figures/elo_forest.png",
            caption="../report/elo_forest.rst",
            category="1. Leaderboard",
            labels={"figure": "Elo with both intervals, by subset"},
        ),
        pdf="results/figures/elo_forest.pdf",
    log:
        "logs/figures/elo_forest.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
    script:
        "../scripts/figure_elo_forest.py"


rule figure_ablations:
    input:
        table="results/stats/ablations.parquet",
        models=MODELS_CSV,
        style=figure_style("ablations"),
    output:
        png=report(
            "results/figures/ablations.png",
            caption="../report/ablations.rst",
            category="1. Leaderboard",
            labels={"figure": "Ablations (exploratory)"},
        ),
        pdf="results/figures/ablations.pdf",
    log:
        "logs/figures/ablations.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
        display_names=config["figures"]["fig4"]["display_names"],
    script:
        "../scripts/figure_ablations.py"


rule figure_agreement:
    input:
        human_llm="results/stats/agreement_human_llm.parquet",
        cross_judge="results/stats/agreement_cross_judge.parquet",
        trivial="results/stats/trivial_judges.parquet",
        style=figure_style("agreement"),
    output:
        png=report(
            "results/figures/agreement.png",
            caption="../report/agreement.rst",
            category="2. Judges",
            labels={"figure": "Agreement"},
        ),
        pdf="results/figures/agreement.pdf",
    log:
        "logs/figures/agreement.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
        ci=config["stats"]["ci"],  # the legend names the intervals' coverage
    script:
        "../scripts/figure_agreement.py"


rule figure_bias_factors:
    input:
        position="results/stats/bias_position.parquet",
        length="results/stats/bias_length.parquet",
        self_preference="results/stats/bias_self_preference.parquet",
        flips="results/judging/flip_rates.parquet",
        loadings="results/stats/factor_loadings.parquet",
        style=figure_style("bias_factors"),
    output:
        png=report(
            "results/figures/bias_factors.png",
            caption="../report/bias_factors.rst",
            category="2. Judges",
            labels={"figure": "Bias audits and factor loadings"},
        ),
        pdf="results/figures/bias_factors.pdf",
    log:
        "logs/figures/bias_factors.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
    script:
        "../scripts/figure_bias_factors.py"


rule figure_example_pair:
    input:
        judgments="results/judging/judgments.parquet",
        item_table="results/items/items.parquet",
        completions=COMPLETIONS,
        # a reply the safety screen flagged is never the example (the report shows no flagged text)
        safety_flags="results/completions/safety_flags.parquet",
        style=figure_style("example_pair"),
    output:
        png=report(
            "results/figures/example_pair.png",
            caption="../report/example_pair.rst",
            category="2. Judges",
            labels={"figure": "An example judged pair"},
        ),
        pdf="results/figures/example_pair.pdf",
        html=report(
            "results/figures/example_pair.html",
            caption="../report/example_pair.rst",
            category="2. Judges",
            labels={"figure": "An example judged pair (HTML)"},
        ),
    log:
        "logs/figures/example_pair.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
    script:
        "../scripts/figure_example_pair.py"


rule figure_rubric:
    # Figure 1 from the versioned rubric the judges are given (its axes and their criteria)
    input:
        rubric=rubric_file(),
        style=figure_style("fig1_rubric"),
    output:
        png=report(
            "results/figures/fig1_rubric.png",
            caption="../report/fig1_rubric.rst",
            category="0. The benchmark",
            labels={"figure": "Figure 1: the HEART axes"},
        ),
        pdf="results/figures/fig1_rubric.pdf",
    log:
        "logs/figures/fig1_rubric.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,
    script:
        "../scripts/figure_rubric.py"


if not ANALYSIS_ONLY:

    rule figure_protocol:
        # Figure 7 from this workflow's own rule graph (each step's rules) and this run's counts
        input:
            item_table="results/items/items.parquet",
            systems="results/completions/systems.parquet",
            pair_table="results/judging/pairs.parquet",
            judgments="results/judging/judgments.parquet",
            tags=expand("results/tagging/{tagger}.parquet", tagger=TAGGERS),
            style=figure_style("fig7_protocol"),
        output:
            png=report(
                "results/figures/fig7_protocol.png",
                caption="../report/fig7_protocol.rst",
                category="0. The benchmark",
                labels={"figure": "Figure 7: evaluation protocol"},
            ),
            pdf="results/figures/fig7_protocol.pdf",
        log:
            "logs/figures/fig7_protocol.log",
        conda:
            "../../envs/figures.yaml"
        params:
            label=RUN_LABEL,
            n_boot=config["stats"]["n_boot"],
            # the figure lists the rules whose logs exist: those that ran
            rules=lambda wc: rule_logs(),
        script:
            "../scripts/figure_protocol.py"


rule figure_judge_board:
    # the judge leaderboard (rule judge_board): agreement with people, biases, flips, QC, separability, cost
    input:
        # whether the LLM judges pass their known-answer checks (a study's own judges)
        **({} if ANALYSIS_ONLY else {"judge_quality": "results/judging/judge_quality.parquet"}),
        board="results/stats/judge_board.parquet",
        ensembles="results/stats/judge_ensembles.parquet",
        style=figure_style("judge_board"),
    output:
        png=report(
            "results/figures/judge_board.png",
            caption="../report/judge_board.rst",
            category="2. Judges",
            labels={"figure": "Judge leaderboard"},
        ),
        pdf="results/figures/judge_board.pdf",
    log:
        "logs/figures/judge_board.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,  # "SIMULATED" across a rehearsal's figures
    script:
        "../scripts/figure_judge_board.py"
