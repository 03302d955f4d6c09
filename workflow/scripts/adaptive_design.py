"""rule adaptive_design: the adaptive design's rounds as one table: what each chose, and what it cost beside the
fixed design."""
import pandas as pd

from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    rounds = tableio.read_tables(snakemake.input.status, "adaptive_rounds")
    tableio.write_table(rounds, snakemake.output[0], "adaptive_rounds", provenance.collect(snakemake))
    last = rounds.iloc[-1]
    used = (f"{last['newcomer']}: {last['n_newcomer_chosen']} of its {last['n_newcomer_fixed']} pairs"
            if not pd.isna(last["newcomer"]) else f"{last['n_chosen']} of {last['n_fixed']} pairs")
    log.info("adaptive design: %d rounds judged, %s; %d judge calls where the fixed design makes %d (%.0f %%); "
             "ended: %s", len(rounds) - 1, used, last["calls"], last["calls_fixed"],
             100 * last["calls"] / max(last["calls_fixed"], 1), last["reason"])
