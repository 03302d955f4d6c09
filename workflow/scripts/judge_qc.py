"""rule judge_qc: one LLM judge's verdicts on the known-answer quality-check pairs (heart/judging/judge_qc.py), both orders."""
from heart.judging import judge_qc
from heart import judging
from heart.llm.stage import Stage
from heart.common import tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    stage = Stage.of(snakemake, resource="rubric")
    judge, answer = snakemake.params.judge, snakemake.params.answer
    rubric = judging.load_rubric(snakemake.input.rubric)
    items = tableio.read_table(snakemake.input.item_table)
    design, texts = judge_qc.design(items, judge_qc.load_replies(snakemake.input.replies), snakemake.params.seed,
                                    snakemake.params.kinds)
    requests = judging.judge_requests(answer, design, items, texts, stage.spec.name, stage.template, rubric,
                                      stage.version, True, snakemake.params.call_params,
                                      snakemake.params.rationale_max_chars, axes=False,
                                      context_turns=snakemake.params.context_turns)
    # a letter judge is asked the overall question only: the checks test its overall verdict
    results = judging.judge_answers(answer, design, stage.engine.run(requests, desc=f"quality checks {judge}"), True,
                                    axes=False)
    table = judging.verdict_table(design, judge, results, judging.axis_keys(rubric), True)
    tableio.write_table(table, snakemake.output[0], "judge_verdicts", stage.provenance)
    log.info("%s: %d quality-check pairs (%s), %d verdicts, %d did not parse", judge, len(design),
             design["kind"].value_counts().to_dict(), len(table), int((~table["parse_ok"]).sum()) if len(table) else 0)
