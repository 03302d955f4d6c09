"""rule release_items: the paper's released contexts as the study's regular and adversarial items."""
from heart.common import provenance, tableio
from heart.data import release
from heart.items import released
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    turns = tableio.read_table(snakemake.input.turns)
    mapping = tableio.read_table(snakemake.input.mapping)
    by_subset = {s: mapping[mapping["release_key"].str.startswith(f"{s}:")].reset_index(drop=True)
                 for s in release.SUBSETS}
    regular = released.regular_items(release.read(snakemake.input.regular, "regular"), by_subset["regular"], turns)
    adversarial = released.adversarial_items(release.read(snakemake.input.adversarial, "adversarial"),
                                            by_subset["adversarial"])
    tableio.write_tables([(regular, snakemake.output.regular, "items"),
                          (adversarial, snakemake.output.adversarial, "items")], job)
    for name, table in (("regular", regular), ("adversarial", adversarial)):
        flags = table["flags"].explode().dropna().value_counts().to_dict()
        log.info("%d %s items as released; flags: %s", len(table), name, flags)
