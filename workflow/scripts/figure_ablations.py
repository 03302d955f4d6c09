"""rule figure_ablations: the exploratory ablations' ranks and Kendall's tau (HEART §9.12)."""
from heart.common import tableio
from heart.common.runtime import logged
from heart.figures import ablations as figure
from heart.figures import style
from heart.stats import external

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    table = tableio.read_table(snakemake.input.table)
    names = external.display_names(external.load_models(snakemake.input.models), snakemake.params.display_names)
    fig = figure.ablations(table, labels=names)
    style.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("ablations figure: %d rankers, %d systems", table["ranker"].nunique(), table["system"].nunique())
