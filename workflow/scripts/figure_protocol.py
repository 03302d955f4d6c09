"""rule figure_protocol: Figure 7, the evaluation protocol, from the rule graph and this run's counts."""
from heart.common import tableio
from heart.common.runtime import logged
from heart.figures import protocol, style

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    i = snakemake.input
    tags = tableio.read_tables(i.tags, "strategy_tags")
    lines = protocol.counts(tableio.read_table(i.item_table), tableio.read_table(i.systems),
                            tableio.read_table(i.pair_table), tableio.read_table(i.judgments), tags,
                            snakemake.params.n_boot)
    ran = protocol.rules_that_ran(snakemake.params.rules)
    fig = protocol.protocol_figure(lines, ran)
    style.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    for step, line in lines.items():
        log.info("%s: %s", step, line)
    log.info("rules that ran (a log file): %s", "; ".join(f"{stem}: {', '.join(names)}" for stem, names in ran.items()
                                                       if names))
