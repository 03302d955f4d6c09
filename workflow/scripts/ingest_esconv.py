"""rule ingest_esconv: raw ESConv JSON -> conversations, turns and source tables."""
from heart.data import esconv
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    conversations, turns, data = esconv.ingest(snakemake.input.esconv)
    source = esconv.source_record(snakemake.input.esconv, data, snakemake.params.upstream_sha256)
    read = {"esconv_sha256": source.at[0, "sha256"], "esconv_path": snakemake.input.esconv}
    tableio.write_tables([(conversations, snakemake.output.conversations, "conversations"),
                          (turns, snakemake.output.turns, "turns"),
                          (source, snakemake.output.source, "esconv_source")], {**job, **read})
    log.info("%s: %d conversations, %d turns, sha256 %s", snakemake.input.esconv,
             len(conversations), len(turns), source.at[0, "sha256"])
