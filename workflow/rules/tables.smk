# The paper's tables as CSV and LaTeX -> results/tables/


rule paper_tables:
    input:
        # a study's own: analysis-only has no completions to tag and no judge of its own to check (the
        # tables say so)
        **(
            {}
            if ANALYSIS_ONLY
            else {
                "diversity": "results/stats/strategy_diversity.parquet",
                "judge_quality": "results/judging/judge_quality.parquet",
            }
        ),
        ratings="results/stats/ratings.parquet",
        alternative="results/stats/ratings_alternative.parquet",
        models=MODELS_CSV,
        external="results/stats/external_correlations.parquet",
        human_llm="results/stats/agreement_human_llm.parquet",
        cross_judge="results/stats/agreement_cross_judge.parquet",
        factor_summary="results/stats/factor_summary.parquet",
        loadings="results/stats/factor_loadings.parquet",
        tests="results/stats/tests.parquet",
    output:
        **{
            f"{name}_{ext}": report(
                f"results/tables/{name}.{ext}",
                caption=f"../report/table_{name}.rst",
                category="4. Tables",
                labels={"table": name, "format": ext},
            )
            for name in (
                "table1",
                "leaderboard",
                "leaderboard_alternative",
                "agreement",
                "judge_quality",
                "strategy_diversity",
                "factors",
                "tests",
            )
            for ext in ("csv", "tex")
        },
    log:
        "logs/tables/paper_tables.log",
    conda:
        "../../envs/figures.yaml"
    params:
        ci=config["stats"]["ci"],  # column names and captions name the intervals' coverage
        fig4=config["figures"]["fig4"],
        best_human=config["stats"]["best_human"],
        label=RUN_LABEL,  # "SIMULATED" in a rehearsal's tables
        paper_reference=PAPER_REFERENCE,  # Table 1's rows of the paper (config paper_reference)
    script:
        "../scripts/paper_tables.py"


rule rubric_table:
    # Table 2 from the versioned rubric the judges are given (editing it reruns this and the judges)
    input:
        rubric=rubric_file(),
    output:
        csv=report(
            "results/tables/table2_rubric.csv",
            caption="../report/table_table2_rubric.rst",
            category="4. Tables",
            labels={"table": "table2_rubric", "format": "csv"},
        ),
        tex="results/tables/table2_rubric.tex",
    log:
        "logs/tables/rubric_table.log",
    conda:
        "../../envs/figures.yaml"
    params:
        label=RUN_LABEL,
    script:
        "../scripts/rubric_table.py"


rule paper_comparison:
    # every headline number of the paper next to this run's value, interval, scope and definition
    input:
        # a study's own (analysis-only has judgments, not completions or tags: those numbers say so)
        **(
            {}
            if ANALYSIS_ONLY
            else {
                "diversity": "results/stats/strategy_diversity.parquet",
                "strategy_f1": expand("results/tagging/{tagger}_f1.parquet", tagger=TAGGERS[:1]),
                "systems": "results/completions/systems.parquet",
            }
        ),
        spec=workflow.source_path("../resources/paper/headline_numbers.yaml"),
        models=MODELS_CSV,
        ratings="results/stats/ratings.parquet",
        human_llm="results/stats/agreement_human_llm.parquet",
        cross_judge="results/stats/agreement_cross_judge.parquet",
        inter_human="results/stats/agreement_inter_human.parquet",
        preference_shares="results/stats/preference_shares.parquet",
        rationale_concordance="results/stats/rationale_concordance.parquet",
        external="results/stats/external_correlations.parquet",
        judgments="results/judging/judgments.parquet",
    output:
        parquet="results/stats/paper_comparison.parquet",
        csv=report(
            "results/tables/paper_comparison.csv",
            caption="../report/table_paper_comparison.rst",
            category="0. The paper vs this run",
            labels={"table": "paper_comparison", "format": "csv"},
        ),
        tex="results/tables/paper_comparison.tex",
    log:
        "logs/tables/paper_comparison.log",
    conda:
        "../../envs/figures.yaml"
    params:
        ci=config["stats"]["ci"],
        fig4={k: config["figures"]["fig4"][k] for k in ("source", "columns")},  # names: not shown
        label=RUN_LABEL,
    script:
        "../scripts/paper_comparison.py"
