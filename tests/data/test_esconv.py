"""heart.data.esconv: reading, validating and normalising raw ESConv files."""

import copy
import json

import pytest

from support import SHARED_ESCONV_DIR, needs_shared
from heart.data import esconv


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
    from support import FIXTURES
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
    "unknown_speaker": (_set([5, "dialog", 1, "speaker"], "therapist"), 5,
                        "dialog[1].speaker: unknown value 'therapist'"),
    "missing_content": (_del([4, "dialog", 2, "content"]), 4, "dialog[2].content: missing"),
    "content_not_string": (_set([6, "dialog", 0, "content"], 42), 6, "dialog[0].content: expected string, got int"),
    "empty_content": (_set([7, "dialog", 3, "content"], "   "), 7, "dialog[3].content: is empty or blank"),
    "missing_emotion": (_del([2, "emotion_type"]), 2, "emotion_type: missing"),
    "emotion_not_string": (_set([0, "emotion_type"], ["anxiety"]), 0, "emotion_type: expected string, got list"),
    "situation_mistyped": (_set([1, "situation"], None), 1, "situation: expected string, got NoneType"),
    "survey_not_digits": (_set([3, "survey_score", "seeker", "empathy"], "five"), 3,
                          "survey_score.seeker.empathy: expected a rating from 0 to 5 written as digits"),
    "feedback_not_digits": (_set([0, "dialog", 3, "annotation", "feedback"], "great"), 0,
                            "dialog[3].annotation.feedback: expected a rating"),
    "strategy_not_string": (_set([0, "dialog", 1, "annotation", "strategy"], 3), 0,
                            "dialog[1].annotation.strategy: expected string"),
    "annotation_not_object": (_set([4, "dialog", 0, "annotation"], "Question"), 4,
                              "dialog[0].annotation: expected object"),
    "conversation_not_object": (_set([5], "a conversation"), 5, "(conversation): expected object"),
    "mixed_vocabulary": (_set([1, "dialog", 0, "speaker"], "speaker"), 1, "dialog: mixes speaker vocabularies"),
    # hostile files (hardening): each used to crash with a message naming no file, conversation or field
    "score_beyond_int64": (_set([2, "survey_score", "seeker", "empathy"], "9" * 30), 2,
                           "survey_score.seeker.empathy: expected a rating from 0 to 5"),
    "score_out_of_range": (_set([1, "survey_score", "supporter", "relevance"], "6"), 1,
                           "survey_score.supporter.relevance: expected a rating from 0 to 5"),
    "score_negative_int": (_set([0, "survey_score", "seeker", "initial_emotion_intensity"], -1), 0,
                           "survey_score.seeker.initial_emotion_intensity: expected a rating from 0 to 5"),
    "score_huge_int": (_set([3, "dialog", 3, "annotation", "feedback"], 10**30), 3, "dialog[3].annotation.feedback: "
                       "a number of 31 digits; no ESConv field holds one (ratings are 0 to 5)"),
    "score_float": (_set([4, "survey_score", "seeker", "empathy"], 2.5), 4, "survey_score.seeker.empathy"),
    "lone_surrogate": (_set([5, "dialog", 2, "content"], "I feel \ud800 bad"), 5,
                       "dialog[2].content: contains a lone surrogate U+D800"),
    "nul_in_content": (_set([6, "dialog", 1, "content"], "hello\x00there"), 6,
                       "dialog[1].content: contains the control character U+0000"),
    "control_in_situation": (_set([2, "situation"], "bell \x07"), 2,
                             "situation: contains the control character U+0007"),
    "zero_width_only": (_set([7, "dialog", 0, "content"], "\u200b\u200d \ufeff"), 7,
                        "dialog[0].content: is empty or blank (white space or invisible characters only)"),
    "zero_width_label": (_set([1, "problem_type"], "\u2060"), 1, "problem_type: is empty or blank"),
    # found by a second review: each crashed, or passed, before
    "score_digits_and_newline": (_set([1, "survey_score", "seeker", "empathy"], "4\n"), 1,
                                 "survey_score.seeker.empathy: expected a rating from 0 to 5 written as digits"),
    "huge_int_in_an_unknown_key": (_set([0, "seeker_question1"], -(10**40)), 0,
                                   "seeker_question1: a number of 41 digits"),
    "score_whole_float": (_set([2, "survey_score", "seeker", "empathy"], 5.0), 2,
                          "survey_score.seeker.empathy: expected a rating from 0 to 5 written as digits, got "
                          "Decimal('5.0')"),  # as a float, 5.0 (or 4.99999999999999999999) passed as 5
    "blank_situation": (_set([3, "situation"], " \u200b "), 3, "situation: is empty or blank"),
    "hangul_filler_only": (_set([6, "dialog", 2, "content"], "\u3164\u2800\ufe0f"), 6, "dialog[2].content: is empty"),
    "tag_characters_only": (_set([5, "emotion_type"], "\U000e0061\U000e0062"), 5, "emotion_type: is empty"),
    "c1_control_in_content": (_set([4, "dialog", 1, "content"], "hi \x9b31m there"), 4,
                              "dialog[1].content: contains the control character U+009B"),
    "escape_in_a_key": (_set([2, "\x1b[2J"], "x"), 2, "'\\x1b[2J': contains the control character U+001B"),
    "surrogate_in_a_key": (_set([1, "survey_score", "seeker", "\udfff"], "3"), 1,
                           "survey_score.seeker.'\\udfff': contains a lone surrogate U+DFFF"),
    "seeker_only": (lambda d: d[4].__setitem__("dialog", [u for u in d[4]["dialog"] if u["speaker"] == "seeker"]), 4,
                    "dialog: has only seeker utterances; a conversation needs a seeker and a supporter"),
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


