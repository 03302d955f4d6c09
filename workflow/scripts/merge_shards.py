"""rules merge_completions, merge_judgments, merge_tags: the shards of an LLM stage as one table."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import io, shards  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    name = snakemake.params.table
    paths = list(snakemake.input.shards)
    order = shards.order_of(
        name,
        items=io.read_table(snakemake.input.item_table) if "item_table" in snakemake.input.keys() else None,
        pairs=io.read_table(snakemake.input.pair_table) if "pair_table" in snakemake.input.keys() else None,
        systems=snakemake.params.get("systems"),
    )
    frames = [io.read_table(p) for p in paths]
    table = shards.merge(frames, order)
    provenance = shards.merge_provenance([io.provenance_of(p) for p in paths], paths)
    io.write_table(table, snakemake.output[0], name, provenance)
    log.info("%s: %d rows from %d shards (%s)", snakemake.output[0], len(table), len(paths),
             ", ".join(f"{Path(p).stem}: {len(f)}" for p, f in zip(paths, frames)))
