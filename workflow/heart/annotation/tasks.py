"""Tasks for people: who writes, rates and spot-checks what, in which order (HEART paper §9.3, §4.2, §9.10).

Four kinds of human task, one table for all (:data:`TASK_COLUMNS`):

* ``writing`` (§9.3): a writer is shown a context and writes the next supporter turn. Every context goes
  to ``per_context`` distinct writers of a pool (paper: 3 of 12) and the writers' loads are exactly
  balanced (:func:`writing_tasks`).
* ``rating`` (§4.2): a rater is shown a context and two replies, A and B, and says which is better. Every
  pair of the pair design (:mod:`heart.judging.pairs`) kept for people goes to ``per_pair`` distinct raters (paper:
  5 of 15), each in the rater's own A/B order; quality-check pairs, the real supporter reply against a
  known-worse reply (``resources/annotation/qc_replies.yaml``), are mixed in (:func:`rating_tasks`).
* ``spot_check`` (§9.10): a labeller checks the strategy tags of one completion; a stratified sample of
  completions (paper: 300, equal per system) goes to ``per_completion`` labellers each (paper: 2)
  (:func:`spot_check_tasks`).
* ``safety_review`` (§6): a reviewer confirms or clears, with a reason, a flag of the automated safety screen;
  every flagged completion goes to ``per_flag`` reviewers (:func:`safety_review_tasks`).

Seeded and stable. Every random choice is a hash coin, :func:`heart.judging.pairs.unit` (seed, purpose, key),
keyed by what it decides about (a pair, an item, a person), never a draw from one random stream. So a
task's assignment does not move when unrelated rows are added: a new system's pairs get raters without
changing who rates the existing pairs or in which order (raters by rendezvous hashing: the ``per_pair``
people with the smallest coins). Where loads must be exactly balanced (writing, spot checks), the greedy
least-loaded assignment visits items in hash order, so it is deterministic but, by its nature, not
stable under adding items.

Each person sees their tasks of a kind in a seeded shuffled order (``position``), so quality checks are
not recognisable by place and no two people see the same sequence.
"""

from __future__ import annotations

import hashlib
import json
import math

import pandas as pd

from heart.judging import pairs as pairs_mod
from heart.judging.pairs import completion_ref, key_text, unit
from heart.common.records import is_blank

TASK_COLUMNS = ["task_id", "kind", "person_id", "position", "item_id", "context",
                "pair_id", "ref_a", "ref_b", "text_a", "text_b", "qc_expected", "axes",
                "system", "contributor_id", "text", "categories"]
#: The kinds of task and the prefix of their people's ids.
KINDS = {"writing": "writer", "rating": "rater", "spot_check": "labeller", "safety_review": "reviewer"}
#: The ref of a quality-check pair's good side (the item's original reply) and the prefix of its bad side.
QC_GOOD_REF = "original"
QC_PREFIX = "qc:"
SUMMARY_COLUMNS = ["kind", "person_id", "n_tasks", "n_qc", "n_items"]


def person_ids(role: str, n: int) -> list[str]:
    """The ids of a pool of ``n`` people: ``writer-01`` .. (three digits from a pool of 100)."""
    width = 3 if n >= 100 else 2
    return [f"{role}-{i:0{width}d}" for i in range(1, n + 1)]


def task_id(kind: str, person_id: str, item_id: str, key: str = "") -> str:
    """A task's id: its kind's initial and a hash of (kind, person, item, what else tells it apart)."""
    digest = hashlib.sha256("\x1f".join([kind, person_id, item_id, key]).encode()).hexdigest()[:16]
    return f"{kind[0]}-{digest}"


def shown_text(text) -> str:
    """A reply as every page shows it: whitespace runs (line breaks, tabs, double spaces) made one space, the
    edges trimmed. Every reply a person compares or labels goes through this, whatever made it (the release's
    original replies keep line breaks and double spaces, models and people do not), so its layout cannot
    tell A from B."""
    return " ".join(str(text).split())


