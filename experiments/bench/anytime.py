"""Benchmark of the anytime planners -> ``results/bench_anytime.csv`` and a figure.

Planners: ``local_search``, ``telamalloc`` and ``lns_cpsat`` (each starting from the best greedy
plan and improving it until its time limit), with ``greedy_by_size`` as the baseline row and, on
the chain problem, ``cpsat`` as the exact reference. Problems and time limits (seconds):

* MiniMalloc's challenging problems A-F (``../shared/benchmarks/minimalloc``), 5 s each;
* ``somas_pangu_2.6B`` (18,692 buffers, ``../shared/benchmarks/idealloc``), 30 s;
* ``chain``: :func:`chain_problem`, 5 s.

Both shared sets are skipped with a message when absent. The targets, checked in the printed
summary: every problem of A-F at most 1.05 x the lower bound within 5 s, pangu at most 1.002 x
within 30 s, the chain at its lower bound.

One row per run (``arena``, ``lower_bound``, ``best_bound`` in bytes, ``seconds`` wall clock):

``problem, n_buffers, planner, time_limit, seconds, arena, lower_bound, ratio, best_bound,
status, trajectory``

``trajectory`` is the planner's ``plan.info["trajectory"]`` as JSON, a list of ``[seconds,
arena]`` pairs (one pair for the one-shot planners). The figure
``results/figures/bench_anytime.{png,pdf}`` draws arena / lower bound against seconds from these
records (one panel per problem), without re-planning. Timings depend on the machine's load: the
anytime planners stop on wall-clock limits, so their arenas may differ between runs.

Usage::

    python -m experiments.bench.anytime --out results/bench_anytime.csv
    python -m experiments.bench.anytime --problems A,chain --scale 0.2   # quick look
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

from experiments.plots.style import styled
from planners import Problem, get_planner, lower_bound, read_minimalloc_csv

__all__ = [
    "COLUMNS",
    "ANYTIME",
    "TARGETS",
    "CHAIN_GADGET",
    "chain_problem",
    "load_problems",
    "run",
    "plot",
    "main",
]

COLUMNS = [
    "problem",
    "n_buffers",
    "planner",
    "time_limit",
    "seconds",
    "arena",
    "lower_bound",
    "ratio",
    "best_bound",
    "status",
    "trajectory",
]

#: The anytime planners measured (registry names).
ANYTIME = ("local_search", "telamalloc", "lns_cpsat")

#: Target ratio arena / lower bound per problem group, and the time limit (seconds) it holds for.
TARGETS = {"minimalloc": (1.05, 5.0), "pangu": (1.002, 30.0), "chain": (1.0, 5.0)}

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MINIMALLOC = ROOT.parent / "shared" / "benchmarks" / "minimalloc"
DEFAULT_IDEALLOC = ROOT.parent / "shared" / "benchmarks" / "idealloc"

#: One gadget of :func:`chain_problem`: ``(start, end, size)`` with half-open lifetimes (steps)
#: and sizes in units. Its lower bound (max live units) is 12, reached by the layout
#: ``[4, 0, 4, 8, 8, 0]`` (offsets in units), while every order of
#: :data:`planners.greedy.ORDERS` with either fit ends at 16 units or above.
CHAIN_GADGET = ((0, 1, 4), (4, 5, 8), (1, 2, 8), (5, 7, 1), (0, 3, 4), (2, 5, 4))
#: Steps one gadget spans.
CHAIN_SPAN = 7


def chain_problem(links: int = 64, unit: int = 1024, name: str = "chain") -> Problem:
    """A chain of ``links`` copies of :data:`CHAIN_GADGET`, one after the other in time.

    Copy ``k`` occupies steps ``[7k, 7k + 7)`` and its buffers are ``unit`` times the gadget's
    sizes (bytes), so copies never meet and the problem decomposes into ``links`` identical small
    ones: the optimum is the gadget's, which is its lower bound (12 units), and CP-SAT proves it
    in milliseconds. A greedy order places every copy the same way (the copies differ only by a
    shift in time, which no order of :data:`planners.greedy.ORDERS` can tell apart within a
    copy), so every greedy plan is 4/3 x the lower bound or worse. The gadget came from a seeded
    random search over small problems for the largest smallest greedy ratio among problems whose
    optimum is the lower bound; the chain keeps the problem in the size range where the planners'
    per-buffer costs show.

    Returns
    -------
    Problem
        ``6 * links`` buffers, half-open lifetimes in steps, sizes in bytes.
    """
    if links < 1 or unit < 1:
        raise ValueError(f"chain_problem: links and unit must be >= 1, got {links}, {unit}")
    g = np.asarray(CHAIN_GADGET, np.int64)
    shift = (np.arange(links, dtype=np.int64) * CHAIN_SPAN)[:, None]
    starts = (g[:, 0][None, :] + shift).reshape(-1)
    ends = (g[:, 1][None, :] + shift).reshape(-1)
    sizes = np.tile(g[:, 2] * unit, links)
    return Problem.from_arrays(starts, ends, sizes, name=name)


def load_problems(minimalloc_dir: Path, idealloc_dir: Path, only: list[str] | None = None):
    """``[(label, group, problem)]`` for the benchmark (see the module docstring)."""
    out = []
    for letter in "ABCDEF":
        path = minimalloc_dir / f"{letter}.1048576.csv"
        if path.exists():
            out.append((letter, "minimalloc", read_minimalloc_csv(path).with_capacity(None)))
        else:
            print(f"skipping MiniMalloc {letter}: {path} is absent", file=sys.stderr)
    pangu = idealloc_dir / "somas_pangu_2.6B.csv"
    if pangu.exists():
        out.append(("pangu", "pangu", read_minimalloc_csv(pangu).with_capacity(None)))
    else:
        print(f"skipping pangu: {pangu} is absent", file=sys.stderr)
    out.append(("chain", "chain", chain_problem()))
    if only:
        out = [t for t in out if t[0] in only]
    return out


def run(out: Path, problems, scale: float = 1.0) -> list[dict]:
    """Run every planner on every problem, appending rows to ``out`` (CSV) as they finish."""
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for label, group, p in problems:
            limit = TARGETS[group][1] * scale
            names = ["greedy_by_size", *ANYTIME] + (["cpsat"] if group == "chain" else [])
            lb = lower_bound(p)
            for name in names:
                params = {"time_limit": limit} if name in ANYTIME else {}
                if name == "cpsat":
                    params = {"time_limit": limit, "workers": 1}
                t0 = time.perf_counter()
                pl = get_planner(name, **params).plan(p)
                secs = time.perf_counter() - t0
                traj = pl.info.get("trajectory") or [(round(secs, 6), pl.arena_size)]
                row = {
                    "problem": label,
                    "n_buffers": p.n,
                    "planner": name,
                    "time_limit": limit if name in ANYTIME or name == "cpsat" else "",
                    "seconds": round(secs, 4),
                    "arena": pl.arena_size,
                    "lower_bound": lb,
                    "ratio": round(pl.arena_size / lb, 6),
                    "best_bound": pl.best_bound,
                    "status": pl.status,
                    "trajectory": json.dumps([[float(s), int(a)] for s, a in traj]),
                }
                w.writerow(row)
                fh.flush()
                rows.append(row)
                print(f"{label:6s} {name:15s} {row['ratio']:.4f}  {secs:6.2f} s  {pl.status}")
    return rows


def summary(rows: list[dict], groups: dict[str, str]) -> list[str]:
    """One line per problem: the best anytime ratio against its target."""
    lines = []
    for label, group in groups.items():
        mine = [r for r in rows if r["problem"] == label and r["planner"] in ANYTIME]
        if not mine:
            continue
        best = min(mine, key=lambda r: r["ratio"])
        target = TARGETS[group][0]
        ok = best["ratio"] <= target + 1e-12
        lines.append(
            f"{label}: best {best['planner']} {best['ratio']:.4f} x lower bound, target "
            f"{target} -> {'met' if ok else 'missed by %.4f' % (best['ratio'] - target)}"
        )
    return lines


@styled()
def plot(csv_path: Path, figure: Path) -> list[Path]:
    """Draw arena / lower bound against seconds per problem from the records in ``csv_path``
    (one double column, 7.16 in, wide)."""
    import matplotlib.pyplot as plt

    from experiments.plots import distinct_styles, save

    with csv_path.open() as fh:
        rows = list(csv.DictReader(fh))
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    planners = list(dict.fromkeys(r["planner"] for r in rows))
    styles = dict(zip(planners, distinct_styles(len(planners))))
    cols = min(4, len(problems))
    nrows = -(-len(problems) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(7.16, 1.9 * nrows + 0.5), squeeze=False,
                             layout="constrained")
    for ax, prob in zip(axes.flat, problems):
        for r in (r for r in rows if r["problem"] == prob):
            lb = int(r["lower_bound"])
            pts = json.loads(r["trajectory"])
            end = float(r["seconds"])
            xs = [max(s, 1e-3) for s, _ in pts] + [max(end, 1e-3)]
            ys = [a / lb for _, a in pts] + [pts[-1][1] / lb]
            colour, marker = styles[r["planner"]]
            ax.step(xs, ys, where="post", color=colour, marker=marker, markersize=3,
                    label=r["planner"])
        ax.set_xscale("log")
        ax.set_title(prob)
        ax.set_xlabel("seconds (log scale)")
        ax.set_ylabel("arena / lower bound")
        ax.axhline(1.0, color="0.6", linewidth=0.6)
    for ax in list(axes.flat)[len(problems) :]:
        ax.axis("off")
    seen: dict = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    labels, handles = list(seen), list(seen.values())
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 5),
               frameon=False)
    return save(fig, figure)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench.anytime --help``); returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench_anytime.csv"))
    ap.add_argument("--figure", type=Path, default=Path("results/figures/bench_anytime"))
    ap.add_argument("--minimalloc-dir", type=Path, default=DEFAULT_MINIMALLOC)
    ap.add_argument("--idealloc-dir", type=Path, default=DEFAULT_IDEALLOC)
    ap.add_argument("--problems", default="", help="comma list (A,...,F,pangu,chain)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every time limit")
    a = ap.parse_args(argv)
    probs = load_problems(a.minimalloc_dir, a.idealloc_dir, [s for s in a.problems.split(",") if s])
    rows = run(a.out, probs, a.scale)
    for line in summary(rows, {label: group for label, group, _ in probs}):
        print(line)
    plot(a.out, a.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
