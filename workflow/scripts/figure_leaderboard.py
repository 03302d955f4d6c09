"""rule figure_leaderboard: Figure 4, the HEART leaderboard heatmap."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import figures, io, render  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    board = io.read_table(snakemake.input.leaderboard)
    figures.save(figures.leaderboard_heatmap(board), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 4: %d systems (%d rated)", len(board), int((board["status"] == "ok").sum()))
