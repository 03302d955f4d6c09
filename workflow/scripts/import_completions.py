"""rule import_completions: an imported system's completions (made elsewhere) and the rows left out."""
from heart.completions import imported
from heart.common import provenance, records, tableio
from heart.common.atomic import sha256_file
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    system, path = snakemake.wildcards.system, snakemake.input.completions
    items = tableio.read_table(snakemake.input.item_table)
    table, violations = imported.import_system(path, items, system)
    for v in violations.itertuples():
        log.warning("%s %s: %s (item %s) - left out", v.file, records.record_label(v.file, v.line), v.problem,
                    v.item_id)
    tableio.write_tables([(table, snakemake.output.completions, "completions"),
                          (violations, snakemake.output.violations, "imported_violations")],
                         {**job, "imported_path": path, "imported_sha256": sha256_file(path)})
    log.info("%s: %d completions of %d items imported from %s; %d rows left out", system, len(table),
             len(items), path, len(violations))
