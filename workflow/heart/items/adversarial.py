"""Adversarial emotional-resistance items (HEART paper §9.2, §4.9).

A stratified subset of ESConv conversations is cut to a window that starts with
the supporter's greeting and ends with a seeker turn; an LLM rewrites only the
seeker turns to a hostility target (0-10) set per turn by one of four escalation
profiles, keeping the situation and the supporter's turns.

Rewriting follows the dialogue. The seeker turns of a window are rewritten one
after the other: the request for seeker turn *j* shows the situation, the
dialogue so far as transcript lines (``Seeker: ...`` / ``Supporter: ...``, with
the seeker turns before *j* already rewritten) and the message to rewrite with
its target (:func:`rewrite_messages`). Round *j* of every window being rewritten
is one batch of requests (:func:`rewrite_wave`). The dialogue is material, never
instructions: it goes into the user message as one JSON object (so no text can
start a transcript line or leave its string), and the engine breaks every
chat-template control token in it before the request is keyed or sent
(:mod:`heart.llm.chat_tokens`), so no text can open, close or add a chat turn.

A validator checks the rewritten dialogue (:func:`validate`): its structure, every
rewritten seeker turn (not empty, not the original, no echoed prompt, no
safety-critical content by the screening lexicon), and the text of the final
seeker turn, which must be *high-adversarial* by :func:`hostility` (the
criterion is in :data:`MIN_HOSTILITY`'s comment). A failing window is retried
with a new sampling seed, ``max_attempts`` times in all; then it is dropped and
its slot goes to another window (:func:`build`), so ``n`` items are made while
windows remain. ``adversarial_attempts.parquet`` records every attempt and why
it failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from heart.items import screening
from heart.llm.request import SPEAKER, Request, json_messages

PROFILES = ["Always-10", "Linear-Ramp", "Mid-Spike", "Mid-Ramp"]
HIGH = 8  # a seeker turn with target >= HIGH is "high-adversarial"
# text a model copies from the prompt instead of rewriting: template placeholders, the request's JSON
# keys, a transcript speaker label (a rewrite must be one seeker message, not a piece of transcript)
PLACEHOLDER = re.compile(
    r"<[^>]*>|\{[a-z_]+\}|rewritten (?:seeker )?message|hostility \d+ out of 10|dialogue_so_far|"
    r"\"?\bhostility\"?\s*[:=]\s*\d|\b(?:Seeker|Supporter)\s*:", re.IGNORECASE)
REWRITE_SCHEMA = {
    "type": "object",
    "properties": {"rewrite": {"type": "string", "minLength": 1}},
    "required": ["rewrite"],
    "additionalProperties": False,
}

#: Cues of hostility toward the supporter or the help, in the screening lexicon's format (see
#: ``workflow/resources/screening/lexicon.yaml``: ``terms`` match on word boundaries, case-insensitive,
#: a trailing ``*`` any word ending; ``patterns`` are regular expressions), compiled by the same
#: matcher (:func:`heart.items.screening._compile`). The three stances are the paper's (§4.9: adversarial
#: seekers "expressed anger, skepticism, or explicit resistance to help").
HOSTILITY_CUES = {
    "resistance": {  # refuses the help, pushes the supporter away
        "terms": ["whatever", "leave me alone", "go away", "back off", "shut up", "forget it", "spare me",
                  "save it", "drop it", "don't bother", "stop it", "just stop", "stop asking", "that's enough",
                  "enough is enough", "none of your business", "mind your own business", "i don't care",
                  "not interested", "who cares", "so what", "i'm done", "give me a break",
                  "telling me what to do"],
        "patterns": [r"\b(?:don'?t|do not|stop) (?:even )?"
                     r"(?:tell|lectur|preach|patroni[sz]|judg|analy[sz]|pretend)\w*",
                     r"\b(?:don'?t|do not) (?:want|need) (?:to hear|to talk|advice|your|any|help|a lecture)",
                     r"\b(?:not|stop) (?:helping|listening)\b"],
    },
    "skepticism": {  # doubts the supporter, or that talking helps
        "terms": ["you have no idea", "easy for you to say", "what's the point", "what is the point",
                  "yeah right", "sure you do", "heard it all before", "nothing helps", "doesn't help",
                  "does not help", "won't help", "will not help", "not helpful", "fake", "scripted", "robot",
                  "canned", "platitude*", "cliche*", "not that simple", "not that easy",
                  "won't change anything", "doesn't change anything"],
        "patterns": [r"\byou (?:don'?t|do not|can'?t|cannot|never|wouldn'?t|won'?t) (?:even |really )?"
                     r"(?:understand|get it|know|care|listen|help)",
                     r"\b(?:what|how) (?:do|would|could|can) you (?:even |possibly )?(?:know|understand)\b",
                     r"\bhow (?:is|does|would|will) (?:that|this|talking)(?: \w+)? "
                     r"(?:supposed to )?(?:help|change)",
                     r"\b(?:don'?t|do not) see how\b",
                     r"\bwhy (?:do|would|should) (?:you|i) (?:even )?(?:care|bother)\b",
                     r"\b(?:this|that|it|talking|you|your \w+)(?:'s|'re| is| are) (?:\w+ )?"
                     r"(?:useless|pointless|a waste of (?:my )?time)\b"],
    },
    "anger": {
        "terms": ["angry", "furious", "pissed", "livid", "mad at", "sick of", "fed up", "hate", "ridiculous",
                  "stupid", "damn*", "annoy*", "irritat*", "infuriat*", "rage", "outrag*", "patroni*",
                  "condescend*", "insult*", "rude", "tired of", "ugh", "crap", "bullshit"],
    },
}
#: intensity: an exclamation mark or a word in capitals (three letters or more)
INTENSITY = re.compile(r"!|\b[A-Z]{3,}\b")
#: The validator's criterion: the final seeker turn is *high-adversarial* when its text pushes back
#: against the supporter or the help (a ``resistance`` or ``skepticism`` cue) and its hostility score
#: -- how many of the four markers resistance, skepticism, anger and intensity it shows -- is at least
#: MIN_HOSTILITY. So a dismissal alone ("Whatever.") or anger at a third party alone ("I hate my
#: boss!") is not enough; "Stop it, you have no idea what this is like" is.
MIN_HOSTILITY = 2
_CUES = {k: screening._compile(v, f"heart.items.adversarial.HOSTILITY_CUES.{k}") for k, v in HOSTILITY_CUES.items()}

# validator reasons (the attempts table's ``reason``) that name a failure without details
NOT_HOSTILE = "final seeker turn is not high-adversarial"


def targets(profile: str, m: int, low: int = 2, high: int = 10) -> list[int]:
    """Hostility targets for ``m`` seeker turns under an escalation profile.

    Always-10: high throughout. Linear-Ramp: low to high evenly. Mid-Spike: low,
    then high from the middle turn on (sudden). Mid-Ramp: low for the first half,
    then a ramp that reaches high on the last turn (late onset). Every profile
    ends on ``high``.
    """
    if m < 1:
        raise ValueError("a profile needs at least one seeker turn")
    if profile == "Always-10" or m == 1:
        return [high] * m
    if profile == "Linear-Ramp":
        return [round(low + (high - low) * j / (m - 1)) for j in range(m)]
    half = m // 2
    if profile == "Mid-Spike":
        return [low if j < half else high for j in range(m)]
    if profile == "Mid-Ramp":
        ramp = m - half
        return [low] * half + [round(low + (high - low) * (j + 1) / ramp) for j in range(ramp)]
    raise ValueError(f"unknown escalation profile {profile!r} (known: {', '.join(PROFILES)})")


# --- the hostility of a text -------------------------------------------------------------------

def hostility(text: str) -> tuple[int, list[str]]:
    """Hostility score of one seeker turn and the markers found.

    Returns
    -------
    (int, list of str)
        The number of markers present (0-4) and their names, in the order resistance, skepticism,
        anger, intensity (cues: :data:`HOSTILITY_CUES`, :data:`INTENSITY`).
    """
    plain = text.replace("\u2019", "'").replace("\u2018", "'")  # typographic apostrophes: "don’t"
    found = [k for k, p in _CUES.items() if p.search(plain)]
    if INTENSITY.search(plain):
        found.append("intensity")
    return len(found), found


def high_adversarial(text: str) -> bool:
    """Whether a seeker turn is high-adversarial by the text (criterion: :data:`MIN_HOSTILITY`)."""
    score, found = hostility(text)
    return score >= MIN_HOSTILITY and bool({"resistance", "skepticism"} & set(found))


# --- candidate windows and their choice --------------------------------------------------------

def windows(conversations: pd.DataFrame, turns: pd.DataFrame, max_turns: int,
            exclude_conversations=(), lexicon=None) -> pd.DataFrame:
    """Candidate windows: supporter greeting first, >= 4 turns, last turn a seeker turn
    followed in the data by a supporter reply; at most ``max_turns`` turns. Conversations
    with safety or clinical cues (per the screening lexicon) are left out."""
    labels = conversations.set_index("conversation_id")
    excluded = set(exclude_conversations)
    rows = []
    for cid, conv in turns.sort_values(["conversation_id", "turn_index"]).groupby("conversation_id"):
        if cid in excluded:
            continue
        roles, texts = conv["role"].tolist(), conv["text"].tolist()
        if roles[0] != "supporter":
            continue
        ends = [k for k in range(3, min(len(roles) - 1, max_turns)) if roles[k] == "seeker"]
        if not ends:
            continue
        k = ends[-1]
        if lexicon is not None and any(any(lexicon.exclusions(t)) for t in texts[: k + 2]):
            continue
        lab = labels.loc[cid]
        rows.append({
            "conversation_id": int(cid), "emotion_type": lab["emotion_type"],
            "problem_type": lab["problem_type"], "situation": lab["situation"],
            "stratum": f"{lab['emotion_type']} x {lab['problem_type']}",
            "history": [{"role": r, "text": t} for r, t in zip(roles[: k + 1], texts[: k + 1])],
            "original_reply": texts[k + 1],
            "original_strategies": list(conv["strategies"].tolist()[k + 1]),
            "seeker_turn_index": int(conv["turn_index"].tolist()[k]),
        })
    return pd.DataFrame(rows)


def choose(candidates: pd.DataFrame, n: int, seed: int, profiles=PROFILES) -> pd.DataFrame:
    """Stratified, seeded choice of ``n`` windows; profiles assigned in balanced rotation."""
    if n > len(candidates):
        raise ValueError(
            f"asked for {n} adversarial items but only {len(candidates)} conversations have a usable "
            "window (supporter greeting first, >= 4 turns, no safety or clinical cues, not used by a "
            "regular item); lower adversarial_items.n or raise adversarial_items.max_turns"
        )
    if n == 0:
        return candidates.iloc[0:0].assign(profile=pd.Series(dtype=str))
    alloc = screening.allocate(candidates["stratum"].value_counts().to_dict(), n, min_per_stratum=0)
    picked = []
    for stratum, k in sorted(alloc.items()):
        pool = candidates[candidates["stratum"] == stratum].sort_values("conversation_id")
        rng = np.random.default_rng(screening._stratum_seed(seed, stratum))
        picked.append(pool.iloc[np.sort(rng.choice(len(pool), size=k, replace=False))])
    chosen = pd.concat(picked).sort_values("conversation_id").reset_index(drop=True)
    order = np.random.default_rng(seed).permutation(len(chosen))
    chosen["profile"] = [profiles[i % len(profiles)] for i in np.argsort(order)]
    return chosen


def reserve(candidates: pd.DataFrame, chosen: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The windows not chosen, in the seeded order replacements are taken in (:func:`build`)."""
    rest = candidates[~candidates["conversation_id"].isin(chosen["conversation_id"])]
    rest = rest.sort_values("conversation_id").reset_index(drop=True)
    rng = np.random.default_rng(screening._stratum_seed(seed, "adversarial replacements"))
    # a replacement takes the profile of the slot it fills (:func:`build`)
    return rest.iloc[rng.permutation(len(rest))].reset_index(drop=True).assign(profile=None)


