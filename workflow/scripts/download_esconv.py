"""rule download_esconv: fetch the pinned upstream ESConv.json (atomic, sha256-checked)."""
from heart.esconv import download
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    digest = download(snakemake.params.url, snakemake.output[0], snakemake.params.sha256)
    log.info("downloaded %s -> %s (sha256 %s)", snakemake.params.url, snakemake.output[0], digest)
