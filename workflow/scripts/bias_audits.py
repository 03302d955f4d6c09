"""rule bias_audits: position, length and self-preference bias of the judges (BH within each audit)."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import agreement, io  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    s = snakemake.params.stats
    judgments = io.read_table(snakemake.input.judgments)
    verdicts = [io.read_table(p) for p in snakemake.input.verdicts]
    verdicts = pd.concat(verdicts, ignore_index=True) if verdicts else io.empty_like("judge_verdicts")
    texts = pd.concat([io.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    position = agreement.position_bias(verdicts, alpha=s["fdr_alpha"])
    length = agreement.length_bias(judgments, texts, alpha=s["fdr_alpha"])
    self_pref = agreement.self_preference(judgments, snakemake.params.judge_families, snakemake.params.families,
                                          n_boot=s["n_boot"], seed=s["seed"])
    io.write_tables([(position, snakemake.output.position, "bias_position"),
                     (length, snakemake.output.length, "bias_length"),
                     (self_pref, snakemake.output.self_preference, "bias_self_preference")])
    for row in position.itertuples():
        log.info("position %s: shown-A wins %.3f of %s verdicts (%s)", row.judge, row.share_shown_a,
                 row.n_verdicts, row.status)
