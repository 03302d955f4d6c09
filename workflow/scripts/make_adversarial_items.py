"""rule make_adversarial_items: rewrite seeker turns of chosen windows -> adversarial items + attempts log."""
from heart.items import adversarial, screening
from heart.llm.engine import Engine
from heart.llm.request import template
from heart.common import provenance, tableio
from heart.items import item_table as items_mod
from heart.common.runtime import logged

with logged(snakemake.log[0], snakemake) as log:
    job = provenance.collect(snakemake)
    engine = Engine.of_job(snakemake, [snakemake.params.model])
    spec = next(iter(engine.specs.values()))
    prompt, version = template(snakemake.input.prompt)
    items, attempts = adversarial.build(
        tableio.read_table(snakemake.input.conversations), tableio.read_table(snakemake.input.turns),
        tableio.read_table(snakemake.input.regular), lambda reqs: engine.run(reqs, desc="adversarial rewrites"),
        snakemake.params.settings, prompt, version, spec.name, spec.params,
        lexicon=screening.Lexicon.from_file(snakemake.input.lexicon), log=log,
    )
    if len(items) < snakemake.params.settings["n"]:
        log.warning("%d of %d adversarial items passed validation and no window is left to replace the others "
                    "(or adversarial_items.max_windows were tried); "
                    "see %s", len(items), snakemake.params.settings["n"], snakemake.output.attempts)
    tableio.write_tables([(items_mod.complete(items) if len(items) else tableio.empty_like("items"),
                           snakemake.output.adversarial, "items"),
                          (attempts if len(attempts) else tableio.empty_like("adversarial_attempts"),
                           snakemake.output.attempts, "adversarial_attempts")],
                         {**job, "prompt_version": version, "model": spec.model})
    log.info("%d adversarial items; profiles %s; %d attempts, %d windows dropped", len(items),
             items["profile"].value_counts().to_dict() if len(items) else {}, len(attempts),
             int((attempts["outcome"] == "dropped").sum()) if len(attempts) else 0)
