"""rule combine_judgments: both orders combined per LLM judge, human judgments added; flip rates; sources."""
import pandas as pd

from heart import judging, provenance, tableio
from heart.runtime import logged

AXES = ["H", "E", "A", "R", "T"]

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    pairs = tableio.read_table(snakemake.input.pair_table)
    combined, sources = [], []
    for judge, path in zip(snakemake.params.judges, snakemake.input.llm):
        verdicts = tableio.read_table(path)
        c = judging.combine(verdicts, pairs, AXES)
        combined.append(c)
        sources.append(judging.source_row(judge, verdicts, c, tableio.provenance_of(path).get("n_excluded_family", 0)))
    combined = pd.concat(combined, ignore_index=True) if combined else judging.combine(
        tableio.empty_like("judge_verdicts"), pairs, AXES)
    human = tableio.read_table(snakemake.input.human)
    raters = tableio.read_table(snakemake.input.raters)
    if raters.empty:
        note = (f"absent: {snakemake.params.human_path} holds no judgments" if snakemake.params.human_file
                else f"absent: no human judgments ({snakemake.params.human_path} does not exist)")
    else:
        note = (f"{int((~raters['excluded']).sum())} of {len(raters)} raters kept after quality control "
                "(results/judging/human_raters.parquet)")
    sources.append({"judge": "human", "judge_kind": "human", "status": "present" if len(human) else "absent",
                    "n_pairs": int(human["pair_id"].nunique()), "n_excluded_family": 0, "n_unparsed": 0,
                    "n_inconsistent": 0, "note": note})
    table = judging.judgments(pairs, combined, human)
    tableio.write_tables([(table, snakemake.output.judgments, "judgments"),
                          (judging.flip_rates(combined, AXES), snakemake.output.flips, "flip_rates"),
                          (pd.DataFrame(sources), snakemake.output.sources, "judge_sources")], job)
    for s in sources:
        log.info("%-24s %-7s %s", s["judge"], s["status"], s["note"])
