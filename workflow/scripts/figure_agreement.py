"""rule figure_agreement: human-LLM agreement per judge, cross-judge agreement, trivial judges, ceiling."""
from heart.common import tableio
from heart.figures import agreement, style
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    tables = {k: tableio.read_table(snakemake.input[k]) for k in ("human_llm", "cross_judge", "trivial")}
    style.save(agreement.agreement_panel(**tables, ci=snakemake.params.ci), snakemake.output.png,
               snakemake.output.pdf, dpi=dpi)
    log.info("agreement: human-LLM rows %s", dict(tables["human_llm"]["status"].value_counts()))
