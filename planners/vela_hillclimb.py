"""``vela_hillclimb``: Arm Vela's production HillClimb tensor allocator, run from the installed
``ethos-u-vela`` package (PyPI, Apache-2.0), not a reproduction.

Vela (the compiler for Arm Ethos-U NPUs) allocates its scratch tensors with
``ethosu.vela.hillclimb_allocation.HillClimbAllocator``: an initial order by "urgency" (the most
bytes live at any step of a live range), then duration, start, size and id; each live range at the
lowest aligned address that fits; then up to ``max_iterations`` (Vela's default 99,999) swaps of
two live ranges that affected the highest one, kept when the arena does not grow, with Python's
``random`` seeded with 1 (so deterministic). The search stops early when the arena reaches the
lower bound, or when it fits ``memory_limit`` and 500 iterations brought nothing.

This module is a registered planner rather than a benchmark-only adapter so that every tool of the
toolkit (``memplan plan``, ``compare``, sweeps, :func:`planners.check_plan` through
:meth:`planners.base.Planner.plan`) can run the real thing beside its own planners. It calls
Vela's own ``allocate`` / ``search`` / ``attempt_bottleneck_fix`` / ``allocate_lr`` code unchanged,
with two additions around it:

* **Construction.** Vela's ``__init__`` walks every time step of every live range
  (``O(sum of durations x live ranges per step)``: 37 s on MiniMalloc's problem A, whose times run
  to 2**20). :class:`_FastInit` builds the same state (each live range's ``urgency``, its
  ``neighbours`` in Vela's order: by the first step of its range at which the neighbour is live,
  then id; ``min_required_size``) from the interference graph and the live profile in
  ``O(n log n + E log E)``; ``tests/test_peer_planners.py`` checks it equals Vela's own on seeded
  random problems.
* **A time cap** (``time_limit``, wall-clock seconds from the call's start, optional): when it
  passes, the search is told to stop after the iteration under way (``max_iterations`` and
  ``MIN_ITERATIONS_IMPROVE`` set to 0 on the instance). ``plan.info`` records the iterations run and why the search stopped.

Problem mapping: a buffer ``[start, end)`` is Vela's live range ``start_time = start``,
``end_time = end - 1`` (inclusive), ``size`` and its alignment as ``get_alignment()``.
``memory_limit`` (bytes) defaults to the problem's capacity, else Vela's own minimum (max live
bytes, sizes unaligned; Vela then searches until ``max_iterations`` or that bound, as it does
when the arena exceeds its SRAM). Python's global ``random`` state is saved and restored around the run.

Without ``ethos-u-vela`` installed the planner refuses in one line
(:class:`planners.errors.SolverError`); install it with ``pip install -e '.[peers]'``.
"""

from __future__ import annotations

import random
import time
from numbers import Integral

import numpy as np

from .base import Planner, SolveResult
from .bounds import live_profile
from .errors import SolverError
from .interference import interference_csr
from .model import Problem
from .params import OPTIONAL_POSITIVE_SECONDS, Interval

__all__ = ["VelaHillClimb", "vela_available", "vela_allocator"]

#: Vela's ``HillClimbAllocator.MAX_ITERATIONS``.
VELA_MAX_ITERATIONS = 99_999


def _vela_module():
    try:
        from ethosu.vela import hillclimb_allocation
    except ImportError:
        return None
    return hillclimb_allocation


def vela_available() -> bool:
    """True when ``ethos-u-vela`` is installed (its ``hillclimb_allocation`` module imports)."""
    return _vela_module() is not None


def _vela_version() -> str:
    try:
        from importlib.metadata import version

        return version("ethos-u-vela")
    except Exception:  # pragma: no cover - metadata missing
        return "unknown"


class _LiveRange:
    """The part of Vela's ``live_range.LiveRange`` that ``HillClimbAllocator`` reads."""

    __slots__ = ("start_time", "end_time", "size", "_align")

    def __init__(self, start: int, end_inclusive: int, size: int, align: int) -> None:
        self.start_time = start
        self.end_time = end_inclusive
        self.size = size
        self._align = align

    def get_alignment(self) -> int:
        return self._align


def _live_ranges(problem: Problem) -> list[_LiveRange]:
    return [_LiveRange(s, e - 1, z, a) for s, e, z, a in zip(
        problem.starts.tolist(), problem.ends.tolist(), problem.sizes.tolist(),
        problem.alignments.tolist())]


