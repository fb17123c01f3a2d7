"""Planners on problems whose optimum is known -> ``results/bench_known.csv`` and a figure.

Every other ratio memplan reports is to the lower bound (max live bytes), which lies below the
optimum on some problems (MiniMalloc C, D, J), so a ratio of 1.042 does not say how far a plan is
from the best one. Here the problems are perfect tilings of a ``width x horizon`` strip
(:mod:`planners.known_optimum`: ``guillotine`` and the non-guillotine ``pinwheel``), whose
optimum arena is proved to be ``width`` (module docstring there), so ``arena / optimum`` is the
true distance from the optimum. On these problems the lower bound equals the optimum (every step
has ``width`` live bytes), so ``lower_bound / optimum`` is 1 by construction; the column is
written to show it, not assumed.

Planners (:data:`PLANNERS`, names of :data:`planners.registry.PLANNERS`): ``naive`` (the
reference: no reuse), ``greedy_by_size``, ``greedy_by_breadth``, ``best_fit``, ``choose_best``,
``telamalloc`` (:func:`time_limit_for`: 5 s up to 1,000 buffers, then 5 s per decade more),
``exact_search`` and ``cpsat`` (5 s; not run above :data:`EXACT_MAX_BUFFERS` buffers). ``cpsat``
minimises on one CP-SAT worker; ``exact_search`` is a decision solver (MiniMalloc's setting) and
is asked whether the problem fits the known optimum, so its row says whether it finds an
optimal plan within the limit (status ``timeout``: no plan, empty ``arena``). Every plan is
re-checked by :func:`planners.check_plan`, and an arena below the proved optimum stops the run
with an error (it would mean a broken proof or validator).

omnimalloc's allocators run beside them when omnimalloc is installed (:data:`PEER_PLANNERS`,
through :func:`experiments.bench.peers.omnimalloc_offsets`: ``omnimalloc_supermalloc`` with the
same time limit, ``omnimalloc_omni``); without it they are left out with a message.

Problems: for each kind, each size of ``--sizes`` (default 10, 100, 1,000, 10**4, 10**5 buffers)
and each of ``--seeds`` seeds (default 2), :func:`planners.known_optimum.known_optimum_problem`
with a 1 MiB strip of ``max(n, 16)`` steps. With omnimalloc installed, its own generators too
(:func:`omnimalloc_problem`, kinds ``omnimalloc_tiling`` and ``omnimalloc_pinwheel``, up to
:data:`OMNIMALLOC_MAX_BUFFERS` buffers: they take ``O(n^2)``, 7.6 s at 4,000): their
construction plan is checked by :func:`planners.check_plan` at its claimed optimum, and the
claim is accepted only where memplan's lower bound equals it (the same proof).

One row per (problem, planner):

``kind, n_buffers, seed, planner, time_limit, seconds, arena, optimum, lower_bound, ratio,
bound_ratio, status, stopped_by, load``

``arena``, ``optimum``, ``lower_bound`` in bytes (``arena`` and ``ratio`` empty for a run without
a plan); ``ratio = arena / optimum``,
``bound_ratio = lower_bound / optimum``; ``time_limit`` the planner's limit in seconds (empty for
the one-shot planners), ``seconds`` the wall clock of ``plan()``, ``stopped_by`` the planner's
``info["stopped_by"]``, ``load`` the 1-minute load average at its start. The figure
``results/figures/bench_known.{png,pdf}`` (drawn from the CSV alone by :func:`plot`) shows, per
kind, ``arena / optimum`` and the seconds against the number of buffers (``naive`` in the CSV
only).

Differential check (``--differential N``): ``N`` small generated problems (1-6 buffers,
strips of 3-24 bytes by 3-10 steps), each solved by :func:`brute_force_optimum`, an exhaustive
search written independently of the generator; counts the problems where it disagrees with the
claimed optimum, the lower bound differs from it, the known plan fails :func:`check_plan`, or a
greedy planner's arena is below it. Exit 1 on any. ``--peer-differential N``
(:func:`peer_differential`): omnimalloc's validator on the known plans, and omnimalloc's plans and
its ``proved_optimal`` claims against the known optimum.

Usage::

    python -m experiments.bench.known                                # the full run
    python -m experiments.bench.known --sizes 10,100 --seeds 1 --out /tmp/k.csv   # quick look
    python -m experiments.bench.known --differential 2000 --seed 0   # soak: 0 failed
    python -m experiments.bench.known --peer-differential 200 --seed 0   # omnimalloc: 0 failed
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from experiments.plots.style import styled
from planners import ProblemError, check_plan, get_planner, lower_bound
from planners.known_optimum import KINDS, known_optimum_problem
from planners.registry import PLANNERS as REGISTRY

__all__ = ["COLUMNS", "PLANNERS", "PEER_PLANNERS", "OMNIMALLOC_KINDS", "EXACT_MAX_BUFFERS",
           "SIZES", "time_limit_for", "omnimalloc_available", "omnimalloc_problem",
           "brute_force_optimum", "differential", "peer_differential", "run", "plot", "main"]

COLUMNS = ["kind", "n_buffers", "seed", "planner", "time_limit", "seconds", "arena", "optimum",
           "lower_bound", "ratio", "bound_ratio", "status", "stopped_by", "load"]

#: ``(registry name, timed, exact)``: whether the planner takes a time limit, and whether it is
#: one of the exact solvers run only up to :data:`EXACT_MAX_BUFFERS` buffers.
PLANNERS = [
    ("naive", False, False),
    ("greedy_by_size", False, False),
    ("greedy_by_breadth", False, False),
    ("best_fit", False, False),
    ("choose_best", False, False),
    ("telamalloc", True, False),
    ("exact_search", True, True),
    ("cpsat", True, True),
]
for _name, _, _ in PLANNERS:  # the names are the registry's, checked on import
    if _name not in REGISTRY:
        raise ImportError(f"bench known: {_name!r} is not in planners.registry.PLANNERS")

#: omnimalloc's peers, ``(peer name of experiments.bench.peers, timed)``, run when installed.
PEER_PLANNERS = [("omnimalloc_supermalloc", True), ("omnimalloc_omni", False)]

#: The kinds of omnimalloc's own generators (``omnimalloc.benchmark.sources``).
OMNIMALLOC_KINDS = ("omnimalloc_tiling", "omnimalloc_pinwheel")
#: Largest omnimalloc-generated problem (its cutting loop is quadratic).
OMNIMALLOC_MAX_BUFFERS = 1001

#: Reference rows left out of the figure (in the CSV only).
OFF_FIGURE = ("naive",)

#: Problems above this many buffers get no exact solver.
EXACT_MAX_BUFFERS = 1000
#: Default sizes (buffers) of the full run.
SIZES = (10, 100, 1000, 10**4, 10**5)
#: Base time limit (seconds) of the timed planners.
BASE_LIMIT = 5.0


def time_limit_for(n: int, base: float = BASE_LIMIT) -> float:
    """The time limit (seconds) for a problem of ``n`` buffers: ``base`` up to 1,000 buffers,
    then ``base`` more per decade (``10**4``: 2 x base, ``10**5``: 3 x base).

    >>> time_limit_for(100), time_limit_for(10**4), time_limit_for(10**5)
    (5.0, 10.0, 15.0)
    """
    return base * max(1.0, math.log10(max(n, 1)) - 2.0)


#: Statuses of a run that returned no plan (no arena to compare).
NO_PLAN = ("infeasible", "timeout", "skipped")


def _params(name: str, limit: float, optimum: int) -> dict:
    """The parameters of a timed planner: ``cpsat`` on one worker (two cores are shared),
    ``exact_search`` (a decision solver) asked whether the problem fits the known optimum."""
    if name == "cpsat":
        return {"time_limit": limit, "workers": 1}
    if name == "exact_search":
        return {"time_limit": limit, "capacity": optimum}
    return {"time_limit": limit}


def omnimalloc_available() -> bool:
    """Whether omnimalloc can be imported."""
    try:
        import omnimalloc  # noqa: F401
    except ImportError:
        return False
    return True


def omnimalloc_problem(kind: str, n: int, seed: int = 0):
    """A problem from omnimalloc's own generator (``TilingSource`` for ``omnimalloc_tiling``,
    ``PinwheelSource`` for ``omnimalloc_pinwheel``; defaults: 1 MiB by 2**20 steps, sizes of at
    least 1 KiB), as a :class:`planners.known_optimum.KnownOptimum`.

    ``n`` is rounded up to ``4k + 1`` for the pinwheel (each of its cuts adds four). Its ground
    truth (``get_ground_truth_pool``) becomes the known offsets, its ``get_known_optimum()`` the
    optimum (bytes). Raises ``ImportError`` without omnimalloc, and ``RuntimeError`` when the
    ground truth fails :func:`planners.check_plan` at that capacity or memplan's lower bound
    differs from the claim (so the claim would not be proved)."""
    from omnimalloc.benchmark.sources.pinwheel import PinwheelSource
    from omnimalloc.benchmark.sources.tiling import TilingSource

    from planners import Problem
    from planners.known_optimum import KnownOptimum

    if kind == "omnimalloc_pinwheel":
        n += (1 - n) % 4
        src = PinwheelSource(num_allocations=n, seed=seed)
    elif kind == "omnimalloc_tiling":
        src = TilingSource(num_allocations=n, seed=seed)
    else:
        raise ValueError(f"unknown omnimalloc kind {kind!r}; one of {OMNIMALLOC_KINDS}")
    allocs = src.get_ground_truth_pool().allocations
    claim = int(src.get_known_optimum())
    p = Problem.from_arrays([a.start for a in allocs], [a.end for a in allocs],
                            [a.size for a in allocs], name=f"{kind}-n{n}-s{seed}")
    offsets = np.array([a.offset for a in allocs], np.int64)
    try:
        check_plan(p, offsets, capacity=claim)
    except Exception as e:
        raise RuntimeError(f"{p.name}: omnimalloc's ground truth is not a plan within its "
                           f"optimum {claim}: {e}") from None
    if lower_bound(p) != claim:
        raise RuntimeError(f"{p.name}: lower bound {lower_bound(p)} != omnimalloc's optimum "
                           f"{claim}; the optimum is not proved")
    return KnownOptimum(p, claim, offsets, kind, claim, int(src.makespan), seed)


def brute_force_optimum(starts, ends, sizes) -> int:
    """The minimum arena (bytes) of the buffers ``[starts[i], ends[i])`` (steps, half-open) x
    ``sizes[i]`` (bytes), alignment 1, by exhaustive search; shares no code with the planners
    or the generators.

    Every order of the buffers is tried; each buffer goes at the lowest offset (0 or the top of
    a placed buffer live at the same time) where it overlaps no placed buffer live at the same
    time. Exact: ordering the buffers of an optimal plan by offset, this placement puts each one
    at or below its offset in that plan (induction: the placed buffers live with it end at or
    below its offset there), so some order reaches the optimum. ``O(n! n^2)``: for ``n <= 7``.

    Raises
    ------
    ValueError
        More than 8 buffers, mismatched lengths, or an empty lifetime.

    >>> brute_force_optimum([0, 1, 2], [2, 3, 4], [4, 8, 4])
    12
    """
    n = len(sizes)
    if not len(starts) == len(ends) == n:
        raise ValueError("brute_force_optimum: starts, ends and sizes differ in length")
    if n > 8:
        raise ValueError(f"brute_force_optimum: {n} buffers, at most 8")
    if any(e <= s for s, e in zip(starts, ends)):
        raise ValueError("brute_force_optimum: a lifetime [start, end) is empty")
    meet = [[starts[i] < ends[j] and starts[j] < ends[i] for j in range(n)] for i in range(n)]
    best = sum(sizes)
    for order in itertools.permutations(range(n)):
        off: dict[int, int] = {}
        top = 0
        for i in order:
            near = [(off[j], off[j] + sizes[j]) for j in off if meet[i][j]]
            for x in sorted({0, *(hi for _, hi in near)}):
                if all(x + sizes[i] <= lo or x >= hi for lo, hi in near):
                    off[i] = x
                    break
            top = max(top, off[i] + sizes[i])
            if top >= best:
                break
        else:
            best = top
    return best


def differential(count: int, seed: int = 0, max_n: int = 6, verbose: bool = False):
    """Check the generators' claimed optimum on ``count`` small problems; returns
    ``(ran, failed, messages)``.

    Problem ``k`` uses the seed ``seed + k``: a kind (alternating), ``n`` uniform on
    ``[1, max_n]``, a strip of 3-24 bytes by 3-10 steps. A problem fails when
    :func:`brute_force_optimum` differs from ``optimum``, :func:`planners.lower_bound` differs
    from it, the known plan fails :func:`planners.check_plan` with ``capacity=optimum``, or
    ``greedy_by_size`` or ``best_fit`` returns an arena below it.
    """
    ran, failed, messages = 0, 0, []
    for k in range(count):
        rng = np.random.default_rng(seed + k)
        kind = KINDS[k % len(KINDS)]
        n = int(rng.integers(1, max_n + 1))
        width, horizon = int(rng.integers(3, 25)), int(rng.integers(3, 11))
        try:
            ko = known_optimum_problem(kind, n, seed + k, width=width, horizon=horizon)
        except ProblemError as e:  # a strip too small for n rectangles is not a failure
            if "cannot be cut" in str(e):
                continue
            raise
        p = ko.problem
        ran += 1
        bad = []
        oracle = brute_force_optimum(p.starts.tolist(), p.ends.tolist(), p.sizes.tolist())
        if oracle != ko.optimum:
            bad.append(f"brute force {oracle} != optimum {ko.optimum}")
        if lower_bound(p) != ko.optimum:
            bad.append(f"lower bound {lower_bound(p)} != optimum {ko.optimum}")
        try:
            check_plan(p, ko.offsets, capacity=ko.optimum)
        except Exception as e:  # the known plan must be valid
            bad.append(f"known plan invalid: {e}")
        for name in ("greedy_by_size", "best_fit"):
            arena = get_planner(name).plan(p).arena_size
            if arena < ko.optimum:
                bad.append(f"{name} arena {arena} < optimum {ko.optimum}")
        if bad:
            failed += 1
            messages.append(f"{p.name} (n={n}, {width} B x {horizon} steps): " + "; ".join(bad))
        if verbose:
            print(f"{p.name}: {'; '.join(bad) or 'ok'}", flush=True)
    return ran, failed, messages


def peer_differential(count: int, seed: int = 0, timeout: float = 0.3, verbose: bool = False):
    """omnimalloc against the known optima on ``count`` generated problems; returns ``(ran,
    failed, messages)``.

    Problem ``k`` (seed ``seed + k``): a kind (alternating), ``n`` uniform on ``[5, 120]``, a
    4 KiB by 200-step strip. A problem fails when omnimalloc's own validator
    (``omnimalloc.validate_allocation``) rejects the known plan, a plan of ``supermalloc`` (at
    ``timeout`` seconds) or ``omni`` fails :func:`planners.check_plan` or is below the optimum,
    or supermalloc says ``proved_optimal`` above the optimum. Raises ``ImportError`` without
    omnimalloc.
    """
    from omnimalloc import Allocation, validate_allocation

    from experiments.bench.peers import _planner

    ran, failed, messages = 0, 0, []
    for k in range(count):
        rng = np.random.default_rng(seed + k)
        kind = KINDS[k % len(KINDS)]
        n = int(rng.integers(5, 121))
        ko = known_optimum_problem(kind, n, seed + k, width=4096, horizon=200)
        p, bad = ko.problem, []
        ran += 1
        try:
            validate_allocation([Allocation(id=i, size=int(p.sizes[i]), start=int(p.starts[i]),
                                            end=int(p.ends[i]), offset=int(ko.offsets[i]))
                                 for i in range(p.n)])
        except ValueError as e:
            bad.append(f"omnimalloc rejects the known plan: {e}")
        for name, params in (("omnimalloc_supermalloc", {"timeout": timeout}),
                             ("omnimalloc_omni", {"timeout": None})):
            try:
                pl = _planner(name, params).plan(p)  # Planner.plan runs check_plan
            except Exception as e:  # an invalid plan or a crash of the peer
                bad.append(f"{name}: {type(e).__name__}: {e}")
                continue
            if pl.arena_size < ko.optimum:
                bad.append(f"{name}: arena {pl.arena_size} below the optimum {ko.optimum}")
            if pl.info.get("proved_optimal") and pl.arena_size != ko.optimum:
                bad.append(f"{name}: proved_optimal at {pl.arena_size} > optimum {ko.optimum}")
        if bad:
            failed += 1
            messages.append(f"{p.name}: " + "; ".join(bad))
        if verbose:
            print(f"{p.name}: {'; '.join(bad) or 'ok'}", flush=True)
    return ran, failed, messages


def run(out: Path, sizes=SIZES, kinds=KINDS, seeds: int = 2, scale: float = 1.0,
        planners=None) -> list[dict]:
    """Run every planner of ``planners`` (``(name, timed, exact)``; default :data:`PLANNERS`
    and, when omnimalloc is installed, :data:`PEER_PLANNERS`) on every generated problem,
    writing one row per pair to ``out`` (CSV) as it finishes; returns the rows.

    ``scale`` multiplies every time limit. Raises ``RuntimeError`` if a plan's arena is below
    the proved optimum (never expected: it would contradict the proof)."""
    from experiments.bench.peers import OMNIMALLOC, _planner

    if planners is None:
        planners = list(PLANNERS)
        if omnimalloc_available():
            planners += [(name, timed, False) for name, timed in PEER_PLANNERS]
        else:
            print("omnimalloc is not installed: its allocators are left out", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for kind in kinds:
            for n in sizes:
                if kind in OMNIMALLOC_KINDS and n > OMNIMALLOC_MAX_BUFFERS:
                    continue
                for s in range(seeds):
                    if kind in OMNIMALLOC_KINDS:
                        ko = omnimalloc_problem(kind, n, s)
                    else:
                        ko = known_optimum_problem(kind, n, s)
                    p, opt = ko.problem, ko.optimum
                    lb = lower_bound(p)
                    limit = time_limit_for(n) * scale
                    for name, timed, exact in planners:
                        if exact and n > EXACT_MAX_BUFFERS:
                            continue
                        if name in OMNIMALLOC:
                            params = {"timeout": limit if timed else None}
                        else:
                            params = _params(name, limit, opt) if timed else {}
                        load = os.getloadavg()[0]
                        t0 = time.perf_counter()
                        pl = _planner(name, params).plan(p)
                        secs = time.perf_counter() - t0
                        arena = ratio = ""
                        if pl.status not in NO_PLAN:
                            check_plan(p, pl.offsets)
                            arena = pl.arena_size
                            if arena < opt:
                                raise RuntimeError(f"{name} on {p.name}: arena {arena} below "
                                                   f"the proved optimum {opt}")
                            ratio = round(arena / opt, 6)
                        row = {"kind": kind, "n_buffers": p.n, "seed": s, "planner": name,
                               "time_limit": limit if timed else "", "seconds": round(secs, 4),
                               "arena": arena, "optimum": opt, "lower_bound": lb,
                               "ratio": ratio, "bound_ratio": round(lb / opt, 6),
                               "status": pl.status, "stopped_by": pl.info.get("stopped_by", ""),
                               "load": round(load, 2)}
                        w.writerow(row)
                        fh.flush()
                        rows.append(row)
                        shown = f"{ratio:.4f} x optimum" if ratio != "" else "no plan"
                        print(f"{kind:10s} {p.n:>6} s{s} {name:22s} {shown:>16s} {secs:7.2f} s  "
                              f"{pl.status} {row['stopped_by']}", flush=True)
    return rows


def summary(rows: list[dict]) -> list[str]:
    """Per kind and planner: the worst ``arena / optimum`` and the largest seconds."""
    lines = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        for name in dict.fromkeys(r["planner"] for r in rows):
            mine = [r for r in rows if r["kind"] == kind and r["planner"] == name]
            plans = [r for r in mine if r["ratio"] != ""]
            if len(plans) < len(mine):
                lines.append(f"{kind} {name}: {len(mine) - len(plans)} of {len(mine)} runs "
                             f"without a plan")
            if plans:
                worst = max(plans, key=lambda r: float(r["ratio"]))
                lines.append(f"{kind} {name}: worst {float(worst['ratio']):.4f} x optimum "
                             f"(n={worst['n_buffers']}), up to "
                             f"{max(float(r['seconds']) for r in mine):.3g} s")
    return lines


@styled()
def plot(csv_path: Path, figure: Path) -> list[Path]:
    """``arena / optimum`` (top) and seconds (bottom) against the number of buffers, one column
    per kind, one marker per planner (mean over seeds), from the rows of ``csv_path`` (one
    double column, 7.16 in, wide). The planners of :data:`OFF_FIGURE` (``naive``: 3-28 x the
    optimum, which would flatten the others) are in the CSV only."""
    import matplotlib.pyplot as plt

    from experiments.plots import distinct_styles, save

    with csv_path.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["planner"] not in OFF_FIGURE]
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    planners = list(dict.fromkeys(r["planner"] for r in rows))
    styles = dict(zip(planners, distinct_styles(len(planners))))
    fig, axes = plt.subplots(2, max(len(kinds), 1), figsize=(7.16, 5.2), squeeze=False,
                             sharex=True, layout="constrained")
    for j, kind in enumerate(kinds):
        top, bottom = axes[0, j], axes[1, j]
        for name in planners:
            mine = [r for r in rows if r["kind"] == kind and r["planner"] == name
                    and r["ratio"] != ""]
            ns = sorted({int(r["n_buffers"]) for r in mine})
            if not ns:
                continue
            ratio = [np.mean([float(r["ratio"]) for r in mine if int(r["n_buffers"]) == n])
                     for n in ns]
            secs = [max(np.mean([float(r["seconds"]) for r in mine
                                 if int(r["n_buffers"]) == n]), 1e-4) for n in ns]
            colour, marker = styles[name]
            top.plot(ns, ratio, color=colour, marker=marker, markersize=4, linewidth=0.8,
                     label=name)
            bottom.plot(ns, secs, color=colour, marker=marker, markersize=4, linewidth=0.8)
        top.axhline(1.0, color="0.6", linewidth=0.6)
        top.set_title(kind.replace("_", "\n", 1) if kind.startswith("omnimalloc") else kind)
        bottom.set_yscale("log")
        bottom.set_xlabel("buffers (log scale)")
        top.set_ylabel("arena / known optimum" if j == 0 else "arena / optimum")
        bottom.set_ylabel("seconds (wall, log scale)" if j == 0 else "seconds (log scale)")
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.grid(True, linewidth=0.3)
    seen: dict = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), loc="outside lower center",
               ncol=min(len(seen), 4), frameon=False)
    return save(fig, figure)


def _int_list(text: str) -> list[int]:
    return [int(float(s)) for s in text.split(",") if s]


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench.known --help``); returns 0, or 1 when
    ``--differential`` finds a failure."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench_known.csv"))
    ap.add_argument("--figure", type=Path, default=Path("results/figures/bench_known"))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="comma list of buffer counts (default 10,100,1000,10000,100000)")
    ap.add_argument("--kinds", default=",".join(KINDS + OMNIMALLOC_KINDS),
                    help="comma list of guillotine,pinwheel,omnimalloc_tiling,omnimalloc_pinwheel")
    ap.add_argument("--seeds", type=int, default=2, help="problems per kind and size")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every time limit")
    ap.add_argument("--differential", type=int, default=0, metavar="N",
                    help="check the claimed optimum of N small problems by brute force instead "
                         "(exit 1 on a failure)")
    ap.add_argument("--peer-differential", type=int, default=0, metavar="N",
                    help="check omnimalloc's plans and claims on N known-optimum problems "
                         "instead (exit 1 on a failure, 2 without omnimalloc)")
    ap.add_argument("--seed", type=int, default=0, help="first seed of the differential checks")
    a = ap.parse_args(argv)
    if a.peer_differential:
        if not omnimalloc_available():
            print("omnimalloc is not installed (pip install omnimalloc)", file=sys.stderr)
            return 2
        ran, failed, messages = peer_differential(a.peer_differential, a.seed)
        for m in messages:
            print(m)
        print(f"peer differential: {ran} problems, omnimalloc checked against the known "
              f"optimum, {failed} failed")
        return 1 if failed else 0
    if a.differential:
        ran, failed, messages = differential(a.differential, a.seed)
        for m in messages:
            print(m)
        print(f"differential: {ran} problems checked by brute force, {failed} failed")
        return 1 if failed else 0
    try:
        sizes = _int_list(a.sizes)
    except ValueError:
        ap.error(f"--sizes must be a comma list of integers, got {a.sizes!r}")
    kinds = [k for k in a.kinds.split(",") if k]
    bad = [k for k in kinds if k not in KINDS + OMNIMALLOC_KINDS]
    if bad or not kinds:
        ap.error(f"--kinds: unknown {bad}; one or more of {','.join(KINDS + OMNIMALLOC_KINDS)}")
    if not omnimalloc_available() and any(k in OMNIMALLOC_KINDS for k in kinds):
        print("omnimalloc is not installed: its kinds are left out", file=sys.stderr)
        kinds = [k for k in kinds if k not in OMNIMALLOC_KINDS]
    if a.seeds < 1 or a.scale <= 0 or not sizes or min(sizes) < 1:
        ap.error("--seeds and every size must be >= 1 and --scale > 0")
    t0 = time.perf_counter()
    rows = run(a.out, sizes, kinds, a.seeds, a.scale)
    for line in summary(rows):
        print(line)
    print(f"total {time.perf_counter() - t0:.0f} s wall")
    plot(a.out, a.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
