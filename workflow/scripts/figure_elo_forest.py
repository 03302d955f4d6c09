"""rule figure_elo_forest: Elo with the asymptotic and the bootstrap interval, all / regular / adversarial items."""
from heart import figures, render, tableio
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    ratings = tableio.read_table(snakemake.input.ratings)
    figures.save(figures.elo_forest(ratings), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Elo forest: %d rating rows", len(ratings))
