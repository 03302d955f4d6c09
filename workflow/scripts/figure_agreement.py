"""rule figure_agreement: human-LLM agreement per judge, cross-judge agreement, trivial judges and the ceiling."""
from heart import figures, render, tableio
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    tables = {k: tableio.read_table(getattr(snakemake.input, k)) for k in ("human_llm", "cross_judge", "trivial")}
    figures.save(figures.agreement_panel(**tables), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("agreement: human-LLM rows %s", dict(tables["human_llm"]["status"].value_counts()))
