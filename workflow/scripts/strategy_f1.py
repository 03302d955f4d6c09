"""rule strategy_f1: a tagger's per-strategy and macro F1 against human spot checks, or that there are none."""
from heart.common import provenance, tableio
from heart.tagging import spot_checks, taxonomy
from heart.common.runtime import logged
from heart.tagging.taxonomy import load_taxonomy

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    taxonomy = load_taxonomy(snakemake.input.taxonomy)
    if snakemake.input.spot_checks:
        tags = tableio.read_table(snakemake.input.tags)
        spot = spot_checks.read_spot_checks(snakemake.input.spot_checks[0], taxonomy, completions=tags)
        if spot.empty:
            log.warning("no human spot-check labels: %s holds none; F1 is absent", snakemake.params.path)
            table = spot_checks.absent_f1(taxonomy)
        else:
            table = spot_checks.f1_scores(tags, spot, taxonomy)
            log.info("macro F1 %.3f on %d labels", table["f1"].iloc[-1], int(table["n"].iloc[-1]))
    else:
        log.warning("no human spot-check labels: %s does not exist; F1 is absent", snakemake.params.path)
        table = spot_checks.absent_f1(taxonomy)
    tableio.write_table(table, snakemake.output[0], "strategy_f1", job)
