"""rule make_adversarial_items: rewrite seeker turns of chosen windows -> adversarial items + attempts log."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from heart import adversarial, completions, io, llm, screening  # noqa: E402
from heart.runtime import logged  # noqa: E402

with logged(snakemake.log[0], snakemake) as log:
    engine = llm.Engine([snakemake.params.model], snakemake.params.llm)
    spec = next(iter(engine.specs.values()))
    prompt, version = completions.template(snakemake.input.prompt)
    items, attempts = adversarial.build(
        io.read_table(snakemake.input.conversations), io.read_table(snakemake.input.turns),
        io.read_table(snakemake.input.regular), lambda reqs: engine.run(reqs, desc="adversarial rewrites"),
        snakemake.params.settings, prompt, version, spec.name, spec.params,
        lexicon=screening.Lexicon.from_file(snakemake.input.lexicon), log=log,
    )
    if len(items) < snakemake.params.settings["n"]:
        log.warning("%d of %d adversarial items passed validation; see %s",
                    len(items), snakemake.params.settings["n"], snakemake.output.attempts)
    io.write_tables([(items if len(items) else io.empty_like("items"), snakemake.output.adversarial, "items"),
                     (attempts if len(attempts) else io.empty_like("adversarial_attempts"),
                      snakemake.output.attempts, "adversarial_attempts")],
                    {"prompt_version": version, "model": spec.model})
    log.info("%d adversarial items; profiles %s", len(items),
             items["profile"].value_counts().to_dict() if len(items) else {})
