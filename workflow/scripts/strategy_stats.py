"""rule strategy_stats: strategy usage, diversity and human–model differences per tagger."""
import pandas as pd

from heart.items import item_table as items_mod
from heart.common import provenance, tableio
from heart.stats import strategy_stats
from heart.tagging.taxonomy import load_taxonomy, strategy_keys
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    tags = [tableio.read_table(p) for p in snakemake.input.tags]  # no tagger configured: no tags, every row "absent"
    tags = pd.concat(tags, ignore_index=True) if tags else tableio.empty_like("strategy_tags")
    strategies = strategy_keys(load_taxonomy(snakemake.input.taxonomy))
    systems = tableio.read_table(snakemake.input.systems)
    sources = dict(zip(systems["system"], systems["source"]))
    families = snakemake.params.families
    items = tableio.read_table(snakemake.input.item_table)
    clusters = items_mod.clusters(items).to_dict()
    usage = strategy_stats.usage(tags, families=families, sources=sources, strategies=strategies)
    diversity = strategy_stats.diversity(tags, families=families, sources=sources, strategies=strategies)
    differences = strategy_stats.human_vs_model(tags, sources=sources, clusters=clusters,
                                                **snakemake.params.bootstrap)
    tableio.write_tables([(usage, snakemake.output.usage, "strategy_usage"),
                          (diversity, snakemake.output.diversity, "strategy_diversity"),
                          (differences, snakemake.output.differences, "strategy_differences")], job)
    log.info("usage: %d rows; diversity: %d rows; human vs model: %s", len(usage), len(diversity),
             dict(differences["status"].value_counts()))
