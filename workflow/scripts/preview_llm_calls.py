"""rule preview_llm_calls: how many calls each LLM stage would make and roughly what they cost."""
from pathlib import Path

import yaml

from heart.common import provenance, tableio
from heart.common.runtime import logged, tell
from heart.completions import generate
from heart.items import adversarial, screening
from heart.judging import judge_qc, material, pairs
from heart.judging.judge import Judge
from heart.llm.engine import Engine
from heart.llm.preview import preview, preview_summary, scenario_summary
from heart.llm.request import template
from heart.stats import adaptive
from heart.tagging.tagger import Tagger
from heart.tagging.taxonomy import load_taxonomy


def prompt(paths, name):
    """The template of prompt ``name`` among the rule's prompt inputs: (text, version)."""
    return template(next(p for p in paths if Path(p).stem == name))


with logged(snakemake.log[0], snakemake) as log:
    job, p = provenance.collect(snakemake), snakemake.params
    engine = Engine.of_job(snakemake, p.models.values())
    conversations, turns = tableio.read_table(snakemake.input.conversations), tableio.read_table(snakemake.input.turns)
    regular = tableio.read_table(snakemake.input.regular)
    scope = "all items" if regular["subset"].eq("adversarial").any() else "regular items"
    stages, scenarios = {}, {}
    if p.adversarial["n"] > 0:
        text, version = template(snakemake.input.adversarial_prompt)
        model = p.adversarial["model"]
        stages["adversarial rewrites (first attempt)"] = adversarial.first_attempt_requests(
            conversations, turns, regular, p.adversarial, text, version, model, engine.specs[model].params,
            lexicon=screening.Lexicon.from_file(snakemake.input.lexicon))
    # completions are previewed on the items that exist before any call: a new study's regular items (its
    # adversarial ones exist only after rewriting), or all the released ones
    for system, cfg in p.systems.items():
        text, version = prompt(snakemake.input.prompts, cfg["prompt"])
        stages[f"completions {system} ({scope})"] = generate.completion_requests(regular, system, cfg["model"], text,
                                                                                 version)
    # judging and tagging run on completions that do not exist yet: stand-ins of the same count and length
    stand_ins = generate.stand_ins(regular, [*p.systems, *p.imported], p.human_per_context)
    if len(regular):
        design = pairs.design(stand_ins, regular, seed=p.pair_design["seed"], sample=p.pair_design["sample"])
        texts = pairs.completion_text(stand_ins)
        orders = "both orders" if p.both_orders else "one order"
        log.info("judging design: %d pairs (%s), %s; %d human completions per context assumed", len(design),
                 design["kind"].value_counts().to_dict(), orders, p.human_per_context)
        rubric = material.load_rubric(snakemake.input.rubric)
        # the adaptive design (judging.adaptive): this run's judging is its worst case, shown beside the fixed
        # design and the SIMULATED expectation (rows with a scenario: compared, not summed)
        designs = {None: design}
        if p.adaptive["enabled"]:
            expected = yaml.safe_load(Path(snakemake.input.adaptive_expected).read_text())
            picked = adaptive.cost_scenarios(design, p.adaptive, expected, p.pair_design["seed"])
            designs = {None: picked["worst case"], "fixed design": design,
                       "adaptive, expected (SIMULATED)": picked["expected"]}
        for judge in map(Judge.from_params, p.judges):
            text, version = prompt(snakemake.input.judge_prompts, judge.prompt)
            for label, chosen in designs.items():
                keep = material.eligible(chosen, engine.specs[judge.model].family, p.families, p.exclude_own_family)
                what = ("adaptive, worst case: " if p.adaptive["enabled"] and label is None else
                        f"{label}: " if label else "")
                name = f"judging {judge.name} ({what}{scope}, {len(chosen)} of {len(design)} pairs, {orders})"
                stages[name] = judge.requests(chosen[keep], regular, texts, text, rubric, version, p.both_orders)
                if label:
                    scenarios[name] = label
        # the known-answer quality checks every judge also judges, in both orders (rule judge_qc), on the items
        if p.qc["kinds"]:
            qc_design, qc_texts = judge_qc.design(regular, judge_qc.load_replies(snakemake.input.qc_replies),
                                                  p.qc["seed"], p.qc["kinds"])
            for judge in (Judge.from_params(j).for_quality_checks() for j in p.judges):
                text, version = prompt(snakemake.input.judge_prompts, judge.prompt)
                stages[f"quality checks {judge.name} ({len(qc_design)} pairs, both orders)"] = judge.requests(
                    qc_design, regular, qc_texts, text, rubric, version, both_orders=True)
        taxonomy = load_taxonomy(snakemake.input.taxonomy)
        for tagger in map(Tagger.from_params, p.taggers):
            text, version = prompt(snakemake.input.tagging_prompts, tagger.prompt)
            stages[f"tagging {tagger.name} ({scope}, estimated)"] = tagger.requests(stand_ins, text, taxonomy, version)
    table = preview(engine.specs, stages, engine.cache, scenarios)
    tableio.write_table(table, snakemake.output[0], "llm_preview", job)
    text = table.drop(columns="scenario").to_string(index=False)
    summary = "\n".join(filter(None, [preview_summary(table), scenario_summary(table)]))
    log.info("LLM call preview:\n%s\n%s", text, summary)
    tell(f"\nLLM call preview\n{text}\n{summary}\n", snakemake)
