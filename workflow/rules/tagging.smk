# Stage 5 — support-strategy tagging of every completion -> results/tagging/


rule tag_strategies:
    input:
        completions=expand("results/completions/{system}.parquet", system=SYSTEMS),
        taxonomy=workflow.source_path(f"../resources/taxonomy/{config['tagging']['taxonomy']}.yaml"),
        prompt=lambda wc: workflow.source_path(
            f"../resources/prompts/tagging/{config['tagging']['taggers'][wc.tagger]['prompt']}.md"
        ),
        replay=replay_input(),
    output:
        "results/tagging/{tagger}.parquet",
    params:
        tagger=lambda wc: wc.tagger,
        model=lambda wc: model_params(config["tagging"]["taggers"][wc.tagger]["model"]),
        call_params=lambda wc: config["tagging"]["taggers"][wc.tagger]["params"],
        evidence_max_chars=config["tagging"]["evidence_max_chars"],
        llm=config["llm"],
    resources:
        local_llm=lambda wc: uses_local_model(config["tagging"]["taggers"][wc.tagger]["model"]),
    log:
        "logs/tagging/{tagger}.log",
    benchmark:
        "benchmarks/tagging/{tagger}.tsv"
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/tag_strategies.py"


rule strategy_f1:
    input:
        tags="results/tagging/{tagger}.parquet",
        taxonomy=workflow.source_path(f"../resources/taxonomy/{config['tagging']['taxonomy']}.yaml"),
        spot_checks=lambda wc: (
            [config["tagging"]["spot_checks"]] if Path(config["tagging"]["spot_checks"]).is_file() else []
        ),
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
