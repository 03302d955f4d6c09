"""heart.completions: chat messages, post-processing, human import, system summary."""

import pandas as pd
import pytest

from heart.completions import generate, imported, summary
from heart.llm.request import template
from heart.common import records, tableio


def items():
    hist = [{"role": "supporter", "text": "Hi, how are you?"}, {"role": "seeker", "text": "Not great, I lost my job."}]
    return pd.DataFrame({"item_id": ["a1", "b2"],
                         "history": [hist, hist[:1] + [{"role": "seeker", "text": "I'm sad."}]],
                         "original_reply": ["I'm sorry to hear that.", "What happened?"]})


def test_chat_messages_map_roles():
    msgs = generate.chat_messages("Be kind.", items().loc[0, "history"])
    assert [m["role"] for m in msgs] == ["system", "assistant", "user"]
    assert msgs[-1]["content"] == "Not great, I lost my job."


def test_requests_are_per_item_and_versioned():
    reqs = generate.completion_requests(items(), "sys", "m", "Be kind.", "abc123")
    assert [r.id for r in reqs] == ["a1", "b2"] and reqs[0].template_version == "completion:abc123"
    # decoded the paper's way (heart.llm.decoding.decoding), not with the model's configured params as such
    assert all(r.paper_decoding and r.params is None for r in reqs)


def test_model_table_records_the_params_sent(tmp_path):
    """sent_params: the params of each answer as JSON with sorted keys; null where no model was called here."""
    results = {i: {"text": "I hear you.", "cache_key": f"k{i}", "from_cache": i == "b2", "usage": {},
                   "sent_params": {"top_p": 1, "reasoning_effort": "none", "temperature": 0}} for i in ("a1", "b2")}
    table = generate.model_table(items(), "sys", results, "gemini/gemini-2.5-flash", "p", "v1")
    assert table["sent_params"].tolist() == ['{"reasoning_effort": "none", "temperature": 0, "top_p": 1}'] * 2
    both = pd.concat([table, generate.original_table(items())], ignore_index=True)
    tableio.write_table(both, tmp_path / "c.parquet", "completions")
    assert tableio.read_table(tmp_path / "c.parquet")["sent_params"].isna().tolist() == [False, False, True, True]


@pytest.mark.parametrize("raw, text, steps", [
    ('"That sounds so hard."', "That sounds so hard.", ["stripped_quotes"]),
    ("Supporter: That sounds so hard.", "That sounds so hard.", ["stripped_role_prefix"]),
    ('Assistant:  "I hear you."', "I hear you.", ["stripped_role_prefix", "stripped_quotes"]),
    ("I hear  you.\n That's hard.", "I hear you. That's hard.", []),
    ('He said "no" and "never"', 'He said "no" and "never"', []),
])
def test_postprocess(raw, text, steps):
    assert generate.postprocess(raw) == (text, steps)


def test_template_version_is_content_hash(tmp_path):
    p = tmp_path / "t.md"
    p.write_text("Be kind.\n")
    text, v1 = template(p)
    p.write_text("Be kinder.\n")
    assert text == "Be kind." and template(p)[1] != v1


def test_original_table():
    t = generate.original_table(items())
    assert (t["system"].unique().tolist() == ["original"]
            and t["text"].tolist() == ["I'm sorry to hear that.", "What happened?"])


def test_import_humans_reports_violations(tmp_path):
    csv = tmp_path / "completions.csv"
    csv.write_text("item_id,contributor_id,text\n"
                   "a1,c1,That sounds really hard.\n"
                   "a1,c2,I'm sorry. What happened?\n"
                   "a1,c1,Second try by the same person.\n"
                   "zz,c3,Unknown context.\n"
                   "b2,c3,   \n"
                   "b2,c3,Sadness can be heavy.\n")
    table, violations = imported.import_humans(csv, items())
    assert table[["item_id", "contributor_id"]].values.tolist() == [["a1", "c1"], ["a1", "c2"], ["b2", "c3"]]
    assert violations[["line", "problem"]].values.tolist() == [
        [5, "unknown item (expected an item_id of results/items/items.parquet)"], [6, "empty text"],
        [4, "contributor already completed this context"]]


def released_items():
    return items().assign(release_key=["regular:0", "regular:1"], original_reply=["x", None])


def test_original_table_leaves_out_items_without_a_reply():
    assert generate.original_table(released_items())["item_id"].tolist() == ["a1"]