def context_json(history) -> str:
    """An item's history as the JSON text people are shown: a list of {"role", "text"} turns."""
    return json.dumps([{"role": str(t["role"]), "text": str(t["text"])} for t in history], ensure_ascii=False)


def _empty_row(kind: str, person: str, item_id: str, context: str) -> dict:
    row = dict.fromkeys(TASK_COLUMNS)
    row.update(kind=kind, person_id=person, item_id=item_id, context=context)
    return row


def _frame(rows: list[dict], seed: int, last: set | None = None) -> pd.DataFrame:
    """The tasks table of ``rows`` (one kind), with every person's tasks in seeded shuffled order; a task whose
    id is in ``last`` comes after every other task of its person on its item (its place among the later ones
    still drawn by its coin)."""
    df = pd.DataFrame(rows, columns=TASK_COLUMNS).astype(object)
    if df.empty:
        return df.astype({"position": "int64"})
    coins = [unit(seed, f"{kind}-position", f"{person}\x1f{tid}")
             for kind, person, tid in zip(df["kind"], df["person_id"], df["task_id"])]
    if last:
        late = df["task_id"].isin(last).to_numpy()
        ceiling = {}
        for key, coin, is_late in zip(zip(df["kind"], df["person_id"], df["item_id"]), coins, late):
            if not is_late:
                ceiling[key] = max(ceiling.get(key, 0.0), coin)
        coins = [(m := ceiling.get(key, 0.0)) + (1 - m) * coin if is_late else coin
                 for key, coin, is_late in zip(zip(df["kind"], df["person_id"], df["item_id"]), coins, late)]
    df = df.assign(_coin=coins).sort_values(["kind", "person_id", "_coin", "task_id"], ignore_index=True)
    df["position"] = df.groupby(["kind", "person_id"]).cumcount().astype("int64")
    return df.drop(columns="_coin")


def _check_pool(name: str, pool: int, per: str, n_per: int) -> None:
    if pool < 1:
        raise ValueError(f"{name}: {pool} people in the pool; set it to at least 1")
    if n_per < 1:
        raise ValueError(f"{per}: {n_per}; every task needs at least 1 person, set it to at least 1")
    if n_per > pool:
        raise ValueError(f"{per}: {n_per} distinct people per task but only {pool} in the pool ({name}); "
                         f"lower {per} or raise {name}")


def _histories(items: pd.DataFrame) -> dict:
    """item_id -> context JSON; an item twice is an error (the tasks would not know which history to show)."""
    dup = items["item_id"][items["item_id"].duplicated()]
    if len(dup):
        raise ValueError(f"items: item_id {dup.iloc[0]!r} appears more than once; pass the items table "
                         f"with one row per item")
    return {item_id: context_json(history) for item_id, history in zip(items["item_id"], items["history"])}


def _context(contexts: dict, item_id: str, what: str) -> str:
    if item_id not in contexts:
        raise ValueError(f"{what}: item {item_id!r} is not in the items table; pass the items the "
                         f"{what.split()[0]} were made from")
    return contexts[item_id]


def _balanced(keys: list[str], people: list[str], per: int, seed: int, purpose: str) -> list[list[str]]:
    """For every key (in the given order), ``per`` distinct people: the least loaded so far, ties broken by
    the coin ``unit(seed, purpose, key \\x1f person)``. Loads end within 1 of each other (each step gives one
    task to each of the ``per`` least loaded, which keeps every two loads within 1)."""
    load = dict.fromkeys(people, 0)
    chosen = []
    for key in keys:
        pick = sorted(people, key=lambda p: (load[p], unit(seed, purpose, f"{key}\x1f{p}"), p))[:per]
        for p in pick:
            load[p] += 1
        chosen.append(pick)
    return chosen


def writing_tasks(items: pd.DataFrame, writers: int, per_context: int, seed: int) -> pd.DataFrame:
    """Writing tasks (§9.3): every item to ``per_context`` distinct writers of a pool of ``writers``.

    Items are visited in the order of ``unit(seed, "writing-order", item_id)`` and each goes to the
    ``per_context`` least-loaded writers (ties by ``unit(seed, "writer", item_id \\x1f person_id)``), so every
    writer gets the floor or the ceiling of ``len(items) * per_context / writers`` contexts, none twice.

    Parameters
    ----------
    items : pandas.DataFrame
        item_id, history (a list of {"role", "text"} turns).
    writers, per_context : int
        The pool and the number of writers per context (paper: 12 and 3).
    seed : int
        Seed of the visiting order, the tie-breaks and every writer's task order.

    Raises
    ------
    ValueError
        ``per_context`` or ``writers`` below 1, or ``per_context > writers``.
    """
    _check_pool("writers", writers, "per_context", per_context)
    contexts = _histories(items)
    order = sorted(contexts, key=lambda i: (unit(seed, "writing-order", i), i))
    people = person_ids(KINDS["writing"], writers)
    rows = []
    for item_id, pick in zip(order, _balanced(order, people, per_context, seed, "writer")):
        for person in pick:
            row = _empty_row("writing", person, item_id, contexts[item_id])
            row["task_id"] = task_id("writing", person, item_id)
            rows.append(row)
    return _frame(rows, seed)


def _check_sample(sample: dict | None) -> dict:
    """kind -> rate for every pair kind (:data:`heart.judging.pairs.KINDS`); kinds not named keep every pair."""
    sample = dict(sample or {})
    for kind, rate in sample.items():
        if kind not in pairs_mod.KINDS:
            raise ValueError(f"pair_sample: unknown pair kind {kind!r}; "
                             f"use one of {', '.join(pairs_mod.KINDS)}")
        if rate is None or not 0 <= float(rate) <= 1:
            raise ValueError(f"pair_sample.{kind}: {rate!r} is not a rate; set it to a number in [0, 1]")
    return {kind: float(rate) for kind, rate in sample.items()}


def _check_qc_replies(qc_replies) -> list[dict]:
    replies = list(qc_replies or [])
    keys = set()
    for i, r in enumerate(replies):
        if not isinstance(r, dict) or is_blank(r.get("key")) or is_blank(r.get("text")):
            raise ValueError(f"qc_replies[{i}]: {r!r} is not a reply; "
                             f"each needs a non-empty 'key' and 'text'")
        if r["key"] in keys:
            raise ValueError(f"qc_replies: key {r['key']!r} appears twice; "
                             f"give every quality-check reply its own key")
        keys.add(r["key"])
    return sorted(replies, key=lambda r: r["key"])


def _completion_texts(completions: pd.DataFrame) -> dict:
    """(item_id, system, contributor key) -> text; a completion twice is an error (which text to show?)."""
    keys = list(zip(completions["item_id"], completions["system"], key_text(completions["contributor_id"])))
    texts = {}
    for key, text in zip(keys, completions["text"]):
        if key in texts:
            raise ValueError(f"completions: {completion_ref(key[1], key[2] or None)} appears twice for item "
                             f"{key[0]!r}; pass a completions table with one row per completion")
        texts[key] = text
    return texts


def qc_count(n: int, qc_rate: float) -> int:
    """Quality checks to add to ``n`` real tasks so that they are ``qc_rate`` of all, rounded up:
    ``ceil(n * qc_rate / (1 - qc_rate))`` (a hair of float error below an integer does not round up)."""
    if n <= 0 or qc_rate <= 0:
        return 0
    return math.ceil(n * qc_rate / (1 - qc_rate) - 1e-9)


