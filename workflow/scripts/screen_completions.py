"""rule screen_completions: every completion screened for safety by the offline lexicon (HEART paper section 6)."""
import pandas as pd

from heart.common import export, provenance, tableio
from heart.common.atomic import sha256_file
from heart.common.runtime import logged
from heart.completions import moderation, safety
from heart.llm.cache import ResponseCache
from heart.llm.models import ModelSpec

with logged(snakemake.log[0], snakemake) as log:
    lexicon = safety.load_lexicon(snakemake.input.lexicon)
    completions = pd.concat([tableio.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    table = safety.screen(completions, lexicon)
    if snakemake.params.moderation:  # a provider's moderation endpoint beside the lexicon (completions.moderation)
        cfg = dict(snakemake.params.moderation)
        spec = ModelSpec.from_config(cfg.pop("name"), cfg)
        checked = moderation.screen(completions, spec, ResponseCache(snakemake.params.cache_dir))
        table = pd.concat([table, checked], ignore_index=True)
        log.info("moderation %s: %d rows, %d failed calls", spec.model, len(checked),
                 int((checked["status"] == "failed").sum()))
    tableio.write_table(table, snakemake.output.table, "safety",
                        {**provenance.collect(snakemake), "lexicon_version": lexicon.version,
                         "lexicon_sha256": sha256_file(snakemake.input.lexicon)})
    report = safety.per_system(table)
    if snakemake.params.label:
        report = report.assign(run=snakemake.params.label)[["run", *report.columns]]
    export.write_csv(report, snakemake.output.csv)  # counts and category names only: no reply text
    for row in report.itertuples():  # counts only in the log: no reply text
        log.info("%-24s %4d completions, %3d flagged (%s)", row.system, row.completions, row.flagged, row.categories)
