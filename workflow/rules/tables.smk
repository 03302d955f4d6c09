# The paper's tables as CSV and LaTeX -> results/tables/


rule paper_tables:
    input:
        leaderboard="results/stats/leaderboard.parquet",
        models=workflow.source_path("../resources/external/models.csv"),
        external="results/stats/external_correlations.parquet",
        human_llm="results/stats/agreement_human_llm.parquet",
        cross_judge="results/stats/agreement_cross_judge.parquet",
        diversity="results/stats/strategy_diversity.parquet",
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
            for name in ("table1", "leaderboard", "agreement", "strategy_diversity", "factors", "tests")
            for ext in ("csv", "tex")
        },
    params:
        ci=config["stats"]["ci"],  # column names and captions name the intervals' coverage
    log:
        "logs/tables/paper_tables.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/paper_tables.py"
