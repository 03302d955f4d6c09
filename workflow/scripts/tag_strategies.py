"""rule tag_strategies: one LLM tagger's strategy labels for a shard of the completions (by reply text)."""
import pandas as pd

from heart.llm.stage import Stage
from heart import tagging
from heart.common import tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    stage = Stage.of(snakemake, resource="taxonomy")
    spec, shard = stage.spec, stage.shard
    tagger = snakemake.params.tagger
    taxonomy = tagging.load_taxonomy(snakemake.input.taxonomy)
    completions = tagging.shard_rows(pd.concat([tableio.read_table(p) for p in snakemake.input.completions],
                                               ignore_index=True), shard)
    requests = tagging.requests(completions, spec.name, tagging.system_prompt(stage.template, taxonomy),
                                stage.version,
                                tagging.answer_schema(snakemake.params.answer, taxonomy, snakemake.params.evidence_max_chars),
                                params=snakemake.params.call_params)
    results = stage.engine.run(requests, desc=f"tagging {tagger} [{shard}]")
    table = tagging.tag_table(completions, tagger, results, taxonomy)
    tableio.write_table(table, snakemake.output[0], "strategy_tags",
                        stage.provenance)
    n_bad = int((~table.drop_duplicates(["item_id", "system", "contributor_id"])["parse_ok"]).sum())
    log.info("%s [%s]: %d completions tagged, %d answers did not parse (kept with their error)", tagger, shard,
             len(completions), n_bad)
