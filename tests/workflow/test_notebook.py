"""notebooks/explore_results.ipynb, executed by a real Jupyter kernel (nbclient + ipykernel).

The notebook reads two files of a run, ``results/stats/leaderboard.parquet`` and
``results/stats/ratings.parquet``. They are made here the way rule ``ratings`` makes them
(heart.stats.leaderboard over a judgments table, written with heart.common.tableio), from a small SIMULATED
judgments table, so no Snakemake run is needed.
"""

import nbformat
import pytest

from support import REPO
from heart.stats import figure4, leaderboard
from heart.simulation import simulate
from heart.common import tableio
from heart.figures.style import leaderboard_order
from support.notebooks import NotebookError, execute_notebook, has_image, output_text, tagged

NOTEBOOK = REPO / "notebooks" / "explore_results.ipynb"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A results/ folder with what the notebook reads: 4 systems, regular and adversarial items (SIMULATED)."""
    judgments, _ = simulate.judgments(n_systems=4, n_items=12, n_adversarial=4, pairs_per_item=3, llm_judges=1,
                                      human_raters=1, human_pairs=6, seed=3)
    ratings, _ = leaderboard.leaderboard(judgments, n_boot=20, seed=0)
    stats = tmp_path_factory.mktemp("run") / "results" / "stats"
    stats.mkdir(parents=True)
    tableio.write_tables([(ratings, stats / "ratings.parquet", "ratings"),
                          (figure4.headline(ratings), stats / "leaderboard.parquet", "leaderboard")])
    return stats.parent


@pytest.mark.e2e
def test_the_notebook_runs_in_a_kernel_and_redraws_figure_4(results, monkeypatch):
    # as a person opening it in Jupyter: no HEART_ROOT (the kernel starts in notebooks/) and no PYTHONPATH
    # (the notebook puts workflow/ on sys.path itself)
    monkeypatch.delenv("HEART_ROOT", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    nb = execute_notebook(NOTEBOOK, {"HEART_RESULTS": str(results)})
    order = leaderboard_order(tableio.read_table(results / "stats" / "leaderboard.parquet"))
    assert len(order) == 5  # remote-a, remote-b, original, human and the derived best-human

    board = output_text(tagged(nb, "leaderboard"))
    assert all(system in board for system in order), board
    fig4 = tagged(nb, "figure4")
    assert f"Figure 4 rows, top to bottom: {', '.join(order)}" in output_text(fig4)
    assert has_image(fig4)  # the heatmap itself, as a PNG output
    subsets = output_text(tagged(nb, "subsets"))
    assert f"Elo by subset for: {', '.join(sorted(order))}" in subsets
    assert "adversarial" in subsets and "regular" in subsets
    assert NOTEBOOK.read_text().count('"output_type"') == 0  # the file on disk is left as it was, without outputs


def test_a_failing_cell_is_named_with_its_notebook(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# a test notebook"),
        nbformat.v4.new_code_cell("import os\nimport matplotlib\n"
                                  "print(os.getcwd(), os.environ['HEART_TEST_VALUE'], matplotlib.get_backend())"),
        nbformat.v4.new_code_cell("# the second code cell\nvalue = 1 / 0"),
        nbformat.v4.new_code_cell("print('never run')"),
    ])
    path = tmp_path / "folder" / "broken.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    with pytest.raises(NotebookError, match=r"^broken.ipynb: cell 2 \(# the second code cell\) failed: "
                                            r"ZeroDivisionError: division by zero\n") as err:
        execute_notebook(path, {"HEART_TEST_VALUE": 42})
    assert "value = 1 / 0" in str(err.value) and "\x1b[" not in str(err.value)
    ran = err.value.notebook
    assert output_text(ran.cells[1]).split() == [str(path.parent), "42", "Agg"]
    assert ran.cells[2].outputs[0]["output_type"] == "error" and ran.cells[3].outputs == []
