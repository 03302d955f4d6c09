"""rule figure_elo_forest: Elo with asymptotic and bootstrap intervals, all / regular / adversarial items."""
from heart.judging import judge_qc
from heart.common import tableio
from heart.figures import elo_forest, style
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    ratings = tableio.read_table(snakemake.input.ratings)
    fig = elo_forest.elo_forest(ratings)
    style.warn(fig, judge_qc.quality_warning(snakemake.input))
    style.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Elo forest: %d rating rows", len(ratings))
