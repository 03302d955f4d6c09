"""The fast part of the SLURM check that runs in CI: the profile loads and plans the whole DAG.

(The real cluster run is tests/workflow/test_slurm.py, opt-in with HEART_SLURM_TEST=1.)
"""

import pytest
import yaml

from support import FIXTURES, REPO

pytestmark = pytest.mark.dag


def test_slurm_profile_plans_every_rule_with_its_resources(workflow_copy):
    wf = workflow_copy
    cfg = ["--config", f"esconv={{local_copy: {FIXTURES / 'esconv_tiny.json'}}}", "regular_items={n: 3, seed: 1}"]
    jobs = wf.jobs("--workflow-profile", "profiles/slurm", *cfg)
    assert {"judge_pairs", "tag_strategies", "generate_completions", "ratings", "figure_leaderboard"} <= set(jobs)
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["resources"] == {"local_llm": 1}
    rules = set(jobs) - {"all"}
    assert {"judge_pairs", "tag_strategies", "generate_completions"} <= set(profile["set-resources"]) <= rules | {
        "make_adversarial_items"}
