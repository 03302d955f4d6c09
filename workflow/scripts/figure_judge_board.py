"""rule figure_judge_board: the judge leaderboard (heart/figures/judge_board.py)."""
from heart.common import tableio
from heart.common.runtime import logged
from heart.figures import judge_board, style
from heart.judging import judge_qc

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    board = tableio.read_table(snakemake.input.board)
    fig = judge_board.judge_board_figure(board, tableio.read_table(snakemake.input.ensembles))
    style.warn(fig, judge_qc.quality_warning(snakemake.input))
    style.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("judge leaderboard: %d judges and the ensemble", int((board["kind"] == "judge").sum()))
