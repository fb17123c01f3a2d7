"""Proved lower bounds on the optimal arena stronger than max live bytes, and the best of them.

:func:`best_lower_bound` returns the largest of the bounds switched on, and which one gave it.
Every bound here is a theorem about every valid layout (bytes; half-open ``[start, end)``
lifetimes in schedule steps); none is an estimate. The bounds:

``max_live`` (:func:`planners.bounds.lower_bound`)
    The peak of live bytes, and the padded peak (sizes rounded up to the gcd of the alignments,
    less the largest rounding). Buffers live at the same step need disjoint address ranges.
``quantum`` (always applied)
    Every optimal arena is a multiple of :func:`planners.minimize.arena_quantum` ``g`` (the gcd of
    sizes and alignments above 1): pushing every buffer down to the top of a buffer below it (or
    0), rounded up to its alignment, never raises the arena, and in the pushed-down layout every
    offset and top is a multiple of ``g``. So any bound ``b`` rounds up to ``ceil(b / g) * g``.
``windows`` (:func:`window_bound`)
    Relaxation to a window of consecutive sections (:func:`planners.exact_search.sections`): keep
    only the buffers live in sections ``[k, k + w)`` and clip their lifetimes to the window. Any
    valid layout of the whole problem, restricted to those buffers, is a valid layout of the
    window problem (clipping lifetimes only removes conflicts), so the window's optimum is at most
    the whole problem's. A complete search (:class:`planners.exact_search.ExactSearch`) that
    proves the window infeasible at capacity ``c`` therefore proves every layout of the whole
    problem needs an arena ``> c``. A window of one section is the exact packing of one step's
    live buffers with their alignments (stronger than the padded peak when alignments differ);
    wider windows capture fragmentation: buffers that stay put while the live set around them
    changes, so sizes that cannot fill the gaps left between them exactly (subset-sum
    reachability of the gaps) force a higher arena. Widths are tried narrow first and, for each,
    the most loaded windows first; each window is probed at the current bound and, when proved
    infeasible, its optimum is searched upward (galloping, then bisection).
``subsets`` (:func:`subset_bound`)
    Relaxation to a subset of the buffers with their full lifetimes: the largest buffers (by size,
    ties by area), the top 25 %, 50 %, 75 % and finally all of them. Dropping buffers only removes
    conflicts, so a subset proved infeasible at capacity ``c`` proves the whole problem needs
    ``> c``; the last subset (all buffers) is the *decision bound*: a complete search that proves
    the whole problem infeasible at the bound ``c`` raises it to ``c + g``. A small subset is much
    easier to refute than the whole, but also less often infeasible.
``cpsat`` (:func:`cpsat_bound`, off by default)
    The best objective bound of OR-Tools CP-SAT minimising the arena of the
    :mod:`planners.cpsat` model (no-overlap-2D with its LP and cuts) within a time limit. Measured
    on MiniMalloc's D (213 buffers): 986,112 after 120 s with 2 workers, no more than max live
    (machine shared with other jobs); so it is off by default, for small or aligned problems.
``cpsat_windows`` (:func:`cpsat_window_bound`, off by default)
    The window relaxation of ``windows`` with CP-SAT as the decision procedure instead of
    :class:`~planners.exact_search.ExactSearch`: the capacity is FIXED at the current bound ``c``
    (mode ``"decide"``, no objective, one worker) and the window (or the whole problem, width
    ``None``) is scaled down by its own arena quantum ``q`` (sizes and alignments above 1 divided
    by ``q``, capacity ``c // q``). Scaling is exact: a layout fitting ``c`` pushes down to one
    whose offsets and tops are multiples of ``q`` (the ``quantum`` argument, applied to the
    window) and fitting ``c``, so dividing it by ``q`` fits ``c // q`` with every alignment
    kept (an offset multiple of ``a`` divided by ``q`` is a multiple of ``a / q`` when ``q``
    divides ``a``, and alignment 1 is no constraint); conversely multiplying a scaled layout by
    ``q`` fits ``c``. So CP-SAT's ``INFEASIBLE`` on the scaled window proves the window, hence
    the whole problem (window argument), needs ``> c``: the bound becomes ``c + g``, and is
    raised further by galloping/bisection probes. CP-SAT's no-overlap-2D propagation, LP and
    cuts refute differently from the section search (energetic reasoning over the time x
    address rectangles), so it may close windows the search times out on. ``UNKNOWN`` (time
    limit) proves nothing; every probe's status is recorded. Measured on MiniMalloc's D
    (results/bench_bounds.md): no gain over max live within the stated budgets.

Bounds considered and left out, with the reason (so that nobody adds them expecting a gain):

* **Cliques and pairs.** The interference graph of lifetimes is an interval graph; its maximal
  cliques are exactly the sets of buffers live at one step (Helly property of intervals), so the
  heaviest clique weighs the peak of live bytes: no clique bound exceeds ``max_live``.
* **Subset sums of a live set.** In a pushed-down layout with alignment 1 the arena is a sum of
  sizes along a chain of stacked buffers; but the live set at the peak step is itself a set of
  sizes summing to the peak, so "the smallest achievable sum ``>=`` the peak" is the peak. The
  subset-sum effect that does matter (gaps between buffers that stay in place) is what the
  window relaxation measures exactly.
* **LP relaxation of the big-M offsets model** (Sekiyama et al. 2018, :mod:`planners.milp_offsets`).
  With ordering variables relaxed to ``[0, 1]`` the point ``o_i = 0``, ``z_ij = 1/2`` is feasible
  whenever ``M >= 2 max size``, so the LP bound is the largest single size, never above
  ``max_live``. A time-indexed LP (one variable per buffer and offset) has ``n x capacity / g``
  columns (213 x 1024 for MiniMalloc's D before any cut) and its relaxation fractionally stacks the
  live sizes, again reaching only the peak without cuts; not implemented.

References
----------
M. D. Moffitt, "MiniMalloc: A Lightweight Memory Allocator for Hardware-Accelerated Machine
Learning", ASPLOS 2023 (sections, canonical solutions, the A-F benchmarks). M. C. Golumbic,
*Algorithmic Graph Theory and Perfect Graphs*, 1980 (cliques of interval graphs). Y. Sekiyama et
al., "Profile-guided memory optimization for deep neural networks", 2018 (big-M model).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bounds import arena_quantum, lower_bound
from .model import Problem

__all__ = [
    "LowerBound",
    "best_lower_bound",
    "window_bound",
    "window_problem",
    "subset_bound",
    "subset_problem",
    "cpsat_bound",
    "cpsat_window_bound",
    "scaled_problem",
    "BOUNDS",
]

#: The named bounds :func:`best_lower_bound` can switch on.
BOUNDS = ("max_live", "windows", "subsets", "cpsat", "cpsat_windows")


@dataclass
class LowerBound:
    """A proved lower bound on the optimal arena (bytes).

    value : the best bound (bytes), rounded up to the arena quantum.
    source : name of the bound that gave it (one of :data:`BOUNDS`; ties go to the earlier name).
    values : every bound computed, by name (bytes, before rounding to the quantum).
    info : details (``quantum``; for ``windows``: the window that gave the bound, probes, seconds).
    """

    value: int
    source: str
    values: dict[str, int] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


def _quantum(problem: Problem) -> int:
    return arena_quantum(problem)


def window_problem(problem: Problem, k: int, w: int, sec=None) -> tuple[Problem, np.ndarray]:
    """The relaxation of ``problem`` to sections ``[k, k + w)``.

    Returns the window problem (lifetimes in section indices, clipped to the window; sizes and
    alignments kept; no capacity) and the indices of the kept buffers. ``sec`` is a precomputed
    ``planners.exact_search.sections(starts, ends)`` of the non-zero-size buffers. Its optimum
    is at most ``problem``'s (module docstring).
    """
    from .exact_search import sections

    live = np.flatnonzero(problem.sizes > 0)
    if sec is None:
        sec = sections(problem.starts[live], problem.ends[live])
    _, slo, shi = sec
    m = (slo < k + w) & (shi > k)
    idx = live[m]
    s = np.maximum(slo[m], k) - k
    e = np.minimum(shi[m], k + w) - k
    sub = Problem.from_arrays(s, e, problem.sizes[idx], name=f"{problem.name}[{k}:{k + w}]")
    if (problem.alignments[idx] > 1).any():
        from dataclasses import replace

        bufs = [replace(b, alignment=int(a)) for b, a in zip(sub.buffers, problem.alignments[idx])]
        sub = Problem(bufs, name=sub.name)
    return sub, idx


def window_bound(
    problem: Problem,
    floor: int | None = None,
    ceiling: int | None = None,
    time_limit: float = 10.0,
    probe_time_limit: float = 2.0,
    widths: tuple[int, ...] = (1, 4, 8, 16, 24, 32, 48, 64),
    max_windows: int = 64,
) -> tuple[int, dict[str, Any]]:
    """Window relaxation bound (module docstring): the largest proved window optimum (bytes).

    Parameters
    ----------
    problem : Problem
    floor : int or None
        Start from this proved bound (default :func:`planners.bounds.lower_bound`).
    ceiling : int or None
        A known arena (e.g. a heuristic's): no probe at or above it (default: unbounded).
    time_limit : float
        Seconds for the whole call.
    probe_time_limit : float
        Seconds per window probe (one :class:`~planners.exact_search.ExactSearch` decision).
    widths : tuple of int
        Window widths in sections, tried in this order; width 1 is skipped when every alignment
        is 1 (the one-step packing then equals the live sum).
    max_windows : int
        Windows per width, the most loaded first (load: the highest live total in the window).

    Returns
    -------
    bound : int
        ``floor`` or more; every value returned is proved (a window proved infeasible at
        ``bound - 1``, rounded up to the quantum).
    info : dict
        ``window`` (``(k, w)`` that gave the bound, or None), ``probes`` (count), ``proofs``
        (windows proved infeasible), ``seconds``.

    Notes
    -----
    Each probe is a complete search on at most the buffers live in the window; a probe that
    times out proves nothing and is skipped. Deterministic up to time limits.
    """
    from .exact_search import sections

    t0 = time.perf_counter()
    g, bound = _start_bound(problem, floor)
    info: dict[str, Any] = {"window": None, "probes": 0, "proofs": 0}
    live = np.flatnonzero(problem.sizes > 0)
    if live.size == 0:
        info["seconds"] = 0.0
        return bound, info
    sec = sections(problem.starts[live], problem.ends[live])
    _, slo, shi = sec
    ns = int(shi.max())
    total = np.zeros(ns + 1, np.int64)
    np.add.at(total, slo, problem.sizes[live])
    np.add.at(total, shi, -problem.sizes[live])
    total = np.cumsum(total)[:ns]
    aligned = bool((problem.alignments[live] > 1).any())

    left, probe = _probes(t0, time_limit, probe_time_limit, info)

    seen: set[tuple[int, ...]] = set()
    for w in widths:
        if w == 1 and not aligned:
            continue
        w = min(int(w), ns)
        starts = range(0, ns - w + 1)
        load = [int(total[k : k + w].max()) for k in starts]
        order = sorted(starts, key=lambda k: (-load[k], k))[:max_windows]
        for k in order:
            if left() <= 1e-3:
                break
            sub, idx = window_problem(problem, k, w, sec)
            key = tuple(idx.tolist()) + (-1,) + tuple(sub.starts.tolist() + sub.ends.tolist())
            if key in seen:
                continue
            seen.add(key)
            if ceiling is not None and bound >= ceiling:
                break
            # is the window infeasible at the current bound? then search its optimum upward
            best = _raise_by_probes(probe, sub, bound, g, ceiling, left)
            if best > bound:  # the first probe proved infeasibility
                info["proofs"] += 1
                bound = best
                info["window"] = (int(k), int(w))
    info["seconds"] = round(time.perf_counter() - t0, 4)
    return bound, info




def _start_bound(problem: Problem, floor: int | None) -> tuple[int, int]:
    """``(quantum, bound)``: the problem's offset quantum (bytes, :func:`_quantum`) and the proved
    starting bound, ``floor`` (default max-live bytes) rounded up to that quantum."""
    g = _quantum(problem)
    lb = lower_bound(problem) if floor is None else int(floor)
    return g, -(-lb // g) * g

def _probes(t0: float, time_limit: float, probe_time_limit: float, info: dict[str, Any]):
    """``(left, probe)`` of a probing bound: ``left()`` is the seconds left of ``time_limit``
    since ``t0``; ``probe(sub, cap)`` is the status of one complete
    :class:`~planners.exact_search.ExactSearch` decision at capacity ``cap`` (bytes) within
    ``probe_time_limit`` (``"timeout"`` when no time is left), counted in ``info["probes"]``."""
    from .exact_search import ExactSearch

    def left() -> float:
        return time_limit - (time.perf_counter() - t0)

    def probe(sub: Problem, cap: int) -> str:
        info["probes"] += 1
        lim = min(probe_time_limit, left())
        st = "timeout" if lim <= 1e-3 else ExactSearch(capacity=cap, time_limit=lim).plan(sub).status
        counts = info.setdefault("statuses", {})
        counts[st] = counts.get(st, 0) + 1
        return st

    return left, probe

def _raise_by_probes(probe, sub: Problem, bound: int, g: int, ceiling: int | None, left) -> int:
    """Largest proved bound on ``sub``'s optimum from decision probes, starting at ``bound``.

    ``probe(sub, cap)`` returns a plan status. ``bound`` is probed first; a proof of
    infeasibility at ``c`` proves ``>= c + g``; then the optimum is searched upward (galloping,
    then bisection) below ``ceiling``. Returns ``bound`` when nothing is proved.
    """
    if ceiling is not None and bound >= ceiling:
        return bound
    if probe(sub, bound) != "infeasible":
        return bound
    # lo: smallest capacity not proved infeasible; hi: largest not known feasible
    lo, hi = bound + g, (ceiling - g if ceiling is not None else None)
    step = g
    while left() > 1e-3 and (hi is None or lo <= hi):
        c = lo + step - g if hi is None else (lo + hi) // 2 // g * g
        c = max(c, lo)
        st = probe(sub, c)
        if st == "infeasible":
            lo = c + g
            step *= 2
        elif st in ("optimal", "feasible"):
            hi = c - g
        else:
            break
    return lo  # proved: sub is infeasible at lo - g


def subset_problem(problem: Problem, idx: np.ndarray) -> Problem:
    """The buffers ``idx`` of ``problem`` with their lifetimes, sizes and alignments (no capacity).

    Its optimum is at most ``problem``'s (a valid layout of the whole restricts to a valid layout
    of the subset).
    """
    from dataclasses import replace

    bufs = problem.buffers
    keep = [replace(bufs[int(i)], alignment=int(problem.alignments[int(i)])) for i in idx]
    return Problem(keep, name=f"{problem.name}[{len(keep)} of {problem.n}]")


def subset_bound(
    problem: Problem,
    floor: int | None = None,
    ceiling: int | None = None,
    time_limit: float = 10.0,
    probe_time_limit: float = 2.0,
    fractions: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0),
) -> tuple[int, dict[str, Any]]:
    """Subset relaxation and decision bound (module docstring): the best proved subset optimum.

    Parameters
    ----------
    problem : Problem
    floor : int or None
        Start from this proved bound (default :func:`planners.bounds.lower_bound`).
    ceiling : int or None
        A known arena (bytes): no probe at or above it.
    time_limit, probe_time_limit : float
        Seconds for the whole call and per decision probe
        (:class:`~planners.exact_search.ExactSearch`, complete; a probe that times out proves
        nothing).
    fractions : tuple of float
        Shares of the non-zero-size buffers kept, largest first (by size, then area ``size x
        (end - start)``, then index); ``1.0`` is the whole problem.

    Returns
    -------
    bound : int
        ``floor`` (rounded up to the quantum) or more; proved.
    info : dict
        ``subset`` (the fraction that gave the bound, or None), ``probes``, ``seconds``.
    """
    t0 = time.perf_counter()
    g, bound = _start_bound(problem, floor)
    info: dict[str, Any] = {"subset": None, "probes": 0}
    live = np.flatnonzero(problem.sizes > 0)
    if live.size == 0:
        info["seconds"] = 0.0
        return bound, info
    area = problem.sizes[live] * (problem.ends[live] - problem.starts[live])
    order = live[np.lexsort((live, -area, -problem.sizes[live]))]

    left, probe = _probes(t0, time_limit, probe_time_limit, info)

    done: set[int] = set()
    for f in fractions:
        k = max(1, min(live.size, int(round(float(f) * live.size))))
        if k in done or left() <= 1e-3:
            continue
        done.add(k)
        sub = subset_problem(problem, np.sort(order[:k]))
        b = _raise_by_probes(probe, sub, bound, g, ceiling, left)
        if b > bound:
            bound, info["subset"] = b, float(f)
    info["seconds"] = round(time.perf_counter() - t0, 4)
    return bound, info


def cpsat_bound(
    problem: Problem, time_limit: float = 10.0, workers: int = 1, seed: int = 0
) -> tuple[int, dict[str, Any]]:
    """CP-SAT's best objective bound on the arena (bytes; module docstring).

    Runs :class:`planners.cpsat.CPSat` in mode ``"minimize"`` (no capacity) for ``time_limit``
    seconds with ``workers`` threads and returns its proved ``best_bound`` (at least max live
    bytes; CP-SAT's double bound is lowered by two ulps before rounding up, see
    :mod:`planners.cpsat`) and ``info`` (``status``, ``solver_status``, ``arena`` of its plan or
    None, ``seconds``).
    """
    from .cpsat import CPSat

    t0 = time.perf_counter()
    r = CPSat(
        mode="minimize",
        time_limit=max(1e-3, float(time_limit)),
        workers=int(workers),
        seed=int(seed),
        model_budget=None,
    ).plan(problem.with_capacity(None))
    lb = lower_bound(problem)
    bound = int(r.best_bound) if r.best_bound is not None else lb
    info = {
        "status": r.status,
        "solver_status": r.info.get("solver_status"),
        "arena": r.arena_size if r.status in ("optimal", "feasible") else None,
        "seconds": round(time.perf_counter() - t0, 4),
    }
    return max(bound, lb), info


def scaled_problem(problem: Problem) -> tuple[Problem, int]:
    """``problem`` divided by its arena quantum ``q`` (:func:`planners.bounds.arena_quantum`).

    Returns ``(scaled, q)``: the non-zero-size buffers with sizes ``size // q`` and alignments
    ``a // q`` for ``a > 1`` (``q`` divides both by definition), alignment 1 kept, lifetimes
    kept, no capacity. ``problem`` fits capacity ``c`` (bytes) iff ``scaled`` fits ``c // q``
    units (proof in the module docstring, ``cpsat_windows``). Raises
    :class:`planners.errors.ProblemError` for a problem with pins, gaps, pools or aliases (the
    quantum argument is for plain intervals).

    >>> from planners import Problem
    >>> s, q = scaled_problem(Problem.from_arrays([0, 0], [1, 2], [2048, 1024]))
    >>> q, s.sizes.tolist()
    (1024, [2, 1])
    """
    from dataclasses import replace

    from .errors import ProblemError

    if problem.aliases or (problem.features - {"hints"}):
        raise ProblemError(
            f"scaled_problem: problem {problem.name!r} has compiler features "
            f"({', '.join(sorted(problem.features)) or 'aliases'}); only plain intervals scale")
    q = _quantum(problem)
    live = np.flatnonzero(problem.sizes > 0)
    sub = Problem.from_arrays(problem.starts[live], problem.ends[live], problem.sizes[live] // q,
                              name=f"{problem.name}/{q}")
    al = problem.alignments[live]
    if (al > 1).any():
        bufs = [replace(b, alignment=int(a) // q if a > 1 else 1) for b, a in zip(sub.buffers, al)]
        sub = Problem(bufs, name=sub.name)
    return sub, q


def cpsat_window_bound(
    problem: Problem,
    floor: int | None = None,
    ceiling: int | None = None,
    time_limit: float = 60.0,
    probe_time_limit: float = 20.0,
    widths: tuple[int | None, ...] = (None, 80, 64, 48),
    max_windows: int = 2,
    workers: int = 1,
    seed: int = 0,
    screen_time_limit: float = 2.0,
) -> tuple[int, dict[str, Any]]:
    """Window relaxation decided by CP-SAT at a fixed capacity (module docstring,
    ``cpsat_windows``): the largest proved window optimum (bytes).

    Parameters
    ----------
    problem : Problem
        Plain intervals (pins, gaps, pools: raises :class:`planners.errors.ProblemError`).
    floor : int or None
        Start from this proved bound (default :func:`planners.bounds.lower_bound`).
    ceiling : int or None
        A known arena (bytes): no probe at or above it.
    time_limit : float
        Seconds for the whole call.
    probe_time_limit : float
        Seconds per CP-SAT decision (:class:`planners.cpsat.CPSat`, mode ``"decide"``, the
        scaled window at capacity ``c // q``; the whole call's model building included).
    widths : tuple of int or None
        Window widths in sections, in this order; ``None`` is the whole problem.
    max_windows : int
        Windows per width, the most loaded first (load: the highest live total in the window,
        ties to the earlier window).
    workers, seed : int
        CP-SAT threads (keep 1 on a shared machine) and random seed.
    screen_time_limit : float
        Seconds of :class:`~planners.exact_search.ExactSearch` (complete, like CP-SAT) tried
        first in each probe: a window it decides (a fitting layout, or a proof) costs no
        CP-SAT run, so CP-SAT gets only the windows the search times out on (``0``: no
        screening). A probe's status says which decided it (``log`` entries end with
        ``"exact_search"`` or ``"cpsat"``).

    Returns
    -------
    bound : int
        ``floor`` (rounded up to the quantum) or more; every value returned is proved.
    info : dict
        ``window`` (``(k, w)`` that gave the bound, or None), ``probes`` (count), ``statuses``
        (count per probe status: ``infeasible`` proves, ``optimal``/``feasible`` is a fitting
        layout of the window, ``timeout`` proves nothing), ``log`` (one
        ``[k, w, capacity, status, seconds, decided_by]`` per probe), ``seconds``.

    Notes
    -----
    With one worker and a fixed seed CP-SAT's search is deterministic, but its time limit is
    wall-clock: under load a probe may stop earlier in the search (status ``timeout``).
    """
    from .cpsat import CPSat
    from .errors import ProblemError
    from .exact_search import ExactSearch, sections

    if problem.aliases or (problem.features - {"hints"}):
        raise ProblemError(
            f"cpsat_window_bound: problem {problem.name!r} has compiler features; the window "
            "relaxation is for plain intervals (use best_lower_bound)")
    t0 = time.perf_counter()
    g, bound = _start_bound(problem, floor)
    info: dict[str, Any] = {"window": None, "probes": 0, "statuses": {}, "log": []}
    live = np.flatnonzero(problem.sizes > 0)
    if live.size == 0:
        info["seconds"] = 0.0
        return bound, info
    sec = sections(problem.starts[live], problem.ends[live])
    _, slo, shi = sec
    ns = int(shi.max())
    total = np.zeros(ns + 1, np.int64)
    np.add.at(total, slo, problem.sizes[live])
    np.add.at(total, shi, -problem.sizes[live])
    total = np.cumsum(total)[:ns]

    def left() -> float:
        return time_limit - (time.perf_counter() - t0)

    where = [None, None]

    def probe(sub: Problem, cap: int) -> str:
        info["probes"] += 1
        lim = min(probe_time_limit, left())
        t1 = time.perf_counter()
        st, by = "timeout", "cpsat"
        if lim > 1e-3 and screen_time_limit > 0:
            st = ExactSearch(capacity=int(cap), time_limit=min(screen_time_limit, lim)).plan(sub).status
            by = "exact_search"
        lim = min(probe_time_limit - (time.perf_counter() - t1), left())
        if st == "timeout" and lim > 1e-3:
            scaled, q = scaled_problem(sub)
            r = CPSat(mode="decide", time_limit=lim, workers=int(workers), seed=int(seed),
                      model_budget=None).plan(scaled.with_capacity(int(cap) // q))
            st, by = r.status, "cpsat"
        info["statuses"][st] = info["statuses"].get(st, 0) + 1
        info["log"].append([where[0], where[1], int(cap), st,
                            round(time.perf_counter() - t1, 3), by])
        return st

    seen: set[tuple[int, int]] = set()
    for w in widths:
        w = ns if w is None else min(int(w), ns)
        starts = range(0, ns - w + 1)
        load = [int(total[k : k + w].max()) for k in starts]
        for k in sorted(starts, key=lambda k: (-load[k], k))[:max_windows]:
            if left() <= 1e-3 or (ceiling is not None and bound >= ceiling):
                break
            if (k, w) in seen:
                continue
            seen.add((k, w))
            sub, _ = window_problem(problem, k, w, sec)
            where[0], where[1] = int(k), int(w)
            best = _raise_by_probes(probe, sub, bound, g, ceiling, left)
            if best > bound:
                bound, info["window"] = best, (int(k), int(w))
    info["seconds"] = round(time.perf_counter() - t0, 4)
    return bound, info


def best_lower_bound(
    problem: Problem,
    max_live: bool = True,
    windows: bool = True,
    time_limit: float = 10.0,
    ceiling: int | None = None,
    window_params: dict[str, Any] | None = None,
    subsets: bool = True,
    cpsat: bool = False,
    subset_params: dict[str, Any] | None = None,
    cpsat_params: dict[str, Any] | None = None,
    cpsat_windows: bool = False,
    cpsat_window_params: dict[str, Any] | None = None,
) -> LowerBound:
    """The best proved lower bound on the arena of ``problem`` (bytes) and which bound gave it.

    Parameters
    ----------
    problem : Problem
        Alias groups are collapsed first (one buffer per group, as every plan must reserve).
    max_live, windows, subsets, cpsat, cpsat_windows : bool
        Switch each bound of the module docstring on or off (all but ``cpsat`` and
        ``cpsat_windows`` on by default; the quantum rounding is always applied, it is a theorem
        about every optimal arena). ``cpsat_windows`` runs last, on the time left (all of it
        when nothing else is left to run), starting from the best bound so far.
    time_limit : float
        Seconds for the whole call: the window relaxation gets half of it when a later bound
        (``subsets``, ``cpsat``, ``cpsat_windows``) is on (all of it otherwise), the subsets half
        of what is left when a later one is on, CP-SAT half of the rest when ``cpsat_windows``
        is on, and the last one switched on the rest. Each starts from the best bound so far.
    ceiling : int or None
        A known arena (bytes): the decision probes stay below it.
    window_params, subset_params, cpsat_params, cpsat_window_params : dict or None
        Extra keyword parameters of :func:`window_bound`, :func:`subset_bound`,
        :func:`cpsat_bound` and :func:`cpsat_window_bound`.

    Returns
    -------
    LowerBound
        ``value`` (bytes, a multiple of the arena quantum), ``source``, ``values``, ``info``.

    Examples
    --------
    A 1-byte buffer and two 2-byte buffers with 4-byte alignment, all live at one step: max live is
    5 bytes, but two distinct multiples of 4 put one 2-byte buffer at offset 4 or above, so every
    arena is at least 6 (the one-section window proves it).

    >>> from planners import Buffer, Problem
    >>> p = Problem([Buffer("a", 0, 1, 1), Buffer("b", 0, 1, 2, alignment=4),
    ...              Buffer("c", 0, 1, 2, alignment=4)])
    >>> lb = best_lower_bound(p)
    >>> lb.values["max_live"], lb.value, lb.source
    (5, 6, 'windows')
    """
    t0 = time.perf_counter()
    if problem.aliases:
        problem = problem.collapse()[0]
    if problem.features - {"hints"}:
        # The window, subset and CP-SAT bounds model plain intervals in one arena; for pins, gaps,
        # pools or colocations only the feature-aware max-live bound (planners.bounds) is proved.
        lb = lower_bound(problem)
        return LowerBound(int(lb), "max_live", {"max_live": int(lb)}, {
            "quantum": 1, "note": "compiler features "
            f"({', '.join(sorted(problem.features))}): only max_live is computed",
            "seconds": round(time.perf_counter() - t0, 4)})
    g = _quantum(problem)
    values: dict[str, int] = {}
    info: dict[str, Any] = {"quantum": g}
    values["max_live"] = lower_bound(problem) if max_live else 0
    best, source = values["max_live"], "max_live"

    def share(later: int) -> float:
        left = time_limit - (time.perf_counter() - t0)
        return max(1e-3, left / 2 if later else left)

    if windows:
        params = dict(window_params or {})
        params.setdefault("time_limit", share(subsets + cpsat + cpsat_windows))
        wb, winfo = window_bound(problem, floor=best, ceiling=ceiling, **params)
        values["windows"] = wb
        info["windows"] = winfo
        if wb > -(-best // g) * g:
            best, source = wb, "windows"
    if subsets:
        params = dict(subset_params or {})
        params.setdefault("time_limit", share(cpsat + cpsat_windows))
        sb, sinfo = subset_bound(problem, floor=best, ceiling=ceiling, **params)
        values["subsets"] = sb
        info["subsets"] = sinfo
        if sb > -(-best // g) * g:
            best, source = sb, "subsets"
    if cpsat:
        params = dict(cpsat_params or {})
        params.setdefault("time_limit", share(cpsat_windows))
        cb, cinfo = cpsat_bound(problem, **params)
        values["cpsat"] = cb
        info["cpsat"] = cinfo
        if cb > -(-best // g) * g:
            best, source = cb, "cpsat"
    if cpsat_windows:
        params = dict(cpsat_window_params or {})
        params.setdefault("time_limit", share(0))
        xb, xinfo = cpsat_window_bound(problem, floor=best, ceiling=ceiling, **params)
        values["cpsat_windows"] = xb
        info["cpsat_windows"] = xinfo
        if xb > -(-best // g) * g:
            best, source = xb, "cpsat_windows"
    value = -(-best // g) * g
    info["seconds"] = round(time.perf_counter() - t0, 4)
    return LowerBound(int(value), source, values, info)
