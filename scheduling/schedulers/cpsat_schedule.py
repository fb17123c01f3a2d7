"""Optimal-peak scheduling as a CP-SAT model with liveness variables (OLLA / MODeL style)."""

from __future__ import annotations

import math
import time
from numbers import Integral

from planners.model_size import ModelEstimate, decline_reason
from planners.params import CPSAT_SEED, MODEL_BUDGET, POSITIVE_SECONDS, THREADS, Interval

from ..graph import Graph
from .base import Scheduler, ScheduleResult
from .bounds import order_lower_bound
from .exact_dp import initial_order
from .memsim import MemoryModel

__all__ = ["CPSatSchedule", "estimate_model"]


def estimate_model(model: MemoryModel) -> ModelEstimate:
    """Size of the time-indexed model of :class:`CPSatSchedule` before building it.

    With ``n`` operators (and ``n`` steps, the horizon), ``P`` predecessor arcs, ``T`` tensors of
    non-zero size and ``U = sum_t max(1, #consumers(t))`` over them: ``n^2 + nT + 1`` variables
    (``started``, ``alive``, the peak), ``n^2 + nP + nU + 2n`` constraints and about
    ``3n^2 + 2nP + 3nU + nT`` terms (plus ``n^2`` hints). ``O(n + #tensor uses)``.
    """
    n = model.n
    P = sum(len(p) for p in model.preds)
    size = model.size.tolist()
    T = sum(1 for t in range(model.m) if size[t] > 0)
    U = sum(max(1, len(model.consumers[t])) for t in range(model.m) if size[t] > 0)
    return ModelEstimate.of(
        "cpsat_schedule",
        n * n + n * T + 1,
        n * n + n * P + n * U + 2 * n,
        4 * n * n + 2 * n * P + 3 * n * U + n * T,
    )


