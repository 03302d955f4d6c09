"""The README of a bundle: a datasheet (what each file is, what it derives from and under which licence, what
was removed to de-identify, how to use it), written from the bundle's manifest and study settings."""

from __future__ import annotations

LICENCES = """\
- **ESConv** (Liu et al., ACL 2021; github thu-coai/Emotional-Support-Conversation): CC BY-NC 4.0, for
  academic research use only. The items' histories, situations and the dataset's replies (system
  `original`) are ESConv text; so is every completion's context.
- **The HEART release** (github Hippocratic-AI-Research/HEART, `data/`): the upstream repository declares no
  licence. Its regular contexts are ESConv text (above); its adversarial contexts are the paper authors'
  LLM rewrites of ESConv dialogues. Cite the paper and ESConv.
- **Model outputs** (completions, verdicts, rationales, tags): subject to each provider's terms of use.
- **Human writing, ratings and labels**: given by the study's participants under the study's consent
  terms; this bundle carries no more than those terms allow (check them before publishing it).
- As a whole this bundle can be no more open than CC BY-NC 4.0."""

REMOVED = """\
- Writers' and raters' ids are replaced by pseudonyms (`writer-001`, `rater-001`, numbered in the sorted
  order of the original ids, so ties broken by id break the same way); the mapping is not in the bundle.
  Pair ids made from a writer's id are made again from the pseudonym.
- Not exported: the annotation store (its secret link key, sessions, times of day, IP addresses are never
  stored anyway), API keys or their environment variable values, local paths of the run, the response
  cache (publish `results/llm/cache.parquet` for a replay), and each model's server, key variable and
  local file settings (only model ids, families and decoding params are in `study.yaml`).
- Kept as given: the text participants wrote (completions, rationales). Read them before publishing: a
  participant may have written something that identifies them."""


def _rows(manifest: dict) -> str:
    lines = ["| file | rows | bytes | sha256 | what |", "|---|---:|---:|---|---|"]
    for name, f in manifest["files"].items():
        rows = "" if f["rows"] is None else f"{f['rows']:,}"
        lines.append(f"| `{name}` | {rows} | {f['bytes']:,} | `{f['sha256']}` | {f['what']} |")
    return "\n".join(lines)


def text(manifest: dict, study: dict) -> str:
    """The datasheet of a bundle with ``manifest`` (heart.bundle.export) and ``study`` settings."""
    c = manifest["counts"]
    label = manifest.get("label")
    simulated = (f"\n> **{label}.** Every completion, verdict, rating and label here was made by the workflow's "
                 "provider simulator and simulated people to rehearse the paper's run. Nothing here is data about "
                 "models or people.\n" if label else "")
    judges = ", ".join(sorted(study.get("judging", {}).get("judges", {}))) or "none"
    taggers = ", ".join(sorted(study.get("tagging", {}).get("taggers", {}))) or "none"
    absent = sorted(n for n in ("human_completions.jsonl", "human_judgments.jsonl", "strategy_labels.jsonl",
                                "imported_judgments.jsonl") if n not in manifest["files"])
    n_withheld = c.get("withheld_completions", 0)
    withheld = (f"- The text of {n_withheld:,} completions is left out (`withheld.jsonl`: a confirmed safety flag, the "
                "study's `completions.confirmed_flags: bundle`); their pairs and verdicts are here, the rationales "
                "of those verdicts and the evidence of their tags are empty, and what needs their text (lengths, "
                "style control) is missing for them in a run from this bundle.\n" if n_withheld else "")
    return f"""# A HEART data release (`{manifest['format']}`)
{simulated}
Everything a HEART study computed its numbers from, in one folder: {c['items']:,} items, the completions of
{c['model_systems']} model systems, the dataset and {c['writers']} human writers, {c['pairs']:,} compared pairs,
{c['llm_verdicts']:,} verdicts of {c['llm_judges']} LLM judges ({judges}) per pair and shown order, the ratings of
{c['raters']} human raters, and the strategy tags of {c['taggers']} tagger(s) ({taggers}). Made by the `heart`
workflow (rule `export_bundle`, `make bundle`).

## Use it

```bash
make paper ARTIFACTS=/path/to/this/folder      # every figure and table, the report; no model call, no key
```

`make paper` checks every file against `manifest.json` first (a changed or missing file is an error naming
it), runs with `study.yaml`'s settings, and writes `results/` as the study did. Each file is also read on its
own by the workflow's importers: `completions.parquet` by `imported_systems`, the `.jsonl` human files by
`human_completions.path`, `human_judgments.path` and `tagging.spot_checks`; the Parquet tables follow
`workflow/schemas/tables/`. The LLM verdicts alone, in the public judgment format, re-analysed with no other
file: `snakemake --configfile config/analysis.yaml --config 'analysis_only={{judgments: llm_verdicts.jsonl}}'`.

## Files

{_rows(manifest)}

Not in this bundle because the study has none: {', '.join(f'`{n}`' for n in absent) or 'nothing'}. Where
human data are absent, every output that needs them says so.

## Where it comes from, and licences

{LICENCES}

## What was removed or changed to de-identify

{REMOVED}

## Known limits

- A judge's answer that did not parse stays in `llm_verdicts.parquet` with `parse_ok` false and no verdict; it
  counts as no result, never as a tie.
- `completions.parquet` has no token counts or the exact params sent (the import format has no column for
  them); the verdict tables keep the response cache's keys, so a published cache can be matched to them.
{withheld}"""
