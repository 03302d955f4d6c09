"""Static checks of the conda envs (envs/*.yaml) and of the rules' `conda:` directives.

No conda channel is needed: the envs are only parsed. They must stay in step with the pip
pins that .venv is built from (envs/requirements.txt, envs/constraints.txt), so that
`--sdm conda` runs the rules on the versions the tests ran on. The tests at the bottom
mutate copies and check that every check reports the problem (a check that cannot fail
proves nothing).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.version import InvalidVersion, Version

from support import REPO
from support.bundle import placeholder_bundle

ENVS = REPO / "envs"
CHANNELS = ["conda-forge", "nodefaults"]

# Packages that a conda env needs but that have no pip pin in envs/requirements.txt or
# envs/constraints.txt. Anything else must carry exactly the pip pin.
CONDA_ONLY = {
    # the interpreter: conda installs it, pip cannot; its pin must match pyproject.toml's
    # requires-python (checked below)
    "python": "interpreter",
    # the installer of an env's `pip:` subsection; `pip freeze` (constraints.txt) leaves
    # pip out, so there is no pip pin to compare with, but it must still be pinned
    "pip": "installer",
}

# Rules that need no conda env although they run code (none so far). Rules that run no
# code at all (only inputs, like `all`) are exempt without being listed here.
RULES_WITHOUT_ENV: dict[str, str] = {}

CONDA_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.\-]*)\s*(?P<op>==?)\s*(?P<version>[0-9][^\s=<>!,|*]*)$")
PIP_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.\-]*)(?:\[[^\]]*\])?\s*==\s*"
                      r"(?P<version>[^\s;,*]+)\s*(?:;.*)?$")


def normalize(name: str) -> str:
    """PEP 503 name: conda's factor_analyzer and pip's factor-analyzer / Factor.Analyzer are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def same_version(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def read_pip_pins(path: Path) -> tuple[dict[str, str], list[str]]:
    """{normalized name: version} of a pip requirements file, and its lines that are not `name==version`."""
    pins, problems = {}, []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = PIP_SPEC.match(line)
        if not m:
            problems.append(f"{path.name}:{number}: {line!r} is not pinned as name==version")
            continue
        pins[normalize(m["name"])] = m["version"]
    return pins, problems


def pip_pins(env_dir: Path) -> dict[str, tuple[str, str]]:
    """Every pip pin: {name: (version, file)}; requirements.txt wins, constraints.txt adds the rest."""
    pins = {}
    for name in ("constraints.txt", "requirements.txt"):
        for pkg, version in read_pip_pins(env_dir / name)[0].items():
            pins[pkg] = (version, name)
    return pins


def pin_file_problems(env_dir: Path) -> list[str]:
    """requirements.txt and constraints.txt: everything pinned, and the two agree."""
    req, req_problems = read_pip_pins(env_dir / "requirements.txt")
    con, con_problems = read_pip_pins(env_dir / "constraints.txt")
    problems = req_problems + con_problems
    for name in sorted(req.keys() & con.keys()):
        if not same_version(req[name], con[name]):
            problems.append(f"{name}: requirements.txt pins {req[name]}, constraints.txt pins {con[name]}")
    return problems


def required_python(pyproject: Path) -> str:
    """'3.11' from requires-python = "==3.11.*"."""
    spec = re.search(r'^requires-python\s*=\s*"([^"]+)"', pyproject.read_text(), re.M)
    m = spec and re.fullmatch(r"\s*==\s*(\d+\.\d+)(?:\.\*)?\s*", spec.group(1))
    assert m, f"{pyproject}: requires-python is not of the form ==X.Y.*"
    return m.group(1)


def env_problems(path: Path, pins: dict[str, tuple[str, str]], python: str) -> list[str]:
    """Everything wrong with one conda env file (empty list: fine)."""
    where = path.name
    try:
        env = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        return [f"{where}: not valid YAML: {e}"]
    if not isinstance(env, dict):
        return [f"{where}: not a YAML mapping"]
    problems = []
    unknown = set(env) - {"name", "channels", "dependencies"}
    if unknown:
        problems.append(f"{where}: unexpected keys {sorted(unknown)}")
    if env.get("channels") != CHANNELS:
        problems.append(f"{where}: channels must be exactly {CHANNELS}, found {env.get('channels')}")
    deps = env.get("dependencies")
    if not isinstance(deps, list) or not deps:
        return problems + [f"{where}: dependencies must be a non-empty list"]

    def check(name: str, version: str, kind: str):
        key = normalize(name)
        if key in CONDA_ONLY:
            if key == "python" and version != python:
                problems.append(f"{where}: python ={version}, but pyproject.toml requires {python}")
            return
        if key not in pins:
            problems.append(f"{where}: {name} ({kind}) has no pin in requirements.txt/constraints.txt "
                            f"and is not in the conda-only allowlist {sorted(CONDA_ONLY)}")
        elif not same_version(version, pins[key][0]):
            problems.append(f"{where}: {name} ={version} ({kind}), but {pins[key][1]} pins {pins[key][0]}")

    conda_names = set()
    for dep in deps:
        if isinstance(dep, dict):
            if set(dep) != {"pip"} or not isinstance(dep["pip"], list):
                problems.append(f"{where}: only a `pip:` list may be nested in dependencies, found {dep}")
                continue
            for spec in dep["pip"]:
                m = PIP_SPEC.match(str(spec).strip())
                if not m:
                    problems.append(f"{where}: pip dependency {spec!r} is not pinned as name==version")
                else:
                    check(m["name"], m["version"], "pip")
            if "pip" not in conda_names:
                problems.append(f"{where}: a `pip:` subsection needs `pip` as a conda dependency before it")
            continue
        m = CONDA_SPEC.match(str(dep).strip())
        if not m:
            problems.append(f"{where}: {dep!r} is not pinned as `name =version`")
            conda_names.add(re.split(r"[\s=<>!~]", str(dep).strip(), maxsplit=1)[0])
            continue
        if m["name"] in conda_names:
            problems.append(f"{where}: {m['name']} listed twice")
        conda_names.add(m["name"])
        check(m["name"], m["version"], "conda")
    return problems


def all_env_problems(env_dir: Path, pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    pins, python = pip_pins(env_dir), required_python(pyproject)
    return [p for f in sorted(env_dir.glob("*.yaml")) for p in env_problems(f, pins, python)]


# Loads the workflow with Snakemake's own API (includes, config validation and all) and
# prints every rule with its conda env, the file defining it and whether it runs code.
RULES_PROBE = r"""
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import (ConfigSettings, DeploymentSettings, OutputSettings,
                                      ResourceSettings, StorageSettings, WorkflowSettings)
root = Path.cwd()
rules = []
for config in json.loads(sys.argv[1]):  # one process loads the workflow under each config
    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(resource_settings=ResourceSettings(), config_settings=ConfigSettings(config=config),
                          storage_settings=StorageSettings(), workflow_settings=WorkflowSettings(),
                          deployment_settings=DeploymentSettings(), snakefile=root / "Snakefile", workdir=root)
        rules += [{"name": r.name, "conda": r.conda_env if r.conda_env is None or isinstance(r.conda_env, str)
                   else repr(r.conda_env), "snakefile": str(r.snakefile),
                   "runs_code": bool(r.script or r.shellcmd or r.is_run or getattr(r, "notebook", None)
                                     or getattr(r, "wrapper", None) or getattr(r, "cwl", None))}
                  for r in wf._workflow.rules]
print("RULES=" + json.dumps(rules))
"""


# rules defined only under some config: loaded once per such config (each item source, analysis only)
# the last one defines rule export_annotations, which exists once an annotation store does (an empty one,
# made by rule_conda_problems)
PROBE_CONFIGS = ({}, {"items": {"source": "release"}}, {"analysis_only": {"judgments": "votes.csv"}},
                 {"judging": {"adaptive": {"enabled": True}}},
                 {"annotation": {"db": "probe-store.sqlite"}}, {"artifacts": {"path": "probe-bundle"}})


def _probe_bundle(folder: Path) -> None:
    """The least bundle a run from artifacts loads: a manifest listing an empty study.yaml and the files every
    bundle holds (placeholders: loading the workflow reads none of them)."""
    from heart.bundle.load import ALWAYS, SLOTS

    placeholder_bundle(folder, "{}\n", [SLOTS[slot][0] for slot in ALWAYS if slot != "study"])


def rule_conda_problems(root: Path) -> list[str]:
    """Every rule of the workflow in ``root`` (a copy) that lacks a usable `conda:` env file."""
    from heart.annotation import store

    store.create(root / "probe-store.sqlite")
    _probe_bundle(root / "probe-bundle")
    proc = subprocess.run([sys.executable, "-c", RULES_PROBE, json.dumps(PROBE_CONFIGS)], cwd=root,
                          capture_output=True, text=True, timeout=300)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RULES=")), None)
    assert proc.returncode == 0 and line, f"loading the workflow failed:\n{proc.stdout}\n{proc.stderr}"
    rules = list({r["name"]: r for r in json.loads(line[len("RULES="):])}.values())
    problems = []
    # guard against rules the API did not see (e.g. defined only under some config)
    seen = {r["name"] for r in rules}
    for smk in [root / "Snakefile", *sorted((root / "workflow/rules").glob("*.smk"))]:
        for name in re.findall(r"^\s*(?:rule|checkpoint)\s+(\w+)\s*:", smk.read_text(), re.M):
            if name not in seen:
                problems.append(f"rule {name} ({smk.name}) was not defined when loading the workflow")
    envs = (root / "envs").resolve()
    for r in rules:
        if r["name"] in RULES_WITHOUT_ENV or (not r["runs_code"] and r["conda"] is None):
            continue
        if r["conda"] is None:
            problems.append(f"rule {r['name']} ({Path(r['snakefile']).name}) has no conda: directive")
            continue
        path = Path(r["conda"])
        path = (path if path.is_absolute() else Path(r["snakefile"]).parent / path).resolve()
        if path.parent != envs or path.suffix != ".yaml":
            problems.append(f"rule {r['name']}: conda: {r['conda']!r} is not a file envs/<name>.yaml")
        elif not path.is_file():
            problems.append(f"rule {r['name']}: conda: {r['conda']!r} does not exist")
    return problems


# --- the checks on the real files --------------------------------------------------------

def test_the_rule_groups_have_envs():
    assert {"data.yaml", "llm.yaml", "stats.yaml"} <= {p.name for p in ENVS.glob("*.yaml")}


@pytest.mark.parametrize("env_file", sorted(ENVS.glob("*.yaml")), ids=lambda p: p.name)
def test_env_is_valid_pinned_and_matches_the_pip_pins(env_file):
    problems = env_problems(env_file, pip_pins(ENVS), required_python(REPO / "pyproject.toml"))
    assert not problems, "\n".join(problems)


def test_pip_pin_files_are_pinned_and_agree():
    problems = pin_file_problems(ENVS)
    assert not problems, "\n".join(problems)


def test_every_rule_has_a_conda_env_file(workflow_copy):
    problems = rule_conda_problems(workflow_copy.root)
    assert not problems, "\n".join(problems)


# --- the checks can fail: mutated copies ---------------------------------------------------

def _sub(text: str, old: str, new: str) -> str:
    assert old in text, f"mutation target {old!r} not found"
    return text.replace(old, new, 1)


ENV_MUTATIONS = {
    "unpinned": ("data.yaml", lambda t: _sub(t, "pandas =3.1.1", "pandas"), "'pandas' is not pinned"),
    "range": ("data.yaml", lambda t: _sub(t, "numpy =2.4.6", "numpy >=2.4"), "'numpy >=2.4' is not pinned"),
    "drift": ("stats.yaml", lambda t: _sub(t, "scipy =1.17.1", "scipy =1.17.0"), "requirements.txt pins 1.17.1"),
    "underscore name drift": ("stats.yaml", lambda t: _sub(t, "factor_analyzer =0.5.1", "factor_analyzer =0.5.0"),
                              "factor_analyzer =0.5.0 (conda), but"),
    "pip drift": ("llm.yaml", lambda t: _sub(t, "litellm==1.106.2", "litellm==1.106.1"), "litellm =1.106.1 (pip)"),
    "pip unpinned": ("llm.yaml", lambda t: _sub(t, "llm==0.32.1", "llm>=0.32"), "'llm>=0.32' is not pinned"),
    "unknown package": ("data.yaml", lambda t: t + "  - requests-oauthlib =2.0.0\n", "has no pin"),
    "python": ("data.yaml", lambda t: _sub(t, "python =3.11", "python =3.12"), "pyproject.toml requires 3.11"),
    "channel added": ("data.yaml", lambda t: _sub(t, "  - nodefaults", "  - nodefaults\n  - defaults"),
                      "channels must be exactly"),
    "nodefaults missing": ("llm.yaml", lambda t: _sub(t, "  - nodefaults\n", ""), "channels must be exactly"),
    "invalid yaml": ("stats.yaml", lambda t: t + "  - [unclosed\n", "not valid YAML"),
    "new env file": ("later.yaml", None, "matplotlib =3.11.1 (conda), but requirements.txt pins 3.11.2"),
}


@pytest.mark.parametrize("mutation", ENV_MUTATIONS)
def test_env_check_catches(tmp_path, mutation):
    env_dir = shutil.copytree(ENVS, tmp_path / "envs")
    assert all_env_problems(env_dir) == all_env_problems(ENVS)  # the copy checks like the original
    name, mutate, expected = ENV_MUTATIONS[mutation]
    target = env_dir / name
    if mutate is None:  # a new env file is checked without being listed anywhere
        target.write_text("channels: [conda-forge, nodefaults]\ndependencies:\n"
                          "  - python =3.11\n  - matplotlib =3.11.1\n")
    else:
        target.write_text(mutate(target.read_text()))
    problems = all_env_problems(env_dir)
    assert any(expected in p for p in problems), problems


def test_env_check_catches_a_changed_pip_pin(tmp_path):
    """Drift the other way: requirements.txt moves on, the env does not."""
    env_dir = shutil.copytree(ENVS, tmp_path / "envs")
    req = env_dir / "requirements.txt"
    req.write_text(_sub(req.read_text(), "pyarrow==26.0.1", "pyarrow==26.0.2"))
    problems = all_env_problems(env_dir)
    assert any("pyarrow =26.0.1 (conda), but requirements.txt pins 26.0.2" in p for p in problems), problems
    assert any("pyarrow: requirements.txt pins 26.0.2, constraints.txt pins 26.0.1" in p
               for p in pin_file_problems(env_dir))


def test_rule_check_catches_missing_and_dangling_envs(workflow_copy):
    root = workflow_copy.root
    data = root / "workflow/rules/data.smk"
    text = data.read_text()
    # rule ingest_esconv loses its conda: directive, download_esconv points to a missing file
    ingest = text.index("rule ingest_esconv:")
    head, tail = text[:ingest], text[ingest:]
    tail = _sub(tail, '    conda:\n        "../../envs/data.yaml"\n', "")
    head = _sub(head, '"../../envs/data.yaml"', '"../../envs/gone.yaml"')
    data.write_text(head + tail)
    problems = rule_conda_problems(root)
    assert any("rule ingest_esconv (data.smk) has no conda: directive" in p for p in problems), problems
    assert any("rule download_esconv: conda: '../../envs/gone.yaml' does not exist" in p for p in problems), problems
    assert not any("rule all" in p for p in problems)  # runs no code: exempt
