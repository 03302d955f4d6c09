"""heart.esconv: reading, validating and normalising raw ESConv files."""

import copy
import json

import pytest

from conftest import SHARED_ESCONV_DIR, needs_shared
from heart import esconv


def load(path):
    return json.loads(path.read_text())


def test_tiny_fixture_tables(tiny_esconv):
    conversations, turns, data = esconv.ingest(tiny_esconv)
    assert len(conversations) == len(data) == 8
    assert list(conversations["conversation_id"]) == list(range(8))
    assert set(turns["role"]) == {"seeker", "supporter"}
    # conversation 0 has two consecutive seeker utterances (dialog[3], dialog[4]) -> one turn
    c0 = turns[turns["conversation_id"] == 0].reset_index(drop=True)
    merged = c0.iloc[3]
    assert merged["role"] == "seeker"
    assert list(merged["utterances"]) == [
        data[0]["dialog"][3]["content"], data[0]["dialog"][4]["content"]]
    assert merged["text"] == " ".join(merged["utterances"])
    assert merged["feedback"] == 4 and merged["first_utterance_index"] == 3
    # supporter turn with two utterances keeps one strategy per utterance
    two = c0.iloc[4]
    assert two["role"] == "supporter"
    assert list(two["strategies"]) == ["Reflection of feelings", "Question"]
    # turns strictly alternate after merging, and utterances are all accounted for
    for _, conv in turns.groupby("conversation_id"):
        roles = conv.sort_values("turn_index")["role"].tolist()
        assert all(a != b for a, b in zip(roles, roles[1:]))
    assert turns["utterances"].map(len).sum() == sum(len(c["dialog"]) for c in data)
    assert conversations.loc[0, "seeker_initial_emotion_intensity"] == 4


def test_speaker_listener_vocabulary(tmp_path):
    from conftest import FIXTURES
    conversations, turns, _ = esconv.ingest(FIXTURES / "esconv_tiny_speaker_listener.json")
    same, same_turns, _ = esconv.ingest(FIXTURES / "esconv_tiny.json")
    assert set(conversations["speaker_vocabulary"]) == {"speaker/listener"}
    assert set(turns["role"]) == {"seeker", "supporter"}
    first3 = same_turns[same_turns["conversation_id"] < 3].reset_index(drop=True)
    assert turns["role"].tolist() == first3["role"].tolist()
    assert turns["text"].tolist() == first3["text"].tolist()


# --- bad input: every case names the file, the conversation and the field -----

def _set(path, value):
    def mutate(data):
        obj = data
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
    return mutate


def _del(path):
    def mutate(data):
        obj = data
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]
    return mutate