def test_the_validator_with_its_references_inlined_finds_what_the_schema_as_written_finds(tiny_esconv):
    """The validator checks the schema with its ``$defs`` inlined (no reference resolved per turn): every
    conversation of every bad case gets the same errors (field, check, message) from the schema as written."""
    import jsonschema

    assert "$ref" not in json.dumps(esconv._validator().schema)
    as_written = jsonschema.validators.validator_for(esconv._SCHEMA)(esconv._SCHEMA)

    def errors(validator, conv):
        return sorted((list(e.absolute_path), e.validator, e.message) for e in validator.iter_errors(conv))

    compared = 0
    for case, (mutate, _, _) in sorted(BAD_CASES.items()):
        data = copy.deepcopy(load(tiny_esconv))
        mutate(data)
        for conv in data:
            if isinstance(conv, dict):
                found = errors(esconv._validator(), conv)
                assert found == errors(as_written, conv), case
                compared += bool(found)
    assert compared >= 20  # the bad cases' conversations, most of them schema errors


def test_invalid_json_names_conversation(tmp_path, tiny_esconv):
    text = tiny_esconv.read_text()
    # break the JSON inside the fourth conversation: drop a comma between two utterances
    start = text.index("She told everyone my secret")
    cut = text.index("},", start)
    bad = tmp_path / "broken.json"
    bad.write_text(text[:cut + 1] + text[cut + 2:])
    with pytest.raises(esconv.ESConvFormatError,
                       match=rf"^{bad}: conversation 3, json: invalid JSON at line \d+, column \d+"):
        esconv.read_raw(bad)


def test_non_utf8_names_conversation_and_field(tmp_path, tiny_esconv):
    raw = tiny_esconv.read_bytes()
    pos = raw.index(b"Math mostly")
    bad = tmp_path / "latin1.json"
    bad.write_bytes(raw[:pos] + b"Math \xe9 mostly" + raw[pos + len(b"Math mostly"):])
    with pytest.raises(esconv.ESConvFormatError) as err:
        esconv.read_raw(bad)
    assert str(err.value).startswith(f"{bad}: conversation 4, dialog[4].content: not valid UTF-8 (byte ")


def test_surrogate_and_score_in_a_real_json_file_are_named(tmp_path, tiny_esconv):
    """The escapes as they stand in a file (json.dumps above writes them the same way): checked end to end."""
    text = tiny_esconv.read_text().replace("Math mostly", "Math \\udc00 mostly", 1)
    bad = tmp_path / "surrogate.json"
    bad.write_text(text)
    with pytest.raises(esconv.ESConvFormatError,
                       match=rf"^{bad}: conversation 4, dialog\[4\]\.content: contains a lone"):
        esconv.ingest(bad)


def test_zero_is_accepted_as_a_score_as_in_the_real_file(tmp_path, tiny_esconv):
    data = load(tiny_esconv)
    data[0]["survey_score"]["supporter"]["relevance"] = "0"  # ESConv.json has this in 4 conversations
    ok = tmp_path / "zero.json"
    ok.write_text(json.dumps(data))
    assert esconv.ingest(ok)[0].loc[0, "supporter_relevance"] == 0


