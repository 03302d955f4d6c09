"""rule multiple_testing: every test of the statistics in one table, BH-adjusted within its family (§9.12)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import io, multiple_testing  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    tables = {name: io.read_table(path) for name, path in snakemake.input.items()}
    table = multiple_testing.collect(tables, alpha=snakemake.params.stats["fdr_alpha"])
    io.write_table(table, snakemake.output[0], "tests")
    log.info("%d tests in %d families, %d rejected at FDR %.2f", len(table), table["family"].nunique(),
             int(table["reject"].fillna(False).sum()), snakemake.params.stats["fdr_alpha"])
