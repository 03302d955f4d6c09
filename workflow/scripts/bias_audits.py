"""rule bias_audits: position, length and self-preference bias of the judges (BH within each audit)."""
import pandas as pd

from heart.stats import bias
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    p = snakemake.params
    ci, alpha = p.bootstrap["ci"], p.fdr_alpha
    judgments = tableio.read_table(snakemake.input.judgments)
    verdicts = [tableio.read_table(path) for path in snakemake.input.verdicts]
    verdicts = pd.concat(verdicts, ignore_index=True) if verdicts else tableio.empty_like("judge_verdicts")
    texts = tableio.read_tables(snakemake.input.completions, "completions")  # none: judgments only
    position = bias.position_bias(verdicts, alpha=alpha, ci=ci)
    length = bias.length_bias(judgments, texts, alpha=alpha, ci=ci)
    self_pref = bias.self_preference(judgments, p.judge_families, p.families, alpha=alpha, **p.bootstrap)
    tableio.write_tables([(position, snakemake.output.position, "bias_position"),
                          (length, snakemake.output.length, "bias_length"),
                          (self_pref, snakemake.output.self_preference, "bias_self_preference")], job)
    for row in position.itertuples():
        log.info("position %s: shown-A wins %.3f of %s verdicts (%s)", row.judge, row.share_shown_a,
                 row.n_verdicts, row.status)
