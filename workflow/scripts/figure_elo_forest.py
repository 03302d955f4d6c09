"""rule figure_elo_forest: Elo with the asymptotic and the bootstrap interval, all / regular / adversarial items."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import figures, io, render  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    ratings = io.read_table(snakemake.input.ratings)
    figures.save(figures.elo_forest(ratings), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Elo forest: %d rating rows", len(ratings))
