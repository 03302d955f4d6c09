"""rule judge_quality: each LLM judge's QC accuracy and flip rates (heart/judging/judge_qc.py)."""
from heart.judging import combine, judge_qc, material
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    items = tableio.read_table(snakemake.input.item_table)
    design, _ = judge_qc.design(items, judge_qc.load_replies(snakemake.input.replies), snakemake.params.seed,
                                snakemake.params.kinds)
    axes = material.axis_keys(material.load_rubric(snakemake.input.rubric))
    verdicts = tableio.read_tables(snakemake.input.qc, "judge_verdicts")
    combined = combine.combine(verdicts, design, axes) if len(verdicts) else design.iloc[:0].assign(judge=None)
    table = judge_qc.summary(combined, verdicts, tableio.read_table(snakemake.input.flips))
    tableio.write_table(table, snakemake.output[0], "judge_quality", provenance.collect(snakemake))
    for r in table[table["kind"] == "all"].itertuples():
        log.info("%s: %s", r.judge, r.note)
