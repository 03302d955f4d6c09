"""rule ratings: Bradley–Terry/Elo with both intervals in every (axis, subset, source) scope, Best Human the
configured way (stats.best_human); the other way is rule ratings_alternative's."""
from heart.stats import figure4, leaderboard
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job, p = provenance.collect(snakemake), snakemake.params
    judgments = tableio.read_table(snakemake.input.judgments)
    ratings, separability = leaderboard.leaderboard(judgments, alpha=p.bt_alpha, best_human=p.best_human,
                                                    **p.bootstrap)
    tableio.write_tables([(ratings, snakemake.output.ratings, "ratings"),
                          (separability, snakemake.output.separability, "separability"),
                          (figure4.headline(ratings), snakemake.output.leaderboard, "leaderboard")], job)
    for row in separability[separability["subset"].eq("all") & separability["axis"].eq("overall")].itertuples():
        log.info("%-22s %-13s %d systems, %d comparisons, separability asym %.2f boot %.2f", row.source,
                 row.status, row.n_systems, row.n_comparisons, row.separability_asym, row.separability_boot)
    log.info("Best Human %s (stats.best_human); rule ratings_alternative rates it the other way", p.best_human)