def chosen_windows(conversations, turns, regular_items, settings: dict, lexicon=None) -> pd.DataFrame:
    """Windows outside the regular items' conversations, chosen per the ``adversarial_items`` settings."""
    cands = windows(conversations, turns, settings["max_turns"],
                    exclude_conversations=regular_items["conversation_id"], lexicon=lexicon)
    return choose(cands, settings["n"], settings["seed"], settings["profiles"])


# --- the rewriting requests --------------------------------------------------------------------

def transcript(turns) -> list[str]:
    """Transcript lines of a dialogue: ``"Seeker: <text>"`` / ``"Supporter: <text>"``, whitespace collapsed."""
    return [f"{SPEAKER.get(t['role'], t['role'])}: {' '.join(str(t['text']).split())}" for t in turns]


def rewrite_messages(instructions: str, situation: str, so_far, message: str, hostility_target: int) -> tuple:
    """The rewriting messages: the instructions (the prompt file) as the system turn, then one user turn
    holding all the material as one JSON object -- the situation, the dialogue so far as transcript lines,
    the message to rewrite and its target.

    JSON keeps every text inside its own string (a newline, a quote or ``Supporter:`` in a turn cannot
    start a transcript line of its own); the engine breaks chat-template control tokens in it
    (:func:`heart.llm.request.prepare`), so no text can open, close or add a chat turn.
    """
    material = {"situation": situation, "dialogue_so_far": transcript(so_far), "message": message,
                "hostility": int(hostility_target)}
    return json_messages(instructions, material, indent=1)


