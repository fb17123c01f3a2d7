"""Optimal-peak scheduling by dynamic programming over sets of scheduled operators (Serenity)."""

from __future__ import annotations

import time
from numbers import Integral

from planners.params import OPTIONAL_POSITIVE_SECONDS, Interval

from ..graph import Graph
from .base import Scheduler, ScheduleResult
from .list_base import list_schedule
from .memsim import MemoryModel

__all__ = ["ExactDP", "initial_order"]


def initial_order(
    model: MemoryModel, best_of: bool = True, info: dict | None = None
) -> tuple[list[int], int]:
    """The best of the cheap orders, as operator indices, with its peak (bytes).

    The cheap orders are greedy ``min_live``, ONNX Runtime's DFS and the stored order (when
    topological) and, with ``best_of=True``, every candidate of :class:`.best_of.BestOf`
    (:data:`.best_of.DEFAULT_CANDIDATES`), so an exact scheduler that returns it is never worse
    than ``best_of``. Ties keep that order. It is the upper bound and fallback of the exact
    schedulers. ``info`` (optional dict) receives ``initial_winner``, the name of the best.
    Cost: the candidates' costs, each about ``O((n + #tensor uses) log n)``.
    """
    from .best_of import DEFAULT_CANDIDATES
    from .registry import get_scheduler
    from .traversal import DFS

    cands = [
        (
            "min_live_greedy",
            *list_schedule(model, lambda tr, v: (tr.alloc[v] - tr.freed_now[v], tr.alloc[v], v)),
        )
    ]
    dfs = model.to_indices(DFS()._schedule(model.graph).order)
    cands.append(("dfs", dfs, model.peak(dfs)))
    stored = list(range(model.n))
    if model.is_topological(stored):
        cands.append(("file_order", stored, model.peak(stored)))
    if best_of:
        for name in DEFAULT_CANDIDATES:
            order = model.to_indices(get_scheduler(name).schedule(model.graph).order)
            cands.append((name, order, model.peak(order)))
    name, order, peak = min(cands, key=lambda c: c[2])
    if info is not None:
        info["initial_winner"] = name
    return order, peak


