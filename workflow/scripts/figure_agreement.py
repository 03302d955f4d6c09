"""rule figure_agreement: human-LLM agreement per judge, cross-judge agreement, trivial judges and the ceiling."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import figures, io, render  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    tables = {k: io.read_table(getattr(snakemake.input, k)) for k in ("human_llm", "cross_judge", "trivial")}
    figures.save(figures.agreement_panel(**tables), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("agreement: human-LLM rows %s", dict(tables["human_llm"]["status"].value_counts()))
