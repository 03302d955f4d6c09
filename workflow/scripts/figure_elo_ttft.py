"""rule figure_elo_ttft: Figure 5, Elo against median time-to-first-token (measured here, else external)."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import external, figures, io, render  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log, render.style(snakemake.input.style) as dpi:
    board = io.read_table(snakemake.input.leaderboard)
    completions = pd.concat([io.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    points = figures.ttft_points(board, external.load_models(snakemake.input.models), completions)
    figures.save(figures.elo_vs_ttft(points), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 5: %s", dict(points["ttft_source"].value_counts()))
