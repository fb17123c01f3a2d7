"""Figures of the scheduler comparison (style, palette and :func:`save` of :mod:`experiments.plots`).

* :func:`plot_sched_peaks` -- peak of live activation bytes per scheduler per graph (a table:
  one row per scheduler and a row with the proved optimum), relative to the file order or in
  bytes.
* :func:`plot_schedule_curves` -- live bytes over schedule steps of two (or more) schedules of one
  graph, each with its line style and its peak.

Both draw data computed before (records, live profiles); neither schedules nor analyses lifetimes.
Use :func:`schedule_profiles` to turn stored orders into live profiles first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from experiments.plots.style import (
    LINESTYLES,
    PALETTE,
    _new_axes,
    byte_axis,
    figsize,
    format_bytes,
    short_label,
    step_axis,
)
from planners import live_profile

__all__ = ["plot_sched_peaks", "plot_schedule_curves", "schedule_profiles", "PROVED_SCHEDULE"]

#: Scheduler statuses that prove the order's peak minimal.
PROVED_SCHEDULE = ("optimal",)


def schedule_profiles(problems: Mapping[str, object]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Live profiles ``label -> (steps, live bytes)`` of activation problems (one per schedule;
    :func:`planners.live_profile`), for :func:`plot_schedule_curves`. O(n log n) each."""
    return {label: live_profile(p) for label, p in problems.items()}


def plot_sched_peaks(
    records: pd.DataFrame,
    relative_to: str | None = "file_order",
    schedulers: Sequence[str] | None = None,
    title: str = "Peak live activation memory per scheduler",
    ax=None,
):
    """Table of peaks: one row per scheduler, one column per workload, each cell the scheduler's
    peak on that workload, coloured and written out, with a first row ``proved optimum``.

    Every scheduler has its own row, so schedulers that reach the same peak never hide each
    other (a dot plot piled 13 of them on one value).

    Parameters
    ----------
    records : DataFrame
        Output of :func:`experiments.sched_compare.compare_schedules` (or any frame with columns
        ``workload``, ``scheduler``, ``peak_bytes``, optionally ``status``); duplicate
        (workload, scheduler) rows, one per planner, are collapsed (the peak does not depend on
        the planner).
    relative_to : str or None
        Scheduler whose peak is 1 in each column: cells are ``peak / reference peak``
        (bytes/bytes, 3 decimals; lower is better), coloured on a diverging scale centred at 1.
        ``None``: cells are peaks in binary units (KiB, MiB), coloured relative to the column's
        smallest peak.
    schedulers : sequence of str, optional
        Row order (default: order of appearance).
    title : str
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes. The ``proved optimum`` row holds, per workload, the smallest peak of a
    result with ``status`` ``"optimal"`` (:data:`PROVED_SCHEDULE`; ``exact_dp``,
    ``cpsat_schedule``), blank where none is proved. A cell marked ``*`` equals that proved
    optimum (the same mark as the planner heatmap's proved optima); a result of a scheduler that
    proves its peak optimal elsewhere but not here (any status but ``optimal``: an exact
    scheduler stopped by its limit, or a heuristic order above the order bound) is marked ``?``
    (not proved); a run without a peak (``skipped``, ``error``) is a blank cell naming its status.
    The colour bar says what the marks mean.

    Raises
    ------
    ValueError
        A missing column or reference scheduler (named in the message).
    """
    import matplotlib.colors as mcolors

    from experiments.plots.style import MIN_TEXT_PT, _text_colour

    for c in ("workload", "scheduler", "peak_bytes"):
        if c not in records.columns:
            raise ValueError(f"plot_sched_peaks: records need column {c!r}")
    allrows = records.drop_duplicates(["workload", "scheduler"])
    df = records.dropna(subset=["peak_bytes"]).drop_duplicates(["workload", "scheduler"])
    st_all = (allrows.pivot(index="workload", columns="scheduler", values="status")
              if "status" in allrows else None)
    tab = df.pivot(index="workload", columns="scheduler", values="peak_bytes").astype(float)
    workloads = list(dict.fromkeys(allrows["workload"]))
    tab = tab.reindex(workloads)
    cols = list(schedulers) if schedulers else list(dict.fromkeys(allrows["scheduler"]))
    cols = [c for c in cols if c in set(allrows["scheduler"])]
    tab = tab.reindex(columns=cols)
    if relative_to is not None and relative_to not in tab.columns:
        raise ValueError(f"plot_sched_peaks: reference scheduler {relative_to!r} not in records")
    status = (st_all.reindex(index=workloads, columns=cols).astype(object)
              if st_all is not None else pd.DataFrame("heuristic", index=workloads, columns=cols))
    proved = status.isin(PROVED_SCHEDULE).to_numpy() & tab.notna().to_numpy()
    peaks = tab.to_numpy(float)
    opt = np.where(proved, peaks, np.inf).min(axis=1)
    opt = np.where(np.isfinite(opt), opt, np.nan)
    proves = [bool(proved[:, j].any()) or s in ("exact_dp", "cpsat_schedule")
              for j, s in enumerate(cols)]
    rows = (["proved optimum"] if np.isfinite(opt).any() else []) + cols
    body = peaks.T  # schedulers x workloads
    grid = np.vstack([opt[None, :], body]) if rows and rows[0] == "proved optimum" else body
    off = 1 if rows and rows[0] == "proved optimum" else 0
    if relative_to is not None:
        ref = tab[relative_to].to_numpy(float)
        shown = grid / ref[None, :]
        finite = shown[np.isfinite(shown)]
        span = float(np.max(np.abs(np.log(finite)))) if finite.size else 0.1
        span = max(span, 0.02)
        norm = mcolors.LogNorm(vmin=float(np.exp(-span)), vmax=float(np.exp(span)))
        cmap = "PuOr_r"  # diverging, colour-blind safe: orange above 1, purple below
    else:
        shown = grid
        low = np.nanmin(grid, axis=0)
        norm = mcolors.Normalize(vmin=1.0, vmax=max(1.05, float(np.nanmax(grid / low))))
        cmap = "viridis_r"
    nw, nr = len(workloads), len(rows)
    fig, ax = _new_axes(ax, figsize("double", 1.3 + 0.24 * nr, 1.8 + 0.62 * nw))
    colour_values = shown if relative_to is not None else grid / np.nanmin(grid, axis=0)
    im = ax.imshow(np.ma.masked_invalid(colour_values), cmap=cmap, norm=norm, aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(nw), [short_label(w, width=16) for w in workloads], rotation=40,
                  ha="right", rotation_mode="anchor")
    ax.set_yticks(range(nr), rows)
    if off:
        ax.get_yticklabels()[0].set_fontweight("bold")
        ax.axhline(0.5, color="black", lw=1.0)
    cm = im.cmap
    marks = set()
    for r in range(nr):
        for c in range(nw):
            v = shown[r, c]
            if not np.isfinite(v):
                if r >= off:
                    st = str(status.iloc[c, r - off])
                    if st not in ("nan", "None", ""):
                        ax.text(c, r, st, ha="center", va="center", fontsize=MIN_TEXT_PT,
                                color="0.35")
                continue
            text = f"{v:.3f}" if relative_to is not None else format_bytes(grid[r, c])
            if r >= off:
                j = r - off
                if np.isfinite(opt[c]) and grid[r, c] == opt[c]:
                    text += "*"
                    marks.add("*")
                elif proves[j] and not proved[c, j]:
                    text += "?"
                    marks.add("?")
            face = mcolors.to_hex(cm(norm(colour_values[r, c])))
            ax.text(c, r, text, ha="center", va="center", fontsize=MIN_TEXT_PT,
                    color=_text_colour(face),
                    fontweight="bold" if r < off else "normal")
    cb = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    if relative_to is not None:  # plain ratio ticks, not 9 x 10^-1
        import matplotlib.ticker as mticker

        ticks = [t for t in (0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.5, 2.0, 4.0)
                 if norm.vmin <= t <= norm.vmax]
        cb.ax.yaxis.set_major_locator(mticker.FixedLocator(ticks))
        cb.ax.yaxis.set_major_formatter(mticker.FixedFormatter([f"{t:g}" for t in ticks]))
        cb.ax.yaxis.set_minor_locator(mticker.NullLocator())
    if relative_to is not None:
        label = f"peak / {relative_to} peak (log scale; lower is better)"
    else:
        label = "peak / smallest peak of the workload"
    if "*" in marks:
        label += "\n* = the proved optimum"
    if "?" in marks:
        label += "\n? = not proved optimal here"
    cb.set_label(label)
    ax.set_xlabel("workload")
    ax.set_ylabel("scheduler")
    ax.set_title(title)
    return ax


