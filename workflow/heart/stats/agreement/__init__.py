"""Agreement of the judges: majorities, human–LLM, cross-judge, inter-human (paper §4.2-4.4, §4.9, §9.9).

Input is ``results/judging/judgments.parquet`` (:func:`heart.judging.combine.judgments`): one row per
(pair, LLM judge) with the two presentation orders combined, and one row per (pair, human rater).
Every table returned here is tidy and carries ``status`` and ``note`` columns; when the data a
statistic needs are absent (no human judgments, a single LLM judge, family exclusion, no axis
marks, ...) the row says so with ``status`` "absent" / "no_pairs" / "unavailable" and a NaN value,
never a zero.

Orientation (:func:`orient`)
    A pair has two sides, ``system_a`` / ``contributor_a`` and ``system_b`` / ``contributor_b``;
    ``winner`` "a", a positive ``preference`` and a positive axis mark (``axis_H`` ... ``axis_T``)
    favour side a. Every public function here first orients the rows of each pair to one canonical
    order (that of the pair's first row, or of a pairs table): a row giving the sides the other way
    round has its sides swapped back, its winner flipped a <-> b and its preference and axis marks
    negated; a row whose sides are neither order is an error naming the pair and the row.

Votes and majorities (:func:`majority`)
    A judgment with a winner ("a"/"b") is a vote for that side. A human "about the same"
    (status "tie") and an LLM "inconsistent" verdict (the two orders cancel out) are votes for
    neither side: they count in the denominator of the majority share but for no side. An
    "unparsed" LLM verdict is no vote at all. The majority winner is the side with more votes;
    equal votes (or no votes) give no winner (``None``). The majority *share* is the winner's
    votes over all votes (both sides and "neither").

Consensus (config ``stats.consensus``, :func:`consensus_fraction`)
    A majority is *clear* when it has a winner and winner votes / all votes >= ``consensus``,
    compared exactly in integers (winner votes * q >= p * all votes for consensus p/q), so that a
    share of exactly 2/3 (2 of 3, 4 of 6) reaches a consensus of 2/3. ``consensus`` is a
    :class:`fractions.Fraction`, a "p/q" string (exact: "2/3"), or a number; a number (or a
    decimal string) is read as the nearest fraction with a denominator of at most 100
    (``Fraction(x).limit_denominator(100)``: 0.6667 -> 2/3, 0.75 -> 3/4, 0.7 -> 7/10; 0.501 -> 1/2,
    so write "501/1000" for that). The default is 2/3: with 3 raters 2-1 is clear; with 5 raters
    4-1 is clear and 3-2 or 3-1-1 is not (3/5 < 2/3).

Ambiguous pairs (§4.4, :func:`ambiguity`)
    The paper: "cases where our 5 human annotators did not have a clear consensus and per-category
    rankings by the LLM evaluators were mixed with no clear winner" (agreement there 61.3 %). Both
    conditions, our reading:

    * no clear human consensus: the human majority has no winner or its share is below
      ``consensus``;
    * LLM per-axis rankings mixed with no clear winner: on every HEART axis (H, E, A, R, T) the LLM
      judges' signed marks of the pair are reduced to an *axis majority* (each judge's mark is a
      vote for a, for b or, unmarked / 0, for neither; the side with more votes; equal votes: no
      winner); the rankings are *mixed* unless at least one axis has a majority winner and every
      axis that has one names the same side (axes favouring a and axes favouring b, or no axis
      with a winner at all, are mixed). Unparsed LLM verdicts carry no marks; a pair on which no
      LLM judgment carries a mark has unknown axes (``axes_mixed`` NA) and is left out of the
      ambiguous subset (counted in the note).

    Scope "ambiguous" is the paper's subset (both conditions). Without any LLM axis mark in the
    table it cannot be formed: its rows are "absent" and say so, and nothing falls back silently.
    Scope "ambiguous-human-only" is the first condition alone (the definition used before), and
    scope "clear" its complement (a clear human consensus). Agreement is computed only where the
    human majority has a winner, so tied pairs of these scopes are counted in ``n_no_reference``.

Agreement with the human majority (§4.4, §4.9, §9.9; :func:`human_llm_agreement`)
    The share of pairs on which a judge names the same winner as the human majority, over the
    pairs where both have a winner. Three kinds of rows, per scope:

    * "llm-ensemble": the LLM-ensemble majority against the human majority, the paper's §9.9
      definition ("the fraction of response pairs where the LLM-ensemble majority matches the human
      majority");
    * "mean-of-judges": the unweighted mean over the LLM judges of each judge's agreement with the
      human majority (§4.4's "average human-model agreement rate", 78.7 % "across 1,125
      comparisons"); its interval comes from the same bootstrap resamples (the mean of the judges'
      replicates); ``n_pairs`` / ``n_agree`` / ``n_no_verdict`` / ``n_no_reference`` are summed over
      the judges (judge-pair comparisons counted), so ``n_agree / n_pairs`` is the pooled rate,
      which differs from the unweighted mean when judges judged different numbers of pairs;
    * one row per LLM judge.

    Scopes: "all", "clear", "ambiguous", "ambiguous-human-only", "subset=regular",
    "subset=adversarial" (always present; §4.9's 78 % vs 76 %), any other "subset=<s>", and
    "kind=<k>" (model-model, human-model ...). One definition of the counts for every table of this
    module: a pair a judge was never shown (no row of it, e.g. family exclusion, §9.6) is outside
    that judge's denominator and outside ``n_no_verdict``; ``n_no_verdict`` counts the pairs the judge
    was shown (a row exists, parsed or not) where the reference has a winner but the judge named
    none (inconsistent orders, unparsed, or for the ensemble a tied majority). Cross-judge agreement
    is the same between two LLM judges (or two groups of judges, e.g. families, each reduced to
    its majority) on the pairs both judged, with Cohen's κ (:func:`heart.stats.reliability.cohen_kappa`)
    on the same pairs; "all" is the share of pairs on which every judge (group) judged and all named
    the same winner (the paper's three-way agreement).

Per-vote agreement (Zheng et al. 2023, Table 5; :func:`heart.stats.agreement.per_vote.per_vote_agreement`)
    Beside the majority rows, FastChat's definition: every human vote against the judge's verdict on
    the same pair, "with ties" (a / tie / b; a judge's tied or cancelling orders is a tie) and
    "without ties" (comparisons with a tie on either side left out). References
    "human-votes-with-ties" / "human-votes-without-ties" in ``agreement_human_llm``.

Inter-human agreement and reliability (§4.2, §4.4, §9.9; :func:`inter_human`)
    Percent agreement (§4.4: "inter-human agreement of 79.5 %"): rater-to-rater agreement on the
    same pair -- over every pair with >= 2 human ratings and all unordered pairs of its ratings,
    the share of rater pairs choosing the same option among a / about the same / b (two "about the
    same" agree; "about the same" against a or b disagrees), pooled over rater pairs
    (:func:`heart.stats.reliability.rater_pair_agreement`; with the same number of raters on every pair
    it is Fleiss' observed agreement P̄). Fleiss' κ over the
    raters of each pair, on the winner (a / about the same / b) and on the 5-point preference
    (-2..2), and Krippendorff's α nominal and ordinal on the preference and nominal on the winner
    (the coefficients are in :mod:`heart.stats.reliability`). Fleiss' κ needs the same number of raters
    on every pair, so it uses the pairs with the most common number (>= 2) of ratings; the others
    are counted in the note. Humans give no axis marks (Figure 2), so per-axis κ is reported as
    "unavailable".

Stability under judge subsampling (§9.9)
    The agreement of the majority of k random LLM judges with the reference, for every k; the
    spread over subsets is summarised by its mean, SD and central ``ci`` range
    (:func:`subsampling_stability`). The reference winner does not depend on ``consensus``, so the
    function takes none.

Trivial judges and the human ceiling (AlpacaEval style)
    "always-longer" picks the longer response (whitespace-separated words of the completion
    text; equal lengths give no verdict), "always-position-A" picks the pair's ``system_a``
    (randomised per pair by design_pairs in a study; in imported judgments the ``system_a`` of the
    first record naming the pair). Without completion texts (analysis-only) "always-longer" is
    "absent" and says so. The *leave-one-out* human ceiling
    ("human-loo-ceiling"): every rater's winner against the majority of the *other* raters of the
    pair, pooled over all (rater, pair) comparisons; it compares one rater with n-1 others, so it
    slightly understates what the full n-rater majority would reach, and it is not the paper's
    rater-to-rater percent agreement (that is :func:`inter_human`'s "percent_agreement").
    :func:`pair_lengths` (words of both completions of every pair) serves "always-longer" here
    and the length audit of :mod:`heart.stats.bias`.

Uncertainty (§9.12)
    Intervals (``ci_low`` / ``ci_high``, level ``ci``, config ``stats.ci``) are percentile
    intervals of the conversation-level cluster bootstrap of :mod:`heart.stats.bootstrap`: the
    conversation_ids of the whole judgments table are resampled with replacement (drawn once per
    call, so every row of one call shares the resamples) and a rate is re-estimated as (resampled
    sum of hits) / (resampled number of units); κ and α are recomputed on the resampled pairs.
    The bias audits are in :mod:`heart.stats.bias`, Benjamini–Hochberg in :mod:`heart.stats.multiple_testing`.

The modules, one per section above: :mod:`.orientation` (orientation, pair metadata, axis marks),
:mod:`.majority` (votes, majorities, consensus, ambiguous pairs; the helpers of every table),
:mod:`.human_llm` (agreement with the human majority), :mod:`.per_vote` (FastChat's per-vote
agreement), :mod:`.cross_judge`, :mod:`.inter_human`,
:mod:`.stability` (judge subsampling) and :mod:`.trivial` (trivial judges, the human ceiling). Rule
``agreement`` (``rules/stats.smk``) writes their tables.
"""
