"""rule figure_rubric: Figure 1, the five HEART axes and their criteria, from the rubric file."""
from heart.common.runtime import logged
from heart.figures import rubric, style
from heart.judging.material import load_rubric

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    spec = load_rubric(snakemake.input.rubric)
    style.save(rubric.rubric_figure(spec), snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    log.info("Figure 1: %d axes, rubric version %s", len(spec["axes"]), spec.get("version"))
