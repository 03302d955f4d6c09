"""rule external_correlations: Elo against the AA index and TTFT (the paper's Table 1, and this run's ratings).

The paper's own rows only where config ``paper_reference`` is on. This run's Elo is Figure 4's (``params.source``,
heart.stats.figure4.headline); the TTFT correlation is reported for both TTFT sources (the paper's published
medians and this run's measured ones), the one Figure 5 draws (``params.ttft_source``) flagged ``figure_5``.
"""
import pandas as pd

from heart.stats import external
from heart.stats import figure4
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    meta = external.load_models(snakemake.input.models)
    ci, source, ttft_source = snakemake.params.ci, snakemake.params.source, snakemake.params.ttft_source
    ratings = tableio.read_table(snakemake.input.ratings)
    board = figure4.headline(ratings, source=source)
    ours = board[(board["status"] == "ok") & ~board["derived"]].assign(win_rate=lambda d: d["win_pct"] / 100)
    measured = external.measured_ttft(tableio.read_tables(snakemake.input.completions, "completions"))
    run = external.correlate(ours[["system", "elo", "win_rate"]], meta, win_col="win_rate", ci=ci,
                             measured=measured, figure_ttft=ttft_source)
    # the paper's own Table 1 correlations only beside a HEART study's (config paper_reference): in another study's
    # run they would join its tests' Benjamini-Hochberg family
    paper = ([external.correlate(external.paper_elo_table(meta), meta, win_col="win_rate", ci=ci)
              .assign(data="paper Table 1")] if snakemake.params.paper_reference else [])
    table = pd.concat([*paper, run.assign(data="this run")], ignore_index=True)
    tableio.write_table(table, snakemake.output[0], "external_correlations", job)
    log.info("this run: Elo from %s; measured TTFT for %d system(s); Figure 5 draws the %s TTFT",
             figure4.column_sources(ratings, source)["elo"], len(measured),
             ttft_source)
    for row in table.itertuples():
        log.info("%s %s: %s n=%s estimate=%s", row.data, row.test, row.status, row.n, row.estimate)