def _raw_edit(text: str, case: str) -> str:
    if case == "duplicate_key":
        # a second "emotion_type" in conversation 2: a JSON reader would keep the last one silently
        at = text.index('"emotion_type"', text.index('"emotion_type"', text.index('"emotion_type"') + 1) + 1)
        return text[:at] + '"emotion_type": "anger", ' + text[at:]
    if case == "duplicate_nested_key":
        start = text.index("She told everyone my secret")
        return text[:start] + 'x", "content": "dup' + text[start + 1:]
    if case == "deep_nesting":
        start = text.index('"situation"', text.index("She told everyone my secret") - 2000)
        return text[:start] + '"deep": ' + "[" * 100_000 + "]" * 100_000 + ", " + text[start:]
    if case == "truncated":
        return text[: text.index("She told everyone my secret")]
    raise KeyError(case)


@pytest.mark.parametrize("content, expected", [
    (b'{"a": 1, "a": 2}', r"a: the key appears twice in one object"),
    (b'{"a": {"b": 1, "b": 2}}', r"a\.b: the key appears twice in one object"),
    (b'[{"x": ' + b"7" * 5000 + b"}]", r"conversation 0, x: a number of 5000 digits"),  # int() refuses > 4300
    (b'[{"deep": ' + b"[" * 500 + b"]" * 500 + b"}]", r"conversation 0, json: nested more than 64 levels deep "
     r"\(under deep\[0\]\[0\]\)"),  # within what the JSON reader follows, beyond what the workflow accepts
    (b'[{"survey_score": {"seeker": {"empathy": -' + b"9" * 40 + b"}}}]",
     r"conversation 0, survey_score\.seeker\.empathy: a number of 40 digits; no ESConv field holds one"),
    (b'{"a": 1}'[:0] + b"[" + b'{"\\ud800": 1, "\\ud800": 2}' + b"]",
     r"conversation 0, '\\ud800': the key appears twice"),
])
def test_hostile_top_levels_are_named(tmp_path, content, expected):
    bad = tmp_path / "x.json"
    bad.write_bytes(content)
    with pytest.raises(esconv.ESConvFormatError, match=rf"^{bad}: {expected}"):
        esconv.read_raw(bad)


@pytest.mark.parametrize("case, expected", [
    ("duplicate_key", r"conversation 2, emotion_type: the key appears twice in one object"),
    ("duplicate_nested_key", r"conversation 3, dialog\[\d+\]\.content: the key appears twice"),
    ("deep_nesting", r"conversation 3, json: nested more than 64 levels deep"),
    ("truncated", r"conversation 3, json: invalid JSON at line \d+, column \d+"),
])
def test_hostile_raw_files_are_named(tmp_path, tiny_esconv, case, expected):
    bad = tmp_path / f"{case}.json"
    bad.write_text(_raw_edit(tiny_esconv.read_text(), case))
    with pytest.raises(esconv.ESConvFormatError, match=rf"^{bad}: {expected}"):
        esconv.read_raw(bad)


def test_a_byte_order_mark_is_accepted_and_utf16_is_named(tmp_path, tiny_esconv):
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + tiny_esconv.read_bytes())
    assert len(esconv.read_raw(bom)) == 8
    utf16 = tmp_path / "utf16.json"
    utf16.write_bytes(tiny_esconv.read_text().encode("utf-16"))
    with pytest.raises(esconv.ESConvFormatError, match=rf"^{utf16}: .*not valid UTF-8 \(byte 0\)"):
        esconv.read_raw(utf16)


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


def test_the_schemas_blank_text_is_the_readers_blank_text():
    """esconv.schema.yaml's text pattern and heart.common.records.INVISIBLE agree on every code point."""
    import re
    import sys

    from heart.common import records

    schema = re.compile(esconv._TEXT_PATTERN)
    differ = [hex(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF
              and bool(schema.search(chr(c))) == records.is_blank(chr(c))]
    assert differ == []
    assert records.is_blank("\u3164 \u2800\ufe0f\U000e0061\u200b") and not records.is_blank("\u3164 a")
    import unicodedata

    assert all(records.is_blank(chr(c)) for c in range(sys.maxunicode + 1)
               if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) == "Cf")  # every format character
