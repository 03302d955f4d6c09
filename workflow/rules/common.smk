# Helpers only: config validation, input functions. No rules here.
import os
import re
import sys
from pathlib import Path

# How `import heart` resolves, the one mechanism: workflow/ (the package's parent) goes on the path of
# this Snakefile and, through PYTHONPATH, of every job it starts (scripts, conda envs, cluster jobs).
HEART_PATH = str(Path(workflow.basedir) / "workflow")
sys.path.insert(0, HEART_PATH)
# (a job that parses this file again, as a cluster job does, finds it there already and adds nothing)
_others = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != HEART_PATH]
os.environ.update(PYTHONPATH=os.pathsep.join([HEART_PATH, *_others]))

import pyarrow.parquet as pq  # noqa: E402

from heart.llm import batch_protocols, shards  # noqa: E402
from heart.llm.models import answering  # noqa: E402
from heart.common.config import StartupError, paper_reference, start as start_config  # noqa: E402
from heart.judging.judge import Judge  # noqa: E402
from heart.judging import kinds as judge_kinds  # noqa: E402
from heart.tagging.tagger import Tagger  # noqa: E402
from snakemake.io import strip_wildcard_constraints  # noqa: E402

# The run's config (heart.common.config.start): from a bundle, make paper ARTIFACTS=<folder> (config/artifacts.yaml),
# the bundle's study settings with every system imported from its completions and its human files, --config
# overrides on top; validated against the schema (defaults filled, judge kinds and batch protocols known);
# no imported system taking a configured name, every prompt template there.
PROMPTS = Path(workflow.basedir) / "workflow" / "resources" / "prompts"


def bundle_config(path):
    """A bundle's run config (heart.bundle.load, imported only for a run from a bundle: it brings scipy)."""
    from heart.bundle import load

    try:
        return load.run_config(path)
    except load.BundleError as exc:
        raise StartupError(str(exc)) from None


def bundle_parts(path):
    """Each part of a bundle -> [the file it is read from] ([]: none) (heart.bundle.load.parts)."""
    from heart.bundle import load

    return load.parts(path)


try:
    start_config(
        config,
        dict(workflow.config_settings.config),
        PROMPTS,
        bundle_config=bundle_config,
        checks=[judge_kinds.config_problems, batch_protocols.config_problems],
    )
except StartupError as exc:
    raise WorkflowError(str(exc)) from None
ARTIFACTS = (config.get("artifacts") or {}).get("path")
# the file each part of a bundle is read from: the workflow's own table or the public format (heart.bundle.load)
BUNDLE = bundle_parts(ARTIFACTS) if ARTIFACTS else {}


def esconv_input():
    """The ESConv file to ingest: the configured local copy, else the download target."""
    local = config["esconv"]["local_copy"]
    if not local:
        return "resources/esconv/ESConv.json"
    if not Path(local).is_file():
        raise WorkflowError(
            f"config esconv.local_copy points to {local!r}, which is not a file "
            f"(working directory {Path.cwd()}). Give the path of an ESConv.json, or set "
            "esconv.local_copy to null to download it."
        )
    return local


def release_inputs(wildcards=None):
    """The paper's two released files: in the configured local folder, else the download targets."""
    folder = config["release"]["local_copy"]
    if not folder:
        return {s: f"resources/heart-release/dialogues_{s}.json" for s in ("regular", "adversarial")}
    files = {s: Path(folder) / f"dialogues_{s}.json" for s in ("regular", "adversarial")}
    for subset, path in files.items():
        if not path.is_file():
            raise WorkflowError(
                f"config release.local_copy is {folder!r}, but {path} is not a file (working directory "
                f"{Path.cwd()}). Give the folder holding dialogues_regular.json and dialogues_adversarial.json, "
                "or set release.local_copy to null to download them."
            )
    return {s: str(p) for s, p in files.items()}


# the paper's released items (items.source: release), else a new study's screened and rewritten ones
RELEASED_ITEMS = config["items"]["source"] == "release"
# config analysis_only: only the statistics and figures, on a table of judgments made elsewhere
ANALYSIS_ONLY = "analysis_only" in config
# the HEART paper's own numbers beside this run's (config paper_reference; off for another study's votes)
PAPER_REFERENCE = paper_reference(config)
# model metadata (Table 1, the external correlations): the paper's, or an analysis-only run's or a bundle's own
MODELS_CSV = (
    (ANALYSIS_ONLY and config["analysis_only"].get("models"))
    or (ARTIFACTS and BUNDLE["models"] and BUNDLE["models"][0])
    or workflow.source_path("../resources/external/models.csv")
)
# a rehearsal against heart.simulation.simulator (config/rehearsal.yaml): its figures, tables and report say so
RUN_LABEL = "SIMULATED" if config.get("simulated") else None
MODEL_SYSTEMS = sorted(config["systems"])  # called by this workflow
IMPORTED_SYSTEMS = sorted(config["imported_systems"])  # completions made elsewhere, read from files
# the completions whose measured TTFT Figure 5 and the correlations may use (none in an analysis-only run)
TTFT_COMPLETIONS = expand(
    "results/completions/{system}.parquet", system=[] if ANALYSIS_ONLY else MODEL_SYSTEMS + IMPORTED_SYSTEMS
)
# the systems with completion tables (an analysis-only run has none: only judgments)
SYSTEMS = [] if ANALYSIS_ONLY else MODEL_SYSTEMS + IMPORTED_SYSTEMS + ["original", "human"]
# every system's completion table: the input of whatever reads replies (pairs, judging, tagging, statistics)
COMPLETIONS = expand("results/completions/{system}.parquet", system=SYSTEMS)

