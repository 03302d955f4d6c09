"""rule export_annotations: the annotation store's answers as the human import files."""
from heart.annotation import export
from heart.tagging.taxonomy import load_taxonomy, strategy_keys
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    keys = strategy_keys(load_taxonomy(snakemake.input.taxonomy))
    out = snakemake.output
    summary = export.export(snakemake.input.store, out.completions, out.judgments, out.labels, keys)
    for name, info in summary.items():
        log.info("%s: %s", name, info)
