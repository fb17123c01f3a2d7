"""Which figures ``memplan compare`` draws, and from which records.

* :func:`compare_figures` -- for planner comparisons: the ratio heatmap and dot plot, and for a few
  representative workloads the memory-over-time curve with the plans' arenas and one arena layout
  (with memory pools: one panel per pool with its capacity, :func:`experiments.plots.plot_pool_layouts`;
  the memory-over-time bands are then the sum over the pools).
* :func:`sched_figures` -- for scheduler comparisons: peak per scheduler per graph, and the
  live-bytes curves of two schedules of the graph where they differ most.
* :func:`figures_from_folder` -- all of them again from a comparison folder alone.

Every figure is drawn from records and stored data: the comparison records, the plans' stored
offsets (``compare_plans.json``, :func:`experiments.records.read_plans`) and the stored problems
(``problems/DIGEST.csv``); nothing is re-planned, re-scheduled or re-analysed here.
Each returns the list of files written (via :func:`experiments.plots.save`). Names from the
records reach file names only as :func:`experiments.safe.file_stem` (no ``/``, no ``..``),
and figure text only through :func:`experiments.safe.plot_text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from experiments import plots
from experiments.safe import file_stem, plot_frame, plot_text

__all__ = ["compare_figures", "sched_figures", "most_different_workload", "LAYOUT_WORKLOADS",
           "figures_from_folder", "best_planner", "BEST_PLAN_PREFERENCE", "OWNED_COMPARE", "OWNED_SCHED",
           "remove_stale"]

#: Workloads whose memory-over-time curve and arena layout ``memplan compare`` draws when present.
LAYOUT_WORKLOADS = ("seed000", "resnet50", "inception_v1", "minimalloc:C")

#: File-name patterns (stems) of the figures :func:`compare_figures` owns in its folder: a file
#: matching one of them that a run no longer writes is removed, so no figure of an earlier run
#: (another best planner, a workload no longer compared) stays beside the new ones.
OWNED_COMPARE = ("ratio_heatmap", "ratio_by_planner", "memory_over_time_*", "layout_*")
#: The same for :func:`sched_figures`.
OWNED_SCHED = ("compare_sched_peaks", "compare_sched_curves_*")
#: Suffixes of figure files (:func:`experiments.plots.save` formats).
_FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def remove_stale(fig_dir: Path, owned: Sequence[str], written: Sequence[Path]) -> list[Path]:
    """Delete the figure files in ``fig_dir`` whose stem matches a pattern of ``owned``
    (:meth:`pathlib.PurePath.match` glob, e.g. ``"layout_*"``) and that are not in ``written``;
    other files (benchmark figures, a user's) are never touched. Returns the removed paths."""
    keep = {Path(p).resolve() for p in written}
    removed = []
    for f in sorted(Path(fig_dir).glob("*")):
        if (f.is_file() and f.suffix in _FIGURE_SUFFIXES and f.resolve() not in keep
                and any(Path(f.stem).match(pat) for pat in owned)):
            f.unlink()
            removed.append(f)
    return removed


#: The fixed preference among planners whose plans tie for the smallest arena in
#: :func:`best_planner`: the exact and anytime solvers, then the best heuristics of the
#: comparison (``results/compare.md``, "Per planner": smallest geometric-mean ratio first).
#: A planner not named comes after every named one (by name among themselves, so the records'
#: order, which parallel runs change, never decides).
BEST_PLAN_PREFERENCE = ("minimize", "telamalloc", "exact_search", "cpsat", "milp_offsets",
                        "ilp_blocks", "lns_cpsat", "local_search", "choose_best",
                        "greedy_by_size", "greedy_by_size_best_fit", "tflm_greedy",
                        "greedy_by_breadth", "greedy_by_conflicts")


def best_planner(sub: pd.DataFrame) -> str:
    """The planner of the "best plan" of one workload's valid records.

    Parameters
    ----------
    sub : DataFrame
        One workload's valid records (``planner``, ``arena`` in bytes, optionally ``proved``
        or ``status``).

    Returns
    -------
    str
        The planner with the smallest ``arena``; among ties, a proved optimum first
        (``proved``, else ``status == "optimal"``), then :data:`BEST_PLAN_PREFERENCE` (the name only
        among planners it does not list). Not alphabetical among the listed planners (which
        made ``chaitin``, one of the worst planners, resnet50's representative), never by
        wall-clock seconds or the records' order, so the same records give
        the same figure names on every run. Raises ``ValueError`` for no records.
    """
    if sub.empty:
        raise ValueError("best_planner needs at least one valid record")
    if "proved" in sub:
        proved = sub["proved"].astype("boolean").fillna(False).astype(bool).tolist()
    elif "status" in sub:
        proved = (sub["status"].astype(str) == "optimal").tolist()
    else:
        proved = [False] * len(sub)
    pref = {p: k for k, p in enumerate(BEST_PLAN_PREFERENCE)}
    rows = [(int(a), not pr, pref.get(str(p), len(pref)), str(p))
            for a, p, pr in zip(sub["arena"].astype("int64"), sub["planner"], proved, strict=True)]
    return min(rows)[3]


def compare_figures(df: pd.DataFrame, problems: Mapping, plans: Mapping, fig_dir: Path
                    ) -> list[Path]:
    """Figures of a planner comparison in ``fig_dir``.

    Parameters
    ----------
    df : DataFrame
        The comparison records (:data:`experiments.harness.RECORD_COLUMNS`).
    problems : mapping workload -> Problem
        The stored problems.
    plans : mapping (workload, planner) -> Plan
        The stored plans (offsets from the records; :func:`experiments.records.read_plans`).
    fig_dir : Path
    """
    written: list[Path] = []
    shown = plot_frame(df)
    written += plots.save(plots.plot_ratio_heatmap(shown), fig_dir / "ratio_heatmap")
    written += plots.save(plots.plot_ratio_by_planner(shown), fig_dir / "ratio_by_planner")
    ok = df[df["valid"].astype(bool)]
    for w in [w for w in LAYOUT_WORKLOADS if w in problems]:
        sub = ok[ok["workload"] == w]
        if sub.empty:
            continue
        best = best_planner(sub)
        chosen = [best] + [
            p for p in ("greedy_by_size", "greedy_in_order") if p in set(sub["planner"]) and p != best
        ][:1]
        chosen_plans = [_plot_plan(plans[(w, n)]) for n in chosen if (w, n) in plans]
        safe = file_stem(w)
        roles = ["best plan"] + ["reference"] * (len(chosen_plans) - 1)
        ref = (f" and {chosen_plans[1].planner} (reference)" if len(chosen_plans) > 1 else "")
        title = (f"Memory over time: {plot_text(w)}\nbest plan ({chosen_plans[0].planner}){ref}"
                 if chosen_plans else f"Memory over time: {plot_text(w)}")
        written += plots.save(plots.plot_memory_over_time(problems[w], chosen_plans, title=title,
                                                          plan_roles=roles),
                              fig_dir / f"memory_over_time_{safe}")
        if chosen_plans and chosen_plans[0].pools is not None:  # one panel per pool
            written += plots.save(
                plots.plot_pool_layouts(chosen_plans[0], title=f"Pool layouts: {plot_text(w)}, "
                                        f"best plan ({chosen_plans[0].planner})"),
                fig_dir / f"layout_{safe}_{file_stem(chosen_plans[0].planner)}")
        elif chosen_plans:
            written += plots.save(
                plots.plot_arena_layout(chosen_plans[0], title=f"Arena layout: {plot_text(w)}, "
                                        f"best plan ({chosen_plans[0].planner})"),
                fig_dir / f"layout_{safe}_{file_stem(chosen_plans[0].planner)}")
    remove_stale(fig_dir, OWNED_COMPARE, written)
    return written


def _plot_plan(pl):
    """Plan ``pl`` with its planner name and its problem's pool names as figure text
    (:func:`experiments.safe.plot_text`); the offsets and the problem are the stored
    ones."""
    from dataclasses import replace

    prob = pl.problem
    if prob.pools and any(plot_text(q.name) != q.name for q in prob.pools):
        prob = prob.with_pools([replace(q, name=plot_text(q.name)) for q in prob.pools])
    return replace(pl, problem=prob, planner=plot_text(pl.planner))


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


def sched_figures(df: pd.DataFrame, profiles: Mapping[str, Mapping[str, tuple]],
                  schedulers: Sequence[str], fig_dir: Path) -> list[Path]:
    """Figures of a scheduler comparison in ``fig_dir``: peaks per scheduler per graph, and the
    live-bytes curves of two schedules (file order vs ``best_of`` when both ran, else the first
    two) of the graph where their peaks differ most (:func:`most_different_workload`) -- a chain,
    where every order is the same, is never chosen over a graph with a difference.

    ``profiles`` maps workload -> scheduler -> ``(steps, live bytes)``, the live profiles of the
    stored schedules (:func:`experiments.plots.sched.schedule_profiles` of their stored problems).
    """
    from experiments.plots.sched import plot_sched_peaks, plot_schedule_curves

    written = plots.save(plot_sched_peaks(plot_frame(df)), fig_dir / "compare_sched_peaks")
    pair = [s for s in ("file_order", "best_of") if s in schedulers]
    pair = pair if len(pair) == 2 else list(schedulers)[:2]
    chosen = most_different_workload(df, pair) if len(pair) == 2 else None
    if len(pair) == 2 and (chosen is None or chosen not in profiles):
        chosen = next(iter(profiles), None)
    if chosen is not None and all(s in profiles[chosen] for s in pair):
        written += plots.save(plot_schedule_curves({plot_text(s): profiles[chosen][s]
                                                    for s in pair},
                                                   graph_name=plot_text(chosen)),
                              fig_dir / f"compare_sched_curves_{file_stem(chosen, '-_.')}")
    remove_stale(fig_dir, OWNED_SCHED, written)
    return written


def figures_from_folder(out: str | Path, fig_dir: str | Path | None = None) -> list[Path]:
    """Draw the figures of a ``memplan compare`` folder from its records and stored data alone:
    ``compare.csv`` + ``compare_plans.json`` (planner comparison) and/or ``compare_sched.csv`` +
    ``compare_sched_orders.json`` (scheduler comparison). Returns the written files."""
    from experiments.records import PLANS_FILE, read_plans

    out = Path(out)
    fig_dir = Path(fig_dir) if fig_dir is not None else out / "figures"
    written: list[Path] = []
    if (out / "compare.csv").is_file() and (out / PLANS_FILE).is_file():
        df = pd.read_csv(out / "compare.csv", keep_default_na=True)
        df["valid"] = df["valid"].astype(bool)
        problems, plans = read_plans(out)
        written += compare_figures(df, problems, plans, fig_dir)
    if (out / "compare_sched.csv").is_file():
        from experiments.records import SCHED_PLANS_FILE, read_schedules

        sdf = pd.read_csv(out / "compare_sched.csv")
        profiles = read_schedules(out, SCHED_PLANS_FILE) if (out / SCHED_PLANS_FILE).is_file() \
            else {}
        scheds = list(dict.fromkeys(sdf["scheduler"]))
        written += sched_figures(sdf, profiles, scheds, fig_dir)
    return written