def attempt_params(attempt: int, base_params: dict) -> dict:
    """Decoding params of an attempt: attempt 0 uses the model's configured (deterministic) params; a retry
    samples with temperature 0.8 and seed = attempt, so it can produce something new. Either way at least
    200 tokens are allowed, so the JSON answer is not cut off."""
    room = {"max_tokens": max(int(base_params.get("max_tokens", 0)), 200)}
    return room if attempt == 0 else {**base_params, **room, "temperature": 0.8, "seed": attempt}


def rewrite_request(window, history: list[dict], j: int, level: int, attempt: int, model: str, prompt: str,
                    version: str, base_params: dict) -> Request:
    """The request that rewrites seeker turn ``j`` of ``window``; ``history`` holds the window's turns with
    the seeker turns before ``j`` already rewritten (only turns before ``j`` are shown)."""
    return Request(
        id=f"{window.conversation_id}:{j}", model=model,
        messages=rewrite_messages(prompt, window.situation, history[:j], window.history[j]["text"], level),
        template_version=f"adversarial:{version}", schema=REWRITE_SCHEMA,
        params=attempt_params(attempt, base_params))


def rewrite_requests(chosen: pd.DataFrame, model: str, prompt: str, version: str, attempt: int,
                     base_params: dict) -> list[Request]:
    """One request per seeker turn of every window, as a cost preview counts them.

    Later rounds' real prompts hold the earlier rounds' rewrites, which exist only once they are made;
    here the original seeker turns stand in for them (same number of calls, similar length), so for turns
    after a window's first seeker turn the preview's "cached" count is a lower bound.
    """
    reqs = []
    for row in chosen.itertuples():
        seeker = [j for j, t in enumerate(row.history) if t["role"] == "seeker"]
        for j, level in zip(seeker, targets(row.profile, len(seeker))):
            reqs.append(rewrite_request(row, row.history, j, level, attempt, model, prompt, version, base_params))
    return reqs


