"""Operator order and memory layout optimised together (OR-Tools CP-SAT).

The toolkit's usual pipeline chooses an operator order (a scheduler) and then places offsets for
that order's lifetimes (a planner). :func:`joint_optimize` searches both at once, in the spirit
of OLLA / MODeL (ICML 2023), which solve order and addresses in one ILP:

* **model** (CP-SAT): one position variable per operator (``AllDifferent``, a producer runs before
  each of its consumers); every buffer's lifetime follows the order with the conventions of
  :mod:`scheduling.lifetimes` -- an activation is live on the closed range ``[producer step,
  last consumer step]`` (half-open ``[first, last + 1)`` as a :class:`planners.Buffer`), a graph
  output to the last step ``T - 1``, an unread tensor on its producer's step only, a graph input
  with ``include_inputs`` from step 0 to its last consumer, a resident (``unified``: graph inputs
  and read weights) on ``[0, T)``; one offset variable per buffer, a multiple of the alignment;
  no two buffers overlap in time x address (``AddNoOverlap2D``); the objective is the arena
  (highest ``offset + size``, bytes). The lifetime model has no in-place aliases
  (:mod:`scheduling.lifetimes` declares none), so neither has this one; pools and pins are not
  features of a graph's lifetime problem and are not modelled.
* **exact** on small graphs (``<= exact_max_ops`` operators): the whole model, hinted with the
  best sequential pair; its status is ``optimal`` only when the arena equals the proved bound.
* **anytime** beyond: it starts from the best (scheduler, planner) pair -- every given scheduler's
  order (all registered ones by default), the lowest peaks planned by ``planner`` -- and improves
  it by large-neighbourhood search: a window of consecutive steps whose operators may be permuted
  (precedence kept) and a band of addresses whose buffers may move, the rest fixed, each
  sub-model minimising the highest ``offset + size`` of the buffers it frees, so the arena never
  increases (40 % of the neighbourhoods move addresses only, keeping the order). The first 40 %
  of the time, and every other iteration after it, works on the order alone: a window around the step of most live bytes is permuted by
  a CP-SAT model with a cumulative constraint (the peak of live bytes, addresses ignored), and
  when that shadow order's peak falls below the arena it is planned by ``planner`` and adopted
  if its arena is lower. The result is never worse than the starting pair.

The **bound** (bytes) is the larger of the order bound (``resident bytes +``
:func:`scheduling.schedulers.bounds.order_lower_bound`, a lower bound on every order's peak of
live bytes, hence on every arena) and the layout bound that CP-SAT proved on the whole model
(exact mode). The status is ``optimal`` exactly when ``arena <= bound``, else ``feasible``.

Every result is checked by the independent validators: the order by
:func:`scheduling.schedule.check_schedule`, the offsets by :func:`planners.validate.check_plan` on
:func:`scheduling.lifetimes.lifetime_problem` of that order.

Determinism: with ``workers=1``, a fixed ``seed`` and a ``deterministic_time`` budget (CP-SAT's
deterministic time units, summed over sub-solves) the result does not depend on the machine's
load, as long as the wall-clock ``time_limit`` is not what stops the search and the starting
schedulers are themselves deterministic (``schedulers`` without wall-clock limits).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planners.validate import check_plan

from .graph import Graph
from .lifetimes import lifetime_problem, resident_bytes
from .schedule import Schedule, check_schedule

__all__ = ["JointResult", "joint_optimize", "sequential_pairs"]


@dataclass
class JointResult:
    """The outcome of :func:`joint_optimize`: a checked order and a checked plan.

    Attributes
    ----------
    schedule : Schedule
        The order (``scheduler="joint"``), its ``bound`` the order bound (bytes, on the peak).
    problem : planners.Problem
        :func:`scheduling.lifetimes.lifetime_problem` of the order (buffer ids are tensor names).
    offsets : numpy int64 array
        Bytes, in ``problem`` order; valid (``planners.check_plan``).
    arena : int
        Highest ``offset + size`` (bytes).
    bound : int
        Proved lower bound (bytes) on the arena of every (order, layout) pair.
    status : str
        ``"optimal"`` iff ``arena <= bound``, else ``"feasible"``.
    start : dict
        The starting sequential pair: ``scheduler``, ``planner``, ``arena``, ``peak``; and
        ``file_order_arena`` (file order planned by the same planner).
    seconds : float
        Wall-clock seconds of the whole call.
    info : dict
        ``mode`` (``exact``/``lns``), ``iterations``, ``improvements``, ``trace`` (list of
        ``(seconds, arena)`` whenever the arena fell), ``deterministic_time``.
    """

    schedule: Schedule
    problem: Any
    offsets: np.ndarray
    arena: int
    bound: int
    status: str
    start: dict = field(default_factory=dict)
    seconds: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def order(self) -> tuple[str, ...]:
        """The operator order (names)."""
        return self.schedule.order

    def offsets_by_id(self) -> dict[str, int]:
        """``{tensor name: offset}`` (bytes)."""
        return {b.id: int(o) for b, o in zip(self.problem.buffers, self.offsets)}


# --------------------------------------------------------------------------------------------
# the compiled instance


class _Instance:
    """The graph as integer arrays: operators ``0..n-1`` (stored order), buffers in the order of
    :func:`lifetime_problem` of the stored order (the set of buffers does not depend on the
    order)."""

    def __init__(self, graph: Graph, unified: bool, include_inputs: bool, alignment: int):
        self.graph = graph
        self.unified, self.include_inputs, self.alignment = unified, include_inputs, alignment
        self.names = list(graph.ops)
        self.idx = {n: i for i, n in enumerate(self.names)}
        self.n = n = len(self.names)
        p = lifetime_problem(graph, None, unified=unified, include_inputs=include_inputs,
                             alignment=alignment)
        self.ids = [b.id for b in p.buffers]
        self.size = [int(b.size) for b in p.buffers]
        self.kind = []  # 'res' | 'in' | 'act'
        self.prod: list[int | None] = []
        self.cons: list[list[int]] = []
        self.out: list[bool] = []
        for b in p.buffers:
            t = graph.tensors[b.id]
            cons = sorted({self.idx[c] for c in t.consumers if c in self.idx})
            if b.kind == "resident":
                self.kind.append("res")
                self.prod.append(None)
            elif t.producer is None:
                self.kind.append("in")
                self.prod.append(None)
            else:
                self.kind.append("act")
                self.prod.append(self.idx[t.producer])
            self.cons.append(cons)
            self.out.append(t.kind == "output")
        self.preds = [sorted({self.idx[graph.tensors[t].producer] for t in graph.ops[o].inputs
                              if graph.tensors[t].producer is not None}) for o in self.names]
        self.m = len(self.ids)
        self.uses: list[list[int]] = [[] for _ in range(n)]  # buffers whose lifetime v touches
        for b in range(self.m):
            for v in ([self.prod[b]] if self.prod[b] is not None else []) + self.cons[b]:
                self.uses[v].append(b)

    def lifetimes(self, pos: Sequence[int]) -> tuple[list[int], list[int]]:
        """Closed ``(first, last)`` steps per buffer under operator positions ``pos``."""
        T = self.n
        first, last = [], []
        for b in range(self.m):
            k = self.kind[b]
            if k == "res":
                first.append(0)
                last.append(T - 1)
                continue
            f = 0 if k == "in" else pos[self.prod[b]]
            e = max((pos[c] for c in self.cons[b]), default=f)
            if self.out[b]:
                e = T - 1
            first.append(f)
            last.append(max(e, f))
        return first, last

    def peak(self, pos: Sequence[int]) -> int:
        """Peak of live bytes (bytes) over steps of the buffers under positions ``pos``."""
        first, last = self.lifetimes(pos)
        d = np.zeros(self.n + 1, np.int64)
        np.add.at(d, first, self.size)
        np.add.at(d, np.asarray(last) + 1, -np.asarray(self.size, np.int64))
        return int(np.cumsum(d[: self.n]).max()) if self.n else 0

    def arena(self, offsets: Sequence[int]) -> int:
        return max((o + s for o, s in zip(offsets, self.size)), default=0)

    def problem(self, order: Sequence[str]):
        return lifetime_problem(self.graph, order, unified=self.unified,
                                include_inputs=self.include_inputs, alignment=self.alignment)

    def offsets_in(self, problem, offsets: Sequence[int]) -> np.ndarray:
        by_id = dict(zip(self.ids, offsets))
        return np.array([by_id[b.id] for b in problem.buffers], dtype=np.int64)


# --------------------------------------------------------------------------------------------
# the CP-SAT (sub-)model


def _lifetime_interval(mdl, inst, b: int, position, T: int):
    """The CP-SAT interval of buffer ``b``'s steps ``[first, last]`` (closed; the interval is
    half-open ``[first, last + 1)``) when operator ``op`` runs at step ``position(op)`` (an int
    or a CP-SAT integer variable): a graph input or resident from step 0, else from its
    producer's step; a resident or graph output to the last step ``T - 1``, else to its last
    consumer's step (an unread buffer only at its producer's step). Fixed-size when both ends
    are known integers. Used by both neighbourhood models, so they agree on lifetimes."""
    k = inst.kind[b]
    f = 0 if k in ("in", "res") else position(inst.prod[b])
    if k == "res" or inst.out[b]:
        e = T - 1
    elif inst.cons[b]:
        cs = [position(c) for c in inst.cons[b]]
        if all(isinstance(c, int) for c in cs):
            e = max(cs)
        else:
            e = mdl.NewIntVar(0, T - 1, f"e{b}")
            mdl.AddMaxEquality(e, cs)
    else:
        e = f
    if isinstance(f, int) and isinstance(e, int):
        return mdl.NewFixedSizeIntervalVar(f, e + 1 - f, f"t{b}")
    ln = mdl.NewIntVar(1, T, f"l{b}")
    return mdl.NewIntervalVar(f, ln, e + 1, f"t{b}")


def _solve(inst: _Instance, pos: list[int], off: list[int], window: tuple[int, int],
           free_bufs: set[int], *, dtime: float | None, wall: float, seed: int, workers: int,
           whole: bool = False):
    """Re-optimise operators at steps ``window = [lo, hi)`` and the offsets of ``free_bufs``
    (plus every buffer whose lifetime depends on a window operator), everything else fixed.

    Returns ``(pos, off, objective_bound or None, deterministic_time, improved)``; ``pos``/``off``
    are the inputs when the solver found nothing.
    """
    from ortools.sat.python import cp_model

    n, T = inst.n, inst.n
    lo, hi = window
    by_pos = sorted(range(n), key=lambda v: pos[v])
    wops = [by_pos[k] for k in range(lo, hi)]
    wset = set(wops)
    cur_first, cur_last = inst.lifetimes(pos)
    arena = inst.arena(off)
    a = inst.alignment
    mdl = cp_model.CpModel()
    P: dict[int, Any] = {}
    for v in wops:
        P[v] = mdl.NewIntVar(lo, hi - 1, f"p{v}")
        mdl.AddHint(P[v], pos[v])
    if len(wops) > 1:
        mdl.AddAllDifferent([P[v] for v in wops])
    for v in wops:
        for u in inst.preds[v]:
            if u in wset:
                mdl.Add(P[u] < P[v])

    def pexpr(v):
        return P[v] if v in P else pos[v]

    var_life = set()
    for v in wops:
        var_life.update(inst.uses[v])
    # time hull that variable lifetimes can reach
    h_lo, h_hi = lo, hi - 1
    for b in var_life:
        h_lo = min(h_lo, cur_first[b])
        h_hi = max(h_hi, cur_last[b])
    active = set(var_life) | set(free_bufs)
    for b in active:
        h_lo = min(h_lo, cur_first[b])
        h_hi = max(h_hi, cur_last[b])
    fixed_near = [b for b in range(inst.m) if b not in active and inst.size[b] > 0
                  and cur_first[b] <= h_hi and cur_last[b] >= h_lo]
    tx, ay, dem = [], [], []
    top = mdl.NewIntVar(0, arena, "top")
    old_local = 0
    for b in sorted(active):
        s = inst.size[b]
        if s == 0:
            continue
        old_local = max(old_local, off[b] + s)
        if b in var_life:
            iv = _lifetime_interval(mdl, inst, b, pexpr, T)
        else:
            iv = mdl.NewFixedSizeIntervalVar(cur_first[b], cur_last[b] + 1 - cur_first[b],
                                             f"t{b}")
        k = mdl.NewIntVar(0, max(0, (arena - s) // a), f"k{b}")
        mdl.AddHint(k, off[b] // a)
        o = k * a if a != 1 else k
        mdl.Add(o + s <= top)
        tx.append(iv)
        dem.append(s)
        ay.append(mdl.NewIntervalVar(o, s, o + s, f"a{b}") if a != 1
                  else mdl.NewFixedSizeIntervalVar(k, s, f"a{b}"))
    for b in fixed_near:
        tx.append(mdl.NewFixedSizeIntervalVar(cur_first[b], cur_last[b] + 1 - cur_first[b],
                                              f"t{b}"))
        ay.append(mdl.NewFixedSizeIntervalVar(off[b], inst.size[b], f"a{b}"))
    if len(tx) > 1:
        mdl.AddNoOverlap2D(tx, ay)
    if dem:  # redundant: the freed buffers, all below ``top``, never hold more than ``top``
        mdl.AddCumulative(tx[:len(dem)], dem, top)
    mdl.AddHint(top, old_local)
    if whole:
        mdl.Minimize(top)
    else:
        mdl.Add(top <= old_local)
        mdl.Minimize(top)
    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.num_workers = workers
    prm.random_seed = seed
    prm.max_time_in_seconds = max(0.01, wall)
    if dtime is not None:
        prm.max_deterministic_time = dtime
    st = solver.Solve(mdl)
    dt = solver.deterministic_time
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return pos, off, None, dt, False
    npos = list(pos)
    for v in wops:
        npos[v] = solver.Value(P[v])
    noff = list(off)
    # read offsets back through the address intervals' start expressions
    i = 0
    for b in sorted(active):
        if inst.size[b] == 0:
            continue
        noff[b] = solver.Value(ay[i].StartExpr())
        i += 1
    bound = int(solver.BestObjectiveBound()) if whole else None
    if whole and st == cp_model.OPTIMAL:
        bound = int(solver.ObjectiveValue())
    improved = solver.ObjectiveValue() < old_local or npos != pos
    return npos, noff, bound, dt, improved


def _peak_window(inst: _Instance, pos, w: int, rng: random.Random) -> tuple[int, int]:
    """``w`` consecutive steps around a step of maximum live bytes (70 %) or anywhere."""
    first, last = inst.lifetimes(pos)
    d = np.zeros(inst.n + 1, np.int64)
    np.add.at(d, first, inst.size)
    np.add.at(d, np.asarray(last) + 1, -np.asarray(inst.size, np.int64))
    live = np.cumsum(d[: inst.n])
    hot = np.flatnonzero(live == live.max())
    c = int(rng.choice(list(hot))) if rng.random() < 0.7 else rng.randrange(inst.n)
    lo = max(0, min(inst.n - w, c - w // 2 + rng.randint(-w // 4, w // 4)))
    return lo, min(inst.n, lo + w)


def _order_solve(inst: _Instance, pos, window: tuple[int, int], *, dtime, wall, seed, workers):
    """Permute the operators at steps ``[lo, hi)`` (precedence kept) to minimise the most live
    bytes over the steps their buffers can reach (a cumulative constraint; addresses ignored).
    Returns ``(pos, peak, deterministic_time)``; the input when nothing better was found."""
    from ortools.sat.python import cp_model

    T = inst.n
    lo, hi = window
    by_pos = sorted(range(T), key=lambda v: pos[v])
    wops = [by_pos[k] for k in range(lo, hi)]
    wset = set(wops)
    first, last = inst.lifetimes(pos)
    mdl = cp_model.CpModel()
    P = {v: mdl.NewIntVar(lo, hi - 1, f"p{v}") for v in wops}
    for v in wops:
        mdl.AddHint(P[v], pos[v])
        for u in inst.preds[v]:
            if u in wset:
                mdl.Add(P[u] < P[v])
    if len(wops) > 1:
        mdl.AddAllDifferent(list(P.values()))
    var = set()
    for v in wops:
        var.update(inst.uses[v])
    var = {b for b in var if inst.size[b] > 0 and inst.kind[b] != "res"}
    h_lo, h_hi = lo, hi - 1
    for b in var:
        h_lo, h_hi = min(h_lo, first[b]), max(h_hi, last[b])
    ivs, dem = [], []
    for b in range(inst.m):
        if inst.size[b] == 0 or inst.kind[b] == "res" or first[b] > h_hi or last[b] < h_lo:
            continue
        if b in var:  # residents are never in ``var``
            ivs.append(_lifetime_interval(mdl, inst, b, lambda op: P.get(op, pos[op]), T))
        else:
            ivs.append(mdl.NewFixedSizeIntervalVar(first[b], last[b] + 1 - first[b], f"t{b}"))
        dem.append(inst.size[b])
    old = inst.peak(pos)
    cap = mdl.NewIntVar(0, old, "cap")
    mdl.AddCumulative(ivs, dem, cap)
    mdl.Minimize(cap)
    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.num_workers, prm.random_seed = workers, seed
    prm.max_time_in_seconds = max(0.01, wall)
    if dtime is not None:
        prm.max_deterministic_time = dtime
    st = solver.Solve(mdl)
    dt = solver.deterministic_time
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return pos, old, dt
    npos = list(pos)
    for v in wops:
        npos[v] = solver.Value(P[v])
    return npos, inst.peak(npos), dt


def _replan(inst: _Instance, pos, planner: str, seconds: float) -> list[int] | None:
    """Offsets (buffer order of ``inst``) of the order ``pos`` by ``planner`` (checked), or
    ``None`` when it found no plan."""
    from planners.registry import PLANNERS, get_planner

    if seconds <= 0.05:
        return None
    order = [None] * inst.n
    for v, k in enumerate(pos):
        order[k] = inst.names[v]
    prob = inst.problem(order)
    cls = PLANNERS.get(planner)
    kw = {"time_limit": seconds} if cls is not None and "time_limit" in cls._param_names() else {}
    plan = get_planner(planner, **kw).plan(prob)
    if plan.status in ("infeasible", "timeout", "skipped", "error"):
        return None
    check_plan(prob, plan.offsets)
    by_id = {b.id: int(o) for b, o in zip(prob.buffers, plan.offsets)}
    return [by_id[i] if s else 0 for i, s in zip(inst.ids, inst.size)]


# --------------------------------------------------------------------------------------------
# the starting pair


def sequential_pairs(graph: Graph, schedulers: Sequence[str] | None = None,
                     planner: str | Sequence[str] = "telamalloc", *, time_limit: float = 10.0,
                     top: int = 3, unified: bool = False, include_inputs: bool = False,
                     alignment: int = 1, planner_params: dict | None = None,
                     scheduler_params: dict | None = None) -> list[dict]:
    """The sequential (scheduler, planner) pairs the joint search starts from.

    Every scheduler in ``schedulers`` (registry names; ``None``: every registered one but
    ``best_of`` and ``joint``; schedulers taking a ``time_limit`` get ``time_limit / 4`` seconds
    each, unless ``scheduler_params[name]`` says otherwise) orders the graph; the file order and
    the ``top`` distinct orders of lowest peak are planned by ``planner`` (a registry name, or
    several: the best arena of them per order; ``time_limit`` seconds shared among the orders
    when it takes one). Returns one dict per planned order, best arena first: ``scheduler``,
    ``order``, ``peak`` (bytes), ``arena`` (bytes), ``offsets`` ({tensor name: offset}), ``bound``
    (the scheduler's order bound, bytes), ``order_bound`` (bytes: the largest bound on every
    order's peak that any scheduler proved, :attr:`Schedule.bound`). A scheduler that raises a
    ``MemplanError``/``ValueError`` is skipped; ``ValueError`` when no order at all was found or
    no planner planned one.
    """
    from planners import MemplanError
    from planners.registry import PLANNERS, get_planner

    from .lifetimes import peak_live_bytes
    from .schedulers.registry import SCHEDULERS, get_scheduler

    names = list(schedulers) if schedulers is not None else [
        s for s in SCHEDULERS if s not in ("best_of", "joint")]
    if "file_order" not in names:
        names.insert(0, "file_order")
    orders: dict[tuple, dict] = {}
    proved = 0  # the largest order bound any scheduler proved (e.g. exact_dp's optimum)
    for s in names:
        cls = SCHEDULERS.get(s)
        params = {}
        if cls is not None and "time_limit" in cls._param_names():
            params["time_limit"] = max(0.05, time_limit / 4)
        params.update((scheduler_params or {}).get(s, {}))
        try:
            sch = get_scheduler(s, **params).schedule(graph)
        except (MemplanError, ValueError):
            continue
        key = tuple(sch.order)
        proved = max(proved, sch.bound or 0)
        if key not in orders:
            orders[key] = {"scheduler": s, "order": list(key),
                           "peak": peak_live_bytes(graph, key, include_inputs=include_inputs,
                                                   unified=unified),
                           "bound": sch.bound}
    if not orders:
        raise ValueError(f"graph {graph.name!r}: no scheduler of {names} found an order")
    ranked = sorted(orders.values(), key=lambda r: r["peak"])
    chosen = ranked[:top]
    fo = next((r for r in ranked if r["scheduler"] == "file_order"), None)
    if fo is not None and fo not in chosen:
        chosen.append(fo)
    names_p = [planner] if isinstance(planner, str) else list(planner)
    out = []
    for r in chosen:
        prob = lifetime_problem(graph, r["order"], unified=unified,
                                include_inputs=include_inputs, alignment=alignment)
        best = None
        for pname in names_p:
            pp = dict(planner_params or {})
            cls = PLANNERS.get(pname)
            if cls is not None and "time_limit" in cls._param_names():
                pp.setdefault("time_limit", max(0.05, time_limit / max(1, len(chosen))))
            plan = get_planner(pname, **pp).plan(prob)
            if plan.status in ("infeasible", "timeout", "skipped", "error"):
                continue
            check_plan(prob, plan.offsets)
            if best is None or plan.arena_size < best[1].arena_size:
                best = (pname, plan)
        if best is None:
            continue
        out.append({**r, "planner": best[0], "arena": int(best[1].arena_size),
                    "offsets": {b.id: int(o) for b, o in zip(prob.buffers, best[1].offsets)}})
    if not out:
        raise ValueError(f"graph {graph.name!r}: no planner of {names_p} planned an order")
    out.sort(key=lambda r: (r["arena"], r["peak"]))
    for r in out:
        r["order_bound"] = proved
    return out


# --------------------------------------------------------------------------------------------
# the optimiser


def joint_optimize(
    graph: Graph,
    *,
    time_limit: float = 10.0,
    seed: int = 0,
    workers: int = 1,
    deterministic_time: float | None = None,
    schedulers: Sequence[str] | None = None,
    planner: str | Sequence[str] = "telamalloc",
    start: dict | None = None,
    exact_max_ops: int = 12,
    window: int = 10,
    band_buffers: int = 24,
    unified: bool = False,
    include_inputs: bool = False,
    alignment: int = 1,
) -> JointResult:
    """Optimise the operator order and the offsets of ``graph`` together (module docstring).

    Parameters
    ----------
    graph : Graph
        Acyclic (``CycleError`` otherwise).
    time_limit : float
        Wall-clock seconds for the whole call (starting pair included: at most a third of it).
    seed : int
        Seed of the neighbourhood choice and of CP-SAT.
    workers : int
        CP-SAT workers (1 = deterministic).
    deterministic_time : float or None
        Budget in CP-SAT deterministic time units over all sub-solves; the search stops when
        it is spent (reproducible), or at ``time_limit`` (whichever comes first).
    schedulers, planner
        The starting pairs (:func:`sequential_pairs`).
    start : dict or None
        A pair already computed (an element of :func:`sequential_pairs`' list: ``scheduler``,
        ``order``, ``offsets``, ``arena``, optionally ``order_bound``, a proved bound on every
        order's peak, bytes); skips the starting search.
    exact_max_ops : int
        Up to this many operators the whole model is solved (proved optimum when it finishes).
    window, band_buffers : int
        Initial operators per order window and buffers per address band of the neighbourhoods.
    unified, include_inputs, alignment
        The lifetime policy of :func:`scheduling.lifetimes.lifetime_problem`.

    Returns
    -------
    JointResult

    Raises
    ------
    ValueError
        ``time_limit`` not > 0, ``workers`` < 1, ``alignment`` < 1 or a start pair that is not
        a valid (order, plan) pair of this graph (the validators' message).
    """
    if not time_limit > 0:
        raise ValueError(f"joint_optimize: time_limit must be > 0 seconds, got {time_limit!r}")
    if workers < 1 or alignment < 1 or window < 2 or band_buffers < 1:
        raise ValueError("joint_optimize: workers, alignment, band_buffers must be >= 1 and "
                         f"window >= 2 (got {workers}, {alignment}, {band_buffers}, {window})")
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    from .schedulers.base import cached_order_bound

    order_bound = int(cached_order_bound(graph)) if len(graph.ops) else 0  # CycleError first
    inst = _Instance(graph, unified, include_inputs, alignment)
    res_bytes = resident_bytes(graph, include_inputs) if unified else 0
    if start is None:
        pairs = sequential_pairs(graph, schedulers, planner, time_limit=time_limit / 3,
                                 unified=unified, include_inputs=include_inputs,
                                 alignment=alignment)
        start = pairs[0]
        fo = next((p for p in pairs if p["scheduler"] == "file_order"), None)
        fo_arena = fo["arena"] if fo else None
    else:
        fo_arena = start.get("file_order_arena")
    # a scheduler's proved bound (exact_dp's optimum) holds for every order's peak too
    order_bound = max(order_bound, int(start.get("order_bound") or 0))
    bound = order_bound + res_bytes
    order0 = list(start["order"])
    check_schedule(graph, order0)
    pos = [0] * inst.n
    for k, name in enumerate(order0):
        pos[inst.idx[name]] = k
    off = [int(start["offsets"].get(i, 0)) if s else 0 for i, s in zip(inst.ids, inst.size)]
    prob0 = inst.problem(order0)
    check_plan(prob0, inst.offsets_in(prob0, off))
    arena = inst.arena(off)
    start_info = {"scheduler": start["scheduler"], "planner": start.get("planner", planner),
                  "arena": arena, "peak": start.get("peak"), "file_order_arena": fo_arena}
    rng = random.Random(seed)
    trace = [(round(time.perf_counter() - t0, 3), arena)]
    iters = improvements = 0
    dt_used = 0.0
    mode = "exact" if inst.n <= exact_max_ops else "lns"
    phase_peak = None  # the peak the order phase reached (lns mode), bytes
    if arena > bound and inst.n:
        if mode == "exact":
            wall = deadline - time.perf_counter()
            npos, noff, b, dt, _ = _solve(inst, pos, off, (0, inst.n), set(range(inst.m)),
                                          dtime=deterministic_time, wall=wall, seed=seed,
                                          workers=workers, whole=True)
            iters, dt_used = 1, dt
            if inst.arena(noff) <= arena:
                pos, off = npos, noff
            if b is not None:
                bound = max(bound, b)
        else:
            w = min(window, inst.n)
            nb = band_buffers
            # the order phase: a shadow order improved for its peak, re-planned when it drops
            opos, opeak = list(pos), inst.peak(pos)
            planned_peak, ow = opeak, min(2 * window, inst.n)
            pname = planner if isinstance(planner, str) else list(planner)[0]
            # first the order alone for 40 % of the time (windows are cheap without addresses)
            phase_end = time.perf_counter() + 0.4 * (deadline - time.perf_counter())
            next_plan = time.perf_counter() + 0.1 * (deadline - t0)
            while opeak > order_bound and time.perf_counter() < phase_end and (
                    deterministic_time is None or dt_used < 0.4 * deterministic_time):
                lo_k, hi_k = _peak_window(inst, opos, ow, rng)
                opos2, pk, dt = _order_solve(inst, opos, (lo_k, hi_k), dtime=1.0,
                                             wall=min(phase_end - time.perf_counter(), 5.0),
                                             seed=seed + iters, workers=workers)
                iters += 1
                dt_used += dt
                if pk <= opeak:
                    opos, opeak = opos2, pk
                ow = min(ow + 4, 120, inst.n) if dt < 0.2 else (max(ow - 4, 6) if dt >= 1.0
                                                                 else ow)
                now = time.perf_counter()
                if (opeak < arena and opeak < 0.995 * planned_peak and now >= next_plan
                        and deterministic_time is None):  # plan now and then (wall clock only)
                    planned_peak, next_plan = opeak, now + 0.1 * (deadline - t0)
                    noff = _replan(inst, opos, pname, min(3.0, phase_end - now))
                    if noff is not None and inst.arena(noff) < arena:
                        pos, off, arena = list(opos), noff, inst.arena(noff)
                        improvements += 1
                        trace.append((round(time.perf_counter() - t0, 3), arena))
            phase_peak = opeak
            if opeak < arena and opeak < planned_peak:
                planned_peak = opeak
                noff = _replan(inst, opos, pname, min(5.0, deadline - time.perf_counter()))
                if noff is not None and inst.arena(noff) < arena:
                    pos, off, arena = list(opos), noff, inst.arena(noff)
                    improvements += 1
                    trace.append((round(time.perf_counter() - t0, 3), arena))
            while arena > bound:
                now = time.perf_counter()
                if now >= deadline or (deterministic_time is not None
                                       and dt_used >= deterministic_time):
                    break
                if iters % 2 == 1 and opeak > order_bound:
                    sub_dt = 1.0 if deterministic_time is None else min(
                        1.0, deterministic_time - dt_used)
                    lo_k, hi_k = _peak_window(inst, opos, ow, rng)
                    opos2, pk, dt = _order_solve(inst, opos, (lo_k, hi_k), dtime=sub_dt,
                                                 wall=min(deadline - now, 5.0),
                                                 seed=seed + iters, workers=workers)
                    iters += 1
                    dt_used += dt
                    if pk <= opeak:
                        opos, opeak = opos2, pk
                    ow = min(ow + 4, 120, inst.n) if dt < 0.2 * sub_dt else (
                        max(ow - 4, 6) if dt >= sub_dt else ow)
                    if opeak < arena and opeak < planned_peak:
                        planned_peak = opeak
                        noff = _replan(inst, opos, pname, min(3.0, deadline - time.perf_counter()))
                        if noff is not None and inst.arena(noff) < arena:
                            pos, off, arena = list(opos), noff, inst.arena(noff)
                            improvements += 1
                            trace.append((round(time.perf_counter() - t0, 3), arena))
                    continue
                layout_only = rng.random() < 0.4  # an address band alone (the order kept)
                lo_k, hi_k, fb = _neighbourhood(inst, pos, off, arena, w, nb, rng)
                if layout_only:
                    hi_k = lo_k
                sub_dt = 1.0 if deterministic_time is None else min(
                    1.0, deterministic_time - dt_used)
                npos, noff, _, dt, improved = _solve(
                    inst, pos, off, (lo_k, hi_k), fb, dtime=sub_dt,
                    wall=min(deadline - now, 5.0), seed=seed + iters, workers=workers)
                iters += 1
                dt_used += dt
                na = inst.arena(noff)
                if na <= arena:
                    pos, off = npos, noff
                    if na < arena:
                        arena = na
                        improvements += 1
                        trace.append((round(time.perf_counter() - t0, 3), arena))
                # adapt the neighbourhood: grow when sub-solves are cheap, shrink when they stall
                if dt < 0.2 * sub_dt:
                    if layout_only:
                        nb = min(nb + 4, 80)
                    elif w < min(inst.n, 60):
                        w += 2
                elif dt >= sub_dt:
                    if layout_only:
                        nb = max(nb - 4, 8)
                    elif w > 4:
                        w -= 2
    arena = inst.arena(off)
    if trace[-1][1] != arena:
        trace.append((round(time.perf_counter() - t0, 3), arena))
    order = [None] * inst.n
    for v, k in enumerate(pos):
        order[k] = inst.names[v]
    check_schedule(graph, order)
    prob = inst.problem(order)
    offsets = inst.offsets_in(prob, off)
    check_plan(prob, offsets)
    arena = int(max((int(o) + int(s) for o, s in zip(offsets, prob.sizes)), default=0))
    if arena > start_info["arena"]:  # pragma: no cover - guarded by construction
        raise AssertionError("joint_optimize: the arena rose above the starting pair's")
    status = "optimal" if arena <= bound else "feasible"
    from .lifetimes import peak_live_bytes
    from .schedulers.base import decide_status

    peak = peak_live_bytes(graph, order)
    sched = Schedule(tuple(order), "joint",
                     decide_status("feasible", peak, order_bound), time.perf_counter() - t0,
                     {"time_limit": time_limit, "seed": seed, "planner": planner},
                     {"peak_bytes": peak}, order_bound)
    return JointResult(sched, prob, offsets, arena, int(bound), status, start_info,
                       time.perf_counter() - t0,
                       {"mode": mode, "iterations": iters, "improvements": improvements,
                        "trace": trace, "deterministic_time": round(dt_used, 4),
                        "order_bound": order_bound, "resident_bytes": res_bytes,
                        "order_phase_peak": phase_peak})


def _neighbourhood(inst: _Instance, pos, off, arena: int, w: int, band: int, rng: random.Random):
    """A window of ``w`` consecutive steps and a band of buffers: centred (70 % of the time) on a
    step where some buffer reaches the arena top, else anywhere; the band is the ``band`` buffers
    live in the window's time range whose top addresses are highest (half the time) or in a random
    address band."""
    n = inst.n
    first, last = inst.lifetimes(pos)
    tops = [(off[b] + inst.size[b], b) for b in range(inst.m) if inst.size[b] > 0]
    hot = [b for t, b in tops if t == arena]
    if hot and rng.random() < 0.7:
        b = rng.choice(hot)
        c = rng.randint(first[b], last[b])
    else:
        c = rng.randrange(n)
    lo = max(0, min(n - w, c - w // 2))
    hi = min(n, lo + w)
    near = [b for b in range(inst.m) if inst.size[b] > 0 and first[b] <= hi - 1 and last[b] >= lo]
    if rng.random() < 0.5:
        near.sort(key=lambda b: -(off[b] + inst.size[b]))
    else:
        y = rng.randrange(max(1, arena))
        near.sort(key=lambda b: abs(off[b] + inst.size[b] // 2 - y))
    return lo, hi, set(near[:band])
