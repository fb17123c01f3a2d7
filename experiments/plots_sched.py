"""Figures of the scheduler comparison (style, palette and :func:`save` of :mod:`experiments.plots`).

* :func:`plot_sched_peaks` -- peak of live activation bytes per scheduler per graph (dot plot with
  a reference line at 1.0), relative to the file order or in bytes.
* :func:`plot_schedule_curves` -- live bytes over schedule steps of two (or more) schedules of one
  graph, each with its line style and its peak.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.plots import (
    LINESTYLES,
    PALETTE,
    byte_axis,
    distinct_styles,
    format_bytes,
    paper_style,
    short_label,
    step_axis,
)
from planners import live_profile
from scheduling.graph import Graph
from scheduling.lifetimes import lifetime_problem

__all__ = ["plot_sched_peaks", "plot_schedule_curves"]


def plot_sched_peaks(
    records: pd.DataFrame,
    relative_to: str | None = "file_order",
    schedulers: Sequence[str] | None = None,
    title: str = "Peak live activation memory per scheduler",
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

    Returns
    -------
    matplotlib Figure; each scheduler has its own (colour, marker) pair and long workload names
    are wrapped (:func:`experiments.plots.short_label`).

    Raises
    ------
    ValueError
        A missing column or reference scheduler (named in the message).
    """
    for c in ("workload", "scheduler", "peak_bytes"):
        if c not in records.columns:
            raise ValueError(f"plot_sched_peaks: records need column {c!r}")
    df = records.dropna(subset=["peak_bytes"]).drop_duplicates(["workload", "scheduler"])
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
    paper_style()
    nw, ns = tab.shape
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.5, 0.55 * nw + 2.5)), 3.6))
    width = 0.8 / max(ns, 1)
    x = np.arange(nw)
    for k, (s, (colour, marker)) in enumerate(zip(tab.columns, distinct_styles(ns))):
        ax.scatter(x + (k - (ns - 1) / 2) * width, tab[s].to_numpy(), s=18, marker=marker,
                   facecolor=colour, edgecolor="0.25", linewidth=0.3, label=s, zorder=3)
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
    return fig


def plot_schedule_curves(
    graph: Graph, orders: Mapping[str, Sequence[str]], title: str | None = None
):
    """Live activation bytes over schedule steps for several schedules of one graph.

    Parameters
    ----------
    graph : Graph
    orders : mapping label -> operator order
        One step curve per order (legend label = the mapping's key), each with its own colour
        and line style (:data:`experiments.plots.LINESTYLES`) so overlapping curves stay
        distinguishable; each curve's peak -- the lower bound on the arena for that order -- is a
        thin horizontal line of the curve's colour, labelled ``"peak of <label> <bytes>"``.
    title : str, optional

    Returns
    -------
    matplotlib Figure. O(n log n) per order for n tensors.

    Raises
    ------
    ScheduleError
        An invalid order.
    ValueError
        ``orders`` is empty.
    """
    if not orders:
        raise ValueError("plot_schedule_curves: give at least one order")
    paper_style()
    fig, ax = plt.subplots(figsize=(6.5, 3.0))
    peaks = []
    for k, (label, order) in enumerate(orders.items()):
        prob = lifetime_problem(graph, order, name=f"{graph.name} ({label})")
        t, live = live_profile(prob)
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
    ax.set_title(title or f"Live activation bytes: {graph.name}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig
