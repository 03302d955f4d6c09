"""Screen ESConv couplets for response potential and build the regular evaluation items.

HEART paper §9.2: enumerate every seeker->supporter couplet, score it for
"response potential" (distress, conflict, an explicit request for help), keep
turns that carry a clear emotional signal, admit several plausible supportive
strategies and need no clinical expertise, remove safety-critical / NSFW /
identifying content, keep at most two high-stakes turns per dialogue, and
sample N items stratified by emotion_type x problem_type.

The default screen is deterministic: lexicons and rules from a versioned
resource file (``workflow/resources/screening/lexicon.yaml``) read by
:class:`Lexicon`. The paper's own 280 released regular contexts are the only
record of what its filters accepted: :func:`calibration` measures a screen
against them (recall of the released couplets, selectivity over all couplets,
context lengths), and ``config/screening.yaml`` holds settings calibrated so.
:func:`score_couplets` takes any *scorer* with the same
interface (``scorer(couplets) -> DataFrame of scores``), which is the seam for
an LLM-based screen.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

SCORE_COLUMNS = ["distress", "conflict", "help_request", "strategy_families", "clinical", "safety"]


def _compile(entry: dict, where: str) -> re.Pattern:
    parts = []
    for term in entry.get("terms", []):
        # a trailing * on any word of a term matches any word ending ("burn* out": burnt out, burned out)
        words = [re.escape(w[:-1]) + r"\w*" if w.endswith("*") else re.escape(w) for w in str(term).split()]
        parts.append(r"\s+".join(words))
    words = [rf"\b(?:{'|'.join(parts)})\b"] if parts else []
    pats = list(entry.get("patterns", []))
    if not words and not pats:
        raise ValueError(f"{where}: needs 'terms' or 'patterns'")
    flags = 0 if entry.get("case_sensitive") else re.IGNORECASE
    try:
        return re.compile("|".join(f"(?:{p})" for p in words + pats), flags | re.MULTILINE)
    except re.error as exc:
        raise ValueError(f"{where}: invalid pattern: {exc}") from None


SIGNALS = ("distress", "conflict", "help_request")


def _with_signals(entry: dict, spec: dict, where: str) -> dict:
    """A strategy family's own terms and patterns plus those of the signals it names under ``signals``.

    A family cued by a signal ("a voiced feeling invites validation") lists it instead of repeating the
    signal's word list.
    """
    names = entry.get("signals", [])
    unknown = [n for n in names if n not in SIGNALS]
    if unknown:
        raise ValueError(f"{where}: unknown signals {unknown} (known: {list(SIGNALS)})")
    merged = {"terms": list(entry.get("terms", [])), "patterns": list(entry.get("patterns", [])),
              "case_sensitive": entry.get("case_sensitive", False)}
    for name in names:
        merged["terms"] += spec[name].get("terms", [])
        merged["patterns"] += spec[name].get("patterns", [])
    return merged


@dataclass
class Lexicon:
    """Compiled screening lexicon (see the resource file for the format)."""

    version: int
    weights: dict
    distress: re.Pattern
    conflict: re.Pattern
    help_request: re.Pattern
    strategy_families: dict[str, re.Pattern]
    clinical: re.Pattern
    safety: dict[str, re.Pattern]
    #: wrap-up cues (thanks for listening, goodbye, "I feel better now"); optional section
    closing: re.Pattern | None = None

    @classmethod
    def from_file(cls, path) -> "Lexicon":
        """Load and compile a lexicon YAML file; errors name the file and the entry."""
        path = Path(path)
        spec = yaml.safe_load(path.read_text())
        need = ["version", "weights", "distress", "conflict", "help_request",
                "strategy_families", "clinical", "safety"]
        missing = [k for k in need if k not in spec]
        if missing:
            raise ValueError(f"{path}: missing sections {missing}")
        for key in ("distress", "conflict", "help_request", "strategy_families"):
            w = spec["weights"].get(key)
            if not isinstance(w, dict) or not {"weight", "cap"} <= set(w):
                raise ValueError(f"{path}: weights.{key} needs 'weight' and 'cap'")
        return cls(
            version=spec["version"],
            weights=spec["weights"],
            distress=_compile(spec["distress"], f"{path}: distress"),
            conflict=_compile(spec["conflict"], f"{path}: conflict"),
            help_request=_compile(spec["help_request"], f"{path}: help_request"),
            strategy_families={k: _compile(_with_signals(v, spec, f"{path}: strategy_families.{k}"),
                                           f"{path}: strategy_families.{k}")
                               for k, v in spec["strategy_families"].items()},
            clinical=_compile(spec["clinical"], f"{path}: clinical"),
            safety={k: _compile(v, f"{path}: safety.{k}") for k, v in spec["safety"].items()},
            closing=_compile(spec["closing"], f"{path}: closing") if "closing" in spec else None,
        )

    def exclusions(self, text: str) -> tuple[frozenset, frozenset]:
        """Clinical cues and safety categories found in one turn's text."""
        clinical = frozenset(m.lower() for m in self.clinical.findall(text))
        return clinical, frozenset(k for k, p in self.safety.items() if p.search(text))

    def __call__(self, couplets: pd.DataFrame) -> pd.DataFrame:
        """Score couplets: signals on the seeker turn, exclusions on every context turn + reply.

        Exclusions are computed once per distinct turn text and united over the
        turns a couplet shows, so the cost grows with the corpus, not with the
        square of the dialogue length.
        """
        memo: dict[str, tuple[frozenset, frozenset]] = {}
        order = list(self.safety)
        rows = []
        for seeker, history, reply in zip(couplets["seeker_text"], couplets["history"],
                                          couplets["reply_text"]):
            clinical, safety = set(), set()
            for text in [t["text"] for t in history] + [reply]:
                if text not in memo:
                    memo[text] = self.exclusions(text)
                clinical |= memo[text][0]
                safety |= memo[text][1]
            rows.append({
                "distress": len(self.distress.findall(seeker)),
                "conflict": len(self.conflict.findall(seeker)),
                "help_request": len(self.help_request.findall(seeker)),
                "strategy_families": [k for k, p in self.strategy_families.items() if p.search(seeker)],
                "clinical": sorted(clinical),
                "safety": [k for k in order if k in safety],
                "closing": bool(self.closing and self.closing.search(seeker)),
            })
        return pd.DataFrame(rows, index=couplets.index)

    def potential(self, scores: pd.DataFrame) -> pd.Series:
        """Weighted response-potential score (weights and caps from the lexicon file)."""
        total = pd.Series(0.0, index=scores.index)
        for key in ("distress", "conflict", "help_request"):
            w = self.weights[key]
            total += w["weight"] * scores[key].clip(upper=w["cap"])
        w = self.weights["strategy_families"]
        total += w["weight"] * scores["strategy_families"].map(len).clip(upper=w["cap"])
        return total


