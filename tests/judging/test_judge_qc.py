"""heart.judging.judge_qc.summary where a judge has no quality-check verdicts at all (none were run, or its
verdicts came from a bundle without them): every judge of the study is listed as absent, with the reason."""

import pandas as pd

from heart.common import tableio
from heart.judging import judge_qc


def test_judges_without_any_check_are_absent_and_say_why():
    flips = pd.DataFrame({"judge": ["j1", "j2"], "axis": "overall", "flip_rate": [0.1, None], "n_pairs": [10, 0]})
    checks = pd.DataFrame(columns=["pair_id", "judge"])  # what combining no verdicts gives
    table = judge_qc.summary(checks, tableio.empty_like("judge_verdicts"), flips)
    tableio.to_arrow(table, "judge_quality")
    assert table["judge"].tolist() == ["j1", "j2"] and table["kind"].eq("all").all()
    assert table["status"].eq("absent").all() and table["qc_accuracy"].isna().all()
    assert table["note"].str.contains("no quality-check verdicts of this judge").all()
    assert table.set_index("judge").loc["j1", "study_flip_rate"] == 0.1
