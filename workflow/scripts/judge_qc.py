"""rule judge_qc: one LLM judge's verdicts on the known-answer quality-check pairs (heart/judging/judge_qc.py),
both orders; a letter judge is asked the overall question only (Judge.for_quality_checks)."""
from heart.common import tableio
from heart.common.runtime import logged
from heart.judging import judge_qc, material, verdicts
from heart.judging.judge import Judge
from heart.llm.stage import Stage

with logged(snakemake.log[0], snakemake) as log:
    stage = Stage.of(snakemake, resource="rubric")
    judge = Judge.from_params(snakemake.params.judge)
    rubric = material.load_rubric(snakemake.input.rubric)
    items = tableio.read_table(snakemake.input.item_table)
    design, texts = judge_qc.design(items, judge_qc.load_replies(snakemake.input.replies), snakemake.params.seed,
                                    snakemake.params.kinds)
    requests = judge.requests(design, items, texts, stage.template, rubric, stage.version, both_orders=True)
    results = judge.answers(design, judge.run(stage.engine, requests, desc=f"quality checks {judge.name}"),
                           both_orders=True)
    table = verdicts.verdict_table(design, judge.name, results, material.axis_keys(rubric), True)
    tableio.write_table(table, snakemake.output[0], "judge_verdicts", stage.provenance)
    log.info("%s: %d quality-check pairs (%s), %d verdicts, %d did not parse", judge.name, len(design),
             design["kind"].value_counts().to_dict(), len(table), int((~table["parse_ok"]).sum()) if len(table) else 0)
