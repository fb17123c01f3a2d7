"""Benchmark: RV64 cost of the allocator cores -> ``results/bench_rv64*.csv`` and figures.

For random problems with N = 16, 64, 256, 1024 buffers (:func:`planners.random_problems.random_problem`,
seeded, alignment 16), a generated transformer of about 1000 buffers
(:func:`scheduling.generators.transformer` with 18 blocks of 8 heads, file order; kind ``network``)
and the nine light ONNX models of the ``onnx`` wheel (when the ONNX importer works), every core of :data:`experiments.rv64.CORE_NAMES` is compiled to RV64, emulated, and costed
with the U74 and C906 core models (:func:`experiments.rv64.estimate`), with and without L1 caches.
One CSV row per (workload, planner): instructions by class, estimated cycles (with caches, and with
ideal memory), cache accesses, misses and hit rates, code size (``.text`` of a one-core image, both
builds), stack and scratch bytes, whether the emulated offsets equal the Python planner's, the host
wall-clock seconds of the estimate (``seconds``; its two builds run in two threads) and the CPU
seconds of the process (``cpu_seconds``, both threads: the measure that the machine's load
disturbs least), and the assumptions each core model rests on.

Scaling rows (``--scale-sizes``, default 2048, 4096, 8192): every core on the random problem of
that size, each estimate in a fresh subprocess whose peak resident memory (``peak_rss_mb``),
wall-clock and CPU seconds are recorded (the cost of estimating; the machine's load makes the
wall-clock seconds noisy).

``results/bench_rv64_mca.csv``: the U74 model against ``llvm-mca -mcpu=sifive-u74`` on the hottest
blocks of every core and on hand-made dependence sequences (:mod:`experiments.rv64.mca`; skipped
with a message when LLVM >= 19 is not installed).

Run: ``python -m experiments.bench.rv64 --out results/bench_rv64.csv`` (``make bench-rv64``);
``--figures-only`` redraws the figures from that CSV without rerunning the benchmark.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from experiments.plots.style import styled

__all__ = ["run", "run_scaling", "run_mca", "plot", "plot_caches", "main", "SIZES", "SCALE_SIZES"]

SIZES = (16, 64, 256, 1024)
SCALE_SIZES = (2048, 4096, 8192)


def _workloads(sizes, seed: int, onnx: bool):
    from planners.random_problems import random_problem

    for n in sizes:
        yield f"random_n{n}", "random", random_problem(n, seed=seed, alignment=16)
    try:  # a network-shaped problem of about 1000 buffers, generated (no files needed)
        from scheduling.generators import transformer
        from scheduling.lifetimes import problem_from_graph
        from scheduling.schedulers import get_scheduler

        g = transformer(seed=seed, n_blocks=18, heads=8)
        order = get_scheduler("file_order").schedule(g).order
        p = problem_from_graph(g, order, name=g.name)
        yield f"transformer_n{p.n}", "network", p
    except Exception as e:  # noqa: BLE001 - report and go on
        print(f"bench_rv64: generated transformer skipped ({type(e).__name__}: {e})",
              file=sys.stderr)
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


def run(sizes=SIZES, seed: int = 0, onnx: bool = True, planners=None, rvsim_max_n: int = 700):
    """Measure every (workload, planner); returns a pandas DataFrame (one row each).

    When ``rvsim`` is installed (:mod:`experiments.rv64.rvsim_check`), workloads with at most
    ``rvsim_max_n`` buffers (``-1``: none) also run in rvsim's U74-like and C906-like in-order
    configurations: columns ``rvsim_cycles_{u74,c906}``, ``rvsim_instructions_{u74,c906}`` and
    ``rvsim_offsets_match`` (empty for larger workloads: rvsim runs about 0.5 M instructions/s).

    Raises :class:`experiments.rv64.Rv64Unavailable` when ziglang or unicorn is missing.
    """
    import pandas as pd

    from experiments import rv64

    ok, reason = rv64.available()
    if not ok:
        raise rv64.Rv64Unavailable(reason)
    names = tuple(planners or rv64.CORE_NAMES)
    from experiments.rv64 import rvsim_check

    use_rvsim, why = rvsim_check.available()
    use_rvsim = use_rvsim and rvsim_max_n >= 0
    if not use_rvsim:
        print(f"bench_rv64: rvsim columns skipped ({why or 'rvsim_max_n < 0'})", file=sys.stderr)
    rows = []
    for wname, kind, problem in _workloads(sizes, seed, onnx):
        for name in names:
            t0, c0 = time.perf_counter(), time.process_time()
            est = rv64.estimate(problem, name)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            rec = est.as_record()
            rec.pop("offsets")
            rec.update(workload=wname, kind=kind, seconds=round(seconds, 3),
                       cpu_seconds=round(cpu, 3))
            if use_rvsim and est.n <= rvsim_max_n:
                for core in rvsim_check.RVSIM_CORES:
                    r = rvsim_check.run_rvsim(problem, name, core, check=False)
                    rec[f"rvsim_cycles_{core}"] = r.cycles
                    rec[f"rvsim_instructions_{core}"] = r.instructions
                    ok_c = bool(np.array_equal(r.offsets, est.offsets))
                    rec["rvsim_offsets_match"] = rec.get("rvsim_offsets_match", True) and ok_c
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
             "offsets_match", "arena", "seconds", "cpu_seconds"]  # fmt: skip
    return df[first + [c for c in df.columns if c not in first]]


def _one(core: str, n: int, seed: int) -> dict:
    """One estimate in this process (the ``--one`` entry point): record + seconds + peak RSS."""
    import resource

    from experiments import rv64
    from planners.random_problems import random_problem

    p = random_problem(n, seed=seed, alignment=16)
    t0, c0 = time.perf_counter(), time.process_time()
    est = rv64.estimate(p, core)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    rec = est.as_record()
    rec.pop("offsets")
    rec.update(workload=f"random_n{n}", kind="random", seconds=round(seconds, 3),
               cpu_seconds=round(cpu, 3),
               peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))  # fmt: skip
    return rec


def run_scaling(sizes=SCALE_SIZES, seed: int = 0, planners=None) -> list[dict]:
    """Every core on the random problem of each size in ``sizes``, one subprocess per estimate
    (so ``peak_rss_mb`` is that estimate's own peak). Returns the records."""
    from experiments import rv64

    rows = []
    for n in sizes:
        for name in planners or rv64.CORE_NAMES:
            cmd = [sys.executable, "-m", "experiments.bench.rv64", "--one", name, str(n),
                   "--seed", str(seed)]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"bench_rv64: {name} n={n} failed:\n{proc.stderr}", file=sys.stderr)
                continue
            rec = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(rec)
            print(f"{rec['workload']:>14} n={n:<5} {name:<20} insn={rec['rv64_instructions']:>11} "
                  f"u74={rec['rv64_cycles_u74']:>11} {rec['seconds']:.1f}s "
                  f"(cpu {rec['cpu_seconds']:.1f}s) "
                  f"{rec['peak_rss_mb']:.0f} MB", file=sys.stderr)  # fmt: skip
    return rows


