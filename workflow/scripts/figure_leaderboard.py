"""rule figure_leaderboard: Figure 4, the HEART leaderboard heatmap."""
from heart import figures, render, tableio
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    board = tableio.read_table(snakemake.input.leaderboard)
    figures.save(figures.leaderboard_heatmap(board), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 4: %d systems (%d rated)", len(board), int((board["status"] == "ok").sum()))