def first_attempt_requests(conversations, turns, regular_items, settings: dict, prompt: str, version: str,
                           model: str, base_params: dict, lexicon=None) -> list[Request]:
    """The rewrite requests of the first attempt (what a cost preview counts; see :func:`rewrite_requests`)."""
    chosen = chosen_windows(conversations, turns, regular_items, settings, lexicon)
    return rewrite_requests(chosen, model, prompt, version, 0, base_params)


# --- the validator -----------------------------------------------------------------------------

def structure_problem(history: list[dict], levels: list[int]) -> str:
    """The structural check of a dialogue (paper §9.2); "" if valid, else the reason."""
    roles = [t["role"] for t in history]
    if len(history) < 4:
        return "fewer than four turns"
    if roles[0] != "supporter":
        return "does not start with a supporter greeting"
    if any(a == b for a, b in zip(roles, roles[1:])):
        return "speakers do not strictly alternate"
    if roles[-1] != "seeker" or not levels or levels[-1] < HIGH:
        return "does not end with a high-adversarial seeker turn"
    return ""


def turn_problem(new: str, old: str, earlier=(), lexicon=None) -> str:
    """The check of one rewritten seeker turn against its original and the window's earlier rewrites;
    "" if valid, else the reason."""
    if not new.strip():
        return "empty rewritten seeker turn"
    if PLACEHOLDER.search(new):
        return "rewrite echoes the prompt (placeholder or example text)"
    if " ".join(new.split()).lower() == " ".join(old.split()).lower():
        return "seeker turn left unchanged"
    if len(new) > 4 * max(len(old), 60):
        return "rewritten seeker turn far longer than the original"
    if " ".join(new.lower().split()) in {" ".join(e.lower().split()) for e in earlier}:
        return "the same rewrite for different seeker turns"
    if lexicon is not None:
        clinical, safety = lexicon.exclusions(new)
        if safety:
            return f"rewrite has safety-critical content ({', '.join(sorted(safety))})"
    return ""


