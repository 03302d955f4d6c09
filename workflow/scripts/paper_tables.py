"""rule paper_tables: Table 1, the leaderboard, agreement, strategy diversity, factors and all tests (CSV + LaTeX)."""
from heart.stats import external
from heart.stats import best_human, figure4
from heart.common import tableio
from heart.tables import paper_tables as tables
from heart.common.runtime import logged

_WAYS = {"derived": "rated beside the pooled human by a second fit (derived)",
         "in_fit": "a system of the one fit in place of the pooled human (in_fit, the paper's)"}

with logged(snakemake.log[0], snakemake) as log:
    i, o = snakemake.input, snakemake.output
    ci, fig4 = snakemake.params.ci, snakemake.params.fig4
    source, columns = fig4["source"], fig4["columns"]
    models = external.load_models(i.models)
    names = external.display_names(models, fig4["display_names"])
    ratings, alternative = tableio.read_table(i.ratings), tableio.read_table(i.alternative)
    other = best_human.other_mode(snakemake.params.best_human)
    board = figure4.headline(ratings, source=source, columns=columns)  # Figure 4's numbers
    # analysis-only has no judge of its own (no quality checks) and no completions (no strategy tags)
    quality = tableio.read_table(i.judge_quality) if i.get("judge_quality") else None
    diversity = tableio.read_table(i.diversity) if i.get("diversity") else None
    made = {
        "table1": (tables.table1(board, models, tableio.read_table(i.external), names,
                                 paper=snakemake.params.paper_reference),
                   "HEART Elo, win rate and the Artificial Analysis Intelligence Index (paper Table 1); this run's "
                   f"Elo and win rate from {figure4.column_sources(ratings, source)['elo']}, all items"
                   + ("" if snakemake.params.paper_reference else " (the paper's own rows: config paper_reference)")),
        "leaderboard": (tables.leaderboard(board, ci, columns, names),
                        f"HEART leaderboard (paper Figure 4) with both {tables.ci_label(ci)}s. "
                        + figure4.describe(ratings, source, columns)),
        "leaderboard_alternative": (
            tables.leaderboard(figure4.headline(alternative, source=source, columns=columns), ci, columns, names),
            f"Alternative to Figure 4, not the paper's figure: Best Human {_WAYS[other]} "
            f"(this run's Figure 4 has it {_WAYS[snakemake.params.best_human]}; config stats.best_human). "
            + figure4.describe(alternative, source, columns)),
        "agreement": (tables.agreement(tableio.read_table(i.human_llm), tableio.read_table(i.cross_judge), ci,
                                       quality),
                      "Human-LLM and cross-judge agreement, and each LLM judge against known answers"),
        "judge_quality": (tables.judge_quality(quality) if quality is not None else tables.absent(
                              tables.JUDGE_QUALITY_COLUMNS, "no quality checks: analysis-only re-analyses judgments "
                              "made elsewhere, so no judge of this workflow answered known-answer checks"),
                          "Each LLM judge's known-answer quality checks (QC accuracy >= 70 % and flip rate <= 0.5 "
                          "are the targets) and its flip rates"),
        "strategy_diversity": (tables.strategy_diversity(diversity) if diversity is not None else tables.absent(
                                   tables.DIVERSITY_COLUMNS, "no strategy tags: analysis-only has judgments, not "
                                   "the completions that would be tagged"), "Strategy diversity"),
        "factors": (tables.factors(tableio.read_table(i.factor_summary), tableio.read_table(i.loadings)),
                    "Exploratory factor analysis of the HEART axes"),
        "tests": (tables.tests(tableio.read_table(i.tests)),
                  "Every test: raw and Benjamini-Hochberg adjusted p-values within families"),
    }
    for name, (table, caption) in made.items():
        tables.write(table, o[f"{name}_csv"], o[f"{name}_tex"], caption, snakemake.params.label)
        log.info("%s: %d rows", name, len(table))
