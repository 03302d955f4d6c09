"""rule summarize_systems: which systems have completions, and which are absent (and why)."""
from heart.completions import summary
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    tables = {s: tableio.read_table(p) for s, p in zip(snakemake.params.systems, snakemake.input)}
    summary = summary.summarize(tables, human_path=snakemake.params.human_path,
                                    human_file=snakemake.params.human_file, imported=snakemake.params.imported)
    tableio.write_table(summary, snakemake.output[0], "systems", job)
    for row in summary.itertuples():
        log.info("%-24s %-8s %4d completions  %s", row.system, row.status, row.n_completions, row.note)
