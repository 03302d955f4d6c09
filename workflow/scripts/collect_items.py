"""rule collect_items: regular + adversarial items -> one items table."""
import pandas as pd

from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    items = pd.concat([tableio.read_table(snakemake.input.regular), tableio.read_table(snakemake.input.adversarial)],
                      ignore_index=True)
    if not items["item_id"].is_unique:
        raise ValueError("an adversarial item has the same context as a regular item (item_id clash)")
    tableio.write_table(items, snakemake.output[0], "items", job)
    log.info("items by subset: %s", items["subset"].value_counts().to_dict())
