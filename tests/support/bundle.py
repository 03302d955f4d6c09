"""Bundle folders for the tests: one of placeholder files with its manifest, and a manifest brought up to date
after a test edits a file (what a sound bundle's sha256 would say)."""

from __future__ import annotations

import json
from pathlib import Path

from heart.bundle.export import FORMAT
from heart.common.atomic import sha256_file


def placeholder_bundle(folder: Path, study: str, names) -> Path:
    """``folder`` with ``study`` as its study.yaml and placeholder files ``names`` (run_config and the workflow's
    start read none of them), all listed in its manifest with their sha256."""
    folder.mkdir()
    (folder / "study.yaml").write_text(study)
    for name in names:
        (folder / name).write_text("placeholder")
    files = {name: {"sha256": sha256_file(folder / name), "bytes": (folder / name).stat().st_size, "rows": None,
                    "what": ""} for name in ("study.yaml", *names)}
    (folder / "manifest.json").write_text(json.dumps({"format": FORMAT, "files": files}))
    return folder


def relist(folder: Path, name: str) -> None:
    """The manifest of ``folder`` given the sha256 that file ``name`` has now."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"][name]["sha256"] = sha256_file(folder / name)
    (folder / "manifest.json").write_text(json.dumps(manifest))
