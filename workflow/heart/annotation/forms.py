"""What a posted form may hold, checked on the server (every page's form comes here).

Text typed by people is untrusted and must survive the export and the workflow's strict readers
(``human_judgments.read``, ``completions.import_humans``), so a form is refused -- with a message the person
can act on -- rather than stored when its text

* holds a control character (NUL, ESC, or a C1 control such as U+0092, which a mis-decoded curly quote from
  a word processor becomes): one stored answer like that used to stop every later ``snakemake``;
* holds a bidirectional override (U+202A-U+202E, U+2066-U+2069), which can make the text read differently
  from what is stored;
* is too short once zero-width and other invisible format characters are set aside (five zero-width spaces
  are not a reason): length limits count visible characters, letters or digits.

Whitespace (line breaks, tabs, runs of spaces) is collapsed to single spaces, as every reply a rater compares
is (:func:`heart.annotation.tasks.shown_text`): a person's reply carries no layout a rater could recognise.
"""

from __future__ import annotations

import re
import unicodedata

from heart.annotation.tasks import shown_text
from heart.judging import human_judgments

LIMITS = {"reply_words": 100, "reply_chars": 800, "rationale_min_chars": 5, "rationale_chars": 1000}
#: a per-axis mark as posted (the shown sides) and as stored: what the human judgments reader accepts
AXIS_MARKS = tuple(human_judgments.AXIS_MARKS)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def clean_text(raw: str, field: str) -> tuple[str, str | None]:
    """(text with whitespace collapsed, None), or ("", what is wrong with it) for a text field."""
    text = shown_text(raw)
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cs") or ch in "\ufffe\uffff":
            return "", (f"Your {field} holds an invisible control character (U+{ord(ch):04X}), often left by "
                        "pasting from a word processor. Retype the quotation marks and apostrophes, then submit.")
    if _BIDI.search(text):
        return "", f"Your {field} holds a text-direction control character; retype it without one."
    return text, None


def visible_length(text: str) -> int:
    """Letters, digits, punctuation and symbols in ``text``: not spaces nor invisible format characters."""
    return sum(1 for ch in text if not ch.isspace() and unicodedata.category(ch) != "Cf")


def validate(kind: str, form, strategy_keys: list[str], axes: list[str] = ()) -> tuple[dict, str | None]:
    """(answer, None) or ({}, what is wrong) for a posted form of a task of ``kind``; a rating task with
    ``axes`` needs a mark per axis (field ``axis_<key>``: A, B or same)."""
    if kind == "writing":
        text, error = clean_text(form.get("reply", ""), "reply")
        if error:
            return {}, error
        words = len(text.split())
        if not visible_length(text) or not any(ch.isalnum() for ch in text):
            return {}, "Write your reply before submitting."
        if words > LIMITS["reply_words"] or len(text) > LIMITS["reply_chars"]:
            return {}, (f"Your reply has {words} words; keep it to 1-3 sentences "
                        f"(about 40 words, at most {LIMITS['reply_words']}).")
        return {"text": text, "pasted": form.get("pasted") == "1"}, None
    if kind == "rating":
        choice = str(form.get("choice", ""))
        if choice not in {"1", "2", "3", "4", "5"}:
            return {}, "Choose one of the five options."
        rationale, error = _reason(form)
        if error:
            return {}, error
        marks = {k: str(form.get(f"axis_{k}", "")) for k in axes}
        unmarked = [k for k, v in marks.items() if v not in AXIS_MARKS]
        if unmarked:
            return {}, f"Mark every aspect (A, B or no clear difference): {', '.join(unmarked)} is not marked."
        return {"choice": int(choice), "rationale": rationale, **({"axes": marks} if axes else {})}, None
    if kind == "spot_check":
        chosen = form.getlist("strategy")
        unknown = [k for k in chosen if k not in strategy_keys]
        if unknown:
            return {}, "An unknown strategy was submitted; reload the page."
        if not chosen and form.get("none") != "1":
            return {}, 'Tick every strategy the reply uses, or tick "None of these".'
        if chosen and form.get("none") == "1":
            return {}, 'You ticked strategies and "None of these"; untick one.'
        return {"present": sorted(set(chosen))}, None
    if kind == "safety_review":
        decision = str(form.get("decision", ""))
        if decision not in ("confirm", "clear"):
            return {}, "Choose whether the flag is right (confirm) or wrong (clear)."
        reason, error = _reason(form)
        if error:
            return {}, error
        return {"decision": decision, "reason": reason}, None
    raise ValueError(f"unknown task kind {kind!r}")


def _reason(form) -> tuple[str, str | None]:
    """(the reason given, None) or ("", what is wrong with it): a few words, at most ``rationale_chars``."""
    reason, error = clean_text(form.get("rationale", ""), "reason")
    if error:
        return "", error
    if visible_length(reason) < LIMITS["rationale_min_chars"] or sum(ch.isalnum() for ch in reason) < 2:
        return "", "Say in a few words why you chose it."
    if len(reason) > LIMITS["rationale_chars"]:  # refused whole, never cut: the page keeps the text
        return "", (f"Your reason has {len(reason)} characters; shorten it to at most "
                    f"{LIMITS['rationale_chars']} and submit again.")
    return reason, None
