"""Optimal-peak scheduling as a CP-SAT model with liveness variables (OLLA / MODeL style)."""

from __future__ import annotations

from ..graph import Graph
from .base import Scheduler, ScheduleResult
from .exact_dp import initial_order
from .memsim import MemoryModel

__all__ = ["CPSatSchedule"]


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

    The best of the ``min_live``, DFS and stored orders (:func:`.exact_dp.initial_order`) is
    given as a hint and its peak as an upper bound; the
    order-independent bound ``max_v (inputs(v) + outputs(v))`` is the lower bound.

    Parameters
    ----------
    time_limit : float, default 10.0
        CP-SAT wall-clock limit in seconds.
    num_workers : int, default 1
        CP-SAT search workers (1 keeps runs deterministic).
    random_seed : int, default 0
        CP-SAT ``random_seed``.
    max_ops : int, default 200
        Larger graphs are not modelled (``O(n^2 + n * #tensor uses)`` variables); the initial order
        is returned with status ``"timeout"`` and ``info["reason"]``.

    Returns (via :meth:`schedule`)
    ------------------------------
    Status ``"optimal"`` (proved), ``"feasible"`` (a solution, optimality not proved within the
    time limit) or ``"timeout"`` (no solution: the initial order is returned). ``info`` holds
    ``peak_bytes``, ``best_bound`` and ``solver_status``.

    Raises
    ------
    CycleError
        The graph has a cycle (named).
    """

    name = "cpsat_schedule"

    def __init__(
        self,
        time_limit: float = 10.0,
        num_workers: int = 1,
        random_seed: int = 0,
        max_ops: int = 200,
    ) -> None:
        self.time_limit = time_limit
        self.num_workers = num_workers
        self.random_seed = random_seed
        self.max_ops = max_ops

    def _schedule(self, graph: Graph) -> ScheduleResult:
        from ortools.sat.python import cp_model

        m = MemoryModel(graph)
        n = m.n
        greedy, ub = initial_order(m)
        lb = m.op_lower_bound()
        if n == 0 or ub <= lb:
            return ScheduleResult(
                m.to_names(greedy),
                "optimal",
                {"peak_bytes": ub, "best_bound": lb, "solver_status": "bound"},
            )
        if n > self.max_ops:
            return ScheduleResult(
                m.to_names(greedy),
                "timeout",
                {
                    "peak_bytes": ub,
                    "best_bound": lb,
                    "solver_status": "not_run",
                    "reason": f"{n} operators > max_ops={self.max_ops}",
                },
            )
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
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = float(self.time_limit)
        solver.parameters.num_workers = int(self.num_workers)
        solver.parameters.random_seed = int(self.random_seed)
        code = solver.Solve(model)
        sname = solver.StatusName(code)
        if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            step = [sum(int(solver.Value(st[v][k])) == 0 for k in range(n)) for v in range(n)]
            order = sorted(range(n), key=lambda v: step[v])
            pk = m.peak(order)
            if pk > ub:  # never worse than the hint
                order, pk = greedy, ub
            status = "optimal" if code == cp_model.OPTIMAL else "feasible"
            return ScheduleResult(
                m.to_names(order),
                status,
                {
                    "peak_bytes": pk,
                    "best_bound": int(solver.BestObjectiveBound()),
                    "solver_status": sname,
                },
            )
        return ScheduleResult(
            m.to_names(greedy),
            "timeout",
            {"peak_bytes": ub, "best_bound": lb, "solver_status": sname},
        )
