# Stage 3 — next-turn completions per system -> results/completions/<system>.parquet


rule generate_completions:
    # one shard of the items (llm.shards); merge_completions joins the shards
    input:
        item_table="results/items/items.parquet",
        prompt=lambda wc: workflow.source_path(
            f"../resources/prompts/completion/{config['systems'][wc.system]['prompt']}.md"
        ),
        replay=replay_input(),
    output:
        "results/shards/completions/{system}/{shard}.parquet",
    params:
        system=lambda wc: wc.system,
        shard=lambda wc: wc.shard,
        prompt_name=lambda wc: config["systems"][wc.system]["prompt"],
        model=lambda wc: model_params(config["systems"][wc.system]["model"]),
        llm=ENGINE,
    resources:
        local_llm=lambda wc: uses_local_model(config["systems"][wc.system]["model"]),
    log:
        "logs/completions/{system}/{shard}.log",
    benchmark:
        "benchmarks/completions/{system}/{shard}.tsv"
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/generate_completions.py"


rule merge_completions:
    input:
        item_table="results/items/items.parquet",
        shards=expand("results/shards/completions/{{system}}/{shard}.parquet", shard=SHARDS),
    output:
        "results/completions/{system}.parquet",
    params:
        table="completions",
    log:
        "logs/completions/{system}.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/merge_shards.py"


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
        humans=optional_file(config["human_completions"]["path"]),
    output:
        completions="results/completions/human.parquet",
        violations="results/completions/human_violations.parquet",
    params:
        path=config["human_completions"]["path"],
    log:
        "logs/completions/human.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/human_completions.py"


rule summarize_systems:
    input:
        expand("results/completions/{system}.parquet", system=SYSTEMS),
    output:
        "results/completions/systems.parquet",
    params:
        systems=SYSTEMS,
        human_path=config["human_completions"]["path"],
        # the note tells "no file" from "a file with nothing usable in it"
        human_file=bool(optional_file(config["human_completions"]["path"])),
    log:
        "logs/completions/summarize_systems.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/summarize_systems.py"


rule export_llm_cache:
    input:
        # re-export whenever a stage that calls models has run
        "results/completions/systems.parquet",
        "results/items/adversarial.parquet",
        expand("results/judging/llm/{judge}.parquet", judge=JUDGES),
        expand("results/tagging/{tagger}.parquet", tagger=TAGGERS),
    output:
        "results/llm_cache.parquet",
    params:
        cache_dir=config["llm"]["cache_dir"],
    log:
        "logs/completions/export_llm_cache.log",
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/export_llm_cache.py"


rule preview_llm_calls:
    # on demand, before any paid call: snakemake results/preview/llm_calls.parquet
    input:
        conversations="results/data/conversations.parquet",
        turns="results/data/turns.parquet",
        regular="results/items/regular.parquet",
        lexicon=workflow.source_path("../resources/screening/lexicon.yaml"),
        adversarial_prompt=workflow.source_path("../resources/prompts/adversarial/rewrite_seeker.md"),
        prompts=[
            workflow.source_path(f"../resources/prompts/completion/{s['prompt']}.md")
            for s in config["systems"].values()
        ],
        rubric=workflow.source_path(f"../resources/rubric/{config['judging']['rubric']}.yaml"),
        judge_prompts=[
            workflow.source_path(f"../resources/prompts/judge/{j['prompt']}.md")
            for j in config["judging"]["judges"].values()
        ],
        taxonomy=workflow.source_path(f"../resources/taxonomy/{config['tagging']['taxonomy']}.yaml"),
        tagging_prompts=[
            workflow.source_path(f"../resources/prompts/tagging/{t['prompt']}.md")
            for t in config["tagging"]["taggers"].values()
        ],
    output:
        "results/preview/llm_calls.parquet",
    params:
        systems=config["systems"],
        judging=config["judging"],
        tagging=config["tagging"],
        families=system_families(),
        models={name: model_params(name) for name in used_models()},
        adversarial=config["adversarial_items"],
        llm=ENGINE,
    log:
        "logs/preview/preview_llm_calls.log",
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/preview_llm_calls.py"
