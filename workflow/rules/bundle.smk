# Stage 9 — a study's artifacts as one folder, both ways (heart/bundle/): rule export_bundle writes any run's
# data release (make bundle -> results/bundle/); in a run from a bundle (make paper ARTIFACTS=<folder>,
# config/artifacts.yaml) the rules below take the tables a model would have made from the bundle instead,
# and everything after them runs as in the study. Those rules write the stage tables they stand in for.


if ARTIFACTS:

    # a table from the bundle wins over the rule that would make it from model calls (the rules that call a
    # provider are not even defined here: completions.smk, judging.smk, tagging.smk)
    ruleorder: bundle_pairs > design_pairs
    ruleorder: bundle_verdicts > merge_judgments
    ruleorder: bundle_tags > merge_tags

    rule bundle_items:
        input:
            # items.parquet, or items.jsonl in the public format (docs/bundle-format.md)
            table=BUNDLE["items"],
        output:
            "results/items/items.parquet",
        log:
            "logs/items/bundle_items.log",
        conda:
            "../../envs/data.yaml"
        params:
            table="items",
        script:
            "../scripts/bundle_table.py"

    rule bundle_pairs:
        input:
            # pairs.parquet where the bundle has it; else the pairs are derived from the public verdicts and the
            # human ratings (what was judged)
            table=BUNDLE["pairs"],
            verdicts=[] if BUNDLE["pairs"] else [p for p in BUNDLE["llm_verdicts"] if p.endswith(".jsonl")],
            ratings=[] if BUNDLE["pairs"] else BUNDLE["human_judgments"],
            item_table="results/items/items.parquet",
            completions=COMPLETIONS,
            # completions whose text the study withheld (a confirmed safety flag): their pairs and tags stay
            withheld=BUNDLE["withheld"],
        output:
            "results/judging/pairs.parquet",
        log:
            "logs/judging/bundle_pairs.log",
        conda:
            "../../envs/data.yaml"
        params:
            table="pairs",
        script:
            "../scripts/bundle_table.py"

    rule bundle_verdicts:
        input:
            # llm_verdicts.parquet (exact: the answers as received), or llm_verdicts.jsonl (the public format)
            table=BUNDLE["llm_verdicts"],
            item_table="results/items/items.parquet",
            pair_table="results/judging/pairs.parquet",
        output:
            "results/judging/llm/{judge}.parquet",
        log:
            "logs/judging/bundle_verdicts_{judge}.log",
        conda:
            "../../envs/data.yaml"
        params:
            table="judge_verdicts",
            where=lambda wc: {"judge": wc.judge},
            # the pairs the design left out for the judge's own family (sources.parquet's n_excluded_family)
            family=lambda wc: judge_families()[wc.judge],
            families=system_families(),
            exclude_own_family=config["judging"]["exclude_own_family"],
        script:
            "../scripts/bundle_table.py"

    rule bundle_checks:
        # absent only where the study ran none (judging.qc.kinds: []; else the start-up check names the file)
        input:
            table=optional_file(f"{ARTIFACTS}/judge_checks.parquet"),
        output:
            "results/judging/qc/{judge}.parquet",
        log:
            "logs/judging/qc/bundle_checks_{judge}.log",
        conda:
            "../../envs/data.yaml"
        params:
            table="judge_verdicts",
            where=lambda wc: {"judge": wc.judge},
        script:
            "../scripts/bundle_table.py"

    rule bundle_tags:
        input:
            # strategy_tags.parquet, or strategy_tags.jsonl (the public format)
            table=BUNDLE["strategy_tags"],
            item_table="results/items/items.parquet",
            completions=COMPLETIONS,
            # completions whose text the study withheld (a confirmed safety flag): their pairs and tags stay
            withheld=BUNDLE["withheld"],
        output:
            "results/tagging/{tagger}.parquet",
        log:
            "logs/tagging/bundle_tags_{tagger}.log",
        conda:
            "../../envs/data.yaml"
        params:
            table="strategy_tags",
            where=lambda wc: {"tagger": wc.tagger},
        script:
            "../scripts/bundle_table.py"

else:
    from heart.bundle.study import study_settings

    # the run's human files and imported judgments by name ([] where it has none: then the bundle has none)
    BUNDLE_INPUTS = {
        "human_completions": human_file(config["human_completions"]["path"]),
        "human_judgments": human_file(config["human_judgments"]["path"]),
        "strategy_labels": human_file(config["tagging"]["spot_checks"]),
        "imported_judgments": optional_file(config["imported_judgments"]["path"]),
    }

    rule export_bundle:
        # on demand (make bundle): the data release of this run, in the formats the importers read
        input:
            item_table="results/items/items.parquet",
            completions=COMPLETIONS,
            pair_table="results/judging/pairs.parquet",
            verdicts=expand("results/judging/llm/{judge}.parquet", judge=JUDGES),
            checks=expand("results/judging/qc/{judge}.parquet", judge=JUDGES),
            tags=expand("results/tagging/{tagger}.parquet", tagger=TAGGERS),
            models=MODELS_CSV,
            human=[path for paths in BUNDLE_INPUTS.values() for path in paths],
            # the completions a confirmed safety flag keeps out of the bundle (completions.confirmed_flags: bundle)
            safety_flags="results/completions/safety_flags.parquet",
        output:
            directory("results/bundle"),
        log:
            "logs/bundle/export_bundle.log",
        conda:
            "../../envs/data.yaml"
        params:
            # which human file is which (None: the run has none, and the bundle says so)
            files={name: (paths or [None])[0] for name, paths in BUNDLE_INPUTS.items()},
            # the study's settings, without key names, servers or local paths (heart.bundle.study)
            study=study_settings(config),
        script:
            "../scripts/export_bundle.py"
