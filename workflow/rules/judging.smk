# Stage 4 — blinded pairwise judgments by the LLM-judge ensemble and by humans -> results/judging/;
# in an analysis-only run (config analysis_only), a table of pairwise judgments made elsewhere, imported
# into the same tables, from which the statistics and figures rules run as in a study.


if ANALYSIS_ONLY:

    rule import_judgments:
        input:
            config["analysis_only"]["judgments"],
        output:
            pairs="results/judging/pairs.parquet",
            judgments="results/judging/judgments.parquet",
            verdicts="results/judging/imported_verdicts.parquet",
            flips="results/judging/flip_rates.parquet",
            sources="results/judging/sources.parquet",
        log:
            "logs/judging/import_judgments.log",
        conda:
            "../../envs/data.yaml"
        params:
            strength_map=config["human_judgments"]["strength_map"],
        script:
            "../scripts/import_judgments.py"

else:

    rule design_pairs:
        input:
            item_table="results/items/items.parquet",
            completions=COMPLETIONS,
        output:
            "results/judging/pairs.parquet",
        log:
            "logs/judging/design_pairs.log",
        conda:
            "../../envs/data.yaml"
        params:
            seed=config["judging"]["seed"],
            sample=config["judging"]["pair_sample"],
        script:
            "../scripts/design_pairs.py"

    # the rules that call a provider are not defined in a run from a bundle (ARTIFACTS): such a run can never pay
    if not ARTIFACTS:

        rule judge_pairs:
            # one shard of the pairs, by their item (llm.shards), or one round of the adaptive design (shard
            # round<k>: one job, one batch, per judge and round); merge_judgments joins them
            input:
                pair_table=judge_pair_table,
                item_table="results/items/items.parquet",
                completions=COMPLETIONS,
                rubric=rubric_file(),
                prompt=lambda wc: judge_prompt(wc.judge),
                replay=replay_input(),
            output:
                "results/judging/shards/{judge}/{shard}.parquet",
            log:
                "logs/judging/{judge}/{shard}.log",
            benchmark:
                "benchmarks/judging/{judge}/{shard}.tsv"
            conda:
                "../../envs/llm.yaml"
            threads: lambda wc: model_threads(judge_of(wc.judge).model)
            resources:
                local_llm=lambda wc: uses_local_model(judge_of(wc.judge).model),
            params:
                judge=lambda wc: judge_of(wc.judge).as_params(),  # heart.judging.judge.Judge, as a plain dict
                model=lambda wc: model_params(judge_of(wc.judge).model),
                shard=lambda wc: "1of1" if wc.shard.startswith("round") else wc.shard,
                families=system_families(),
                exclude_own_family=config["judging"]["exclude_own_family"],
                both_orders=config["judging"]["both_orders"],
                llm=ENGINE,
            script:
                "../scripts/judge_pairs.py"

        rule judge_qc:
            # known-answer pairs (the real reply vs an unhelpful one, or vs another conversation's), both orders
            input:
                item_table="results/items/items.parquet",
                replies=workflow.source_path("../resources/annotation/qc_replies.yaml"),
                rubric=rubric_file(),
                prompt=lambda wc: judge_prompt(wc.judge),
                replay=replay_input(),
            output:
                "results/judging/qc/{judge}.parquet",
            log:
                "logs/judging/qc/{judge}.log",
            benchmark:
                "benchmarks/judging/qc/{judge}.tsv"
            conda:
                "../../envs/llm.yaml"
            threads: lambda wc: model_threads(judge_of(wc.judge).model)
            resources:
                local_llm=lambda wc: uses_local_model(judge_of(wc.judge).model),
            params:
                judge=lambda wc: judge_of(wc.judge).for_quality_checks().as_params(),
                model=lambda wc: model_params(judge_of(wc.judge).model),
                shard="1of1",
                seed=config["judging"]["seed"],
                kinds=config["judging"]["qc"]["kinds"],
                llm=ENGINE,
            script:
                "../scripts/judge_qc.py"

    rule judge_quality:
        input:
            item_table="results/items/items.parquet",
            replies=workflow.source_path("../resources/annotation/qc_replies.yaml"),
            rubric=rubric_file(),
            qc=expand("results/judging/qc/{judge}.parquet", judge=JUDGES),
            flips="results/judging/flip_rates.parquet",
        output:
            "results/judging/judge_quality.parquet",
        log:
            "logs/judging/judge_quality.log",
        conda:
            "../../envs/data.yaml"
        params:
            seed=config["judging"]["seed"],
            kinds=config["judging"]["qc"]["kinds"],
        script:
            "../scripts/judge_quality.py"

    if ADAPTIVE:

        checkpoint adaptive_round:
            # round k of the adaptive design, from the verdicts of rounds 0..k-1 (round 0: from none)
            input:
                pair_table="results/judging/pairs.parquet",
                earlier=lambda wc: expand("results/judging/adaptive/round{k}.parquet", k=range(int(wc.round))),
                verdicts=lambda wc: expand(
                    "results/judging/shards/{judge}/round{k}.parquet",
                    judge=JUDGES,
                    k=range(int(wc.round)),
                ),
            output:
                pairs="results/judging/adaptive/round{round}.parquet",
                status="results/judging/adaptive/round{round}_status.parquet",
            log:
                "logs/judging/adaptive/round{round}.log",
            wildcard_constraints:
                round=r"\d+",
            conda:
                "../../envs/stats.yaml"
            params:
                round=lambda wc: int(wc.round),
                settings=config["judging"]["adaptive"],
                seed=config["judging"]["seed"],
                families=system_families(),
                judge_families=judge_families(),
                exclude_own_family=config["judging"]["exclude_own_family"],
                both_orders=config["judging"]["both_orders"],
                bt_alpha=config["stats"]["bt_alpha"],
            script:
                "../scripts/adaptive_round.py"

        rule adaptive_design:
            # every round in one table, with what the judging cost beside the fixed design's estimate
            input:
                status=lambda wc: expand(
                    "results/judging/adaptive/round{k}_status.parquet",
                    k=range(adaptive_rounds() + 1),
                ),
                verdicts=expand("results/judging/llm/{judge}.parquet", judge=JUDGES),
            output:
                parquet="results/judging/adaptive.parquet",
                csv=report(
                    "results/tables/adaptive_design.csv",
                    caption="../report/table_adaptive_design.rst",
                    category="2. Judges",
                    labels={"table": "adaptive_design", "format": "csv"},
                ),
            log:
                "logs/judging/adaptive.log",
            conda:
                "../../envs/data.yaml"
            script:
                "../scripts/adaptive_design.py"

    rule merge_judgments:
        input:
            pair_table="results/judging/pairs.parquet",
            shards=lambda wc: judge_shards(wc.judge),
        output:
            "results/judging/llm/{judge}.parquet",
        log:
            "logs/judging/{judge}.log",
        conda:
            "../../envs/data.yaml"
        params:
            table="judge_verdicts",
        script:
            "../scripts/merge_shards.py"

    rule human_judgments:
        input:
            pair_table="results/judging/pairs.parquet",
            item_table="results/items/items.parquet",
            humans=human_file(config["human_judgments"]["path"]),
        output:
            judgments="results/judging/human.parquet",
            raters="results/judging/human_raters.parquet",
        log:
            "logs/judging/human.log",
        conda:
            "../../envs/data.yaml"
        params:
            settings=config["human_judgments"],
        script:
            "../scripts/human_judgments.py"

    rule combine_judgments:
        input:
            pair_table="results/judging/pairs.parquet",
            llm=expand("results/judging/llm/{judge}.parquet", judge=JUDGES),
            human="results/judging/human.parquet",
            raters="results/judging/human_raters.parquet",
            item_table="results/items/items.parquet",
            completions=COMPLETIONS,
            imported=optional_file(config["imported_judgments"]["path"]),
        output:
            judgments="results/judging/judgments.parquet",
            flips="results/judging/flip_rates.parquet",
            sources="results/judging/sources.parquet",
            imported_verdicts="results/judging/imported_verdicts.parquet",
        log:
            "logs/judging/combine_judgments.log",
        conda:
            "../../envs/data.yaml"
        params:
            strength_map=config["human_judgments"]["strength_map"],
            judges=JUDGES,
            families=system_families(),
            judge_families=judge_families(),
            exclude_own_family=config["judging"]["exclude_own_family"],
            human_path=config["human_judgments"]["path"],
            human_file=bool(human_file(config["human_judgments"]["path"])),
        script:
            "../scripts/combine_judgments.py"
