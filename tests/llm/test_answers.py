"""heart.llm.answers: structured answers read strictly."""

from pathlib import Path


from heart.llm.answers import parse_structured


ROOT = Path(__file__).resolve().parents[2]


def test_structured_answers_accept_raw_newlines_but_nothing_else():
    """llama.cpp's grammar lets a raw newline into a JSON string; that is read, other damage is not."""
    schema = {"type": "object", "required": ["winner"], "properties": {"winner": {"enum": ["A", "B"]}}}
    assert parse_structured('{"why": "line one\nline two", "winner": "A"}', schema) == (
        {"why": "line one\nline two", "winner": "A"}, None)
    parsed, err = parse_structured('{"winner": "C"}', schema)
    assert parsed is None and err.startswith("ValidationError")
    parsed, err = parse_structured('{"winner": "A"', schema)
    assert parsed is None and err.startswith("JSONDecodeError")
    assert parse_structured("plain text", None) == (None, None)
