"""Hand-made items and completions for the judging tests (SYNTHETIC)."""

from __future__ import annotations

import pandas as pd


def items_and_completions(n_items=4, humans=3):
    items = pd.DataFrame({"item_id": [f"i{k}" for k in range(n_items)], "conversation_id": range(n_items),
                          "subset": ["regular"] * (n_items - 1) + ["adversarial"],
                          "history": [[{"role": "seeker", "text": f"I feel lost {k}"}] for k in range(n_items)]})
    rows, n = [], iter(range(10**6))
    for item in items["item_id"]:
        for system, source in (("m1", "model"), ("m2", "model"), ("m3", "model"), ("original", "dataset")):
            rows.append({"item_id": item, "system": system, "source": source, "contributor_id": None,
                         "text": f"That sounds hard, reply number {next(n)}."})
        for c in range(humans):
            rows.append({"item_id": item, "system": "human", "source": "human", "contributor_id": f"c{c}",
                         "text": f"I am sorry, reply number {next(n)}."})
    return items, pd.DataFrame(rows)
