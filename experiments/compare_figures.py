"""Which figures ``memplan compare`` draws, and from which runs.

* :func:`compare_figures` -- for planner comparisons: the ratio heatmap and dot plot, and for a few
  representative workloads the memory-over-time curve with the plans' arenas and one arena layout.
* :func:`sched_figures` -- for scheduler comparisons: peak per scheduler per graph, and the
  live-bytes curves of two schedules of the graph where they differ most.

Each returns the list of files written (PNG and PDF, via :func:`experiments.plots.save`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from experiments import plots
from experiments.harness import run_one

__all__ = ["compare_figures", "sched_figures", "most_different_workload", "LAYOUT_WORKLOADS"]

#: Workloads whose memory-over-time curve and arena layout ``memplan compare`` draws when present.
LAYOUT_WORKLOADS = ("seed000", "resnet50", "inception_v1", "minimalloc:C")


def compare_figures(df: pd.DataFrame, problems: Mapping, fig_dir: Path) -> list[Path]:
    """Figures of a planner comparison (records ``df``, problems by workload name) in ``fig_dir``."""
    written: list[Path] = []
    written += plots.save(plots.plot_ratio_heatmap(df), fig_dir / "ratio_heatmap")
    written += plots.save(plots.plot_ratio_by_planner(df), fig_dir / "ratio_by_planner")
    ok = df[df["valid"].astype(bool)]
    for w in [w for w in LAYOUT_WORKLOADS if w in problems]:
        sub = ok[ok["workload"] == w]
        if sub.empty:
            continue
        best = sub.sort_values(["arena", "seconds"]).iloc[0]["planner"]
        chosen = [best] + [
            p for p in ("greedy_by_size", "greedy_in_order") if p in set(sub["planner"]) and p != best
        ][:1]
        plans = []
        for name in chosen:
            params = json.loads(sub[sub["planner"] == name].iloc[0]["params"] or "{}")
            _, plan = run_one(w, problems[w], name, params=params, keep_plan=True)
            if plan is not None:
                plans.append(plan)
        safe = w.replace(":", "_")
        roles = ["best plan"] + ["reference"] * (len(plans) - 1)
        ref = f" and {plans[1].planner} (reference)" if len(plans) > 1 else ""
        title = (f"Memory over time: {w}\nbest plan ({plans[0].planner}){ref}" if plans
                 else f"Memory over time: {w}")
        written += plots.save(plots.plot_memory_over_time(problems[w], plans, title=title,
                                                          plan_roles=roles),
                              fig_dir / f"memory_over_time_{safe}")
        if plans:
            written += plots.save(
                plots.plot_arena_layout(plans[0], title=f"Arena layout: {w}, best plan "
                                                        f"({plans[0].planner})"),
                fig_dir / f"layout_{safe}_{plans[0].planner}")
    return written


def most_different_workload(df: pd.DataFrame, pair: Sequence[str]) -> str | None:
    """The workload whose two schedulers ``pair`` have the largest relative peak difference
    ``|peak_a - peak_b| / max(peak_a, peak_b)`` (bytes/bytes) in the records ``df`` (columns
    ``workload``, ``scheduler``, ``peak_bytes``); ties go to the first workload in ``df`` order.
    ``None`` when no workload has both peaks. O(rows)."""
    a, b = pair
    ok = df.dropna(subset=["peak_bytes"]).drop_duplicates(["workload", "scheduler"])
    tab = ok.pivot(index="workload", columns="scheduler", values="peak_bytes")
    if a not in tab.columns or b not in tab.columns:
        return None
    tab = tab.reindex(list(dict.fromkeys(ok["workload"])))[[a, b]].astype(float).dropna()
    if tab.empty:
        return None
    diff = (tab[a] - tab[b]).abs() / tab.max(axis=1).where(lambda m: m > 0, 1.0)
    return str(diff.idxmax())  # first maximum in workload order


def sched_figures(df: pd.DataFrame, graphs: Mapping, schedulers: Sequence[str], fig_dir: Path,
                  time_limit: float | None = None) -> list[Path]:
    """Figures of a scheduler comparison in ``fig_dir``: peaks per scheduler per graph, and the
    live-bytes curves of two schedules (file order vs ``best_of`` when both ran, else the first
    two) of the graph where their peaks differ most (:func:`most_different_workload`) -- a chain,
    where every order is the same, is never chosen over a graph with a difference."""
    from experiments.plots_sched import plot_sched_peaks, plot_schedule_curves
    from experiments.sched_compare import scheduler_for

    written = plots.save(plot_sched_peaks(df), fig_dir / "compare_sched_peaks")
    pair = [s for s in ("file_order", "best_of") if s in schedulers]
    pair = pair if len(pair) == 2 else list(schedulers)[:2]
    if len(pair) < 2:
        return written
    chosen = most_different_workload(df, pair)
    if chosen is None or chosen not in graphs:
        chosen = next(iter(graphs))
    orders = {s: scheduler_for(s, time_limit).schedule(graphs[chosen]).order for s in pair}
    written += plots.save(plot_schedule_curves(graphs[chosen], orders),
                          fig_dir / f"compare_sched_curves_{chosen.replace(':', '_')}")
    return written
