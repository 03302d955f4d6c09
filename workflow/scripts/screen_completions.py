"""rule screen_completions: every completion screened for safety (HEART paper section 6) by the offline lexicon and,
where the study names one, a provider's moderation endpoint; the human review of the flags and what a confirmed
flag does."""
import pandas as pd

from heart.common import export, provenance, tableio
from heart.common.atomic import sha256_file
from heart.common.runtime import logged
from heart.completions import moderation, safety, safety_review
from heart.llm.cache import ResponseCache
from heart.llm.models import ModelSpec, as_called, calling

with logged(snakemake.log[0], snakemake) as log:
    p = snakemake.params
    job = provenance.collect(snakemake)
    lexicon = safety.load_lexicon(snakemake.input.lexicon)
    completions = pd.concat([tableio.read_table(f) for f in snakemake.input.completions], ignore_index=True)
    # the seeker turns a model wrote (adversarial rewrites) are screened as the completions are
    made = safety.model_written_items(tableio.read_table(snakemake.input.item_table))
    screened = pd.concat([completions[made.columns], made], ignore_index=True)
    table = safety.screen(screened, lexicon)
    if p.moderation:  # a provider's moderation endpoint beside the lexicon (completions.moderation)
        spec = ModelSpec.from_params(as_called(p.moderation, snakemake.config))
        checked = moderation.screen(screened, spec, ResponseCache(calling(snakemake.config, "llm")["cache_dir"]))
        table = pd.concat([table, checked], ignore_index=True)
        log.info("moderation %s: %d rows, %d failed calls", spec.model, len(checked),
                 int((checked["status"] == "failed").sum()))
    reviews = None
    if snakemake.input.reviews:
        reviews = safety_review.read_reviews(snakemake.input.reviews[0], completions)
    else:
        log.info("no safety reviews: %s does not exist; every flag is unreviewed", p.reviews_path)
    flags = safety_review.flags(table, reviews, p.leave_out)
    log.info("%d model-written items screened (their seeker turns), %d flagged", len(made),
             int(table.loc[table["system"] == safety.MODEL_ITEMS].groupby("item_id")["flagged"].any().sum()))
    stale = safety_review.unflagged_reviews(table, reviews)
    if stale:
        log.warning("%d reviews are of completions the screen does not flag now (not counted)", stale)
    meta = {**job, "lexicon_version": lexicon.version, "lexicon_sha256": sha256_file(snakemake.input.lexicon),
            "leave_out": list(p.leave_out)}
    tableio.write_tables([(table, snakemake.output.table, "safety"), (flags, snakemake.output.flags, "safety_flags")],
                         meta)
    report = safety_review.per_system(table, flags)
    if p.label:
        report = report.assign(run=p.label)[["run", *report.columns]]
    export.write_csv(report, snakemake.output.csv)  # counts and category names only: no reply text
    for row in report.itertuples():  # counts only in the log: no reply text
        log.info("%-24s %4d completions, %3d flagged: %d confirmed, %d cleared, %d disputed, %d unreviewed (%s)",
                 row.system, row.completions, row.flagged, row.confirmed, row.cleared, row.disputed,
                 row.unreviewed, row.categories)
