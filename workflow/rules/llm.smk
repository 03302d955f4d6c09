# The LLM calls as a whole -> results/llm/: the response cache as one file to publish for replay,
# and (on demand) a preview of every call a config would make, before any is paid for.


rule export_llm_cache:
    input:
        # re-export whenever a stage that calls models has run
        "results/completions/systems.parquet",
        "results/items/adversarial.parquet",
        expand("results/judging/llm/{judge}.parquet", judge=JUDGES),
        expand("results/judging/qc/{judge}.parquet", judge=JUDGES),
        expand("results/tagging/{tagger}.parquet", tagger=TAGGERS),
        # a replaying checkout re-publishes what it replayed (and whatever it called besides)
        replay=replay_input(),
    output:
        "results/llm/cache.parquet",
    log:
        "logs/llm/export_llm_cache.log",
    conda:
        "../../envs/llm.yaml"
    params:
        cache_dir=config["llm"]["cache_dir"],
        replay=config["llm"]["replay"],
    script:
        "../scripts/export_llm_cache.py"


rule llm_spend:
    # what the answers in the response cache cost, per model and mode (batch or synchronous), with the
    # prompt tokens the providers served from their prompt caches
    input:
        "results/llm/cache.parquet",
    output:
        table="results/llm/spend.parquet",
        csv=report(
            "results/tables/llm_spend.csv",
            caption="../report/table_llm_spend.rst",
            category="5. The run",
            labels={"table": "llm_spend", "format": "csv"},
        ),
    log:
        "logs/llm/llm_spend.log",
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/llm_spend.py"


rule preview_llm_calls:
    # on demand, before any paid call: snakemake results/llm/calls_preview.parquet
    input:
        conversations="results/data/conversations.parquet",
        turns="results/data/turns.parquet",
        # a new study's adversarial items exist only after rewriting; the release's exist already
        regular=("results/items/items.parquet" if RELEASED_ITEMS else "results/items/regular.parquet"),
        lexicon=workflow.source_path("../resources/screening/lexicon.yaml"),
        adversarial_prompt=workflow.source_path("../resources/prompts/adversarial/rewrite_seeker.md"),
        prompts=[
            workflow.source_path(f"../resources/prompts/completion/{s['prompt']}.md")
            for s in config["systems"].values()
        ],
        rubric=rubric_file(),
        judge_prompts=[judge_prompt(name) for name in JUDGES],
        qc_replies=workflow.source_path("../resources/annotation/qc_replies.yaml"),
        taxonomy=taxonomy_file(),
        tagging_prompts=[tagger_prompt(name) for name in TAGGERS],
        # the adaptive design's SIMULATED expected share (tests/benchmarks/bench_adaptive.py --write)
        adaptive_expected=workflow.source_path("../resources/adaptive/expected.yaml"),
    output:
        "results/llm/calls_preview.parquet",
    log:
        "logs/llm/preview_llm_calls.log",
    conda:
        "../../envs/llm.yaml"
    params:
        systems=config["systems"],
        imported=IMPORTED_SYSTEMS,
        judges=[judge_of(name).as_params() for name in JUDGES],
        taggers=[tagger_of(name).as_params() for name in TAGGERS],
        pair_design=dict(seed=config["judging"]["seed"], sample=config["judging"]["pair_sample"]),
        both_orders=config["judging"]["both_orders"],
        adaptive=config["judging"]["adaptive"],
        qc=dict(seed=config["judging"]["seed"], kinds=config["judging"]["qc"]["kinds"]),
        exclude_own_family=config["judging"]["exclude_own_family"],
        human_per_context=config["human_completions"]["per_context"],
        families=system_families(),
        models={name: model_params(name) for name in used_models()},
        adversarial={"n": 0} if RELEASED_ITEMS else config["adversarial_items"],
        llm=ENGINE,
    script:
        "../scripts/preview_llm_calls.py"
