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

**Exact offsets at every size.** The solver works in floating point with tolerances (CBC accepts
``z`` within ``1e-6`` of an integer, so a disjunction may be short by ``1e-6 M`` bytes: two
overlapping 96 MiB buffers came out a few bytes apart). The solver's offsets are therefore never
used as such: its disjunction decisions (``z_ij``: which buffer lies below which) orient the
interference graph, and the offsets are recomputed in exact integers by a longest-path pass over
that orientation, each buffer at the lowest multiple of its alignment above the tops of the
buffers below it (:func:`offsets_from_order`). A valid plan follows for any orientation; when the
rounded decisions contain a cycle (numerical trouble) the solver offsets' centres order the pairs
instead. The reported bound is only what the solver proved, lowered by its tolerance (see
:class:`MILPOffsets`).

**Large sizes.** CBC's tolerances are relative: with values from about ``2**30`` up it was seen to
declare small feasible models infeasible (4 of 80 random three-buffer models with tight bounds at
``2**30``, none at ``2**28``; 3 to 8 of 60 two-buffer models at ``2**34`` to ``2**61``). When the upper bound ``U`` exceeds
:data:`MODEL_LIMIT` the model is therefore stated in units of ``q`` bytes (``q`` a power of two
with ``U / q < MODEL_LIMIT``): sizes rounded up to units, alignments that are multiples of ``q``
divided by it (others, dividing ``q``, hold for every unit boundary), the starting point and upper
bound the incumbent's order re-laid in units. Its decisions still give exact offsets (never above
``q`` times the model's; within a capacity whenever the model's height is ``<= capacity // q``),
but its bound, its optimum and an "infeasible" answer are about rounded-up sizes (ties between
orders that differ by less than a unit are broken arbitrarily), so the plan is reported as
``optimal`` only when it reaches the max-live lower bound, which is the bound reported, and
"infeasible" becomes ``timeout``.

References
----------
.. [1] T. Sekiyama, T. Imamichi, H. Imai, R. Raymond, "Profile-guided memory optimization for deep
   neural networks", arXiv:1804.10001, 2018.
