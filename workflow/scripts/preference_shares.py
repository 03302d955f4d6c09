"""rule preference_shares: §4.5 shares of human-model comparisons won by the model, the human, or tied."""
from heart.stats import preferences
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    boot = snakemake.params.bootstrap  # n_boot, seed, ci
    judgments = tableio.read_table(snakemake.input.judgments)
    table = preferences.preference_shares(judgments, **boot)
    tableio.write_table(table, snakemake.output[0], "preference_shares", job)
    log.info("preference_shares: %d rows, status %s", len(table), dict(table["status"].value_counts()))
    for r in table[(table["reading"] == "literal") & (table["subset"] == "all")].itertuples():
        log.info("%s, %s, %s: %s of %s = %.3f", r.source, r.measure, r.outcome, r.count, r.n, r.share)
