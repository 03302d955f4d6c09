"""rule generate_completions: one completion per item of a shard from a model system."""
from heart import completions, llm, shards, tableio
from heart.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    stage = llm.Stage.of(snakemake)
    spec, shard, version = stage.spec, stage.shard, stage.version
    items = shards.select(tableio.read_table(snakemake.input.item_table), shard)
    system = snakemake.params.system
    requests = completions.completion_requests(items, system, spec.name, stage.template, version)
    results = stage.engine.run(requests, desc=f"completions {system} [{shard}]")
    table = completions.model_table(items, system, results, spec.model, snakemake.params.prompt_name, version)
    tableio.write_table(table, snakemake.output[0], "completions", stage.provenance)
    log.info("%s [%s]: %d completions (%d from cache), %d post-processed", system, shard, len(table),
             int(table["from_cache"].sum()), int(table["postprocessing"].map(len).gt(0).sum()))
