"""Scheduler benchmark: peaks on real and synthetic graphs, optimality gaps, greedy speed.

Writes (``--out`` folder, default ``results/``):

* ``bench_sched.csv`` -- one row per (workload, scheduler): workload, ops, scheduler, peak_bytes,
  arena_bytes (``greedy_by_size`` on the order's activation problem), status, seconds
  (scheduling wall-clock), reduction_vs_file_order (``1 - peak / file-order peak``). Workloads:
  the branchy ONNX light models (inception_v1/v2, densenet121, shufflenet), randomly wired nets
  of ~100 operators, NAS cells, a U-Net, a transformer, and two 1,000-operator graphs (speed).
* ``bench_sched_gaps_detail.csv`` -- per small random graph (<= 25 operators) and scheduler: peak,
  the ``exact_dp`` optimum, gap ``peak / optimum - 1``; ``bench_sched_gaps.csv`` the median and
  worst gap per scheduler, and the ``exact_dp`` time.
* ``figures/sched_peaks.{png,pdf}`` (peaks relative to the file order) and
  ``figures/sched_curves.{png,pdf}`` (live bytes over time, file order vs ``best_of`` vs ``anneal``
  on the graph where file order and ``best_of`` differ most); ``--figures-only`` redraws both from
  ``bench_sched.csv`` without rerunning the benchmark.

Run: ``python -m experiments.bench.sched --out results`` (``make bench-sched``). Deterministic
except the seconds columns.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.plots import save
from experiments.plots.sched import plot_sched_peaks, plot_schedule_curves
from experiments.records import write_csv
from experiments.sched_compare import compare_schedules
from scheduling.generators import generate
from scheduling.lifetimes import peak_live_bytes
from scheduling.schedulers import schedule
from scheduling.schedulers.best_of import DEFAULT_CANDIDATES
from scheduling.workloads import load_light_model

__all__ = ["GREEDY", "HEURISTICS", "branchy_graphs", "small_graphs", "draw_figures", "run", "main"]

#: The fast (greedy / traversal) schedulers: the candidates of ``best_of``.
GREEDY = list(DEFAULT_CANDIDATES)
#: Every non-exact scheduler compared against the optimum.
HEURISTICS = GREEDY + ["anneal", "genetic", "best_of"]


def _branchy_builders() -> dict:
    """Name -> zero-argument builder of each branchy workload (so one graph can be rebuilt)."""
    builders = {
        name: (lambda name=name: load_light_model(name))
        for name in ("inception_v1", "inception_v2", "densenet121", "shufflenet")
    }
    for seed in range(3):
        builders[f"randwire100_s{seed}"] = (
            lambda seed=seed: generate("randwire", seed=seed, n_nodes=100, k=4, p=0.75))
    builders["nas_cell_5x5"] = lambda: generate("nas_cell", seed=0, n_cells=5, nodes_per_cell=5)
    builders["unet_d5"] = lambda: generate("unet", seed=0, depth=5)
    builders["transformer_4x4"] = lambda: generate("transformer", seed=0, n_blocks=4, heads=4)
    builders["layered100"] = lambda: generate("random_layered", seed=0, n_ops=100, width=6)
    return builders


def branchy_graphs() -> dict:
    """The branchy workloads: four ONNX light models and synthetic graphs (~100 operators)."""
    return {name: build() for name, build in _branchy_builders().items()}


#: Where :func:`run` stores the schedules the curves figure draws (orders + activation problems).
SCHEDULE_STORE = "bench_sched_schedules"
#: The schedules drawn in ``figures/sched_curves``.
CURVE_SCHEDULERS = ("file_order", "best_of", "anneal")


def draw_figures(bench: pd.DataFrame, out: Path) -> list[Path]:
    """Draw ``figures/sched_peaks`` and ``figures/sched_curves`` (PNG + PDF) under ``out`` from
    the rows of ``bench_sched.csv`` (``bench``) and the schedules :func:`run` stored in
    ``OUT/bench_sched_schedules/`` alone: nothing is rebuilt, rescheduled or re-analysed.

    The peaks figure shows the branchy workloads (relative to the file order), with every result
    of ``exact_dp`` / ``cpsat_schedule`` that is not a proved optimum (``timeout``, ``feasible``)
    drawn as an open marker and named in the legend; the curves figure shows file order,
    ``best_of`` and ``anneal`` on the branchy graph where file order and ``best_of`` differ most
    (:func:`experiments.report.figures.most_different_workload`). Returns the written paths."""
    from experiments.records import read_schedules
    from experiments.report.figures import most_different_workload

    df = bench[bench["workload"].isin(list(_branchy_builders()))]
    out = Path(out)
    written = save(
        plot_sched_peaks(
            df,
            relative_to="file_order",
            schedulers=HEURISTICS + ["exact_dp", "cpsat_schedule"],
            title="Peak live activation bytes relative to file order",
        ),
        out / "figures" / "sched_peaks",
    )
    store = out / SCHEDULE_STORE
    if not store.is_dir():
        print(f"bench_sched: {store} missing; sched_curves not drawn (run the benchmark)")
        return written
    profiles = read_schedules(store)
    name = most_different_workload(df, ["file_order", "best_of"]) or "randwire100_s0"
    curves = {s: profiles[name][s] for s in CURVE_SCHEDULERS if s in profiles.get(name, {})}
    written += save(
        plot_schedule_curves(curves, title=f"Live activation bytes: {name}\n"
                                           "(largest file_order vs best_of difference)"),
        out / "figures" / "sched_curves",
    )
    return written


def small_graphs(count: int = 60) -> dict:
    """``count`` random graphs of <= 25 operators: half layered DAGs (15-25 operators, width
    3-5), half randomly wired nets (13-25 operators)."""
    rng = np.random.default_rng(2024)
    out = {}
    for i in range(count):
        if i % 2 == 0:
            n = int(rng.integers(15, 26))
            out[f"layered_{i}"] = generate(
                "random_layered", seed=i, n_ops=n, width=int(rng.integers(3, 6))
            )
        else:
            n = int(rng.integers(12, 25))
            out[f"randwire_{i}"] = generate("randwire", seed=i, n_nodes=n, k=4, p=0.75)
    return out


def _gaps(graphs: dict, time_limit: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for wname, g in graphs.items():
        t0 = time.perf_counter()
        ex = schedule(g, "exact_dp", time_limit=time_limit)
        ex_sec = time.perf_counter() - t0
        opt = ex.info["peak_bytes"]
        rows.append(
            {
                "workload": wname,
                "ops": len(g),
                "scheduler": "exact_dp",
                "peak_bytes": opt,
                "optimum": opt,
                "gap": 0.0,
                "status": ex.status,
                "seconds": ex_sec,
                "states": ex.info.get("states"),
            }
        )
        for s in HEURISTICS:
            t0 = time.perf_counter()
            r = schedule(g, s)
            pk = peak_live_bytes(g, r.order)
            rows.append(
                {
                    "workload": wname,
                    "ops": len(g),
                    "scheduler": s,
                    "peak_bytes": pk,
                    "optimum": opt,
                    "gap": pk / opt - 1.0 if opt else 0.0,
                    "status": r.status,
                    "seconds": time.perf_counter() - t0,
                    "states": None,
                }
            )
    detail = pd.DataFrame(rows)
    summ = (
        detail.groupby("scheduler", sort=False)
        .agg(
            graphs=("gap", "size"),
            median_gap=("gap", "median"),
            mean_gap=("gap", "mean"),
            worst_gap=("gap", "max"),
            optimal_share=("gap", lambda x: float((x <= 1e-12).mean())),
            max_seconds=("seconds", "max"),
            median_seconds=("seconds", "median"),
        )
        .reset_index()
    )
    n_opt = int((detail.query("scheduler == 'exact_dp'")["status"] == "optimal").sum())
    summ["exact_dp_proved"] = n_opt
    return detail, summ


def run(out: Path, small: int = 60, time_limit: float = 10.0, figures: bool = True) -> dict:
    """Run the whole benchmark and write the CSVs and figures under ``out``; returns the frames."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # 1. branchy graphs: every scheduler, arena by greedy_by_size
    graphs = branchy_graphs()
    scheds = HEURISTICS + ["exact_dp", "cpsat_schedule"]
    found: list = []
    df = compare_schedules(
        graphs,
        scheds,
        ["greedy_by_size"],
        time_limit=time_limit,
        scheduler_params={"cpsat_schedule": {"max_ops": 120}},
        on_schedule=lambda r, o, p: found.append((r, o, p)) if r["scheduler"] in CURVE_SCHEDULERS
        else None,
    )
    from experiments.records import write_schedules

    write_schedules(out / SCHEDULE_STORE, found)
    # 2. speed: 1,000-operator graphs, greedy schedulers only
    big = {
        "layered1000": generate("random_layered", seed=1, n_ops=1000, width=8),
        "randwire1000": generate("randwire", seed=1, n_nodes=999, k=4),
    }
    df_big = compare_schedules(big, GREEDY + ["best_of"], ["greedy_by_size"], time_limit=time_limit)
    bench = pd.concat([df, df_big], ignore_index=True)
    ref = bench[bench.scheduler == "file_order"].set_index("workload")["peak_bytes"]
    bench["reduction_vs_file_order"] = 1.0 - bench["peak_bytes"].astype(float) / bench[
        "workload"
    ].map(ref).astype(float)
    cols = [
        "workload",
        "ops",
        "scheduler",
        "peak_bytes",
        "arena_bytes",
        "status",
        "sched_seconds",
        "reduction_vs_file_order",
        "plan_status",
        "error",
    ]
    bench = bench[cols].rename(columns={"sched_seconds": "seconds"})
    write_csv(bench, out / "bench_sched.csv")
    # 3. gaps to the optimum on small random graphs
    detail, summ = _gaps(small_graphs(small), time_limit)
    write_csv(detail, out / "bench_sched_gaps_detail.csv")
    write_csv(summ, out / "bench_sched_gaps.csv")
    if figures:
        draw_figures(bench, out)
    return {"bench": bench, "gaps": summ, "detail": detail}


