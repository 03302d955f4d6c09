"""rule rubric_table: Table 2, the HEART rubric summary, from the rubric file (CSV + LaTeX)."""
from heart.common.runtime import logged
from heart.judging.material import load_rubric
from heart.tables import paper_tables as tables

with logged(snakemake.log[0], snakemake) as log:
    rubric = load_rubric(snakemake.input.rubric)
    table = tables.rubric(rubric)
    tables.write(table, snakemake.output.csv, snakemake.output.tex,
                 "HEART rubric summary (paper Table 2): each axis's description and contrasting examples, as the "
                 f"judges are given them (rubric version {rubric.get('version', '?')})", snakemake.params.label)
    log.info("Table 2: %d axes", len(table))
