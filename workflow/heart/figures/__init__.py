"""The paper's figures (HEART §4, Figures 2-6) and the audit figures, drawn from the statistics tables.

One module per figure rule; import the one you need (``from heart.figures import leaderboard``):

* :mod:`.leaderboard` (rule figure_leaderboard) -- Figure 4: per-axis percentiles (or win rates) and
  the overall win rate in the paper's six colour bins, and Elo (``leaderboard_heatmap``).
* :mod:`.elo_ttft` (figure_elo_ttft) -- Figure 5: Elo against median time-to-first-token, log x,
  coloured by provider, dashed field-mean line (``elo_vs_ttft``; ``ttft_points`` builds its input).
* :mod:`.strategies` (figure_strategies) -- Figure 6: usage (%) of the 15 support strategies per
  group (``strategy_heatmap``, ``strategy_matrix``).
* :mod:`.elo_forest` (figure_elo_forest) -- Elo with both interval kinds, one panel per item subset.
* :mod:`.agreement` (figure_agreement) -- human-LLM agreement with reference lines; cross-judge matrix
  (``agreement_panel``).
* :mod:`.bias_factors` (figure_bias_factors) -- position, length and self-preference audits, flip
  rates, factor loadings (``bias_panel``).
* :mod:`.example_pair` (figure_example_pair) -- Figures 2/3: one judged pair as HTML and as a figure.
* :mod:`.judge_board` (figure_judge_board) -- the judge leaderboard: per LLM judge and the ensemble, agreement
  with people, biases, flips and QC accuracy against their targets, separability, cost (``judge_board_figure``).
* :mod:`.style` -- what they share: colours, Figure 4's bins, the font size, absent-data drawing,
  label placement, the rule's style file (``applied``) and atomic saving (``save``).

Every plotting function takes DataFrames and returns a :class:`matplotlib.figure.Figure` (only
``style.applied`` and ``style.save`` touch files). Missing data are drawn as missing (hatched grey, the word
"absent" or its status), never as a zero; ``title_note`` (e.g. "SIMULATED data") is appended to every title.
"""
