"""Differential test of every registered planner on the compilers' problem (issue #33, items 1-2).

:func:`generate` draws tiny problems (1 to 6 buffers, a few bytes each) with the compiler
features of :class:`planners.model.Problem`: pins, hints, gaps (without a window, with a window
``(lo, hi)`` that may start above 0), two memory pools (bounded or not, own alignments, given
costs or the preference ranks), candidate pools, colocation groups of two or three buffers, and
sometimes an arena capacity. :func:`oracle` solves each problem exactly by an exhaustive
branch-and-bound over every offset (and pool) of every buffer; it shares no code with
:mod:`planners` (it reads only the problem's plain fields: lifetimes, sizes, alignments, pins,
gaps, candidate pools, pool capacities, alignments and costs, colocation groups).
:func:`check_planner` plans the problem with one registered planner
(:data:`planners.registry.PLANNERS`) and compares what the plan claims with the oracle.

The objective, as :mod:`planners.feature_cpsat` documents it: without pools the arena (the
highest ``offset + size`` of a buffer of non-zero size, bytes); with pools the traffic cost
``sum_i (end_i - start_i) x size_i x cost(pool_i)`` over **every** buffer (every member of a
colocation group counts with its own lifetime and size; costs: the pools' own when some is
non-zero, else each pool's rank in the preference order) first, then the total arena (the sum
of the pools' arenas). Lifetimes are half-open ``[start, end)`` in schedule steps.

Oracle (:func:`oracle`)
-----------------------
A *unit* is a colocation group or a lone buffer: one offset and one pool for all its members.
Each member takes, relative to the unit's offset, ``[0, size)`` over its lifetime outside its
gaps, nothing in a gap without window, ``[lo, hi)`` in a gap with window ``(lo, hi)``. Two units
in one pool conflict when a rectangle of one and one of the other share a step and a byte;
precomputed as the set of forbidden offset differences per pair of units. The search places the
units one by one (pinned ones at their pin, zero-size ones at 0), each at every multiple of the
lcm of its members' and its pool's alignments from 0 up to the pool's capacity, or, for an
unbounded pool, up to the stacked arena (pins' top plus every unit's size and alignment), which
bounds every optimal plan's arena in that pool (restacking that pool's units is a valid plan with
the same traffic); branches that cannot beat the incumbent are cut (the partial objective only
grows). It returns the minimal arena without pools (ignoring the capacity: the problem is
feasible iff it is at most the capacity), or with pools the minimal (traffic, total arena) under
the pools' capacities and, separately, the minimal total arena of any valid plan (which bounds
every lower bound); ``None`` where no plan exists.

Checks (:func:`check_planner`), per plan: the layout is valid by the oracle's own rules
(pins, alignments, candidate pools, capacities unless ``over_capacity``, colocated members at
one offset and pool, no overlap); the arena is the plan's real arena and at least the optimum;
``optimal`` only at the optimum; ``lower_bound`` and ``best_bound`` at most the optimum (the
least total arena with pools); ``infeasible`` or a :class:`~planners.errors.CapacityError` only
where no plan exists; a reported ``traffic_cost`` equal to the plan's real traffic and at least
the optimum. A planner that refuses a feature (:class:`~planners.errors.FeatureError`) is
counted as ``refused``; a planner that needs a capacity (:meth:`planners.base.Planner.
needs_capacity`) gets the problem's lower bound as its capacity, as ``memplan plan`` does.

``python -m experiments.bench.feature_differential --problems 2000 --seed 0`` runs the full
count (the ``make soak`` part), prints one line per disagreement and a table per planner, and
writes one row per (problem, planner) to ``results/feature_differential.csv`` (``--out``); exit
status 1 on any disagreement, 0 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["generate", "oracle", "OracleResult", "check_planner", "Outcome", "run", "main",
           "DEFAULT_TIME_LIMIT"]

#: Seconds given to every planner that takes a time limit (tiny problems; a solver that stops
#: early only loses claims, it never makes a wrong one pass).
DEFAULT_TIME_LIMIT = 2.0


# ---------------------------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------------------------
#: What :func:`generate` draws, by ``seed % 4``: two of any features, then a colocation pair
#: in time order with two pools (the merged buffer's hull lifetime x largest size is not the
#: members' traffic), then a colocation pair where one member's window lies above the other's
#: range at a common step (the merged buffer takes the hole between them).
KINDS = ("mixed", "mixed", "pools_colocation", "window_colocation")


def generate(seed: int):
    """A tiny random problem with compiler features (module docstring), deterministic in
    ``seed``: a :class:`planners.model.Problem` of 1 to 6 buffers (sizes 0 to 4 bytes,
    alignments 1 or 2, lifetimes within steps ``[0, 8)``), of the kind ``KINDS[seed % 4]``
    (:data:`KINDS`); ``mixed``: with probability about 0.4 two pools (``sram`` of 4 to 8 bytes,
    ``psram`` unbounded or of 8 to 12 bytes), colocation groups of two or three with
    probability 0.4, a capacity (one below, at or above the optimum) for 0.3 of those without
    pools. A draw the model refuses (e.g. a colocation group pinned at two offsets) is redrawn
    from the same stream."""
    from planners.errors import ProblemError
    from planners.model import Buffer, MemoryPool, Problem

    kind = KINDS[int(seed) % len(KINDS)]
    rng = np.random.default_rng([33, int(seed)])
    while True:
        n = int(rng.integers(2 if kind != "mixed" else 1, 7))
        pools = None
        if kind == "pools_colocation" or (kind == "mixed" and rng.random() < 0.4):
            pools = [MemoryPool("sram", int(rng.choice([3, 4, 6, 8])), int(rng.choice([1, 2])),
                                cost=int(rng.choice([0, 0, 1]))),
                     MemoryPool("psram", [None, 8, 12][int(rng.integers(0, 3))],
                                int(rng.choice([1, 2])), cost=int(rng.choice([0, 1, 3])))]
        bufs = []
        for i in range(n):
            s = int(rng.integers(0, 5))
            e = s + int(rng.integers(1, 5))
            z = int(rng.integers(0, 5))
            al = int(rng.choice([1, 1, 2]))
            gaps = []
            if e - s >= 2 and rng.random() < 0.4:
                g0 = int(rng.integers(s, e - 1))
                g1 = int(rng.integers(g0 + 1, e + 1))
                w = None
                if rng.random() < 0.6 and z:
                    lo = int(rng.integers(0, z + 1))
                    w = (lo, int(rng.integers(lo, z + 1)))
                gaps = [(g0, g1, w)]
            pin = al * int(rng.integers(0, 4)) if rng.random() < 0.15 else None
            hint = int(rng.integers(0, 6)) * al if rng.random() < 0.2 else None
            cand = ()
            if pools and rng.random() < 0.3:
                cand = (("sram",), ("psram",))[int(rng.integers(0, 2))]
            bufs.append(Buffer(f"b{i}", s, e, z, al, offset=pin, hint=hint, gaps=gaps,
                               pools=cand))
        coloc = None
        if kind == "pools_colocation":  # b0 then b1, apart in time, sizes drawn anew
            s0 = int(rng.integers(0, 3))
            e0 = s0 + int(rng.integers(1, 3))
            s1 = e0 + int(rng.integers(0, 3))
            bufs[0] = Buffer("b0", s0, e0, int(rng.integers(1, 5)), pools=bufs[0].pools)
            bufs[1] = Buffer("b1", s1, s1 + int(rng.integers(1, 3)), int(rng.integers(1, 5)),
                             pools=bufs[1].pools)
            coloc = [("b0", "b1")]
        elif kind == "window_colocation":  # b0's window [lo, hi) above b1's [0, size) at s0
            s0 = int(rng.integers(0, 3))
            z0 = int(rng.integers(3, 5))
            lo = int(rng.integers(2, z0))
            bufs[0] = Buffer("b0", s0, s0 + int(rng.integers(2, 4)), z0,
                             gaps=[(s0, s0 + 1, (lo, int(rng.integers(lo + 1, z0 + 1))))])
            bufs[1] = Buffer("b1", s0 - int(rng.integers(0, s0 + 1)), s0 + 1,
                             int(rng.integers(1, lo)))
            coloc = [("b0", "b1")]
        elif n >= 2 and rng.random() < 0.4:
            k = int(rng.integers(2, min(3, n) + 1))
            coloc = [tuple(f"b{j}" for j in sorted(rng.choice(n, k, replace=False).tolist()))]
        cap = None
        if not pools and rng.random() < 0.3:
            cap = -1  # filled in from the oracle below: one below, at, or above the optimum
        try:
            p = Problem(bufs, pools=pools, colocations=coloc, name=f"fd{seed}")
        except ProblemError:
            continue
        if cap is not None:
            best = oracle(p).arena
            if best is None:
                return p
            cap = max(0, best + int(rng.integers(-1, 2)))
            try:
                return p.with_capacity(cap)
            except ProblemError:  # pragma: no cover - capacities >= 0 are accepted
                continue
        return p


# ---------------------------------------------------------------------------------------------
# Oracle: exhaustive branch-and-bound, independent of planners/
# ---------------------------------------------------------------------------------------------
@dataclass
class OracleResult:
    """The exact answer for one problem (:func:`oracle`).

    Attributes
    ----------
    arena : int or None
        Without pools: the least arena (bytes) of any valid plan, the capacity ignored (pins and
        everything else kept); ``None`` when no plan exists at any capacity (colliding pins).
    feasible : bool
        A valid plan exists within every capacity (the problem's, or the pools').
    key : tuple of int or None
        With pools: the least ``(traffic cost, total arena)`` of a valid plan within the pools'
        capacities; ``None`` without pools or when none exists.
    least_total : int or None
        With pools: the least total arena (bytes) of any valid plan within the capacities,
        whatever its traffic (what a lower bound must not exceed).
    """

    arena: int | None = None
    feasible: bool = False
    key: tuple[int, int] | None = None
    least_total: int | None = None


def _costs(problem) -> list[int]:
    """The pools' traffic cost per byte and step: their own when some is non-zero, else their
    ranks in the preference order (:class:`planners.model.MemoryPool`'s documented rule)."""
    own = [q.cost for q in problem.pools]
    return own if any(own) else list(range(len(own)))


def _rects(b) -> list[tuple[int, int, int, int]]:
    """``(t0, t1, lo, hi)`` rectangles (half-open steps, bytes above the offset) buffer ``b``
    takes: ``[0, size)`` outside its gaps, its window in a gap with one, nothing else."""
    if b.size == 0:
        return []
    out = []
    t = b.start
    for g in sorted(b.gaps, key=lambda g: g.start):
        if g.start > t:
            out.append((t, g.start, 0, b.size))
        if g.window is not None and g.window[1] > g.window[0]:
            out.append((g.start, g.end, g.window[0], g.window[1]))
        t = g.end
    if b.end > t:
        out.append((t, b.end, 0, b.size))
    return out


@dataclass
class _Unit:
    members: list[int]
    rects: list[tuple[int, int, int, int]]
    align: int
    pin: int | None
    size: int  # largest member size (its top is offset + size)
    pools: list[int]
    steps_bytes: int  # sum over members of lifetime x size


def _units(problem) -> tuple[list[_Unit], list[int]]:
    """The units (module docstring) and, per buffer, the index of its unit."""
    bufs = problem.buffers
    index = {b.id: i for i, b in enumerate(bufs)}
    groups = [[index[m] for m in g] for g in problem.colocations]
    grouped = {i for g in groups for i in g}
    groups += [[i] for i in range(len(bufs)) if i not in grouped]
    default = int(problem.alignment)
    npools = max(1, len(problem.pools))
    names = [q.name for q in problem.pools]
    units, unit_of = [], [0] * len(bufs)
    for g in groups:
        rects, al, pins, cand = [], 1, set(), set(range(npools))
        for i in g:
            b = bufs[i]
            unit_of[i] = len(units)
            rects += _rects(b)
            al = math.lcm(al, b.alignment or default)
            if b.offset is not None:
                pins.add(int(b.offset))
            if b.pools:
                cand &= {names.index(c) for c in b.pools}
        assert len(pins) <= 1, "the model refuses a group pinned at two offsets"
        units.append(_Unit(g, rects, al, pins.pop() if pins else None,
                           max(bufs[i].size for i in g), sorted(cand),
                           sum((bufs[i].end - bufs[i].start) * bufs[i].size for i in g)))
    return units, unit_of


def _forbidden(u: _Unit, v: _Unit) -> set[int]:
    """Offset differences ``d = offset(u) - offset(v)`` at which ``u`` and ``v`` (in one pool)
    overlap: some rectangle of each shares a step and ``lo_v - hi_u < d < hi_v - lo_u``."""
    out: set[int] = set()
    for a0, a1, alo, ahi in u.rects:
        for b0, b1, blo, bhi in v.rects:
            if a0 < b1 and b0 < a1:
                out.update(range(blo - ahi + 1, bhi - alo))
    return out


def oracle(problem) -> OracleResult:
    """The exact answer for ``problem`` (a :class:`planners.model.Problem` with at most about
    six buffers of a few bytes) by exhaustive branch-and-bound (module docstring).

    Returns
    -------
    OracleResult

    Notes
    -----
    Exponential in the number of units; about a millisecond to a second for the problems of
    :func:`generate`. Shares no code with :mod:`planners`.
    """
    units, _ = _units(problem)
    pools = problem.pools
    npools = max(1, len(pools))
    costs = _costs(problem) if pools else [0]
    m = len(units)
    forb = [[_forbidden(units[a], units[b]) if a != b else set() for b in range(m)]
            for a in range(m)]
    pin_top = max([u.pin + u.size for u in units if u.pin is not None], default=0)
    stack = pin_top + sum(u.size + u.align * max([q.alignment for q in pools] or [1])
                          for u in units)
    caps = [q.capacity for q in pools] or [None]
    palign = [q.alignment for q in pools] or [1]
    # pinned first, then larger units (an early good incumbent), ties by index
    order = sorted(range(m), key=lambda a: (units[a].pin is None, -units[a].size, a))

    def options(a):
        """``(pool, offset, traffic)`` choices of unit ``a``, offsets ascending per pool."""
        u = units[a]
        out = []
        for k in u.pools:
            al = math.lcm(u.align, palign[k])
            tr = u.steps_bytes * costs[k]
            cap = caps[k]
            if u.pin is not None:
                if u.pin % al == 0 and (u.size == 0 or cap is None or u.pin + u.size <= cap):
                    out.append((k, [u.pin], tr))
                elif u.pin % al == 0 and cap is not None and u.pin + u.size > cap:
                    out.append((k, [u.pin], tr, "over"))
                continue
            if u.size == 0:
                out.append((k, [0], tr))
                continue
            hi = (cap if cap is not None else stack) - u.size
            out.append((k, list(range(0, hi + 1, al)), tr))
        return out

    opts = [options(a) for a in range(m)]

    def search(objective: str, honour_caps: bool):
        """Least objective value: ``"arena"`` (one arena), ``"lex"`` (traffic, total arena) or
        ``"total"`` (total arena); ``None`` when nothing is valid."""
        best = [None]
        pos = [None] * m
        pool = [None] * m
        tops = [0] * npools

        def value(traffic):
            total = sum(tops)
            if objective == "arena":
                return (tops[0],)
            if objective == "total":
                return (total,)
            return (traffic, total)

        def rec(d, traffic):
            if best[0] is not None and value(traffic) >= best[0]:
                return
            if d == m:
                best[0] = value(traffic)
                return
            a = order[d]
            u = units[a]
            for opt in opts[a]:
                k, offs, tr = opt[0], opt[1], opt[2]
                if len(opt) > 3 and honour_caps:
                    continue
                for o in offs:
                    if any(pool[b] == k and (o - pos[b]) in forb[a][b] for b in order[:d]):
                        continue
                    old = tops[k]
                    if u.size:
                        tops[k] = max(old, o + u.size)
                    pos[a], pool[a] = o, k
                    if best[0] is not None and value(traffic + tr) >= best[0]:
                        tops[k] = old
                        pos[a] = pool[a] = None
                        break  # higher offsets in this pool only raise the top
                    rec(d + 1, traffic + tr)
                    tops[k] = old
                    pos[a] = pool[a] = None

        rec(0, 0)
        return best[0]

    if not pools:
        # the capacity is not part of the search: feasible iff the least arena fits it
        res = search("arena", honour_caps=False)
        arena = None if res is None else res[0]
        cap = problem.capacity
        return OracleResult(arena=arena,
                            feasible=arena is not None and (cap is None or arena <= cap))
    key = search("lex", honour_caps=True)
    total = search("total", honour_caps=True)
    return OracleResult(arena=None, feasible=key is not None, key=key,
                        least_total=None if total is None else total[0])


# ---------------------------------------------------------------------------------------------
# Checking one planner
# ---------------------------------------------------------------------------------------------
def _layout_errors(problem, offsets, pools, capacities: bool) -> list[str]:
    """Why ``offsets`` (bytes, problem order) and ``pools`` (pool index per buffer, or ``None``)
    are not a valid plan of ``problem`` by the oracle's own rules (empty when valid)."""
    bufs = problem.buffers
    n = len(bufs)
    errs = []
    off = [int(o) for o in offsets]
    pl = [0] * n if pools is None else [int(k) for k in pools]
    names = [q.name for q in problem.pools]
    if problem.pools and pools is None:
        return ["no pools in the plan"]
    for i, b in enumerate(bufs):
        al = b.alignment or problem.alignment
        if off[i] < 0 or off[i] % al:
            errs.append(f"{b.id}: offset {off[i]} not a multiple of {al}")
        if b.offset is not None and off[i] != b.offset:
            errs.append(f"{b.id}: offset {off[i]} is not its pin {b.offset}")
        cap = problem.capacity
        if problem.pools:
            q = problem.pools[pl[i]]
            if b.pools and q.name not in b.pools:
                errs.append(f"{b.id}: pool {q.name} not a candidate")
            if off[i] % q.alignment:
                errs.append(f"{b.id}: offset {off[i]} not a multiple of pool {q.name}'s "
                            f"{q.alignment}")
            cap = q.capacity
        if capacities and cap is not None and b.size and off[i] + b.size > cap:
            errs.append(f"{b.id}: top {off[i] + b.size} above capacity {cap}")
    units, unit_of = _units(problem)
    for u in units:
        if len({(off[i], pl[i]) for i in u.members}) > 1:
            errs.append(f"colocated {[bufs[i].id for i in u.members]} not at one offset/pool")
    for a in range(n):
        for c in range(a + 1, n):
            if unit_of[a] == unit_of[c] or pl[a] != pl[c]:
                continue
            for t0, t1, lo, hi in _rects(bufs[a]):
                for s0, s1, lo2, hi2 in _rects(bufs[c]):
                    if t0 < s1 and s0 < t1 and off[a] + lo < off[c] + hi2 and \
                            off[c] + lo2 < off[a] + hi:
                        errs.append(f"{bufs[a].id} and {bufs[c].id} overlap")
    del names
    return errs


def _arenas(problem, offsets, pools) -> list[int]:
    """Highest ``offset + size`` of the non-empty buffers per pool (one entry without pools)."""
    k = max(1, len(problem.pools))
    tops = [0] * k
    for i, b in enumerate(problem.buffers):
        p = 0 if pools is None else int(pools[i])
        if b.size:
            tops[p] = max(tops[p], int(offsets[i]) + b.size)
    return tops


def _traffic(problem, pools) -> int:
    """``sum_i (end_i - start_i) x size_i x cost(pool_i)`` over every buffer (module docstring)."""
    if not problem.pools:
        return 0
    c = _costs(problem)
    return sum((b.end - b.start) * b.size * c[int(pools[i])]
               for i, b in enumerate(problem.buffers))


@dataclass
class Outcome:
    """One (problem, planner) comparison: ``result`` is ``agree``, ``refused`` (the planner
    refuses a feature of the problem), ``unavailable`` (its optional package, e.g.
    ``ethos-u-vela``, is not installed), ``gave_up`` (it raised
    :class:`~planners.errors.SolverError`: no plan and no claim, e.g. TVM USMP's "the space
    available in the provided pools exceeded" of a heuristic that does not fit) or
    ``disagree``; ``problems`` names each disagreement."""

    seed: int
    planner: str
    result: str
    status: str = ""
    arena: int | None = None
    best_bound: int | None = None
    traffic: int | None = None
    truth: str = ""
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _vela_missing() -> bool:
    from planners.vela_hillclimb import vela_available

    return not vela_available()


#: Planners that need an optional package: name -> "is it missing?" (outcome ``unavailable``).
_UNAVAILABLE = {"vela_hillclimb": _vela_missing}


def check_planner(problem, name: str, truth: OracleResult | None = None,
                  time_limit: float = DEFAULT_TIME_LIMIT, seed: int = 0) -> Outcome:
    """Plan ``problem`` with registered planner ``name`` (time limit ``time_limit`` seconds
    where it takes one) and compare its claims with ``truth`` (:func:`oracle`; computed when
    ``None``); the checks of the module docstring. Never raises for a planner's wrong answer:
    an unexpected exception is a disagreement naming it."""
    from planners.bounds import lower_bound
    from planners.errors import CapacityError, FeatureError, SolverError
    from planners.registry import planner_for

    truth = oracle(problem) if truth is None else truth
    pools = bool(problem.pools)
    out = Outcome(seed, name, "agree",
                  truth=str(truth.key if pools else (truth.arena, truth.feasible)))
    bad = out.problems
    planner = planner_for(name, time_limit=time_limit)
    if name in _UNAVAILABLE and _UNAVAILABLE[name]():
        out.result = "unavailable"
        return out
    p = problem
    feasible, best = truth.feasible, truth.arena
    if not pools and p.capacity is None and planner.needs_capacity(p):
        p = p.with_capacity(lower_bound(p))  # as memplan plan does
        feasible = best is not None and best <= p.capacity
    t0 = time.perf_counter()
    try:
        plan = planner.plan(p)
    except FeatureError:
        out.result = "refused"
        return out
    except CapacityError as e:
        out.status = "CapacityError"
        if feasible:
            bad.append(f"CapacityError although a plan fits: {e}")
        out.result = "disagree" if bad else "agree"
        return out
    except SolverError as e:  # the method gave up (e.g. TVM USMP's own "pools exceeded")
        out.status = "SolverError"
        out.result = "gave_up"
        out.problems.append(str(e))
        return out
    except Exception as e:  # noqa: BLE001 - any other error is a finding
        out.status = type(e).__name__
        bad.append(f"{type(e).__name__}: {e}")
        out.result = "disagree"
        return out
    out.seconds = time.perf_counter() - t0
    out.status, out.best_bound = plan.status, plan.best_bound
    least = truth.least_total if pools else best
    for what, v in (("lower_bound", plan.lower_bound), ("best_bound", plan.best_bound)):
        if v is not None and least is not None and v > least:
            bad.append(f"{what} {v} above the optimum {least}")
    if plan.status == "infeasible":
        if feasible:
            bad.append("infeasible although a plan fits")
    elif plan.status in ("optimal", "feasible", "heuristic", "over_capacity"):
        over = plan.status == "over_capacity"
        errs = _layout_errors(p, plan.offsets, plan.pools, capacities=not over)
        bad += [f"invalid plan: {e}" for e in errs]
        tops = _arenas(p, plan.offsets, plan.pools)
        arena = sum(tops)
        out.arena = arena
        if plan.arena_size != arena:
            bad.append(f"arena_size {plan.arena_size} but the plan's arena is {arena}")
        if pools:
            traffic = _traffic(p, plan.pools)
            out.traffic = traffic
            said = plan.info.get("traffic_cost")
            if said is not None and int(said) != traffic:
                bad.append(f"traffic_cost {said} but the plan's traffic is {traffic}")
            if over:
                caps = [q.capacity for q in p.pools]
                if not any(c is not None and t > c for t, c in zip(tops, caps)):
                    bad.append("over_capacity but every pool fits")
            elif truth.key is None:
                bad.append("a plan within the capacities where the oracle has none")
            else:
                if (traffic, arena) < truth.key:
                    bad.append(f"(traffic, arena) {(traffic, arena)} below the optimum "
                               f"{truth.key}")
                if plan.status == "optimal" and (traffic, arena) != truth.key:
                    bad.append(f"optimal at (traffic, arena) {(traffic, arena)}; the optimum "
                               f"is {truth.key}")
        else:
            if best is None:
                bad.append("a plan where the oracle has none (pins collide)")
            else:
                if arena < best:
                    bad.append(f"arena {arena} below the optimum {best}")
                if plan.status == "optimal" and arena != best:
                    bad.append(f"optimal at arena {arena}; the optimum is {best}")
                if over and (p.capacity is None or arena <= p.capacity):
                    bad.append(f"over_capacity at arena {arena}, capacity {p.capacity}")
                if not over and p.capacity is not None and arena > p.capacity:
                    bad.append(f"arena {arena} above the capacity {p.capacity}, status "
                               f"{plan.status}")
    elif plan.status not in ("timeout", "skipped"):
        bad.append(f"unknown status {plan.status}")
    out.result = "disagree" if bad else "agree"
    return out


def describe(problem) -> str:
    """One line listing ``problem``'s buffers, pools, groups and capacity (for a failure)."""
    parts = []
    for b in problem.buffers:
        s = f"{b.id}[{b.start},{b.end})x{b.size}"
        if (b.alignment or 1) > 1:
            s += f"a{b.alignment}"
        if b.offset is not None:
            s += f"@{b.offset}"
        if b.gaps:
            s += "g" + ",".join(f"{g.start}-{g.end}" + (f":{g.window[0]}-{g.window[1]}"
                                                       if g.window else "") for g in b.gaps)
        if b.pools:
            s += "{" + ",".join(b.pools) + "}"
        parts.append(s)
    if problem.pools:
        parts.append("pools=" + ",".join(f"{q.name}:{q.capacity}/a{q.alignment}/c{q.cost}"
                                          for q in problem.pools))
    if problem.colocations:
        parts.append("coloc=" + ";".join("+".join(g) for g in problem.colocations))
    if problem.capacity is not None:
        parts.append(f"cap={problem.capacity}")
    return " ".join(parts)


def run(problems: int, seed: int = 0, planners=None, time_limit: float = DEFAULT_TIME_LIMIT,
        out: str | Path | None = None, log=None) -> list[Outcome]:
    """Check ``problems`` generated problems (seeds ``seed .. seed + problems - 1``) with every
    planner in ``planners`` (default: all of :data:`planners.registry.PLANNERS`); write one CSV
    row per comparison to ``out`` when given; print each disagreement to ``log``."""
    from planners.registry import PLANNERS

    names = list(planners or PLANNERS)
    outcomes = []
    for s in range(seed, seed + problems):
        p = generate(s)
        truth = oracle(p)
        for name in names:
            o = check_planner(p, name, truth, time_limit, s)
            outcomes.append(o)
            if o.result == "disagree" and log is not None:
                print(f"seed {s} {name}: {'; '.join(o.problems)} | {describe(p)}", file=log)
    if out is not None:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["seed", "planner", "result", "status", "arena", "best_bound", "traffic",
                        "truth", "problems"])
            for o in outcomes:
                w.writerow([o.seed, o.planner, o.result, o.status, o.arena, o.best_bound,
                            o.traffic, o.truth, " | ".join(o.problems)])
    return outcomes


