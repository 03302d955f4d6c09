"""rule human_judgments: import human pairwise judgments with rater QC, or record that there are none."""
from heart.judging import human_judgments
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    s = snakemake.params.settings
    if snakemake.input.humans:
        path = snakemake.input.humans[0]
        raw = human_judgments.read(path)
        raters = human_judgments.quality_control(raw, s["max_qc_fail_share"], s["min_median_seconds"],
                                                 s["max_median_seconds"], s["outlier_alpha"])
        for r in raters[raters["excluded"]].itertuples():
            log.warning("rater %s excluded: %s", r.rater_id, r.reason)
        # an item may be named by its item_id or its release key (regular:17)
        table = human_judgments.orient(raw, tableio.read_table(snakemake.input.pair_table), raters, s["strength_map"],
                                       path, items=tableio.read_table(snakemake.input.item_table))
        log.info("human: %d judgments from %d of %d raters", len(table), int((~raters["excluded"]).sum()), len(raters))
    else:
        log.warning("no human judgments: %s does not exist; human judges are absent", s["path"])
        table, raters = tableio.empty_like("human_judgments"), tableio.empty_like("human_raters")
    tableio.write_tables([(table, snakemake.output.judgments, "human_judgments"),
                          (raters, snakemake.output.raters, "human_raters")], job)
