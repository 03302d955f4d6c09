"""rule annotation_tasks: the human tasks (writing, rating with quality checks, strategy spot checks, safety
reviews)."""
import json
from pathlib import Path

import pandas as pd
import yaml

from heart.common import provenance, tableio
from heart.common.atomic import atomic_path
from heart.annotation import tasks
from heart.completions import safety_review
from heart.judging.material import load_rubric
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    s = snakemake.params.settings
    items = tableio.read_table(snakemake.input.item_table)
    pairs = tableio.read_table(snakemake.input.pair_table)
    completions = pd.concat([tableio.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    qc_replies = yaml.safe_load(open(snakemake.input.qc_replies))["replies"]
    flags = tableio.read_table(snakemake.input.safety_flags)
    # a confirmed flag that completions.confirmed_flags leaves out of the rating pages: its pairs (and a flagged
    # original reply's quality checks) are not rated
    rated_items, rated_pairs = safety_review.for_rating(items, pairs, flags)
    if len(rated_pairs) < len(pairs):
        log.info("%d pairs left out of the rating pages: a side's safety flag is confirmed",
                 len(pairs) - len(rated_pairs))
    table = pd.concat([
        tasks.writing_tasks(items, s["writing"]["writers"], s["writing"]["per_context"], s["seed"]),
        tasks.rating_tasks(rated_items, rated_pairs, completions, s["rating"]["raters"], s["rating"]["per_pair"],
                           s["rating"]["qc_rate"], qc_replies, s["seed"], pair_sample=s["rating"]["pair_sample"],
                           n_pairs=s["rating"]["pairs"],
                           axes=(tasks.rating_axes(load_rubric(snakemake.input.rubric)) if s["rating"]["axes"]
                                 else None)),
        tasks.spot_check_tasks(completions, items, s["spot_checks"]["completions"], s["spot_checks"]["labellers"],
                               s["spot_checks"]["per_completion"], s["seed"]),
        tasks.safety_review_tasks(flags, completions, items, s["safety_review"]["reviewers"],
                                  s["safety_review"]["per_flag"], s["seed"]),
    ], ignore_index=True)
    summary = tasks.summary(table)
    tableio.write_tables([(table, snakemake.output.tasks, "annotation_tasks"),
                          (summary, snakemake.output.summary, "annotation_summary")], {**job, "settings": s})
    with atomic_path(snakemake.output.serve) as tmp:
        Path(tmp).write_text(json.dumps({"db": s["db"], "taxonomy": snakemake.params.taxonomy,
                                             "crowd": s["crowd"]}, indent=1) + "\n")
    for kind, g in table.groupby("kind"):
        log.info("%s: %d tasks for %d people over %d items", kind, len(g), g["person_id"].nunique(),
                 g["item_id"].nunique())
    if not (completions["system"] == "human").any():
        log.info("no human completions yet: rating and spot-check tasks cover the other systems; rerun after "
                 "the writing tasks are exported to add the human ones")
