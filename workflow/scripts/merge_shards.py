"""rules merge_completions, merge_judgments, merge_tags: the shards of an LLM stage as one table."""
from pathlib import Path

from heart.common import provenance, tableio
from heart.llm import shards
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    name = snakemake.params.table
    paths = list(snakemake.input.shards)
    order = shards.order_of(
        name,
        items=tableio.read_table(snakemake.input.item_table) if "item_table" in snakemake.input.keys() else None,
        pairs=tableio.read_table(snakemake.input.pair_table) if "pair_table" in snakemake.input.keys() else None,
        systems=snakemake.params.get("systems"),
    )
    frames = [tableio.read_table(p) for p in paths]
    table = shards.merge(frames, order)
    merged = shards.merge_provenance([tableio.provenance_of(p) for p in paths], paths)
    tableio.write_table(table, snakemake.output[0], name, {**provenance.collect(snakemake), **merged})
    log.info("%s: %d rows from %d shards (%s)", snakemake.output[0], len(table), len(paths),
             ", ".join(f"{Path(p).stem}: {len(f)}" for p, f in zip(paths, frames)))