"""

from __future__ import annotations

import math
import time
from collections import deque

import numpy as np

from .base import Planner, SolveResult
from .bounds import lower_bound
from .colouring import interference_edges
from .errors import SolverError
from .lp_backends import solve_pulp
from .model import Problem
from .model_size import ModelEstimate, decline_reason, interference_pairs
from .params import MODEL_BUDGET, POSITIVE_SECONDS, THREADS
from .time_limits import Deadline
from .warmstart import HEURISTIC_SHARE, best_heuristic

__all__ = ["MILPOffsets", "offsets_from_order", "estimate_model", "INTEGRALITY_TOLERANCE"]

#: Largest upper bound (bytes, or units of ``q`` bytes) stated in the model, a margin below the
#: sizes where CBC failed; see "Large sizes" above.
MODEL_LIMIT = 2**26

#: Relative tolerance assumed for the MILP solver: CBC's integrality tolerance (``1e-6``) bounds how
#: far a big-M disjunction may be violated (``1e-6 M`` bytes) and PuLP writes coefficients with 12
#: significant digits. A solver bound is lowered by ``INTEGRALITY_TOLERANCE * (M * max live buffers
#: + bound)`` bytes before it is reported (:class:`MILPOffsets`).
INTEGRALITY_TOLERANCE = 1e-6


def offsets_from_order(problem: Problem, live, below) -> np.ndarray | None:
    """Exact offsets (bytes) from a "which buffer lies below which" decision per interfering pair.

    Parameters
    ----------
    problem : Problem
    live : list of int
        The buffers to place (non-zero size, problem indices).
    below : iterable of (i, j)
        For every pair of ``live`` buffers live at the same step (half-open lifetimes in steps),
        one arc ``i -> j`` meaning ``i`` lies below ``j``.

    Returns
    -------
    int64 array of shape ``(problem.n,)`` or ``None`` when the arcs contain a cycle. Each buffer
    sits at the lowest multiple of its alignment at or above every top ``offset + size`` of the
    buffers below it (longest path in topological order, Python integers, so exact for every size
    the interval model accepts); buffers not in ``live`` get offset 0. ``O(n + E)``.

    >>> p = Problem.from_arrays([0, 0], [1, 1], [3, 5])
    >>> offsets_from_order(p, [0, 1], [(1, 0)]).tolist()
    [5, 0]
    """
    off = _longest_path(live, below, problem.sizes.tolist(), problem.alignments.tolist())
    if off is None:
        return None
    out = np.zeros(problem.n, np.int64)
    for i in live:
        out[i] = off[i]
    return out


def _longest_path(live, below, sizes, aligns) -> dict[int, int] | None:
    """Lowest aligned offsets above every buffer below (``{i: offset}``), ``None`` on a cycle."""
    succ: dict[int, list[int]] = {i: [] for i in live}
    indeg = dict.fromkeys(live, 0)
    for i, j in below:
        succ[i].append(j)
        indeg[j] += 1
    off = dict.fromkeys(live, 0)
    queue = deque(i for i in live if indeg[i] == 0)
    done = 0
    while queue:
        i = queue.popleft()
        done += 1
        a = aligns[i]
        o = -(-off[i] // a) * a
        off[i] = o
        top = o + sizes[i]
        for j in succ[i]:
            if top > off[j]:
                off[j] = top
            indeg[j] -= 1
            if indeg[j] == 0:
                queue.append(j)
    return None if done < len(live) else off


def estimate_model(problem: Problem) -> ModelEstimate:
    """Size of the big-M model before building it (``O(n log n)``): with ``n`` non-zero-size
    buffers and ``E`` interfering pairs, ``n + E + 1`` variables, ``n + 2E`` constraints and
    ``2n + 6E`` terms."""
    n = int((problem.sizes > 0).sum())
    e = interference_pairs(problem)
    return ModelEstimate.of("milp_offsets", n + e + 1, n + 2 * e, 2 * n + 6 * e)


class MILPOffsets(Planner):
    """Big-M MILP offset planner on PuLP (HiGHS if ``highspy`` is importable, else bundled CBC).

    Parameters
    ----------
    time_limit : float
        Wall-clock seconds for the whole call (:class:`planners.time_limits.Deadline`): the
        warm-start heuristics and the model building are counted, the MILP solver gets what is
        left (``info["solver_time_limit"]``; ``info["setup_seconds"]``, ``info["time_limit"]``)
        and is not started with less than :data:`planners.time_limits.MIN_SOLVER_SECONDS` left
        (``feasible`` with the warm start, else ``timeout``).
    warm_start : bool
        Use the best registered heuristic as the MIP start and its arena as ``U`` and big-M.
    workers : int
        Solver threads.
    model_budget : float or None
        Decline with status ``skipped`` (no offsets; ``info["reason"]``,
        ``info["model_estimate"]``) when the model's estimated build time (:func:`estimate_model`,
        :mod:`planners.model_size`) exceeds ``model_budget`` times the seconds left of
        ``time_limit`` after the heuristics; ``None`` always builds.

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` (the exact arena equals the vouched bound), ``feasible`` (a plan, not proved
    optimal; when the solver stopped without any plan but the warm start fits, the warm start is
    returned with ``info["source"] == "warm_start"``), ``infeasible`` (proved: the capacity is too
    small; never reported for a problem without a capacity, where a plan always exists: a solver
    that claims otherwise counts as ``timeout``), ``timeout`` (no plan in time) or ``skipped``.
    Offsets are exact (module docstring), so ``arena`` may differ from the solver's objective
    (``info["solver_objective"]``). ``best_bound``: the solver's bound (its objective when optimal,
    else the bound CBC printed in its log; ``info["solver_bound"]``) lowered by the tolerance
    :data:`INTEGRALITY_TOLERANCE` and rounded up to the arena quantum
    (:func:`planners.minimize.arena_quantum`), never below the max-live lower bound. When the
    model is stated in units of ``q > 1`` bytes (``info["model_unit"]``, upper bound above
    :data:`MODEL_LIMIT`), ``best_bound`` is the max-live lower bound and "infeasible" is never
    reported (module docstring, "Large sizes").

    Notes
    -----
    ``n`` integers and ``E`` binaries (``E`` interference edges), ``2E + n`` constraints; building it
    is ``O(n log n + E)``. NP-hard; expect timeouts above a few dozen buffers.

    Examples
    --------
    >>> from planners import Problem
    >>> big = 96 * 2**20
    >>> r = MILPOffsets(time_limit=10).plan(Problem.from_arrays([0, 0], [1, 1], [big + 1, big]))
    >>> r.arena_size == 2 * big + 1, r.status
    (True, 'optimal')
    """

    name = "milp_offsets"
    family = "exact"
    _parameter_constraints = {
        "time_limit": [POSITIVE_SECONDS],
        "warm_start": ["boolean"],
        "workers": [THREADS],
        "model_budget": MODEL_BUDGET,
    }

    def __init__(
        self,
        time_limit: float = 30.0,
        warm_start: bool = True,
        workers: int = 1,
        model_budget: float | None = 0.5,
    ) -> None:
        self.time_limit = time_limit
        self.warm_start = warm_start
        self.workers = workers
        self.model_budget = model_budget

    def _solve(self, problem: Problem) -> SolveResult:
        from .bounds import arena_quantum
        from .colouring import max_live_count

        clock = Deadline(self.time_limit)  # the whole call: heuristics, model, search
        t0, limit = clock.start, clock.time_limit
        lb = lower_bound(problem)
        info: dict = {}
        live = np.flatnonzero(problem.sizes > 0).tolist()
        if not live:
            return SolveResult(np.zeros(problem.n, np.int64), "optimal", 0, info)
        cap = problem.capacity
        warm = None
        if self.warm_start:
            warm, ub, winfo = best_heuristic(problem, deadline=t0 + HEURISTIC_SHARE * limit)
            info.update(winfo)
        else:
            ub = int(problem.aligned_sizes.sum())
        if cap is not None and cap < ub:
            ub = cap
            warm = None  # the heuristic does not fit; no usable MIP start
        est = estimate_model(problem)
        info["model_estimate"] = est.as_info()
        left = limit - (time.perf_counter() - t0)
        reason = decline_reason(est, left, self.model_budget, "milp_offsets")
        if reason is not None:
            info["reason"] = reason
            return SolveResult(None, "skipped", lb, clock.record(info))
        sizes, aligns = problem.sizes.tolist(), problem.alignments.tolist()
        edges = interference_edges(problem).tolist()
        info["edges"] = len(edges)
        # Model units of q bytes (module docstring, "Large sizes"); q = 1 keeps bytes.
        q = 1 if ub <= MODEL_LIMIT else 2 ** (ub.bit_length() - MODEL_LIMIT.bit_length())
        info["model_unit"] = q
        if q == 1:
            s_m, a_m, lb_m, ub_m, start = sizes, aligns, lb, ub, warm
        else:
            s_m = [-(-v // q) for v in sizes]
            a_m = [a // q if a % q == 0 else 1 for a in aligns]
            lb_m = -(-lb // q)
            ref = warm if warm is not None else np.arange(problem.n)
            order = [(i, j) if (ref[i], i) < (ref[j], j) else (j, i) for i, j in edges]
            start = _longest_path(live, order, s_m, a_m)
            ub_m = max(start[i] + s_m[i] for i in live)
            if cap is not None and cap // q < ub_m:
                start, ub_m = None, cap // q
            # Alignments that q does not divide are dropped from the model (a_m = 1), so the
            # model's longest-path arena can fall below the rounded-up lower bound; the height
            # variable must still admit it.
            ub_m = max(ub_m, lb_m)
        big_m = ub_m
        info["big_m"] = big_m * q

        import pulp  # imported here: `import planners` stays light

        prob = pulp.LpProblem("milp_offsets", pulp.LpMinimize)
        H = pulp.LpVariable("H", lowBound=min(lb_m, ub_m), upBound=ub_m)
        k = {
            i: pulp.LpVariable(f"k{i}", 0, max(0, (ub_m - s_m[i]) // a_m[i]), cat="Integer")
            for i in live
        }
        off = {i: a_m[i] * k[i] for i in live}
        prob += H
        for i in live:
            prob += off[i] + s_m[i] <= H
        z = {}
        for i, j in edges:
            v = pulp.LpVariable(f"z{i}_{j}", cat="Binary")
            z[i, j] = v
            prob += off[i] + s_m[i] <= off[j] + big_m * (1 - v)
            prob += off[j] + s_m[j] <= off[i] + big_m * v
        if start is not None:
            H.setInitialValue(int(max(lb_m, max(start[i] + s_m[i] for i in live))))
            for i in live:
                k[i].setInitialValue(int(start[i]) // a_m[i])
            for (i, j), v in z.items():
                v.setInitialValue(1 if start[i] < start[j] else 0)
        info["build_seconds"] = round(time.perf_counter() - t0, 4)
        left = clock.solver_seconds()  # what the set-up left of time_limit, or None
        clock.record(info)
        if left is None:
            status, bound = "timeout", None
            info["stopped_by"] = "time_limit"
        else:
            status, bound, sinfo = solve_pulp(
                prob, left, warm_start=start is not None, threads=self.workers
            )
            info.update(sinfo)
            left = limit - (time.perf_counter() - t0)
            if status == "infeasible" and left > 0:
                # CBC's integer preprocessing was seen to declare small models with sizes near
                # 2**37 infeasible although a plan exists; a claim is only kept if a second
                # solve without that preprocessing agrees.
                try:
                    status, bound, sinfo = solve_pulp(
                        prob,
                        left,
                        warm_start=start is not None,
                        threads=self.workers,
                        cbc_options=["preprocess off"],
                    )
                    info.update(sinfo)
                    info["resolved_without_preprocess"] = True
                except SolverError as exc:
                    # The bundled CBC (2.10.3) was seen to crash on small models with
                    # preprocessing off. The claim is then checked by the complete search.
                    info["resolve_error"] = str(exc)
                    if cap is not None:
                        return self._confirm_infeasible(problem, t0 + limit, lb, info)
                    # Without a capacity the claim is numerically wrong (a plan always exists);
                    # below it becomes "timeout" and the warm start, when there is one, is kept.
        info["solver_bound"] = None if bound is None else bound * q
        if status == "infeasible" and (cap is None or q > 1):
            # Without a capacity a plan always exists (the warm start or the naive layout): a
            # solver that claims infeasibility failed numerically. With q > 1 the claim is about
            # rounded-up sizes. Either way nothing is proved.
            info["solver_claim"] = "infeasible"
            status = "timeout"
        best = lb
        if bound is not None and q == 1:
            g = arena_quantum(problem)
            tol = INTEGRALITY_TOLERANCE * (big_m * max_live_count(problem) + abs(bound))
            best = max(lb, math.ceil((bound - tol) / g) * g)
        if status in ("optimal", "feasible"):
            info["solver_objective"] = pulp.value(prob.objective) * q
            offsets = self._exact_offsets(problem, live, edges, z, k, a_m, s_m, info)
            arena = max(int(offsets[i]) + sizes[i] for i in live)
            # Above a capacity only through the solver's tolerance; plan() then reports
            # over_capacity unless the warm start (which fits whenever it is kept) is better.
            info["source"] = "milp"
            if warm is not None:
                warm_arena = max(int(warm[i]) + sizes[i] for i in live)
                if warm_arena < arena:  # never worse than the warm start
                    offsets, arena = warm, warm_arena
                    info["source"] = "warm_start"
            status = "optimal" if arena <= best else "feasible"
            return SolveResult(offsets, status, best, info)
        if status == "timeout" and warm is not None:
            info["source"] = "warm_start"
            return SolveResult(warm, "feasible", best, info)
        return SolveResult(None, status, best if status == "timeout" else None, info)

    @staticmethod
    def _confirm_infeasible(problem: Problem, deadline: float, lb: int, info: dict) -> SolveResult:
        """Check CBC's unconfirmed infeasibility claim with :class:`planners.exact_search.
        ExactSearch` in the time left: ``infeasible`` only if it proves it; a plan it finds is
        returned as ``feasible`` (``info["source"] = "exact_search"``); otherwise
        :class:`SolverError` (nothing proved, no plan)."""
        from .exact_search import ExactSearch

        info["solver_claim"] = "infeasible"
        left = deadline - time.perf_counter()
        if left > 0:
            res = ExactSearch(time_limit=left)._solve(problem)
            info["confirmed_by"] = "exact_search"
            if res.status == "infeasible":
                return SolveResult(None, "infeasible", None, info)
            if res.offsets is not None:
                info["source"] = "exact_search"
                return SolveResult(res.offsets, "feasible", lb, info)
        raise SolverError(
            f"milp_offsets: CBC claimed problem {problem.name!r} infeasible at capacity "
            f"{problem.capacity} bytes but crashed confirming it, and the complete search could "
            "not decide within the time limit"
        )

    @staticmethod
    def _exact_offsets(problem, live, edges, z, k, aligns, sizes, info) -> np.ndarray:
        """Exact offsets from the solver's disjunction decisions (module docstring); ``aligns``
        and ``sizes`` are the model's (units), used only to order by centres on a cycle."""
        below = [(i, j) if (z[i, j].value() or 0) > 0.5 else (j, i) for i, j in edges]
        offsets = offsets_from_order(problem, live, below)
        info["order_from"] = "decisions"
        if offsets is None:  # rounded decisions contain a cycle: order by the solver's centres
            centre = {i: aligns[i] * (k[i].value() or 0) + sizes[i] / 2 for i in live}
            below = [(i, j) if (centre[i], i) < (centre[j], j) else (j, i) for i, j in edges]
            offsets = offsets_from_order(problem, live, below)
            info["order_from"] = "centres"
        return offsets