def rating_tasks(items: pd.DataFrame, pairs: pd.DataFrame, completions: pd.DataFrame, raters: int,
                 per_pair: int, qc_rate: float, qc_replies: list[dict], seed: int,
                 pair_sample: dict | None = None, n_pairs: int | None = None,
                 axes: list[dict] | None = None) -> pd.DataFrame:
    """Rating tasks (§4.2): pairs for people, each to ``per_pair`` raters in their own A/B order, plus
    quality checks.

    * A pair is kept when ``unit(seed, "rating-sample", pair_id) < pair_sample[kind]`` (kinds not named:
      all kept), so a kept pair stays kept when pairs are added.
    * With ``n_pairs``, exactly that many of the kept pairs go to people: those with the smallest such coins
      (all of them when fewer are kept). The paper's human-rated subset is a count (1,125 pairs), not a rate;
      unlike a rate, a count's pairs can change when pairs are added.
    * Its raters are the ``per_pair`` people with the smallest ``unit(seed, "rater", pair_id \\x1f person)``
      (rendezvous hashing: adding pairs moves nobody's existing tasks; loads are balanced only on average).
    * Each rater sees the pair's A/B order, or the swapped one when
      ``unit(seed, "rating-order", pair_id \\x1f person) < 1/2``.
    * A rater with ``n`` real tasks gets :func:`qc_count` (n, qc_rate) quality checks: an item with an
      original reply (the good side, ref ``"original"``) against a known-worse reply (ref ``"qc:<key>"``),
      the good side A or B by a coin, ``qc_expected`` the good side's letter. A rater's checks use items
      the rater judges in no real pair first (else the check would show them a real pair's reference; in a
      study too small for that, a check on a judged item comes after the rater's real pairs of it), distinct
      ones (ranked by ``unit(seed, "qc-item", person \\x1f item)``) as long as there are enough, then the
      next-ranked bad reply for each item again.
    * Every reply is shown as :func:`shown_text` makes it.

    Parameters
    ----------
    items : pandas.DataFrame
        item_id, history, original_reply.
    pairs : pandas.DataFrame
        The pair design (:data:`heart.judging.pairs.COLUMNS`).
    completions : pandas.DataFrame
        item_id, system, contributor_id, text (other columns are ignored).
    raters, per_pair : int
        The pool and the number of raters per pair (paper: 15 and 5).
    qc_rate : float
        The share of a rater's tasks that are quality checks, in [0, 1); 0: none.
    qc_replies : list of dict
        Known-worse replies, each {"key", "text"} (``resources/annotation/qc_replies.yaml``).
    seed : int
        Seed of every coin.
    pair_sample : dict, optional
        kind -> rate in [0, 1] (:data:`heart.judging.pairs.KINDS`).
    n_pairs : int, optional
        How many of the kept pairs go to people (None: all of them).
    axes : list of dict, optional
        When a study asks raters for per-axis marks (§9.9: Fleiss' κ "overall and per-axis"): the axes, each
        {"key", "name", "question"}, put on every rating task (quality checks too, so they look the same) as
        JSON in column ``axes``. None: one overall choice (Figure 2).

    Raises
    ------
    ValueError
        A bad setting (the message names it), a pair whose completion has no text (naming the pair and the
        completion), or quality checks needed but no item with an original reply.
    """
    _check_pool("raters", raters, "per_pair", per_pair)
    if qc_rate is None or not 0 <= float(qc_rate) < 1:
        raise ValueError(f"qc_rate: {qc_rate!r} is not a share of quality checks; set it in [0, 1) (0: none)")
    qc_rate = float(qc_rate)
    replies = _check_qc_replies(qc_replies)
    if qc_rate > 0 and not replies:
        raise ValueError("qc_replies: empty, but qc_rate > 0 asks for quality checks; pass the replies of "
                         "resources/annotation/qc_replies.yaml or set qc_rate to 0")
    rates = _check_sample(pair_sample)
    if pairs["pair_id"].duplicated().any():
        dup = pairs["pair_id"][pairs["pair_id"].duplicated()].iloc[0]
        raise ValueError(f"pairs: pair_id {dup!r} appears more than once; pass the pair design as "
                         f"heart.judging.pairs.design makes it")
    contexts = _histories(items)
    texts = _completion_texts(completions)
    people = person_ids(KINDS["rating"], raters)
    if n_pairs is not None and (isinstance(n_pairs, bool) or not isinstance(n_pairs, int) or n_pairs < 1):
        raise ValueError(f"pairs: {n_pairs!r} is not a number of pairs; set it to a whole number >= 1 (null: all)")
    coin = {pid: unit(seed, "rating-sample", pid) for pid in pairs.get("pair_id", ())}
    kept = pairs[[not (k in rates and coin[pid] >= rates[k]) for k, pid in zip(pairs.get("kind", ()), coin)]]
    if n_pairs is not None:
        kept = kept.assign(_coin=kept["pair_id"].map(coin)).sort_values(["_coin", "pair_id"]).head(n_pairs)
    rows, n_real = [], dict.fromkeys(people, 0)
    for p in (kept.sort_values("pair_id").itertuples() if len(kept) else ()):
        context = _context(contexts, p.item_id, f"pairs (pair {p.pair_id})")
        sides = []
        for system, contributor in ((p.system_a, p.contributor_a), (p.system_b, p.contributor_b)):
            ref = completion_ref(system, contributor)
            text = texts.get((p.item_id, system, key_text([contributor])[0]))
            if is_blank(text):
                raise ValueError(f"pair {p.pair_id}: completion {ref} of item {p.item_id!r} has no text; "
                                 f"rebuild the pairs from the current completions (heart.judging.pairs.design)")
            sides.append((ref, shown_text(text)))
        chosen = sorted(people, key=lambda q: (unit(seed, "rater", f"{p.pair_id}\x1f{q}"), q))[:per_pair]
        for person in chosen:
            swap = unit(seed, "rating-order", f"{p.pair_id}\x1f{person}") < 0.5
            (ref_a, text_a), (ref_b, text_b) = reversed(sides) if swap else sides
            row = _empty_row("rating", person, p.item_id, context)
            row.update(task_id=task_id("rating", person, p.item_id, f"{ref_a}\x1f{ref_b}"), pair_id=p.pair_id,
                       ref_a=ref_a, ref_b=ref_b, text_a=text_a, text_b=text_b)
            rows.append(row)
            n_real[person] += 1
    judged = {}
    for row in rows:
        judged.setdefault(row["person_id"], set()).add(row["item_id"])
    qc_rows = _qc_rows(items, contexts, n_real, qc_rate, replies, seed, judged)
    rows += qc_rows
    if axes:
        shown = json.dumps([{k: str(a[k]) for k in ("key", "name", "question")} for a in axes], ensure_ascii=False)
        for row in rows:
            row["axes"] = shown
    return _frame(rows, seed, last={r["task_id"] for r in qc_rows if r["item_id"] in judged.get(r["person_id"], ())})


