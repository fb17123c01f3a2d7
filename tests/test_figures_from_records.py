"""Every figure of ``memplan compare`` (planners and schedulers) and of ``bench_sched`` is drawn
from records and stored problems alone: with planners, schedulers and lifetime analysis made to
raise, the figures are still drawn, and they show the stored plans (same arenas as the records)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from experiments import plots
from experiments.cli import main
from experiments.records import PLANS_FILE, read_plans
from experiments.report.figures import figures_from_folder
from experiments.sched_compare import SCHED_PLANS_FILE


def _forbid(monkeypatch):
    """Make every planner, scheduler and lifetime analysis raise."""
    import experiments.harness as harness
    import experiments.sched_compare as sched_compare
    import scheduling.lifetimes as lifetimes
    from planners.base import Planner
    from scheduling.schedulers.base import Scheduler

    def boom(*a, **k):
        raise AssertionError("figures must not plan, schedule or analyse lifetimes")

    monkeypatch.setattr(Planner, "plan", boom)
    monkeypatch.setattr(Scheduler, "schedule", boom)
    monkeypatch.setattr(harness, "run_one", boom)
    monkeypatch.setattr(lifetimes, "lifetime_problem", boom)
    monkeypatch.setattr(lifetimes, "peak_live_bytes", boom)
    monkeypatch.setattr(sched_compare, "lifetime_problem", boom)
    monkeypatch.setattr(sched_compare, "peak_live_bytes", boom)


def test_compare_figures_are_drawn_from_stored_plans(tmp_path, monkeypatch):
    out = tmp_path / "cmp"
    assert main(["compare", "--workloads", "seed000", "resnet50", "--planners", "greedy_by_size",
                 "first_fit", "naive", "--quiet", "--no-plots", "--out", str(out)]) == 0
    body = json.loads((out / PLANS_FILE).read_text())
    assert set(body["problems"]) == {"seed000", "resnet50"}
    assert all((out / rel).is_file() for rel in body["problems"].values())
    assert len(body["plans"]) == 6 and all(e["offsets"] for e in body["plans"])
    df = pd.read_csv(out / "compare.csv")
    assert (out / "compare.parquet").is_file()
    pq = pd.read_parquet(out / "compare.parquet")
    assert str(pq["arena"].dtype) == "Int64" and pq["valid"].dtype == bool
    assert pq["arena"].tolist() == df["arena"].tolist()
    _forbid(monkeypatch)
    problems, stored = read_plans(out)
    for _, r in df.iterrows():  # the stored offsets give the recorded arenas
        assert stored[(r["workload"], r["planner"])].arena_size == r["arena"]
    written = figures_from_folder(out)
    names = {p.name for p in written}
    assert {"ratio_heatmap.png", "ratio_by_planner.png", "memory_over_time_seed000.png",
            "memory_over_time_resnet50.png"} <= names
    assert any(n.startswith("layout_seed000_") for n in names)
    with plots.style("paper"):
        paper = figures_from_folder(out, out / "paper")
    assert {p.suffix for p in paper} == {".pdf", ".png"}


def test_sched_figures_are_drawn_from_stored_schedules(tmp_path, monkeypatch):
    out = tmp_path / "sch"
    assert main(["compare", "--schedulers", "file_order", "dfs", "best_of", "--planners",
                 "greedy_by_size", "--workloads", "seed000", "gen:nas_cell", "--quiet",
                 "--no-plots", "--out", str(out)]) == 0
    body = json.loads((out / SCHED_PLANS_FILE).read_text())
    assert {(r["workload"], r["scheduler"]) for r in body["schedules"]} == {
        (w, s) for w in ("seed000", "gen:nas_cell") for s in ("file_order", "dfs", "best_of")}
    assert (out / "compare_sched.parquet").is_file()
    _forbid(monkeypatch)
    written = figures_from_folder(out)
    names = {p.name for p in written}
    assert "compare_sched_peaks.png" in names
    assert any(n.startswith("compare_sched_curves_") for n in names)


def test_bench_sched_figures_are_drawn_from_stored_schedules(tmp_path, monkeypatch):
    from experiments.bench import sched as bench_sched
    from experiments.sched_compare import compare_schedules, write_schedules
    from scheduling.generators import generate

    graphs = {"randwire100_s0": generate("randwire", seed=0, n_nodes=24, k=4)}
    found = []
    df = compare_schedules(graphs, ["file_order", "best_of", "anneal", "exact_dp"], [],
                           time_limit=0.01,
                           on_schedule=lambda r, o, p: found.append((r, o, p)))
    write_schedules(tmp_path / bench_sched.SCHEDULE_STORE,
                    [f for f in found if f[0]["scheduler"] in bench_sched.CURVE_SCHEDULERS])
    _forbid(monkeypatch)
    written = bench_sched.draw_figures(df, tmp_path)
    assert {p.name for p in written} == {"sched_peaks.png", "sched_peaks.pdf",
                                         "sched_curves.png", "sched_curves.pdf"}


def test_plot_schedule_curves_takes_profiles_not_orders():
    with pytest.raises(ValueError, match="at least one profile"):
        from experiments.plots.sched import plot_schedule_curves

        plot_schedule_curves({})
