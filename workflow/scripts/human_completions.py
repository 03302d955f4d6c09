"""rule human_completions: import human completions, or record that there are none."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import completions, io  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    items = io.read_table(snakemake.input.item_table)
    if snakemake.input.humans:
        table, violations = completions.import_humans(snakemake.input.humans[0], items)
        for v in violations.itertuples():
            log.warning("%s line %d: %s (item %s, contributor %s) - left out",
                        v.file, v.line, v.problem, v.item_id, v.contributor_id)
    else:
        log.warning("no human completions: %s does not exist; human systems are absent",
                    snakemake.params.path)
        table, violations = io.empty_like("completions"), io.empty_like("human_violations")
    io.write_tables([(table, snakemake.output.completions, "completions"),
                     (violations, snakemake.output.violations, "human_violations")])
    log.info("human: %d completions, %d violations", len(table), len(violations))
