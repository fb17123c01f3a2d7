"""Recomputation (rematerialisation) under a memory budget.

Instead of keeping a long-lived tensor (a skip connection, a tensor read early and late), free it
after one use and **recompute** its producer just before a later use (seed 002 section 5.4.3).
The model is Checkmate's / MOCCASIN's stage model on a fixed schedule ``order`` of ``T`` ops:

* stage ``t`` runs operator ``order[t]`` and, before it, any earlier operators chosen for
  recomputation (in schedule order, which is topological);
* a value (the activation outputs of one operator, bytes = their sum) is **live at stage t**
  when it is computed in stage ``t`` or retained from stage ``t - 1``; a computed version is
  retained until its last use before it is computed again (graph outputs: to the end);
* the memory of stage ``t`` is the sum of the sizes of the values live at ``t``; the peak is its
  maximum. Without recomputation it equals the lifetime peak of
  :func:`scheduling.lifetimes.peak_live_bytes` (activations only; graph inputs and weights are
  residents, always available).

Two solvers, same model, both report the extra MACs for a budget:

* :func:`greedy_recompute` -- repeatedly recompute the value with the best score
  ``memory_saved / recompute_cost`` (seed 002: ``M_saved(op) / C_recompute(op)``) among those live
  across a peak stage between two uses, recursively recomputing its inputs that are not live;
  a move is taken only if it lowers ``(peak, number of peak stages)``, so the **peak never
  increases**;
* :func:`cpsat_recompute` -- the exact 0-1 model (Checkmate, Jain et al., MLSys 2020; MOCCASIN,
  Bartan et al., ICML 2023, solved with OR-Tools CP-SAT): booleans ``C[t, v]`` (compute ``v`` in
  stage ``t``) and ``R[t, v]`` (retain ``v`` into stage ``t``), ``C[t, t] = 1``, a computation
  needs its inputs computed or retained in its stage, a retention needs the value in the previous
  stage, memory per stage ``<= budget``; minimise the recomputed cost (``budget=None``: first
  the smallest reachable peak, then the cost at that peak).

:func:`checkpoint_curve` is seed 002's ``sqrt(n)`` checkpointing model (the reference curve).

Costs are MACs (:attr:`Operator.macs`); an operator without a MAC estimate costs one per output
element (``cost_of`` overrides both).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .graph import Graph, Operator
from .lifetimes import _resolve_order
from .tiling import BudgetError

__all__ = [
    "RematProblem",
    "RematResult",
    "remat_problem",
    "simulate",
    "greedy_recompute",
    "cpsat_recompute",
    "checkpoint_curve",
    "RECOMPUTE_SOLVERS",
]


@dataclass
class RematProblem:
    """Stage-model data of a scheduled graph.

    Attributes
    ----------
    names : list of str
        Operator names in schedule order (stage ``t`` is ``names[t]``).
    sizes : int64 array ``(T,)``
        Bytes of each operator's activation outputs.
    costs : int64 array ``(T,)``
        Recompute cost (MACs) of each operator.
    preds : list of list of int
        Stages of the operators whose outputs each operator reads (activations only).
    outputs : set of int
        Operators writing a graph output (kept to the end).
    """

    names: list[str]
    sizes: np.ndarray
    costs: np.ndarray
    preds: list[list[int]]
    outputs: set[int]

    @property
    def T(self) -> int:
        """Number of stages."""
        return len(self.names)


def _default_cost(graph: Graph, op: Operator) -> int:
    if op.macs:
        return int(op.macs)
    return max(1, sum(graph.tensors[t].numel for t in op.outputs))


def remat_problem(graph: Graph, order: Sequence[str] | None = None,
                  cost_of: Callable[[Graph, Operator], int] | None = None) -> RematProblem:
    """Build the stage model of ``graph`` under ``order`` (default stored order).
    ``O(#ops + #tensor uses)``. Raises ``ScheduleError`` for an invalid order."""
    order = _resolve_order(graph, order)
    pos = {n: i for i, n in enumerate(order)}
    cost_of = cost_of or _default_cost
    sizes, costs, preds, outs = [], [], [], set()
    for i, n in enumerate(order):
        op = graph.ops[n]
        sizes.append(sum(graph.tensors[t].nbytes for t in op.outputs))
        costs.append(int(cost_of(graph, op)))
        preds.append(sorted({pos[graph.tensors[t].producer] for t in op.inputs
                             if graph.tensors[t].producer is not None}))
        if any(graph.tensors[t].kind == "output" for t in op.outputs):
            outs.add(i)
    return RematProblem(list(order), np.array(sizes, np.int64), np.array(costs, np.int64),
                        preds, outs)


def _versions(rp: RematProblem, comp: Sequence[Sequence[int]]) -> list[tuple[int, int, int]]:
    """Every computed version of every value as ``(value, stage computed, last stage live)``
    (closed stage range): a version is retained until its last use before the next computation
    of the value (graph outputs: to the last stage). ``O(T + sum |comp[t]| x fan-in)``."""
    T = rp.T
    computed: list[list[int]] = [[] for _ in range(T)]
    uses: list[list[int]] = [[] for _ in range(T)]
    for t in range(T):
        for u in comp[t]:
            computed[u].append(t)
            for w in rp.preds[u]:
                uses[w].append(t)
    out = []
    for v in range(T):
        cs = computed[v]
        if not cs:
            continue
        us = sorted(uses[v])
        j = 0
        for a, c in enumerate(cs):
            nxt = cs[a + 1] if a + 1 < len(cs) else T
            last = c
            while j < len(us) and us[j] < nxt:
                if us[j] >= c:
                    last = max(last, us[j])
                j += 1
            if v in rp.outputs and a == len(cs) - 1:
                last = T - 1
            out.append((v, c, last))
    return out


def simulate(rp: RematProblem, comp: Sequence[Sequence[int]]) -> np.ndarray:
    """Memory of every stage (int64 array ``(T,)``, bytes) for the computation sets ``comp``
    (``comp[t]``: operators computed in stage ``t``, ``t`` included). ``O(T + sum |comp[t]| x
    fan-in)`` with a difference array."""
    T = rp.T
    delta = np.zeros(T + 1, np.int64)
    for v, c, last in _versions(rp, comp):
        delta[c] += rp.sizes[v]
        delta[last + 1] -= rp.sizes[v]
    return np.cumsum(delta[:T])


@dataclass
class RematResult:
    """Result of a recomputation solver (bytes, MACs).

    Attributes
    ----------
    solver : str
    budget : int or None
    peak, baseline_peak : int
        Stage-model peak with and without recomputation.
    extra_cost, total_cost : int
        Recomputed MACs, and the MACs of one plain run.
    recomputed : list of (str, str)
        ``(operator recomputed, stage operator it runs before)``.
    status : str
        ``"feasible"`` (greedy, or CP-SAT without proof), ``"optimal"``, ``"infeasible"``.
    seconds : float
    comp : list of list of int
        The computation sets per stage.
    """

    solver: str
    budget: int | None
    peak: int
    baseline_peak: int
    extra_cost: int
    total_cost: int
    recomputed: list[tuple[str, str]]
    status: str
    seconds: float
    comp: list[list[int]] = field(repr=False, default_factory=list)

    @property
    def extra_ratio(self) -> float:
        """``extra_cost / total_cost``."""
        return self.extra_cost / self.total_cost if self.total_cost else 0.0

    def as_dict(self) -> dict:
        """A flat record (no ``comp``)."""
        return {"solver": self.solver, "budget": self.budget, "peak": self.peak,
                "baseline_peak": self.baseline_peak, "extra_cost": self.extra_cost,
                "extra_ratio": self.extra_ratio, "recomputed": len(self.recomputed),
                "status": self.status, "seconds": self.seconds}


def _result(rp, comp, solver, budget, status, t0) -> RematResult:
    mem = simulate(rp, comp)
    base = simulate(rp, [[t] for t in range(rp.T)])
    extra = int(sum(int(rp.costs[v]) for t in range(rp.T) for v in comp[t] if v != t))
    rec = [(rp.names[v], rp.names[t]) for t in range(rp.T) for v in comp[t] if v != t]
    return RematResult(solver, budget, int(mem.max()) if rp.T else 0,
                       int(base.max()) if rp.T else 0, extra, int(rp.costs.sum()), rec, status,
                       time.perf_counter() - t0, [list(c) for c in comp])


def _live_at(rp: RematProblem, comp, v: int, t: int) -> bool:
    """True iff some version of ``v`` is live at stage ``t`` (computed there, or computed
    before and used at or after ``t`` before the next computation)."""
    last_c = -1
    for s in range(t, -1, -1):
        if v in comp[s]:
            last_c = s
            break
    if last_c < 0:
        return False
    if last_c == t or (v in rp.outputs):
        return True
    for s in range(t, rp.T):
        if s > t and v in comp[s]:
            return False
        for u in comp[s]:
            if v in rp.preds[u]:
                return True
    return False


def greedy_recompute(graph: Graph | RematProblem, budget: int | None = None,
                     order: Sequence[str] | None = None, max_depth: int = 4,
                     max_moves: int = 500) -> RematResult:
    """Greedy rematerialisation by ``memory_saved / recompute_cost`` (module docstring).

    Parameters
    ----------
    graph : Graph or RematProblem
    budget : int or None
        Stop as soon as the peak is ``<= budget`` bytes; ``None``: go on while the peak drops
        (the smallest peak this greedy reaches).
    order : sequence of str or None
        Schedule (when ``graph`` is a Graph).
    max_depth : int
        Inputs of a recomputed operator that are not live are recomputed too, down to this depth
        (beyond it they are retained longer instead).
    max_moves : int
        Cap on the number of recomputations.

    Returns
    -------
    RematResult
        Status ``"feasible"``. The peak is never above the baseline peak.

    Raises
    ------
    BudgetError
        ``budget`` given and not reached; the message names the smallest peak reached.

    Notes
    -----
    Each move evaluates every candidate (value live across a peak stage between two uses) with
    :func:`simulate`: ``O(#candidates x T)`` per move.
    """
    t0 = time.perf_counter()
    rp = graph if isinstance(graph, RematProblem) else remat_problem(graph, order)
    T = rp.T
    comp: list[list[int]] = [[t] for t in range(T)]
    mem = simulate(rp, comp)
    for _ in range(max_moves):
        if T == 0:
            break
        peak = int(mem.max())
        if budget is not None and peak <= budget:
            break
        npeak = int((mem == peak).sum())
        peaks = np.flatnonzero(mem == peak)
        best = None
        tried = set()
        for p in peaks.tolist():
            for v in range(p):
                if rp.sizes[v] == 0 or (v, p) in tried:
                    continue
                # uses of v's current version around p
                q = _next_use(rp, comp, v, p)
                if q is None or not _live_at(rp, comp, v, p) or v in comp[p]:
                    continue
                tried.add((v, p))
                new = [list(c) for c in comp]
                cost = _add_recompute(rp, new, v, q, max_depth)
                if cost is None:
                    continue
                m2 = simulate(rp, new)
                pk2, n2 = int(m2.max()), int((m2 == m2.max()).sum())
                if (pk2, n2) >= (peak, npeak):
                    continue
                score = (int(rp.sizes[v]) / max(cost, 1), -pk2, -v, -q)
                if best is None or score > best[0]:
                    best = (score, new, m2)
        if best is None:
            break
        comp, mem = best[1], best[2]
    res = _result(rp, comp, "greedy", budget, "feasible", t0)
    if budget is not None and res.peak > budget:
        raise BudgetError(
            f"recomputation (greedy): budget {budget} bytes is below the smallest reachable peak "
            f"{res.peak} bytes (baseline {res.baseline_peak} bytes, {len(res.recomputed)} "
            "recomputations)", smallest_peak=res.peak
        )
    return res


def _next_use(rp: RematProblem, comp, v: int, p: int) -> int | None:
    """First stage after ``p`` that uses ``v`` (None if none before a recomputation of v)."""
    for s in range(p + 1, rp.T):
        if v in comp[s]:
            return None
        for u in comp[s]:
            if v in rp.preds[u]:
                return s
    return None


def _add_recompute(rp: RematProblem, comp, v: int, q: int, depth: int) -> int | None:
    """Insert ``v`` into ``comp[q]`` (and, recursively, its inputs not live at ``q``); return the
    added cost."""
    if v in comp[q]:
        return 0
    cost = int(rp.costs[v])
    for w in rp.preds[v]:
        if depth > 0 and not _live_at(rp, comp, w, q):
            c = _add_recompute(rp, comp, w, q, depth - 1)
            if c is None:
                return None
            cost += c
    comp[q] = sorted(set(comp[q]) | {v})
    return cost


def _remat_model(rp: RematProblem, budget: int | None):
    """The Checkmate/MOCCASIN 0-1 model (module docstring). With ``budget=None`` the per-stage
    memory is bounded by an integer variable ``M`` (the peak) instead. Returns ``(model, C, R,
    M or None, cost expression)``."""
    from ortools.sat.python import cp_model

    T = rp.T
    m = cp_model.CpModel()
    C = {}
    R = {}
    M = None
    if budget is None:
        M = m.NewIntVar(0, int(rp.sizes.sum()), "peak")
    for t in range(T):
        for v in range(t + 1):
            C[t, v] = m.NewBoolVar(f"C{t}_{v}")
        for v in range(t):
            R[t, v] = m.NewBoolVar(f"R{t}_{v}")
            m.AddBoolOr([C[t, v].Not(), R[t, v].Not()])
        m.Add(C[t, t] == 1)
    for v in rp.outputs:  # kept to the end
        if v < T - 1:
            m.Add(R[T - 1, v] == 1)
    for t in range(T):
        for v in range(t + 1):
            for u in rp.preds[v]:
                m.AddBoolOr([C[t, v].Not(), C[t, u], R[t, u]])
        for v in range(t):
            prev = [C[t - 1, v]] + ([R[t - 1, v]] if v < t - 1 else [])
            m.AddBoolOr([R[t, v].Not(), *prev])
        terms = [int(rp.sizes[v]) * C[t, v] for v in range(t + 1) if rp.sizes[v]]
        terms += [int(rp.sizes[v]) * R[t, v] for v in range(t) if rp.sizes[v]]
        m.Add(sum(terms) <= (M if M is not None else int(budget)))
    cost = sum(int(rp.costs[v]) * C[t, v] for t in range(T) for v in range(t))
    return m, C, R, M, cost


def _hint(m, C, R, rp: RematProblem, comp) -> None:
    """A complete solution hint (every ``C`` and ``R``) from computation sets ``comp``."""
    T = rp.T
    keep = set()
    for v, c, last in _versions(rp, comp):
        keep.update((t, v) for t in range(c + 1, last + 1))
    for t in range(T):
        cs = set(comp[t])
        for v in range(t):
            m.AddHint(C[t, v], v in cs)
            m.AddHint(R[t, v], (t, v) in keep)


def _solver(time_limit: float, workers: int, seed: int):
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, float(time_limit))
    solver.parameters.num_search_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    return solver


