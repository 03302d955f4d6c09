"""rule screening_calibration: the screen's recall on the paper's released couplets, its selectivity, and
the context lengths of the release, the eligible couplets and the sample."""
from heart.common import provenance, tableio
from heart.items import screening
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    mapping = tableio.read_table(snakemake.input.mapping)
    table = screening.calibration(tableio.read_table(snakemake.input.audit), mapping)
    tableio.write_table(table, snakemake.output[0], "screening_calibration", job)
    for row in table[table["section"].isin(["recall", "selectivity"])].itertuples():
        log.info("%-12s %-22s %s", row.section, row.measure, row.value)
