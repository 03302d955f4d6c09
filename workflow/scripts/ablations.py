"""rule ablations: the exploratory ablations of HEART §9.12 (rankers beside the main ranking, Kendall's tau)."""
from heart.common import provenance, tableio
from heart.common.runtime import logged
from heart.stats import ablations, external
from heart.tables import paper_tables

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    settings, boot = snakemake.params.ablations, snakemake.params.bootstrap
    judgments = tableio.read_table(snakemake.input.judgments)
    table = ablations.ablations(judgments, snakemake.params.source, alpha=snakemake.params.bt_alpha,
                                elo_k=settings["elo_k"], soft=settings["release_soft_scores"], **boot)
    tableio.write_table(table, snakemake.output.table, "ablations", job)
    names = external.display_names(external.load_models(snakemake.input.models),
                                   snakemake.params.display_names)
    paper_tables.write(ablations.wide(table, names), snakemake.output.csv, snakemake.output.tex,
                       caption="Exploratory ablations (HEART §9.12): each system's rank under other rankers beside "
                               "the main Bradley–Terry ranking, and Kendall's tau-b with it "
                               f"[{100 * boot['ci']:g} % conversation-bootstrap interval]. Not the headline "
                               "ranking.", label=snakemake.params.label)
    for row in table.drop_duplicates("ranker").itertuples():
        log.info("%-14s %s tau %.3f [%.3f, %.3f]; moved: %s", row.ranker, row.status, row.tau, row.tau_lo,
                 row.tau_hi, row.moved)
