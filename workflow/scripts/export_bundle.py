"""rule export_bundle: this run's artifacts as one folder, the data release (heart/bundle/export.py)."""
from heart.bundle import export
from heart.common import provenance, tableio
from heart.common.runtime import logged, tell
from heart.completions import safety_review

with logged(snakemake.log[0], snakemake) as log:
    i, p = snakemake.input, snakemake.params
    withheld = safety_review.left_out(tableio.read_table(i.safety_flags), "bundle")
    if withheld:
        log.info("%d completions withheld from the bundle: their safety flag is confirmed", len(withheld))
    manifest = export.write(
        snakemake.output[0],
        items=tableio.read_table(i.item_table),
        completions=tableio.read_tables(i.completions, "completions"),
        pairs=tableio.read_table(i.pair_table),
        verdicts=tableio.read_tables(i.verdicts, "judge_verdicts"),
        checks=tableio.read_tables(i.checks, "judge_verdicts"),
        tags=tableio.read_tables(i.tags, "strategy_tags"),
        files=p.files, models_csv=i.models, study=p.study, provenance=provenance.collect(snakemake),
        withheld=withheld)
    counts = ", ".join(f"{k} {v:,}" for k, v in manifest["counts"].items())
    log.info("bundle %s: %d files; %s", snakemake.output[0], len(manifest["files"]), counts)
    tell(f"bundle written to {snakemake.output[0]} ({len(manifest['files'])} files; {counts}); "
         f"regenerate from it: make paper ARTIFACTS={snakemake.output[0]}", snakemake)
