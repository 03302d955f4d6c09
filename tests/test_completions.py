"""heart.completions: chat messages, post-processing, human import, system summary."""

import pandas as pd
import pytest

from heart import completions, llm, tableio


def items():
    hist = [{"role": "supporter", "text": "Hi, how are you?"}, {"role": "seeker", "text": "Not great, I lost my job."}]
    return pd.DataFrame({"item_id": ["a1", "b2"], "history": [hist, hist[:1] + [{"role": "seeker", "text": "I'm sad."}]],
                         "original_reply": ["I'm sorry to hear that.", "What happened?"]})


def test_chat_messages_map_roles():
    msgs = completions.chat_messages("Be kind.", items().loc[0, "history"])
    assert [m["role"] for m in msgs] == ["system", "assistant", "user"]
    assert msgs[-1]["content"] == "Not great, I lost my job."


def test_requests_are_per_item_and_versioned():
    reqs = completions.completion_requests(items(), "sys", "m", "Be kind.", "abc123")
    assert [r.id for r in reqs] == ["a1", "b2"] and reqs[0].template_version == "completion:abc123"


@pytest.mark.parametrize("raw, text, steps", [
    ('"That sounds so hard."', "That sounds so hard.", ["stripped_quotes"]),
    ("Supporter: That sounds so hard.", "That sounds so hard.", ["stripped_role_prefix"]),
    ('Assistant:  "I hear you."', "I hear you.", ["stripped_role_prefix", "stripped_quotes"]),
    ("I hear  you.\n That's hard.", "I hear you. That's hard.", []),
    ('He said "no" and "never"', 'He said "no" and "never"', []),
])
def test_postprocess(raw, text, steps):
    assert completions.postprocess(raw) == (text, steps)


def test_template_version_is_content_hash(tmp_path):
    p = tmp_path / "t.md"
    p.write_text("Be kind.\n")
    text, v1 = llm.template(p)
    p.write_text("Be kinder.\n")
    assert text == "Be kind." and llm.template(p)[1] != v1


def test_original_table():
    t = completions.original_table(items())
    assert t["system"].unique().tolist() == ["original"] and t["text"].tolist() == ["I'm sorry to hear that.", "What happened?"]


def test_import_humans_reports_violations(tmp_path):
    csv = tmp_path / "completions.csv"
    csv.write_text("item_id,contributor_id,text\n"
                   "a1,c1,That sounds really hard.\n"
                   "a1,c2,I'm sorry. What happened?\n"
                   "a1,c1,Second try by the same person.\n"
                   "zz,c3,Unknown context.\n"
                   "b2,c3,   \n"
                   "b2,c3,Sadness can be heavy.\n")
    table, violations = completions.import_humans(csv, items())
    assert table[["item_id", "contributor_id"]].values.tolist() == [["a1", "c1"], ["a1", "c2"], ["b2", "c3"]]
    assert violations[["line", "problem"]].values.tolist() == [
        [5, "unknown item_id"], [6, "empty text"], [4, "contributor already completed this context"]]


def test_import_humans_names_missing_column(tmp_path):
    csv = tmp_path / "h.csv"
    csv.write_text("item_id,text\na1,hello\n")
    with pytest.raises(ValueError, match=r"h.csv: missing column\(s\) contributor_id; expected item_id, contributor_id, text"):
        completions.import_humans(csv, items())


def test_summarize_says_humans_are_absent():
    t = {"original": completions.original_table(items()), "human": tableio.empty_like("completions")}
    s = completions.summarize(t, human_path="resources/human/completions.csv").set_index("system")
    assert s.loc["human", "status"] == "absent" and "no human completions file" in s.loc["human", "note"]
    assert s.loc["original", "n_completions"] == 2


def test_an_unquoted_comma_in_the_human_file_is_named(tmp_path):
    path = tmp_path / "completions.csv"
    path.write_text("item_id,contributor_id,text\ni1,p1,That sounds hard, really hard.\n")
    with pytest.raises(ValueError, match=r"completions.csv, line 2: has 4 fields, the header 3; .*double-quoted"):
        completions.import_humans(path, items())


def test_an_absent_human_system_says_whether_there_was_a_file():
    empty = {"human": completions._static_rows([], "human", "human", [])}
    assert completions.summarize(empty, "h.csv")["note"].item() == "absent: no human completions file at h.csv"
    note = completions.summarize(empty, "h.csv", human_file=True)["note"].item()
    assert note.startswith("absent: h.csv holds no usable completions")
