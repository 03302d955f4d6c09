"""rule tag_strategies: one LLM tagger's strategy labels for the completions of a shard's items."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import completions as completions_mod, io, llm, shards, tagging  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    engine = llm.Engine([snakemake.params.model], snakemake.params.llm)
    spec = next(iter(engine.specs.values()))
    tagger = snakemake.params.tagger
    taxonomy = tagging.load_taxonomy(snakemake.input.taxonomy)
    template, version = completions_mod.template(snakemake.input.prompt)
    taxonomy_version = io.sha256_file(snakemake.input.taxonomy)[:12]
    shard = snakemake.params.shard
    completions = shards.select(pd.concat([io.read_table(p) for p in snakemake.input.completions], ignore_index=True),
                                shard)
    requests = tagging.requests(completions, spec.name, tagging.system_prompt(template, taxonomy),
                                f"{version}+{taxonomy_version}", tagging.response_schema(taxonomy, snakemake.params.evidence_max_chars),
                                params=snakemake.params.call_params)
    results = engine.run(requests, desc=f"tagging {tagger} [{shard}]")
    table = tagging.tag_table(completions, tagger, results, taxonomy)
    io.write_table(table, snakemake.output[0], "strategy_tags",
                   {"prompt_version": version, "taxonomy_version": taxonomy_version, "model": spec.model})
    n_bad = int((~table.drop_duplicates(["item_id", "system", "contributor_id"])["parse_ok"]).sum())
    log.info("%s [%s]: %d completions tagged, %d answers did not parse (kept with their error)", tagger, shard,
             len(completions), n_bad)
