"""rule export_llm_cache: the response cache as one Parquet file, for replay elsewhere."""
from heart.llm.cache import ResponseCache
from heart.common import provenance
from heart.common.runtime import key_env_names, logged
from heart.common.redaction import Redactor

with logged(snakemake.log[0], snakemake) as log:
    redactor = Redactor.from_env(key_env_names(snakemake.config))
    cache = ResponseCache(snakemake.params.cache_dir, replay=snakemake.params.replay)
    n = cache.export(snakemake.output[0], redactor, provenance.collect(snakemake))
    log.info("exported %d cached responses from %s%s", n, snakemake.params.cache_dir,
             f" and the replay file {snakemake.params.replay}" if snakemake.params.replay else "")
