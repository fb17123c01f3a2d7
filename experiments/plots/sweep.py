"""Figures of a sweep report, drawn from tables the report computed from records (no solving).

* :func:`plot_quality_vs_time` -- per case, arena / lower bound against median planning time with
  the min-max spread and the Pareto front (a Figure of small multiples).
* :func:`plot_scaling` -- planning time against buffer count, log-log, with fitted slopes.
* :func:`plot_rv64_cycles` -- emulated RV64 cycles per buffer and planner.
* :func:`plot_tflm_comparison` -- our arenas against TFLite Micro's planned head.

Times are seconds, sizes bytes. Each function draws in the active :func:`experiments.plots.style`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd

from experiments.metrics import pareto_front
from experiments.plots.style import MARKERS, PALETTE, _new_axes, byte_axis, figsize

__all__ = ["plot_quality_vs_time", "timing_claim", "MAX_QUALITY_PANELS", "plot_scaling", "plot_rv64_cycles", "plot_tflm_comparison"]


#: At most this many cases (panels) in :func:`plot_quality_vs_time`: two rows of three, so the
#: figure stays within a page (12 panels made it 7.16 x 10.6 in).
MAX_QUALITY_PANELS = 6


def timing_claim(t_n) -> str:
    """The "median of N timed runs" a figure states, from the timed runs behind each point
    (``t_n``: integers, one per point): ``"median of 3 timed runs"`` when every point has the
    same count, ``"median of 1-3 timed runs"`` otherwise, ``"median"`` without counts.

    >>> timing_claim([3, 3]), timing_claim([1, 3]), timing_claim([1])
    ('median of 3 timed runs', 'median of 1-3 timed runs', 'median of 1 timed run')
    """
    n = [int(v) for v in pd.Series(t_n, dtype="float").dropna()]
    if not n:
        return "median"
    lo, hi = min(n), max(n)
    if lo == hi:
        return f"median of {lo} timed run" + ("s" if lo != 1 else "")
    return f"median of {lo}-{hi} timed runs"


def plot_quality_vs_time(qa: pd.DataFrame, floor: float, too_fast: Sequence[str] = ()):
    """Small multiples, one per case of ``qa`` whose slowest median is at least ``floor`` seconds
    (at most :data:`MAX_QUALITY_PANELS`, the cases with the slowest medians): arena / lower
    bound (``ratio``) against the median planning time (``seconds``, log axis) with its bar from
    the fastest timed run (``t_min``) to the slowest median (``t_max``), one marker per
    ``config``; the title states the timed runs per point (``t_n``, :func:`timing_claim`).
    Runs faster than ``floor`` are drawn pale at their own median inside the grey band below the
    dotted line and join no Pareto front (grey, :func:`experiments.metrics.pareto_front` of the
    timed runs). ``too_fast`` names the cases left out because every run was faster than
    ``floor``; when no case is left, the figure says so instead. Returns the matplotlib Figure."""
    slowest = qa.groupby("case")["seconds"].max()
    measurable = slowest >= floor
    ranked = sorted(slowest.index[measurable], key=lambda c: (-float(slowest[c]), str(c)))
    cases = sorted(ranked[:MAX_QUALITY_PANELS])
    too_fast = list(too_fast)
    if not cases:  # nothing large enough to time: say so instead of ranking noise
        fig, ax = plt.subplots(figsize=figsize("single", 1.6, 4.0))
        ax.axis("off")
        ax.text(0.5, 0.5, f"Quality vs planning time: not drawn.\nIn all {len(too_fast)} cases "
                f"every planner took < {floor * 1e3:g} ms\n(median), too "
                "fast to time apart from call overhead.", ha="center", va="center",
                transform=ax.transAxes)
        return fig
    ncol = min(3, len(cases))
    nrow = math.ceil(len(cases) / ncol)
    # constrained: the legend below and the title above stay inside the 7.16 in wide file
    fig, axes = plt.subplots(nrow, ncol, squeeze=False, layout="constrained",
                             figsize=figsize("double", 2.2 * nrow + 1.7, 7.16))
    configs = sorted(qa["config"].unique())
    colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(configs)}
    marker = {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(configs)}
    n_fronts = 0
    shown_qa = qa[qa["case"].isin(cases)]
    for ax, case in zip(axes.flat, cases, strict=False):
        sub = qa[qa["case"] == case].reset_index(drop=True)
        med = sub["seconds"].to_numpy(float)
        meas = med >= floor
        for i, row in sub.iterrows():
            c = colour[row["config"]]
            if meas[i]:
                lo = min(float(row["t_min"]), med[i])
                hi = max(float(row["t_max"]), med[i])
                ax.errorbar(med[i], row["ratio"], xerr=[[med[i] - lo], [hi - med[i]]],
                            fmt=marker[row["config"]], color=c, ms=4.5, lw=0.8,
                            label=row["config"], zorder=3)
            else:  # too fast to time: pale, at its own median in the grey band, off any front
                ax.plot([med[i]], [row["ratio"]], ls="", marker=marker[row["config"]], ms=4.5,
                        color=c, alpha=0.45, label=row["config"], zorder=3)
        if int(meas.sum()) >= 2:
            idx = np.flatnonzero(meas)
            front = idx[pareto_front(med[idx], sub["ratio"].to_numpy(float)[idx])]
            ax.step(med[front], sub["ratio"].to_numpy(float)[front], where="post",
                    color="0.4", lw=0.9, zorder=2)
            n_fronts += 1
        xs = np.r_[med, sub["t_min"].to_numpy(float), sub["t_max"].to_numpy(float), floor]
        xs = xs[np.isfinite(xs) & (xs > 0)]
        left, right = float(xs.min()) / 2.5, float(xs.max()) * 2.5
        ax.axhline(1.0, color="black", ls="--", lw=0.8, zorder=1)
        ax.axvline(floor, color="0.6", lw=0.6, ls=":")
        ax.axvspan(left, floor, color="0.9", lw=0, zorder=0)
        ax.set_xscale("log")
        ax.set_xlim(left, right)
        ax.margins(y=0.12)
        ax.xaxis.set_minor_formatter(mticker.NullFormatter())
        ax.xaxis.set_major_locator(mticker.LogLocator(numticks=4))
        ax.set_title(case, fontsize=8)
        ax.set_xlabel("time (s, median, log scale)")
        ax.set_ylabel("arena / lower bound")
    for ax in list(axes.flat)[len(cases):]:
        ax.set_visible(False)
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=False):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles.keys()), loc="outside lower center",
               ncol=3, frameon=False)
    left_out = len(ranked) - len(cases)
    fig.suptitle(
        f"Quality vs planning time: {timing_claim(shown_qa['t_n'])} per point; bars: fastest "
        "run to slowest median"
        + (f"; the {len(cases)} of {len(ranked)} timed cases with the slowest runs"
           if left_out else "")
        + f".\nGrey band: below {floor * 1e3:g} ms, too fast to time (call overhead), pale "
        "markers at their median, no ranking; "
        + ("grey line: Pareto front of the timed runs" if n_fronts else "no Pareto front drawn")
        + (f"; {len(too_fast)} cases where every planner is < {floor * 1e3:g} ms not shown"
           if too_fast else ""),
        fontsize=8, wrap=True)
    return fig


def plot_scaling(runs: pd.DataFrame, slopes: Mapping[str, float], min_fit_seconds: float, ax=None):
    """Planning time (``seconds``) against ``buffers`` per ``config``, log-log.

    A config in ``slopes`` (its fitted log-log slope over the runs measured well: at least
    ``min_fit_seconds``, warmed up and repeated, not stopped by a time limit;
    :func:`experiments.report.sweep_report.well_measured`) gets that slope drawn, as a line of
    that slope through the centroid (in log-log) of its runs of at least ``min_fit_seconds``
    over their buffer range, and named in its legend entry; a slope is never named without its
    line. The band below ``min_fit_seconds`` is shaded (call overhead, not fitted). The limits
    leave every marker inside the frame. Returns the Axes."""
    fig, ax = _new_axes(ax, figsize("double", 3.6, 7.16))
    for i, (cfg, sub) in enumerate(sorted(runs.groupby("config"), key=lambda kv: kv[0])):
        x, y = sub["buffers"].to_numpy(float), sub["seconds"].to_numpy(float)
        c = PALETTE[i % len(PALETTE)]
        fit = (y >= min_fit_seconds) & (x > 0) & (y > 0)
        drawn = cfg in slopes and fit.any() and np.isfinite(slopes[cfg])
        label = cfg if not drawn else \
            f"{cfg} (slope {slopes[cfg]:.2f}, runs >= {min_fit_seconds * 1e3:g} ms)"
        ax.scatter(x, y, s=12, color=c, marker=MARKERS[i % len(MARKERS)], label=label,
                   alpha=0.8, zorder=3)
        if drawn:
            lx, ly = np.log10(x[fit]), np.log10(y[fit])
            xs = np.array([lx.min(), lx.max()]) if lx.max() > lx.min() else lx.mean() + \
                np.array([-0.15, 0.15])
            ax.plot(10 ** xs, 10 ** (ly.mean() + slopes[cfg] * (xs - lx.mean())), color=c,
                    lw=1.0, ls=(0, (4, 2)), zorder=2)
    pos = runs[(runs["seconds"] > 0) & (runs["buffers"] > 0)]
    lo = float(pos["seconds"].min()) / 2 if len(pos) else min_fit_seconds / 10
    hi = float(pos["seconds"].max()) * 2 if len(pos) else min_fit_seconds * 10
    ax.axhspan(lo, min_fit_seconds, color="0.92", zorder=0,
               label=f"< {min_fit_seconds * 1e3:g} ms: overhead, not fitted")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(lo, max(hi, min_fit_seconds * 2))
    if len(pos):
        ax.set_xlim(float(pos["buffers"].min()) / 1.5, float(pos["buffers"].max()) * 1.5)
    ax.set_xlabel("buffers (log scale)")
    ax.set_ylabel("planning time (s, log scale)")
    ax.set_title("Planning time vs buffer count" + (
        "\n(dashed: fitted log-log slope)" if slopes else
        f"\n(no slope: fewer than 3 sizes with runs >= {min_fit_seconds * 1e3:g} ms; small "
        "runs time Python overhead)"), pad=8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def plot_rv64_cycles(table: pd.DataFrame, ax=None):
    """Bars of ``cycles_per_buffer_u74`` and ``cycles_per_buffer_c906`` (emulated RV64 cycles
    per buffer, the SiFive U74 and T-Head C906 models) per ``config``. Returns the Axes."""
    fig, ax = _new_axes(ax, figsize("double", 3.0, 6.0))
    xs = np.arange(len(table))
    ax.bar(xs - 0.2, table["cycles_per_buffer_u74"], 0.4, label="SiFive U74 (model)",
           color=PALETTE[0])
    ax.bar(xs + 0.2, table["cycles_per_buffer_c906"], 0.4, label="T-Head C906 (model)",
           color=PALETTE[1])
    ax.set_xticks(xs, table["config"], rotation=30, ha="right")
    ax.set_ylabel("cycles per buffer (emulated RV64)")
    ax.set_xlabel("planner")
    ax.set_title("Planning cost on RV64 cores")
    ax.legend(frameon=False)
    return ax


def plot_tflm_comparison(table: pd.DataFrame, ax=None):
    """Per ``workload``, horizontal bars (bytes): TFLite Micro's head (``tflm_head``), our best
    arena in the same file order (``best_arena_file_order``: the planner's gain), in the best
    order (``best_arena_any_order``: plus the scheduler's) and the file order's lower bound
    (``lower_bound_file_order``). Returns the Axes."""
    fig, ax = _new_axes(ax, figsize("double", 0.9 + 0.55 * len(table), 6.5))
    ys = np.arange(len(table))
    h = 0.2
    ax.barh(ys - 1.5 * h, table["tflm_head"], h, label="TFLite Micro head (file order)",
            color=PALETTE[3])
    ax.barh(ys - 0.5 * h, table["best_arena_file_order"], h,
            label="ours, same (file) order: planner gain only", color=PALETTE[0])
    ax.barh(ys + 0.5 * h, table["best_arena_any_order"], h,
            label="ours, best order: + scheduler gain", color=PALETTE[5])
    ax.barh(ys + 1.5 * h, table["lower_bound_file_order"], h,
            label="lower bound, file order", color=PALETTE[2])
    ax.set_yticks(ys, table["workload"])
    ax.invert_yaxis()
    byte_axis(ax.xaxis)
    ax.set_xlabel("activation arena (bytes)")
    ax.set_title("Ours vs TFLite Micro's planner: planner and scheduler effects apart")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax
