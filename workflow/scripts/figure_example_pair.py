"""rule figure_example_pair: one judged pair as in the paper's Figures 2-3 (HTML and PNG/PDF)."""
from pathlib import Path

import pandas as pd

from heart.completions import safety_review
from heart.judging import pairs
from heart.common import tableio
from heart.common.atomic import atomic_path
from heart.figures import example_pair, style
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log, style.applied(snakemake.input.style, snakemake.params.label) as dpi:
    judgments = tableio.read_table(snakemake.input.judgments)
    items = tableio.read_table(snakemake.input.item_table).set_index("item_id")
    comp = pd.concat([tableio.read_table(p) for p in snakemake.input.completions], ignore_index=True)
    text = pairs.completion_text(comp)
    flags = tableio.read_table(snakemake.input.safety_flags)
    flagged = set(safety_review.completion_keys(flags["item_id"], flags["system"], flags["contributor_id"]))
    # nor a reply without its text here (a bundle's withheld completion)
    sides = {k for x in "ab" for k in safety_review.completion_keys(
        judgments["item_id"], judgments[f"system_{x}"], judgments[f"contributor_{x}"])}
    untold = {k for k in sides if (k[0], k[1], k[2] or None) not in text}
    pair = example_pair.pick_example(judgments, flagged | untold)
    if pair is None:
        title = "No judged pair yet" if not flagged else "No judged pair without a reply the safety screen flagged"
        html, fig = example_pair.example_pair([], "", "", judgments.iloc[:0], title=title)
        log.info("no pair with a verdict (%d flagged completions are never shown): the example says so", len(flagged))
    else:
        rows = judgments[judgments["pair_id"] == pair]
        p = rows.iloc[0]
        a, b = ({"system": system, "text": text[(p.item_id, system, None if pd.isna(who) else who)]}
                for system, who in ((p.system_a, p.contributor_a), (p.system_b, p.contributor_b)))
        html, fig = example_pair.example_pair(list(items.at[p.item_id, "history"]), a, b, rows)
        log.info("example pair %s (item %s): %d judgments", pair, p.item_id, len(rows))
    style.save(fig, snakemake.output.png, snakemake.output.pdf, dpi=dpi)
    with atomic_path(snakemake.output.html) as tmp:
        Path(tmp).write_text('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
                             "<title>HEART: an example judged pair</title></head>\n<body>\n"
                             + (f"<p><strong>{snakemake.params.label}</strong>: made by heart.simulation (the provider "
                                "simulator, simulated people), not by models or people.</p>\n"
                                if snakemake.params.label else "")
                             + f"{html}\n</body></html>\n", encoding="utf-8")
