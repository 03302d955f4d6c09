"""rule rationale_codes: coded themes of human and LLM rationales on the pairs they agree on (paper §4.3)."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import io, rationales  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    s = snakemake.params.stats
    codes = rationales.load_codebook(snakemake.input.codebook)
    judgments = io.read_table(snakemake.input.judgments)
    texts = pd.concat([io.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    summary, per_code = rationales.comention(judgments, texts, codes, n_boot=s["n_boot"], seed=s["seed"], ci=s["ci"])
    version = io.sha256_file(snakemake.input.codebook)[:12]
    io.write_tables([(summary, snakemake.output.summary, "rationale_concordance"),
                     (per_code, snakemake.output.codes, "rationale_codes")], {"codebook_version": version})
    log.info("rationale concordance: %s (%s)", summary.at[0, "status"], summary.at[0, "note"])
