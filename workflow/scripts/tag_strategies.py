"""rule tag_strategies: one LLM tagger's strategy labels for a shard of the completions (by reply text)."""
import pandas as pd

from heart.common import tableio
from heart.common.runtime import logged
from heart.llm.stage import Stage
from heart.tagging import tagger as tagging
from heart.tagging.taxonomy import load_taxonomy

with logged(snakemake.log[0], snakemake) as log:
    stage = Stage.of(snakemake, resource="taxonomy")
    shard = stage.shard
    tagger = tagging.Tagger.from_params(snakemake.params.tagger)
    taxonomy = load_taxonomy(snakemake.input.taxonomy)
    completions = tagging.shard_rows(pd.concat([tableio.read_table(p) for p in snakemake.input.completions],
                                               ignore_index=True), shard)
    requests = tagger.requests(completions, stage.template, taxonomy, stage.version)
    results = stage.engine.run(requests, desc=f"tagging {tagger.name} [{shard}]")
    table = tagging.tag_table(completions, tagger.name, results, taxonomy)
    tableio.write_table(table, snakemake.output[0], "strategy_tags", stage.provenance)
    n_bad = int((~table.drop_duplicates(["item_id", "system", "contributor_id"])["parse_ok"]).sum())
    log.info("%s [%s]: %d completions tagged, %d answers did not parse (kept with their error)", tagger.name, shard,
             len(completions), n_bad)
