"""rule figure_bias_factors: position, length and self-preference audits, order flips and factor loadings."""
from heart.common import tableio
from heart.figures import bias_factors, style
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    i = snakemake.input
    fig = bias_factors.bias_panel(tableio.read_table(i.position), tableio.read_table(i.length),
                                  tableio.read_table(i.self_preference), tableio.read_table(i.flips),
                                  tableio.read_table(i.loadings))
    style.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("bias and factor panel written")
