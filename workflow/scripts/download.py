"""rules download_esconv, download_release: fetch a pinned upstream file (atomic, sha256-checked)."""
from heart.data.esconv import download
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    p = snakemake.params
    digest = download(p.url, snakemake.output[0], p.sha256, what=p.what, setting=p.setting, howto=p.howto)
    log.info("downloaded %s -> %s (sha256 %s)", p.url, snakemake.output[0], digest)
