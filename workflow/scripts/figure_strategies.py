"""rule figure_strategies: Figure 6, strategy usage by model family and humans."""
from heart.common import tableio
from heart.figures import strategies, style
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    usage = tableio.read_table(snakemake.input.usage)
    style.save(strategies.strategy_heatmap(usage), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 6: %d usage rows", len(usage))
