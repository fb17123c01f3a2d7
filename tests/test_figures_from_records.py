"""Every figure of ``memplan compare`` (planners and schedulers) and of ``bench_sched`` is drawn
from records and stored problems alone: with planners, schedulers and lifetime analysis made to
raise, the figures are still drawn, and they show the stored plans (same arenas as the records)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from experiments import plots
from experiments.cli import main
from experiments.records import PLANS_FILE, SCHED_PLANS_FILE, read_plans
from experiments.report.figures import figures_from_folder


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
    from experiments.records import write_schedules
    from experiments.sched_compare import compare_schedules
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


def test_sweep_report_figures_are_drawn_from_records(tmp_path, monkeypatch):
    """`memplan report` draws every sweep figure (planner comparison, heatmap, quality vs time,
    scaling, memory over time, layouts) with planners, schedulers and lifetime analysis made to
    raise; the layout shows the recorded arena."""
    from experiments.report import build_report
    from experiments.sweep import load_config, load_records, run_sweep

    cfg = tmp_path / "s.toml"
    cfg.write_text('out = "out"\nworkloads = ["seed002_ex5.1", '
                   '{generator = "random_layered", params = {n_ops = 12}}]\n'
                   '[schedulers]\nfile_order = {}\nmin_live = {}\n'
                   '[planners]\nfirst_fit = {}\ngreedy_by_size = {}\n')
    s = run_sweep(load_config(cfg), progress=False)
    assert s["errors"] == 0
    records = load_records(tmp_path / "out")
    _forbid(monkeypatch)
    written = build_report(tmp_path / "out", jobs=1)
    names = {p.name for p in written}
    assert {"planner_comparison.png", "ratio_heatmap.png", "pareto_quality_time.png",
            "scaling_time_vs_buffers.png", "memory_over_time_seed002_ex5_1.png",
            "layout_seed002_ex5_1.png", "report.md"} <= names, sorted(names)
    table = pd.read_csv(tmp_path / "out" / "report" / "tables" / "runs_aggregated.csv")
    best = table[table["workload"] == "seed002_ex5.1"]["arena"].min()
    assert best == records[records["workload"] == "seed002_ex5.1"]["arena"].min() == 780


def test_memplan_report_redraws_a_compare_folder(tmp_path, monkeypatch):
    """One command (`memplan report FOLDER`) redraws a `memplan compare` folder's figures from
    its records, without planning."""
    out = tmp_path / "cmp"
    assert main(["compare", "--workloads", "seed002_ex5.1", "--planners", "greedy_by_size",
                 "first_fit", "--quiet", "--out", str(out)]) == 0
    before = sorted(p.name for p in (out / "figures").iterdir())
    for f in (out / "figures").iterdir():
        f.unlink()
    _forbid(monkeypatch)
    assert main(["report", str(out)]) == 0
    assert sorted(p.name for p in (out / "figures").iterdir()) == before
    assert "ratio_heatmap.png" in before


def test_one_command_redraws_the_benchmark_figures_from_their_csvs(tmp_path, monkeypatch):
    """`make figures` (experiments.bench.figures.redraw) draws the benchmark figures of results/
    from the CSVs and stored schedules alone: with planners, schedulers and lifetime analysis
    made to raise, every figure is written, and a missing CSV is reported, not an error."""
    import shutil
    from pathlib import Path

    from experiments.bench.figures import redraw

    src = Path(__file__).resolve().parents[1] / "results"
    needed = ["bench_anytime.csv", "bench_scale.csv", "bench_budget.csv", "bench_rv64.csv",
              "bench_sched.csv", "bench_sched_schedules"]
    if not all((src / n).exists() for n in needed):
        pytest.skip("results/ lacks the benchmark CSVs")
    for n in needed:
        (shutil.copytree if (src / n).is_dir() else shutil.copy)(src / n, tmp_path / n)
    skipped: list[str] = []
    _forbid(monkeypatch)
    written = redraw(tmp_path, sweeps=False, report=skipped.append)
    names = {p.name for p in written}
    assert {f"{s}.png" for s in ("bench_anytime", "bench_scale", "budget_vs_overhead",
                                 "rv64_cycles_vs_buffers", "rv64_cycles_caches", "sched_peaks",
                                 "sched_curves")} <= names, sorted(names)
    assert skipped[0] == f"skipped compare figures: no {tmp_path / 'compare.csv'}"
    # the benchmarks whose CSVs were not copied are named, not errors
    assert f"skipped the figures of bench_peers.csv: no {tmp_path / 'bench_peers.csv'}" in skipped
    assert all(line.startswith("skipped ") for line in skipped)


def test_best_plan_is_chosen_by_arena_then_a_fixed_planner_order_never_by_seconds():
    from experiments.report.figures import best_planner

    for secs in ([0.001, 5.0], [5.0, 0.001]):  # whichever was faster, the same planner wins
        sub = pd.DataFrame({"planner": ["greedy_by_size", "first_fit", "naive"],
                            "arena": [100, 100, 300], "seconds": [secs[0], secs[1], 0.0]})
        assert best_planner(sub) == "greedy_by_size"  # the preference, not the alphabet
        assert best_planner(sub.iloc[::-1]) == "greedy_by_size"  # whatever the record order
    sub = pd.DataFrame({"planner": ["first_fit", "greedy_by_size"], "arena": [101, 100],
                        "seconds": [0.0, 9.0]})
    assert best_planner(sub) == "greedy_by_size"  # the arena decides first


def test_best_plan_of_resnet50_is_not_chaitin_by_the_alphabet():
    """The committed records' resnet50: 15 planners reach the lower bound, ``chaitin`` among
    them (alphabetically first); the best plan is the first of the fixed preference that ties,
    ``minimize``; a proved optimum beats an unproved plan of the same arena."""
    from experiments.report.figures import best_planner

    tied = ["greedy_by_size", "greedy_by_size_best_fit", "greedy_by_breadth", "choose_best",
            "chaitin", "interval_colouring", "cpsat", "ilp_blocks", "milp_offsets",
            "exact_search", "minimize", "local_search", "telamalloc", "lns_cpsat", "tflm_greedy"]
    sub = pd.DataFrame({"planner": tied + ["naive"], "arena": [9633792] * 15 + [150251328],
                        "proved": [True] * 15 + [False]})
    assert best_planner(sub) == "minimize"
    assert best_planner(sub[sub["planner"] != "minimize"]) == "telamalloc"
    two = pd.DataFrame({"planner": ["minimize", "chaitin"], "arena": [64, 64],
                        "proved": [False, True]})
    assert best_planner(two) == "chaitin"  # proved first, then the preference
    with pytest.raises(ValueError, match="at least one"):
        best_planner(sub.iloc[:0])


def _records(rows):
    cols = ["workload", "planner", "family", "ratio", "valid", "status", "error", "buffers",
            "lower_bound", "naive", "arena", "seconds"]
    return pd.DataFrame([dict(zip(cols, r, strict=True)) for r in rows])


def test_compare_md_splits_the_ratio_table_and_says_why_a_cell_is_empty(tmp_path):
    """compare.md: no table wider than RATIO_COLUMNS planners, a run without a plan is ``-``
    with a numbered note naming its status and reason (never ``nan``), a pair not run is empty;
    every ratio of the records appears once, to three decimals."""
    from experiments.report.compare import _planner_groups, compare_markdown, ratio_tables

    fams = ["baseline"] + ["greedy"] * 10 + ["exact"] * 3
    names = ["naive"] + [f"g{k}" for k in range(10)] + ["e0", "e1", "e2"]
    rows = []
    for w in ("w1", "w2"):
        for k, (p, f) in enumerate(zip(names, fams, strict=True)):
            if w == "w2" and p == "e1":
                rows.append((w, p, f, float("nan"), False, "skipped", "model too big", 4, 10,
                             20, float("nan"), 0.1))
            elif w == "w2" and p == "e2":
                rows.append((w, p, f, float("nan"), False, "skipped", "", 4, 10, 20,
                             float("nan"), 0.1))
            elif not (w == "w1" and p == "e0"):  # e0 never ran on w1
                rows.append((w, p, f, 1 + k / 1000, True, "heuristic", "", 4, 10, 20,
                             10 + k, 0.1))
    df = _records(rows)
    groups = _planner_groups(df, 8)
    assert [len(m) for _, m in groups] == [6, 5, 3]
    assert [t for t, _ in groups] == ["baseline + greedy, 1 of 2", "greedy, 2 of 2", "exact"]
    tables = ratio_tables(df, 8)
    cells = {(w, p): v for _, t, _ in tables for w, row in t.set_index("workload").iterrows()
             for p, v in row.items()}
    assert cells[("w1", "g3")] == "1.004" and cells[("w2", "naive")] == "1.000"
    assert cells[("w1", "e0")] == ""  # not run
    assert cells[("w2", "e1")] == "- (1)" and cells[("w2", "e2")] == "- (2)"
    notes = tables[2][2]
    assert notes == [(1, "skipped: model too big (e1 on w2)"),
                     (2, "skipped: no reason recorded (e2 on w2)")]
    md = compare_markdown(df, tmp_path)
    assert "nan" not in md
    widths = [line.count("|") - 1 for line in md.splitlines() if line.startswith("| workload")]
    assert max(widths) <= 9 and len(widths) >= 4  # workloads table + 3 ratio tables
    with pytest.raises(ValueError):
        ratio_tables(df, 0)


def test_rewrite_compare_md_from_the_csv_keeps_command_and_time_limit(tmp_path):
    from experiments.report.compare import _previous_header, rewrite_compare_md

    df = _records([("w1", "a", "greedy", 1.25, True, "heuristic", "", 3, 8, 16, 10, 0.01)])
    df.to_csv(tmp_path / "compare.csv", index=False)
    (tmp_path / "compare.md").write_text(
        "# Planner comparison\n\nGenerated by `memplan compare --time-limit 2`. Lifetimes\n\n"
        "Time limit: 2 s per run for the planners\n")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "ratio_heatmap.png").write_bytes(b"png")
    (tmp_path / "figures" / "bench_scale.png").write_bytes(b"png")  # not compare's
    md = rewrite_compare_md(tmp_path).read_text()
    assert _previous_header(md) == ("memplan compare --time-limit 2", 2.0)
    assert "| w1         | 1.250 |" in md or "1.250" in md.split("### greedy")[1]
    assert "![ratio_heatmap](figures/ratio_heatmap.png)" in md and "bench_scale" not in md


def test_a_skipped_run_records_the_reason_its_planner_gave():
    """The harness copies ``plan.info["reason"]`` of a skipped run into the record's ``reason``
    (it was dropped: the 14 skipped runs of compare.md had no reason); ``error`` stays empty, as
    declining to run is not a failed run (the sweep counts no error and does not retry it)."""
    from experiments.harness import run_one
    from planners.model import Buffer, Problem

    p = Problem([Buffer(str(i), i % 5, i % 5 + 3, 64 + i) for i in range(12)])
    rec, _ = run_one("w", p, "milp_offsets", time_limit=1.0, params={"model_budget": 1e-9})
    assert rec["status"] == "skipped" and not rec["valid"]
    assert rec["error"] == "" and rec["reason"].startswith("milp_offsets: the model would have ")
    assert rec["reason"].endswith("; not built")


def test_compare_figures_remove_the_files_they_no_longer_write(tmp_path, monkeypatch):
    """Redrawing a compare folder gives the same file names whatever the recorded seconds, and
    removes owned figures an earlier run wrote (another best planner, a workload no longer
    compared) while leaving every other file in the folder alone."""
    out = tmp_path / "cmp"
    assert main(["compare", "--workloads", "seed000", "--planners", "greedy_by_size",
                 "best_fit", "first_fit", "--quiet", "--no-plots", "--out", str(out)]) == 0
    df = pd.read_csv(out / "compare.csv")
    assert df["arena"].nunique() == 1  # all three tie on seed 000: only the order decides
    _forbid(monkeypatch)
    figs = out / "figures"
    figs.mkdir()
    stale = [figs / "layout_seed000_some_old_planner.png", figs / "layout_seed000_x.pdf",
             figs / "memory_over_time_gone.png", figs / "ratio_heatmap.svg"]
    foreign = [figs / "bench_scale.png", figs / "sched_peaks.pdf", figs / "notes.txt"]
    for f in stale + foreign:
        f.write_bytes(b"old")
    names = []
    for seed in (0, 1):
        shuffled = df.copy()
        shuffled["seconds"] = shuffled["seconds"].sample(frac=1.0, random_state=seed).to_numpy()
        shuffled.to_csv(out / "compare.csv", index=False)
        written = figures_from_folder(out)
        names.append(sorted(p.name for p in written))
    assert names[0] == names[1]
    layouts = [n for n in names[0] if n.startswith("layout_seed000_")]
    assert len(layouts) == 2  # one best plan, PNG + PDF
    assert not any(f.exists() for f in stale)
    assert all(f.exists() for f in foreign)
    assert sorted(p.name for p in figs.iterdir()) == sorted(names[0] + [f.name for f in foreign])
