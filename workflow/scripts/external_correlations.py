"""rule external_correlations: Elo against the AA index and TTFT (the paper's Table 1, and this run's ratings)."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import external, io  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    meta = external.load_models(snakemake.input.models)
    paper = external.correlate(external.paper_elo_table(meta), meta, win_col="win_rate")
    ratings = io.read_table(snakemake.input.ratings)
    ours = ratings[(ratings["axis"] == "overall") & (ratings["subset"] == "all") & (ratings["source"] == "combined")
                   & (ratings["status"] == "ok")]
    run = external.correlate(ours[["system", "elo"]], meta)
    table = pd.concat([paper.assign(data="paper Table 1"), run.assign(data="this run")], ignore_index=True)
    io.write_table(table, snakemake.output[0], "external_correlations")
    for row in table.itertuples():
        log.info("%s %s: %s n=%s estimate=%s", row.data, row.test, row.status, row.n, row.estimate)
