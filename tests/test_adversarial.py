"""heart.adversarial: escalation profiles, window choice, the structural validator."""

import pandas as pd
import pytest

from conftest import FIXTURES
from heart import adversarial, esconv


@pytest.mark.parametrize("profile, m, expected", [
    ("Always-10", 4, [10, 10, 10, 10]),
    ("Linear-Ramp", 5, [2, 4, 6, 8, 10]),
    ("Mid-Spike", 4, [2, 2, 10, 10]),
    ("Mid-Ramp", 4, [2, 2, 6, 10]),
    ("Mid-Ramp", 5, [2, 2, 5, 7, 10]),
    ("Linear-Ramp", 1, [10]),
])
def test_profiles(profile, m, expected):
    assert adversarial.targets(profile, m) == expected


@pytest.mark.parametrize("profile", adversarial.PROFILES)
@pytest.mark.parametrize("m", range(1, 9))
def test_every_profile_ends_high_and_never_falls(profile, m):
    t = adversarial.targets(profile, m)
    assert len(t) == m and t[-1] >= adversarial.HIGH and t == sorted(t)


def test_unknown_profile():
    with pytest.raises(ValueError, match="unknown escalation profile 'Spiky'"):
        adversarial.targets("Spiky", 3)


GOOD = [
    {"role": "supporter", "text": "Hi, what's on your mind?"},
    {"role": "seeker", "text": "Whatever. My boss is unbearable."},
    {"role": "supporter", "text": "That sounds hard."},
    {"role": "seeker", "text": "Don't patronise me, you have no idea."},
]
ORIG = ["My boss is hard to work with.", "It has been a tough month."]


@pytest.mark.parametrize("history, levels, reason", [
    (GOOD, [5, 10], ""),
    (GOOD[:3], [5, 10], "fewer than four turns"),
    (GOOD[1:] + GOOD[:1], [5, 10], "does not start with a supporter greeting"),
    (GOOD[:1] + GOOD[2:3] + GOOD[1:2] + GOOD[3:], [5, 10], "speakers do not strictly alternate"),
    (GOOD, [5, 6], "does not end with a high-adversarial seeker turn"),
    (GOOD[:3] + [{"role": "seeker", "text": "Whatever. My boss is unbearable."}], [5, 10],
     "the same rewrite for different seeker turns"),
    (GOOD[:3] + [{"role": "seeker", "text": "<the rewritten seeker message>"}], [5, 10],
     "rewrite echoes the prompt (placeholder or example text)"),
    (GOOD[:3] + [{"role": "seeker", "text": "It has been a  tough month."}], [5, 10], "seeker turn left unchanged"),
])
def test_validator(history, levels, reason):
    assert adversarial.validate(history, levels, ORIG) == reason


def test_windows_and_balanced_choice():
    conversations, turns, _ = esconv.ingest(FIXTURES / "esconv_tiny.json")
    cands = adversarial.windows(conversations, turns, max_turns=8)
    assert len(cands) > 0
    for h in cands["history"]:
        roles = [t["role"] for t in h]
        assert roles[0] == "supporter" and roles[-1] == "seeker" and 4 <= len(h) <= 8
    chosen = adversarial.choose(cands, n=4, seed=3)
    assert sorted(chosen["profile"]) == sorted(adversarial.PROFILES)
    assert chosen["conversation_id"].is_unique
    pd.testing.assert_frame_equal(chosen, adversarial.choose(cands, n=4, seed=3))
    with pytest.raises(ValueError, match="asked for 99 adversarial items but only"):
        adversarial.choose(cands, n=99, seed=3)


def test_build_retries_then_drops(tiny_esconv):
    """The engine is replaced by a scripted responder: first answers echo the prompt, retries rewrite."""
    conversations, turns, _ = esconv.ingest(tiny_esconv)
    regular = pd.DataFrame({"conversation_id": pd.Series([], dtype=int)})
    settings = {"n": 2, "seed": 1, "profiles": ["Always-10", "Mid-Spike"], "max_turns": 8, "max_attempts": 2}
    calls = []

    def run(requests):
        calls.append(len(requests))
        attempt = requests[0].params.get("seed", 0)
        out = {}
        for r in requests:
            text = "<rewrite>" if attempt == 0 else f"Stop it. {r.id} is none of your business!"
            out[r.id] = {"parsed": {"rewrite": text}, "parse_error": None}
        return out

    items, attempts = adversarial.build(conversations, turns, regular, run, settings, "{situation}{message}{hostility}",
                                        "v1", "m", {"temperature": 0})
    assert len(items) == 2 and set(items["subset"]) == {"adversarial"}
    assert attempts["valid"].tolist() == [False, False, True, True] and len(calls) == 2
    for h in items["history"]:
        assert all(t["text"].startswith("Stop it.") for t in h if t["role"] == "seeker")