def item_id(history: list[dict]) -> str:
    """Stable item id: first 16 hex digits of the sha256 of the history's canonical JSON."""
    canon = json.dumps([[t["role"], t["text"]] for t in history], ensure_ascii=False,
                       separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


def enumerate_couplets(conversations: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Every (seeker turn, next supporter turn) pair with its full preceding context.

    Returns
    -------
    DataFrame
        conversation_id, seeker_turn_index, reply_turn_index, history (list of
        role/text dicts ending with the seeker turn), seeker_text, reply_text,
        reply_strategies,
        emotion_type, problem_type, situation, item_id.
    """
    labels = conversations.set_index("conversation_id")
    rows = []
    for cid, conv in turns.sort_values(["conversation_id", "turn_index"]).groupby("conversation_id", sort=True):
        roles, texts = conv["role"].tolist(), conv["text"].tolist()
        strategies = conv["strategies"].tolist()
        idx = conv["turn_index"].tolist()
        lab = labels.loc[cid]
        for k in range(len(roles) - 1):
            if roles[k] != "seeker" or roles[k + 1] != "supporter":
                continue
            history = [{"role": r, "text": t} for r, t in zip(roles[: k + 1], texts[: k + 1])]
            rows.append({
                "conversation_id": int(cid),
                "seeker_turn_index": idx[k],
                "reply_turn_index": idx[k + 1],
                "history": history,
                "seeker_text": texts[k],
                "reply_text": texts[k + 1],
                "reply_strategies": list(strategies[k + 1]),
                "emotion_type": lab["emotion_type"],
                "problem_type": lab["problem_type"],
                "situation": lab["situation"],
                "item_id": item_id(history),
            })
    return pd.DataFrame(rows)


def _window(values: pd.Series, conversation: pd.Series, order: pd.Series, size: int, combine) -> pd.Series:
    """Combine each couplet's value with those of the ``size - 1`` seeker turns before it in its dialogue.

    Turns are merged per speaker (:mod:`heart.data.esconv`), so roles alternate and a dialogue's couplets are
    its consecutive seeker turns: the previous couplet of a conversation holds the previous seeker turn.
    """
    out = {}
    keys = pd.DataFrame({"c": conversation, "o": order}).sort_values(["c", "o"])
    for _, group in keys.groupby("c", sort=False):
        seen = [values[i] for i in group.index]
        for k, i in enumerate(group.index):
            acc = seen[k]
            for prev in seen[max(0, k - size + 1): k]:
                acc = combine(acc, prev)
            out[i] = acc
    return pd.Series(out, dtype=object).reindex(values.index)


def score_couplets(couplets: pd.DataFrame, scorer, settings: dict) -> pd.DataFrame:
    """Apply a scorer and the eligibility rules; return the audit table without the sampling.

    Parameters
    ----------
    couplets : DataFrame
        From :func:`enumerate_couplets`.
    scorer : callable
        ``scorer(couplets) -> DataFrame`` with :data:`SCORE_COLUMNS`, and a
        ``potential(scores) -> Series`` method (a :class:`Lexicon`).
    settings : dict
        The ``screening`` config section: min_context_turns, min_seeker_words, min_signal,
        min_strategy_families, and optionally ``max_context_turns`` (no upper bound when absent or
        null) and ``signal_window`` (1 when absent).

    Notes
    -----
    The signals and strategy cues are counted on the seeker turn that ends the context, or, with
    ``signal_window`` w > 1, on it and the w - 1 seeker turns before it: the "clear emotional signal"
    of a moment is often spread over the seeker's answers to the supporter's questions ("I lost my
    job." ... "About two weeks ago."). The columns distress, conflict, help_request and
    strategy_families of the audit stay those of the final seeker turn; emotional_signal and
    n_strategy_families are the windowed ones the rules use.
    """
    window = int(settings.get("signal_window", 1) or 1)
    max_context = settings.get("max_context_turns")
    scores = scorer(couplets)
    audit = couplets[["conversation_id", "seeker_turn_index", "reply_turn_index", "item_id",
                      "emotion_type", "problem_type"]].copy()
    audit["stratum"] = audit["emotion_type"] + " x " + audit["problem_type"]
    audit["context_turns"] = couplets["history"].map(len)
    audit["seeker_words"] = couplets["seeker_text"].str.split().map(len)
    for col in SCORE_COLUMNS:
        audit[col] = scores[col]
    signal = audit["distress"] + audit["conflict"] + audit["help_request"]
    own_signal = signal > 0
    closing = scores["closing"] if "closing" in scores else pd.Series(False, index=audit.index)
    families = audit["strategy_families"].map(frozenset)
    if window > 1:
        signal = _window(signal, audit["conversation_id"], audit["seeker_turn_index"], window,
                         lambda a, b: a + b)
        families = _window(families, audit["conversation_id"], audit["seeker_turn_index"], window,
                           lambda a, b: a | b)
    audit["emotional_signal"] = signal.astype(int) >= settings["min_signal"]
    audit["n_strategy_families"] = families.map(len).astype(int)
    audit["response_potential"] = scorer.potential(scores).round(6)
    # helpers of the rules, not audit columns (screen() keeps AUDIT_COLUMNS)
    audit["own_signal"] = own_signal
    audit["closing"] = closing.astype(bool)

    def reason(row) -> str:
        if row.safety:
            return f"safety:{row.safety[0]}"
        if row.clinical:
            return "clinical"
        if row.context_turns < settings["min_context_turns"]:
            return "context_too_short"
        if max_context is not None and row.context_turns > max_context:
            return "context_too_long"
        if row.seeker_words < settings["min_seeker_words"]:
            return "seeker_turn_too_short"
        if row.closing and not row.own_signal:
            return "closing_turn"
        if not row.emotional_signal:
            return "no_emotional_signal"
        if row.n_strategy_families < settings["min_strategy_families"]:
            return "single_strategy"
        return ""

    audit["reason"] = [reason(r) for r in audit.itertuples()]
    # identical contexts are one item ("Hi" openings recur across conversations):
    # an eligible context seen earlier in the corpus is dropped as a duplicate
    candidates = audit[audit["reason"] == ""]
    audit.loc[candidates.index[candidates.duplicated("item_id")], "reason"] = "duplicate_context"
    audit["eligible"] = audit["reason"] == ""
    return audit


def allocate(counts: dict[str, int], n: int, min_per_stratum: int = 1) -> dict[str, int]:
    """Split ``n`` draws over strata in proportion to their sizes (largest remainder).

    Every stratum with candidates gets at least ``min_per_stratum`` draws when
    ``n`` allows it (n >= strata x min); the rest follows the proportional quota
    ``n * count / total`` as closely as integer counts and stratum sizes allow.

    Raises
    ------
    ValueError
        If ``n`` exceeds the number of candidates.
    """
    strata = sorted(s for s, c in counts.items() if c > 0)
    total = sum(counts[s] for s in strata)
    if n > total:
        raise ValueError(
            f"asked for {n} items but only {total} couplets pass the screen; "
            "lower the item count or relax the screening settings"
        )
    quota = {s: n * counts[s] / total for s in strata}
    floor = min_per_stratum if n >= len(strata) * min_per_stratum else 0
    alloc = {s: min(counts[s], max(floor, int(quota[s]))) for s in strata}
    # hand out what is left by largest remainder, or take back the floors' excess
    # from the strata furthest above their quota; ties broken by stratum name
    while sum(alloc.values()) < n:
        s = max((s for s in strata if alloc[s] < counts[s]), key=lambda s: (quota[s] - alloc[s], s))
        alloc[s] += 1
    while sum(alloc.values()) > n:
        s = max((s for s in strata if alloc[s] > floor), key=lambda s: (alloc[s] - quota[s], s))
        alloc[s] -= 1
    return alloc


def _stratum_seed(seed: int, stratum: str) -> list[int]:
    return [seed, int.from_bytes(hashlib.sha256(stratum.encode()).digest()[:4], "little")]


def select(audit: pd.DataFrame, n: int, seed: int, max_per_conversation: int = 2,
           min_per_stratum: int = 1) -> pd.DataFrame:
    """Apply the per-conversation cap and stratified sampling; fill ``decision``/``reason``.

    The cap keeps the ``max_per_conversation`` eligible couplets with the highest
    response potential in each conversation (earlier turns win ties). Sampling is
    seeded per stratum, independent of input order, so reruns give identical ids.
    """
    audit = audit.copy()
    eligible = audit[audit["eligible"]].sort_values(
        ["conversation_id", "response_potential", "seeker_turn_index"],
        ascending=[True, False, True],
    )
    capped = eligible.groupby("conversation_id").head(max_per_conversation)
    over_cap = eligible.index.difference(capped.index)
    audit.loc[over_cap, "reason"] = "per_conversation_cap"

    counts = capped["stratum"].value_counts().to_dict()
    alloc = allocate(counts, n, min_per_stratum)
    chosen = []
    for stratum, k in sorted(alloc.items()):
        pool = capped[capped["stratum"] == stratum].sort_values("item_id")
        rng = np.random.default_rng(_stratum_seed(seed, stratum))
        picks = rng.choice(len(pool), size=k, replace=False)
        chosen.extend(pool.index[np.sort(picks)])
    audit.loc[capped.index.difference(chosen), "reason"] = "not_sampled"
    audit.loc[chosen, "reason"] = "kept"
    audit["decision"] = np.where(audit["reason"] == "kept", "kept", "dropped")
    return audit


AUDIT_COLUMNS = [
    "conversation_id", "seeker_turn_index", "reply_turn_index", "item_id", "emotion_type",
    "problem_type", "stratum", "context_turns", "seeker_words", "distress", "conflict",
    "help_request", "emotional_signal", "strategy_families", "n_strategy_families", "clinical",
    "safety", "response_potential", "eligible", "decision", "reason",
]


def build_items(couplets: pd.DataFrame, audit: pd.DataFrame) -> pd.DataFrame:
    """The kept couplets as regular evaluation items (see items.schema.yaml)."""
    kept = audit[audit["decision"] == "kept"].set_index("item_id")
    items = couplets[couplets["item_id"].isin(kept.index)].copy()
    k = kept.loc[items["item_id"]]
    # item column <- couplet column, and the screening scores the audit gave each kept couplet
    from_couplet = {"item_id": "item_id", "conversation_id": "conversation_id",
                    "seeker_turn_index": "seeker_turn_index", "history": "history", "original_reply": "reply_text",
                    "original_strategies": "reply_strategies", "emotion_type": "emotion_type",
                    "problem_type": "problem_type", "situation": "situation"}
    scores = ("response_potential", "distress", "conflict", "help_request", "n_strategy_families")
    items = pd.DataFrame({
        **{col: items[src].to_numpy() for col, src in from_couplet.items()},
        "subset": "regular",
        "profile": None,
        **{col: k[col].to_numpy() for col in scores},
    })
    order = ["item_id", "conversation_id", "subset", "profile", "seeker_turn_index", "history", "original_reply",
             "original_strategies", "emotion_type", "problem_type", "situation", *scores]
    items = items[order]
    return items.sort_values(["conversation_id", "seeker_turn_index"]).reset_index(drop=True)


def screen(conversations: pd.DataFrame, turns: pd.DataFrame, scorer, settings: dict,
           n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Couplets -> scores -> filters -> cap -> stratified sample. Returns (audit, items)."""
    couplets = enumerate_couplets(conversations, turns)
    audit = score_couplets(couplets, scorer, settings)
    audit = select(audit, n=n, seed=seed,
                   max_per_conversation=settings["max_items_per_conversation"],
                   min_per_stratum=settings["min_per_stratum"])
    return audit[AUDIT_COLUMNS], build_items(couplets, audit)


CALIBRATION_COLUMNS = ["section", "measure", "population", "value", "description"]
#: context-length statistics of the calibration table, in order
LENGTH_MEASURES = ["n", "min", "q25", "median", "q75", "max", "mean", "share_1_2"]
_LENGTH_TEXT = {
    "n": "contexts", "min": "fewest entries", "q25": "25th percentile of entries",
    "median": "median entries", "q75": "75th percentile of entries", "max": "most entries",
    "mean": "mean entries", "share_1_2": "share of contexts with 1 or 2 entries",
}
_POPULATION_TEXT = {
    "release": "the paper's released regular contexts",
    "eligible": "every couplet that passes the screen",
    "sample": "the screened sample (kept couplets)",
}


def _lengths(values, population: str) -> list[dict]:
    values = np.asarray(list(values), dtype=float)
    if len(values):
        q25, median, q75 = np.quantile(values, [0.25, 0.5, 0.75])
        stats = {"n": len(values), "min": values.min(), "q25": q25, "median": median, "q75": q75,
                 "max": values.max(), "mean": values.mean(), "share_1_2": float(np.mean(values <= 2))}
    else:
        stats = {"n": 0, **{m: np.nan for m in LENGTH_MEASURES[1:]}}
    return [{"section": "context_length", "measure": m, "population": population, "value": float(stats[m]),
             "description": f"{_LENGTH_TEXT[m]} (history entries, final seeker turn included): "
                            f"{_POPULATION_TEXT[population]}"} for m in LENGTH_MEASURES]


def calibration(audit: pd.DataFrame, mapping: pd.DataFrame) -> pd.DataFrame:
    """How the screen treats the paper's released couplets, and how much it lets through.

    The HEART authors released the 280 regular contexts their screen selected (paper §9.2); they are the
    only record of what its filters accepted. A screen calibrated to the paper should find most of them
    eligible (recall) while still screening (selectivity: the share of all couplets eligible).

    Parameters
    ----------
    audit : DataFrame
        The screening audit (:func:`score_couplets`, or :func:`screen`'s audit with ``decision``).
    mapping : DataFrame
        The release mapping (:func:`heart.data.release.map_regular`; ``release_mapping.schema.yaml``). Rows
        whose ``release_key`` is not ``regular:*`` are ignored. A record's couplet is the audit row with
        its ``conversation_id`` and ``seeker_turn_index == end_turn_index``.

    Returns
    -------
    DataFrame
        The calibration table (``screening_calibration.schema.yaml``): section, measure, population,
        value, description. Sections: ``recall`` (n_released, n_released_in_audit,
        n_released_eligible, recall and, with a sample, n_released_kept), ``selectivity`` (n_couplets,
        n_eligible, selectivity), ``drop_reason`` (per reason, the released records it drops; a record
        with no couplet in the audit -- unmatched, or ending on a supporter entry -- is ``not_in_audit``)
        and ``context_length`` (n, min, q25, median, q75, max, mean, share_1_2 of the history length)
        for the release, every eligible couplet and, when the audit has kept rows, the sample.

    Notes
    -----
    Recall is counted over *all* released records: one that is not in the audit counts as not eligible.
    """
    if "release_key" in mapping.columns:
        mapping = mapping[mapping["release_key"].astype(str).str.startswith("regular:")]
    released = pd.DataFrame({
        "conversation_id": pd.array(mapping["conversation_id"], dtype="Int64"),
        "seeker_turn_index": pd.array(mapping["end_turn_index"], dtype="Int64"),
        "n_entries": mapping["n_entries"].to_numpy(),
    })
    keys = audit[["conversation_id", "seeker_turn_index", "eligible", "reason"]].astype(
        {"conversation_id": "Int64", "seeker_turn_index": "Int64"})
    found = released.merge(keys, on=["conversation_id", "seeker_turn_index"], how="left",
                           validate="many_to_one", indicator=True)
    in_audit = found["_merge"].eq("both")
    eligible = in_audit & found["eligible"].eq(True)
    n_released = len(found)
    has_sample = "decision" in audit.columns and audit["decision"].eq("kept").any()

    def row(section, measure, population, value, description):
        return {"section": section, "measure": measure, "population": population, "value": float(value),
                "description": description}

    rows = [
        row("recall", "n_released", "release", n_released, "released regular records"),
        row("recall", "n_released_in_audit", "release", in_audit.sum(),
            "released records whose couplet (conversation, final seeker turn) is in the audit"),
        row("recall", "n_released_eligible", "release", eligible.sum(),
            "released records whose couplet passes every filter"),
        row("recall", "recall", "release", eligible.sum() / n_released if n_released else np.nan,
            "n_released_eligible / n_released (a record not in the audit counts as not eligible)"),
    ]
    if has_sample:
        kept = in_audit & found["reason"].eq("kept")
        rows.append(row("recall", "n_released_kept", "release", kept.sum(),
                        "released records whose couplet the sample drew"))
    n_couplets, n_eligible = len(audit), int(audit["eligible"].sum())
    rows += [
        row("selectivity", "n_couplets", "all_couplets", n_couplets, "couplets screened (the audit's rows)"),
        row("selectivity", "n_eligible", "all_couplets", n_eligible, "couplets that pass every filter"),
        row("selectivity", "selectivity", "all_couplets", n_eligible / n_couplets if n_couplets else np.nan,
            "n_eligible / n_couplets: the share of all couplets the screen lets through"),
    ]
    drops = found.loc[~eligible, "reason"].where(in_audit[~eligible], "not_in_audit").value_counts()
    for reason, count in sorted(drops.items(), key=lambda kv: (-kv[1], kv[0])):
        rows.append(row("drop_reason", reason, "release", count,
                        "released records dropped by this rule (the first rule that drops them)"))
    frame = pd.DataFrame(rows)
    lengths = _lengths(released["n_entries"], "release") + _lengths(
        audit.loc[audit["eligible"], "context_turns"], "eligible")
    if has_sample:
        lengths += _lengths(audit.loc[audit["decision"].eq("kept"), "context_turns"], "sample")
    return pd.concat([frame, pd.DataFrame(lengths)], ignore_index=True)[CALIBRATION_COLUMNS]
