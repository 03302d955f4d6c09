"""rule judge_pairs: one LLM judge's blinded verdicts on the pairs of a shard it may judge, in both orders."""
import pandas as pd

from heart import judging
from heart.llm.stage import Stage
from heart.judging import pairs
from heart.llm import shards
from heart.common import tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    stage = Stage.of(snakemake, resource="rubric")
    spec, shard = stage.spec, stage.shard
    judge = snakemake.params.judge
    rubric = judging.load_rubric(snakemake.input.rubric)
    axes = judging.axis_keys(rubric)  # H, E, A, R, T: the rubric's schema admits no other
    all_pairs = shards.select(tableio.read_table(snakemake.input.pair_table), shard)
    keep = judging.eligible(all_pairs, spec.family, snakemake.params.families, snakemake.params.exclude_own_family)
    todo = all_pairs[keep]
    log.info("%s [%s] (%s, family %s): %d of %d pairs (%d left out by family exclusion)", judge, shard, spec.model,
             spec.family, len(todo), len(all_pairs), int((~keep).sum()))
    items = tableio.read_table(snakemake.input.item_table)
    texts = pairs.completion_text(pd.concat([tableio.read_table(p) for p in snakemake.input.completions]))
    both, answer = snakemake.params.both_orders, snakemake.params.answer  # answer: a JSON verdict, or logprobs
    requests = judging.judge_requests(answer, todo, items, texts, spec.name, stage.template, rubric, stage.version,
                                      both, snakemake.params.call_params, snakemake.params.rationale_max_chars,
                                      snakemake.params.axes, snakemake.params.context_turns)
    results = judging.judge_answers(answer, todo, stage.engine.run(requests, desc=f"judging {judge} [{shard}]"), both,
                                    snakemake.params.axes)
    table = judging.verdict_table(todo, judge, results, axes, snakemake.params.both_orders)
    tableio.write_table(table, snakemake.output[0], "judge_verdicts",
                        {**stage.provenance, "n_excluded_family": int((~keep).sum())})
    log.info("%s: %d verdicts (%d from cache), %d did not parse (kept with their raw text)", judge, len(table),
             int(table["from_cache"].sum()) if len(table) else 0, int((~table["parse_ok"]).sum()) if len(table) else 0)
