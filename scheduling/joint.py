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
  (highest ``offset + size``, bytes). The features below change the model as stated there.
* **exact** on small graphs (``<= exact_max_ops`` operators): the whole model, hinted with the
  best sequential pair; its status is ``optimal`` only when the arena equals the proved bound.
* **anytime** beyond: it starts from the best (scheduler, planner) pair -- every given scheduler's
  order (all registered ones by default), the lowest peaks planned by ``planner`` -- and improves
  it by large-neighbourhood search: a window of consecutive steps whose operators may be permuted
  (precedence kept) and a band of addresses whose buffers may move, the rest fixed, each
  sub-model minimising the highest ``offset + size`` of the buffers it frees, so the arena never
  increases (40 % of the neighbourhoods move addresses only, keeping the order). The first 40 %
  of the deterministic-time budget, and every other iteration after it, works on the order alone: a window around the step of most live bytes is permuted by
  a CP-SAT model with a cumulative constraint (the peak of live bytes, addresses ignored), and
  when that shadow order's peak falls below the arena it is planned by ``planner`` and adopted
  if its arena is lower. The result is never worse than the starting pair.

Features of the problem (each also in the starting pairs, :func:`sequential_pairs`):

* **in-place aliases** -- a graph after the ``inplace`` pass (or any pipeline:
  :mod:`scheduling.transforms`) carries alias annotations; an alias group (views, in-place
  results, concat slices written in place) is one unit of the model at its root's offset (a
  member at root + delta, as :meth:`planners.Problem.collapse` expands it), live over the hull
  of its members' order-dependent lifetimes (``AddMinEquality`` on the producers' positions,
  ``AddMaxEquality`` on the readers'). Views and concat slices move no data, so every order
  keeps them valid; an in-place result ``y`` written over ``x`` is valid only while the bytes it
  overwrites are dead, so every other member of ``x``'s group meeting ``y``'s bytes (not aliased
  through ``y``) has its producer and readers run before the in-place operator -- a precedence
  in every (sub-)model and a filter on the starting orders (the rule the pass checked on the
  stored order; a stored order that breaks it, an overwritten graph output or an annotation of
  another shape raise :class:`planners.errors.FeatureError`). The result validates on
  :func:`scheduling.transforms.transformed_problem` of its order.
* **pins** (``{tensor: offset}``, bytes, a multiple of the alignment and of every pool's): the
  offset is a constant in every sub-model and the starting pairs are planned by a planner that
  honours pins (``_capabilities["pins"] == "native"``: ``telamalloc``, ``greedy``, ``cpsat``,
  ... -- ``memplan list``). When no starting pair exists a CP-SAT model of the order and the
  pinned units alone (with pools, each in one of the pools whose grid and capacity hold its
  pin) finds an order that keeps them apart, or proves none does: the status is then
  ``infeasible`` with the reason in ``info["reason"]`` (one line) and no plan.
* **pools** (:class:`planners.MemoryPool`, preference order): every unit gets a pool and an
  offset in it; the objective is :mod:`planners.feature_cpsat`'s, the **traffic cost** (``sum
  size x cost(pool) x lifetime steps``, the lifetime following the order) first, then the sum
  of the pools' arenas, so a result compares with the sequential (order, pool-aware planner)
  pairs it starts from and is never worse. Exact mode: the whole model with optional intervals
  per pool, each with its own offset grid, a pinned unit in any pool whose grid and capacity
  hold its pin (the rule of :func:`planners.placement.pin_pools`). Anytime mode: order
  neighbourhoods (the shadow order of the peak) re-planned by the pool-aware ``planner``,
  alternating with address bands inside one pool, the order and the assignment fixed.
  Pools or pins do not combine with alias groups (the interval model refuses them together).

