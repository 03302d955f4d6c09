"""rule ratings: Bradley–Terry/Elo with both intervals in every (axis, subset, source) scope."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import io, leaderboard  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    s = snakemake.params.stats
    judgments = io.read_table(snakemake.input.judgments)
    ratings, separability = leaderboard.leaderboard(judgments, n_boot=s["n_boot"], seed=s["seed"],
                                                    alpha=s["bt_alpha"], ci=s["ci"])
    io.write_tables([(ratings, snakemake.output.ratings, "ratings"),
                     (separability, snakemake.output.separability, "separability"),
                     (leaderboard.headline(ratings), snakemake.output.leaderboard, "leaderboard")])
    for row in separability[separability["subset"].eq("all") & separability["axis"].eq("overall")].itertuples():
        log.info("%-22s %-13s %d systems, %d comparisons, separability asym %.2f boot %.2f", row.source,
                 row.status, row.n_systems, row.n_comparisons, row.separability_asym, row.separability_boot)
