"""rule external_correlations: Elo against the AA index and TTFT (the paper's Table 1, and this run's ratings)."""
import pandas as pd

from heart import external, provenance, tableio
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    meta = external.load_models(snakemake.input.models)
    ci = snakemake.params.ci
    paper = external.correlate(external.paper_elo_table(meta), meta, win_col="win_rate", ci=ci)
    ratings = tableio.read_table(snakemake.input.ratings)
    ours = ratings[(ratings["axis"] == "overall") & (ratings["subset"] == "all") & (ratings["source"] == "combined")
                   & (ratings["status"] == "ok")]
    run = external.correlate(ours[["system", "elo"]], meta, ci=ci)
    table = pd.concat([paper.assign(data="paper Table 1"), run.assign(data="this run")], ignore_index=True)
    tableio.write_table(table, snakemake.output[0], "external_correlations", job)
    for row in table.itertuples():
        log.info("%s %s: %s n=%s estimate=%s", row.data, row.test, row.status, row.n, row.estimate)
