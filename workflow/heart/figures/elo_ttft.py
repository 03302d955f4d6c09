"""Figure 5 (rule figure_elo_ttft): Elo against median time-to-first-token, and the table it is drawn from."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from heart.stats import external
from heart.figures.style import (FONT, absent_axes, new_figure, num, ok_mask, place_labels, status_word,
                                 suptitle)

#: Model family (``models.csv``) -> provider, for Figure 5's colours; unknown families are their own provider.
PROVIDERS = {"gpt": "OpenAI", "claude": "Anthropic", "gemini": "Google", "llama": "Meta",
             "kimi": "Moonshot AI", "polaris": "Hippocratic AI", "human": "Human", "dataset": "Dataset"}
#: Marker per TTFT source in Figure 5: the paper's published medians (hollow diamond) or this run's measured
#: medians (filled circle); a figure draws one source (config ``figures.fig5.ttft_source``).
TTFT_MARKERS = {"measured": "o", "paper": "D"}
#: Figure 5's x label per TTFT source: the figure names where its latencies come from.
TTFT_AXIS_LABELS = {
    "paper": "median time to first token, s (log scale) — published medians (paper §4.5; Artificial Analysis)",
    "measured": "median time to first token, s (log scale) — measured in this run (streamed completion calls)",
}
#: Systems that are not models (no latency): left out of Figure 5 ("each point represents a model variant").
NOT_MODELS = ("human", "best-human", "original")
#: The paper's real-time design target for median TTFT (§9.7), drawn dotted in Figure 5.
TTFT_TARGET_S = 0.5


def ttft_points(leaderboard: pd.DataFrame, models: pd.DataFrame | None = None,
                completions: pd.DataFrame | None = None, ttft_source: str = "paper",
                labels: Mapping | None = None) -> pd.DataFrame:
    """Figure 5's input: per model with an Elo, its median TTFT from one source, provider and label.

    Parameters
    ----------
    leaderboard : DataFrame
        :func:`heart.stats.figure4.headline` (``system``, ``status``, ``elo``; optional ``derived``):
        rows not "ok", derived rows and :data:`NOT_MODELS` are left out.
    models : DataFrame, optional
        ``workflow/resources/external/models.csv`` (:func:`heart.stats.external.load_models`): ``system``,
        ``family``, ``ttft_median_s`` (the paper's published medians), optional ``model`` (name).
    completions : DataFrame, optional
        Completions with ``system`` and per-response ``ttft_s`` (measured by the workflow).
    ttft_source : {"paper", "measured"}
        Where every point's TTFT comes from (:func:`heart.stats.external.ttft_table`): the paper's published
        medians, or this run's median of the measured ``ttft_s``. One source per figure: never mixed.
    labels : mapping, optional
        system -> display name (config ``figures.fig4.display_names``); else ``models`` "model", else
        the system.

    Returns
    -------
    DataFrame
        ``system``, ``label``, ``elo``, ``ttft_s``, ``provider``, ``ttft_source``, ``n_ttft`` (number
        of measured values; missing for "paper"). A model without a TTFT from the source has ``ttft_s``
        NaN and ``ttft_source`` "absent" (:func:`elo_vs_ttft` lists it in a footnote rather than
        plotting it).
    """
    lb = leaderboard[ok_mask(leaderboard)]
    if "derived" in lb:
        lb = lb[~lb["derived"].astype("boolean").fillna(False).to_numpy(dtype=bool)]
    lb = lb[~lb["system"].astype(str).isin(NOT_MODELS)]
    out = pd.DataFrame({"system": lb["system"].astype(str).to_numpy(),
                        "elo": [num(e) for e in lb["elo"]]})
    meta = (models.drop_duplicates("system").set_index("system") if models is not None and len(models)
            else pd.DataFrame(index=pd.Index([], name="system")))
    ttft = external.ttft_table(ttft_source, models if models is not None and len(models) else None,
                               completions).set_index("system")
    known = out["system"].isin(ttft.index).to_numpy()
    out["ttft_s"] = out["system"].map(ttft["ttft_median_s"]).astype(float)
    def meta_of(col: str) -> list:  # a metadata column per point, None where there is none
        return out["system"].map(meta[col]).tolist() if col in meta else [None] * len(out)

    out["provider"] = [PROVIDERS.get(f, f) if isinstance(f, str) and f else s
                       for s, f in zip(out["system"], meta_of("family"))]
    out["ttft_source"] = np.where(known, ttft_source, "absent")
    out["n_ttft"] = pd.array(out["system"].map(ttft["n_ttft"]), dtype="Int64")
    out.insert(1, "label", [str((labels or {}).get(s, n if isinstance(n, str) and n else s))
                            for s, n in zip(out["system"], meta_of("model"))])
    return out


def rho_text(correlations: pd.DataFrame, ttft_source: str) -> str:
    """The legend line of Figure 5's correlation: :func:`heart.stats.external.correlate`'s
    ``spearman_elo_log_ttft_<ttft_source>`` row as "Spearman ρ = 0.53 (n = 7)", or its status
    ("Spearman ρ: insufficient (n = 2)") where it has no estimate."""
    row = correlations.set_index("test").loc[f"spearman_elo_log_ttft_{ttft_source}"]
    if row["status"] == "ok":
        return f"Spearman ρ = {row['estimate']:.2f} (n = {int(row['n'])})"
    return f"Spearman ρ: {status_word(row['status'])} (n = {int(row['n'])})"


def elo_vs_ttft(points: pd.DataFrame, title: str = "HEART Elo vs median time-to-first-token",
                title_note: str | None = None, target_s: float | None = TTFT_TARGET_S,
                elo_label: str = "HEART Elo", rho: str | None = None) -> Figure:
    """Figure 5: Elo against median TTFT (log x), coloured by provider, dashed field-mean line.

    Parameters
    ----------
    points : DataFrame
        :func:`ttft_points`: ``system``, ``elo``, ``ttft_s`` (seconds, the median), ``provider``
        (or ``family``), ``ttft_source`` ("paper" / "measured"); optional ``label``. Rows without
        a positive TTFT or an Elo are not plotted and are listed in a footnote.
    title, title_note : str
        Figure title and a note appended to it.
    target_s : float or None
        Draw the paper's real-time target (§9.7, 500 ms) as a dotted vertical line; None: no line.
    elo_label : str
        The y label (e.g. naming the judges the Elo comes from).
    rho : str, optional
        A line for the legend, e.g. the Spearman ρ of the plotted points
        (``external_correlations``' row of this TTFT source).

    Returns
    -------
    Figure
        Filled markers, :data:`TTFT_MARKERS` by TTFT source (paper: diamond; measured: circle). The
        x label names the TTFT source (:data:`TTFT_AXIS_LABELS`) when the points have one; points
        from several sources (not what :func:`ttft_points` gives) get a marker legend instead. The
        dashed line (``gid="field-mean"``) is at the mean Elo of the plotted systems. Labels are
        placed by a greedy search for free space (:func:`heart.figures.style.place_labels`), with
        leader lines when moved far.
    """
    p, skipped = _plotted(points)
    n = len(p)
    fig = new_figure(8.6 if n > 8 else 7.2, 5.6 if n > 8 else 4.4)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g} s"))  # plain text: no mathtext labels
    ax.xaxis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if round(v / 10 ** math.floor(math.log10(v) + 1e-9), 6) in (2.0, 5.0) else ""))
    if n == 0:
        absent_axes(ax, "no system with both an Elo and a TTFT: absent")
        suptitle(fig, title, title_note)
        return fig
    providers = sorted(p["_prov"].unique())
    cmap = matplotlib.colormaps["tab10" if len(providers) <= 10 else "tab20"]
    colors = {pv: cmap(i % cmap.N) for i, pv in enumerate(providers)}
    msize = 7.5
    for (pv, src), g in p.groupby(["_prov", "_src"], sort=True):
        marker = TTFT_MARKERS.get(src, "s")
        ax.plot(g["_x"], g["_y"], linestyle="none", marker=marker, markersize=msize, markerfacecolor=colors[pv],
                markeredgecolor="white", markeredgewidth=0.8, zorder=3, gid=f"points|{pv}|{src}")
    mean = float(p["_y"].mean())
    ax.axhline(mean, linestyle="--", color="#555555", linewidth=1.0, zorder=1, gid="field-mean")
    lx, hx = np.log10(p["_x"].min()), np.log10(p["_x"].max())
    span = max(hx - lx, 0.6)
    ax.set_xlim(10 ** (lx - 0.14 * span - 0.05), 10 ** (hx + 0.14 * span + 0.05))
    ly, hy = p["_y"].min(), p["_y"].max()
    yspan = max(hy - ly, 40.0)
    ax.set_ylim(ly - 0.12 * yspan, hy + 0.12 * yspan)
    ax.autoscale(False)
    sources = sorted(p["_src"].unique())
    ax.set_xlabel(TTFT_AXIS_LABELS.get(sources[0], "median time to first token, s (log scale)")
                  if len(sources) == 1 else "median time to first token, s (log scale)", fontsize=FONT + 1)
    ax.set_ylabel(elo_label, fontsize=FONT + 1)
    ax.tick_params(labelsize=FONT)
    ax.grid(True, which="major", color="#eeeeee", linewidth=0.8, zorder=0)
    x0, x1 = ax.get_xlim()
    show_target = target_s is not None and x0 < target_s < x1
    if show_target:
        ax.axvline(target_s, linestyle=":", color="#aa3333", linewidth=1.0, zorder=1, gid="ttft-target")
    handles = _legend_handles(providers, colors, sources, mean, target_s if show_target else None, rho)
    # an axes legend (not a figure legend): the layout then keeps it clear of the title
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              fontsize=FONT, frameon=False, title="Provider", title_fontsize=FONT, alignment="left")
    if skipped:
        shown = ", ".join(skipped[:12]) + (f" and {len(skipped) - 12} more" if len(skipped) > 12 else "")
        # anchored under the x label, as an axes child so that the layout makes room for it
        ax.annotate("\n".join(textwrap.wrap(f"No TTFT (not plotted): {shown}", 110)), xy=(0.5, 0.0),
                    xycoords=ax.xaxis.label, xytext=(0, -6), textcoords="offset points", ha="center",
                    va="top", fontsize=FONT - 1, color="#555555", gid="no-ttft-note")
    suptitle(fig, title, title_note)
    # the layout must be final before labels are placed in display space; then freeze it
    fig.canvas.draw()
    fig.set_layout_engine("none")
    place_labels(fig, ax, p["_x"].to_numpy(), p["_y"].to_numpy(), p["_label"].tolist(),
                 marker_px=msize / 2 * fig.dpi / 72 + 1, fontsize=FONT - 0.5 if n > 12 else FONT)
    return fig


def _plotted(points: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The points Figure 5 plots (a positive TTFT and an Elo) with their provider, TTFT source, label and
    coordinates (``_prov``, ``_src``, ``_label``, ``_x``, ``_y``), and the labels of those it cannot plot."""
    p = points.copy()
    prov_col = "provider" if "provider" in p else ("family" if "family" in p else None)
    p["_prov"] = p[prov_col].astype(str) if prov_col else "unknown"
    p["_src"] = p["ttft_source"].astype(str) if "ttft_source" in p else "unknown"
    p["_label"] = p["label"].astype(str) if "label" in p else p["system"].astype(str)
    p["_x"] = [num(v) for v in p["ttft_s"]]
    p["_y"] = [num(v) for v in p["elo"]]
    usable = p["_x"].gt(0) & p["_y"].notna()
    return p[usable].reset_index(drop=True), p.loc[~usable, "_label"].tolist()


def _legend_handles(providers, colors, sources, mean: float, target_s: float | None, rho: str | None) -> list:
    """Figure 5's legend: a marker per provider, the TTFT sources' markers when there are several, the field
    mean, the real-time target where drawn, and the correlation's line."""
    shape = TTFT_MARKERS.get(sources[0], "s") if len(sources) == 1 else "o"
    handles = [Line2D([], [], linestyle="none", marker=shape, markersize=7, markerfacecolor=colors[pv],
                      markeredgecolor="white", label=pv) for pv in providers]
    handles.append(Line2D([], [], linestyle="none", label=" "))
    if len(sources) > 1:
        for src in sources:
            handles.append(Line2D([], [], linestyle="none", marker=TTFT_MARKERS.get(src, "s"), markersize=7,
                                  markerfacecolor="#666666", markeredgecolor="white", label=f"TTFT {src}"))
    handles.append(Line2D([], [], linestyle="--", color="#555555", label=f"field mean ({mean:.0f})"))
    if target_s is not None:
        handles.append(Line2D([], [], linestyle=":", color="#aa3333", label=f"{target_s * 1000:.0f} ms target"))
    if rho:
        handles.append(Line2D([], [], linestyle="none", label=rho))
    return handles
