"""rule combine_judgments: both orders combined per LLM judge, human judgments and judgments made elsewhere
added; flip rates; sources."""
import pandas as pd

from heart.judging import combine
from heart.judging import judgment_import
from heart.common import provenance, tableio
from heart.common.runtime import logged
from heart.common.vocabulary import AXES

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    pairs = tableio.read_table(snakemake.input.pair_table)
    combined, sources = [], []
    for judge, path in zip(snakemake.params.judges, snakemake.input.llm):
        verdicts = tableio.read_table(path)
        c = combine.combine(verdicts, pairs, AXES)
        combined.append(c)
        sources.append(combine.source_row(judge, verdicts, c, tableio.provenance_of(path).get("n_excluded_family", 0)))
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
    imported_verdicts = tableio.empty_like("judge_verdicts")
    if snakemake.input.imported:  # judgments made elsewhere, beside this workflow's own
        path = snakemake.input.imported[0]
        records = judgment_import.read(path)  # read and checked once, resolved against the items below
        items = tableio.read_table(snakemake.input.item_table)
        texts = pd.concat([tableio.read_table(p) for p in snakemake.input.completions], ignore_index=True)
        judgment_import.check_completions(records, items, texts)  # only the study's own completions
        judged = judgment_import.to_pairs(records, items)
        # a pair this workflow designed keeps its A/B orientation; others are added to the judgments only
        pairs = pd.concat([pairs, judged[~judged["pair_id"].isin(pairs["pair_id"])]], ignore_index=True)
        imported = judgment_import.convert(records, items=items, pairs=pairs,
                                           strength_map=snakemake.params.strength_map)
        clash = sorted(set(imported.verdicts["judge"]) & set(snakemake.params.judges))
        if clash:
            raise ValueError(f"{path}: judge(s) {clash} are also judges of this workflow (config judging.judges); "
                             "rename them in the file")
        combined.append(imported.combined)
        sources += imported.source_rows(path)
        human = pd.concat([human, imported.human.reindex(columns=human.columns)], ignore_index=True)
        imported_verdicts = imported.verdicts
        log.info("%s: %d judgments imported (%s)", path, len(imported.judgments),
                 imported.judgments["judge_kind"].value_counts().to_dict())
    combined = pd.concat(combined, ignore_index=True) if combined else combine.combine(
        tableio.empty_like("judge_verdicts"), pairs, AXES)
    table = combine.judgments(pairs, combined, human)
    tableio.write_tables([(table, snakemake.output.judgments, "judgments"),
                          (combine.flip_rates(combined, AXES), snakemake.output.flips, "flip_rates"),
                          (pd.DataFrame(sources), snakemake.output.sources, "judge_sources"),
                          (imported_verdicts, snakemake.output.imported_verdicts, "judge_verdicts")], job)
    for s in sources:
        log.info("%-24s %-7s %s", s["judge"], s["status"], s["note"])