def cpsat_recompute(graph: Graph | RematProblem, budget: int | None,
                    order: Sequence[str] | None = None, time_limit: float = 30.0,
                    workers: int = 1, seed: int = 0, hint_greedy: bool = True) -> RematResult:
    """Exact minimum-cost recomputation for ``budget`` (Checkmate/MOCCASIN 0-1 model, CP-SAT).

    Parameters
    ----------
    graph : Graph or RematProblem
    budget : int or None
        Bytes per stage. ``None``: the smallest reachable peak -- first minimise the peak
        (half of ``time_limit``), then the recomputed MACs at that peak (the rest).
    time_limit : float
        Seconds in total; ``workers`` and ``seed`` make the run deterministic.
    hint_greedy : bool
        Start from :func:`greedy_recompute`'s solution when it fits (a solution hint).

    Returns
    -------
    RematResult
        ``"optimal"`` when proved (with ``budget=None``: both the peak and the cost at that peak
        proved); ``"feasible"`` otherwise.

    Raises
    ------
    BudgetError
        Proved infeasible, or no solution within the time limit; the message gives the smallest
        peak the greedy reaches.

    Notes
    -----
    ``T (T + 1)`` booleans and ``O(T x #edges)`` constraints; meant for graphs of up to a few
    hundred operators.
    """
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    rp = graph if isinstance(graph, RematProblem) else remat_problem(graph, order)
    T = rp.T
    m, C, R, M, cost = _remat_model(rp, budget)
    g = None
    if hint_greedy:
        try:
            g = greedy_recompute(rp, budget)
            _hint(m, C, R, rp, g.comp)
            if M is not None:
                m.AddHint(M, g.peak)
        except BudgetError:
            g = None
    proved = True
    first = None
    left = float(time_limit)
    if M is not None:
        m.Minimize(M)
        solver = _solver(left / 2, workers, seed)
        st = solver.Solve(m)
        left -= solver.WallTime()
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            raise BudgetError(
                f"recomputation (cpsat): no solution in {time_limit} s for the smallest peak "
                f"(greedy reaches {g.peak if g else 'nothing'} bytes)",
                smallest_peak=g.peak if g else None,
            )
        proved = st == cp_model.OPTIMAL
        best = int(solver.Value(M))
        first = [[v for v in range(t + 1) if solver.BooleanValue(C[t, v])] for t in range(T)]
        m.Add(M <= best)
        m.ClearHints()
        _hint(m, C, R, rp, first)  # the peak phase's solution is the hint of the cost phase
        m.ClearObjective()
    m.Minimize(cost)
    solver = _solver(left, workers, seed)
    st = solver.Solve(m)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE) and first is not None:
        # the cost phase found nothing in the time left: keep the peak phase's solution
        return _result(rp, first, "cpsat", budget, "feasible", t0)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        g = greedy_recompute(rp, None)
        why = "proved infeasible" if st == cp_model.INFEASIBLE else "no solution in time"
        raise BudgetError(
            f"recomputation (cpsat): budget {budget} bytes: {why}; the smallest reachable peak "
            f"found is {g.peak} bytes (greedy; baseline {g.baseline_peak} bytes)",
            smallest_peak=g.peak,
        )
    comp = [[v for v in range(t + 1) if solver.BooleanValue(C[t, v])] for t in range(T)]
    ok = proved and st == cp_model.OPTIMAL
    return _result(rp, comp, "cpsat", budget, "optimal" if ok else "feasible", t0)


