"""Figures of the scheduler comparison (style, palette and :func:`save` of :mod:`experiments.plots`).

* :func:`plot_sched_peaks` -- peak of live activation bytes per scheduler per graph (grouped bars),
  relative to the file order or in bytes.
* :func:`plot_schedule_curves` -- live bytes over schedule steps of two (or more) schedules of one
  graph, via :func:`experiments.plots.plot_memory_over_time`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from experiments.plots import PALETTE, _human_bytes, paper_style, plot_memory_over_time
from scheduling.graph import Graph
from scheduling.lifetimes import lifetime_problem

__all__ = ["plot_sched_peaks", "plot_schedule_curves"]

_HATCHES = ["", "//", "..", "xx", "\\\\", "oo", "--", "++"]


def plot_sched_peaks(
    records: pd.DataFrame,
    relative_to: str | None = "file_order",
    schedulers: Sequence[str] | None = None,
    title: str = "Peak live activation memory per scheduler",
):
    """Grouped bars: one group per workload, one bar per scheduler.

    Parameters
    ----------
    records : DataFrame
        Output of :func:`experiments.sched_compare.compare_schedules` (or any frame with columns
        ``workload``, ``scheduler``, ``peak_bytes``); duplicate (workload, scheduler) rows, one per
        planner, are collapsed (the peak does not depend on the planner).
    relative_to : str or None
        Scheduler whose peak is 1.0 in each group (y axis "peak / file-order peak", starting just
        below the smallest ratio to show the differences); ``None`` plots bytes from 0.
    schedulers : sequence of str, optional
        Bar order (default: order of appearance).

    Returns
    -------
    matplotlib Figure. Raises ``ValueError`` naming a missing column or reference scheduler.
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
    fig, ax = plt.subplots(figsize=(min(12.0, max(6.5, 0.07 * nw * max(ns, 1) + 2)), 3.4))
    width = 0.8 / max(ns, 1)
    x = np.arange(nw)
    for k, s in enumerate(tab.columns):
        ax.bar(
            x + (k - (ns - 1) / 2) * width,
            tab[s].to_numpy(),
            width,
            label=s,
            color=PALETTE[k % len(PALETTE)],
            hatch=_HATCHES[(k // len(PALETTE)) % len(_HATCHES)],
            edgecolor="white",
            linewidth=0.4,
        )
    ax.set_xticks(x)
    ax.set_xticklabels(tab.index, rotation=30, ha="right")
    ax.set_xlabel("workload")
    if relative_to is not None:
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        lo = float(np.nanmin(tab.to_numpy())) if tab.size else 1.0
        ax.set_ylim(bottom=max(0.0, np.floor(lo * 10) / 10 - 0.1))  # zoom on the differences
        ax.set_ylabel(f"peak / {relative_to} peak (bytes/bytes)")
    else:
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_human_bytes))
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
        The first entry is the main curve (its peak, the lower bound on its arena, is the dashed
        line); the others are added as profiles.

    Returns
    -------
    matplotlib Figure. Raises ``ScheduleError`` for an invalid order, ``ValueError`` when
    ``orders`` is empty.
    """
    if not orders:
        raise ValueError("plot_schedule_curves: give at least one order")
    items = list(orders.items())
    first_label, first = items[0]
    main = lifetime_problem(graph, first, name=f"{graph.name} ({first_label})")
    profiles = {label: lifetime_problem(graph, o) for label, o in items[1:]}
    fig = plot_memory_over_time(
        main, title=title or f"Live activation bytes: {graph.name}", profiles=profiles
    )
    ax = fig.axes[0]
    lines = ax.get_lines()
    if lines:  # label the main curve by its schedule, not "live bytes"
        lines[0].set_label(first_label)
        for ln in lines[1:]:  # the dashed line is the main schedule's peak (its arena bound)
            if ln.get_linestyle() == "--":
                ln.set_label(str(ln.get_label()).replace("lower bound", f"peak of {first_label}"))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig
