"""rule summarize_systems: which systems have completions, and which are absent (and why)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import completions, io  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    tables = {s: io.read_table(p) for s, p in zip(snakemake.params.systems, snakemake.input)}
    summary = completions.summarize(tables, human_path=snakemake.params.human_path,
                                    human_file=snakemake.params.human_file)
    io.write_table(summary, snakemake.output[0], "systems")
    for row in summary.itertuples():
        log.info("%-24s %-8s %4d completions  %s", row.system, row.status, row.n_completions, row.note)
