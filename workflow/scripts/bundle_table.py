"""rules bundle_items, bundle_pairs, bundle_verdicts, bundle_checks, bundle_tags: one of the workflow's tables
from a bundle (heart/bundle/load.py), checked against its schema and against the tables it refers to."""
from functools import partial

from heart.bundle import load
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    i, p = snakemake.input, snakemake.params
    known = {}
    if i.get("item_table"):
        known["item_id"] = tableio.read_table(i.item_table)["item_id"]
    pair_table = tableio.read_table(i.pair_table) if i.get("pair_table") else None
    if pair_table is not None:
        known["pair_id"] = pair_table["pair_id"]
    if not i.get("table"):  # judge_checks.parquet of a study that ran no quality checks (judging.qc.kinds: [])
        table = tableio.empty_like(p.table)
        log.info("%s: no rows: the bundle holds no %s table (its study ran none)", snakemake.output[0], p.table)
    else:
        # the cross-references a schema cannot hold: pairs -> completions, verdicts -> pairs, one row per order
        check = None
        if p.table == "pairs":
            check = partial(load.check_pairs, i.table, completions=tableio.read_tables(i.completions, "completions"))
        elif p.table == "judge_verdicts":
            check = partial(load.check_verdicts, i.table, pairs=pair_table)
        table = load.table(i.table, p.table, where=p.get("where"), known=known, check=check)
        log.info("%s: %d rows of %s from the bundle%s", snakemake.output[0], len(table), i.table,
                 f" ({p.where})" if p.get("where") else "")
    tableio.write_table(table, snakemake.output[0], p.table, provenance.collect(snakemake))
