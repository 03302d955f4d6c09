"""rule figure_strategies: Figure 6, strategy usage by model family and humans."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import figures, io, render  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    usage = io.read_table(snakemake.input.usage)
    figures.save(figures.strategy_heatmap(usage), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 6: %d usage rows", len(usage))