def test_import_humans_keyed_by_release_key(tmp_path):
    csv = tmp_path / "completions.csv"
    # a release key and the item_id name the same context: the writer repeating it is caught
    csv.write_text("item_id,contributor_id,text\nregular:0,c1,Hard.\na1,c1,Again.\nregular:1,c2,Sad.\n"
                   "regular:7,c2,Nowhere.\n")
    table, violations = imported.import_humans(csv, released_items())
    assert table[["item_id", "contributor_id"]].values.tolist() == [["a1", "c1"], ["b2", "c2"]]
    assert violations["problem"].tolist() == [
        "unknown item (expected a release key such as 'regular:0' or an item_id of results/items/items.parquet)",
        "contributor already completed this context"]


def test_human_protocol_checks_the_papers_design(tmp_path):
    csv = tmp_path / "completions.csv"
    csv.write_text("item_id,contributor_id,text\n" + "".join(f"a1,c{k},ok {k}\n" for k in range(3))
                   + "b2,c0,one\nb2,c0,twice\n")
    table, violations = imported.import_humans(csv, items())
    got = imported.human_protocol(table, violations, items(), per_context=3, pool_size=12)
    tableio.to_arrow(got, "human_protocol")
    got = got.set_index("measure")
    assert got.loc["contributors", ["value", "ok"]].tolist() == [3, False]
    assert got.loc["per_context_min", ["value", "ok"]].tolist() == [1, False]
    assert got.loc["per_context_max", ["value", "ok"]].tolist() == [3, True]
    assert got.loc["contexts_below", "value"] == 1 and got.loc["writer_repeats", ["value", "ok"]].tolist() == [1, False]
    empty = imported.human_protocol(tableio.empty_like("completions"), tableio.empty_like("human_violations"),
                                       items(), per_context=3, pool_size=None)
    assert empty["ok"].isna().all() and empty["note"].str.startswith("absent").all()


def test_import_humans_names_missing_column(tmp_path):
    csv = tmp_path / "h.csv"
    csv.write_text("item_id,text\na1,hello\n")
    with pytest.raises(ValueError,
                       match=r"h.csv: missing column\(s\) contributor_id; expected item_id, contributor_id, text"):
        imported.import_humans(csv, items())


def test_summarize_says_humans_are_absent():
    t = {"original": generate.original_table(items()), "human": tableio.empty_like("completions")}
    s = summary.summarize(t, human_path="resources/human/completions.csv").set_index("system")
    assert s.loc["human", "status"] == "absent" and "no human completions file" in s.loc["human", "note"]
    assert s.loc["original", "n_completions"] == 2


def test_an_unquoted_comma_in_the_human_file_is_named(tmp_path):
    path = tmp_path / "completions.csv"
    path.write_text("item_id,contributor_id,text\ni1,p1,That sounds hard, really hard.\n")
    with pytest.raises(ValueError, match=r"completions.csv, line 2: has 4 fields, the header 3; .*double-quoted"):
        imported.import_humans(path, items())


def test_an_absent_human_system_says_whether_there_was_a_file():
    empty = {"human": generate.static_rows([], "human", "human", [])}
    assert summary.summarize(empty, "h.csv")["note"].item() == "absent: no human completions file at h.csv"
    note = summary.summarize(empty, "h.csv", human_file=True)["note"].item()
    assert note.startswith("absent: h.csv holds no usable completions")


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_imported_system_from_any_format(tmp_path, fmt):
    rows = [{"item_id": "regular:0", "system": "polaris-4.0", "text": " Hi there. ", "ttft_s": 0.5, "cost_usd": 0.001},
            {"item_id": "regular:1", "system": "polaris-4.0", "text": "Tell me more.", "ttft_s": None,
             "cost_usd": None},
            {"item_id": "regular:1", "system": "other-model", "text": "Not this system's.", "ttft_s": None,
             "cost_usd": None}]
    path = tmp_path / f"done_elsewhere.{fmt}"
    frame = pd.DataFrame(rows)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    table, violations = imported.import_system(path, released_items(), "polaris-4.0")
    tableio.to_arrow(table, "completions")
    assert table[["item_id", "system", "source", "text"]].values.tolist() == [
        ["a1", "polaris-4.0", "model", "Hi there."], ["b2", "polaris-4.0", "model", "Tell me more."]]
    assert table["ttft_s"].tolist()[0] == 0.5 and pd.isna(table["ttft_s"].tolist()[1])
    assert violations.empty


