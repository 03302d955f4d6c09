"""rule export_annotations: the annotation store's answers as the human import files, and its audit log."""
import contextlib

from heart.annotation import audit as store_audit, db, export
from heart.common import tableio
from heart.common.runtime import logged
from heart.tagging.taxonomy import load_taxonomy, strategy_keys

with logged(snakemake.log[0], snakemake) as log:
    keys = strategy_keys(load_taxonomy(snakemake.input.taxonomy))
    out = snakemake.output
    summary = export.export(snakemake.input.store, out.completions, out.judgments, out.labels, keys,
                            reviews_path=out.reviews)
    for name, info in summary.items():
        log.info("%s: %s", name, info)
    with contextlib.closing(db.connect(snakemake.input.store)) as conn:
        audit = store_audit.audit_frame(conn)
    tableio.write_table(audit, out.audit, "annotation_audit")
    log.info("audit log: %d events (%s)", len(audit), audit["event"].value_counts().to_dict())
