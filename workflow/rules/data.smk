# Stage 1 — raw ESConv -> results/data/*.parquet


rule download_esconv:
    output:
        "resources/esconv/ESConv.json",
    params:
        url=config["esconv"]["url"],
        sha256=config["esconv"]["sha256"],
    log:
        "logs/data/download_esconv.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/download_esconv.py"


rule ingest_esconv:
    input:
        esconv=esconv_input(),
    output:
        conversations="results/data/conversations.parquet",
        turns="results/data/turns.parquet",
        source="results/data/esconv_source.parquet",
    params:
        upstream_sha256=config["esconv"]["sha256"],
    log:
        "logs/data/ingest_esconv.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/ingest_esconv.py"
