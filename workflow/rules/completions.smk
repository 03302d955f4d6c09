# Stage 3 — next-turn completions per system -> results/completions/<system>.parquet


# a rule that calls a provider is not defined in a run from a bundle (ARTIFACTS): such a run can never pay
if not ARTIFACTS:

    rule generate_completions:
        input:
            item_table="results/items/items.parquet",
            prompt=lambda wc: workflow.source_path(
                f"../resources/prompts/completion/{config['systems'][wc.system]['prompt']}.md"
            ),
            replay=replay_input(),
        output:
            "results/completions/shards/{system}/{shard}.parquet",
        log:
            "logs/completions/{system}/{shard}.log",
        benchmark:
            "benchmarks/completions/{system}/{shard}.tsv"
        # one shard of the items (llm.shards); merge_completions joins the shards
        wildcard_constraints:
            system="|".join(map(re.escape, MODEL_SYSTEMS)) or "(?!)",
        conda:
            "../../envs/llm.yaml"
        threads: lambda wc: model_threads(config["systems"][wc.system]["model"])
        resources:
            local_llm=lambda wc: uses_local_model(config["systems"][wc.system]["model"]),
        params:
            system=lambda wc: wc.system,
            shard=lambda wc: wc.shard,
            prompt_name=lambda wc: config["systems"][wc.system]["prompt"],
            model=lambda wc: model_params(config["systems"][wc.system]["model"]),
            llm=ENGINE,
            cut_replies=config["completions"]["cut_replies"],
        script:
            "../scripts/generate_completions.py"


rule merge_completions:
    input:
        item_table="results/items/items.parquet",
        shards=expand("results/completions/shards/{{system}}/{shard}.parquet", shard=SHARDS),
    output:
        "results/completions/{system}.parquet",
    log:
        "logs/completions/{system}.log",
    wildcard_constraints:
        system="|".join(map(re.escape, MODEL_SYSTEMS)) or "(?!)",
    conda:
        "../../envs/data.yaml"
    params:
        table="completions",
    script:
        "../scripts/merge_shards.py"


rule import_completions:
    input:
        item_table="results/items/items.parquet",
        completions=lambda wc: config["imported_systems"][wc.system]["path"],
    output:
        completions="results/completions/{system}.parquet",
        violations="results/completions/imported/{system}_violations.parquet",
    log:
        "logs/completions/{system}.log",
    # a system whose completions were made elsewhere (config imported_systems), read like human ones
    wildcard_constraints:
        system="|".join(map(re.escape, IMPORTED_SYSTEMS)) or "(?!)",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/import_completions.py"


rule original_completions:
    input:
        item_table="results/items/items.parquet",
    output:
        "results/completions/original.parquet",
    log:
        "logs/completions/original.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/original_completions.py"


rule human_completions:
    input:
        item_table="results/items/items.parquet",
        humans=human_file(config["human_completions"]["path"]),
    output:
        completions="results/completions/human.parquet",
        violations="results/completions/human_violations.parquet",
        protocol="results/completions/human_protocol.parquet",
    log:
        "logs/completions/human.log",
    conda:
        "../../envs/data.yaml"
    params:
        path=config["human_completions"]["path"],
        per_context=config["human_completions"]["per_context"],
        pool_size=config["human_completions"]["pool_size"],
    script:
        "../scripts/human_completions.py"


rule summarize_systems:
    input:
        COMPLETIONS,
    output:
        "results/completions/systems.parquet",
    log:
        "logs/completions/summarize_systems.log",
    conda:
        "../../envs/data.yaml"
    params:
        systems=SYSTEMS,
        imported={s: c["path"] for s, c in config["imported_systems"].items()},
        human_path=config["human_completions"]["path"],
        # the note tells "no file" from "a file with nothing usable in it"
        human_file=bool(human_file(config["human_completions"]["path"])),
    script:
        "../scripts/summarize_systems.py"


rule screen_completions:
    # HEART section 6's automated safety screen of every completion (the offline lexicon's moderation categories,
    # and a provider's moderation endpoint where completions.moderation names one), the human review of its flags
    # (annotation task safety_review, or a file) and what a confirmed flag does (completions.confirmed_flags)
    input:
        completions=COMPLETIONS,
        # the seeker turns a model wrote (the adversarial rewrites) are screened too
        item_table="results/items/items.parquet",
        lexicon=workflow.source_path("../resources/safety/lexicon.yaml"),
        reviews=human_file(config["completions"]["safety_reviews"]),
    output:
        table="results/completions/safety.parquet",
        flags="results/completions/safety_flags.parquet",
        csv=report(
            "results/tables/safety.csv",
            caption="../report/table_safety.rst",
            category="4. Tables",
            labels={"table": "safety", "format": "csv"},
        ),
    log:
        "logs/completions/screen_completions.log",
    conda:
        "../../envs/data.yaml"
    params:
        label=RUN_LABEL,
        moderation=model_params(MODERATION) if MODERATION else None,
        leave_out=config["completions"]["confirmed_flags"],
        reviews_path=config["completions"]["safety_reviews"],
    script:
        "../scripts/screen_completions.py"
