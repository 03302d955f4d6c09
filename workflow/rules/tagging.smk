# Stage 5 — support-strategy tagging of every completion -> results/tagging/


rule tag_strategies:
    # the completions of one shard of the items (llm.shards); merge_tags joins the shards
    input:
        completions=expand("results/completions/{system}.parquet", system=SYSTEMS),
        taxonomy=taxonomy_file(),
        prompt=lambda wc: workflow.source_path(
            f"../resources/prompts/tagging/{config['tagging']['taggers'][wc.tagger]['prompt']}.md"
        ),
        replay=replay_input(),
    output:
        "results/tagging/shards/{tagger}/{shard}.parquet",
    params:
        tagger=lambda wc: wc.tagger,
        shard=lambda wc: wc.shard,
        model=lambda wc: model_params(config["tagging"]["taggers"][wc.tagger]["model"]),
        call_params=lambda wc: config["tagging"]["taggers"][wc.tagger]["params"],
        answer=lambda wc: config["tagging"]["taggers"][wc.tagger]["answer"],
        evidence_max_chars=config["tagging"]["evidence_max_chars"],
        llm=ENGINE,
    resources:
        local_llm=lambda wc: uses_local_model(config["tagging"]["taggers"][wc.tagger]["model"]),
    log:
        "logs/tagging/{tagger}/{shard}.log",
    benchmark:
        "benchmarks/tagging/{tagger}/{shard}.tsv"
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/tag_strategies.py"


rule merge_tags:
    input:
        item_table="results/items/items.parquet",
        shards=expand("results/tagging/shards/{{tagger}}/{shard}.parquet", shard=SHARDS),
    output:
        "results/tagging/{tagger}.parquet",
    params:
        table="strategy_tags",
        systems=SYSTEMS,
    log:
        "logs/tagging/{tagger}.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/merge_shards.py"


rule strategy_f1:
    input:
        tags="results/tagging/{tagger}.parquet",
        taxonomy=taxonomy_file(),
        spot_checks=human_file(config["tagging"]["spot_checks"]),
    output:
        "results/tagging/{tagger}_f1.parquet",
    params:
        path=config["tagging"]["spot_checks"],
    log:
        "logs/tagging/{tagger}_f1.log",
    conda:
        "../../envs/data.yaml"
    script:
        "../scripts/strategy_f1.py"
