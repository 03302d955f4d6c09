"""rule strategy_f1: a tagger's per-strategy and macro F1 against human spot checks, or that there are none."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import io, tagging  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    taxonomy = tagging.load_taxonomy(snakemake.input.taxonomy)
    if snakemake.input.spot_checks:
        tags = io.read_table(snakemake.input.tags)
        spot = tagging.read_spot_checks(snakemake.input.spot_checks[0], taxonomy, completions=tags)
        if spot.empty:
            log.warning("no human spot-check labels: %s holds none; F1 is absent", snakemake.params.path)
            table = tagging.absent_f1(taxonomy)
        else:
            table = tagging.f1_scores(tags, spot, taxonomy)
            log.info("macro F1 %.3f on %d labels", table["f1"].iloc[-1], int(table["n"].iloc[-1]))
    else:
        log.warning("no human spot-check labels: %s does not exist; F1 is absent", snakemake.params.path)
        table = tagging.absent_f1(taxonomy)
    io.write_table(table, snakemake.output[0], "strategy_f1")
