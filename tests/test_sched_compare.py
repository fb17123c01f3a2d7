"""Tests of the scheduler comparison harness and its figures (experiments/sched_compare.py,
experiments/plots/sched.py)."""

from __future__ import annotations

import pytest

from experiments.plots.sched import plot_sched_peaks, plot_schedule_curves
from experiments.sched_compare import SCHED_COLUMNS, compare_schedules
from scheduling.graph import Graph


def xla_trap() -> Graph:
    """a: x -> A(100); c: x -> C(50); v: A -> V(99); z: V, C -> Z(1). File order a, c, v, z
    peaks at A + C + V = 249 bytes, the optimum a, v, c, z at A + V = 199 bytes."""
    g = Graph("trap")
    g.add_tensor("x", (1,), "uint8", kind="input")
    for t, b in {"A": 100, "C": 50, "V": 99, "Z": 1}.items():
        g.add_tensor(t, (b,), "uint8")
    for op, ins, out in [
        ("a", ["x"], "A"),
        ("c", ["x"], "C"),
        ("v", ["A"], "V"),
        ("z", ["V", "C"], "Z"),
    ]:
        g.add_op(op, "Op", ins, [out])
    g.mark_output("Z")
    return g


def test_compare_schedules_records_peak_and_arena_per_planner():
    df = compare_schedules(
        {"trap": xla_trap()},
        ["file_order", "exact_dp", "nope"],
        ["greedy_by_size", "naive"],
        time_limit=5.0,
    )
    assert list(df.columns) == SCHED_COLUMNS
    ok = df[df.scheduler != "nope"].set_index(["scheduler", "planner"])
    assert ok.loc[("file_order", "greedy_by_size"), "peak_bytes"] == 249
    assert ok.loc[("exact_dp", "greedy_by_size"), "peak_bytes"] == 199
    assert ok.loc[("exact_dp", "greedy_by_size"), "status"] == "optimal"
    # greedy by size reaches the peak on this tiny order; naive (no reuse) sums all 4 buffers
    assert ok.loc[("exact_dp", "greedy_by_size"), "arena_bytes"] == 199
    assert ok.loc[("exact_dp", "naive"), "arena_bytes"] == 250
    bad = df[df.scheduler == "nope"].iloc[0]
    assert bad.status == "error" and "unknown scheduler 'nope'" in bad.error


def test_sched_figures_are_written(tmp_path):
    from experiments.plots import save

    df = compare_schedules({"trap": xla_trap()}, ["file_order", "dfs"], [])
    written = save(plot_sched_peaks(df), tmp_path / "peaks")
    assert [p.suffix for p in written] == [".png", ".pdf"] and all(
        p.stat().st_size for p in written
    )
    from planners import live_profile
    from scheduling.lifetimes import lifetime_problem

    ax = plot_schedule_curves({k: live_profile(lifetime_problem(xla_trap(), o))
                               for k, o in {"file": list("acvz"), "dfs": list("avcz")}.items()})
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:2] == ["file", "dfs"]
    with pytest.raises(ValueError, match="reference scheduler 'bfs'"):
        plot_sched_peaks(df, relative_to="bfs")
