"""rule download_esconv: fetch the pinned upstream ESConv.json (atomic, sha256-checked)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart.esconv import download  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    digest = download(snakemake.params.url, snakemake.output[0], snakemake.params.sha256)
    log.info("downloaded %s -> %s (sha256 %s)", snakemake.params.url, snakemake.output[0], digest)
