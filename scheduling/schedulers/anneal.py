"""Simulated annealing over operator orders (seed 002 section 5.4.2, "模拟退火")."""

from __future__ import annotations

import math
import time
from numbers import Integral, Real

import numpy as np

from planners.params import OPTIONAL_POSITIVE_SECONDS, SEED, Interval, StrOptions

from ..graph import Graph
from .base import Scheduler, ScheduleResult
from .list_base import list_schedule
from .memsim import MemoryModel

__all__ = ["Anneal", "min_live_order"]


def min_live_order(m: MemoryModel) -> tuple[list[int], int]:
    """The ``min_live`` greedy order of ``m`` (indices) and its peak (bytes)."""
    return list_schedule(m, lambda tr, v: (tr.alloc[v] - tr.freed_now[v], tr.alloc[v], v))


class Anneal(Scheduler):
    """Simulated annealing on topological orders, minimising the peak of live bytes.

    A move takes a random operator and reinserts it at a random position of its feasible window
    (after its last predecessor, before its first successor), so every visited order is
    topological. The peak of the new order is evaluated in ``O(n + #tensor uses)``
    (:meth:`MemoryModel.peak`); a worse order is accepted with probability
    ``exp(-(peak' - peak) / (T * peak0))``, ``T`` decreasing geometrically from ``t_start`` to
    ``t_end`` over the iterations. The best order seen is returned, so the result is never worse
    than the initial order.

    Parameters
    ----------
    iterations : int, default 3000
        Number of moves (the budget).
    t_start, t_end : float, default 0.05, 0.0005
        Initial and final temperature, relative to the initial peak.
    init : {"min_live", "file_order"}, default "min_live"
        Initial order.
    seed : int, default 0
        Seed of the numpy generator; same graph and seed give the same order.
    time_limit : float or None, default None
        Optional wall-clock budget in seconds, counted from the start of :meth:`schedule`
        (an outer stop; when it bites the result depends on the machine, and ``info`` says so).

    Raises
    ------
    ParameterError
        (from :meth:`schedule`, a ``ValueError``) Unknown ``init``, ``iterations < 0``, ...
        (``_parameter_constraints``). ``CycleError`` for a cyclic graph.

    Notes
    -----
    ``O(iterations * (n + #tensor uses))``. Status ``"heuristic"``; ``info`` has ``peak_bytes``,
    ``initial_peak``, ``accepted``, ``iterations`` (moves made) and ``stopped_by``
    (``"iterations"``, or ``"time_limit"`` when the wall clock stopped it first: the budget is
    the work, so a seed gives the same order at any load unless the time limit bites).
    """

    name = "anneal"
    _parameter_constraints = {
        "iterations": [Interval(Integral, 0, None)],
        "t_start": [Interval(Real, 0, None, closed="neither")],
        "t_end": [Interval(Real, 0, None, closed="neither")],
        "init": [StrOptions(("min_live", "file_order"))],
        "seed": [SEED],
        "time_limit": OPTIONAL_POSITIVE_SECONDS,
    }

    def __init__(
        self,
        iterations: int = 3000,
        t_start: float = 0.05,
        t_end: float = 0.0005,
        init: str = "min_live",
        seed: int = 0,
        time_limit: float | None = None,
    ) -> None:
        self.iterations = iterations
        self.t_start = t_start
        self.t_end = t_end
        self.init = init
        self.seed = seed
        self.time_limit = time_limit

    def _schedule(self, graph: Graph) -> ScheduleResult:
        m = MemoryModel.of(graph)
        n = m.n
        if self.init == "min_live":
            order, cur = min_live_order(m)
        else:
            order = m.topological() if not m.is_topological(list(range(n))) else list(range(n))
            cur = m.peak(order)
        best, best_peak, peak0 = list(order), cur, max(cur, 1)
        rng = np.random.default_rng(self.seed)
        iters = int(self.iterations)
        deadline = None if self.time_limit is None else self._started() + self.time_limit
        accepted = 0
        done = 0
        stopped = "iterations"
        if n >= 2 and iters:
            ratio = (self.t_end / self.t_start) ** (1.0 / max(iters - 1, 1))
            temp = float(self.t_start)
            picks = rng.integers(0, n, size=iters)
            uniforms = rng.random(size=(iters, 2))
            pos = [0] * n
            for k, v in enumerate(order):
                pos[v] = k
            for it in range(iters):
                if deadline is not None and time.perf_counter() > deadline:
                    stopped = "time_limit"
                    break
                done += 1
                v = int(picks[it])
                a = pos[v]
                lo = max((pos[p] for p in m.preds[v]), default=-1) + 1
                hi = min((pos[s] for s in m.succs[v]), default=n) - 1
                if hi > lo:
                    b = lo + int(uniforms[it, 0] * (hi - lo + 1))
                    if b != a:
                        cand = order[:a] + order[a + 1 :]
                        cand.insert(b, v)
                        pk = m.peak(cand)
                        d = pk - cur
                        if d <= 0 or uniforms[it, 1] < math.exp(-d / (temp * peak0)):
                            order, cur = cand, pk
                            accepted += 1
                            for k in range(min(a, b), max(a, b) + 1):
                                pos[order[k]] = k
                            if cur < best_peak:
                                best, best_peak = list(order), cur
                temp *= ratio
        return ScheduleResult(
            m.to_names(best),
            "heuristic",
            {
                "peak_bytes": int(best_peak),
                "initial_peak": int(peak0 if n else 0),
                "accepted": accepted,
                "iterations": done,
                "stopped_by": stopped,
            },
        )
