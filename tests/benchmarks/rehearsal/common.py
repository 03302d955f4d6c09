"""What the rehearsal's parts share: its targets, the stages and their rules, and small formatters."""

from __future__ import annotations

import math
import re

TARGETS = {"rehearsal_s": 30 * 60, "peak_bytes": 4 * 2 ** 30, "noop_s": 5.0}
KEY_VARS = ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "DEEPINFRA_API_KEY", "OPENAI_API_KEY", "TOGETHERAI_API_KEY")
STAGE_RULES = {
    "data/items": ("download_esconv", "download_release", "ingest_esconv", "map_release", "release_items",
                   "screen_items", "screening_calibration", "make_adversarial_items", "collect_items"),
    "completions": ("generate_completions", "merge_completions", "import_completions", "original_completions",
                    "human_completions", "summarize_systems", "screen_completions"),
    "judging": ("design_pairs", "judge_pairs", "judge_qc", "judge_quality", "merge_judgments", "human_judgments",
                "combine_judgments"),
    "tagging": ("tag_strategies", "merge_tags", "strategy_f1"),
    "stats": ("ratings", "agreement", "bias_audits", "strategy_stats", "factor_analysis", "external_correlations",
              "multiple_testing", "rationale_codes", "preference_shares", "style_ratings", "import_judgments",
              "judge_board", "ablations"),
    "figures/tables": ("figure_leaderboard", "figure_elo_ttft", "figure_strategies", "figure_elo_forest",
                       "figure_agreement", "figure_bias_factors", "figure_example_pair", "paper_tables",
                       "paper_comparison", "figure_judge_board", "figure_ablations"),
    "cache export": ("export_llm_cache", "preview_llm_calls", "llm_spend"),
    "annotation": ("annotation_tasks", "export_annotations"),
}
STAGE_OF = {rule: stage for stage, rules in STAGE_RULES.items() for rule in rules}
STAGES = [*STAGE_RULES, "report"]
LOG_STAGE = {"data": "data/items", "items": "data/items", "completions": "completions", "judging": "judging",
             "tagging": "tagging", "stats": "stats", "figures": "figures/tables", "tables": "figures/tables",
             "llm": "cache export"}
CALLS_RE = re.compile(r"(\d+) requests, (\d+) from cache, (\d+) called, (\d+) failed")


def gib(n):
    return f"{n / 2 ** 30:.2f} GiB"


def mib(n):
    return f"{n / 2 ** 20:.1f} MiB"


def hms(s):
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def merge(base, over):
    """Snakemake's recursive config update."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def table(rows, headers):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])