def main(argv=None) -> int:
    """Command line (module docstring). Exit status 1 on any disagreement."""
    ap = argparse.ArgumentParser(prog="python -m experiments.bench.feature_differential",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--planners", default=None, help="comma-separated registry names")
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT)
    ap.add_argument("--out", default="results/feature_differential.csv")
    a = ap.parse_args(argv)
    names = a.planners.split(",") if a.planners else None
    t0 = time.perf_counter()
    outcomes = run(a.problems, a.seed, names, a.time_limit, a.out, log=sys.stdout)
    table: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        table[o.planner][o.result] += 1
    print(f"{'planner':26s} {'agree':>6s} {'refused':>8s} {'unavailable':>12s} "
          f"{'gave_up':>8s} {'disagree':>9s}")
    for name, c in table.items():
        print(f"{name:26s} {c['agree']:6d} {c['refused']:8d} {c['unavailable']:12d} "
              f"{c['gave_up']:8d} {c['disagree']:9d}")
    bad_problems = len({o.seed for o in outcomes if o.result == "disagree"})
    nbad = sum(o.result == "disagree" for o in outcomes)
    print(f"{a.problems} problems, {len(outcomes)} comparisons, {nbad} disagreements on "
          f"{bad_problems} problems ({time.perf_counter() - t0:.0f} s)")
    return 1 if nbad else 0


if __name__ == "__main__":
    raise SystemExit(main())
