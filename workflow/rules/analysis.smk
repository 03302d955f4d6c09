# Analysis only (config analysis_only) — a table of pairwise judgments made elsewhere -> the workflow's
# judging tables (results/judging/), from which the statistics and figures rules run as in a study.


rule import_judgments:
    input:
        config["analysis_only"]["judgments"],
    output:
        pairs="results/judging/pairs.parquet",
        judgments="results/judging/judgments.parquet",
        verdicts="results/judging/imported_verdicts.parquet",
        flips="results/judging/flip_rates.parquet",
        sources="results/judging/sources.parquet",
    params:
        strength_map=config["human_judgments"]["strength_map"],
    log:
        "logs/judging/import_judgments.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/import_judgments.py"