def run_mca(out: Path, seed: int = 0):
    """Write ``results/bench_rv64_mca.csv`` (see the module docstring); ``None`` when llvm-mca
    is unavailable (the reason is printed)."""
    import pandas as pd

    from experiments import rv64
    from experiments.rv64 import mca
    from planners.random_problems import random_problem

    llvm, why = mca.find_llvm()
    if llvm is None:
        print(f"bench_rv64: llvm-mca cross-check skipped ({why})", file=sys.stderr)
        return None
    rows = mca.core_rows(llvm, random_problem(256, seed=seed, alignment=16), rv64.CORE_NAMES, 3)
    rows += mca.hand_rows(llvm)
    df = pd.DataFrame([r.as_record() for r in rows])
    df.insert(6, "llvm_version", llvm.version)
    tmp = out.with_name(out.name + ".tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(out)
    worst = (df["ratio"] - 1).abs().max()
    print(f"wrote {out} ({len(df)} blocks, largest |ratio - 1| = {worst:.4f})", file=sys.stderr)
    return df


@styled()
def plot_caches(df, out_stem: Path) -> list[Path]:
    """Estimated U74 cycles against buffers ``n`` (random problems), with L1 caches (solid) and
    with ideal memory (dashed), one line pair per core; right panel: L1 data-cache miss rate.
    Writes ``out_stem`` ``.png`` and ``.pdf``."""
    import matplotlib.pyplot as plt

    from experiments.plots import distinct_styles, save

    fig, axes = plt.subplots(1, 2, figsize=(7.16, 3.8), layout="constrained")
    r = df[df["kind"] == "random"].sort_values("n")
    groups = list(r.groupby("planner", sort=False))
    styles = distinct_styles(len(groups))
    for (name, g), (colour, marker) in zip(groups, styles, strict=True):
        axes[0].plot(g["n"], g["rv64_cycles_u74"], "-", marker=marker, color=colour, ms=4,
                     lw=1.2, label=f"{name}")  # fmt: skip
        axes[0].plot(g["n"], g["rv64_cycles_u74_ideal_memory"], "--", color=colour, lw=1.0)
        miss = 1 - g["l1d_hit_rate_u74"]
        axes[1].plot(g["n"], 100 * miss, "-", marker=marker, color=colour, ms=4, lw=1.2,
                     label=name)  # fmt: skip
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("buffers n (count, log scale)")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("estimated U74 cycles (log scale)\nsolid: L1 caches, dashed: ideal memory")
    axes[1].set_ylabel("L1 data-cache misses (% of accesses)")
    fig.legend(*axes[1].get_legend_handles_labels(), loc="outside lower center", ncol=4,
               frameon=False)
    fig.suptitle("U74 model with and without L1 caches (32 KiB, 64-byte lines;\nmiss penalty "
                 "20 cycles: an assumption)")  # fmt: skip
    return save(fig, out_stem)


@styled()
def plot(df, out_stem: Path) -> list[Path]:
    """Log-log plot of estimated cycles vs buffer count, one panel per core model (U74, C906).

    One line per planner (colour and marker from :func:`experiments.plots.distinct_styles`) over
    the random problems; the ONNX models are hollow markers of the planner's colour. Axes: buffers
    ``n`` (count) and estimated cycles of the allocator core. Writes ``out_stem`` ``.png`` and
    ``.pdf`` with :func:`experiments.plots.save` (byte-identical for the same ``df``); returns the
    paths."""
    import matplotlib.pyplot as plt
    import matplotlib.ticker as mticker

    from experiments.plots import distinct_styles, save

    fig, axes = plt.subplots(1, 2, figsize=(7.16, 4.4), sharey=True, layout="constrained")
    groups = list(df.groupby("planner", sort=False))
    styles = distinct_styles(len(groups))
    for ax, (col, title) in zip(
        axes,
        [("rv64_cycles_u74", "SiFive U74 model (LLVM SiFive7; caches: penalty assumed)"),
         ("rv64_cycles_c906", "T-Head C906 model (latencies, caches: assumptions)")],
        strict=True,
    ):
        for (name, g), (colour, marker) in zip(groups, styles, strict=True):
            r = g[g["kind"] == "random"].sort_values("n")
            ax.plot(r["n"], r[col], "-", marker=marker, color=colour, ms=4, lw=1.2,
                    label=f"{name} (random)")
            o = g[g["kind"] == "onnx"]
            if len(o):  # filled, without a line (hollow markers mean "not proved" elsewhere)
                ax.scatter(o["n"], o[col], marker=marker, facecolor=colour, edgecolor="black",
                           s=26, linewidth=0.6, label=f"{name} (ONNX models)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(mticker.StrMethodFormatter("{x:,.0f}"))
        ax.set_xlabel("buffers n (count, log scale)")
        ax.set_title(title.replace(" (", "\n("))
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("estimated cycles of the allocator core\n(log scale)")
    fig.legend(*axes[1].get_legend_handles_labels(), loc="outside lower center", ncol=3,
               frameon=False, title="lines: random problems; black-edged points without a line: "
                                    "ONNX models")
    fig.suptitle("Allocator cores on RV64 (emulated machine code, in-order core models)")
    return save(fig, out_stem)


def main(argv=None) -> int:
    """Command-line entry point (see module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench_rv64.csv")
    ap.add_argument("--figure", default="results/figures/rv64_cycles_vs_buffers")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-onnx", action="store_true", help="random problems only")
    ap.add_argument("--rvsim-max-n", type=int, default=700,
                    help="rvsim cross-check only for workloads with at most this many buffers "
                         "(-1: never; needs the rvsim extra)")
    ap.add_argument("--figures-only", action="store_true",
                    help="redraw the figures from the --out CSV without rerunning the benchmark")
    ap.add_argument("--scale-sizes", default=",".join(map(str, SCALE_SIZES)),
                    help="sizes of the scaling rows (one subprocess per estimate; '' for none)")
    ap.add_argument("--mca-out", default="results/bench_rv64_mca.csv")
    ap.add_argument("--caches-figure", default="results/figures/rv64_cycles_caches")
    ap.add_argument("--timing-only", action="store_true",
                    help="write only the --out CSV (no llvm-mca check, figures or report): for "
                         "rerunning rows to time them on a quiet machine")
    ap.add_argument("--one", nargs=2, metavar=("CORE", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.one[0], int(args.one[1]), args.seed)))
        return 0
    if args.figures_only:
        import pandas as pd

        if not Path(args.out).is_file():
            ap.error(f"--figures-only: {args.out} does not exist; run the benchmark first")
        df = pd.read_csv(args.out)
        paths = plot(df, Path(args.figure)) + plot_caches(df, Path(args.caches_figure))
        print(f"wrote {', '.join(map(str, paths))}", file=sys.stderr)
        return 0
    from experiments import rv64

    ok, reason = rv64.available()
    if not ok:
        print(f"bench_rv64: {reason}", file=sys.stderr)
        return 2
    import pandas as pd

    print("bench_rv64: divider charged at its worst case (U74: 66 cycles div/rem, 34 divw/remw) "
          "for any operands: no published formula of the operands", file=sys.stderr)
    t_run = time.perf_counter()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    df = run(sizes, args.seed, onnx=not args.no_onnx, rvsim_max_n=args.rvsim_max_n)
    scale = tuple(int(s) for s in args.scale_sizes.split(",") if s)
    if scale:
        df = pd.concat([df, pd.DataFrame(run_scaling(scale, args.seed))], ignore_index=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(out)
    if args.timing_only:
        print(f"wrote {out} ({len(df)} rows)", file=sys.stderr)
        return 0 if df["offsets_match"].all() else 1
    mca_df = run_mca(Path(args.mca_out), args.seed)
    paths = plot(df, Path(args.figure)) + plot_caches(df, Path(args.caches_figure))
    print(f"wrote {out} ({len(df)} rows), {', '.join(map(str, paths))}", file=sys.stderr)
    from experiments.report.rv64 import write_rv64_report

    quiet = out.with_name("bench_rv64_n8192_quiet.csv")
    md = write_rv64_report(out, Path(args.mca_out) if mca_df is not None else None,
                           out.with_suffix(".md"), quiet if quiet.is_file() and quiet != out else None,
                           run_seconds=time.perf_counter() - t_run,
                           figures=[p for p in paths if p.suffix == ".png"])
    print(f"wrote {md}", file=sys.stderr)
    if not df["offsets_match"].all():
        bad = df.loc[~df["offsets_match"], ["workload", "planner"]].values.tolist()
        print(f"bench_rv64: emulated offsets differ from Python for {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