class CPSatSchedule(Scheduler):
    """Order and peak as one constraint model solved by OR-Tools CP-SAT.

    Time-indexed formulation in the spirit of OLLA (Steiner et al., 2022) and MODeL (Steiner et
    al., ICML 2023), with ``n`` steps (one operator per step):

    * ``started[v, k]`` (bool): operator ``v`` ran at a step ``<= k``; non-decreasing in ``k``,
      ``started[v, n-1] = 1`` and ``sum_v started[v, k] = k + 1`` (exactly one operator per step);
    * precedence: ``started[v, k] <= started[u, k-1]`` for every predecessor ``u`` of ``v``;
    * liveness ``alive[t, k]`` (bool) of each activation ``t`` produced by ``p``: live from ``p``'s
      step to the step of its last consumer (closed range, :mod:`scheduling.lifetimes`), imposed as
      ``alive[t, k] >= started[p, k] - started[c, k-1]`` for each consumer ``c``; a graph output
      ``alive[t, k] >= started[p, k]``; an unread tensor ``alive[t, k] >= ran[p, k]``;
    * ``sum_t size(t) * alive[t, k] <= peak`` for every step; minimise ``peak`` (bytes).

    The best of the ``min_live``, DFS and stored orders and of ``best_of``'s candidates
    (:func:`.exact_dp.initial_order`, ``anneal`` and ``genetic`` included, each given a tenth of
    ``time_limit``) is given as a hint and its peak as an upper bound, and it is returned
    whenever the solver does not find a better order, so the result is never worse than any
    heuristic of the toolkit; the order lower bound of :mod:`.bounds` is the peak variable's
    lower bound and the proved bound when the solver proves nothing more.

    The model has ``O(n^2 + n * #tensor uses)`` terms (:func:`estimate_model`); it is built only
    when its estimated build time is within ``model_budget`` times the time left (rates measured,
    :mod:`planners.model_size`), otherwise the call declines with status ``"skipped"`` and returns
    the initial order at once, so ``time_limit`` holds for the whole call.

    Parameters
    ----------
    time_limit : float, default 10.0
        Wall-clock seconds for the whole call: initial orders, model building and CP-SAT.
    num_workers : int, default 1
        CP-SAT search workers (1 keeps runs deterministic).
    random_seed : int, default 0
        CP-SAT ``random_seed``.
    max_ops : int or None, default None
        Optional hard cap on the number of operators; larger graphs are declined like an
        over-budget model (status ``"skipped"``).
    model_budget : float or None, default 0.5
        Fraction of the time left (``time_limit`` minus the initial orders' time) the estimated
        model build may take; above it the call declines
        (status ``"skipped"``, ``info["reason"]``, ``info["model_estimate"]``). ``None`` always
        builds (the time limit may then be exceeded by the build).
    best_of_start : bool, default True
        Include ``best_of``'s candidates in the initial order (see above); ``False`` for
        ablations.

    Returns (via :meth:`schedule`)
    ------------------------------
    Status ``"optimal"`` (proved), ``"feasible"`` (a solution, optimality not proved within the
    time limit; the initial order when it is better), ``"timeout"`` (no solution: the initial
    order is returned) or ``"skipped"`` (model not built, the initial order is returned). ``info``
    holds ``peak_bytes``, ``best_bound`` (bytes, proved), ``solver_status``, ``initial_peak``,
    ``initial_winner`` and ``model_estimate``.

    Raises
    ------
    CycleError
        The graph has a cycle (named).
    """

    name = "cpsat_schedule"
    _parameter_constraints = {
        "time_limit": [POSITIVE_SECONDS],
        "num_workers": [THREADS],
        "random_seed": [CPSAT_SEED],
        "max_ops": [Interval(Integral, 1, None), None],
        "model_budget": MODEL_BUDGET,
        "best_of_start": ["boolean"],
    }

    def __init__(
        self,
        time_limit: float = 10.0,
        num_workers: int = 1,
        random_seed: int = 0,
        max_ops: int | None = None,
        model_budget: float | None = 0.5,
        best_of_start: bool = True,
    ) -> None:
        self.time_limit = time_limit
        self.num_workers = num_workers
        self.random_seed = random_seed
        self.max_ops = max_ops
        self.model_budget = model_budget
        self.best_of_start = best_of_start

    def _schedule(self, graph: Graph) -> ScheduleResult:
        from ortools.sat.python import cp_model

        t0 = time.perf_counter()
        limit = float(self.time_limit)
        m = MemoryModel.of(graph)
        n = m.n
        lb = order_lower_bound(m) if n else 0
        info: dict = {"order_bound": lb}
        if n == 0:
            greedy, ub = [], 0
        else:
            greedy, ub = initial_order(m, self.best_of_start, info, 0.1 * limit)
        info.update(initial_peak=ub, peak_bytes=ub, best_bound=lb)
        if n == 0 or ub <= lb:
            return ScheduleResult(m.to_names(greedy), "optimal", {**info, "solver_status": "bound"},
                                  bound=lb)
        est = estimate_model(m)
        info["model_estimate"] = est.as_info()
        left = limit - (time.perf_counter() - t0)
        reason = decline_reason(est, left, self.model_budget, "cpsat_schedule")
        if reason is None and self.max_ops is not None and n > self.max_ops:
            reason = f"cpsat_schedule: {n} operators > max_ops={self.max_ops}; not built"
        if reason is not None:
            info.update(solver_status="not_run", reason=reason)
            return ScheduleResult(m.to_names(greedy), "skipped", info, bound=lb)
        model = cp_model.CpModel()
        st = [[model.NewBoolVar(f"s{v}_{k}") for k in range(n)] for v in range(n)]
        for v in range(n):
            model.Add(st[v][n - 1] == 1)
            for k in range(1, n):
                model.AddImplication(st[v][k - 1], st[v][k])
            for u in m.preds[v]:
                model.Add(st[v][0] == 0)
                for k in range(1, n):
                    model.AddImplication(st[v][k], st[u][k - 1])
        for k in range(n):
            model.Add(sum(st[v][k] for v in range(n)) == k + 1)
        peak = model.NewIntVar(lb, ub, "peak")
        size = m.size.tolist()
        keep = m.keep.tolist()
        live_terms: list[list] = [[] for _ in range(n)]
        for t in range(m.m):
            if size[t] == 0:
                continue
            p = int(m.producer[t])
            cons = m.consumers[t]
            for k in range(n):
                a = model.NewBoolVar(f"a{t}_{k}")
                if keep[t]:
                    model.Add(a >= st[p][k])
                elif not cons:
                    ran = st[p][k] if k == 0 else None
                    if ran is None:
                        model.Add(a >= st[p][k] - st[p][k - 1])
                    else:
                        model.Add(a >= ran)
                else:
                    for c in cons:
                        if k == 0:
                            model.Add(a >= st[p][0])
                        else:
                            model.Add(a >= st[p][k] - st[c][k - 1])
                live_terms[k].append(size[t] * a)
        for k in range(n):
            if live_terms[k]:
                model.Add(sum(live_terms[k]) <= peak)
        model.Minimize(peak)
        pos = {v: k for k, v in enumerate(greedy)}
        for v in range(n):
            for k in range(n):
                model.AddHint(st[v][k], 1 if pos[v] <= k else 0)
        info["build_seconds"] = round(time.perf_counter() - t0, 4)
        left = limit - (time.perf_counter() - t0)
        if left <= 0:
            info["solver_status"] = "not_run"
            return ScheduleResult(m.to_names(greedy), "timeout", info, bound=lb)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = left
        solver.parameters.num_workers = int(self.num_workers)
        solver.parameters.random_seed = int(self.random_seed)
        code = solver.Solve(model)
        sname = solver.StatusName(code)
        info["solver_status"] = sname
        if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            step = [sum(int(solver.Value(st[v][k])) == 0 for k in range(n)) for v in range(n)]
            order = sorted(range(n), key=lambda v: step[v])
            pk = m.peak(order)
            if pk > ub:  # never worse than the initial order (best_of's candidates)
                order, pk = greedy, ub
            bound = max(lb, math.ceil(solver.BestObjectiveBound() - 1e-6))
            status = "optimal" if code == cp_model.OPTIMAL and pk <= bound else "feasible"
            info.update(peak_bytes=pk, best_bound=bound)
            return ScheduleResult(m.to_names(order), status, info, bound=bound)
        return ScheduleResult(m.to_names(greedy), "timeout", info, bound=lb)
