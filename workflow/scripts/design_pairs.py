"""rule design_pairs: the pairs of completions to judge (all, or a budget), each in its own seeded A/B order."""
import pandas as pd

from heart.judging import pairs
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    items = tableio.read_table(snakemake.input.item_table)
    completions = pd.concat([tableio.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    table = pairs.design(completions, items, seed=snakemake.params.seed, sample=snakemake.params.sample)
    tableio.write_table(table, snakemake.output[0], "pairs",
                        {**job, "seed": snakemake.params.seed, "sample": snakemake.params.sample})
    log.info("%d pairs over %d items; by kind: %s", len(table), table["item_id"].nunique(),
             table["kind"].value_counts().to_dict())
