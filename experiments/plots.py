"""Figures for papers and design reviews (matplotlib, one consistent style).

Every figure has labelled axes with units, a legend or colour bar, a colour-blind-safe palette
(Okabe & Ito 2008), and is written as PNG and PDF by :func:`save`. Functions take records (pandas
DataFrames with :data:`experiments.harness.RECORD_COLUMNS`) or a problem and a plan, never globals.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from planners import Plan, Problem, live_profile  # noqa: E402

__all__ = [
    "PALETTE",
    "paper_style",
    "save",
    "plot_ratio_heatmap",
    "plot_ratio_by_planner",
    "plot_memory_over_time",
    "plot_arena_layout",
]

#: Okabe-Ito colour-blind-safe palette.
PALETTE = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h"]


def paper_style() -> None:
    """Apply the toolkit's figure style (font sizes, grid, palette) to matplotlib's rcParams."""
    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "savefig.dpi": 200,
            "font.size": 9,
            "axes.titlesize": 10,
            "axes.labelsize": 9,
            "legend.fontsize": 8,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
            "pdf.fonttype": 42,
            "svg.hashsalt": "memplan",
            "path.simplify": False,
        }
    )


def save(fig, path: str | Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Save ``fig`` as ``path`` with each suffix in ``formats``; returns the written paths.

    PDF metadata dates are fixed so the same records give byte-identical PDFs.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        out = path.with_suffix("." + fmt)
        meta = {"CreationDate": None} if fmt == "pdf" else ({"Date": None} if fmt == "svg" else {})
        if fmt == "png":
            meta = {"Software": None}
        fig.savefig(out, bbox_inches="tight", metadata=meta)
        written.append(out)
    plt.close(fig)
    return written


def _human_bytes(x: float, _pos=None) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.0f} B"


def plot_ratio_heatmap(records: pd.DataFrame, title: str = "Arena / lower bound"):
    """Heatmap of ``arena / lower_bound`` (rows: workloads, columns: planners); failed or timed-out
    runs are blank. Returns the figure."""
    paper_style()
    ok = records[records["valid"].astype(bool)]
    table = ok.pivot_table(index="workload", columns="planner", values="ratio", aggfunc="min")
    planners = [p for p in dict.fromkeys(records["planner"]) if p in table.columns]
    workloads = [w for w in dict.fromkeys(records["workload"]) if w in table.index]
    table = table.reindex(index=workloads, columns=planners)
    fig, ax = plt.subplots(figsize=(1.0 + 0.62 * len(planners), 1.0 + 0.34 * len(workloads)))
    data = table.to_numpy(dtype=float)
    finite = data[np.isfinite(data)]
    vmax = max(1.05, float(np.nanpercentile(finite, 95))) if finite.size else 2.0
    im = ax.imshow(data, cmap="viridis_r", vmin=1.0, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(planners)), planners, rotation=45, ha="right")
    ax.set_yticks(range(len(workloads)), workloads)
    ax.grid(False)
    for (r, c), v in np.ndenumerate(data):
        if np.isfinite(v):
            ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=6.5,
                    color="white" if v > 1 + 0.6 * (vmax - 1) else "black")
    cb = fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02)
    cb.set_label("arena / lower bound (1.0 = optimal)")
    ax.set_xlabel("planner")
    ax.set_ylabel("workload")
    ax.set_title(title)
    return fig


def plot_ratio_by_planner(records: pd.DataFrame, title: str = "Arena above the lower bound"):
    """Dot plot: for each planner (y) the ``arena / lower_bound`` of every workload (x, one marker
    per workload), with the lower bound (1.0) as a reference line. Returns the figure."""
    paper_style()
    ok = records[records["valid"].astype(bool)]
    planners = list(dict.fromkeys(records["planner"]))
    workloads = list(dict.fromkeys(ok["workload"]))
    fig, ax = plt.subplots(figsize=(6.5, 0.9 + 0.3 * len(planners)))
    for k, w in enumerate(workloads):
        sub = ok[ok["workload"] == w]
        ys = [planners.index(p) for p in sub["planner"]]
        ax.scatter(
            (sub["ratio"] - 1.0) * 100,
            np.asarray(ys) + (k - len(workloads) / 2) * 0.02,
            s=18,
            marker=MARKERS[k % len(MARKERS)],
            color=PALETTE[k % len(PALETTE)],
            label=w,
            alpha=0.85,
        )
    ax.axvline(0, color="black", lw=1, ls="--", label="lower bound")
    ax.set_yticks(range(len(planners)), planners)
    ax.invert_yaxis()
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("arena above the lower bound (%)")
    ax.set_ylabel("planner")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, ncol=1)
    return fig


def plot_memory_over_time(
    problem: Problem,
    plans: Sequence[Plan] = (),
    title: str | None = None,
    profiles: dict[str, Problem] | None = None,
):
    """Live bytes over schedule steps (step curve), the lower bound, and each plan's arena as a
    horizontal line. ``profiles`` adds more live-bytes curves (e.g. another schedule of the same
    graph) by label. Returns the figure."""
    paper_style()
    fig, ax = plt.subplots(figsize=(6.5, 3.0))
    curves = {"live bytes": problem}
    curves.update(profiles or {})
    for k, (label, prob) in enumerate(curves.items()):
        t, live = live_profile(prob)
        if len(t):
            ax.step(t, live, where="post", color=PALETTE[k % len(PALETTE)], lw=1.4, label=label)
    t, live = live_profile(problem)
    lb = int(live.max()) if len(live) else 0
    ax.axhline(lb, color="black", ls="--", lw=1, label=f"lower bound {_human_bytes(lb)}")
    for k, p in enumerate(plans):
        ax.axhline(
            p.arena_size,
            color=PALETTE[(k + len(curves)) % len(PALETTE)],
            ls=":",
            lw=1.4,
            label=f"{p.planner} arena {_human_bytes(p.arena_size)}",
        )
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_human_bytes))
    ax.set_xlabel("schedule step")
    ax.set_ylabel("live bytes")
    ax.set_ylim(bottom=0)
    ax.set_title(title or f"Memory over time: {problem.name}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def plot_arena_layout(plan: Plan, title: str | None = None, max_labels: int = 40):
    """The arena layout of one plan: time (schedule steps) on x, address (bytes) on y, one rectangle
    per buffer ``[start, end) x [offset, offset + size)``; the lower bound and arena as lines.
    Returns the figure."""
    paper_style()
    p = plan.problem
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    rects = [
        Rectangle((s, o), e - s, z)
        for s, e, o, z in zip(p.starts.tolist(), p.ends.tolist(), plan.offsets.tolist(), p.sizes.tolist())
        if z > 0
    ]
    colours = [
        PALETTE[i % (len(PALETTE) - 1)] for i, z in enumerate(p.sizes.tolist()) if z > 0
    ]
    ax.add_collection(
        PatchCollection(rects, facecolor=colours, edgecolor="white", linewidth=0.4, alpha=0.9)
    )
    if p.n <= max_labels:
        for b, o in zip(p.buffers, plan.offsets.tolist()):
            if b.size > 0:
                ax.text((b.start + b.end) / 2, o + b.size / 2, b.id, ha="center", va="center",
                        fontsize=6, clip_on=True)
    ax.axhline(plan.lower_bound, color="black", ls="--", lw=1,
               label=f"lower bound {_human_bytes(plan.lower_bound)}")
    ax.axhline(plan.arena_size, color=PALETTE[3], ls=":", lw=1.4,
               label=f"arena {_human_bytes(plan.arena_size)}")
    ax.set_xlim(int(p.starts.min()) if p.n else 0, p.horizon or 1)
    ax.set_ylim(0, max(plan.arena_size, plan.lower_bound, 1) * 1.05)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_human_bytes))
    ax.set_xlabel("schedule step")
    ax.set_ylabel("address (offset in the arena)")
    ax.set_title(title or f"Arena layout: {p.name}, {plan.planner}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig
