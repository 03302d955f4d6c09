"""Strict JSON: what :func:`json.loads` lets through, caught and located.

Python's JSON reader keeps the last of two equal keys, turns a 50,000-digit integer into a bare
``ValueError`` (beyond 4,300 digits), reads ``NaN`` and ``Infinity``, recurses until a ``RecursionError``
on deep nesting, and decodes ``"\\ud800"`` into a lone surrogate that no Parquet table can store. The
helpers here find each of these with the JSON path where it happens, so a reader (:mod:`heart.data.esconv`,
:mod:`heart.data.release`, the JSON Lines reader of :mod:`heart.common.tableio`) can name the file,
the record and the field. :func:`loads` applies them all.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

#: lone surrogates (unencodable: "\\ud800" is valid JSON) and C0/C1 control characters other than tab and
#: line breaks (ESC and CSI can drive a terminal; the real ESConv has none)
BAD_CHARS = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


UNDECODABLE = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8, as surrogateescape decodes them


def bad_text(obj):
    """(path, character) of the first string (key or value) holding a character no table can store."""
    for path, node in walk(obj):
        hit = BAD_CHARS.search(node) if isinstance(node, str) else None
        if hit:
            return path, hit.group()
    return None


def brackets(text: str, end: int | None = None):
    """(position, depth after it, opening?) of every bracket of ``text[:end]`` outside JSON strings."""
    depth, in_string, escaped = 0, False, False
    for pos, ch in enumerate(text if end is None else text[:end]):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            yield pos, depth, True
        elif ch in "]}":
            depth -= 1
            yield pos, depth, False


def walk(obj, path=(), keys: bool = True):
    """Every (path, node) of parsed JSON in document order; an object's keys are nodes at their value's path
    (unless ``keys`` is False: values only)."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            if keys:
                yield path + (k,), k
            yield from walk(v, path + (k,), keys)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from walk(v, path + (i,), keys)


def find_undecodable(obj):
    """The path of the first string holding undecodable bytes (surrogate escapes), or None."""
    return next((p for p, v in walk(obj) if isinstance(v, str) and UNDECODABLE.search(v)), None)


MAX_DEPTH = 64  # deeper nesting is refused (ESConv itself nests 5 levels; the JSON reader stops near 1,000)


def too_deep(obj, limit: int = MAX_DEPTH):
    """The path of the first value nested deeper than ``limit``, or None (without recursion).

    Depths alone are followed (no path per node: this runs on every file); the path is rebuilt only for
    a file that is too deep.
    """
    stack = [(0, obj)]
    while stack:
        depth, node = stack.pop()
        if depth > limit:
            break
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((depth + 1, child) for child in children if isinstance(child, (dict, list)) or depth == limit)
    else:
        return None
    stack = [((), obj)]
    while stack:
        path, node = stack.pop()
        if len(path) > limit:
            return path
        if isinstance(node, dict):
            stack.extend((path + (k,), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(node))))
    return None


class Duplicates(dict):
    """An object whose key list held a key twice (``keys_twice``); the first value is kept."""

    keys_twice: list


def pairs_hook(found: list):
    def hook(pairs):
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen, twice = set(), []
            for k, _ in pairs:
                if k in seen:
                    twice.append(k)
                seen.add(k)
            obj = Duplicates(pairs[::-1])  # first occurrence wins, as it is reported
            obj.keys_twice = twice
            found.append(obj)
        return obj
    return hook


MAX_DIGITS = 30  # an integer longer than this is no rating (and beyond 4,300 digits Python refuses it)


class HugeNumber:
    """An integer of more than :data:`MAX_DIGITS` digits, kept as its digit count for the message."""

    def __init__(self, digits: str):
        self.digits = len(digits.lstrip("-"))


def int_hook(found: list):
    """A ``parse_int`` that keeps a number of more than :data:`MAX_DIGITS` digits as a :class:`HugeNumber`
    (also listed in ``found``, so that only a file holding one is searched for where)."""
    def hook(digits: str):
        if len(digits) <= MAX_DIGITS:
            return int(digits)
        found.append(HugeNumber(digits))
        return found[-1]
    return hook


def find_huge(obj):
    """(path, node) of the first integer too long to be read, or None."""
    return next(((p, v) for p, v in walk(obj) if isinstance(v, HugeNumber)), None)


