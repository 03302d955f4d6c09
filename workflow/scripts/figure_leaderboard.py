"""rule figure_leaderboard: Figure 4, the HEART leaderboard heatmap (config figures.fig4: source, columns, names)."""
from heart.judging import judge_qc
from heart.stats import external, figure4
from heart.common import tableio
from heart.figures import leaderboard as figure
from heart.figures import style
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    fig4 = snakemake.params.fig4
    source, columns = fig4["source"], fig4["columns"]
    ratings = tableio.read_table(snakemake.input.ratings)
    board = figure4.headline(ratings, source=source, columns=columns)
    names = external.display_names(external.load_models(snakemake.input.models), fig4["display_names"])
    fig = figure.leaderboard_heatmap(board, labels=names, columns=columns,
                                     footnote=figure4.describe(ratings, source, columns))
    style.warn(fig, judge_qc.quality_warning(snakemake.input))
    style.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 4 (source %s, columns %s): %d systems (%d rated); %s", source, columns, len(board),
             int((board["status"] == "ok").sum()), figure4.column_sources(ratings, source))
