"""rule ingest_esconv: raw ESConv JSON -> conversations, turns and source tables."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import esconv, io  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    conversations, turns, data = esconv.ingest(snakemake.input.esconv)
    source = esconv.source_record(snakemake.input.esconv, data, snakemake.params.upstream_sha256)
    provenance = {"esconv_sha256": source.at[0, "sha256"], "esconv_path": snakemake.input.esconv}
    io.write_tables([(conversations, snakemake.output.conversations, "conversations"),
                     (turns, snakemake.output.turns, "turns"),
                     (source, snakemake.output.source, "esconv_source")], provenance)
    log.info("%s: %d conversations, %d turns, sha256 %s", snakemake.input.esconv,
             len(conversations), len(turns), source.at[0, "sha256"])