def _qc_rows(items, contexts, n_real, qc_rate, replies, seed, judged) -> list[dict]:
    """The quality-check tasks of every rater (:func:`rating_tasks`), on contexts the rater does not otherwise
    judge (``judged``: person -> item ids of their real pairs) first: a check shows the item's original reply as
    the good side, and a rater who met it there would know it again in a real pair of the same context. Only a
    study too small for that (every context judged by the rater) checks on a judged context, and
    :func:`rating_tasks` then places the check after the rater's real pairs of that context."""
    needed = {person: qc_count(n, qc_rate) for person, n in n_real.items()}
    if not any(needed.values()):
        return []
    originals = items["original_reply"] if "original_reply" in items.columns else [None] * len(items)
    good = {i: r for i, r in zip(items["item_id"], originals) if not is_blank(r)}
    if not good:
        raise ValueError("items: no item has an original reply, so there are no quality-check pairs; "
                         "set qc_rate to 0 or pass items with original_reply")
    bad = {r["key"]: r["text"] for r in replies}
    rows = []
    for person, n_qc in needed.items():
        if n_qc > len(good) * len(bad):
            raise ValueError(f"{person}: needs {n_qc} quality checks but only {len(good) * len(bad)} "
                             f"distinct ones exist ({len(good)} items x {len(bad)} qc_replies); "
                             f"lower qc_rate or add qc_replies")
        mine = judged.get(person, set())
        ranked = sorted(good, key=lambda i: (i in mine, unit(seed, "qc-item", f"{person}\x1f{i}"), i))
        for j in range(n_qc):
            round_, index = divmod(j, len(ranked))
            item_id = ranked[index]
            key = sorted(bad, key=lambda k: (unit(seed, "qc-reply", f"{person}\x1f{item_id}\x1f{k}"), k)
                         )[round_]
            good_side = (QC_GOOD_REF, shown_text(good[item_id]))
            bad_side = (f"{QC_PREFIX}{key}", shown_text(bad[key]))
            good_first = unit(seed, "qc-order", f"{person}\x1f{item_id}\x1f{key}") < 0.5
            (ref_a, text_a), (ref_b, text_b) = (good_side, bad_side) if good_first else (bad_side, good_side)
            row = _empty_row("rating", person, item_id, contexts[item_id])
            row.update(task_id=task_id("rating", person, item_id, f"{ref_a}\x1f{ref_b}\x1fqc"),
                       ref_a=ref_a, ref_b=ref_b, text_a=text_a, text_b=text_b,
                       qc_expected="A" if good_first else "B")
            rows.append(row)
    return rows


