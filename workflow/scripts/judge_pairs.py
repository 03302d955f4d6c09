"""rule judge_pairs: one LLM judge's blinded verdicts on the pairs of a shard it may judge, in both orders."""
import pandas as pd

from heart.common import tableio
from heart.common.runtime import logged
from heart.judging import material, pairs, verdicts
from heart.judging.judge import Judge
from heart.llm import shards
from heart.llm.stage import Stage

with logged(snakemake.log[0], snakemake) as log:
    stage = Stage.of(snakemake, resource="rubric")
    spec, shard = stage.spec, stage.shard
    judge = Judge.from_params(snakemake.params.judge)
    rubric = material.load_rubric(snakemake.input.rubric)
    axes = material.axis_keys(rubric)  # H, E, A, R, T: the rubric's schema admits no other
    all_pairs = shards.select(tableio.read_table(snakemake.input.pair_table), shard)
    keep = material.eligible(all_pairs, spec.family, snakemake.params.families, snakemake.params.exclude_own_family)
    todo = all_pairs[keep]
    log.info("%s [%s] (%s, family %s): %d of %d pairs (%d left out by family exclusion)", judge.name, shard,
             spec.model, spec.family, len(todo), len(all_pairs), int((~keep).sum()))
    items = tableio.read_table(snakemake.input.item_table)
    texts = pairs.completion_text(pd.concat([tableio.read_table(p) for p in snakemake.input.completions]))
    both = snakemake.params.both_orders
    requests = judge.requests(todo, items, texts, stage.template, rubric, stage.version, both)
    results = judge.answers(todo, judge.run(stage.engine, requests, desc=f"judging {judge.name} [{shard}]"), both)
    table = verdicts.verdict_table(todo, judge.name, results, axes, both)
    tableio.write_table(table, snakemake.output[0], "judge_verdicts",
                        {**stage.provenance, "n_excluded_family": int((~keep).sum())})
    log.info("%s: %d verdicts (%d from cache), %d did not parse (kept with their raw text)", judge.name, len(table),
             int(table["from_cache"].sum()) if len(table) else 0, int((~table["parse_ok"]).sum()) if len(table) else 0)
