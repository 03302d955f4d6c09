"""The report's front page (workflow/report/workflow.rst) rendered the way Snakemake renders it -- Jinja, then
docutils -- for a study and for a run from a bundle: no docutils error, and it says what the run had."""

from types import SimpleNamespace

import docutils.core
import jinja2
import pytest

from support import REPO

TEMPLATE = REPO / "workflow/report/workflow.rst"


def _render(config: dict) -> str:
    text = jinja2.Template(TEMPLATE.read_text()).render(snakemake=SimpleNamespace(config=config))
    return docutils.core.publish_parts(text, writer="html",
                                       settings_overrides={"report_level": 2, "halt_level": 5})["html_body"]


def _config(**change) -> dict:
    config = {"items": {"source": "release"}, "systems": {"gpt-4o": {}}, "imported_systems": {},
              "judging": {"judges": {"o3": {}}, "both_orders": True, "exclude_own_family": True,
                          "qc": {"kinds": ["unhelpful", "other-conversation"]}},
              "tagging": {"taggers": {"t": {}}}, "stats": {"n_boot": 1000, "seed": 1}}
    for key, value in change.items():
        config[key] = value
    return config


@pytest.mark.parametrize("config, systems, checks", [
    (_config(), "gpt-4o plus",
     "Every LLM judge\nalso judges known-answer quality checks (unhelpful, other-conversation"),
    # a run from a bundle: every system imported, and (here) a bundle whose judges ran no quality check
    (_config(systems={}, imported_systems={"polaris": {}, "gpt-4o": {}}, artifacts={"path": "/b"},
             judging={"judges": {"o3": {}}, "both_orders": True, "exclude_own_family": True, "qc": {"kinds": []}}),
     "polaris, gpt-4o plus", "No LLM judge ran known-answer quality checks in this run\n(judging.qc.kinds is empty, "
                             "or the bundle holds none)"),
])
def test_the_front_page_names_the_systems_and_the_checks_the_run_had(config, systems, checks):
    html = _render(config)
    assert "System Message" not in html and "Unexpected indentation" not in html  # issue 40: every bundle run
    assert f"systems\n{systems}" in html
    assert checks in html
    if config["judging"]["qc"]["kinds"] == []:
        assert "Every LLM judge" not in html
