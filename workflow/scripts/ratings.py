"""rule ratings: Bradley–Terry/Elo with both intervals in every (axis, subset, source) scope."""
from heart.stats import leaderboard
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    judgments = tableio.read_table(snakemake.input.judgments)
    ratings, separability = leaderboard.leaderboard(judgments, alpha=snakemake.params.bt_alpha,
                                                    **snakemake.params.bootstrap)
    tableio.write_tables([(ratings, snakemake.output.ratings, "ratings"),
                          (separability, snakemake.output.separability, "separability"),
                          (leaderboard.headline(ratings), snakemake.output.leaderboard, "leaderboard")], job)
    for row in separability[separability["subset"].eq("all") & separability["axis"].eq("overall")].itertuples():
        log.info("%-22s %-13s %d systems, %d comparisons, separability asym %.2f boot %.2f", row.source,
                 row.status, row.n_systems, row.n_comparisons, row.separability_asym, row.separability_boot)