# LLM stages run in shards (results/<stage>/shards/<name>/<k>of<n>.parquet), merged by a local rule
SHARDS = shards.names(config["llm"]["shards"])
# the engine's settings as the LLM scripts get them in params (the shard count is in their paths instead; how
# calls are made -- the cache's folder, back-off, batch polling -- a job reads from the config: changing it
# reruns nothing, heart.llm.models.CALLING)
ENGINE = {k: v for k, v in answering(config["llm"], "llm").items() if k != "shards"}

JUDGES = sorted(config["judging"]["judges"])
# the adaptive pair design (config judging.adaptive, off by default): a judge's shards are then its rounds
ADAPTIVE = bool(config["judging"]["adaptive"]["enabled"] and not (ANALYSIS_ONLY or ARTIFACTS))
TAGGERS = sorted(config["tagging"]["taggers"])


# the model whose moderation endpoint screens the completions beside the offline lexicon (none from a bundle or
# in an analysis-only run: nothing is called there, and there are no completions)
MODERATION = None if ARTIFACTS or ANALYSIS_ONLY else config["completions"]["moderation"]


def used_models():
    """Models that some stage calls: systems', the adversarial rewriter's, judges', taggers' (none from a
    bundle: its verdicts and tags are read, not made)."""
    if ARTIFACTS:
        return []
    names = {s["model"] for s in config["systems"].values()}
    names |= {j["model"] for j in config["judging"]["judges"].values()}
    names |= {t["model"] for t in config["tagging"]["taggers"].values()}
    if not (RELEASED_ITEMS or ANALYSIS_ONLY) and config["adversarial_items"]["n"] > 0:
        names.add(config["adversarial_items"]["model"])
    if MODERATION:
        names.add(MODERATION)
    return sorted(names)


def required_keys():
    """Environment variables holding API keys for the models in use (none in replay mode)."""
    if config["llm"]["replay"]:
        return []
    keys = {config["models"][m]["api_key_env"] for m in used_models()}
    return sorted(k for k in keys if k)


def model_params(name):
    """Config entry of model ``name`` as passed to scripts: what its answers depend on (how it is called --
    concurrency, rates, timeout, retries, the key's variable -- a job reads from the config: changing it reruns
    nothing, heart.llm.models.CALLING)."""
    return {"name": name, **answering(config["models"][name], "models")}


def uses_local_model(name):
    """1 if model ``name`` is served locally (resource local_llm: one such job at a time)."""
    return int(bool(config["models"][name]["local_gguf"]))


def model_threads(name):
    """The threads of a job on model ``name``: llm.local_threads for a local model (its llama.cpp runs on as many,
    so Snakemake runs nothing on those cores beside it), else 1 (a provider's calls wait on the network)."""
    return config["llm"]["local_threads"] if uses_local_model(name) else 1


def judge_of(name):
    """LLM judge ``name`` (config judging.judges.<name>) as one object, built here once for every rule."""
    return Judge.from_config(name, config["judging"])


def adaptive_rounds():
    """How many rounds of the adaptive design chose pairs (rounds 0..n-1; round n chose none and ended it). Each
    round is a checkpoint: asking for its status plans it, and Snakemake plans again once it has run."""
    k = 0
    while True:
        status = checkpoints.adaptive_round.get(round=k).output.status
        if pq.read_table(status, columns=["done"]).column("done")[0].as_py():
            return k
        k += 1


def judge_shards(judge):
    """The verdict tables merged into judge ``judge``'s table: its shards, or in the adaptive design its rounds."""
    if ADAPTIVE:
        # (round 0 even if it chose nothing: its verdict table is then empty, and the merge has a table to read)
        k = range(max(1, adaptive_rounds()))
        return expand("results/judging/shards/{judge}/round{k}.parquet", judge=judge, k=k)
    return expand("results/judging/shards/{judge}/{shard}.parquet", judge=judge, shard=SHARDS)


def judge_pair_table(wildcards):
    """The pairs a judge_pairs job reads: the design's, or the round's in the adaptive design."""
    if wildcards.shard.startswith("round"):
        return f"results/judging/adaptive/{wildcards.shard}.parquet"
    return "results/judging/pairs.parquet"


