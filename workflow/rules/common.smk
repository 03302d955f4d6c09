# Helpers only: config validation, input functions. No rules here.
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from heart.config import validate_config  # noqa: E402

validate_config(config, source="config (config/config.yaml and any --configfile/--config)")


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


PROMPTS = Path(workflow.basedir) / "workflow" / "resources" / "prompts"
MODEL_SYSTEMS = sorted(config["systems"])
SYSTEMS = MODEL_SYSTEMS + ["original", "human"]

for _name, _system in config["systems"].items():
    if not (PROMPTS / "completion" / f"{_system['prompt']}.md").is_file():
        raise WorkflowError(
            f"config systems.{_name}.prompt: no template {_system['prompt']!r} "
            f"(expected {PROMPTS / 'completion' / (_system['prompt'] + '.md')})"
        )


def used_models():
    """Models that some stage calls: every system's, and the adversarial rewriter's."""
    names = {s["model"] for s in config["systems"].values()}
    if config["adversarial_items"]["n"] > 0:
        names.add(config["adversarial_items"]["model"])
    return sorted(names)


def required_keys():
    """Environment variables holding API keys for the models in use (none in replay mode)."""
    if config["llm"]["replay"]:
        return []
    keys = {config["models"][m]["api_key_env"] for m in used_models()}
    return sorted(k for k in keys if k)


def model_params(name):
    """Config entry of model ``name`` as passed to scripts (names of key variables, never keys)."""
    return {"name": name, **config["models"][name]}


def replay_input():
    return [config["llm"]["replay"]] if config["llm"]["replay"] else []

