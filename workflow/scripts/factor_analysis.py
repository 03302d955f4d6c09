"""rule factor_analysis: per-response axis z-scores, EFA loadings, Cronbach's alpha, correlation with wins."""
from heart.stats import factors
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    ci = snakemake.params.ci
    judgments = tableio.read_table(snakemake.input.judgments)
    scores = factors.response_scores(judgments)
    result = factors.efa(scores, n_factors=snakemake.params.n_factors)
    alpha = factors.cronbach_alpha(scores, ci=ci)
    summary = result.summary().assign(cronbach_alpha=alpha["alpha"], alpha_ci_low=alpha.get("ci_low"),
                                      alpha_ci_high=alpha.get("ci_high"), alpha_status=alpha["status"])
    loadings = result.loadings.copy()
    if not loadings.empty:
        loadings = (loadings.rename_axis("variable").reset_index()
                    .melt(id_vars="variable", var_name="factor", value_name="loading"))
        loadings["communality"] = loadings["variable"].map(result.communalities)
    loadings = loadings.reindex(columns=["variable", "factor", "loading", "communality"])
    correlations = factors.correlation_with_wins(scores, result if result.status == "ok" else None, ci=ci)
    score_table = scores.reset_index(drop=True)
    tableio.write_tables([(score_table, snakemake.output.scores, "response_scores"),
                          (loadings, snakemake.output.loadings, "factor_loadings"),
                          (summary, snakemake.output.summary, "factor_summary"),
                          (correlations, snakemake.output.correlations, "factor_correlations")], job)
    log.info("EFA %s (%s); alpha %s; %d responses", result.status, result.note, alpha["status"], len(scores))