def vela_allocator(problem: Problem, max_iterations: int | None = None,
                   memory_limit: int | None = None, fast_init: bool = True,
                   time_limit: float | None = None, start: float | None = None):
    """A Vela ``HillClimbAllocator`` for ``problem`` (see the module docstring), not yet run.

    ``time_limit``: wall-clock seconds counted from ``start`` (a :func:`time.perf_counter`
    instant, default now), so building the allocator's state counts against it too.

    ``fast_init=False`` runs Vela's own ``__init__`` (slow on long schedules; used to check
    :class:`_FastInit`). Raises :class:`planners.errors.SolverError` when ``ethos-u-vela`` is not
    installed.
    """
    mod = _vela_module()
    if mod is None:
        raise SolverError(
            "vela_hillclimb: the ethos-u-vela package is not installed "
            "(pip install -e '.[peers]' or pip install ethos-u-vela)"
        )
    lrs = _live_ranges(problem)
    base = mod.HillClimbAllocator

    class _Timed(base):  # the time cap: stop the search after the iteration under way
        def allocate_indices(self, indices):
            self.calls += 1
            size = super().allocate_indices(indices)
            if self.deadline is not None and time.perf_counter() > self.deadline:
                self.max_iterations = 0
                self.MIN_ITERATIONS_IMPROVE = 0
                self.timed_out = True
            return size

    class _FastInit(_Timed):
        def __init__(self, live_ranges, max_iterations, memory_limit):  # noqa: D401
            _fast_init(self, mod, problem, live_ranges, max_iterations, memory_limit)

    cls = _FastInit if fast_init else _Timed
    # memory_limit None: Vela's own minimum (max live bytes, sizes unaligned), set after __init__
    # so that Vela's constructor does not print its "limit below the minimum" warning
    alloc = cls(lrs, max_iterations, 1 << 62 if memory_limit is None else int(memory_limit))
    if memory_limit is None:
        alloc.memory_limit = alloc.min_required_size
    alloc.calls = 0
    alloc.timed_out = False
    t0 = time.perf_counter() if start is None else float(start)
    alloc.deadline = None if time_limit is None else t0 + float(time_limit)
    return alloc


def _fast_init(self, mod, problem: Problem, live_ranges, max_iterations, memory_limit) -> None:
    """Vela's ``HillClimbAllocator.__init__`` state without walking every time step."""
    info_cls = mod.LiveRangeInfo
    self.lrs = [info_cls(i, lr.start_time, lr.end_time, lr.size, lr.get_alignment())
                for i, lr in enumerate(live_ranges)]
    self.lrs_at_time = []  # only used inside Vela's __init__
    self.available_size = 0
    self.target_size = 0
    self.best_size = 1 << 63
    self.lr_urgency = len(self.lrs) * [0]
    n = problem.n
    times, live = live_profile(problem)
    self.min_required_size = int(live.max()) if live.size else 0
    self.max_iterations = mod.HillClimbAllocator.MAX_ITERATIONS if max_iterations is None \
        else max_iterations
    self.memory_limit = memory_limit
    starts = problem.starts
    lo = np.searchsorted(times, starts, side="right") - 1
    hi = np.searchsorted(times, problem.ends, side="left")
    indptr, nbrs = interference_csr(problem)
    for i in range(n):
        lr = self.lrs[i]
        seg = live[lo[i] : hi[i]]
        lr.urgency = int(seg.max()) if seg.size else 0
        nb = nbrs[indptr[i] : indptr[i + 1]]
        first_t = np.maximum(starts[nb], starts[i])
        order = nb[np.lexsort((nb, first_t))]
        lrs = self.lrs
        lr.neighbours = [lrs[j] for j in order.tolist()]


class VelaHillClimb(Planner):
    """Arm Vela's ``HillClimbAllocator`` (ethos-u-vela, ``ethosu/vela/hillclimb_allocation.py``),
    run from the installed package. See :mod:`planners.vela_hillclimb`.

    Parameters
    ----------
    max_iterations : int, default 99999
        Vela's iteration limit (its ``--hillclimb-max-iterations``, default 99,999).
    time_limit : float or None, default None
        Wall-clock seconds from the start of the call (building the allocator's state counted)
        after which the search stops at the end of the iteration under way (not in Vela; a cap
        for benchmarks).
    memory_limit : int or None, default None
        Vela's memory limit in bytes; ``None``: the problem's capacity, else max live bytes.

    Refuses in one line (:class:`planners.errors.SolverError`) when ethos-u-vela is absent.
    """

    name = "vela_hillclimb"
    family = "peer"
    in_default_comparison = False  # a peer baseline: run by ``make bench-peers``
    _parameter_constraints = {
        "max_iterations": [Interval(Integral, 0, None, closed="left")],
        "time_limit": OPTIONAL_POSITIVE_SECONDS,
        "memory_limit": [Interval(Integral, 0, None, closed="left", unit="bytes"), None],
    }

    def __init__(self, max_iterations: int = VELA_MAX_ITERATIONS, time_limit: float | None = None,
                 memory_limit: int | None = None) -> None:
        self.max_iterations = max_iterations
        self.time_limit = time_limit
        self.memory_limit = memory_limit

    def _solve(self, problem: Problem) -> SolveResult:
        t0 = time.perf_counter()
        if problem.n == 0:
            return SolveResult(np.zeros(0, np.int64), "heuristic")
        limit = self.memory_limit
        if limit is None:
            limit = problem.capacity
        alloc = vela_allocator(problem, self.max_iterations, limit, time_limit=self.time_limit,
                               start=t0)
        limit = alloc.memory_limit
        state = random.getstate()
        try:
            addresses = alloc.allocate()
        finally:
            random.setstate(state)
        if alloc.timed_out:
            stopped = "time_limit"
        elif alloc.best_size <= alloc.min_required_size:
            stopped = "lower_bound"
        elif alloc.best_size <= limit:
            stopped = "memory_limit"
        else:
            stopped = "max_iterations"
        info = {"iterations": max(alloc.calls - 1, 0), "stopped": stopped,
                "memory_limit": int(limit), "vela_version": _vela_version()}
        return SolveResult(np.asarray(addresses, np.int64), "heuristic", info=info)
