# Human data collection (docs/human-data.md) -> results/annotation/, resources/human/
#
# annotation_tasks writes the people's tasks; `python -m heart.annotation serve` (make annotate) serves
# them and keeps every answer in the store (config annotation.db); export_annotations turns the store
# into the import files that human_completions, human_judgments, strategy_f1 and screen_completions read. The export rule
# exists only once a store does, so a study without one reads hand-made files (or none) as before.


rule annotation_tasks:
    input:
        item_table="results/items/items.parquet",
        pair_table="results/judging/pairs.parquet",
        completions=COMPLETIONS,
        qc_replies=workflow.source_path("../resources/annotation/qc_replies.yaml"),
        # the consent and practice items people recruited on a platform see (annotation.crowd)
        study_texts=workflow.source_path("../resources/annotation/study.yaml"),
        # the axes raters mark when annotation.rating.axes asks for them
        rubric=rubric_file(),
        # the flagged completions people review (safety_review), and those a confirmed flag keeps off rating pages
        safety_flags="results/completions/safety_flags.parquet",
    output:
        tasks="results/annotation/tasks.parquet",
        summary="results/annotation/summary.parquet",
        # where `python -m heart.annotation serve --tasks ...` finds this config's store and taxonomy
        serve="results/annotation/serve.json",
    log:
        "logs/annotation/tasks.log",
    conda:
        "../../envs/data.yaml"
    params:
        settings=config["annotation"],  # every key: db, seed and the writing, rating and spot-check designs
        taxonomy=config["tagging"]["taxonomy"],
    script:
        "../scripts/annotation_tasks.py"


if ANNOTATION_STORE:

    rule export_annotations:
        input:
            # a page view writes to the store too: the export follows its answers (params), not its mtime
            store=ancient(config["annotation"]["db"]),
            taxonomy=taxonomy_file(),
        output:
            completions=config["human_completions"]["path"],
            judgments=config["human_judgments"]["path"],
            labels=config["tagging"]["spot_checks"],
            reviews=config["completions"]["safety_reviews"],
            # every answer, void, revocation, consent and stop, for the data release's record
            audit="results/annotation/audit.parquet",
        log:
            "logs/annotation/export.log",
        conda:
            "../../envs/data.yaml"
        params:
            answers=annotation_fingerprint(),
        script:
            "../scripts/export_annotations.py"

    localrules:
        export_annotations,
