"""``milp_offsets``: the classic big-M mixed-integer program for buffer offsets, through PuLP.

Variables: an integer ``k_i`` per buffer with offset ``o_i = a_i * k_i`` bytes (``a_i`` the
alignment), the arena height ``H`` and, per interference-graph edge ``(i, j)`` (buffers live at the
same step, half-open lifetimes ``[start, end)`` in schedule steps), a binary ``z_ij`` choosing which
buffer lies below::

    min  H
    s.t. o_i + s_i <= H                                  for every buffer i
         o_i + s_i <= o_j + M (1 - z_ij)                 for every edge (i, j)
         o_j + s_j <= o_i + M z_ij                       for every edge (i, j)
         lower_bound <= H <= U

``U`` is the best heuristic arena (:func:`planners.warmstart.best_heuristic`; the naive arena without
warm start), also capped by the problem's capacity, and the big-M is ``M = U`` (no offset exceeds
``U - s_i``, so every disjunction is relaxed by at most ``U``). This is the "mixed ILP" baseline of
Sekiyama et al. 2018; its LP relaxation is weak (``H = lower bound`` is LP-feasible with fractional
``z``), so it scales much worse than CP-SAT. Zero-size buffers are left out (offset 0).

References
----------
.. [1] T. Sekiyama, T. Imamichi, H. Imai, R. Raymond, "Profile-guided memory optimization for deep
   neural networks", arXiv:1804.10001, 2018.
"""

from __future__ import annotations

import math

import numpy as np
import pulp

from .base import Planner, SolveResult
from .bounds import lower_bound
from .colouring import interference_edges
from .lp_backends import solve_pulp
from .model import Problem
from .warmstart import best_heuristic

__all__ = ["MILPOffsets"]


class MILPOffsets(Planner):
    """Big-M MILP offset planner on PuLP (HiGHS if ``highspy`` is importable, else bundled CBC).

    Parameters
    ----------
    time_limit : float
        Seconds given to the MILP solver.
    warm_start : bool
        Use the best registered heuristic as the MIP start and its arena as ``U`` and big-M.
    workers : int
        Solver threads.

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` (proved minimum, or with a capacity: the minimum, which fits), ``feasible``
    (a plan, not proved optimal; when the solver stopped without any plan but the warm start fits,
    the warm start is returned with ``info["source"] == "warm_start"``), ``infeasible`` (proved: the
    capacity is too small) or ``timeout``. ``best_bound``: the objective when optimal; otherwise the
    bound CBC printed in its log if any, else the max-live lower bound (``info["solver_bound"]`` is
    ``None`` then: PuLP does not expose the solver's bound).

    Notes
    -----
    ``n`` integers and ``E`` binaries (``E`` interference edges), ``2E + n`` constraints; building it
    is ``O(n log n + E)``. NP-hard; expect timeouts above a few dozen buffers.
    """

    name = "milp_offsets"

    def __init__(self, time_limit: float = 30.0, warm_start: bool = True, workers: int = 1) -> None:
        self.time_limit = time_limit
        self.warm_start = warm_start
        self.workers = workers

    def _solve(self, problem: Problem) -> SolveResult:
        lb = lower_bound(problem)
        info: dict = {}
        live = np.flatnonzero(problem.sizes > 0).tolist()
        if not live:
            return SolveResult(np.zeros(problem.n, np.int64), "optimal", 0, info)
        warm = None
        if self.warm_start:
            warm, ub, winfo = best_heuristic(problem)
            info.update(winfo)
        else:
            ub = int(problem.aligned_sizes.sum())
        if problem.capacity is not None and problem.capacity < ub:
            ub = problem.capacity
            warm = None  # the heuristic does not fit; no usable MIP start
        big_m = ub
        info["big_m"] = big_m
        sizes, aligns = problem.sizes.tolist(), problem.alignments.tolist()

        prob = pulp.LpProblem("milp_offsets", pulp.LpMinimize)
        H = pulp.LpVariable("H", lowBound=lb, upBound=ub)
        k = {
            i: pulp.LpVariable(f"k{i}", 0, (ub - sizes[i]) // aligns[i], cat="Integer")
            for i in live
        }
        off = {i: aligns[i] * k[i] for i in live}
        prob += H
        for i in live:
            prob += off[i] + sizes[i] <= H
        edges = interference_edges(problem).tolist()
        info["edges"] = len(edges)
        z = {}
        for i, j in edges:
            v = pulp.LpVariable(f"z{i}_{j}", cat="Binary")
            z[i, j] = v
            prob += off[i] + sizes[i] <= off[j] + big_m * (1 - v)
            prob += off[j] + sizes[j] <= off[i] + big_m * v
        if warm is not None:
            H.setInitialValue(int(max(lb, max(warm[i] + sizes[i] for i in live))))
            for i in live:
                k[i].setInitialValue(int(warm[i]) // aligns[i])
            for (i, j), v in z.items():
                v.setInitialValue(1 if warm[i] < warm[j] else 0)
        status, bound, sinfo = solve_pulp(
            prob, self.time_limit, warm_start=warm is not None, threads=self.workers
        )
        info.update(sinfo)
        info["solver_bound"] = bound
        best = lb if bound is None else max(lb, math.ceil(bound - 1e-6))
        if status in ("optimal", "feasible"):
            offsets = np.zeros(problem.n, np.int64)
            for i in live:
                offsets[i] = aligns[i] * int(round(k[i].value()))
            info["source"] = "milp"
            return SolveResult(offsets, status, best, info)
        if status == "timeout" and warm is not None:
            info["source"] = "warm_start"
            return SolveResult(warm, "feasible", best, info)
        return SolveResult(None, status, best if status == "timeout" else None, info)
