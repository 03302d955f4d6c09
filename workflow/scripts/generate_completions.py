"""rule generate_completions: one completion per item of a shard from a model system."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import completions, io, llm, shards  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    engine = llm.Engine([snakemake.params.model], snakemake.params.llm)
    spec = next(iter(engine.specs.values()))
    prompt, version = completions.template(snakemake.input.prompt)
    shard = snakemake.params.shard
    items = shards.select(io.read_table(snakemake.input.item_table), shard)
    system = snakemake.params.system
    requests = completions.completion_requests(items, system, spec.name, prompt, version)
    results = engine.run(requests, desc=f"completions {system} [{shard}]")
    table = completions.model_table(items, system, results, spec.model, snakemake.params.prompt_name, version)
    io.write_table(table, snakemake.output[0], "completions", {"prompt_version": version})
    log.info("%s [%s]: %d completions (%d from cache), %d post-processed", system, shard, len(table),
             int(table["from_cache"].sum()), int(table["postprocessing"].map(len).gt(0).sum()))
