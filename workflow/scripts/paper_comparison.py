"""rule paper_comparison: every headline number of the HEART paper beside this run's (CSV, LaTeX, Parquet)."""

from heart.stats import external
from heart.stats import figure4
from heart.tables import paper_comparison, paper_tables as tables
from heart.common import provenance, tableio
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    i, o = snakemake.input, snakemake.output
    spec = paper_comparison.load(i.spec)
    named = {"agreement_human_llm": i.human_llm, "agreement_cross_judge": i.cross_judge,
             "agreement_inter_human": i.inter_human, "preference_shares": i.preference_shares,
             "rationale_concordance": i.rationale_concordance, "strategy_diversity": i.get("diversity"),
             "external_correlations": i.external}
    # analysis-only has no completions: no strategy tables, no systems table (those numbers say so)
    found = {name: tableio.read_table(path) for name, path in named.items() if path}
    # one tagger's spot-check F1 (the first configured), when there is a tagger at all
    f1 = [tableio.read_table(p) for p in (i.get("strategy_f1") or [])]
    if f1:
        found["strategy_f1"] = f1[0]
    fig4 = snakemake.params.fig4
    source = fig4["source"]
    headline = figure4.headline(tableio.read_table(i.ratings), source=source, columns=fig4["columns"])
    judgments = tableio.read_table(i.judgments)
    models = external.load_models(i.models)
    systems = tableio.read_table(i.systems) if i.get("systems") else None
    rated = set(headline.loc[headline["status"].eq("ok"), "system"])
    met = paper_comparison.available(
        # systems.parquet lists "human" even when absent: only present systems count
        # analysis-only (no systems table): the sources the judged pairs name (kind "human-model" ...)
        judgments, completions_sources=(sorted({s for k in judgments["kind"].dropna() for s in str(k).split("-")})
                                        if systems is None else
                                        systems.loc[systems["status"].eq("present"), "source"].tolist()),
        spot_checks=bool(f1) and f1[0]["status"].eq("present").any(),
        paper_models=len(rated & set(models["system"].dropna())), tags="strategy_diversity" in found,
        texts=systems is not None)
    log.info("what this run has for the paper's numbers: %s", met)
    table = paper_comparison.compare(spec, found, models, headline, source, met)
    tableio.write_table(table, o.parquet, "paper_comparison", job)
    ci = snakemake.params.ci
    tables.write(paper_comparison.to_text(table), o.csv, o.tex,
                 f"The HEART paper's headline numbers beside this run's ({tables.ci_label(ci)}s)",
                 snakemake.params.label)
    log.info("paper comparison: %d numbers; status %s", len(table), table["status"].value_counts().to_dict())
