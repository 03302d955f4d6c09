"""rule human_completions: import human completions, or record that there are none."""
from heart.completions import imported
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    items = tableio.read_table(snakemake.input.item_table)
    if snakemake.input.humans:
        table, violations = imported.import_humans(snakemake.input.humans[0], items)
        for v in violations.itertuples():
            log.warning("%s line %d: %s (item %s, contributor %s) - left out",
                        v.file, v.line, v.problem, v.item_id, v.contributor_id)
    else:
        log.warning("no human completions: %s does not exist; human systems are absent",
                    snakemake.params.path)
        table, violations = tableio.empty_like("completions"), tableio.empty_like("human_violations")
    protocol = imported.human_protocol(table, violations, items, snakemake.params.per_context,
                                          snakemake.params.pool_size)
    tableio.write_tables([(table, snakemake.output.completions, "completions"),
                          (violations, snakemake.output.violations, "human_violations"),
                          (protocol, snakemake.output.protocol, "human_protocol")], job)
    log.info("human: %d completions, %d violations", len(table), len(violations))
    for r in protocol[protocol["ok"].eq(False)].itertuples():
        log.warning("protocol: %s is %g, expected %g (%s)", r.measure, r.value, r.expected, r.note)