#: Name -> solver ``f(graph_or_problem, budget, **params) -> RematResult``.
RECOMPUTE_SOLVERS = {"greedy": greedy_recompute, "cpsat": cpsat_recompute}


def checkpoint_curve(n: int, layer_bytes: float = 1.0, ks: Sequence[int] | None = None) -> dict:
    """Seed 002 section 5.4.3's checkpointing model for an ``n``-layer chain (training).

    With ``k`` evenly spaced checkpoints (layers ``i floor(n / (k + 1))``), the backward pass
    keeps the ``k`` checkpoints and recomputes one segment of ``~n / k`` layers at a time:
    memory ``(k + n / k) x layer_bytes``, minimised at ``k = sqrt(n)`` (``2 sqrt(n)`` layers,
    ``O(sqrt(n))`` instead of ``O(n)``), for one extra forward pass of ``n - k`` layers (seed 002:
    ``C_checkpoint = 2 C_f``).

    Returns
    -------
    dict of numpy arrays
        ``k``, ``memory`` (bytes), ``extra_forward`` (recomputed layer-forwards, ``n - k``) and
        ``extra_ratio`` (``(n - k) / n`` of a forward pass); plus ``k_opt = round(sqrt(n))``.

    Examples
    --------
    >>> c = checkpoint_curve(100, ks=[10])     # exercise 5.5: 100 layers of M bytes
    >>> c["k_opt"], float(c["memory"][0]), int(c["extra_forward"][0])
    (10, 20.0, 90)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"number of layers n must be an integer >= 1, got {n!r}")
    ks = np.arange(1, n + 1) if ks is None else np.asarray(ks, dtype=np.int64)
    mem = (ks + n / ks) * layer_bytes
    extra = n - ks
    return {"k": ks, "memory": mem, "extra_forward": extra, "extra_ratio": extra / n,
            "k_opt": int(round(math.sqrt(n)))}
