"""Figures of the scheduler comparison (style, palette and :func:`save` of :mod:`experiments.plots`).

* :func:`plot_sched_peaks` -- peak of live activation bytes per scheduler per graph (dot plot with
  a reference line at 1.0), relative to the file order or in bytes.
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
    distinct_styles,
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
    """Dot plot: one column per workload, one marker per scheduler (dodged side by side).

    Parameters
    ----------
    records : DataFrame
        Output of :func:`experiments.sched_compare.compare_schedules` (or any frame with columns
        ``workload``, ``scheduler``, ``peak_bytes``); duplicate (workload, scheduler) rows, one per
        planner, are collapsed (the peak does not depend on the planner).
    relative_to : str or None
        Scheduler whose peak is 1.0 in each column: y is ``peak / reference peak`` (bytes/bytes)
        with a black reference line at 1.0; the axis need not start at 0 because the marks are
        dots, not bars. ``None`` plots the peaks in bytes on an axis from 0 (binary-unit ticks).
    schedulers : sequence of str, optional
        Dodge and legend order (default: order of appearance).
    title : str
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes; each scheduler has its own (colour, marker) pair and long workload names
    are wrapped (:func:`experiments.plots.short_label`). When the records have a ``status``
    column, a scheduler's proved optima (``"optimal"``) are filled markers and every other
    result of a scheduler that proves optima somewhere (stopped by its time limit: ``timeout``
    or ``feasible``) is an open marker labelled ``"<scheduler> (not proved: timeout)"`` in the
    legend, so a timed-out exact scheduler never looks exact; ``skipped`` and ``error`` runs have
    no peak and are listed in the legend as ``"<scheduler>: skipped on N"``.

    Raises
    ------
    ValueError
        A missing column or reference scheduler (named in the message).
    """
    for c in ("workload", "scheduler", "peak_bytes"):
        if c not in records.columns:
            raise ValueError(f"plot_sched_peaks: records need column {c!r}")
    allrows = records.drop_duplicates(["workload", "scheduler"])
    df = records.dropna(subset=["peak_bytes"]).drop_duplicates(["workload", "scheduler"])
    status = (df.pivot(index="workload", columns="scheduler", values="status")
              if "status" in df else None)
    tab = df.pivot(index="workload", columns="scheduler", values="peak_bytes").astype(float)
    tab = tab.reindex(list(dict.fromkeys(df["workload"])))
    cols = list(schedulers) if schedulers else list(dict.fromkeys(df["scheduler"]))
    tab = tab[[c for c in cols if c in tab.columns]]
    if relative_to is not None:
        if relative_to not in tab.columns:
            raise ValueError(
                f"plot_sched_peaks: reference scheduler {relative_to!r} not in records"
            )
        tab = tab.div(tab[relative_to], axis=0)
    nw, ns = tab.shape
    w0 = min(14.0, max(6.5, 0.55 * nw + 2.5))
    fig, ax = _new_axes(ax, figsize("double", 3.6, w0))
    width = 0.8 / max(ns, 1)
    x = np.arange(nw)
    for k, (s, (colour, marker)) in enumerate(zip(tab.columns, distinct_styles(ns))):
        xs, ys = x + (k - (ns - 1) / 2) * width, tab[s].to_numpy()
        st = (status.reindex(index=tab.index)[s].astype(str).to_numpy() if status is not None
              and s in status.columns else np.array(["heuristic"] * nw))
        proves = bool(np.isin(st, PROVED_SCHEDULE).any()) or s in ("exact_dp", "cpsat_schedule")
        proved = np.isin(st, PROVED_SCHEDULE)
        if not proves:  # a heuristic: one kind of marker, nothing to prove
            ax.scatter(xs, ys, s=18, marker=marker, facecolor=colour, edgecolor="0.25",
                       linewidth=0.3, label=s, zorder=3)
        else:
            if proved.any():
                ax.scatter(xs[proved], ys[proved], s=18, marker=marker, facecolor=colour,
                           edgecolor="0.25", linewidth=0.3, label=f"{s} (proved optimal)",
                           zorder=3)
            rest = ~proved & np.isfinite(ys)
            if rest.any():
                kinds = ", ".join(sorted(set(st[rest].tolist())))
                ax.scatter(xs[rest], ys[rest], s=22, marker=marker, facecolor="white",
                           edgecolor=colour, linewidth=1.0, label=f"{s} (not proved: {kinds})",
                           zorder=3)
        nopeak = allrows[(allrows["scheduler"] == s) & allrows["peak_bytes"].isna()]
        if len(nopeak):
            kinds = ", ".join(sorted(set(nopeak.get("status", pd.Series(["error"])).astype(str))))
            ax.scatter([], [], marker="x", color=colour,
                       label=f"{s}: no peak on {len(nopeak)} ({kinds})")
    ax.set_xticks(x, [short_label(w, width=24) for w in tab.index], rotation=40, ha="right",
                  rotation_mode="anchor")
    ax.set_xlim(-0.6, nw - 0.4)
    ax.grid(axis="x", visible=False)
    for i in range(1, nw):
        ax.axvline(i - 0.5, color="0.85", lw=0.5, zorder=1)
    ax.set_xlabel("workload")
    if relative_to is not None:
        ax.axhline(1.0, color="black", lw=0.9, ls=(0, (4, 2)), zorder=2,
                   label=f"{relative_to} (= 1)")
        ax.set_ylabel(f"peak / {relative_to} peak\n(bytes/bytes; lower is better)")
    else:
        ax.set_ylim(bottom=0)
        byte_axis(ax.yaxis)
        ax.set_ylabel("peak live activation bytes")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="scheduler")
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