def validate(history: list[dict], levels: list[int], originals: list[str], lexicon=None) -> str:
    """Check a rewritten dialogue; returns "" if valid, else the reason.

    In order: the structure (:func:`structure_problem`); every rewritten seeker turn
    (:func:`turn_problem`: not empty, no echoed prompt, not the original, not far longer, not a repeat of an
    earlier rewrite and, given the screening ``lexicon``, none of its safety categories); then the text of
    the final seeker turn, which must be high-adversarial (:func:`high_adversarial`), else the reason is
    :data:`NOT_HOSTILE` with its score and markers.
    """
    problem = structure_problem(history, levels)
    if problem:
        return problem
    seeker = [t["text"] for t in history if t["role"] == "seeker"]
    for k, (new, old) in enumerate(zip(seeker, originals)):
        problem = turn_problem(new, old, seeker[:k], lexicon)
        if problem:
            return problem
    if not high_adversarial(seeker[-1]):
        score, found = hostility(seeker[-1])
        return (f"{NOT_HOSTILE} (hostility {score}, markers: {', '.join(found) or 'none'}; needs resistance "
                f"or skepticism and at least {MIN_HOSTILITY} markers)")
    return ""


# --- rewriting windows, round by round ---------------------------------------------------------

@dataclass
class Rewrite:
    """One attempt at one window: its rewritten history so far and what became of it."""

    window: object  # a row of :func:`windows` (itertuples) with its ``profile``
    attempt: int
    history: list[dict] = field(init=False)
    seeker: list[int] = field(init=False)
    levels: list[int] = field(init=False)
    reason: str = ""
    neutralised_tokens: int = 0
    calls: int = 0
    rewritten: int = 0  # seeker turns rewritten so far

    def __post_init__(self):
        self.history = [dict(t) for t in self.window.history]
        self.seeker = [j for j, t in enumerate(self.history) if t["role"] == "seeker"]
        self.levels = targets(self.window.profile, len(self.seeker)) if self.seeker else []

    @property
    def originals(self) -> list[str]:
        return [self.window.history[j]["text"] for j in self.seeker]


def rewrite_wave(jobs: list[tuple[object, int]], run, prompt: str, version: str, model: str, base_params: dict,
                 lexicon=None) -> list[Rewrite]:
    """Rewrite and validate windows ``[(window, attempt), ...]``, one round per seeker turn.

    Round *r* sends, for every window still going, the request for its *r*-th seeker turn (whose prompt
    holds the window's rewrites of rounds < *r*) in one batch: ``run(requests) -> results``. A window
    whose rewrite fails to parse or fails :func:`turn_problem` stops there (no calls for its later turns);
    the others are validated whole (:func:`validate`) after their last round.
    """
    waves = [Rewrite(window, attempt) for window, attempt in jobs]
    for w in waves:  # a window that cannot be valid is not rewritten
        w.reason = structure_problem(w.history, w.levels)
    for r in range(max((len(w.seeker) for w in waves), default=0)):
        live = [w for w in waves if not w.reason and r < len(w.seeker)]
        if not live:
            break
        requests = [rewrite_request(w.window, w.history, w.seeker[r], w.levels[r], w.attempt, model, prompt,
                                    version, base_params) for w in live]
        results = run(requests)
        for w, req in zip(live, requests):
            res = results[req.id]
            w.calls += 1
            w.neutralised_tokens += int(res.get("neutralised_tokens", 0) or 0)
            if res.get("parsed") is None:
                w.reason = f"unparseable rewrite ({res.get('parse_error')})"
                continue
            j = w.seeker[r]
            w.history[j]["text"] = " ".join(res["parsed"]["rewrite"].split())
            w.rewritten += 1
            earlier = [w.history[i]["text"] for i in w.seeker[:r]]
            w.reason = turn_problem(w.history[j]["text"], w.window.history[j]["text"], earlier, lexicon)
    for w in waves:
        if not w.reason:
            w.reason = validate(w.history, w.levels, w.originals, lexicon)
    return waves


def item_rows(chosen_row, history) -> dict:
    """An adversarial item in the items table's shape."""
    return {
        "item_id": screening.item_id(history), "conversation_id": chosen_row.conversation_id,
        "subset": "adversarial", "profile": chosen_row.profile,
        "seeker_turn_index": chosen_row.seeker_turn_index, "history": history,
        "original_reply": chosen_row.original_reply, "original_strategies": chosen_row.original_strategies,
        "emotion_type": chosen_row.emotion_type, "problem_type": chosen_row.problem_type,
        "situation": chosen_row.situation, "response_potential": None,
        "distress": None, "conflict": None, "help_request": None, "n_strategy_families": None,
    }


ATTEMPT_COLUMNS = ["slot", "conversation_id", "stratum", "profile", "attempt", "targets", "valid", "outcome",
                   "reason", "hostility", "calls", "neutralised_tokens", "replaces", "replaced_by", "item_id"]


@dataclass
class _Slot:
    """One of the ``n`` items: the window it is being made from, and its attempt at that window."""

    slot: int
    window: object
    attempt: int = 0
    replaces: int | None = None


def _take(pool: list, stratum: str):
    """The first window of the reserve in ``stratum``, else the first of any; None when none is left."""
    for k, w in enumerate(pool):
        if w.stratum == stratum:
            return pool.pop(k)
    return pool.pop(0) if pool else None


