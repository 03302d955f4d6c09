"""rule adaptive_design: the adaptive design's rounds as one table: what each chose, and what the judging cost
beside the fixed design."""
import pandas as pd

from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    rounds = tableio.read_tables(snakemake.input.status, "adaptive_rounds")
    verdicts = pd.concat([tableio.read_table(p) for p in snakemake.input.verdicts], ignore_index=True)
    cost = verdicts["cost_usd"].astype(float)
    # one price per call: the answers' (a cached answer keeps the price it was paid); none known: null, never 0
    paid = float(cost.sum()) if len(cost) and cost.notna().all() else None
    per_call = paid / len(verdicts) if paid is not None and len(verdicts) else None
    last = rounds.index[-1]  # the whole design's cost, on its last row
    rounds.loc[last, "cost_usd"] = paid
    rounds.loc[last, "est_cost_fixed_usd"] = None if per_call is None else per_call * rounds.loc[last, "calls_fixed"]
    tableio.write_table(rounds, snakemake.output.parquet, "adaptive_rounds", provenance.collect(snakemake))
    rounds.to_csv(snakemake.output.csv, index=False)
    end = rounds.iloc[-1]
    used = (f"{end['newcomer']}: {end['n_newcomer_chosen']} of its {end['n_newcomer_fixed']} pairs"
            if not pd.isna(end["newcomer"]) else f"{end['n_chosen']} of {end['n_fixed']} pairs")
    dollars = ("" if paid is None else
               f"; ${paid:,.2f} where the fixed design would cost ~${end['est_cost_fixed_usd']:,.2f}")
    log.info("adaptive design: %d rounds judged, %s; %d judge calls where the fixed design makes %d (%.0f %%)%s; "
             "ended: %s", max(len(rounds) - 1, 0), used, end["calls"], end["calls_fixed"],
             100 * end["calls"] / max(end["calls_fixed"], 1), dollars, end["reason"])
