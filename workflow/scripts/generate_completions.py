"""rule generate_completions: one completion per item of a shard from a model system."""
from heart.completions import generate
from heart.llm.decoding import decoding
from heart.llm.stage import Stage
from heart.llm import shards
from heart.common import tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    stage = Stage.of(snakemake)
    spec, shard, version = stage.spec, stage.shard, stage.version
    items = shards.select(tableio.read_table(snakemake.input.item_table), shard)
    system = snakemake.params.system
    # the paper's decoding (§9.4), decided once per model: what is sent and why, in the log and the provenance
    decided = decoding(spec)
    log.info("%s: decoding of %s (%s): %s\n  %s", system, spec.name, spec.model, decided.params,
             "\n  ".join(decided.notes))
    requests = generate.completion_requests(items, system, spec.name, stage.template, version)
    results = stage.engine.run(requests, desc=f"completions {system} [{shard}]")
    table = generate.model_table(items, system, results, spec.model, snakemake.params.prompt_name, version,
                                 snakemake.params.cut_replies)
    record = {**stage.provenance, "decoding": {"params": decided.params, "notes": list(decided.notes)}}
    tableio.write_table(table, snakemake.output[0], "completions", record)
    log.info("%s [%s]: %d completions (%d from cache), %d post-processed, %d cut by the token limit (%s)", system,
             shard, len(table), int(table["from_cache"].sum()), int(table["postprocessing"].map(len).gt(0).sum()),
             int(table["finish_reason"].eq("length").sum()), snakemake.params.cut_replies)