def build(conversations, turns, regular_items, run, settings: dict, prompt: str, version: str,
          model: str, base_params: dict, lexicon=None, log=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Choose windows, rewrite them round by round, validate, retry, replace; return (items, attempts).

    Parameters
    ----------
    run : callable
        ``run(requests) -> results``: the engine (:func:`heart.llm.engine.run_requests` bound to the specs and
        the cache). A successful call is cached, so a rerun makes the same requests and pays for none.
    settings : dict
        The ``adversarial_items`` config section (n, seed, profiles, max_turns, max_attempts, and optionally
        max_windows: how many windows may be tried in all, the first ``n`` included; absent or None: every
        window).
    prompt, version : str
        The rewriting instructions (``rewrite_seeker.md``) and their version (:func:`heart.llm.request.template`).
    lexicon : heart.items.screening.Lexicon, optional
        Screens the windows and every rewritten seeker turn for safety-critical content.

    Returns
    -------
    (DataFrame, DataFrame)
        The items (items table, in slot order) and every attempt (:data:`ATTEMPT_COLUMNS`).

    Notes
    -----
    ``n`` windows are chosen (:func:`choose`); each holds one *slot* and keeps its profile. All slots being
    worked on are rewritten together (:func:`rewrite_wave`). A window that fails is retried with the next
    attempt's sampling params; after ``max_attempts`` failures (or at once when its structure cannot pass)
    it is dropped, and its slot takes the next window of the seeded reserve (:func:`reserve`) in the same
    stratum, else any, from attempt 0, profile unchanged. So ``n`` items are made while windows remain (and,
    when ``max_windows`` is set, while fewer than ``max_windows`` windows have been tried), and
    the result depends only on the seed and the model's answers. In the attempts table every row has its
    slot, window, attempt and ``outcome`` (accepted, retried, dropped), ``reason`` (the validator's, or
    "valid"); a dropped row names the window that took its slot (``replaced_by``, null when none was
    left), a replacement's rows the window it stands in for (``replaces``), an accepted row its item.
    """
    cands = windows(conversations, turns, settings["max_turns"],
                    exclude_conversations=regular_items["conversation_id"], lexicon=lexicon)
    chosen = choose(cands, settings["n"], settings["seed"], settings["profiles"])
    pool = list(reserve(cands, chosen, settings["seed"]).itertuples()) if len(cands) else []
    budget = settings.get("max_windows")
    spare = None if budget is None else max(0, budget - len(chosen))  # replacements allowed
    active = [_Slot(k, w) for k, w in enumerate(chosen.itertuples())]
    items, attempts = {}, []
    while active:
        waves = rewrite_wave([(s.window, s.attempt) for s in active], run, prompt, version, model,
                             base_params, lexicon)
        following = []
        for s, w in zip(active, waves):
            row = {"slot": s.slot, "conversation_id": int(s.window.conversation_id), "stratum": s.window.stratum,
                   "profile": s.window.profile, "attempt": s.attempt, "targets": w.levels,
                   "valid": w.reason == "", "reason": w.reason or "valid",
                   "hostility": (hostility(w.history[w.seeker[-1]]["text"])[0]
                                 if w.seeker and w.rewritten == len(w.seeker) else None),
                   "calls": w.calls, "neutralised_tokens": w.neutralised_tokens, "replaces": s.replaces,
                   "replaced_by": None, "item_id": None}
            if not w.reason:
                items[s.slot] = item_rows(s.window, w.history)
                row.update(outcome="accepted", item_id=items[s.slot]["item_id"])
            elif s.attempt + 1 < settings["max_attempts"] and not structure_problem(w.history, w.levels):
                row["outcome"] = "retried"
                following.append(_Slot(s.slot, s.window, s.attempt + 1, s.replaces))
                if log:
                    log.info("adversarial item from conversation %s (%s), attempt %d failed: %s",
                             s.window.conversation_id, s.window.profile, s.attempt, w.reason)
            else:
                row["outcome"] = "dropped"
                nxt = _take(pool, s.window.stratum) if spare is None or spare > 0 else None
                if nxt is not None:
                    spare = None if spare is None else spare - 1
                    nxt = nxt._replace(profile=s.window.profile)  # the slot keeps its profile
                    row["replaced_by"] = int(nxt.conversation_id)
                    following.append(_Slot(s.slot, nxt, 0, int(s.window.conversation_id)))
                if log:
                    log.warning("dropped adversarial item from conversation %s (%s) after %d attempt(s): %s; %s",
                                s.window.conversation_id, s.window.profile, s.attempt + 1, w.reason,
                                f"replaced by conversation {nxt.conversation_id}" if nxt is not None
                                else "no window left to replace it" if not pool or spare is None
                                else f"max_windows ({budget}) reached")
            attempts.append(row)
        active = following
    items_table = pd.DataFrame([items[k] for k in sorted(items)])
    return items_table, pd.DataFrame(attempts, columns=ATTEMPT_COLUMNS)
