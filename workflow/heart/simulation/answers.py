"""What the simulated provider answers: deterministic, schema-valid content, content-sensitive judge
verdicts, and the seeded draws behind them (:mod:`heart.simulation.simulator` serves them)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import statistics


normal = statistics.NormalDist()


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()


def unit(*parts: object) -> float:
    """A number in [0, 1) determined by ``parts``."""
    return int.from_bytes(_digest(*parts)[:8], "big") / 2.0 ** 64


def seeded_rng(*parts: object) -> random.Random:
    return random.Random(int.from_bytes(_digest(*parts), "big"))


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- content -----------------------------------------------------------------------------------

WORDS = ("calm", "steady", "kind", "clear", "warm", "gentle", "honest", "patient", "brief", "careful",
         "hopeful", "open", "safe", "small", "simple", "support", "listen", "feel", "step", "time", "rest",
         "friend", "plan", "breathe", "notice", "share", "trust", "care", "hear", "understand")

_OPENERS = ("That sounds really hard.", "I can hear how much this is weighing on you.",
            "Thank you for telling me about this.", "It makes sense that you feel this way.",
            "I'm sorry you're going through this.", "That is a lot to carry at once.",
            "It sounds like you have been under a great deal of stress.")
_MIDDLES = ("Many people feel overwhelmed when things pile up like this.",
            "Your feelings are valid, and you don't have to sort everything out today.",
            "It might help to take one small step at a time.",
            "Have you been able to talk with someone you trust about it?",
            "Be gentle with yourself while you work through this.",
            "Sometimes writing things down can make them feel a little more manageable.",
            "It is okay to ask for help when you need it.",
            "You have already shown real strength by reaching out.")
_CLOSERS = ("What feels most pressing to you right now?", "I'm here to listen whenever you want to talk.",
            "Would it help to think through a first step together?",
            "How have you been taking care of yourself lately?", "What would feel supportive to you today?")
_VERDICTS = ("is warmer and more specific to the seeker's situation",
             "acknowledges the seeker's feelings before offering suggestions",
             "offers a more concrete and realistic next step",
             "listens more attentively and asks a better question",
             "stays closer to what the seeker actually said",
             "is more respectful of the seeker's own judgement")
_WEAKER = ("moves to advice too quickly", "stays generic", "repeats the seeker's words without adding much",
           "asks several questions at once", "sounds a little scripted", "misses part of what the seeker said")

_TOKEN = re.compile(r"\s?\S{1,4}|\s")


def tokens(text: str) -> list[str]:
    """The answer cut into "tokens" (about four characters each; they join back to ``text``)."""
    return _TOKEN.findall(text)


def plain_reply(key: str, model: str) -> str:
    """A short supportive reply (20-60 words) determined by the request ``key`` and the model name."""
    rng = seeded_rng("plain", model, key)
    target = rng.randint(20, 60)
    opener, closer = rng.choice(_OPENERS), rng.choice(_CLOSERS)
    middles = list(_MIDDLES)
    rng.shuffle(middles)
    chosen, words = [], len(opener.split()) + len(closer.split())
    for sentence in middles:
        n = len(sentence.split())
        if words >= target or words + n > 60:
            break
        chosen.append(sentence)
        words += n
    return " ".join([opener, *chosen, closer])


def cut(text: str, max_tokens: int | None) -> tuple[str, str]:
    """``text`` cut at a word boundary to at most ``max_tokens`` tokens; and the finish reason."""
    if not max_tokens or len(tokens(text)) <= max_tokens:
        return text, "stop"
    kept = "".join(tokens(text)[:max_tokens])
    if " " in kept.strip():
        kept = kept.rsplit(" ", 1)[0]
    return kept, "length"


def _words(rng: random.Random, lo: int, hi: int) -> str:
    """Plausible short words, between ``lo`` and ``hi`` characters (0 <= lo <= hi)."""
    target = rng.randint(lo, max(lo, min(hi, lo + 40)))
    out = ""
    while len(out) < target:
        out = f"{out} {rng.choice(WORDS)}" if out else rng.choice(WORDS)
    out = out[:hi].rstrip() if len(out) > hi else out
    return out if len(out) >= lo else out + "x" * (lo - len(out))


def _resolve(schema: dict, root: dict) -> dict:
    ref = schema.get("$ref")
    while isinstance(ref, str) and ref.startswith("#/"):
        target = root
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        ref = schema.get("$ref") if schema.get("$ref") != ref else None
    return schema


def instance(schema: dict | bool, rng: random.Random, root: dict | None = None, depth: int = 0) -> object:
    """A value valid against ``schema`` (the subset structured-output providers support), drawn from ``rng``.

    Objects get their required properties and, by a coin, each optional one (no additional ones); enums
    and consts are honoured; strings are plausible words within minLength/maxLength (a ``pattern`` or
    ``format`` is not); numbers within their bounds; arrays within minItems/maxItems. ``anyOf``/``oneOf``
    take one branch, ``allOf`` its merged branches; ``$ref`` to the same document is followed.
    """
    if schema is True or schema == {}:
        return rng.choice(WORDS)
    if not isinstance(schema, dict):
        return None
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if "allOf" in schema:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = _resolve(part, root)
            for k, v in part.items():
                if k in ("properties", "$defs", "definitions") and k in merged:
                    merged[k] = {**merged[k], **v}
                elif k == "required" and k in merged:
                    merged[k] = list(dict.fromkeys([*merged[k], *v]))
                else:
                    merged[k] = v
        return instance(merged, rng, root, depth)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            branches = schema[key]
            # a oneOf branch of type null is the usual way to say "optional": prefer a real value
            real = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")] or branches
            rest = {k: v for k, v in schema.items() if k != key}
            return instance({**rest, **real[rng.randrange(len(real))]}, rng, root, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        kind = kinds[rng.randrange(len(kinds))]
    if kind is None:
        kind = ("object" if "properties" in schema else "array" if "items" in schema else "string")
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        out = {}
        for name, sub in props.items():
            if name in required or (depth < 4 and rng.random() < 0.5):
                out[name] = instance(sub, rng, root, depth + 1)
        extra = schema.get("additionalProperties")
        for name in sorted(required - set(out)):  # required but not described
            out[name] = instance(extra if isinstance(extra, dict) else True, rng, root, depth + 1)
        return out
    if kind == "array":
        lo = int(schema.get("minItems", 0))
        hi = int(schema.get("maxItems", max(lo, 3 if depth < 4 else lo)))
        n = rng.randint(lo, max(lo, hi))
        prefix = schema.get("prefixItems", [])
        items = schema.get("items", {})
        return [instance(prefix[i] if i < len(prefix) else items, rng, root, depth + 1) for i in range(n)]
    if kind in ("integer", "number"):
        return _number(schema, rng, kind == "integer")
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    lo = int(schema.get("minLength", 0))
    hi = int(schema.get("maxLength", max(lo, 60)))
    return _words(rng, lo, hi)


def _number(schema: dict, rng: random.Random, integer: bool) -> int | float:
    lo = schema.get("minimum", -math.inf)
    hi = schema.get("maximum", math.inf)
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool):
        lo = max(lo, schema["exclusiveMinimum"] + (1 if integer else 1e-9))
    if "exclusiveMaximum" in schema and not isinstance(schema["exclusiveMaximum"], bool):
        hi = min(hi, schema["exclusiveMaximum"] - (1 if integer else 1e-9))
    if math.isinf(lo) and math.isinf(hi):
        lo, hi = 0, 10
    elif math.isinf(lo):
        lo = hi - 10
    elif math.isinf(hi):
        hi = lo + 10
    step = schema.get("multipleOf")
    if step:
        k_lo, k_hi = math.ceil(lo / step), math.floor(hi / step)
        value = step * rng.randint(k_lo, max(k_lo, k_hi))
        return int(value) if integer else value
    if integer:
        return rng.randint(math.ceil(lo), max(math.ceil(lo), math.floor(hi)))
    value = lo + (hi - lo) * rng.random()
    short = round(value, 3)  # plausible numbers, unless rounding leaves the bounds
    return short if lo <= short <= hi else value


# --- judge verdicts ----------------------------------------------------------------------------

def quality(text: str, judge: str, seed: int = 0, axis: str = "") -> float:
    """A reply's deterministic "quality" as judge ``judge`` sees it (per HEART ``axis`` when given): mostly
    the same for every judge, partly its own, plus a little for length (judges like longer replies)."""
    shared = 0.75 * unit("quality", seed, text) + 0.25 * unit("quality", seed, judge, text)
    length = 0.1 * min(len(text) / 800, 1.0)
    if not axis:
        return shared + length
    return 0.6 * shared + 0.4 * unit("axis", seed, judge, axis, text) + length


def _strength(gap: float) -> int:
    return 1 + min(4, int(abs(gap) / 0.1))


def is_judge_schema(schema: dict) -> bool:
    winner = schema.get("properties", {}).get("winner", {})
    return isinstance(winner, dict) and sorted(winner.get("enum", [])) == ["A", "B"]


def judge_material(messages: list) -> dict | None:
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
            try:
                material = json.loads(m["content"])
            except ValueError:
                return None
            if (isinstance(material, dict) and isinstance(material.get("response_A"), str)
                    and isinstance(material.get("response_B"), str)):
                return material
            return None
    return None


def verdict(schema: dict, material: dict, judge: str, rng: random.Random, seed: int = 0,
            position_bias: float = 0.02) -> dict:
    """A judge's answer to ``material`` (response_A, response_B): an instance of ``schema`` whose winner,
    strength, axis marks and rationale follow the replies' :func:`quality` (position-consistent but for
    near-ties, which ``position_bias`` gives to A)."""
    out = instance(schema, rng)
    props = schema.get("properties", {})
    a, b = material["response_A"], material["response_B"]
    gap = quality(a, judge, seed) + position_bias - quality(b, judge, seed)
    winner = "A" if gap > 0 else "B"
    out["winner"] = winner
    strength_schema = props.get("strength", {})
    strength = _strength(gap)
    if isinstance(strength_schema, dict) and "strength" in out and _allowed(strength_schema, strength):
        out["strength"] = strength
    axes = props.get("axes", {})
    if isinstance(axes, dict) and isinstance(out.get("axes"), dict):
        for key, mark_schema in axes.get("properties", {}).items():
            d = quality(a, judge, seed, key) + position_bias - quality(b, judge, seed, key)
            mark = "none" if abs(d) < 0.04 else ("A" if d > 0 else "B") + "+" * _strength(d)
            if key in out["axes"] and _allowed(mark_schema, mark):
                out["axes"][key] = mark
    rationale = props.get("rationale", {})
    if isinstance(rationale, dict) and "rationale" in out and rationale.get("type") == "string":
        loser = "B" if winner == "A" else "A"
        text = f"Response {winner} {rng.choice(_VERDICTS)}, while response {loser} {rng.choice(_WEAKER)}."
        if "enum" not in rationale and len(text) >= rationale.get("minLength", 0):
            out["rationale"] = text[:rationale.get("maxLength", len(text))]
    return out


def _allowed(schema: dict, value: object) -> bool:
    return "enum" not in schema or value in schema["enum"]


# --- the server --------------------------------------------------------------------------------

def schema_of(body: dict) -> dict | None:
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return None
    if isinstance(fmt.get("schema"), dict):
        return fmt["schema"]
    inner = fmt.get("json_schema")
    if isinstance(inner, dict) and isinstance(inner.get("schema"), dict):
        return inner["schema"]
    return None


def prompt_chars(messages: list) -> int:
    total = 0
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(p.get("text", "")) for p in content if isinstance(p, dict))
    return total


def logprobs(text: str, key: str, k: int) -> dict:
    rng = seeded_rng("logprobs", key)
    content = []
    for tok in tokens(text):
        lp = round(-3.0 * rng.random() ** 3, 4)
        top = [{"token": tok, "logprob": lp, "bytes": list(tok.encode())}]
        for i in range(max(0, k - 1)):
            alt = " " + rng.choice(WORDS)[:4]
            alt_lp = round(lp - 0.5 - 2.0 * (i + rng.random()), 4)
            top.append({"token": alt, "logprob": alt_lp, "bytes": list(alt.encode())})
        content.append({"token": tok, "logprob": lp, "bytes": list(tok.encode()),
                        "top_logprobs": top[:k] if k else []})
    return {"content": content, "refusal": None}