def main(argv=None) -> None:
    """Command line: ``python -m experiments.bench.sched [--out DIR] [--small N] [--time-limit S]
    [--no-figures | --figures-only]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results", help="output folder (default results/)")
    ap.add_argument("--small", type=int, default=60, help="number of small random graphs")
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds per exact run")
    ap.add_argument("--no-figures", action="store_true")
    ap.add_argument("--figures-only", action="store_true",
                    help="redraw the figures from OUT/bench_sched.csv without rerunning")
    a = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")  # off-screen (plots.py leaves the backend alone)
    if a.figures_only:
        csv = Path(a.out) / "bench_sched.csv"
        if not csv.is_file():
            ap.error(f"--figures-only: {csv} does not exist; run the benchmark first")
        for p in draw_figures(pd.read_csv(csv), Path(a.out)):
            print(p)
        return
    res = run(Path(a.out), a.small, a.time_limit, not a.no_figures)
    pd.set_option("display.width", 200)
    b = res["bench"]
    print(
        b.pivot(index="workload", columns="scheduler", values="reduction_vs_file_order")
        .round(3)
        .to_string()
    )
    print(b.groupby("scheduler")["seconds"].max().round(4).to_string())
    print(res["gaps"].round(4).to_string(index=False))


if __name__ == "__main__":
    main()
