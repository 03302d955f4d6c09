"""rule figure_leaderboard: Figure 4, the HEART leaderboard heatmap."""
from heart import tableio
from heart.figures import leaderboard, style
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style) as dpi:
    board = tableio.read_table(snakemake.input.leaderboard)
    style.save(leaderboard.leaderboard_heatmap(board), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 4: %d systems (%d rated)", len(board), int((board["status"] == "ok").sum()))
