"""rule map_release: the paper's released contexts, checked and mapped onto ESConv."""
import pandas as pd

from heart.common import provenance, tableio
from heart.data import release
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    conversations = tableio.read_table(snakemake.input.conversations)
    turns = tableio.read_table(snakemake.input.turns)
    paths = {s: snakemake.input[s] for s in release.SUBSETS}
    records = {s: release.read(paths[s], s) for s in release.SUBSETS}
    mapping = pd.concat([release.map_regular(records["regular"], conversations, turns),
                         release.map_adversarial(records["adversarial"], conversations, turns)], ignore_index=True)
    source = release.source_table(paths, records, snakemake.params.upstream)
    read = {f"release_{s}_sha256": source.set_index("subset").at[s, "sha256"] for s in release.SUBSETS}
    tableio.write_tables([(mapping, snakemake.output.mapping, "release_mapping"),
                          (source, snakemake.output.source, "release_source")], {**job, **read})
    for s in source.itertuples():
        log.info("%s: %d records, sha256 %s%s", s.path, s.n_records, s.sha256,
                 "" if s.matches_upstream is None else " (matches the pin)" if s.matches_upstream
                 else " (DIFFERS from the pinned sha256)")
    for (subset, quality), n in mapping.groupby([mapping["release_key"].str.split(":").str[0],
                                                 "quality"]).size().items():
        log.info("%s records, %s: %d", subset, quality, n)
    for row in mapping[mapping["quality"].eq("damaged")].itertuples():
        log.warning("%s (conversation %d) is damaged: %s", row.release_key, row.conversation_id, row.detail)
