"""User-supplied record files (CSV, JSON Lines, Parquet) read strictly, and the identifiers in them.

:func:`read_records` reads a table a person made elsewhere (human completions, judgments, strategy labels,
imported completions) into strings, with errors that name the file, the line and the field;
:func:`normalise_id` and :func:`same_but_for_case` keep one identifier one identifier. The workflow's own
tables are :mod:`heart.common.tableio`'s.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from decimal import Decimal
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from heart.common import strict_json
from heart.common.export import FORMULA_START, looks_like_formula


#: characters that show nothing (a regular-expression class body): a text made only of these and white
#: space is blank. Every format character (Unicode category Cf: zero-width, bidirectional marks, word
#: joiner, tags ...), fillers (Hangul, Braille blank), combining grapheme joiner, variation selectors.
INVISIBLE = ("\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
             "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0"
             "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
             "\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef")
_VISIBLE = re.compile(f"[^\\s{INVISIBLE}]")


def is_blank(text) -> bool:
    """True for a text with nothing visible in it (white space and invisible characters only: see INVISIBLE)."""
    return not isinstance(text, str) or _VISIBLE.search(text) is None


class RecordError(ValueError):
    """Bad input in a user-supplied CSV file; the message names the file, the line and the field."""


CSV_HINT = ("fields holding commas, quotes or line breaks must be double-quoted, and the file must be UTF-8 "
            "(a byte-order mark is accepted)")
#: the longest field read, in every format (CSV's own limit, csv.field_size_limit())
MAX_FIELD_CHARS = 131_072


def _decode(path: Path, raw: bytes) -> str:
    # a byte-order mark, or one NUL in the first two bytes (ASCII text in UTF-16, either byte order)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(raw) > 1 and raw[:2].count(b"\x00") == 1):
        raise RecordError(f"{path}: looks like UTF-16; save it as UTF-8 ({CSV_HINT})")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise RecordError(f"{path}, line {line}: not valid UTF-8 (byte {exc.start}: "
                          f"{raw[exc.start:exc.start + 1]!r}); save the file as UTF-8") from None


_INVISIBLES = re.compile(f"[{INVISIBLE}]")


def normalise_id(value: str) -> str:
    """An identifier as it is compared: NFKC (full-width ``ｒ１`` is ``r1``), invisible characters removed
    (``r\\u200b1`` is ``r1``), surrounding white space stripped."""
    return _INVISIBLES.sub("", unicodedata.normalize("NFKC", value)).strip()


#: file name endings of the formats a user-supplied table may come in (anything else is read as CSV)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)


def record_label(path, line: int) -> str:
    """How an error names record ``line`` of ``path``: ``line N`` (CSV, JSON Lines), ``row N`` (Parquet)."""
    return record_labels(path, [line])[0]


def record_labels(path, lines) -> list[str]:
    """:func:`record_label` of each of ``lines``."""
    word = "row" if Path(path).suffix.lower() in PARQUET_SUFFIXES else "line"
    return [f"{word} {line}" for line in lines]


def read_records(path, required, optional=(), allow_extra: bool = False, ids=()) -> pd.DataFrame:
    """Read a user-supplied table strictly: every value a string ("" when empty), plus ``line``.

    The format follows the file name: ``*.jsonl``/``*.ndjson`` is JSON Lines (one object per line;
    ``line`` its line), ``*.parquet`` Parquet (``line`` the 1-based row), anything else CSV, described
    here. Numbers in JSON Lines and Parquet are read as their text; nested values are an error.

    ``line`` is the file line on which each record starts (the header is line 1). Errors name the
    file, the line and, where there is one, the field: a missing or unreadable file, an encoding that
    is not UTF-8 (a BOM is accepted), NUL or other control characters, a quote left open (a truncated
    file), a record with more or fewer fields than the header, a repeated or missing column, and — unless
    ``allow_extra`` — a column the format does not know (a misspelt optional column would otherwise be
    ignored without a word). Blank lines are skipped.

    ``ids`` names the identifier columns (a name, or a tuple of names whose values are one vocabulary,
    e.g. the two shown systems): their values pass :func:`normalise_id`, and two spellings that differ
    only in case are an error (``c1`` and ``C1`` would otherwise count as two contributors, or let one
    rater judge a pair twice).
    """
    path = Path(path)
    expected = f"expected {', '.join(required)}" + (f" (+ optional {', '.join(optional)})" if optional else "")
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES + PARQUET_SUFFIXES:
        header, records, lines = (_jsonl_records(path, required, optional, allow_extra) if suffix in JSONL_SUFFIXES
                                  else _parquet_records(path))
        if not header and not records:  # no object at all: no data, as a CSV file with a header only
            header = list(required)
        return _checked(path, header, records, lines, required, optional, allow_extra, ids, expected)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    text = _decode(path, raw)
    if not text.strip():
        raise RecordError(f"{path}: is empty; expected a header line ({expected}) and one record per line")
    reader = csv.reader(StringIO(text, newline=""), strict=True)  # lines end at \n, \r\n, \r only
    records, lines = [], []
    try:
        header = next(reader)
        start = reader.line_num + 1
        for record in reader:
            if record:
                if len(record) != len(header):
                    raise RecordError(f"{path}, line {start}: has {len(record)} fields, the header "
                                      f"{len(header)}; {CSV_HINT}")
                records.append(record)
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise RecordError(f"{path}, line {start}: a field is longer than {csv.field_size_limit():,} characters; "
                              "a quote opened and never closed takes in the rest of the file; "
                              f"{CSV_HINT}") from None
        raise RecordError(f"{path}, line {start}: not readable as CSV ({exc}); the file may be truncated; "
                          f"{CSV_HINT}") from None
    header = [h.strip() for h in header]
    # a cell that a spreadsheet (or heart.common.export) wrote as text with a leading "'" before = + - @:
    # the text without it
    records = [[v[1:] if v[:1] == "'" and (v[1:2] in FORMULA_START or looks_like_formula(v[1:])) else v
                for v in record] for record in records]
    return _checked(path, header, records, lines, required, optional, allow_extra, ids, expected)


def _checked(path, header, records, lines, required, optional, allow_extra, ids, expected) -> pd.DataFrame:
    """The checks every format shares: columns, control characters, ids; the table of strings."""
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise RecordError(f"{path}: column(s) {', '.join(map(repr, repeated))} appear more than once in the header")
    missing = [c for c in required if c not in header]
    if missing:
        raise RecordError(f"{path}: missing column(s) {', '.join(missing)}; {expected}")
    unknown = [c for c in header if c not in required and c not in optional]
    if unknown and not allow_extra:
        raise RecordError(f"{path}: unknown column(s) {', '.join(map(repr, unknown))}; {expected}")
    for record, line in zip(records, lines):
        for col, value in zip(header, record):
            # C0/C1 control characters but tab and line breaks (they can drive a terminal or hide text), and
            # lone surrogates (a JSON "\\ud800" escape decodes to one; no Parquet table can store it)
            bad = strict_json.BAD_CHARS.search(value)
            if bad:
                what = strict_json.describe_char(bad.group())
                raise RecordError(f"{path}, {record_label(path, line)}: field {col!r} contains {what}"
                                  + ("; it is not text (a JSON \\ud800 escape?)" if "surrogate" in what else ""))
            if len(value) > MAX_FIELD_CHARS:
                raise RecordError(f"{path}, {record_label(path, line)}: field {col!r} holds {len(value):,} "
                                  f"characters; at most {MAX_FIELD_CHARS:,} (as in a CSV file) are read")
    table = pd.DataFrame(records, columns=header, dtype=object) if records else pd.DataFrame(columns=header)
    for col in optional:
        if col not in table.columns:
            table[col] = ""
    table["line"] = lines
    for group in ids:
        group = (group,) if isinstance(group, str) else tuple(group)
        for col in group:
            table[col] = [normalise_id(v) for v in table[col]]
        same_but_for_case(path, table, group)
    return table.reset_index(drop=True)


def _scalar_text(value, path, label: str, col: str) -> str:
    """A JSON/Parquet value as the text a CSV field would hold ("" for null; 3.0 as "3")."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, Decimal):  # a JSON number with a fraction or exponent, exactly as written
        if value == value.to_integral_value() and abs(value.adjusted()) <= strict_json.MAX_DIGITS:
            return str(int(value))
        return str(value)
    raise RecordError(f"{path}, {label}: field {col!r} is {value!r:.60}; expected text or a number")