def judge_prompt(name):
    """The prompt template of judge ``name`` (a versioned input: editing it reruns that judge's jobs)."""
    return workflow.source_path(f"../resources/prompts/judge/{judge_of(name).prompt}.md")


def tagger_of(name):
    """LLM tagger ``name`` (config tagging.taggers.<name>) as one object, built here once for every rule."""
    return Tagger.from_config(name, config["tagging"])


def tagger_prompt(name):
    """The prompt template of tagger ``name``."""
    return workflow.source_path(f"../resources/prompts/tagging/{tagger_of(name).prompt}.md")


def judge_families():
    """Model family of every LLM judge (analysis-only: as config analysis_only.families.judges gives them)."""
    if ANALYSIS_ONLY:
        return dict(config["analysis_only"].get("families", {}).get("judges", {}))
    return {j: config["models"][c["model"]]["family"] for j, c in config["judging"]["judges"].items()}


def rule_logs():
    """Rule file -> its rules -> their possible log files: each log pattern expanded over this run's judges,
    taggers, systems and shards, under the rule's own wildcard constraints. Called when the DAG is built,
    once every rule file is read."""

    def logs(rule):
        return sorted(
            {
                path
                for f in rule.log
                for path in expand(
                    strip_wildcard_constraints(str(f)),
                    judge=JUDGES,
                    tagger=TAGGERS,
                    shard=SHARDS,
                    system=MODEL_SYSTEMS + IMPORTED_SYSTEMS,
                    allow_missing=True,
                )
                if f.regex().fullmatch(path)
            }
        )

    stems = sorted({Path(r.snakefile).stem for r in workflow.rules})
    return {stem: {r.name: logs(r) for r in workflow.rules if Path(r.snakefile).stem == stem} for stem in stems}


def rubric_file():
    """The configured HEART rubric (a versioned resource: editing it reruns the judges and what draws it)."""
    return workflow.source_path(f"../resources/rubric/{config['judging']['rubric']}.yaml")


def figure_style(name):
    """The style files of figure ``name``: the house style, then the figure's own ``<name>.yaml`` where there
    is one (versioned resources: editing one reruns the figures that read it)."""
    own = Path(workflow.basedir) / "workflow" / "resources" / "figures" / f"{name}.yaml"
    return [workflow.source_path("../resources/figures/style.yaml")] + (
        [workflow.source_path(f"../resources/figures/{name}.yaml")] if own.is_file() else []
    )


def taxonomy_file():
    """The configured strategy taxonomy (a versioned resource: editing it reruns what reads it)."""
    return workflow.source_path(f"../resources/taxonomy/{config['tagging']['taxonomy']}.yaml")


def system_families():
    """Model family of every system (judges never judge their own family's output; analysis-only: as config
    analysis_only.families.systems gives them)."""
    if ANALYSIS_ONLY:
        return dict(config["analysis_only"].get("families", {}).get("systems", {}))
    families = {s: config["models"][c["model"]]["family"] for s, c in config["systems"].items()}
    families |= {s: c["family"] or s for s, c in config["imported_systems"].items()}
    return {**families, "original": "dataset", "human": "human"}


def optional_file(path):
    """[path] if anything is at ``path`` (a directory too: its reader names the problem), else [] (the
    data are absent, and the outputs say so)."""
    return [path] if os.path.lexists(path) else []


# the human-data store (heart.annotation): once it exists, rule export_annotations writes the three human
# import files from it, and each run reads what was collected so far
ANNOTATION_STORE = not (ANALYSIS_ONLY or ARTIFACTS) and os.path.exists(config["annotation"]["db"])
ANNOTATION_EXPORTS = [
    config["human_completions"]["path"],
    config["human_judgments"]["path"],
    config["tagging"]["spot_checks"],
    config["completions"]["safety_reviews"],
]
if ANNOTATION_STORE:
    from heart.annotation.export import ExportError, check_writable  # noqa: E402

    for _path in ANNOTATION_EXPORTS:
        try:
            check_writable(_path)  # Snakemake removes a job's old outputs: never a file the export did not write
        except ExportError as exc:
            raise WorkflowError(
                f"{exc} (the annotation store {config['annotation']['db']} exists, so rule "
                "export_annotations writes this path)"
            ) from None


def annotation_fingerprint():
    """The store's answers and adjudications, as counts and last times (rule export_annotations reruns
    when they change)."""
    from heart.annotation.store import StoreError, fingerprint

    try:
        return fingerprint(config["annotation"]["db"])
    except StoreError as exc:
        raise WorkflowError(str(exc)) from None


def human_file(path):
    """[path] when the human file exists or the annotation store will export it, else [] (absent)."""
    return [path] if ANNOTATION_STORE and path in ANNOTATION_EXPORTS else optional_file(path)


def replay_input():
    return [config["llm"]["replay"]] if config["llm"]["replay"] else []
