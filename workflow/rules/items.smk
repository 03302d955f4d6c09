# Stage 2 — screening and regular evaluation items -> results/items/*.parquet


rule screen_items:
    input:
        conversations="results/data/conversations.parquet",
        turns="results/data/turns.parquet",
        lexicon=workflow.source_path("../resources/screening/lexicon.yaml"),
    output:
        audit="results/items/screening_audit.parquet",
        regular="results/items/regular.parquet",
    params:
        screening=config["screening"],
        n=config["regular_items"]["n"],
        seed=config["regular_items"]["seed"],
    log:
        "logs/items/screen_items.log",
    benchmark:
        "benchmarks/items/screen_items.tsv"
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/screen_items.py"
