"""Benchmark: RV64 cost of the allocator cores -> ``results/bench_rv64.csv`` and a log-log plot.

For random problems with N = 16, 64, 256, 1024 buffers (:func:`planners.random_problems.random_problem`,
seeded, alignment 16) and the nine light ONNX models of the ``onnx`` wheel (when the ONNX importer
works), every core of :data:`experiments.rv64.CORE_NAMES` is compiled to RV64, emulated, and costed
with the U74 and C906 core models (:func:`experiments.rv64.estimate`). One CSV row per (workload,
planner): instructions by class, estimated cycles and cycles per buffer per core model, whether the
emulated offsets equal the Python planner's, and the host wall-clock seconds of the estimate.

Run: ``python -m experiments.bench_rv64 --out results/bench_rv64.csv`` (``make bench-rv64``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

__all__ = ["run", "plot", "main", "SIZES"]

SIZES = (16, 64, 256, 1024)


def _workloads(sizes, seed: int, onnx: bool):
    from planners.random_problems import random_problem

    for n in sizes:
        yield f"random_n{n}", "random", random_problem(n, seed=seed, alignment=16)
    if not onnx:
        return
    try:
        from scheduling.lifetimes import problem_from_graph
        from scheduling.onnx_import import load_onnx
        from scheduling.schedulers import get_scheduler
        from scheduling.workloads import onnx_light_models

        models = onnx_light_models()
    except Exception as e:  # noqa: BLE001 - report and go on with the random problems
        print(f"bench_rv64: ONNX models skipped ({type(e).__name__}: {e})", file=sys.stderr)
        return
    for name, path in models.items():
        try:  # lifetimes in file order, activations only (as experiments.workloads.onnx_problem)
            graph = load_onnx(path)
            order = get_scheduler("file_order").schedule(graph).order
            p = problem_from_graph(graph, order, name=name)
        except Exception as e:  # noqa: BLE001
            print(
                f"bench_rv64: ONNX model {name} skipped ({type(e).__name__}: {e})", file=sys.stderr
            )
            continue
        yield name, "onnx", p


def run(sizes=SIZES, seed: int = 0, onnx: bool = True, planners=None):
    """Measure every (workload, planner); returns a pandas DataFrame (one row each).

    Raises :class:`experiments.rv64.Rv64Unavailable` when ziglang or unicorn is missing.
    """
    import pandas as pd

    from experiments import rv64

    ok, reason = rv64.available()
    if not ok:
        raise rv64.Rv64Unavailable(reason)
    names = tuple(planners or rv64.CORE_NAMES)
    rows = []
    for wname, kind, problem in _workloads(sizes, seed, onnx):
        for name in names:
            t0 = time.perf_counter()
            est = rv64.estimate(problem, name)
            seconds = time.perf_counter() - t0
            rec = est.as_record()
            rec.pop("offsets")
            rec.update(workload=wname, kind=kind, seconds=round(seconds, 3))
            rows.append(rec)
            print(
                f"{wname:>14} n={est.n:<5} {name:<16} insn={est.instructions:>10} "
                f"u74={est.cycles['u74']:>10} c906={est.cycles['c906']:>10} "
                f"match={est.offsets_match} {seconds:.2f}s",
                file=sys.stderr,
            )
    df = pd.DataFrame(rows)
    first = ["workload", "kind", "n", "planner", "rv64_instructions", "rv64_cycles_u74",
             "rv64_cycles_c906", "cycles_per_buffer_u74", "cycles_per_buffer_c906",
             "offsets_match", "arena", "seconds"]  # fmt: skip
    return df[first + [c for c in df.columns if c not in first]]


def plot(df, out_stem: Path) -> list[Path]:
    """Log-log plot of estimated cycles vs buffer count (random problems; ONNX models as markers),
    one panel per core model, one line per planner. Writes ``out_stem`` ``.png`` and ``.pdf``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, (col, title) in zip(
        axes,
        [("rv64_cycles_u74", "SiFive U74 model"), ("rv64_cycles_c906", "T-Head C906 model")],
        strict=True,
    ):
        for k, (name, g) in enumerate(df.groupby("planner", sort=False)):
            color = f"C{k}"
            r = g[g["kind"] == "random"].sort_values("n")
            ax.plot(r["n"], r[col], "o-", color=color, label=name)
            o = g[g["kind"] == "onnx"]
            if len(o):
                ax.scatter(o["n"], o[col], marker="x", color=color, s=25)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("buffers n")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("estimated cycles of the allocator core")
    axes[1].legend(fontsize=8, title="lines: random; x: ONNX", title_fontsize=8)
    fig.suptitle("Allocator cores on RV64 (emulated machine code, in-order core models)")
    fig.tight_layout()
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [out_stem.with_suffix(".png"), out_stem.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def main(argv=None) -> int:
    """Command-line entry point (see module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench_rv64.csv")
    ap.add_argument("--figure", default="results/figures/rv64_cycles_vs_buffers")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-onnx", action="store_true", help="random problems only")
    args = ap.parse_args(argv)
    from experiments import rv64

    ok, reason = rv64.available()
    if not ok:
        print(f"bench_rv64: {reason}", file=sys.stderr)
        return 2
    sizes = tuple(int(s) for s in args.sizes.split(","))
    df = run(sizes, args.seed, onnx=not args.no_onnx)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(out)
    paths = plot(df, Path(args.figure))
    print(f"wrote {out} ({len(df)} rows), {', '.join(map(str, paths))}", file=sys.stderr)
    if not df["offsets_match"].all():
        bad = df.loc[~df["offsets_match"], ["workload", "planner"]].values.tolist()
        print(f"bench_rv64: emulated offsets differ from Python for {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