def plot_schedule_curves(
    profiles: Mapping[str, tuple[Sequence[float], Sequence[float]]], title: str | None = None,
    ax=None, graph_name: str = "",
):
    """Live activation bytes over schedule steps for several schedules of one graph.

    Parameters
    ----------
    profiles : mapping label -> (steps, live bytes)
        Live profiles computed before (:func:`schedule_profiles` of the stored schedules'
        activation problems, or :func:`planners.live_profile`); this function analyses nothing.
        One step curve per profile (legend label = the mapping's key), each with its own colour
        and line style (:data:`experiments.plots.LINESTYLES`) so overlapping curves stay
        distinguishable; each curve's peak -- the lower bound on the arena for that order -- is a
        thin horizontal line of the curve's colour, labelled ``"peak of <label> <bytes>"``.
    title : str, optional
    ax : matplotlib Axes, optional
    graph_name : str
        For the default title.

    Returns
    -------
    matplotlib Axes. O(points).

    Raises
    ------
    ValueError
        ``profiles`` is empty.
    """
    if not profiles:
        raise ValueError("plot_schedule_curves: give at least one profile")
    fig, ax = _new_axes(ax, figsize("double", 3.0, 6.5))
    peaks = []
    for k, (label, (t, live)) in enumerate(profiles.items()):
        t, live = np.asarray(t), np.asarray(live)
        colour = PALETTE[k % len(PALETTE)]
        if len(t):
            ax.step(t, live, where="post", color=colour, lw=1.3 if k == 0 else 1.1,
                    ls=LINESTYLES[k % len(LINESTYLES)], label=label, zorder=4 - 0.1 * k)
        peaks.append((label, int(live.max()) if len(live) else 0, colour, k))
    for label, pk, colour, k in peaks:
        ax.axhline(pk, color=colour, lw=0.8, ls=LINESTYLES[k % len(LINESTYLES)], alpha=0.9,
                   zorder=2, label=f"peak of {label} {format_bytes(pk)}")
    byte_axis(ax.yaxis)
    step_axis(ax.xaxis)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("schedule step")
    ax.set_ylabel("live activation bytes")
    ax.set_title(title or f"Live activation bytes: {graph_name}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax
