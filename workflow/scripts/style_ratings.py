"""rule style_ratings: plain and style-controlled (length, warmth) Bradley–Terry/Elo side by side (issue 14)."""
import pandas as pd

from heart.common import provenance, tableio
from heart.stats import style_control, style_features
from heart.common import export
from heart.common.atomic import sha256_file
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    lexicon = style_features.load_lexicon(snakemake.input.lexicon)
    judgments = tableio.read_table(snakemake.input.judgments)
    texts = tableio.read_tables(snakemake.input.completions, "completions")
    boot = snakemake.params.bootstrap
    ratings, coefficients = style_control.style_control(judgments, texts, lexicon, alpha=snakemake.params.bt_alpha,
                                                        **boot)
    tableio.write_tables([(ratings, snakemake.output.ratings, "style_ratings"),
                          (coefficients, snakemake.output.coefficients, "style_coefficients")],
                         {**job, "lexicon_version": lexicon.version,
                          "lexicon_sha256": sha256_file(snakemake.input.lexicon)})
    table, coef_table = style_control.report_tables(ratings, coefficients, boot["ci"])
    for frame, path in ((table, snakemake.output.table), (coef_table, snakemake.output.coefficient_table)):
        if snakemake.params.label:
            frame = frame.assign(run=snakemake.params.label)[["run", *frame.columns]]
        export.write_csv(frame, path)  # safe to open in a spreadsheet
    for row in coefficients.itertuples():
        log.info("%-9s %-7s %-13s coefficient %s per SD (%s), p %s", row.source, row.covariate, row.status,
                 f"{row.coefficient:+.3f}" if pd.notna(row.coefficient) else "-", row.unit,
                 f"{row.p_value:.2g}" if pd.notna(row.p_value) else "-")
    moved = ratings[ratings["rank_change"].fillna(0).ne(0)]
    log.info("%d (source, system) ranks change once length and warmth are held constant", len(moved))