def find_duplicates(obj):
    """(path, key) of the first object with a key twice, in document order; None if there is none."""
    return next(((p, v.keys_twice[0]) for p, v in walk(obj) if isinstance(v, Duplicates)), None)


def too_deep_at(text: str, limit: int = MAX_DEPTH) -> int:
    """Character position where the nesting of ``text`` first goes deeper than ``limit``."""
    return next((pos for pos, depth, _ in brackets(text) if depth > limit), len(text))


def describe_char(ch: str) -> str:
    """A character :data:`BAD_CHARS` finds, as an error names it: "a lone surrogate U+D800" or "the
    control character U+001B"."""
    what = "a lone surrogate" if "\ud800" <= ch <= "\udfff" else "the control character"
    return f"{what} U+{ord(ch):04X}"


class StrictJSONError(ValueError):
    """A JSON text :func:`loads` refuses: ``problem`` in words, ``where`` the JSON path (a tuple, () for the
    top level) or None where it cannot be located, ``pos`` the character position or None."""

    def __init__(self, problem: str, where=None, pos=None):
        super().__init__(problem)
        self.problem, self.where, self.pos = problem, where, pos


class Constant:
    """``NaN``, ``Infinity`` or ``-Infinity`` where a JSON text holds one (not JSON, but Python's reader takes
    it), kept as its name so that :func:`loads` can say where it stands."""

    def __init__(self, name: str):
        self.name = name


def constant_hook(found: list):
    """A ``parse_constant`` that keeps each constant as a :class:`Constant` (also listed in ``found``)."""
    def hook(name: str):
        found.append(Constant(name))
        return found[-1]
    return hook


def loads(text: str, max_depth: int = MAX_DEPTH, bad_chars: bool = True):
    """``text`` parsed strictly: numbers with a fraction or exponent as :class:`~decimal.Decimal` (so that
    5.0 is not the integer 5 and 1e999 is not infinity), and an error for what :func:`json.loads` would let
    through -- invalid JSON, nesting deeper than ``max_depth``, a key twice in one object, an integer of
    more than :data:`MAX_DIGITS` digits, ``NaN``/``Infinity``, and (``bad_chars``) a lone surrogate or a
    C0/C1 control character other than tab and line breaks in a key or a string.

    Raises
    ------
    StrictJSONError
        With ``where`` (the JSON path) and/or ``pos`` (character position) of the first problem.
    """
    duplicates: list = []
    huge: list = []
    constants: list = []
    try:
        data = json.loads(text, object_pairs_hook=pairs_hook(duplicates), parse_int=int_hook(huge),
                          parse_float=Decimal, parse_constant=constant_hook(constants))
    except json.JSONDecodeError as exc:
        raise StrictJSONError(f"not valid JSON ({exc.msg}, line {exc.lineno}, column {exc.colno})",
                              pos=exc.pos) from None
    except RecursionError:
        pos = too_deep_at(text, max_depth)
        raise StrictJSONError(f"nested more than {max_depth} levels deep (at character {pos})", pos=pos) from None
    deep = too_deep(data, max_depth)
    if deep:
        raise StrictJSONError(f"nested more than {max_depth} levels deep", where=deep[:max_depth])
    if duplicates:
        where, key = find_duplicates(data) or ((), duplicates[0].keys_twice[0])
        raise StrictJSONError("the key appears twice in one object (a JSON reader keeps one "
                              "silently); remove one", where=(*where, key))
    found = find_huge(data) if huge else None
    if found:
        raise StrictJSONError(f"a number of {found[1].digits} digits", where=found[0])
    found = next(((p, v) for p, v in walk(data) if isinstance(v, Constant)), None) if constants else None
    if found:
        raise StrictJSONError(f"{found[1].name} is not a JSON number; leave the field empty (null)", where=found[0])
    if bad_chars:
        bad = bad_text(data)
        if bad:
            raise StrictJSONError(f"contains {describe_char(bad[1])}", where=bad[0])
    return data


def format_path(parts) -> str:
    """A JSON location as people read it: ``["dialog", 4, "content"]`` -> ``dialog[4].content``.

    A key that is not plain printable text (a control character, a lone surrogate, a zero-width
    character, a dot ...) is shown quoted with escapes, so an error message naming it can neither drive
    a terminal nor fail to be written.
    """
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        name = str(part)
        if not (name.isprintable() and name and not re.search(r"[\s.\[\]'\"]", name)):
            name = ascii(name) if not name.isascii() else repr(name)
        out += f".{name}" if out else name
    return out