def spot_shares(counts: dict[str, int], n: int, seed: int) -> dict[str, int]:
    """How many of ``n`` sampled completions each system gives: equal shares, the remainder one each to
    systems by ``unit(seed, "spot-share", system)``; a system with fewer completions than its share gives
    all it has and the others share the rest. ``n`` beyond all completions takes them all."""
    shares, active, remaining = {}, sorted(counts), min(n, sum(counts.values()))
    while active:
        base, extra = divmod(remaining, len(active))
        short = [s for s in active if counts[s] <= base]
        if short:  # these give all they have; share the rest among the others
            for s in short:
                shares[s] = counts[s]
                remaining -= counts[s]
            active = [s for s in active if s not in short]
            continue
        lucky = set(sorted(active, key=lambda s: (unit(seed, "spot-share", s), s))[:extra])
        shares.update({s: base + (s in lucky) for s in active})
        break
    return shares


def spot_check_tasks(completions: pd.DataFrame, items: pd.DataFrame, n: int, labellers: int,
                     per_completion: int, seed: int) -> pd.DataFrame:
    """Strategy spot checks (§9.10): a stratified sample of ``n`` completions, each to ``per_completion``
    labellers.

    Every system gets an equal share of ``n`` (:func:`spot_shares`); within a system the completions with
    the smallest ``unit(seed, "spot-sample", item_id \\x1f system \\x1f contributor)`` are taken. Completions
    with an empty text are not sampled (there is nothing to tag). Each sampled completion goes to the
    ``per_completion`` least-loaded labellers (visited in the order of ``unit(seed, "spot-order", ...)``,
    ties by ``unit(seed, "labeller", ... \\x1f person)``), so loads are exactly balanced.

    Parameters
    ----------
    completions : pandas.DataFrame
        item_id, system, contributor_id, text (other columns are ignored).
    items : pandas.DataFrame
        item_id, history: the contexts shown with the completions.
    n : int
        Completions to sample (paper: 300); all of them when there are fewer.
    labellers, per_completion : int
        The pool and the number of labellers per completion (paper: 2 per completion).
    seed : int
        Seed of every coin.

    Raises
    ------
    ValueError
        A bad setting (the message names it), or a sampled completion of an item not in ``items``.
    """
    _check_pool("labellers", labellers, "per_completion", per_completion)
    if n < 0:
        raise ValueError(f"n: {n} completions to spot-check; set it to 0 or more")
    comp = completions[~completions["text"].map(is_blank).astype(bool)]
    comp = comp.assign(spot_contributor=key_text(comp["contributor_id"]))
    comp = comp.assign(spot_key=[f"{i}\x1f{s}\x1f{c}" for i, s, c in
                                 zip(comp["item_id"], comp["system"], comp["spot_contributor"])])
    shares = spot_shares(comp["system"].value_counts().to_dict(), n, seed)
    sampled = []
    for system, group in comp.groupby("system", sort=True):
        coins = [unit(seed, "spot-sample", k) for k in group["spot_key"]]
        group = group.assign(spot_coin=coins).sort_values(["spot_coin", "spot_key"])
        sampled.append(group.head(shares[system]))
    contexts = _histories(items)
    people = person_ids(KINDS["spot_check"], labellers)
    rows = []
    if sampled:
        chosen = pd.concat(sampled)
        chosen = chosen.assign(spot_order=[unit(seed, "spot-order", k) for k in chosen["spot_key"]])
        chosen = chosen.sort_values(["spot_order", "spot_key"])
        picks = _balanced(list(chosen["spot_key"]), people, per_completion, seed, "labeller")
        for c, pick in zip(chosen.itertuples(), picks):
            ref = completion_ref(c.system, c.contributor_id)
            context = _context(contexts, c.item_id, f"completions ({ref})")
            contributor = None if c.spot_contributor == "" else c.contributor_id
            for person in pick:
                row = _empty_row("spot_check", person, c.item_id, context)
                key = f"{c.system}#{c.spot_contributor}"
                row.update(task_id=task_id("spot_check", person, c.item_id, key), system=c.system,
                           contributor_id=contributor, text=shown_text(c.text))
                rows.append(row)
    return _frame(rows, seed)


def safety_review_tasks(flags: pd.DataFrame, completions: pd.DataFrame, items: pd.DataFrame, reviewers: int,
                        per_flag: int, seed: int) -> pd.DataFrame:
    """Safety reviews (§6): every completion the screen flagged (``flags``: item_id, system, contributor_id,
    categories; :func:`heart.completions.safety_review.flagged`) to ``per_flag`` of ``reviewers`` reviewers,
    the least loaded first (visited in the order of ``unit(seed, "review-order", ...)``), so loads are
    balanced. The page shows the context, the reply and the categories flagged, never the system.

    Raises
    ------
    ValueError
        A bad setting (the message names it), or a flag of a completion or item that does not exist.
    """
    _check_pool("reviewers", reviewers, "per_flag", per_flag)
    contexts, texts = _histories(items), _completion_texts(completions)
    keys = [(f.item_id, f.system, key_text([f.contributor_id])[0], f.categories) for f in flags.itertuples()]
    keys.sort(key=lambda k: (unit(seed, "review-order", "\x1f".join(k[:3])), k[:3]))
    picks = _balanced(["\x1f".join(k[:3]) for k in keys], person_ids(KINDS["safety_review"], reviewers),
                      per_flag, seed, "reviewer")
    rows = []
    for (item_id, system, contributor, categories), pick in zip(keys, picks):
        ref = completion_ref(system, contributor or None)
        text = texts.get((item_id, system, contributor))
        if is_blank(text):
            raise ValueError(f"safety flags: completion {ref} of item {item_id!r} has no text among the completions; "
                             "rebuild the flags from the current completions (snakemake screen_completions)")
        context = _context(contexts, item_id, f"safety flags ({ref})")
        for person in pick:
            row = _empty_row("safety_review", person, item_id, context)
            row.update(task_id=task_id("safety_review", person, item_id, f"{system}#{contributor}"), system=system,
                       contributor_id=contributor or None, text=shown_text(text), categories=categories)
            rows.append(row)
    return _frame(rows, seed)


def rating_axes(rubric: dict) -> list[dict]:
    """The axes a rater marks, from the rubric: each axis's key, name and one-line description (the judges'
    examples are not shown: §4.2's raters had no rubric)."""
    return [{"key": a["key"], "name": a["name"], "question": a["description"]} for a in rubric["axes"]]


def summary(tasks: pd.DataFrame) -> pd.DataFrame:
    """One row per (kind, person_id): the person's tasks, quality checks among them, and distinct items."""
    if tasks.empty:
        return pd.DataFrame({"kind": pd.Series(dtype=object), "person_id": pd.Series(dtype=object),
                             **{c: pd.Series(dtype="int64") for c in SUMMARY_COLUMNS[2:]}})
    grouped = tasks.assign(_qc=tasks["qc_expected"].notna()).groupby(["kind", "person_id"], sort=True)
    out = grouped.agg(n_tasks=("task_id", "size"), n_qc=("_qc", "sum"), n_items=("item_id", "nunique"))
    return out.reset_index().astype({c: "int64" for c in SUMMARY_COLUMNS[2:]})[SUMMARY_COLUMNS]
