# Stage 1 — raw ESConv (and the paper's released contexts) -> results/data/*.parquet


rule download_esconv:
    output:
        "resources/esconv/ESConv.json",
    log:
        "logs/data/download_esconv.log",
    conda:
        "../../envs/data.yaml"
    params:
        url=config["esconv"]["url"],
        sha256=config["esconv"]["sha256"],
        what="ESConv",
        setting="esconv",
        howto=None,
    script:
        "../scripts/download.py"


rule download_release:
    # the paper's released contexts, when no local copy is configured (release.local_copy)
    output:
        "resources/heart-release/dialogues_{subset}.json",
    log:
        "logs/data/download_release_{subset}.log",
    wildcard_constraints:
        subset="regular|adversarial",
    conda:
        "../../envs/data.yaml"
    params:
        url=lambda wc: config["release"][wc.subset]["url"],
        sha256=lambda wc: config["release"][wc.subset]["sha256"],
        what=lambda wc: f"the HEART release's {wc.subset} contexts",
        setting=lambda wc: f"release.{wc.subset}",
        howto=(
            "To use a local copy instead, set it in the config: 'release: {local_copy: /path/to/folder}' "
            "(the folder holding dialogues_regular.json and dialogues_adversarial.json; or run: make run "
            "RELEASE=/path/to/folder), or place the files in resources/heart-release/."
        ),
    script:
        "../scripts/download.py"


rule ingest_esconv:
    input:
        esconv=esconv_input(),
    output:
        conversations="results/data/conversations.parquet",
        turns="results/data/turns.parquet",
        source="results/data/esconv_source.parquet",
    log:
        "logs/data/ingest_esconv.log",
    conda:
        "../../envs/data.yaml"
    params:
        upstream_sha256=config["esconv"]["sha256"],
    script:
        "../scripts/ingest_esconv.py"


rule map_release:
    # every released context mapped onto ESConv: conversation, end position, match quality
    input:
        unpack(release_inputs),
        conversations="results/data/conversations.parquet",
        turns="results/data/turns.parquet",
    output:
        mapping="results/data/release_mapping.parquet",
        source="results/data/release_source.parquet",
    log:
        "logs/data/map_release.log",
    conda:
        "../../envs/data.yaml"
    params:
        upstream={subset: config["release"][subset] for subset in ("regular", "adversarial")},
    script:
        "../scripts/map_release.py"
