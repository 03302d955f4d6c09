"""rule figure_elo_ttft: Figure 5, Elo against median time-to-first-token (measured here, else external)."""
import pandas as pd

from heart import external, tableio
from heart.figures import elo_ttft, style
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style) as dpi:
    board = tableio.read_table(snakemake.input.leaderboard)
    completions = pd.concat([tableio.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    points = elo_ttft.ttft_points(board, external.load_models(snakemake.input.models), completions)
    style.save(elo_ttft.elo_vs_ttft(points), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 5: %s", dict(points["ttft_source"].value_counts()))
