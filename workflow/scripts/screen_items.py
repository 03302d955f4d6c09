"""rule screen_items: score every couplet, filter, cap, sample -> audit + regular items."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import io, screening  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    lexicon = screening.Lexicon.from_file(snakemake.input.lexicon)
    audit, items = screening.screen(
        io.read_table(snakemake.input.conversations),
        io.read_table(snakemake.input.turns),
        scorer=lexicon,
        settings=snakemake.params.screening,
        n=snakemake.params.n,
        seed=snakemake.params.seed,
    )
    provenance = {"lexicon_version": lexicon.version, "lexicon_sha256": io.sha256_file(snakemake.input.lexicon)}
    io.write_tables([(audit, snakemake.output.audit, "screening_audit"),
                     (items, snakemake.output.regular, "items")], provenance)
    log.info("%d couplets screened; reasons: %s", len(audit), audit["reason"].value_counts().to_dict())
    log.info("%d regular items from %d conversations", len(items), items["conversation_id"].nunique())
