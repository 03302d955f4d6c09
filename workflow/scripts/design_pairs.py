"""rule design_pairs: the pairs of completions to judge, in a seeded random A/B order."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import io, pairs  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    items = io.read_table(snakemake.input.item_table)
    completions = pd.concat([io.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    table = pairs.design(completions, items, seed=snakemake.params.seed, per_item=snakemake.params.per_item)
    io.write_table(table, snakemake.output[0], "pairs", {"seed": snakemake.params.seed})
    log.info("%d pairs over %d items; by kind: %s", len(table), table["item_id"].nunique(),
             table["kind"].value_counts().to_dict())
