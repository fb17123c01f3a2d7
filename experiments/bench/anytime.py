"""Benchmark of the anytime planners -> ``results/bench_anytime.csv`` and a figure.

Planners: ``local_search``, ``telamalloc`` and ``lns_cpsat`` (the first two starting from the best
greedy plan, ``lns_cpsat`` from TelaMalloc's up to 4,000 buffers, each improving it until its work
budget for the time limit is spent or the time limit bites), with ``greedy_by_size`` as the
baseline row and, on the chain problem, ``cpsat`` as the exact reference. Problems and time limits (seconds):

* MiniMalloc's challenging problems A-F (``../shared/benchmarks/minimalloc``), 5 s each;
* ``somas_pangu_2.6B`` (18,692 buffers, ``../shared/benchmarks/idealloc``), 30 s;
* ``chain``: :func:`chain_problem`, 5 s.

Both shared sets are skipped with a message when absent. The targets, checked in the printed
summary: every problem of A-F at most 1.05 x the lower bound within 5 s, pangu at most 1.002 x
within 30 s, the chain at its lower bound.

One row per run (``arena``, ``lower_bound``, ``best_bound`` in bytes, ``seconds`` wall clock):

``problem, n_buffers, planner, time_limit, seconds, arena, lower_bound, ratio, best_bound,
status, trajectory, stopped_by, load``

``trajectory`` is the planner's ``plan.info["trajectory"]`` as JSON, a list of ``[seconds,
arena]`` pairs (one pair for the one-shot planners); ``stopped_by`` is the planner's
``info["stopped_by"]`` (empty for the one-shot ones: ``time_limit`` says the wall clock cut the
run, so its arena depends on the load), ``load`` the machine's 1-minute load average when the
run began (``os.getloadavg``). The figure
``results/figures/bench_anytime.{png,pdf}`` draws arena / lower bound against seconds from these
records (one panel per problem), without re-planning. Timings depend on the machine's load; the
arenas do not unless a planner's ``stopped_by`` is ``time_limit`` (their default budgets count
work, scaled by the time limit, and the wall clock is only the outer stop), which the printed line
shows.

Determinism check (``--determinism N``): the anytime planners budget their searches by work
(placements, moves, rounds, CP-SAT deterministic time), the wall clock being only the outer stop.
:func:`determinism_check` plans ``N`` seeded random problems with each planner and a work budget
(:data:`WORK_BUDGETS`) twice, once on the real clock and once on a clock running ``factor`` times
faster (:func:`slowed_clock`: what a machine ``factor`` times slower or more loaded sees), and
counts the runs whose offsets differ while neither run reports ``stopped_by == "time_limit"``
(any wall-clock decision inside a search shows as such a difference); it writes one row per run
and exits 1 on a difference. Nothing is written under ``results/`` unless ``--det-out`` says so.

Usage::

    python -m experiments.bench.anytime --out results/bench_anytime.csv
    python -m experiments.bench.anytime --problems A,chain --scale 0.2   # quick look
    python -m experiments.bench.anytime --determinism 200 --seed 0       # soak: 0 differences
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
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
    "WORK_BUDGETS",
    "slowed_clock",
    "determinism_problem",
    "determinism_check",
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
    "stopped_by",
    "load",
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


#: Work budgets of :func:`determinism_check`: every stop counts work; the time limit (seconds,
#: real) is far above what the budget takes, so only a wall-clock decision inside the search can
#: make the slowed run differ.
WORK_BUDGETS = {
    "local_search": {"max_iters": 300, "time_limit": 1000.0},
    "telamalloc": {"max_nodes": 30_000, "time_limit": 1000.0},
    "lns_cpsat": {"start_nodes": 3_000, "max_rounds": 4, "time_limit": 1000.0},
}

#: Modules whose ``time`` :func:`slowed_clock` replaces (the anytime planners' clocks).
CLOCKED_MODULES = ("planners.local_search", "planners.telamalloc", "planners.lns_cpsat")


class _ScaledTime:
    """The :mod:`time` module with ``perf_counter`` running ``factor`` times faster from now."""

    def __init__(self, factor: float) -> None:
        self.factor = float(factor)
        self.t0 = time.perf_counter()

    def perf_counter(self) -> float:
        return self.t0 + (time.perf_counter() - self.t0) * self.factor

    def __getattr__(self, name):
        return getattr(time, name)


@contextlib.contextmanager
def slowed_clock(factor: float):
    """Within the block, the anytime planners (:data:`CLOCKED_MODULES`) see a clock running
    ``factor`` times faster than the real one: every wall-clock limit bites ``factor`` times
    sooner in real seconds, as on a machine ``factor`` times slower. The compiled TelaMalloc
    probe gets its seconds left from that clock, and a CP-SAT solve's ``max_time_in_seconds``
    (CP-SAT keeps its own clock) is divided by ``factor`` for the solve: within a wall limit a
    slower machine does ``factor`` times less work."""
    import importlib

    from ortools.sat.python import cp_model

    mods = [importlib.import_module(m) for m in CLOCKED_MODULES]
    saved = [m.time for m in mods]
    fake = _ScaledTime(factor)
    solve = cp_model.CpSolver.Solve

    def scaled_solve(self, *args, **kwargs):
        prm = self.parameters
        limit = prm.max_time_in_seconds
        prm.max_time_in_seconds = max(1e-3, limit / fake.factor)
        try:
            return solve(self, *args, **kwargs)
        finally:
            prm.max_time_in_seconds = limit

    try:
        for m in mods:
            m.time = fake
        cp_model.CpSolver.Solve = scaled_solve
        yield fake
    finally:
        cp_model.CpSolver.Solve = solve
        for m, t in zip(mods, saved, strict=True):
            m.time = t


def determinism_problem(seed: int) -> Problem:
    """The seeded random problem ``seed`` of :func:`determinism_check`: 30-90 buffers,
    lognormal sizes (bytes) with alignments 1 or 64 and a mean lifetime of 6-20 steps (half-open,
    schedule steps), so most greedy plans are above the lower bound and the searches run."""
    from planners.random_problems import random_problem

    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 91))
    return random_problem(n, seed=seed, mean_lifetime=float(rng.integers(6, 21)),
                          alignment=int(rng.choice([1, 64])), name=f"det{seed}")


def determinism_check(seeds, factor: float = 50.0, planners=ANYTIME, out: Path | None = None,
                      rows: list | None = None) -> tuple[int, int]:
    """Plan :func:`determinism_problem` for every seed with every planner of ``planners`` and its
    :data:`WORK_BUDGETS` twice, on the real clock and under :func:`slowed_clock` ``(factor)``.

    Returns ``(runs, differences)``: a difference is a pair whose offsets differ while neither
    reports ``info["stopped_by"] == "time_limit"``; a pair where one does is counted as a run but
    not compared (the outer stop bit, as it may). With ``out`` one CSV row per pair: ``seed,
    planner, n_buffers, arena, arena_slowed, stopped_by, stopped_by_slowed, same``, and the
    same rows appended to ``rows`` when given (dicts)."""
    runs = diffs = 0
    rows = [] if rows is None else rows
    for seed in seeds:
        p = determinism_problem(int(seed))
        for name in planners:
            params = WORK_BUDGETS[name]
            a = get_planner(name, **params).plan(p)
            with slowed_clock(factor):
                b = get_planner(name, **params).plan(p)
            sa, sb = a.info.get("stopped_by"), b.info.get("stopped_by")
            same = a.offsets.tolist() == b.offsets.tolist()
            runs += 1
            if not same and "time_limit" not in (sa, sb):
                diffs += 1
                print(f"seed {seed} {name}: arena {a.arena_size} ({sa}) vs {b.arena_size} ({sb}) "
                      f"under a {factor:g}x slower clock", file=sys.stderr)
            rows.append({"seed": seed, "planner": name, "n_buffers": p.n, "arena": a.arena_size,
                         "arena_slowed": b.arena_size, "stopped_by": sa,
                         "stopped_by_slowed": sb, "same": same})
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["seed"])
            w.writeheader()
            w.writerows(rows)
    return runs, diffs


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
                load = os.getloadavg()[0]
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
                    "stopped_by": pl.info.get("stopped_by", ""),
                    "load": round(load, 2),
                }
                w.writerow(row)
                fh.flush()
                rows.append(row)
                print(f"{label:6s} {name:15s} {row['ratio']:.4f}  {secs:6.2f} s  {pl.status} "
                      f"{row['stopped_by']}  load {row['load']}")
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
    """Command-line entry (``python -m experiments.bench.anytime --help``); returns 0, or 1 when
    ``--determinism`` finds a difference."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench_anytime.csv"))
    ap.add_argument("--figure", type=Path, default=Path("results/figures/bench_anytime"))
    ap.add_argument("--minimalloc-dir", type=Path, default=DEFAULT_MINIMALLOC)
    ap.add_argument("--idealloc-dir", type=Path, default=DEFAULT_IDEALLOC)
    ap.add_argument("--problems", default="", help="comma list (A,...,F,pangu,chain)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every time limit")
    ap.add_argument("--determinism", type=int, default=0, metavar="N",
                    help="run the determinism check on N seeded problems instead (exit 1 on a "
                         "difference)")
    ap.add_argument("--seed", type=int, default=0, help="first seed of --determinism")
    ap.add_argument("--factor", type=float, default=50.0, help="clock speed-up of --determinism")
    ap.add_argument("--det-out", type=Path, default=None, help="CSV of the --determinism runs")
    a = ap.parse_args(argv)
    if a.determinism:
        runs, diffs = determinism_check(range(a.seed, a.seed + a.determinism), a.factor,
                                        out=a.det_out)
        print(f"determinism: {runs} runs, {diffs} differ under a {a.factor:g}x slower clock")
        return 1 if diffs else 0
    probs = load_problems(a.minimalloc_dir, a.idealloc_dir, [s for s in a.problems.split(",") if s])
    rows = run(a.out, probs, a.scale)
    for line in summary(rows, {label: group for label, group, _ in probs}):
        print(line)
    plot(a.out, a.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
