"""rules bundle_items, bundle_pairs, bundle_verdicts, bundle_checks, bundle_tags: one of the workflow's tables
from a bundle (heart/bundle/load.py: the workflow's own table, or the public format; pairs derived from what was
judged where the bundle has none), checked against its schema and against the tables it refers to."""
from heart.bundle import load
from heart.common import provenance, tableio
from heart.common.runtime import logged
from heart.judging import material


def one(name):
    """Input ``name``: its path, or None where the rule has none (a bundle part given as [] or [path])."""
    value = snakemake.input.get(name)
    return (value if isinstance(value, str) else value[0]) if value else None


with logged(snakemake.log[0], snakemake) as log:
    i, p = snakemake.input, snakemake.params
    extra = {}  # provenance beyond the rule's: what the design left out
    items = tableio.read_table(i.item_table) if i.get("item_table") else None
    completions = tableio.read_tables(i.completions, "completions") if i.get("completions") else None
    if completions is not None:  # the pairs, verdicts and tags may name a completion whose text was withheld
        completions = load.with_withheld(completions, one("withheld"))
    if p.table == "pairs":
        # pairs.parquet checked against the completions, or derived from the verdicts and ratings
        table = load.read_pairs(items, completions, pairs_path=one("table"), verdicts_path=one("verdicts"),
                                ratings_path=one("ratings"))
        source = one("table") or "what was judged: " + " and ".join(f for f in (one("verdicts"), one("ratings")) if f)
    elif not one("table"):  # judge_checks.parquet of a study that ran no quality checks (judging.qc.kinds: [])
        table, source = tableio.empty_like(p.table), None
        log.info("%s: no rows: the bundle holds no %s table (its study ran none)", snakemake.output[0], p.table)
    else:
        source = one("table")
        if p.table == "items":
            table = load.read_items(source)
        elif p.table == "strategy_tags":
            table = load.read_tags(source, items, completions)
        elif i.get("pair_table"):  # the LLM verdicts: each on a pair of the run, once per shown order
            pair_table = tableio.read_table(i.pair_table)
            table = load.read_verdicts(source, items, pair_table)
            keep = material.eligible(pair_table, p.family, p.families, p.exclude_own_family)
            extra = {"n_excluded_family": int((~keep).sum())}
        else:  # the quality checks' verdicts: pairs of their own (known-answer checks), once per shown order
            table = load.table(source, p.table, check=lambda v: load.check_verdicts(source, v))
    for column, value in (p.get("where") or {}).items():
        table = table[table[column] == value].reset_index(drop=True)
    if source:
        log.info("%s: %d rows from %s%s", snakemake.output[0], len(table), source,
                 f" ({p.where})" if p.get("where") else "")
    tableio.write_table(table, snakemake.output[0], p.table, {**provenance.collect(snakemake), **extra})
