"""rule import_judgments: pairwise judgments made elsewhere -> pairs, judgments, verdicts, flips, sources."""
import pandas as pd

from heart.judging import combine
from heart.judging import judgment_import
from heart.common import provenance, tableio
from heart.common.atomic import sha256_file
from heart.common.runtime import logged
from heart.common.vocabulary import AXES

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    path = snakemake.input[0]
    imported = judgment_import.convert(path, strength_map=snakemake.params.strength_map)
    sources = imported.source_rows(path)
    raters = imported.human["rater_id"].nunique()
    sources.append({"judge": "human", "judge_kind": "human", "status": "present" if raters else "absent",
                    "n_pairs": int(imported.human["pair_id"].nunique()), "n_excluded_family": 0, "n_unparsed": 0,
                    "n_inconsistent": 0, "note": f"{raters} raters imported from {path}" if raters
                    else f"absent: {path} holds no human judgments"})
    tableio.write_tables([(imported.pairs, snakemake.output.pairs, "pairs"),
                          (imported.judgments, snakemake.output.judgments, "judgments"),
                          (imported.verdicts, snakemake.output.verdicts, "judge_verdicts"),
                          (combine.flip_rates(imported.combined, AXES), snakemake.output.flips,
                           "flip_rates"),
                          (pd.DataFrame(sources), snakemake.output.sources, "judge_sources")],
                         {**job, "imported_path": path, "imported_sha256": sha256_file(path)})
    log.info("%s: %d pairs, %d judgments (%s)", path, len(imported.pairs), len(imported.judgments),
             imported.judgments["judge_kind"].value_counts().to_dict())
