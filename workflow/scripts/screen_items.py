"""rule screen_items: score every couplet, filter, cap, sample -> audit + regular items."""
from heart.items import item_table as items_mod
from heart.common import provenance, tableio
from heart.items import screening
from heart.common.atomic import sha256_file
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    lexicon = screening.Lexicon.from_file(snakemake.input.lexicon)
    audit, items = screening.screen(
        tableio.read_table(snakemake.input.conversations),
        tableio.read_table(snakemake.input.turns),
        scorer=lexicon,
        settings=snakemake.params.screening,
        n=snakemake.params.n,
        seed=snakemake.params.seed,
    )
    lexicon_record = {"lexicon_version": lexicon.version, "lexicon_sha256": sha256_file(snakemake.input.lexicon)}
    tableio.write_tables([(audit, snakemake.output.audit, "screening_audit"),
                          (items_mod.complete(items), snakemake.output.regular, "items")], {**job, **lexicon_record})
    log.info("%d couplets screened; reasons: %s", len(audit), audit["reason"].value_counts().to_dict())
    log.info("%d regular items from %d conversations", len(items), items["conversation_id"].nunique())
