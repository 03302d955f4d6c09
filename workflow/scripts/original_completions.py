"""rule original_completions: the dataset's real next supporter turn as a system."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import completions, io  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    table = completions.original_table(io.read_table(snakemake.input.item_table))
    io.write_table(table, snakemake.output[0], "completions")
    log.info("original: %d completions", len(table))
