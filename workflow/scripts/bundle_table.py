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
    if not i.get("table"):  # judge_checks.parquet of a study that ran no quality checks (judging.qc.kinds: [])
        table = tableio.empty_like(p.table)
        log.info("%s: no rows: the bundle holds no %s table (its study ran none)", snakemake.output[0], p.table)
    else:
        # the whole file checked (a problem is named by its row in the file), then this rule's rows taken
        table = load.table(i.table, p.table, known=known)
        # the cross-references a schema cannot hold: pairs -> completions, verdicts -> pairs, one row per order
        if p.table == "pairs":
            load.check_pairs(i.table, table, tableio.read_tables(i.completions, "completions"))
        elif p.table == "judge_verdicts":
            load.check_verdicts(i.table, table, tableio.read_table(i.pair_table) if i.get("pair_table") else None)
        for column, value in (p.get("where") or {}).items():
            table = table[table[column] == value]
        table = table.reset_index(drop=True)
        log.info("%s: %d rows of %s from the bundle%s", snakemake.output[0], len(table), i.table,
                 f" ({p.where})" if p.get("where") else "")
    tableio.write_table(table, snakemake.output[0], p.table, provenance.collect(snakemake))