class ExactDP(Scheduler):
    """The minimum peak over all topological orders, by dynamic programming with memoisation
    (Ahn et al., "Ordering Chaos: Memory-Aware Scheduling of Irregularly Wired Neural Networks
    for Edge Devices" (Serenity), MLSys 2020; seed 002 exercise 5.4).

    A state is the set ``S`` of operators already run (a down-set of the DAG, stored as an integer
    bit mask). The live bytes after ``S`` depend on ``S`` only, so the best peak of any order that
    runs exactly ``S`` first obeys::

        peak*(S + v) = min over ready v of max(peak*(S), live(S) + alloc(v))

    The DP goes level by level (``|S| = 0, 1, ..., n``), keeping one entry per state (memoisation:
    orders reaching the same set merge) with its predecessor for reconstruction. Pruning: an upper
    bound from :func:`initial_order` (the best of ``min_live``, DFS, the stored order and
    ``best_of``'s candidates; states whose peak reaches it cannot improve it and are dropped),
    and the order-independent lower bound ``max_v (inputs(v) + outputs(v))``: when the initial
    order meets it, it is optimal without search.

    Parameters
    ----------
    max_states : int, default 500_000
        Budget on the number of states created.
    time_limit : float or None, default 10.0
        Budget in seconds for the whole call, the initial orders included (checked once per state
        expansion).
    best_of_start : bool, default True
        Start from the best of ``best_of``'s candidate orders too (:func:`initial_order`), so the
        result is never worse than ``best_of``; ``False`` (ablation) starts from the three cheap
        orders only.

    Returns (via :meth:`schedule`)
    ------------------------------
    Schedule with status ``"optimal"`` (``info["peak_bytes"]`` is the proved minimum) or, when a
    budget ran out, ``"timeout"`` with the best order known (:func:`initial_order`) and its peak.
    ``info`` also holds ``states``, ``lower_bound``, ``initial_peak`` and ``initial_winner``.

    Raises
    ------
    CycleError
        The graph has a cycle (named).

    Notes
    -----
    Worst case ``O(#down-sets * n)`` time and ``O(#down-sets)`` memory: exponential in the graph's
    width, fine for chains and small irregular graphs (<= ~25 operators in well under a second),
    hopeless for wide graphs -- hence the budgets. Peak convention of :mod:`.memsim` (the same as
    :func:`scheduling.lifetimes.peak_live_bytes`).
    """

    name = "exact_dp"
    _parameter_constraints = {
        "max_states": [Interval(Integral, 1, None)],
        "time_limit": OPTIONAL_POSITIVE_SECONDS,
        "best_of_start": ["boolean"],
    }

    def __init__(
        self, max_states: int = 500_000, time_limit: float | None = 10.0, best_of_start: bool = True
    ) -> None:
        self.max_states = max_states
        self.time_limit = time_limit
        self.best_of_start = best_of_start

    def _schedule(self, graph: Graph) -> ScheduleResult:
        t0 = time.perf_counter()
        m = MemoryModel(graph)
        n = m.n
        if n == 0:
            return ScheduleResult([], "optimal", {"peak_bytes": 0, "states": 0, "lower_bound": 0})
        lb = m.op_lower_bound()
        info: dict = {"lower_bound": lb}
        greedy, ub = initial_order(m, self.best_of_start, info)
        info["initial_peak"] = ub
        if ub <= lb:
            return ScheduleResult(
                m.to_names(greedy), "optimal", {**info, "peak_bytes": ub, "states": 1}
            )
        deadline = None if self.time_limit is None else t0 + float(self.time_limit)
        alloc = m.alloc.tolist()
        dead = m.dead.tolist()
        size = m.size.tolist()
        keep = m.keep.tolist()
        ins = m.ins
        pred_mask = [0] * n
        for v in range(n):
            for p in m.preds[v]:
                pred_mask[v] |= 1 << p
        cons_mask = [0] * m.m
        for t in range(m.m):
            for c in m.consumers[t]:
                cons_mask[t] |= 1 << c
        # freeable inputs of v: (tensor mask of consumers, bytes) for non-output inputs
        frees = [[(cons_mask[t], size[t]) for t in ins[v] if not keep[t]] for v in range(n)]
        full = (1 << n) - 1
        # level: state -> (peak, live, parent state, last op)
        level: dict[int, tuple[int, int]] = {0: (0, 0)}
        parents: list[dict[int, tuple[int, int]]] = []  # per level: state -> (prev state, op)
        states = 1
        for _k in range(n):
            nxt: dict[int, tuple[int, int]] = {}
            par: dict[int, tuple[int, int]] = {}
            for S, (pk, live) in level.items():
                if deadline is not None and time.perf_counter() > deadline:
                    return self._timeout(m, greedy, ub, info, states)
                rest = full & ~S
                r = rest
                while r:
                    low = r & -r
                    v = low.bit_length() - 1
                    r ^= low
                    if pred_mask[v] & ~S:
                        continue
                    at = live + alloc[v]
                    npk = pk if pk >= at else at
                    if npk >= ub:
                        continue
                    S2 = S | low
                    cur = nxt.get(S2)
                    if cur is not None and cur[0] <= npk:
                        continue
                    nl = at - dead[v]
                    for cm, sz in frees[v]:
                        if not (cm & ~S2):
                            nl -= sz
                    if cur is None:
                        states += 1
                        if states > self.max_states:
                            return self._timeout(m, greedy, ub, info, states)
                    nxt[S2] = (npk, nl)
                    par[S2] = (S, v)
            parents.append(par)
            level = nxt
            if not level:
                break
        if full not in level:  # every order peaks at >= ub: the initial order is optimal
            return ScheduleResult(
                m.to_names(greedy), "optimal", {**info, "peak_bytes": ub, "states": states}
            )
        best = level[full][0]
        order = []
        S = full
        for k in range(n - 1, -1, -1):
            S, v = parents[k][S]
            order.append(v)
        order.reverse()
        return ScheduleResult(
            m.to_names(order), "optimal", {**info, "peak_bytes": best, "states": states}
        )

    @staticmethod
    def _timeout(m: MemoryModel, greedy, ub, info, states) -> ScheduleResult:
        return ScheduleResult(
            m.to_names(greedy), "timeout", {**info, "peak_bytes": ub, "states": states}
        )
