"""rule tag_strategies: one LLM tagger's strategy labels for the completions of a shard's items."""
import pandas as pd

from heart import completions as completions_mod, llm, provenance, shards, tableio, tagging
from heart.atomic import sha256_file
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    engine = llm.Engine([snakemake.params.model], snakemake.params.llm)
    spec = next(iter(engine.specs.values()))
    tagger = snakemake.params.tagger
    taxonomy = tagging.load_taxonomy(snakemake.input.taxonomy)
    template, version = completions_mod.template(snakemake.input.prompt)
    taxonomy_version = sha256_file(snakemake.input.taxonomy)[:12]
    shard = snakemake.params.shard
    completions = shards.select(pd.concat([tableio.read_table(p) for p in snakemake.input.completions], ignore_index=True),
                                shard)
    requests = tagging.requests(completions, spec.name, tagging.system_prompt(template, taxonomy),
                                f"{version}+{taxonomy_version}", tagging.response_schema(taxonomy, snakemake.params.evidence_max_chars),
                                params=snakemake.params.call_params)
    results = engine.run(requests, desc=f"tagging {tagger} [{shard}]")
    table = tagging.tag_table(completions, tagger, results, taxonomy)
    tableio.write_table(table, snakemake.output[0], "strategy_tags",
                        {**job, "prompt_version": version, "taxonomy_version": taxonomy_version, "model": spec.model})
    n_bad = int((~table.drop_duplicates(["item_id", "system", "contributor_id"])["parse_ok"]).sum())
    log.info("%s [%s]: %d completions tagged, %d answers did not parse (kept with their error)", tagger, shard,
             len(completions), n_bad)
