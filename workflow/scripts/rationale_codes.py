"""rule rationale_codes: coded themes of human and LLM rationales on the pairs they agree on (paper §4.3)."""
from heart.common import provenance, tableio
from heart.stats import rationales
from heart.common.atomic import sha256_file
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    codes = rationales.load_codebook(snakemake.input.codebook)
    judgments = tableio.read_table(snakemake.input.judgments)
    texts = tableio.read_tables(snakemake.input.completions, "completions")
    summary, per_code = rationales.comention(judgments, texts, codes, **snakemake.params.bootstrap)
    version = sha256_file(snakemake.input.codebook)[:12]
    tableio.write_tables([(summary, snakemake.output.summary, "rationale_concordance"),
                          (per_code, snakemake.output.codes, "rationale_codes")], {**job, "codebook_version": version})
    for row in summary.itertuples():
        log.info("rationale concordance, %s: %s, %s of %s cells = %.3f (%s)", row.measure, row.status,
                 row.n_concordant_cells, row.n_cells, row.concordance, row.note)
