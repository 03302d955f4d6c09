"""rule judge_board: the judge leaderboard and the ensembles a study may choose from (heart/stats/judge_board.py)."""
import pandas as pd

from heart.common import export, provenance, tableio
from heart.common.runtime import logged
from heart.stats import judge_board

with logged(snakemake.log[0], snakemake) as log:
    i, p = snakemake.input, snakemake.params
    judgments = tableio.read_table(i.judgments)
    verdicts = [tableio.read_table(path) for path in i.verdicts]
    verdicts = pd.concat(verdicts, ignore_index=True) if verdicts else tableio.empty_like("judge_verdicts")
    texts = tableio.read_tables(i.completions, "completions")  # none in an analysis-only run
    quality = (tableio.read_table(i.judge_quality) if getattr(i, "judge_quality", None)
               else tableio.empty_like("judge_quality"))  # analysis-only: no judge of its own was checked
    board = judge_board.judge_board(judgments, verdicts, texts, tableio.read_table(i.flips), quality, p.judges,
                                    p.judge_families, p.families, p.local_judges, alpha=p.bt_alpha,
                                    best_human=p.best_human, **p.bootstrap)
    chosen = judge_board.ensembles(judgments, verdicts, p.local_judges)
    tableio.write_tables([(board, snakemake.output.board, "judge_board"),
                          (chosen, snakemake.output.ensembles, "judge_ensembles")], provenance.collect(snakemake))
    out = snakemake.output
    for frame, path in ((board, out.board_csv), (chosen.drop(columns="judges"), out.ensembles_csv)):
        if p.label:
            frame = frame.assign(run=p.label)[["run", *frame.columns]]
        export.write_csv(frame, path)  # safe to open in a spreadsheet
    for r in board.itertuples():
        log.info("%-22s agreement %s, first-shown %s, longer %s, flips %s, QC %s, separability %s, $/1k %s; %s",
                 r.judge, *(f"{v:.3f}" if pd.notna(v) else "-" for v in (
                     r.agreement_majority, r.first_shown_rate, r.longer_rate, r.flip_rate, r.qc_accuracy,
                     r.separability, r.usd_per_1000)), r.note or "")
    pick = chosen[chosen["recommended"]]
    log.info("recommended ensemble: %s", pick["ensemble"].iloc[0] if len(pick) else
             f"none ({chosen['status'].iloc[0] if len(chosen) else 'no LLM judge'})")
