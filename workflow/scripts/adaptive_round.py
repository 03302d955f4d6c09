"""rule adaptive_round: round k of the adaptive pair design, chosen from the verdicts of rounds 0..k-1 (or its end)."""
import pandas as pd

from heart.common import provenance, tableio
from heart.common.runtime import logged
from heart.common.vocabulary import AXES
from heart.judging import combine, material
from heart.stats import adaptive

with logged(snakemake.log[0], snakemake) as log:
    job, p = provenance.collect(snakemake), snakemake.params
    pairs = tableio.read_table(snakemake.input.pair_table)
    n_judges = sum(material.eligible(pairs, family, p.families, p.exclude_own_family).to_numpy(dtype=int)
                   for family in p.judge_families.values())
    calls = pd.Series(n_judges * (2 if p.both_orders else 1), index=pairs["pair_id"])
    earlier = {pid for path in snakemake.input.earlier for pid in tableio.read_table(path)["pair_id"]}
    verdicts = [tableio.read_table(path) for path in snakemake.input.verdicts]
    judgments = pd.concat([combine.combine(v, pairs, AXES) for v in verdicts], ignore_index=True) if verdicts else None
    table, status = adaptive.next_round(pairs[n_judges > 0], earlier, judgments, int(p.round), p.settings, len(pairs),
                                        p.seed, p.bt_alpha)
    status["calls"] = int(calls[list(earlier | set(table["pair_id"]))].sum())
    status["calls_fixed"] = int(calls.sum())
    status["cost_usd"] = status["est_cost_fixed_usd"] = None  # the whole design's, in results/judging/adaptive.parquet
    tableio.write_tables([(table, snakemake.output.pairs, "pairs"),
                          (pd.DataFrame([status]), snakemake.output.status, "adaptive_rounds")], job)
    log.info("round %d: %s; %d pairs (%d of %d chosen so far, %d judge calls of the fixed design's %d)%s",
             status["round"], status["reason"], status["n_round"], status["n_chosen"], status["n_fixed"],
             status["calls"], status["calls_fixed"],
             f"; widest rank interval {status['max_rank_width']:g}" if status["max_rank_width"] is not None else "")
