# Helpers only: config validation, input functions. No rules here.
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
