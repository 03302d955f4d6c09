"""rule figure_bias: position, length and self-preference audits, order flips and factor loadings."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import figures, io, render  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    i = snakemake.input
    fig = figures.bias_panel(io.read_table(i.position), io.read_table(i.length), io.read_table(i.self_preference),
                             io.read_table(i.flips), io.read_table(i.loadings))
    figures.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("bias and factor panel written")