def test_imported_system_violations_are_listed_with_their_line(tmp_path):
    path = tmp_path / "elsewhere.csv"
    path.write_text("item_id,text,ttft_s\n"
                    "regular:0,Fine.,0.4\n"
                    "regular:9,Unknown context.,\n"
                    "b2,  ,\n"
                    "b2,Slow.,fast\n"
                    "a1,Twice.,\n")
    table, violations = imported.import_system(path, released_items(), "group-x")
    tableio.to_arrow(violations, "imported_violations")
    assert table["text"].tolist() == ["Fine."]
    assert [(v.line, v.problem.split(" (")[0].split(";")[0]) for v in violations.itertuples()] == [
        (3, "unknown item"), (4, "empty text"), (5, "field 'ttft_s' is 'fast'"),
        (6, "a second completion of this system for this context")]


def test_imported_file_without_the_system_says_which_it_holds(tmp_path):
    path = tmp_path / "elsewhere.jsonl"
    path.write_text('{"item_id": "a1", "system": "gpt-x", "text": "Hi."}\n')
    with pytest.raises(imported.CompletionImportError, match=r"holds completions of 'gpt-x', none of system 'polaris'"):
        imported.import_system(path, released_items(), "polaris")
    path.write_text('{"item_id": "a1", "text": "Hi."}\n[1, 2]\n')
    with pytest.raises(records.RecordError, match=r"elsewhere.jsonl, line 2: is a JSON list, not an object"):
        imported.import_system(path, released_items(), "polaris")
    path = tmp_path / "elsewhere.csv"
    path.write_text("item,text\na1,Hi.\n")
    with pytest.raises(records.RecordError, match=r"missing column\(s\) item_id"):
        imported.import_system(path, released_items(), "polaris")


@pytest.mark.parametrize("raw,reason,mode,expected,trimmed", [
    # the reply, cut by the token limit mid-sentence: ended at its last complete sentence
    ("It sounds exhausting. This means that even if", "length", "trim", "It sounds exhausting.", True),
    ('You matter. "Keep going," she said. And then', "length", "trim", 'You matter. "Keep going," she said.', True),
    ("It sounds exhausting. This means that even if", "length", "keep",
     "It sounds exhausting. This means that even if", False),
    ("It sounds exhausting. This means that even if", "stop", "trim",  # not cut: never touched
     "It sounds exhausting. This means that even if", False),
    ("It sounds exhausting. This means that even if", None, "trim",  # reason unknown: never touched
     "It sounds exhausting. This means that even if", False),
    ("no sentence ends anywhere in this cut reply", "length", "trim",  # nothing to end at: kept, still flagged
     "no sentence ends anywhere in this cut reply", False),
    ("It was cut right at the end.", "length", "trim", "It was cut right at the end.", False),
])
def test_a_reply_the_token_limit_cut_ends_at_its_last_sentence_when_the_study_says_trim(raw, reason, mode, expected,
                                                                                        trimmed):
    text, steps = generate.postprocess(raw, reason, mode)
    assert text == expected and ("trimmed_to_last_sentence" in steps) == trimmed
    with pytest.raises(ValueError, match="cut_replies must be one of"):
        generate.postprocess(raw, reason, "drop")


def test_the_finish_reason_is_a_column_and_the_share_cut_is_per_system():
    its = items()
    results = {"a1": {"text": "I hear you. And the", "finish_reason": "length", "from_cache": False, "cache_key": "k1"},
               "b2": {"text": "What happened?", "finish_reason": "stop", "from_cache": False, "cache_key": "k2"}}
    table = generate.model_table(its, "m-sys", results, "openai/m", "listener", "v1", cut_replies="trim")
    assert table["finish_reason"].tolist() == ["length", "stop"] and table["text"].tolist() == [
        "I hear you.", "What happened?"]
    assert table["raw_text"].tolist()[0] == "I hear you. And the"  # the reply as it came stays beside it
    unknown = generate.model_table(its, "old-sys", {k: {**v, "finish_reason": None} for k, v in results.items()},
                                   "openai/m", "listener", "v1")
    s = summary.summarize({"m-sys": table, "old-sys": unknown, "original": generate.original_table(its)},
                          "h.csv").set_index("system")
    assert s.loc["m-sys", "n_cut"] == 1 and s.loc["m-sys", "share_cut"] == 0.5
    assert "1 of 2 replies with a finish reason cut by the token limit (1 ended" in s.loc["m-sys", "note"]
    assert pd.isna(s.loc["old-sys", "n_cut"]) and pd.isna(s.loc["old-sys", "share_cut"])  # not known: not 0
    assert pd.isna(s.loc["original", "n_cut"])
    tableio.to_arrow(s.reset_index(), "systems")