BAD_CASES = {
    # id: (mutation of the parsed fixture, expected conversation index, expected text)
    "missing_dialog": (_del([2, "dialog"]), 2, "dialog: missing"),
    "dialog_not_list": (_set([1, "dialog"], "hello"), 1, "dialog: expected array"),
    "empty_dialog": (_set([3, "dialog"], []), 3, "dialog: is empty"),
    "missing_speaker": (_del([0, "dialog", 4, "speaker"]), 0, "dialog[4].speaker: missing"),
    "unknown_speaker": (_set([5, "dialog", 1, "speaker"], "therapist"), 5, "dialog[1].speaker: unknown value 'therapist'"),
    "missing_content": (_del([4, "dialog", 2, "content"]), 4, "dialog[2].content: missing"),
    "content_not_string": (_set([6, "dialog", 0, "content"], 42), 6, "dialog[0].content: expected string, got int"),
    "empty_content": (_set([7, "dialog", 3, "content"], "   "), 7, "dialog[3].content: is empty or blank"),
    "missing_emotion": (_del([2, "emotion_type"]), 2, "emotion_type: missing"),
    "emotion_not_string": (_set([0, "emotion_type"], ["anxiety"]), 0, "emotion_type: expected string, got list"),
    "situation_mistyped": (_set([1, "situation"], None), 1, "situation: expected string, got NoneType"),
    "survey_not_digits": (_set([3, "survey_score", "seeker", "empathy"], "five"), 3, "survey_score.seeker.empathy: expected a rating written as digits"),
    "feedback_not_digits": (_set([0, "dialog", 3, "annotation", "feedback"], "great"), 0, "dialog[3].annotation.feedback: expected a rating"),
    "strategy_not_string": (_set([0, "dialog", 1, "annotation", "strategy"], 3), 0, "dialog[1].annotation.strategy: expected string"),
    "annotation_not_object": (_set([4, "dialog", 0, "annotation"], "Question"), 4, "dialog[0].annotation: expected object"),
    "conversation_not_object": (_set([5], "a conversation"), 5, "(conversation): expected object"),
    "mixed_vocabulary": (_set([1, "dialog", 0, "speaker"], "speaker"), 1, "dialog: mixes speaker vocabularies"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_conversation_is_named(tmp_path, tiny_esconv, case):
    mutate, index, expected = BAD_CASES[case]
    data = copy.deepcopy(load(tiny_esconv))
    mutate(data)
    bad = tmp_path / f"{case}.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(esconv.ESConvFormatError) as err:
        esconv.ingest(bad)
    msg = str(err.value)
    assert msg.startswith(f"{bad}: conversation {index}, "), msg
    assert expected in msg, msg


def test_invalid_json_names_conversation(tmp_path, tiny_esconv):
    text = tiny_esconv.read_text()
    # break the JSON inside the fourth conversation: drop a comma between two utterances
    start = text.index("She told everyone my secret")
    cut = text.index("},", start)
    bad = tmp_path / "broken.json"
    bad.write_text(text[:cut + 1] + text[cut + 2:])
    with pytest.raises(esconv.ESConvFormatError, match=rf"^{bad}: conversation 3, json: invalid JSON at line \d+, column \d+"):
        esconv.read_raw(bad)


def test_non_utf8_names_conversation_and_field(tmp_path, tiny_esconv):
    raw = tiny_esconv.read_bytes()
    pos = raw.index(b"Math mostly")
    bad = tmp_path / "latin1.json"
    bad.write_bytes(raw[:pos] + b"Math \xe9 mostly" + raw[pos + len(b"Math mostly"):])
    with pytest.raises(esconv.ESConvFormatError) as err:
        esconv.read_raw(bad)
    assert str(err.value).startswith(f"{bad}: conversation 4, dialog[4].content: not valid UTF-8 (byte ")


@pytest.mark.parametrize("content, expected", [
    (b"", "file is empty"),
    (b'{"dialog": []}', "top level must be a JSON array of conversations, got dict"),
    (b"[]", "contains no conversations"),
])
def test_file_level_problems(tmp_path, content, expected):
    bad = tmp_path / "x.json"
    bad.write_bytes(content)
    with pytest.raises(esconv.ESConvFormatError, match=f"^{bad}: {expected}"):
        esconv.read_raw(bad)


def test_missing_file_says_how_to_provide_one(tmp_path):
    with pytest.raises(esconv.ESConvFormatError, match="file not found.*local_copy"):
        esconv.read_raw(tmp_path / "nope.json")


def test_source_record(tiny_esconv):
    data = load(tiny_esconv)
    rec = esconv.source_record(tiny_esconv, data, upstream_sha256="0" * 64)
    assert rec.loc[0, "n_conversations"] == 8
    assert len(rec.loc[0, "sha256"]) == 64 and not rec.loc[0, "matches_upstream"]
    assert esconv.source_record(tiny_esconv, data, None).loc[0, "matches_upstream"] is None


@needs_shared
def test_real_esconv():
    conversations, turns, data = esconv.ingest(SHARED_ESCONV_DIR / "ESConv.json")
    assert len(conversations) == 1300
    assert turns["utterances"].map(len).sum() == sum(len(c["dialog"]) for c in data) == 38365
    # upstream README strategy counts survive the merge (Question 3801, Others 3341)
    strategies = turns["strategies"].dropna().explode().value_counts()
    assert strategies["Question"] == 3801 and strategies["Others"] == 3341


@needs_shared
def test_real_failed_esconv_speaker_listener():
    conversations, turns, data = esconv.ingest(SHARED_ESCONV_DIR / "FailedESConv.json")
    assert len(conversations) == 196
    assert set(conversations["speaker_vocabulary"]) == {"speaker/listener"}
    assert set(turns["role"]) == {"seeker", "supporter"}
    assert (turns["text"].str.strip() != "").all()
