"""rule collect_items: regular + adversarial items -> one items table."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import io  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    items = pd.concat([io.read_table(snakemake.input.regular), io.read_table(snakemake.input.adversarial)],
                      ignore_index=True)
    if not items["item_id"].is_unique:
        raise ValueError("an adversarial item has the same context as a regular item (item_id clash)")
    io.write_table(items, snakemake.output[0], "items")
    log.info("items by subset: %s", items["subset"].value_counts().to_dict())
