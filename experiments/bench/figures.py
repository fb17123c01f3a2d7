"""``make figures``: redraw every figure under ``results/`` from the records already there, with
one command and without running any planner, scheduler or lifetime analysis.

* ``results/figures/`` of ``memplan compare`` (:func:`experiments.report.figures.figures_from_folder`
  over ``compare.csv`` + ``compare_plans.json``) and ``compare.md`` rewritten from ``compare.csv``
  (:func:`experiments.report.compare.rewrite_compare_md`);
* each sweep's report under ``results/sweeps/NAME/report/`` (:func:`experiments.report.build_report`;
  ``--no-sweeps`` skips them);
* the benchmark figures from their CSVs: ``bench_anytime``, ``bench_executorch``, ``bench_joint``,
  ``bench_known``,
  ``bench_peers``, ``bench_scale``, ``budget_vs_overhead``,
  ``rv64_cycles_vs_buffers`` and ``rv64_cycles_caches``, ``sched_peaks`` and ``sched_curves``
  (the latter from the schedules stored beside ``bench_sched.csv``).

``python -m experiments.bench.figures [--results results] [--no-sweeps]``; a figure whose records
are absent is skipped and named on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["redraw", "main"]


def redraw(results: str | Path = "results", sweeps: bool = True,
           report=print) -> list[Path]:
    """Redraw the figures of ``results`` from its records (see the module docstring); returns the
    written files. ``report`` is called with one line per figure group skipped for want of
    records."""
    import matplotlib
    import pandas as pd

    from experiments import plots
    from experiments.report import build_report
    from experiments.report.figures import figures_from_folder

    results = Path(results)
    figs = results / "figures"
    written: list[Path] = []
    with plots.style("default"):  # as `memplan compare` draws them
        if (results / "compare.csv").is_file():
            drawn = figures_from_folder(results)
            written += drawn
            from experiments.report.compare import rewrite_compare_md

            # its tables, and links to the figures in the order memplan compare lists them
            written.append(rewrite_compare_md(
                results, [f for f in drawn if f.parent == results / "figures"]))
        else:
            report(f"skipped compare figures: no {results / 'compare.csv'}")

    def bench(csv: str, draw) -> None:  # in the style each benchmark draws its figures in
        path = results / csv
        if path.is_file():
            with matplotlib.rc_context():  # as in its own process: rcParams it sets are undone
                written.extend(draw(path))
        else:
            report(f"skipped the figures of {csv}: no {path}")

    from experiments.bench import anytime, budget, executorch, joint, known, peers, rv64, sched
    from experiments.bench import planners as bench_planners

    bench("bench_anytime.csv", lambda p: anytime.plot(p, figs / "bench_anytime"))
    bench("bench_peers.csv", lambda p: peers.plot(p, figs / "bench_peers"))
    bench("bench_known.csv", lambda p: known.plot(p, figs / "bench_known"))
    bench("bench_joint.csv", lambda p: joint.draw_figure(pd.read_csv(p), results))
    bench("bench_executorch.csv", lambda p: executorch.plot(p, figs / "bench_executorch"))
    bench("bench_scale.csv",
          lambda p: bench_planners.plot_scale(pd.read_csv(p), figs / "bench_scale"))
    bench("bench_budget.csv",
          lambda p: budget.plot_budget(pd.read_csv(p), figs / "budget_vs_overhead"))
    bench("bench_rv64.csv", lambda p: rv64.plot(pd.read_csv(p), figs / "rv64_cycles_vs_buffers")
          + rv64.plot_caches(pd.read_csv(p), figs / "rv64_cycles_caches"))
    bench("bench_sched.csv", lambda p: sched.draw_figures(pd.read_csv(p), results))
    if sweeps:
        for folder in sorted((results / "sweeps").glob("*/records")):
            written += build_report(folder.parent)
    return [Path(p) for p in written]


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results", help="the results folder (default results)")
    ap.add_argument("--no-sweeps", action="store_true", help="skip the sweep reports")
    a = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    written = redraw(a.results, sweeps=not a.no_sweeps,
                     report=lambda line: print(line, file=sys.stderr))
    print(f"redrew {len(written)} files under {a.results}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
