"""Figure 5 (rule figure_elo_ttft): Elo against median time-to-first-token, and the table it is drawn from."""

from __future__ import annotations

import math
import textwrap

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from heart.figures.style import FONT, absent_axes, new_figure, num, ok_mask, place_labels, suptitle

#: Model family (``models.csv``) -> provider, for Figure 5's colours; unknown families are their own provider.
PROVIDERS = {"gpt": "OpenAI", "claude": "Anthropic", "gemini": "Google", "llama": "Meta",
             "kimi": "Moonshot AI", "polaris": "Hippocratic AI", "human": "Human", "dataset": "Dataset"}
#: Marker per TTFT source in Figure 5: measured by this workflow (filled circle) or external (hollow diamond).
TTFT_MARKERS = {"measured": "o", "external": "D"}
#: The paper's real-time design target for median TTFT (§9.7), drawn dotted in Figure 5.
TTFT_TARGET_S = 0.5


def ttft_points(leaderboard: pd.DataFrame, models: pd.DataFrame | None = None,
                completions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Figure 5's input: per system with an Elo, its median TTFT, provider and where the TTFT came from.

    Parameters
    ----------
    leaderboard : DataFrame
        ``system``, ``status``, ``elo`` (rows not "ok" are left out).
    models : DataFrame, optional
        ``workflow/resources/external/models.csv``: ``system``, ``family``, ``ttft_median_s``
        (external, e.g. the paper's / Artificial Analysis), optional ``model`` (display name).
    completions : DataFrame, optional
        Completions with ``system`` and per-response ``ttft_s`` (measured by the workflow).

    Returns
    -------
    DataFrame
        ``system``, ``label``, ``elo``, ``ttft_s``, ``provider``, ``ttft_source``, ``n_ttft``.
        A measured median (``ttft_source`` "measured", over the non-null ``ttft_s``) is preferred
        to the external value ("external"); a system with neither has ``ttft_s`` NaN and
        ``ttft_source`` "absent" (:func:`elo_vs_ttft` lists it in a footnote rather than plotting it).
    """
    lb = leaderboard[ok_mask(leaderboard)]
    out = pd.DataFrame({"system": lb["system"].astype(str).to_numpy(),
                        "elo": [num(e) for e in lb["elo"]]})
    meta = (models.drop_duplicates("system").set_index("system") if models is not None and len(models)
            else pd.DataFrame(index=pd.Index([], name="system")))
    measured = pd.Series(dtype=float)
    counts = pd.Series(dtype=int)
    if completions is not None and len(completions) and "ttft_s" in completions:
        t = completions[["system", "ttft_s"]].assign(
            ttft_s=pd.to_numeric(completions["ttft_s"], errors="coerce"))
        t = t[t["ttft_s"].notna()]
        measured = t.groupby("system")["ttft_s"].median()
        counts = t.groupby("system")["ttft_s"].size()
    ext = (pd.to_numeric(meta["ttft_median_s"], errors="coerce") if "ttft_median_s" in meta
           else pd.Series(dtype=float))
    ttft, source, n_ttft, provider, label = [], [], [], [], []
    for s in out["system"]:
        if s in measured.index:
            ttft.append(float(measured[s]))
            source.append("measured")
            n_ttft.append(int(counts[s]))
        elif s in ext.index and not math.isnan(num(ext[s])):
            ttft.append(float(ext[s]))
            source.append("external")
            n_ttft.append(pd.NA)
        else:
            ttft.append(math.nan)
            source.append("absent")
            n_ttft.append(pd.NA)
        fam = meta["family"].get(s) if "family" in meta else None
        fam = fam if isinstance(fam, str) and fam else {"human": "human", "original": "dataset"}.get(s, s)
        provider.append(PROVIDERS.get(fam, fam))
        name = meta["model"].get(s) if "model" in meta else None
        label.append(name if isinstance(name, str) and name else s)
    out["ttft_s"] = ttft
    out["provider"] = provider
    out["ttft_source"] = source
    out["n_ttft"] = pd.array(n_ttft, dtype="Int64")
    out.insert(1, "label", label)
    return out


def elo_vs_ttft(points: pd.DataFrame, title: str = "HEART Elo vs median time-to-first-token",
                title_note: str | None = None, target_s: float | None = TTFT_TARGET_S) -> Figure:
    """Figure 5: Elo against median TTFT (log x), coloured by provider, dashed field-mean line.

    Parameters
    ----------
    points : DataFrame
        :func:`ttft_points`: ``system``, ``elo``, ``ttft_s`` (seconds, the median), ``provider``
        (or ``family``), ``ttft_source`` ("measured" / "external"); optional ``label``. Rows without
        a positive TTFT or an Elo are not plotted and are listed in a footnote.
    title, title_note : str
        Figure title and a note appended to it.
    target_s : float or None
        Draw the paper's real-time target (§9.7, 500 ms) as a dotted vertical line; None: no line.

    Returns
    -------
    Figure
        Markers: :data:`TTFT_MARKERS` (measured: filled circle; external: hollow diamond). The dashed
        line (``gid="field-mean"``) is at the mean Elo of the plotted systems. Labels are placed by a
        greedy search for free space (:func:`heart.figures.style.place_labels`), with leader lines
        when moved far.
    """
    p = points.copy()
    prov_col = "provider" if "provider" in p else ("family" if "family" in p else None)
    p["_prov"] = p[prov_col].astype(str) if prov_col else "unknown"
    p["_src"] = p["ttft_source"].astype(str) if "ttft_source" in p else "external"
    p["_label"] = p["label"].astype(str) if "label" in p else p["system"].astype(str)
    p["_x"] = [num(v) for v in p["ttft_s"]]
    p["_y"] = [num(v) for v in p["elo"]]
    usable = p["_x"].gt(0) & p["_y"].notna()
    skipped = p.loc[~usable, "_label"].tolist()
    p = p[usable].reset_index(drop=True)
    n = len(p)
    fig = new_figure(8.6 if n > 8 else 7.2, 5.6 if n > 8 else 4.4)
    ax = fig.add_subplot()
    ax.set_xscale("log")
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
        filled = src == "measured"
        ax.plot(g["_x"], g["_y"], linestyle="none", marker=marker, markersize=msize,
                markerfacecolor=colors[pv] if filled else "white", markeredgecolor=colors[pv],
                markeredgewidth=1.6, zorder=3, gid=f"points|{pv}|{src}")
    mean = float(p["_y"].mean())
    ax.axhline(mean, linestyle="--", color="#555555", linewidth=1.0, zorder=1, gid="field-mean")
    lx, hx = np.log10(p["_x"].min()), np.log10(p["_x"].max())
    span = max(hx - lx, 0.6)
    ax.set_xlim(10 ** (lx - 0.14 * span - 0.05), 10 ** (hx + 0.14 * span + 0.05))
    ly, hy = p["_y"].min(), p["_y"].max()
    yspan = max(hy - ly, 40.0)
    ax.set_ylim(ly - 0.12 * yspan, hy + 0.12 * yspan)
    ax.autoscale(False)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g} s"))
    ax.xaxis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if round(v / 10 ** math.floor(math.log10(v) + 1e-9), 6) in (2.0, 5.0) else ""))
    ax.set_xlabel("median time to first token (s, log scale)", fontsize=FONT + 1)
    ax.set_ylabel("HEART Elo", fontsize=FONT + 1)
    ax.tick_params(labelsize=FONT)
    ax.grid(True, which="major", color="#eeeeee", linewidth=0.8, zorder=0)
    x0, x1 = ax.get_xlim()
    show_target = target_s is not None and x0 < target_s < x1
    if show_target:
        ax.axvline(target_s, linestyle=":", color="#aa3333", linewidth=1.0, zorder=1, gid="ttft-target")
    handles = [Line2D([], [], linestyle="none", marker="o", markersize=7, markerfacecolor=colors[pv],
                      markeredgecolor=colors[pv], label=pv) for pv in providers]
    handles.append(Line2D([], [], linestyle="none", label=" "))
    for src, marker in TTFT_MARKERS.items():
        if (p["_src"] == src).any():
            handles.append(Line2D([], [], linestyle="none", marker=marker, markersize=7,
                                  markerfacecolor="#666666" if src == "measured" else "white",
                                  markeredgecolor="#666666", markeredgewidth=1.4, label=f"TTFT {src}"))
    handles.append(Line2D([], [], linestyle="--", color="#555555", label=f"field mean ({mean:.0f})"))
    if show_target:
        handles.append(Line2D([], [], linestyle=":", color="#aa3333",
                              label=f"{target_s * 1000:.0f} ms target"))
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
