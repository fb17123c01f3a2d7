"""``minimize``: turn any fixed-capacity decision planner into an arena minimiser by bisection.

The optimal arena lies between the lower bound (max live bytes, :func:`planners.bounds.lower_bound`)
and the best arena a heuristic reaches. :class:`Minimize` runs the registered cheap heuristics
(:func:`planners.warmstart.best_heuristic`) for that upper bound and keeps the best plan as the
incumbent, so the result is never worse than any of them; then it binary-searches the capacity
with a decision planner (by default :class:`planners.exact_search.ExactSearch`; its own heuristic
shortcut is switched off in the probes, as those heuristics already ran):

* a probe that finds a layout at capacity ``c`` lowers the best arena to that layout's arena
  (which may be below ``c``), and the search continues below it;
* a probe that proves ``c`` infeasible raises the proved bound to ``c + 1`` (to the next
  multiple of :func:`arena_quantum`, the gcd of sizes and alignments, which every pushed-down
  arena is a multiple of; probes are made at such multiples only);
* a probe that times out proves nothing; the bisection then continues above ``c`` (looking for
  better layouts) while the proved bound stays where it was.

The result is optimal when the best arena equals the proved bound. Capacities are bytes; buffers
keep their half-open ``[start, end)`` lifetimes (schedule steps) from the problem.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .base import Planner, SolveResult
from .bounds import lower_bound
from .errors import ProblemError
from .model import Plan, Problem
from .warmstart import HEURISTIC_SHARE, HEURISTICS, best_heuristic

__all__ = ["Minimize", "UPPER_BOUND_HEURISTICS", "arena_quantum"]

#: Heuristics run (when registered) for the starting upper bound: the exact planners' warm-start
#: list :data:`planners.warmstart.HEURISTICS` (greedy family, colouring, ``naive`` as fallback).
UPPER_BOUND_HEURISTICS = HEURISTICS


def arena_quantum(problem: Problem) -> int:
    """The largest ``g`` (bytes) such that some optimal arena is a multiple of ``g``.

    ``g`` is the gcd of the non-zero sizes and of the alignments above 1: in a pushed-down layout
    every offset is the top of another buffer rounded up to an alignment, so every offset and top
    is a multiple of ``g``. Hence capacity ``c`` is feasible iff ``(c // g) * g`` is, and proving
    ``c`` infeasible proves the arena ``>= (c // g + 1) * g``. ``1`` when nothing has size.
    """
    vals = [int(v) for v in problem.sizes[problem.sizes > 0]]
    vals += [int(a) for a in problem.alignments[(problem.alignments > 1) & (problem.sizes > 0)]]
    return math.gcd(*vals) if vals else 1


class Minimize(Planner):
    """Minimise the arena by binary search on the capacity with a decision planner.

    Parameters
    ----------
    solver : str or Planner
        A registered decision planner honouring ``problem.capacity`` and reporting status
        ``"optimal"`` (fits), ``"infeasible"`` (proved not to fit) or ``"timeout"``.
    solver_params : dict or None
        Keyword parameters of the solver (its ``time_limit`` is capped by the time left).
    time_limit : float
        Total seconds for all probes (the heuristics' time is counted too).
    probe_time_limit : float or None
        Seconds per probe (default ``time_limit / 4``), so that one hard probe cannot eat the
        whole budget.
    heuristics : tuple of str
        Registered planners tried for the initial upper bound (unregistered names are skipped).
    probe_lower_bound_first : bool
        Probe the lower bound itself before bisecting: on many real problems it is feasible, and
        then one probe proves optimality.
    heuristic_incumbent : bool
        Start from the best heuristic plan (incumbent and upper bound) and switch the solver's
        own heuristic shortcut off in the probes (``heuristic_first=False`` when the solver has
        that parameter), since every probe capacity is below the heuristics' best arena. With
        ``False`` (ablation) only ``naive`` gives the starting upper bound and the solver runs
        with its own defaults.

    Returns (via :meth:`plan`)
    --------------------------
    The best plan found, status ``"optimal"`` (best arena equals the proved bound) or
    ``"feasible"``, ``best_bound`` = the largest capacity proved infeasible + 1, rounded up to
    the arena quantum (or the lower bound, so rounded), and ``info["probes"]``: a list of ``{"capacity", "status", "arena", "seconds",
    "nodes"}`` in probe order, plus ``info["upper_bound"]`` (best heuristic arena) and
    ``info["heuristic"]`` (its name).

    Raises
    ------
    ProblemError
        ``time_limit`` not positive, or the solver is not a known planner.

    Notes
    -----
    ``O(log2(U - L))`` probes for heuristic arena ``U`` and lower bound ``L``, each bounded by the
    probe time limit. The problem's own capacity is ignored (the problem is re-posed with each
    probe capacity via :meth:`Problem.with_capacity`).

    Examples
    --------
    >>> from planners import Problem
    >>> p = Problem.from_arrays([0, 0, 1], [1, 2, 2], [4, 2, 4])
    >>> plan = Minimize(time_limit=5).plan(p)
    >>> plan.arena_size, plan.status
    (6, 'optimal')
    """

    name = "minimize"
    family = "exact"

    def __init__(
        self,
        solver: str | Planner = "exact_search",
        solver_params: dict[str, Any] | None = None,
        time_limit: float = 60.0,
        probe_time_limit: float | None = None,
        heuristics: tuple[str, ...] = UPPER_BOUND_HEURISTICS,
        probe_lower_bound_first: bool = True,
        heuristic_incumbent: bool = True,
    ) -> None:
        self.solver = solver
        self.solver_params = solver_params
        self.time_limit = time_limit
        self.probe_time_limit = probe_time_limit
        self.heuristics = heuristics
        self.probe_lower_bound_first = probe_lower_bound_first
        self.heuristic_incumbent = heuristic_incumbent

    def _upper_bound(self, problem: Problem, deadline: float) -> tuple[np.ndarray, int, str]:
        """The incumbent: offsets, arena (bytes) and name of the best heuristic run."""
        names = tuple(self.heuristics) if self.heuristic_incumbent else ("naive",)
        offsets, arena, info = best_heuristic(problem, names, deadline=deadline)
        return offsets, arena, info["warm_start"]

    def _probe(self, problem: Problem, capacity: int, seconds: float) -> Plan:
        from .registry import get_planner

        params = dict(self.solver_params or {})
        limit = params.get("time_limit")
        params["time_limit"] = max(1e-3, min(seconds, limit) if limit else seconds)
        if self.heuristic_incumbent and "heuristic_first" not in params:
            from .registry import PLANNERS

            cls = PLANNERS.get(self.solver) if isinstance(self.solver, str) else self.solver
            if "heuristic_first" in getattr(cls, "_param_names", lambda: [])():
                params["heuristic_first"] = False
        try:
            solver = get_planner(self.solver, **params)
        except ValueError as e:
            raise ProblemError(f"minimize: solver {self.solver!r}: {e}") from None
        return solver.plan(problem.with_capacity(capacity))

    def _solve(self, problem: Problem) -> SolveResult:
        if not self.time_limit or self.time_limit <= 0:
            raise ProblemError(f"minimize: time_limit must be > 0 seconds, got {self.time_limit}")
        t0 = time.perf_counter()
        lb = lower_bound(problem)
        best_offsets, best_arena, heuristic = self._upper_bound(
            problem, t0 + HEURISTIC_SHARE * float(self.time_limit)
        )
        upper_bound, first_heuristic = best_arena, heuristic
        g = arena_quantum(problem)
        proved = -(-lb // g) * g  # every arena is >= proved
        probes: list[dict[str, Any]] = []
        per_probe = self.probe_time_limit or self.time_limit / 4
        lo, hi = proved, (best_arena - 1) // g * g  # capacities still worth probing
        first = self.probe_lower_bound_first
        while lo <= hi and best_arena > proved:
            left = self.time_limit - (time.perf_counter() - t0)
            if left <= 1e-3:
                break
            cap = lo if first else (lo + hi) // 2 // g * g
            first = False
            p = self._probe(problem, cap, min(per_probe, left))
            rec = {
                "capacity": cap,
                "status": p.status,
                "arena": p.arena_size if p.status in ("optimal", "feasible") else None,
                "seconds": round(p.seconds, 4),
                "nodes": p.info.get("nodes"),
            }
            probes.append(rec)
            if p.status in ("optimal", "feasible", "heuristic") and p.arena_size <= cap:
                if p.arena_size < best_arena:
                    best_arena, best_offsets = p.arena_size, np.asarray(p.offsets, np.int64)
                    heuristic = None
                hi = (min(cap, best_arena) - 1) // g * g
            elif p.status == "infeasible":
                proved = max(proved, cap + g)
                lo = cap + g
            else:  # timeout: nothing proved; look for better layouts above cap
                lo = cap + g
        status = "optimal" if best_arena <= proved else "feasible"
        info = {
            "probes": probes,
            "upper_bound": upper_bound,
            "heuristic": first_heuristic,
            "improved_by_solver": heuristic is None,
            "best_arena": best_arena,
            "proved_bound": proved,
            "quantum": g,
        }
        return SolveResult(best_offsets, status, best_bound=proved, info=info)
