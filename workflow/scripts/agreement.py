"""rule agreement: human–LLM, cross-judge and inter-human agreement, judge subsampling, trivial judges."""
import pandas as pd

from heart.stats.agreement.cross_judge import cross_judge_agreement
from heart.stats.agreement.human_llm import human_llm_agreement
from heart.stats.agreement.inter_human import inter_human
from heart.stats.agreement.majority import consensus_fraction
from heart.stats.agreement.per_vote import per_vote_agreement
from heart.stats.agreement.stability import subsampling_stability
from heart.stats.agreement.trivial import trivial_judges
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    p = snakemake.params
    boot = p.bootstrap  # n_boot, seed, ci
    # stats.consensus: "p/q" (exact) or a number (nearest fraction with denominator <= 100: 0.6667 -> 2/3)
    consensus = consensus_fraction(p.consensus)
    log.info("consensus %s (from %r): a human majority is clear when winner votes / all votes >= it",
             consensus, p.consensus)
    judgments = tableio.read_table(snakemake.input.judgments)
    texts = tableio.read_tables(snakemake.input.completions, "completions")  # none: judgments only
    # every function orients each pair's rows to its first row's A/B order (orient) first;
    # the majority winners of judge_stability and trivial_judges do not depend on consensus
    tables = {
        # the majority-based rows (paper §4.4, §9.9), then FastChat's per-vote rows
        "human_llm": pd.concat([human_llm_agreement(judgments, consensus=consensus, **boot),
                                per_vote_agreement(judgments, **boot)], ignore_index=True),
        "cross_judge": cross_judge_agreement(judgments, **boot),
        "inter_human": inter_human(judgments, **boot),
        "stability": subsampling_stability(judgments, n_rep=p.subsample_reps, seed=boot["seed"],
                                                     ci=boot["ci"]),
        "trivial": trivial_judges(judgments, texts, **boot),
    }
    names = {"human_llm": "agreement_human_llm", "cross_judge": "agreement_cross_judge",
             "inter_human": "agreement_inter_human", "stability": "judge_stability", "trivial": "trivial_judges"}
    for key, table in tables.items():
        tableio.write_table(table, snakemake.output[key], names[key], job)
        log.info("%s: %d rows, status %s", names[key], len(table), dict(table["status"].value_counts()))