def _jsonl_records(path: Path, required=(), optional=(), allow_extra: bool = False):
    """JSON Lines: one object per line, checked per line (unknown, missing or repeated fields name the line);
    the header is the union of the objects' keys in first-seen order, a key an object lacks is empty."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    text = _decode(path, raw)
    expected = f"expected {', '.join(required)}" + (f" (+ optional {', '.join(optional)})" if optional else "")
    objects, lines, header = [], [], []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {n}"
        try:  # deep nesting, a key twice, NaN/Infinity, a 50,000-digit number: each named (strict_json)
            obj = strict_json.loads(line, bad_chars=False)  # characters: checked per field in _checked
        except strict_json.StrictJSONError as exc:
            field = f"field {exc.where[0]!r}: " if exc.where else ""
            hint = "; write one JSON object per line" if exc.pos is not None else ""
            raise RecordError(f"{where}: {field}{exc.problem}{hint}") from None
        if not isinstance(obj, dict):
            raise RecordError(f"{where}: is a JSON {type(obj).__name__}, not an object; write one JSON object "
                              "per line")
        unknown = [k for k in obj if k not in required and k not in optional]
        if unknown and not allow_extra:
            raise RecordError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; {expected}")
        missing = [k for k in required if k not in obj]
        if missing:
            raise RecordError(f"{where}: field {missing[0]!r} is missing; {expected}")
        header.extend(k for k in obj if k not in header)
        objects.append(obj)
        lines.append(n)
    records = [[_scalar_text(o.get(c), path, f"line {n}", c) for c in header] for o, n in zip(objects, lines)]
    return header, records, lines


def _parquet_records(path: Path):
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise RecordError(f"{path}: not a readable Parquet file ({exc}); write it with pandas DataFrame.to_parquet "
                          "or pyarrow") from None
    header = [c for c in table.column_names if not c.startswith("__index_level_")]
    columns = {c: table.column(c).to_pylist() for c in header}
    rows = range(table.num_rows)
    records = [[_scalar_text(columns[c][i], path, f"row {i + 1}", c) for c in header] for i in rows]
    return header, records, [i + 1 for i in rows]


def two_records(label_1: str, label_2: str) -> str:
    """Two record labels as one: ('line 3', 'line 7') -> 'lines 3 and 7'; one label if they are the same."""
    if label_1 == label_2:
        return label_1
    unit_1, n_1 = label_1.split(" ")
    unit_2, n_2 = label_2.split(" ")
    return f"{unit_1}s {n_1} and {n_2}" if unit_1 == unit_2 else f"{label_1} and {label_2}"


#: Cyrillic and Greek letters that look like Latin ones (after casefolding), from Unicode's confusables
#: (UTS #39): "gрt-4o" with a Cyrillic "р" and "gpt-4o" would otherwise be two systems, silently
HOMOGLYPHS = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "ë", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "ï", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "ү": "y", "һ": "h", "ӏ": "l", "ɡ": "g",
    "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "n", "ι": "i", "κ": "k", "μ": "u", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
})


def skeleton(value: str) -> str:
    """How an id is compared for look-alikes: casefolded, look-alike Cyrillic and Greek letters as Latin."""
    return value.casefold().translate(HOMOGLYPHS)


def _alike(a: str, b: str) -> str:
    """Why ids ``a`` and ``b`` (same :func:`skeleton`) clash: their case, or a letter of another script."""
    if a.casefold() == b.casefold():
        return "which differ only in case"
    odd = next((ch for ch in a + b if ord(ch.casefold()[0]) in HOMOGLYPHS), None)
    what = f"{unicodedata.name(odd, 'a letter')} U+{ord(odd):04X}" if odd else "a letter of another script"
    return f"which look alike ({what} in one of them looks like a Latin letter)"


def same_but_for_case(path, table: pd.DataFrame, columns, labels=None) -> None:
    """Error when two values of ``columns`` (one vocabulary) differ only in case or look alike (the same
    :func:`skeleton`: a Cyrillic "р" for a Latin "p"); empty values skipped.

    ``labels``: each row's record label (default: :func:`record_label` of the table's ``line``).
    """
    labels = list(labels) if labels is not None else record_labels(path, table["line"])
    # a value already seen never clashes: each value's first record per column is all that is compared, in
    # file order and column order within a record (the same first clash as field by field; ids repeat on
    # every record, so this compares a few hundred values, not every field)
    firsts = []
    for k, col in enumerate(columns):
        values = table[col].to_numpy(dtype=object)
        present = np.flatnonzero(pd.notna(values))
        unique = pd.Series(values[present], dtype=object).drop_duplicates()
        firsts += [(int(present[n]), k, value) for n, value in zip(unique.index, unique)]
    first: dict[str, tuple[str, str, str]] = {}
    for n, k, value in sorted(firsts, key=lambda f: f[:2]):
        col, label = columns[k], labels[n]
        seen = first.setdefault(skeleton(value), (value, col, label))
        if seen[0] != value:
            lines = two_records(seen[2], label)
            fields = f"field {col!r} has" if seen[1] == col else f"fields {seen[1]!r} and {col!r} have"
            raise RecordError(f"{path}, {lines}: {fields} {seen[0]!r} and {value!r}, {_alike(seen[0], value)}; "
                              "ids are compared exactly, so write one id one way")


def read_csv(path, **kwargs) -> pd.DataFrame:
    """``pandas.read_csv`` for the workflow's own versioned resource tables, with errors that name the
    file and the line (see :func:`read_records` for files users supply)."""
    try:
        text = _decode(Path(path), Path(path).read_bytes())
        reader = csv.reader(StringIO(text, newline=""))
        header = next(reader, [])
        for record in reader:
            if record and len(record) != len(header):
                raise ValueError(f"{path}: line {reader.line_num} has {len(record)} fields, the header "
                                 f"{len(header)}; {CSV_HINT}")
        return pd.read_csv(path, encoding="utf-8-sig", **kwargs)
    except (pd.errors.ParserError, csv.Error) as exc:
        raise ValueError(f"{path}: not a readable CSV file ({str(exc).strip()}); {CSV_HINT}") from exc
