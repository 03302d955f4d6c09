"""rule preview_llm_calls: how many calls each LLM stage would make and roughly what they cost."""
from pathlib import Path

import pandas as pd

from heart.items import adversarial, screening
from heart import completions
from heart import judging
from heart.llm.engine import Engine
from heart.llm.preview import preview, preview_summary
from heart.llm.request import template
from heart import tagging
from heart.judging import pairs
from heart.common import provenance, tableio
from heart.common.runtime import logged, tell

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    engine = Engine(snakemake.params.models.values(), snakemake.params.llm)
    specs = engine.specs
    conversations, turns = tableio.read_table(snakemake.input.conversations), tableio.read_table(snakemake.input.turns)
    regular = tableio.read_table(snakemake.input.regular)
    scope = "all items" if regular["subset"].eq("adversarial").any() else "regular items"
    settings = snakemake.params.adversarial
    stages = {}
    if settings["n"] > 0:
        prompt, version = template(snakemake.input.adversarial_prompt)
        stages["adversarial rewrites (first attempt)"] = adversarial.first_attempt_requests(
            conversations, turns, regular, settings, prompt, version, settings["model"],
            specs[settings["model"]].params, lexicon=screening.Lexicon.from_file(snakemake.input.lexicon))
    # completions are previewed on the items that exist before any call: a new study's regular items (its
    # adversarial ones exist only after rewriting), or all the released ones
    for system, cfg in snakemake.params.systems.items():
        path = next(p for p in snakemake.input.prompts if Path(p).stem == cfg["prompt"])
        prompt, version = template(path)
        stages[f"completions {system} ({scope})"] = completions.completion_requests(
            regular, system, cfg["model"], prompt, version)
    # judging and tagging run on completions that do not exist yet: every system's reply is
    # stood in for by the dataset's reply, or the last seeker turn where there is none (same count of
    # calls, similar prompt length), and the human writers' by as many stand-ins per context as the
    # protocol asks (human_completions.per_context; an upper bound where fewer are collected)
    # (imported systems are judged and tagged too; "original" exists only where the data has a reply)
    per_context = snakemake.params.human_per_context
    stand_ins = pd.DataFrame([{"item_id": r.item_id, "system": s, "source": "dataset" if s == "original" else "model",
                               "contributor_id": None,
                               "text": r.original_reply if isinstance(r.original_reply, str) else r.history[-1]["text"]}
                              for r in regular.itertuples()
                              for s in [*snakemake.params.systems, *snakemake.params.imported,
                                        *(["original"] if isinstance(r.original_reply, str) else [])]]
                             + [{"item_id": r.item_id, "system": "human", "source": "human", "contributor_id": f"w{k}",
                                 "text": f"({k}) " + r.history[-1]["text"]}
                                for r in regular.itertuples() for k in range(per_context)])
    if len(regular):
        design = pairs.design(stand_ins, regular, seed=snakemake.params.judging["seed"],
                              sample=snakemake.params.judging["pair_sample"])
        orders = "both orders" if snakemake.params.judging["both_orders"] else "one order"
        log.info("judging design: %d pairs (%s), %s; %d human completions per context assumed", len(design),
                 design["kind"].value_counts().to_dict(), orders, per_context)
        rubric = judging.load_rubric(snakemake.input.rubric)
        for name, cfg in snakemake.params.judging["judges"].items():
            path = next(p for p in snakemake.input.judge_prompts if Path(p).stem == cfg["prompt"])
            text, version = template(path)
            keep = judging.eligible(design, specs[cfg["model"]].family, snakemake.params.families,
                                    snakemake.params.judging["exclude_own_family"])
            stages[f"judging {name} ({scope}, {len(design)} pairs, {orders})"] = judging.judge_requests(
                cfg["answer"], design[keep], regular, pairs.completion_text(stand_ins), cfg["model"], text,
                rubric, version, snakemake.params.judging["both_orders"], cfg["params"],
                snakemake.params.judging["rationale_max_chars"], cfg["axes"], cfg["context_turns"])
        taxonomy = tagging.load_taxonomy(snakemake.input.taxonomy)
        for name, cfg in snakemake.params.tagging["taggers"].items():
            path = next(p for p in snakemake.input.tagging_prompts if Path(p).stem == cfg["prompt"])
            text, version = template(path)
            stages[f"tagging {name} ({scope}, estimated)"] = tagging.requests(
                stand_ins, cfg["model"], tagging.system_prompt(text, taxonomy), version,
                tagging.answer_schema(cfg["answer"], taxonomy), params=cfg["params"])
    table = preview(specs, stages, engine.cache)
    tableio.write_table(table, snakemake.output[0], "llm_preview", job)
    text = table.to_string(index=False)
    summary = preview_summary(table)
    log.info("LLM call preview:\n%s\n%s", text, summary)
    tell(f"\nLLM call preview\n{text}\n{summary}\n", snakemake)
