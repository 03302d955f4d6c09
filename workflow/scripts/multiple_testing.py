"""rule multiple_testing: every test of the statistics in one table, BH-adjusted within its family (§9.12)."""
from heart.stats import multiple_testing
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    tables = {name: tableio.read_table(path) for name, path in snakemake.input.items()}
    alpha = snakemake.params.fdr_alpha
    table = multiple_testing.collect(tables, alpha=alpha)
    tableio.write_table(table, snakemake.output[0], "tests", job)
    log.info("%d tests in %d families, %d rejected at FDR %.2f", len(table), table["family"].nunique(),
             int(table["reject"].fillna(False).sum()), alpha)
