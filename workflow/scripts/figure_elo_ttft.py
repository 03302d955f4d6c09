"""rule figure_elo_ttft: Figure 5, Elo (Figure 4's) against median time-to-first-token from one source
(config figures.fig5.ttft_source: the paper's published medians or this run's measured ones)."""
from heart.stats import external
from heart.stats import figure4
from heart.judging import judge_qc
from heart.common import tableio
from heart.figures import elo_ttft, style
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    params = snakemake.params
    ratings = tableio.read_table(snakemake.input.ratings)
    board = figure4.headline(ratings, source=params.source)
    models = external.load_models(snakemake.input.models)
    completions = tableio.read_tables(snakemake.input.completions, "completions")  # none: analysis-only
    points = elo_ttft.ttft_points(board, models, completions, ttft_source=params.ttft_source,
                                  labels=external.display_names(models, params.display_names))
    # the correlation is external_correlations' for this run (one computation, its row flagged figure_5)
    correlations = tableio.read_table(snakemake.input.correlations)
    rho = correlations[correlations["data"] == "this run"]
    judges = figure4.column_sources(ratings, params.source)["elo"]
    fig = elo_ttft.elo_vs_ttft(points, elo_label=f"HEART Elo ({judges})",
                               rho=elo_ttft.rho_text(rho, params.ttft_source))
    style.warn(fig, judge_qc.quality_warning(snakemake.input))
    style.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 5 (TTFT: %s): %s; %s", params.ttft_source, dict(points["ttft_source"].value_counts()),
             elo_ttft.rho_text(rho, params.ttft_source))
