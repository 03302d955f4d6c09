"""rule ratings_alternative: the ratings on all items with Best Human entered the other way than
stats.best_human says (heart.stats.best_human.other_mode), written beside rule ratings' as a labelled
alternative."""
from heart.stats import best_human, leaderboard
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job, p = provenance.collect(snakemake), snakemake.params
    judgments = tableio.read_table(snakemake.input.judgments)
    other = best_human.other_mode(p.best_human)
    alternative, _ = leaderboard.leaderboard(judgments, alpha=p.bt_alpha, best_human=other, subsets=("all",),
                                             **p.bootstrap)
    tableio.write_tables([(alternative, snakemake.output.alternative, "ratings")], job)
    log.info("Best Human %s (the alternative to stats.best_human %s): %d rows", other, p.best_human,
             len(alternative))
