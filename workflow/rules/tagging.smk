# Stage 5 — support-strategy tagging of every completion -> results/tagging/


# a rule that calls a provider is not defined in a run from a bundle (ARTIFACTS): such a run can never pay
if not ARTIFACTS:

    rule tag_strategies:
        # the completions of one shard (split by reply text, llm.shards); merge_tags joins the shards
        input:
            completions=COMPLETIONS,
            taxonomy=taxonomy_file(),
            prompt=lambda wc: tagger_prompt(wc.tagger),
            replay=replay_input(),
        output:
            "results/tagging/shards/{tagger}/{shard}.parquet",
        log:
            "logs/tagging/{tagger}/{shard}.log",
        benchmark:
            "benchmarks/tagging/{tagger}/{shard}.tsv"
        conda:
            "../../envs/llm.yaml"
        threads: lambda wc: model_threads(tagger_of(wc.tagger).model)
        resources:
            local_llm=lambda wc: uses_local_model(tagger_of(wc.tagger).model),
        params:
            tagger=lambda wc: tagger_of(wc.tagger).as_params(),  # heart.tagging.tagger.Tagger, as a plain dict
            model=lambda wc: model_params(tagger_of(wc.tagger).model),
            shard=lambda wc: wc.shard,
            llm=ENGINE,
        script:
            "../scripts/tag_strategies.py"


rule merge_tags:
    input:
        item_table="results/items/items.parquet",
        shards=expand("results/tagging/shards/{{tagger}}/{shard}.parquet", shard=SHARDS),
    output:
        "results/tagging/{tagger}.parquet",
    log:
        "logs/tagging/{tagger}.log",
    conda:
        "../../envs/data.yaml"
    params:
        table="strategy_tags",
        systems=SYSTEMS,
    script:
        "../scripts/merge_shards.py"


rule strategy_f1:
    input:
        tags="results/tagging/{tagger}.parquet",
        taxonomy=taxonomy_file(),
        spot_checks=human_file(config["tagging"]["spot_checks"]),
    output:
        "results/tagging/{tagger}_f1.parquet",
    log:
        "logs/tagging/{tagger}_f1.log",
    conda:
        "../../envs/data.yaml"
    params:
        path=config["tagging"]["spot_checks"],
    script:
        "../scripts/strategy_f1.py"