The **bound** (bytes) is the larger of the order bound (``resident bytes +``
:func:`scheduling.schedulers.bounds.order_lower_bound`, a lower bound on every order's peak of
live bytes, hence on every arena) and the layout bound that CP-SAT proved on the whole model
(exact mode). The status follows the planners' one rule
(:func:`planners.model.is_proved_optimal`, as :meth:`planners.base.Planner.plan` applies it):
``optimal`` exactly when ``arena == bound``, else ``feasible``. With pins the same holds (a pin
only restricts the layouts). ``arena`` is the plan's real arena, the definition of
:attr:`planners.Plan.arena_size` (:func:`planners.model.arena_top`): the highest ``offset +
size`` over the buffers of ``size > 0``, so a zero-size tensor pinned at any offset takes no
bytes. With **alias groups** the order
bound does not hold (an in-place group holds less than its members' live bytes): the bound is
the residents plus the largest working set of an operator (the units it reads or writes, live
at its step in every order) or the largest unit, raised by the whole model's proved bound (over
the orders that keep the in-place decisions valid). With **pools** ``arena`` is the sum of the
pools' arenas and ``bound`` the order bound (at every step the live bytes of all pools fit in
the sum of their arenas); it bounds the total arena only, not the traffic. So, as
:meth:`planners.base.Planner.plan` rules for pools, an arena at the bound proves nothing alone:
the status is ``optimal`` only when the traffic is proved least (CP-SAT proved the whole
model's optimum in exact mode, or the traffic is 0) **and** the total arena equals the bound; a
proved (traffic, arena) optimum above the bound is ``feasible`` (a smaller total arena may exist
at a higher traffic). No per-pool bound is stated.

**Operator order**: a :class:`scheduling.graph.Graph` may store its operators in any order
(topological only once validated); the model's operators and units are numbered from the stored
order when it is topological, else from :meth:`scheduling.graph.Graph.topological_order` (the
topological order nearest to it), and the result's order is always topological.

Every result is checked by the independent validators: the order by
:func:`scheduling.schedule.check_schedule` (and the in-place precedences), the offsets by
:func:`planners.validate.check_plan` (with the pools and their capacities) on the problem of
that order: :func:`scheduling.lifetimes.lifetime_problem` with the alias groups, pins and pools.

Determinism (issue #34): every phase is budgeted by work, the wall clock is only the outer
stop, so with ``workers=1`` and a fixed ``seed`` the result does not depend on the machine's
load unless ``info["stopped_by"] == "time_limit"`` (then ``cut_by_clock`` is true and
``info["clock_cuts"]`` names where the clock stopped it; the result is still checked and never
worse than the pairs evaluated):

* the search: ``deterministic_time`` (CP-SAT's deterministic time units, summed over
  sub-solves, each counted as at least 0.02 units, so the anytime search stops after at most
  ``deterministic_time / 0.02`` sub-solves even where the bound is out of reach; default
  :data:`DETERMINISTIC_TIME_PER_SECOND` x ``time_limit``), the order phase 40 % of it, its
  re-plans after every tenth of that; each CP-SAT sub-solve gets ``min(1, what is left)``
  units and the time left before the deadline as its wall limit (no per-solve wall slice);
  the pinned units' order model (pins and no starting pair) ``max(1, deterministic_time)``;
* the re-plans of a shadow order: the planner's work budget for :data:`REPLAN_SECONDS`
  nominal seconds (:func:`planner_budget`: ``telamalloc``'s ``max_nodes``);
* the starting pairs (:func:`sequential_pairs` at ``START_SHARE x time_limit`` nominal seconds, run to
  completion): ``anneal``'s iterations, ``genetic``'s generations, ``exact_dp``'s states
  without its time limit and pivot decisions (:func:`scheduler_budget`), the planners' work
  budgets; ``cpsat_schedule``, which has no work budget, is not in the default set
  (:data:`CLOCK_ONLY_SCHEDULERS`). A scheduler named in ``schedulers`` that has only a
  wall-clock budget is listed in ``info["clock_dependent"]``.

Not covered: a problem with pins or pools planned by ``telamalloc`` (or ``cpsat``) goes to the
CP-SAT feature model of :mod:`planners.feature_cpsat`, which takes a wall-clock limit only, so
its starting plans and re-plans may depend on the load; ``greedy`` honours pins and pools
deterministically.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from planners.model import Problem, is_proved_optimal, pool_costs
from planners.validate import check_plan

from .graph import Graph
from .lifetimes import lifetime_problem, resident_bytes
from .schedule import Schedule, check_schedule

__all__ = ["DETERMINISTIC_TIME_PER_SECOND", "NODES_PER_SECOND", "REPLAN_SECONDS", "START_SHARE", "JointResult", "joint_optimize",
           "planner_budget", "scheduler_budget", "sequential_pairs"]

#: The default ``deterministic_time`` of :func:`joint_optimize`: CP-SAT deterministic time
#: units per second of ``time_limit``. One process of the anytime search spends about 0.2 units
#: per second on the shared 2-core machine at load 6 and 0.09 at load 10 (``moccasin_layered``
#: seed 0, 250 operators: 1.5 units in 17.7 s), so at load 10 the default budget takes about a
#: quarter of the time limit and the starting pairs (:data:`START_SHARE`) about another
#: (30 s: 0.6 units in about 7 s, the pairs 12 s), and the clock, the outer stop, bites only on
#: a machine about two times busier (the result then says ``stopped_by="time_limit"``).
DETERMINISTIC_TIME_PER_SECOND = 0.02
#: The nominal share of ``time_limit`` that :func:`joint_optimize` gives the starting pairs
#: (:func:`sequential_pairs`' ``time_limit``: their work budgets, not a wall-clock slice).
START_SHARE = 1 / 6
#: ``telamalloc``'s ``max_nodes`` (placements) per nominal second in :func:`planner_budget`: a
#: quarter of what it places on the shared 2-core machine at load 9.5 (2.5 million in 9.7 s on
#: an order of ``moccasin_layered`` seed 0, 250 operators), the margin of
#: :data:`DETERMINISTIC_TIME_PER_SECOND` (its own ``max_nodes="auto"`` assumes 10**6 per second,
#: an idle machine's rate).
NODES_PER_SECOND = 65_000
#: The wall-clock limit (seconds) given to a work-budgeted planner when there is no outer stop.
NO_CLOCK = 1e6
#: Nominal seconds of work of one re-plan of the shadow order (at most; ``time_limit / 10``
#: when that is less, 0.1 at least), turned into the planner's work budget by
#: :func:`planner_budget`.
REPLAN_SECONDS = 3.0


@dataclass
class JointResult:
    """The outcome of :func:`joint_optimize`: a checked order and a checked plan.

    Attributes
    ----------
    schedule : Schedule or None
        The order (``scheduler="joint"``), its ``bound`` the order bound (bytes, on the peak of
        live bytes without aliases). ``None`` when ``status`` is ``infeasible``.
    problem : planners.Problem or None
        The problem of the order: :func:`scheduling.lifetimes.lifetime_problem` (buffer ids
        are tensor names) with the graph's alias groups
        (:func:`scheduling.transforms.transformed_problem`), the pins and the pools.
    offsets : numpy int64 array or None
        Bytes, in ``problem`` order (relative to the buffer's pool with pools); valid
        (``planners.check_plan``, with ``pools``).
    arena : int or None
        Highest ``offset + size`` (bytes) over the buffers of ``size > 0`` (0 if none), as
        :attr:`planners.Plan.arena_size`; with pools the sum of the pools' arenas, each defined
        the same way.
    bound : int
        Proved lower bound (bytes) on ``arena`` of every (order, layout) pair (module
        docstring, "bound"); never above ``arena``.
    status : str
        ``"optimal"`` (``arena == bound`` by :func:`planners.model.is_proved_optimal`; with
        pools also the traffic proved least: module docstring), ``"feasible"`` or
        ``"infeasible"`` (pins that collide in every order: ``info["reason"]``, no plan).
    start : dict
        The starting sequential pair: ``scheduler``, ``planner``, ``arena``, ``peak``;
        ``file_order_arena`` (file order planned by the same planner); with pools ``traffic``.
    seconds : float
        Wall-clock seconds of the whole call.
    info : dict
        ``mode`` (``exact``/``lns``), ``iterations``, ``improvements``, ``trace`` (list of
        ``(seconds, arena)`` whenever the arena fell), ``deterministic_time`` (units spent),
        ``deterministic_budget`` (units given), ``stopped_by`` (``"bound"``: optimal;
        ``"deterministic_time"``: the work budget was spent; ``"time_limit"``: the wall clock
        stopped some phase early; ``"proof"``: pins proved infeasible), ``clock_cuts`` (where
        the clock stopped it, e.g. ``"start: scheduler anneal"``, ``"cp-sat sub-solve"``,
        ``"anytime search"``; empty when it did not bite) and ``clock_dependent`` (starting
        schedulers run with a wall-clock budget only).
    pools : numpy int64 array or None
        With pools: the index (into the pools given) of each buffer's pool, ``problem`` order.
    arenas : dict
        With pools: ``{pool name: arena bytes}``; empty without.
    traffic : int
        With pools: the traffic cost (:func:`planners.feature_cpsat.traffic_cost`); else 0.
    cut_by_clock : bool
        The wall clock (``time_limit``) stopped a phase before its work budget was spent
        (``info["clock_cuts"]``): the result may then depend on the machine's load.
    """

    schedule: Schedule | None
    problem: Any
    offsets: np.ndarray | None
    arena: int | None
    bound: int
    status: str
    start: dict = field(default_factory=dict)
    seconds: float = 0.0
    info: dict = field(default_factory=dict)
    pools: np.ndarray | None = None
    arenas: dict = field(default_factory=dict)
    traffic: int = 0
    cut_by_clock: bool = False

    @property
    def order(self) -> tuple[str, ...]:
        """The operator order (names); empty when infeasible."""
        return self.schedule.order if self.schedule is not None else ()

    def offsets_by_id(self) -> dict[str, int]:
        """``{tensor name: offset}`` (bytes); empty when infeasible."""
        if self.offsets is None:
            return {}
        return {b.id: int(o) for b, o in zip(self.problem.buffers, self.offsets)}

    def pools_by_id(self) -> dict[str, str]:
        """``{tensor name: pool name}`` (with pools; empty without)."""
        if self.pools is None:
            return {}
        names = [q.name for q in self.problem.pools]
        return {b.id: names[int(k)] for b, k in zip(self.problem.buffers, self.pools)}


# --------------------------------------------------------------------------------------------
# the compiled instance


class _Instance:
    """The graph as integer arrays: operators ``0..n-1`` (stored order), **units** in the order of
    :func:`lifetime_problem` of ``ref_order`` -- the stored order when it is topological, else
    :meth:`Graph.topological_order` (the set of buffers does not depend on the order). A unit is a buffer, or an alias group (in-place aliases, views, concat slices:
    :func:`scheduling.transforms.transformed_problem`) placed as one buffer at its root's offset
    (``ids`` are the roots'), live over the hull of its members' lifetimes. ``pins`` (tensor ->
    byte offset) and ``pools`` (preference order) are the features of :func:`joint_optimize`."""

    def __init__(self, graph: Graph, unified: bool, include_inputs: bool, alignment: int,
                 pins=None, pools=None):
        from planners.errors import FeatureError, ProblemError

        self.graph = graph
        self.unified, self.include_inputs, self.alignment = unified, include_inputs, alignment
        self.names = list(graph.ops)
        self.idx = {n: i for i, n in enumerate(self.names)}
        self.n = n = len(self.names)
        # the reference order of the units: the stored order when it is topological, else the
        # topological order nearest to it (a Graph may store its operators in any order)
        self.ref_order = self.names if graph.is_topological() else graph.topological_order()
        p = lifetime_problem(graph, self.ref_order, unified=unified,
                             include_inputs=include_inputs, alignment=alignment)
        self.aliases = _problem_aliases(graph, p)
        self.pools = tuple(pools or ())
        self.pin_map = dict(pins or {})
        if self.aliases and (self.pools or self.pin_map):
            what = "pools" if self.pools else "pins"
            raise FeatureError(f"graph {graph.name!r}: joint_optimize cannot combine the alias "
                               f"groups of graph passes with {what} (the interval model refuses "
                               "aliases with compiler features)")
        for t, o in self.pin_map.items():
            if t not in p.index:
                raise ProblemError(f"graph {graph.name!r}: pin of {t!r}: not a buffer of the "
                                   f"lifetime problem (buffers: activations"
                                   f"{', graph inputs' if include_inputs else ''})")
            # the buffer's own alignment; which pools' grids hold the pin decides where it may
            # go (none: reported infeasible, as the planners do)
            if isinstance(o, bool) or not isinstance(o, (int, np.integer)) or o < 0 \
                    or o % alignment:
                raise ProblemError(f"graph {graph.name!r}: pin of {t!r}: offset must be an "
                                   f"integer >= 0 bytes and a multiple of the alignment "
                                   f"{alignment}, got {o!r}")
        members: list[list[tuple[str, int]]]
        if self.aliases:
            ap = Problem(p.buffers, alignment=p.alignment, name=p.name, aliases=self.aliases)
            col, group, delta = ap.collapse()
            members = [[] for _ in range(col.n)]
            for i, b in enumerate(p.buffers):
                members[int(group[i])].append((b.id, int(delta[i])))
            units = col.buffers
        else:
            units = p.buffers
            members = [[(b.id, 0)] for b in p.buffers]
        self.members = members
        self.ids = [b.id for b in units]
        self.size = [int(b.size) for b in units]
        self.pin = [int(self.pin_map.get(i, -1)) for i in self.ids]
        self.kind = []  # 'res' | 'in' | 'act' (one buffer) | 'grp' (an alias group)
        self.prod: list[int | None] = []
        self.cons: list[list[int]] = []
        self.out: list[bool] = []
        # the hull of a unit: first = 0 if fz else min position of fops; last = T - 1 if lend
        # else max position of lops (default: first)
        self.fz: list[bool] = []
        self.fops: list[list[int]] = []
        self.lend: list[bool] = []
        self.lops: list[list[int]] = []
        kinds = {b.id: b.kind for b in p.buffers}
        for u, b in enumerate(units):
            fz = lend = False
            fops: set[int] = set()
            lops: set[int] = set()
            for mid, _ in members[u]:
                t = graph.tensors[mid]
                cons = sorted({self.idx[c] for c in t.consumers if c in self.idx})
                if kinds[mid] == "resident":
                    fz = lend = True
                elif t.producer is None:
                    fz = True
                    lops.update(cons)
                else:
                    fops.add(self.idx[t.producer])
                    lops.update(cons or [self.idx[t.producer]])
                lend = lend or t.kind == "output"
            self.fz.append(fz)
            self.fops.append(sorted(fops))
            self.lend.append(lend)
            self.lops.append(sorted(lops))
            if len(members[u]) > 1:
                self.kind.append("grp")
                self.prod.append(None)
                self.cons.append([])
                self.out.append(lend)
                continue
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
        # in-place decisions stay valid only if the overwritten data is dead: precedences
        self.after = _inplace_precedences(graph, p, self.aliases) if self.aliases else []
        for a, b in self.after:
            ia, ib = self.idx[a], self.idx[b]
            if ia not in self.preds[ib]:
                self.preds[ib] = sorted(self.preds[ib] + [ia])
        self.m = len(self.ids)
        self.uses: list[list[int]] = [[] for _ in range(n)]  # buffers whose lifetime v touches
        for b in range(self.m):
            if self.kind[b] == "grp":
                vs = sorted(set(self.fops[b]) | set(self.lops[b]))
            else:
                vs = ([self.prod[b]] if self.prod[b] is not None else []) + self.cons[b]
            for v in vs:
                self.uses[v].append(b)
        self.features = bool(self.pools or self.pin_map)

    def lifetimes(self, pos: Sequence[int]) -> tuple[list[int], list[int]]:
        """Closed ``(first, last)`` steps per unit under operator positions ``pos``."""
        T = self.n
        first, last = [], []
        for b in range(self.m):
            f = 0 if self.fz[b] else min(pos[v] for v in self.fops[b])
            e = T - 1 if self.lend[b] else max((pos[v] for v in self.lops[b]), default=f)
            first.append(f)
            last.append(max(e, f))
        return first, last

    def peak(self, pos: Sequence[int]) -> int:
        """Peak of live bytes (bytes) over steps of the units under positions ``pos``."""
        first, last = self.lifetimes(pos)
        d = np.zeros(self.n + 1, np.int64)
        np.add.at(d, first, self.size)
        np.add.at(d, np.asarray(last) + 1, -np.asarray(self.size, np.int64))
        return int(np.cumsum(d[: self.n]).max()) if self.n else 0

    def arena(self, offsets: Sequence[int]) -> int:
        """Highest ``offset + size`` (bytes) over the units of ``size > 0``, 0 if none: the
        definition of :func:`planners.model.arena_top` (:attr:`planners.Plan.arena_size`), so a
        zero-size unit (pinned anywhere) takes no bytes."""
        return max((o + s for o, s in zip(offsets, self.size) if s > 0), default=0)

    def objective(self, pos: Sequence[int], off: Sequence[int],
                  pool: Sequence[int] | None) -> tuple[int, int]:
        """``(traffic cost, total arena)`` (bytes x steps x cost, bytes): with pools
        :func:`planners.feature_cpsat.traffic_cost` (accesses = lifetime in steps) and the sum of
        the pools' arenas; without, ``(0, arena)``."""
        if not self.pools:
            return 0, self.arena(off)
        first, last = self.lifetimes(pos)
        cost = pool_costs(self.pools)  # ranks in the preference order when no costs given
        tr = sum((e + 1 - f) * s * cost[k] for f, e, s, k in zip(first, last, self.size, pool))
        tops = [0] * len(self.pools)
        for o, s, k in zip(off, self.size, pool):
            if s:
                tops[k] = max(tops[k], o + s)
        return int(tr), int(sum(tops))

    def order_of(self, pos: Sequence[int]) -> list[str]:
        order = [""] * self.n
        for v, k in enumerate(pos):
            order[k] = self.names[v]
        return order

    def precedence_ok(self, order: Sequence[str]) -> str | None:
        """``None`` when ``order`` keeps every in-place precedence, else the first broken one."""
        step = {n: k for k, n in enumerate(order)}
        for a, b in self.after:
            if step[a] > step[b]:
                return f"{a!r} must run before the in-place operator {b!r}"
        return None

    def problem(self, order: Sequence[str]):
        """The problem of ``order``: :func:`lifetime_problem` with the alias groups
        (:func:`scheduling.transforms.transformed_problem`), the pins and the pools."""
        p = lifetime_problem(self.graph, order, unified=self.unified,
                             include_inputs=self.include_inputs, alignment=self.alignment)
        if self.aliases:
            return Problem(p.buffers, capacity=p.capacity, alignment=p.alignment, name=p.name,
                           aliases=self.aliases)
        if not self.features:
            return p
        bufs = [b if b.id not in self.pin_map else replace(b, offset=int(self.pin_map[b.id]))
                for b in p.buffers]
        return Problem(bufs, alignment=p.alignment, name=p.name, pools=self.pools or None)

    def offsets_in(self, problem, offsets: Sequence[int]) -> np.ndarray:
        by_id = {}
        for u, o in enumerate(offsets):
            for mid, d in self.members[u]:
                by_id[mid] = o + d
        return np.array([by_id[b.id] for b in problem.buffers], dtype=np.int64)

    def pools_in(self, problem, pool: Sequence[int]) -> np.ndarray | None:
        if not self.pools:
            return None
        by_id = dict(zip(self.ids, pool))
        return np.array([by_id[b.id] for b in problem.buffers], dtype=np.int64)


def _problem_aliases(graph: Graph, p) -> dict[str, tuple[str, int]]:
    """The graph's alias annotations between buffers of ``p`` (as
    :func:`scheduling.transforms.transformed_problem` keeps them)."""
    if not any("aliases" in op.attributes for op in graph.ops.values()):
        return {}
    from .transforms.base import graph_aliases

    return {c: v for c, v in graph_aliases(graph).items() if c in p.index and v[0] in p.index}


def _inplace_precedences(graph: Graph, p, aliases) -> list[tuple[str, str]]:
    """``(a, b)``: operator ``a`` must run before operator ``b`` for the alias annotations of
    ``graph`` to stay valid in another order.

    A view (``kernel="view"``) and a concat written in place (``[input, output, delta]`` on the
    concat) move no data, so any order keeps them valid. An in-place operator ``b`` writing its
    output ``y`` over its input ``x`` (``[y, x, 0]``, :mod:`scheduling.transforms.inplace`)
    overwrites every member of ``x``'s alias group whose bytes meet ``y``'s and that is not ``y``
    or aliased through ``y``: each such member's producer and readers (other than ``b``) run
    before ``b``, the rule the pass checked on the stored order. A member of that kind that is a
    graph output, or an annotation of another shape, raises :class:`planners.errors.FeatureError`
    (it cannot be rebuilt for a new order).
    """
    from planners.errors import FeatureError

    ap = Problem(p.buffers, alignment=p.alignment, name=p.name, aliases=aliases)
    _, group, delta = ap.collapse()
    gid = {b.id: int(group[i]) for i, b in enumerate(p.buffers)}
    dl = {b.id: int(delta[i]) for i, b in enumerate(p.buffers)}
    sz = {b.id: int(b.size) for b in p.buffers}
    by_group: dict[int, list[str]] = {}
    for b in p.buffers:
        by_group.setdefault(gid[b.id], []).append(b.id)

    def through(t: str, y: str) -> bool:  # t is y or aliased (transitively) through y
        while True:
            if t == y:
                return True
            if t not in aliases:
                return False
            t = aliases[t][0]

    out: list[tuple[str, str]] = []
    for name, op in graph.ops.items():
        for child, parent, _ in op.attributes.get("aliases", ()):
            if child not in aliases or aliases[child][0] != parent:
                continue  # left out of the problem (not both buffers)
            if child in op.inputs and parent in op.outputs:
                continue  # a concat slice written in place: no data moves
            if child not in op.outputs or parent not in op.inputs:
                raise FeatureError(f"operator {name!r}: alias annotation [{child!r}, "
                                   f"{parent!r}] is neither a view, an in-place result nor a "
                                   "concat slice; joint_optimize cannot rebuild it for a new "
                                   "order")
            if op.attributes.get("kernel") == "view":
                continue
            y = child
            lo, hi = dl[y], dl[y] + sz[y]
            for t in by_group[gid[y]]:
                if through(t, y) or dl[t] >= hi or dl[t] + sz[t] <= lo:
                    continue
                tt = graph.tensors[t]
                if tt.kind == "output":
                    raise FeatureError(f"operator {name!r} writes {y!r} in place over {t!r}, a "
                                       "graph output; joint_optimize cannot keep that valid in "
                                       "another order")
                for a in ([tt.producer] if tt.producer else []) + list(tt.consumers):
                    if a != name and a in graph.ops and (a, name) not in out:
                        out.append((a, name))
    return out


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
    if k == "grp":  # an alias group: the hull of its members' lifetimes
        fs = [position(v) for v in inst.fops[b]]
        if inst.fz[b]:
            f = 0
        elif all(isinstance(v, int) for v in fs):
            f = min(fs)
        elif len(fs) == 1:
            f = fs[0]
        else:
            f = mdl.NewIntVar(0, T - 1, f"f{b}")
            mdl.AddMinEquality(f, fs)
        ls = [position(v) for v in inst.lops[b]]
        if inst.lend[b]:
            e = T - 1
        elif not ls:
            e = f
        elif all(isinstance(v, int) for v in ls) and isinstance(f, int):
            e = max(ls + [f])
        else:
            e = mdl.NewIntVar(0, T - 1, f"e{b}")
            mdl.AddMaxEquality(e, ls + ([f] if isinstance(f, int) else []))
            if not isinstance(f, int):
                mdl.Add(e >= f)
        if isinstance(f, int) and isinstance(e, int):
            return mdl.NewFixedSizeIntervalVar(f, e + 1 - f, f"t{b}")
        ln = mdl.NewIntVar(1, T, f"l{b}")
        return mdl.NewIntervalVar(f, ln, e + 1, f"t{b}")
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
           whole: bool = False, pool: list[int] | None = None):
    """Re-optimise operators at steps ``window = [lo, hi)`` and the offsets of ``free_bufs``
    (plus every buffer whose lifetime depends on a window operator), everything else fixed;
    pinned units keep their offsets. ``pool``: the pool of every unit (a problem with pools;
    then the window is empty and ``free_bufs`` lie in one pool, whose buffers alone meet them).

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
    if pool is not None and active:
        kp = pool[next(iter(active))]
        fixed_near = [b for b in fixed_near if pool[b] == kp]
        a = math.lcm(a, inst.pools[kp].alignment)
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
        if inst.pin[b] >= 0:  # a pin: its offset is fixed
            k = mdl.NewConstant(inst.pin[b] // a)
        else:
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
    _cp_params(solver, workers, seed, wall, dtime)
    st = _cp_solve(solver, mdl, wall)
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
    _cp_params(solver, workers, seed, wall, dtime)
    st = _cp_solve(solver, mdl, wall)
    dt = solver.deterministic_time
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return pos, old, dt
    npos = list(pos)
    for v in wops:
        npos[v] = solver.Value(P[v])
    return npos, inst.peak(npos), dt


def _replan(inst: _Instance, pos, planner: str, seconds: float, clock: _Clock | None = None):
    """Offsets (unit order of ``inst``) of the order ``pos`` planned by ``planner`` on
    :meth:`_Instance.problem` (checked), or ``None`` when it found no plan within the pools'
    capacities. With pools: ``(offsets, pools)``.

    ``seconds`` is the planner's nominal budget: its work budget derives from it
    (:func:`planner_budget`), so the plan does not depend on the load; ``clock`` is the outer
    stop: once it has passed no plan is made (``None``, the clock records ``"re-plan"``), and
    a planner that says its time limit stopped it is recorded too."""
    from planners.errors import CapacityError
    from planners.registry import get_planner

    if clock is not None and clock.passed():
        clock.cut("re-plan")
        return None
    order = inst.order_of(pos)
    prob = inst.problem(order)
    kw = planner_budget(planner, seconds, None if clock is None else clock.left(),
                        features=bool(inst.features))
    try:
        plan = get_planner(planner, **kw).plan(prob)
    except CapacityError:  # a pool below what its forced (pinned) buffers need
        return None
    if clock is not None and _clock_stopped_plan(plan):
        clock.cut(f"planner {planner}")
    if plan.status in ("infeasible", "timeout", "skipped", "error", "over_capacity"):
        return None
    check_plan(prob, plan.offsets, pools=plan.pools if inst.pools else None)
    by_id = {b.id: int(o) for b, o in zip(prob.buffers, plan.offsets)}
    off = [by_id[i] if s or inst.pin[u] >= 0 else 0
           for u, (i, s) in enumerate(zip(inst.ids, inst.size))]
    if not inst.pools:
        return off
    pk = {b.id: int(k) for b, k in zip(prob.buffers, plan.pools)}
    return off, [pk[i] for i in inst.ids]


def _clock_stopped_plan(plan) -> bool:
    """Whether a planner's own time limit stopped it: status ``timeout`` or
    ``info["stopped_by"] == "time_limit"`` (the planners' convention)."""
    return plan.status == "timeout" or (plan.info or {}).get("stopped_by") == "time_limit"


def planner_budget(planner: str, seconds: float, outer: float | None, *,
                   features: bool = False, given: Mapping | None = None) -> dict:
    """The keyword parameters that budget ``planner`` by work for a nominal ``seconds``, the
    wall clock (``outer`` seconds, ``None``: ``seconds``) only as the outer stop.

    * ``telamalloc``: ``max_nodes`` = :data:`NODES_PER_SECOND` x ``seconds`` placements (the
      same for both of its engines, which search the same nodes) and ``time_limit =
      max(seconds, outer)`` (``outer=None``: :data:`NO_CLOCK` seconds), so the placements, not
      the load, decide where it stops. On a problem with ``features`` (pins, pools) it runs the CP-SAT
      feature model, stopped by ``time_limit`` alone: ``time_limit = seconds`` then (no work
      budget exists there; the plan may depend on the load).
    * any other planner with a ``time_limit``: ``time_limit = seconds`` (its own work budgets,
      e.g. ``lns_cpsat``'s ``deterministic_time="auto"``, derive from it);
    * a planner without one: nothing.

    ``given`` (e.g. ``planner_params``) overrides. Returns a new dict; raises nothing (an
    unknown name gets ``given`` alone and fails in :func:`planners.registry.get_planner`)."""
    from planners.registry import PLANNERS

    cls = PLANNERS.get(planner)
    names = cls._param_names() if cls is not None else ()
    kw: dict = {}
    if "time_limit" in names:
        kw["time_limit"] = max(0.05, float(seconds))
        if "max_nodes" in names and not features and not (given and "max_nodes" in given):
            kw["max_nodes"] = max(1, int(NODES_PER_SECOND * float(seconds)))
            kw["time_limit"] = NO_CLOCK if outer is None else max(kw["time_limit"], float(outer))
    kw.update(given or {})
    return kw


def _cp_params(solver, workers: int, seed: int, wall, dtime: float | None) -> None:
    """Set a CP-SAT solver's workers, seed, wall-clock limit and, when given, its
    deterministic-time budget (``max_deterministic_time``, CP-SAT's deterministic time units):
    every sub-solve of this module the same way. ``wall`` is the outer stop: a :class:`_Clock`
    (the seconds left before its deadline) or seconds; at least 0.01 s.

    Also ``no_overlap_2d_boolean_relations_limit = 0``: CP-SAT's presolve turns a
    ``NoOverlap2D`` of fewer than that many boxes (default 10) into Booleans per pair, and with
    OR-Tools 9.15 that presolve, beside this module's redundant ``AddCumulative``, postsolves
    a solution that breaks the model on some small graphs with an alignment: the solver then
    aborts the whole process ("Infeasible solution! ... Check failure": inputs 1829 and, of the
    kind ``aligned``, 93 of ``experiments.bench.joint_differential``, 2 in 2,800; without the
    cumulative, or with this limit 0, the same models solve). Small models only, so the search
    of large ones is unchanged."""
    prm = solver.parameters
    prm.num_workers = workers
    prm.random_seed = seed
    prm.max_time_in_seconds = max(0.01, wall.left() if isinstance(wall, _Clock) else wall)
    prm.no_overlap_2d_boolean_relations_limit = 0
    if dtime is not None:
        prm.max_deterministic_time = max(1e-3, dtime)


def _cp_solve(solver, mdl, wall):
    """``solver.Solve(mdl)``; when ``wall`` is a :class:`_Clock` and the solve ended without a
    proof (neither ``OPTIMAL`` nor ``INFEASIBLE``) after at least 90 % of its wall-clock limit,
    the clock records that it bit (``"cp-sat sub-solve"``): conservative, a stop by
    deterministic time that happens to coincide is reported as the clock's too."""
    from ortools.sat.python import cp_model

    limit = solver.parameters.max_time_in_seconds
    st = solver.Solve(mdl)
    if (isinstance(wall, _Clock) and st not in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
            and solver.wall_time >= 0.9 * limit):
        wall.cut("cp-sat sub-solve")
    return st


class _Clock:
    """The wall-clock outer stop of one :func:`joint_optimize` call: ``seconds`` from now
    (:func:`time.perf_counter`). Every phase is budgeted by work; the clock only stops one
    early, and every place where it did is recorded once in ``cuts`` (the result then says
    ``stopped_by="time_limit"`` and ``cut_by_clock``)."""

    def __init__(self, seconds: float) -> None:
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + float(seconds)
        self.cuts: list[str] = []

    def left(self) -> float:
        """Seconds left before the deadline (negative once it has passed)."""
        return self.deadline - time.perf_counter()

    def passed(self) -> bool:
        return time.perf_counter() >= self.deadline

    def cut(self, where: str) -> None:
        """Record that the clock stopped ``where`` (once per place)."""
        if where not in self.cuts:
            self.cuts.append(where)


def _solve_pools_whole(inst: _Instance, pos, off, pool, *, dtime, wall, seed, workers):
    """The whole model with pools (exact mode): positions of every operator, per unit a pool
    (a Boolean per pool, exactly one; a pinned unit may take any pool whose grid and capacity
    hold its pin, as in :func:`planners.feature_cpsat.solve_features`; the offset a multiple of
    ``lcm(alignment, pool alignment)`` of the pool it is in) with optional time x address
    rectangles per pool (``NoOverlap2D`` per pool), ``offset + size <= H_k <= capacity_k``; the
    objective of :mod:`planners.feature_cpsat`: ``W x traffic + sum_k H_k`` with ``W = sum_k
    UB_k + 1`` (traffic = ``sum size x cost(pool) x lifetime steps``, the lifetime following
    the order). Hinted with ``(pos, off, pool)``. Returns ``(pos, off, pool, proved,
    deterministic_time)``; the inputs when the solver found nothing."""
    from ortools.sat.python import cp_model

    n = T = inst.n
    K = len(inst.pools)
    mdl = cp_model.CpModel()
    P = [mdl.NewIntVar(0, T - 1, f"p{v}") for v in range(n)]
    for v in range(n):
        mdl.AddHint(P[v], pos[v])
        for u in inst.preds[v]:
            mdl.Add(P[u] < P[v])
    if n > 1:
        mdl.AddAllDifferent(P)
    worst = sum(-(-s // inst.alignment) * inst.alignment for s in inst.size)
    palign = [q.alignment for q in inst.pools]
    al = math.lcm(inst.alignment, *palign)
    worst += al * inst.m + max([p + s for p, s in zip(inst.pin, inst.size) if p >= 0],
                                default=0)
    ub = [q.capacity if q.capacity is not None else worst for q in inst.pools]
    H = [mdl.NewIntVar(0, ub[k], f"H{k}") for k in range(K)]
    costs = pool_costs(inst.pools)
    boxes = [([], []) for _ in range(K)]
    X, lits, terms = [], [], []
    for b in range(inst.m):
        s = inst.size[b]
        iv = _lifetime_interval(mdl, inst, b, lambda op: P[op], T)
        # each pool's own grid: the offset is a multiple of lcm(alignment, pool alignment) only
        # in the pool the unit is in; a pinned unit may take every pool whose grid and capacity
        # hold its pin (the rule of planners.placement.pin_pools)
        grid = [math.lcm(inst.alignment, a) for a in palign]
        if inst.pin[b] >= 0:
            cands = [k for k in range(K) if inst.pin[b] % grid[k] == 0
                     and inst.pin[b] + s <= ub[k]]
            if not cands:
                return pos, off, pool, False, 0.0  # no pool holds the pin: keep the start
            x = mdl.NewConstant(inst.pin[b])
        else:
            cands = [k for k in range(K) if ub[k] >= s]
            if not cands:
                return pos, off, pool, False, 0.0  # cannot fit anywhere: keep the start
            top = max(ub[k] for k in cands) - s
            x = mdl.NewIntVar(0, top, f"x{b}")
            mdl.AddHint(x, off[b])
        X.append(x)
        lit = {k: (mdl.NewBoolVar(f"q{b}_{k}") if len(cands) > 1 else None) for k in cands}
        if len(cands) > 1:
            mdl.AddExactlyOne(lit.values())
            for k in cands:
                mdl.AddHint(lit[k], pool[b] == k)
        if inst.pin[b] < 0:
            for k, q in lit.items():
                kk = mdl.NewIntVar(0, top // grid[k], f"k{b}_{k}")
                c = mdl.Add(x == grid[k] * kk)
                if q is not None:
                    c.OnlyEnforceIf(q)
        lits.append(lit)
        for k, q in lit.items():
            if s:
                if q is None:
                    tx = iv
                    ay = mdl.NewFixedSizeIntervalVar(x, s, f"a{b}_{k}")
                    mdl.Add(x + s <= H[k])
                else:
                    tx = mdl.NewOptionalIntervalVar(iv.StartExpr(), iv.SizeExpr(), iv.EndExpr(),
                                                    q, f"t{b}_{k}")
                    ay = mdl.NewOptionalFixedSizeIntervalVar(x, s, q, f"a{b}_{k}")
                    mdl.Add(x + s <= H[k]).OnlyEnforceIf(q)
                boxes[k][0].append(tx)
                boxes[k][1].append(ay)
            w = s * costs[k]
            if w:
                if q is None:
                    terms.append(w * iv.SizeExpr())
                else:
                    c = mdl.NewIntVar(0, T, f"c{b}_{k}")
                    mdl.Add(c >= iv.SizeExpr()).OnlyEnforceIf(q)
                    terms.append(w * c)
    for k in range(K):
        if len(boxes[k][0]) > 1:
            mdl.AddNoOverlap2D(boxes[k][0], boxes[k][1])
    W = sum(ub) + 1
    top_cost = T * sum(inst.size) * max(costs)
    if not terms:
        mdl.Minimize(sum(H))
    elif W * (top_cost + 1) < 2**62:
        mdl.Minimize(W * sum(terms) + sum(H))
    else:  # pragma: no cover - int64 range: traffic alone (not the lexicographic optimum)
        mdl.Minimize(sum(terms))
    solver = cp_model.CpSolver()
    _cp_params(solver, workers, seed, wall, dtime)
    st = _cp_solve(solver, mdl, wall)
    dt = solver.deterministic_time
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return pos, off, pool, False, dt
    npos = [solver.Value(P[v]) for v in range(n)]
    noff = [solver.Value(X[b]) if inst.size[b] or inst.pin[b] >= 0 else 0 for b in range(inst.m)]
    npool = [next(k for k, q in lits[b].items() if q is None or solver.Value(q))
             for b in range(inst.m)]
    # a proof of the real problem: every pool keeps its own grid and a pin may take any pool
    # that holds it, so the model restricts nothing (only the int64 fallback objective does)
    proved = st == cp_model.OPTIMAL and (not terms or W * (top_cost + 1) < 2**62)
    return npos, noff, npool, proved, dt


def _pin_order(inst: _Instance, *, wall, seed: int, workers: int,
               dtime: float | None = None):
    """An order in which the pinned units that meet in address never meet in time, or the reason
    no order exists. CP-SAT: positions, precedences and the pinned units' time x fixed address
    rectangles, ``NoOverlap2D``; with pools each pinned unit of ``size > 0`` takes one of the
    pools whose grid and capacity hold its pin (:func:`planners.placement.pin_pools`; a Boolean
    per pool, optional rectangles, one ``NoOverlap2D`` per pool), so ``INFEASIBLE`` proves that
    no (order, layout) pair keeps the pins apart with any number of pools. Returns ``(pos,
    None)``, ``(None, reason)`` (proved) or ``(None, None)`` (nothing found within
    ``dtime``, CP-SAT deterministic time units, or before the outer stop ``wall``)."""
    from ortools.sat.python import cp_model

    cands: dict[int, list[int]] = {}
    for b in range(inst.m):  # a pin may take any pool whose alignment and capacity hold it
        # (planners.placement.pin_pools: a zero-size buffer fits any capacity, but its pin must
        # still lie on the grid of its pool, as the validator checks every offset's alignment)
        if inst.pin[b] < 0 or not inst.pools:
            continue
        cands[b] = [k for k, q in enumerate(inst.pools)
                    if inst.pin[b] % q.alignment == 0 and (
                        q.capacity is None or not inst.size[b]
                        or inst.pin[b] + inst.size[b] <= q.capacity)]
        if not cands[b]:
            return None, (f"pins: buffer {inst.ids[b]!r} pinned at {inst.pin[b]} with "
                          f"{inst.size[b]} bytes fits no pool (alignment, capacity)")
    n = T = inst.n
    mdl = cp_model.CpModel()
    P = [mdl.NewIntVar(0, T - 1, f"p{v}") for v in range(n)]
    for v in range(n):
        for u in inst.preds[v]:
            mdl.Add(P[u] < P[v])
    if n > 1:
        mdl.AddAllDifferent(P)
    pinned = [b for b in range(inst.m) if inst.pin[b] >= 0 and inst.size[b]]
    boxes: dict[int, tuple[list, list]] = {}
    for b in pinned:
        iv = _lifetime_interval(mdl, inst, b, lambda op: P[op], T)
        ks = cands.get(b, [0])
        if len(ks) == 1:
            tx, ay = boxes.setdefault(ks[0], ([], []))
            tx.append(iv)
            ay.append(mdl.NewFixedSizeIntervalVar(inst.pin[b], inst.size[b], f"a{b}"))
            continue
        lits = [mdl.NewBoolVar(f"q{b}_{k}") for k in ks]
        mdl.AddExactlyOne(lits)
        for k, q in zip(ks, lits):
            tx, ay = boxes.setdefault(k, ([], []))
            tx.append(mdl.NewOptionalIntervalVar(iv.StartExpr(), iv.SizeExpr(), iv.EndExpr(), q,
                                                 f"t{b}_{k}"))
            ay.append(mdl.NewOptionalFixedSizeIntervalVar(inst.pin[b], inst.size[b], q,
                                                          f"a{b}_{k}"))
    for tx, ay in boxes.values():
        if len(tx) > 1:
            mdl.AddNoOverlap2D(tx, ay)
    solver = cp_model.CpSolver()
    _cp_params(solver, workers, seed, wall, dtime)
    st = _cp_solve(solver, mdl, wall)
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return [solver.Value(P[v]) for v in range(n)], None
    if st == cp_model.INFEASIBLE:
        names = [inst.ids[b] for b in pinned]
        where = " in any pool that holds them" if len(inst.pools) > 1 else ""
        return None, (f"pins: no operator order keeps the pinned buffers {names} apart{where} "
                      "(each order has two of them live at a common step over common bytes)")
    return None, None


def _lns_pools(inst: _Instance, pos, off, pool, *, clock, dtime_total, planner, window,
               band, rng, seed, workers, t0, trace, replan_seconds):
    """Large-neighbourhood search with pools (anytime mode): alternately (1) the order
    neighbourhood of :func:`_order_solve` on a shadow order, re-planned by the pool-aware
    ``planner`` whenever its peak falls, adopted when ``(traffic, total arena)`` falls; (2) an
    address band inside one pool with the order and the pool assignment fixed (:func:`_solve`,
    the traffic unchanged, that pool's arena never above its old one). Budgeted by work: it
    stops when ``dtime_total`` (CP-SAT deterministic time units; every sub-solve counts 0.02 at
    least, a re-plan 0.1) is spent, the ``clock`` (:class:`_Clock`) only as the outer stop;
    each re-plan gets the nominal ``replan_seconds`` (:func:`planner_budget`). Returns
    ``(pos, off, pool, iterations, improvements, deterministic time)``."""
    best = inst.objective(pos, off, pool)
    opos, opeak = list(pos), inst.peak(pos)
    planned_peak, ow = opeak, min(2 * window, inst.n)
    iters = improvements = 0
    dt_used = 0.0
    nb = band
    while dt_used < dtime_total:
        if clock.passed():
            clock.cut("anytime search")
            break
        sub_dt = min(1.0, dtime_total - dt_used)
        if iters % 2 == 0:
            lo_k, hi_k = _peak_window(inst, opos, ow, rng)
            opos2, pk, dt = _order_solve(inst, opos, (lo_k, hi_k), dtime=sub_dt, wall=clock,
                                         seed=seed + iters, workers=workers)
            iters += 1
            dt_used += max(dt, 0.02)  # every step costs something: a deterministic stop
            if pk <= opeak:
                opos, opeak = opos2, pk
            if opeak < planned_peak:
                planned_peak = opeak
                got = _replan(inst, opos, planner, replan_seconds, clock)
                dt_used += 0.1  # a re-plan is charged too (its planner has no CP-SAT clock)
                if got is not None:
                    noff, npool = got
                    obj = inst.objective(opos, noff, npool)
                    if obj < best:
                        pos, off, pool, best = list(opos), noff, npool, obj
                        improvements += 1
                        trace.append((round(time.perf_counter() - t0, 3), best[1]))
            continue
        used = sorted({pool[b] for b in range(inst.m) if inst.size[b]})
        if not used:
            break
        k = rng.choice(used)
        tops = [off[b] + inst.size[b] for b in range(inst.m) if inst.size[b] and pool[b] == k]
        lo_k, hi_k, fb = _neighbourhood(inst, pos, off, max(tops), min(window, inst.n),
                                        10 * inst.m, rng)
        fb = sorted((b for b in fb if pool[b] == k and inst.pin[b] < 0),
                    key=lambda b: (-(off[b] + inst.size[b]), b))[:nb]
        iters += 1
        if not fb:
            dt_used += 0.02
            continue
        npos, noff, _, dt, _ = _solve(inst, pos, off, (lo_k, lo_k), set(fb), dtime=sub_dt,
                                      wall=clock, seed=seed + iters, workers=workers, pool=pool)
        dt_used += max(dt, 0.02)
        obj = inst.objective(pos, noff, pool)
        if obj <= best:
            if obj < best:
                improvements += 1
                trace.append((round(time.perf_counter() - t0, 3), obj[1]))
            off, best = noff, obj
        nb = min(nb + 4, 80) if dt < 0.2 * sub_dt else (max(nb - 4, 8) if dt >= sub_dt else nb)
    return pos, off, pool, iters, improvements, dt_used


# --------------------------------------------------------------------------------------------
# the starting pair


def sequential_pairs(graph: Graph, schedulers: Sequence[str] | None = None,
                     planner: str | Sequence[str] = "telamalloc", *, time_limit: float = 10.0,
                     top: int = 3, unified: bool = False, include_inputs: bool = False,
                     alignment: int = 1, planner_params: dict | None = None,
                     scheduler_params: dict | None = None, pins=None,
                     pools=None, runs: dict | None = None,
                     deadline: float | None = None) -> list[dict]:
    """The sequential (scheduler, planner) pairs the joint search starts from.

    Every scheduler in ``schedulers`` (registry names; ``None``: every registered one but
    ``best_of``, ``joint`` and those of :data:`CLOCK_ONLY_SCHEDULERS`) orders the graph, each
    budgeted by work (:func:`scheduler_budget`: ``anneal``'s iterations, ``genetic``'s
    generations, ``exact_dp``'s states, :data:`START_STATES_PER_SECOND` per second of
    ``time_limit / 4``) unless ``scheduler_params[name]`` is given (then those parameters
    alone, the scheduler's defaults for the rest); the file order and
    the ``top`` distinct orders of lowest peak are planned by ``planner`` (a registry name, or
    several: the best arena of them per order), each budgeted by work for a nominal
    ``time_limit / (orders planned)`` seconds (:func:`planner_budget`). ``time_limit``
    (seconds) is thus a nominal budget that fixes the work, not a wall-clock limit: the same
    arguments give the same pairs at any load. ``deadline`` (a :func:`time.perf_counter`
    value, ``None``: none) is the wall-clock outer stop: schedulers and planners are stopped by
    it, and a scheduler not started before it is skipped.

    Returns one dict per planned order, best arena first: ``scheduler``,
    ``order``, ``peak`` (bytes), ``arena`` (bytes), ``offsets`` ({tensor name: offset}), ``bound``
    (the scheduler's order bound, bytes), ``order_bound`` (bytes: the largest bound on every
    order's peak that any scheduler proved, :attr:`Schedule.bound`). A scheduler that raises a
    ``MemplanError``/``ValueError`` is skipped; ``ValueError`` when no order at all was found or
    no planner planned one.

    The problem of an order is that of :func:`joint_optimize`: with the graph's alias groups
    (graph passes; an order that breaks an in-place decision is dropped), ``pins`` ({tensor:
    offset}, bytes) and ``pools`` (preference order) -- the planner must honour them (its
    ``_capabilities``); a plan above a pool's capacity is dropped. With pools the pairs are
    ranked by ``(traffic, arena)`` and carry ``traffic`` (the traffic cost), ``arena`` (the sum
    of the pools' arenas), ``arenas`` ({pool: bytes}) and ``pools`` ({tensor name: pool index}).
    ``runs``: a dict that receives, per scheduler that ran, ``{"seconds": wall-clock seconds,
    "status": its schedule's status, "peak": its order's peak (bytes), "bound": its bound}``.

    Every record also carries ``clock_cuts`` (list of str: the schedulers and planners that
    ``deadline`` stopped or skipped, empty when the pairs were computed to completion by work)
    and ``clock_dependent`` (list of str: schedulers run with a wall-clock budget and no work
    budget, e.g. ``cpsat_schedule`` or ``exact_dp`` given a ``time_limit`` in
    ``scheduler_params``, whose order may then depend on the load).
    """

    from planners import MemplanError
    from planners.errors import CapacityError
    from planners.feature_cpsat import traffic_cost
    from planners.registry import get_planner

    from .lifetimes import peak_live_bytes
    from .schedulers.catalogue import SCHEDULERS, get_scheduler

    names = list(schedulers) if schedulers is not None else [
        s for s in SCHEDULERS if s not in ("best_of", "joint", *CLOCK_ONLY_SCHEDULERS)]
    if "file_order" not in names:
        names.insert(0, "file_order")
    orders: dict[tuple, dict] = {}
    proved = 0  # the largest order bound any scheduler proved (e.g. exact_dp's optimum)
    cuts: list[str] = []
    dependent: list[str] = []
    for s in names:
        if deadline is not None and s != "file_order" and time.perf_counter() >= deadline:
            cuts.append(f"scheduler {s} (not started)")
            continue
        outer = None if deadline is None else deadline - time.perf_counter()
        given = (scheduler_params or {}).get(s)
        # parameters given for a scheduler replace its work budget (not merged into it)
        params = dict(given) if given is not None else scheduler_budget(s, time_limit / 4, outer)
        if s in CLOCK_ONLY_SCHEDULERS or (s in _CLOCK_UNLESS_NONE and params.get("time_limit")
                                          is not None):
            dependent.append(s)
        t0 = time.perf_counter()
        try:
            sch = get_scheduler(s, **params).schedule(graph)
        except (MemplanError, ValueError):
            continue
        if (sch.info or {}).get("stopped_by") == "time_limit" or (
                s in _CLOCK_UNLESS_NONE and sch.status == "timeout"
                and params.get("time_limit") is not None):
            cuts.append(f"scheduler {s}")
        key = tuple(sch.order)
        if runs is not None:
            runs[s] = {"seconds": time.perf_counter() - t0, "status": sch.status,
                       "peak": peak_live_bytes(graph, key), "bound": sch.bound}
        proved = max(proved, sch.bound or 0)
        if key not in orders:
            orders[key] = {"scheduler": s, "order": list(key),
                           "peak": peak_live_bytes(graph, key, include_inputs=include_inputs,
                                                   unified=unified),
                           "bound": sch.bound}
    if not orders:
        raise ValueError(f"graph {graph.name!r}: no scheduler of {names} found an order")
    inst = _Instance(graph, unified, include_inputs, alignment, pins, pools)
    if inst.after:  # orders that keep the in-place decisions valid
        orders = {k: r for k, r in orders.items() if inst.precedence_ok(k) is None}
        if not orders:
            raise ValueError(f"graph {graph.name!r}: no scheduler of {names} found an order "
                             "that keeps the in-place decisions valid")
    ranked = sorted(orders.values(), key=lambda r: r["peak"])
    chosen = ranked[:top]
    fo = next((r for r in ranked if r["scheduler"] == "file_order"), None)
    if fo is not None and fo not in chosen:
        chosen.append(fo)
    names_p = [planner] if isinstance(planner, str) else list(planner)
    out = []
    for r in chosen:
        prob = inst.problem(r["order"])
        best = None
        for pname in names_p:
            if deadline is not None and out and time.perf_counter() >= deadline:
                cuts.append(f"planner {pname} (not started)")
                continue  # one planned order at least: the clock never leaves none
            outer = None if deadline is None else deadline - time.perf_counter()
            pp = planner_budget(pname, time_limit / max(1, len(chosen)), outer,
                                features=bool(inst.features), given=planner_params)
            try:
                plan = get_planner(pname, **pp).plan(prob)
            except CapacityError:  # a pool below what its forced (pinned) buffers need
                continue
            if deadline is not None and _clock_stopped_plan(plan):
                cuts.append(f"planner {pname}")
            if plan.status in ("infeasible", "timeout", "skipped", "error", "over_capacity"):
                continue
            check_plan(prob, plan.offsets, pools=plan.pools if inst.pools else None)
            key = (traffic_cost(prob, plan.pools) if inst.pools else 0, plan.arena_size)
            if best is None or key < best[2]:
                best = (pname, plan, key)
        if best is None:
            continue
        rec = {**r, "planner": best[0], "arena": int(best[1].arena_size),
               "offsets": {b.id: int(o) for b, o in zip(prob.buffers, best[1].offsets)}}
        if inst.pools:
            rec.update(traffic=int(best[2][0]), arenas=dict(best[1].arenas),
                       pools={b.id: int(k) for b, k in zip(prob.buffers, best[1].pools)})
        out.append(rec)
    if not out:
        raise ValueError(f"graph {graph.name!r}: no planner of {names_p} planned an order")
    out.sort(key=lambda r: (r.get("traffic", 0), r["arena"], r["peak"]))
    for r in out:
        r.update(order_bound=proved, clock_cuts=list(dict.fromkeys(cuts)),
                 clock_dependent=list(dependent))
    return out


#: Schedulers with a wall-clock budget and no work budget
#: (``cpsat_schedule``: its model-size decision and CP-SAT's stop read the clock), left out of
#: :func:`sequential_pairs`' default set so that its pairs do not depend on the load.
CLOCK_ONLY_SCHEDULERS = ("cpsat_schedule",)
#: Schedulers whose ``time_limit`` divides their work by the clock (phases, probes and segments
#: get shares of the time left) unless it is ``None``: :func:`scheduler_budget` gives them
#: ``None`` and a work budget.
_CLOCK_UNLESS_NONE = ("exact_dp",)
#: ``exact_dp``'s ``max_states`` per nominal second in :func:`sequential_pairs`: a quarter of
#: what it expands on the shared 2-core machine at load 6 (500,000 states in 22 s on
#: ``moccasin_layered`` seed 0, 250 operators), the margin of
#: :data:`DETERMINISTIC_TIME_PER_SECOND`.
START_STATES_PER_SECOND = 5_000


def scheduler_budget(scheduler: str, seconds: float, outer: float | None) -> dict:
    """The keyword parameters that budget ``scheduler`` (registry name) by work for a nominal
    ``seconds``, the wall clock (``outer`` seconds, ``None``: no clock) only as the outer stop.

    * ``anneal``, ``genetic``: their ``iterations``/``generations`` (defaults) are the budget;
      ``time_limit = outer`` (they say ``info["stopped_by"] == "time_limit"`` when it bites).
    * ``exact_dp``: ``time_limit=None`` (with a limit it splits its phases, probes and segments
      by the time left, so its order depends on the load), ``pivot_search=False`` (its pivot
      decisions stop after a wall-clock share even without a limit) and ``max_states =
      max(1,000, START_STATES_PER_SECOND x seconds)``; it has no outer stop then.
    * any other scheduler with a ``time_limit`` (``cpsat_schedule``): ``time_limit = seconds``
      (a wall-clock budget: :data:`CLOCK_ONLY_SCHEDULERS`).
    * a scheduler without one: nothing.

    Returns a new dict; raises nothing."""
    from .schedulers.catalogue import SCHEDULERS

    cls = SCHEDULERS.get(scheduler)
    names = cls._param_names() if cls is not None else ()
    if "time_limit" not in names:
        return {}
    if scheduler in ("anneal", "genetic"):
        return {"time_limit": None if outer is None else max(0.01, float(outer))}
    if scheduler == "exact_dp":
        return {"time_limit": None, "pivot_search": False,
                "max_states": max(1000, int(START_STATES_PER_SECOND * float(seconds)))}
    return {"time_limit": max(0.05, float(seconds))}


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
    pins: Mapping[str, int] | None = None,
    pools: Sequence[Any] | None = None,
) -> JointResult:
    """Optimise the operator order and the offsets of ``graph`` together (module docstring).

    Parameters
    ----------
    graph : Graph
        Acyclic (``CycleError`` otherwise); its operators may be stored in any order.
    time_limit : float
        Seconds. The wall-clock outer stop of the whole call (starting pairs included), and
        the nominal budget the work budgets derive from: the starting pairs get the work of
        ``START_SHARE x time_limit`` seconds (:func:`sequential_pairs`), the search
        ``deterministic_time``. When the clock stops a phase early the result says so
        (``cut_by_clock``, ``info["stopped_by"] == "time_limit"``).
    seed : int
        Seed of the neighbourhood choice and of CP-SAT.
    workers : int
        CP-SAT workers (1 = deterministic; more make CP-SAT's search depend on the threads'
        timing).
    deterministic_time : float or None
        Budget in CP-SAT deterministic time units over all sub-solves (each counted as 0.02
        at least); the search stops when it is spent, reproducibly, unless ``time_limit``
        stops it first. ``None``: :data:`DETERMINISTIC_TIME_PER_SECOND` x ``time_limit``.
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
    pins : mapping or None
        ``{tensor name: offset}`` (bytes) fixed in every model (module docstring).
    pools : sequence of MemoryPool or None
        Memories in preference order; objective traffic cost, then the sum of the pools'
        arenas (module docstring). A ``start`` pair then carries ``pools`` ({tensor: index}).

    Returns
    -------
    JointResult
        ``status`` ``infeasible`` (no plan, ``info["reason"]``) when pins collide in every order.

    Raises
    ------
    ValueError
        ``time_limit`` not > 0, ``workers`` < 1, ``alignment`` < 1 or a start pair that is not
        a valid (order, plan) pair of this graph (the validators' message), or one that breaks
        an in-place decision.
    planners.errors.ProblemError
        A pin of a tensor that is not a buffer, or at a negative or misaligned offset.
    planners.errors.FeatureError
        Alias groups with pins or pools, or an alias annotation that cannot be kept valid in
        another order (module docstring).
    """
    if not time_limit > 0:
        raise ValueError(f"joint_optimize: time_limit must be > 0 seconds, got {time_limit!r}")
    if workers < 1 or alignment < 1 or window < 2 or band_buffers < 1:
        raise ValueError("joint_optimize: workers, alignment, band_buffers must be >= 1 and "
                         f"window >= 2 (got {workers}, {alignment}, {band_buffers}, {window})")
    clock = _Clock(time_limit)
    t0 = clock.t0
    if deterministic_time is None:  # the default work budget: reproducible at any load
        deterministic_time = DETERMINISTIC_TIME_PER_SECOND * float(time_limit)
    replan_seconds = min(REPLAN_SECONDS, max(0.1, time_limit / 10))
    from .schedulers.base import cached_order_bound

    order_bound = int(cached_order_bound(graph)) if len(graph.ops) else 0  # CycleError first
    inst = _Instance(graph, unified, include_inputs, alignment, pins, pools)
    if inst.after:
        why = inst.precedence_ok(inst.ref_order)
        if why is not None:
            from planners.errors import FeatureError

            raise FeatureError(f"graph {graph.name!r}: an in-place decision is not valid for "
                               f"the stored order ({why}); joint_optimize cannot rebuild it")
    res_bytes = resident_bytes(graph, include_inputs) if unified else 0
    clock_dependent: list[str] = []
    if start is None:
        try:
            pairs = sequential_pairs(graph, schedulers, planner,
                                     time_limit=START_SHARE * time_limit,
                                     unified=unified, include_inputs=include_inputs,
                                     alignment=alignment, pins=pins, pools=pools,
                                     deadline=clock.deadline)
        except ValueError:
            if not inst.pin_map:
                raise
            pairs = []
        if pairs:
            for c in pairs[0]["clock_cuts"]:
                clock.cut(f"start: {c}")
            clock_dependent = list(pairs[0]["clock_dependent"])
        else:  # pins: an order that keeps them apart, or the proof that none does
            # the pinned units' order model: a feasibility question, given at least one unit
            # of deterministic time (it had the whole wall clock before it was budgeted)
            ppos, reason = _pin_order(inst, wall=clock, seed=seed, workers=workers,
                                      dtime=max(1.0, deterministic_time))
            if reason is not None:
                return JointResult(None, None, None, None, order_bound + res_bytes,
                                   "infeasible", {}, time.perf_counter() - t0,
                                   {"reason": reason, "order_bound": order_bound,
                                    "stopped_by": "proof", "clock_cuts": list(clock.cuts)},
                                   cut_by_clock=bool(clock.cuts))
            got = None if ppos is None else _replan(
                inst, ppos, planner if isinstance(planner, str) else list(planner)[0],
                START_SHARE * time_limit, clock)
            if got is None:
                raise ValueError(f"graph {graph.name!r}: no planner of {planner} planned an "
                                 "order with the pins" + ("" if ppos is None else
                                                          " (within the pools' capacities)"))
            noff, npool = got if inst.pools else (got, None)
            order = inst.order_of(ppos)
            pairs = [{"scheduler": "pins", "order": order, "offsets": dict(zip(inst.ids, noff)),
                      "peak": None}]
            if inst.pools:
                pairs[0]["pools"] = dict(zip(inst.ids, npool))
        start = pairs[0]
        fo = next((p for p in pairs if p["scheduler"] == "file_order"), None)
        fo_arena = fo["arena"] if fo else None
    else:
        fo_arena = start.get("file_order_arena")
        clock_dependent = list(start.get("clock_dependent") or [])
        for c in start.get("clock_cuts") or []:
            clock.cut(f"start: {c}")
    # a scheduler's proved bound (exact_dp's optimum) holds for every order's peak too
    order_bound = max(order_bound, int(start.get("order_bound") or 0))
    if inst.aliases:
        # alias groups (in place) can hold less than the order's live bytes, so the order bound
        # does not hold; in every order an operator's step holds the units it reads or writes
        # and the residents (live throughout), and every unit is placed somewhere
        res = {u for u in range(inst.m) if inst.fz[u] and inst.lend[u]}
        res_u = sum(inst.size[u] for u in res)
        bound = res_u + max([inst.size[u] for u in range(inst.m) if u not in res]
                            + [sum(inst.size[u] for u in set(inst.uses[v]) - res)
                               for v in range(inst.n)], default=0)
    else:
        bound = order_bound + res_bytes
    order0 = list(start["order"])
    check_schedule(graph, order0)
    if inst.after and inst.precedence_ok(order0) is not None:
        raise ValueError(f"joint_optimize: the start order breaks an in-place decision "
                         f"({inst.precedence_ok(order0)})")
    pos = [0] * inst.n
    for k, name in enumerate(order0):
        pos[inst.idx[name]] = k
    off = [int(start["offsets"].get(i, 0)) if s or p >= 0 else 0
           for i, s, p in zip(inst.ids, inst.size, inst.pin)]
    if inst.pools and "pools" not in start:
        raise ValueError("joint_optimize: with pools a start pair needs 'pools' ({tensor name: "
                         "pool index})")
    pool = [int(start["pools"][i]) for i in inst.ids] if inst.pools else None
    prob0 = inst.problem(order0)
    check_plan(prob0, inst.offsets_in(prob0, off), pools=inst.pools_in(prob0, pool) if pool
               else None)
    arena = inst.arena(off)
    obj0 = inst.objective(pos, off, pool)
    start_info = {"scheduler": start["scheduler"], "planner": start.get("planner", planner),
                  "arena": obj0[1], "peak": start.get("peak"), "file_order_arena": fo_arena}
    if inst.pools:
        start_info["traffic"] = obj0[0]
    rng = random.Random(seed)
    trace = [(round(time.perf_counter() - t0, 3), obj0[1])]
    iters = improvements = 0
    dt_used = 0.0
    mode = "exact" if inst.n <= exact_max_ops else "lns"
    phase_peak = None  # the peak the order phase reached (lns mode), bytes
    proved = False  # with pools: CP-SAT proved the whole model optimal
    # no order's peak of live (alias-collapsed) bytes is below this (bytes)
    peak_floor = 0 if inst.aliases else order_bound
    # every sub-solve costs at least this much of ``deterministic_time``: a deterministic stop
    # where the bound is out of reach (weaker with aliases or pins, and on any graph whose
    # optimum lies above it), since CP-SAT reports almost no deterministic time for the tiny
    # sub-models of a small graph and the search would otherwise run to the wall clock
    dt_floor = 0.02
    if inst.pools:
        if inst.n and not (obj0[0] == 0 and obj0[1] <= bound):
            pname = planner if isinstance(planner, str) else list(planner)[0]
            if mode == "exact":
                npos, noff, npool, proved, dt_used = _solve_pools_whole(
                    inst, pos, off, pool, dtime=deterministic_time, wall=clock, seed=seed,
                    workers=workers)
                iters = 1
                if inst.objective(npos, noff, npool) <= obj0:
                    pos, off, pool = npos, noff, npool
                else:
                    proved = False
            else:
                pos, off, pool, iters, improvements, dt_used = _lns_pools(
                    inst, pos, off, pool, clock=clock, dtime_total=deterministic_time,
                    planner=pname, window=window, band=band_buffers, rng=rng, seed=seed,
                    workers=workers, t0=t0, trace=trace, replan_seconds=replan_seconds)
    elif arena > bound and inst.n:
        if mode == "exact":
            npos, noff, b, dt, _ = _solve(inst, pos, off, (0, inst.n), set(range(inst.m)),
                                          dtime=deterministic_time, wall=clock, seed=seed,
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

            def adopt(order_pos) -> None:
                """Plan the shadow order ``order_pos`` with ``pname`` (its work budget for
                ``replan_seconds``, the clock the outer stop) and take that (order, offsets)
                pair when its arena is below the incumbent's."""
                nonlocal pos, off, arena, improvements
                noff = _replan(inst, order_pos, pname, replan_seconds, clock)
                if noff is not None:
                    na = inst.arena(noff)
                    if na < arena:
                        pos, off, arena = list(order_pos), noff, na
                        improvements += 1
                        trace.append((round(time.perf_counter() - t0, 3), arena))

            # first the order alone for 40 % of the deterministic time (windows are cheap
            # without addresses), the shadow order planned after every tenth of it when its
            # peak fell by 0.5 % since the last plan
            phase_dt = 0.4 * deterministic_time
            next_plan = 0.1 * phase_dt
            while opeak > peak_floor and dt_used < phase_dt:
                if clock.passed():
                    clock.cut("order phase")
                    break
                lo_k, hi_k = _peak_window(inst, opos, ow, rng)
                sub_dt = min(1.0, max(phase_dt - dt_used, 1e-3))
                opos2, pk, dt = _order_solve(inst, opos, (lo_k, hi_k), dtime=sub_dt,
                                             wall=clock, seed=seed + iters, workers=workers)
                iters += 1
                dt_used += max(dt, dt_floor)
                if pk <= opeak:
                    opos, opeak = opos2, pk
                ow = min(ow + 4, 120, inst.n) if dt < 0.2 * sub_dt else (
                    max(ow - 4, 6) if dt >= sub_dt else ow)
                if opeak < arena and opeak < 0.995 * planned_peak and dt_used >= next_plan:
                    planned_peak, next_plan = opeak, dt_used + 0.1 * phase_dt
                    adopt(opos)
            phase_peak = opeak
            if opeak < arena and opeak < planned_peak:
                planned_peak = opeak
                adopt(opos)
            while arena > bound and dt_used < deterministic_time:
                if clock.passed():
                    clock.cut("anytime search")
                    break
                if iters % 2 == 1 and opeak > peak_floor:
                    sub_dt = min(1.0, deterministic_time - dt_used)
                    lo_k, hi_k = _peak_window(inst, opos, ow, rng)
                    opos2, pk, dt = _order_solve(inst, opos, (lo_k, hi_k), dtime=sub_dt,
                                                 wall=clock, seed=seed + iters,
                                                 workers=workers)
                    iters += 1
                    dt_used += max(dt, dt_floor)
                    if pk <= opeak:
                        opos, opeak = opos2, pk
                    ow = min(ow + 4, 120, inst.n) if dt < 0.2 * sub_dt else (
                        max(ow - 4, 6) if dt >= sub_dt else ow)
                    if opeak < arena and opeak < planned_peak:
                        planned_peak = opeak
                        adopt(opos)
                    continue
                layout_only = rng.random() < 0.4  # an address band alone (the order kept)
                lo_k, hi_k, fb = _neighbourhood(inst, pos, off, arena, w, nb, rng)
                if layout_only:
                    hi_k = lo_k
                sub_dt = min(1.0, deterministic_time - dt_used)
                npos, noff, _, dt, improved = _solve(
                    inst, pos, off, (lo_k, hi_k), fb, dtime=sub_dt, wall=clock,
                    seed=seed + iters, workers=workers)
                iters += 1
                dt_used += max(dt, dt_floor)
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
    obj = inst.objective(pos, off, pool)
    if trace[-1][1] != obj[1]:
        trace.append((round(time.perf_counter() - t0, 3), obj[1]))
    order = inst.order_of(pos)
    check_schedule(graph, order)
    if inst.after and inst.precedence_ok(order) is not None:  # pragma: no cover - by construction
        raise AssertionError(f"joint_optimize: {inst.precedence_ok(order)}")
    prob = inst.problem(order)
    offsets = inst.offsets_in(prob, off)
    pools_arr = inst.pools_in(prob, pool) if inst.pools else None
    check_plan(prob, offsets, pools=pools_arr)
    arenas: dict[str, int] = {}
    if inst.pools:
        from planners.feature_cpsat import traffic_cost
        from planners.model import arena_top

        arenas = {q.name: arena_top(offsets[pools_arr == k], prob.sizes[pools_arr == k])
                  for k, q in enumerate(inst.pools)}
        traffic = traffic_cost(prob, pools_arr)
        arena = int(sum(arenas.values()))
        if (traffic, arena) != obj:  # pragma: no cover - guarded by construction
            raise AssertionError("joint_optimize: the objective differs from the checked plan's")
    else:
        from planners.model import arena_top

        traffic = 0
        arena = arena_top(offsets, prob.sizes)  # Plan.arena_size: zero-size buffers take no bytes
    if (traffic, arena) > obj0:  # pragma: no cover - guarded by construction
        raise AssertionError("joint_optimize: the objective rose above the starting pair's")
    if arena < bound:  # pragma: no cover - a checked plan below a proved bound: a wrong bound
        raise AssertionError(f"joint_optimize: arena {arena} bytes of a checked plan is below "
                             f"the bound {bound} bytes")
    status = _status(arena, bound, pools=bool(inst.pools),
                     proved=proved or (traffic == 0 and bool(inst.pools)))
    from .lifetimes import peak_live_bytes
    from .schedulers.base import decide_status

    peak = peak_live_bytes(graph, order)
    cut = bool(clock.cuts)
    stopped_by = "time_limit" if cut else ("bound" if status == "optimal"
                                           else "deterministic_time")
    sched = Schedule(tuple(order), "joint",
                     decide_status("feasible", peak, order_bound), time.perf_counter() - t0,
                     {"time_limit": time_limit, "seed": seed, "planner": planner,
                      "deterministic_time": deterministic_time},
                     {"peak_bytes": peak}, order_bound)
    return JointResult(sched, prob, offsets, arena, int(bound), status, start_info,
                       time.perf_counter() - t0,
                       {"mode": mode, "iterations": iters, "improvements": improvements,
                        "trace": trace, "deterministic_time": round(dt_used, 4),
                        "deterministic_budget": deterministic_time, "stopped_by": stopped_by,
                        "clock_cuts": list(clock.cuts), "clock_dependent": clock_dependent,
                        "order_bound": order_bound, "resident_bytes": res_bytes,
                        "order_phase_peak": phase_peak},
                       pools=pools_arr, arenas=arenas, traffic=int(traffic), cut_by_clock=cut)


def _status(arena: int, bound: int, *, pools: bool, proved: bool) -> str:
    """The status of a result: the planners' one rule (:func:`planners.model.is_proved_optimal`,
    as :meth:`planners.base.Planner.plan` applies it). Without pools ``optimal`` exactly when the
    arena (bytes) equals the proved bound (bytes). With pools the objective is the traffic cost
    first and the total arena second, so an arena at the bound proves nothing about the traffic:
    ``optimal`` needs the method's own proof of the traffic (``proved``: CP-SAT's ``OPTIMAL`` on
    the whole model, or a traffic of 0, the least any assignment has, as costs are >= 0) and a
    total arena equal to the bound; a proved traffic at an arena above the bound is
    ``feasible`` (a smaller arena may exist at a higher traffic)."""
    if pools and not proved:
        return "feasible"
    return "optimal" if is_proved_optimal(arena, bound) else "feasible"


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
