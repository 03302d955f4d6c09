# Stage 2 — the evaluation items -> results/items/*.parquet: the paper's released contexts
# (items.source: release), or a new study's, screened from ESConv and rewritten (items.source: screening)


if RELEASED_ITEMS:

    rule release_items:
        input:
            unpack(release_inputs),
            mapping="results/data/release_mapping.parquet",
            turns="results/data/turns.parquet",
        output:
            regular="results/items/regular.parquet",
            adversarial="results/items/adversarial.parquet",
        log:
            "logs/items/release_items.log",
        conda:
            "../../envs/data.yaml"
        script:
            "../scripts/release_items.py"

else:

    rule screen_items:
        input:
            conversations="results/data/conversations.parquet",
            turns="results/data/turns.parquet",
            lexicon=workflow.source_path("../resources/screening/lexicon.yaml"),
        output:
            audit="results/items/screening_audit.parquet",
            regular="results/items/regular.parquet",
        log:
            "logs/items/screen_items.log",
        benchmark:
            "benchmarks/items/screen_items.tsv"
        conda:
            "../../envs/data.yaml"
        params:
            # every screening setting but calibrate (which only asks for the calibration table)
            screening={k: v for k, v in config["screening"].items() if k != "calibrate"},
            n=config["regular_items"]["n"],
            seed=config["regular_items"]["seed"],
        script:
            "../scripts/screen_items.py"

    rule screening_calibration:
        # the screen against the paper's released items: recall, selectivity, context lengths
        input:
            audit="results/items/screening_audit.parquet",
            mapping="results/data/release_mapping.parquet",
        output:
            "results/items/screening_calibration.parquet",
        log:
            "logs/items/screening_calibration.log",
        conda:
            "../../envs/data.yaml"
        script:
            "../scripts/screening_calibration.py"

    rule make_adversarial_items:
        input:
            conversations="results/data/conversations.parquet",
            turns="results/data/turns.parquet",
            regular="results/items/regular.parquet",
            lexicon=workflow.source_path("../resources/screening/lexicon.yaml"),
            prompt=workflow.source_path("../resources/prompts/adversarial/rewrite_seeker.md"),
            replay=replay_input(),
        output:
            adversarial="results/items/adversarial.parquet",
            attempts="results/items/adversarial_attempts.parquet",
        log:
            "logs/items/make_adversarial_items.log",
        benchmark:
            "benchmarks/items/make_adversarial_items.tsv"
        conda:
            "../../envs/llm.yaml"
        threads: model_threads(config["adversarial_items"]["model"])
        resources:
            local_llm=uses_local_model(config["adversarial_items"]["model"]),
        params:
            settings={k: v for k, v in config["adversarial_items"].items() if k != "model"},  # the model: below
            model=model_params(config["adversarial_items"]["model"]),
            llm=ENGINE,
        script:
            "../scripts/make_adversarial_items.py"


rule collect_items:
    input:
        regular="results/items/regular.parquet",
        adversarial="results/items/adversarial.parquet",
    output:
        "results/items/items.parquet",
    log:
        "logs/items/collect_items.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/collect_items.py"
