"""rule original_completions: the dataset's real next supporter turn as a system."""
from heart.completions import generate
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    table = generate.original_table(tableio.read_table(snakemake.input.item_table))
    tableio.write_table(table, snakemake.output[0], "completions", job)
    log.info("original: %d completions", len(table))
