"""rules bundle_items, bundle_pairs, bundle_verdicts, bundle_checks, bundle_tags: one of the workflow's tables
from a bundle (heart/bundle/load.py), checked against its schema and against the tables it refers to."""
from heart.bundle import load
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    i, p = snakemake.input, snakemake.params
    known = {}
    if i.get("item_table"):
        known["item_id"] = tableio.read_table(i.item_table)["item_id"]
    if i.get("pair_table"):
        known["pair_id"] = tableio.read_table(i.pair_table)["pair_id"]
    table = load.table(i.table, p.table, where=p.get("where"), known=known)
    tableio.write_table(table, snakemake.output[0], p.table, provenance.collect(snakemake))
    log.info("%s: %d rows of %s from the bundle%s", snakemake.output[0], len(table), i.table,
             f" ({p.where})" if p.get("where") else "")
