"""Memory tiers: two-level SRAM/DRAM assignment, and several models on one device.

Seed 000 section 6 and seed 002 section 5.1.4 (分层分配) split memory into regions by access
pattern: resident weights, the activation arena, and tensors kept across layers or invocations;
on a device with a small fast SRAM and a large DRAM, **which buffers live in SRAM** decides the
DRAM traffic. As XLA's memory-space assignment does, :func:`assign_tiers` picks a set of buffers
whose offset plan fits the SRAM capacity and minimises the DRAM traffic
``sum over DRAM buffers of size x accesses`` (bytes); the rest is planned in a DRAM arena.

* ``method="greedy"``: buffers by decreasing traffic density ``size x accesses / (size x
  lifetime)`` = ``accesses / lifetime`` (ties: larger traffic first), each placed at the lowest
  SRAM offset free over its lifetime (first fit), skipped when none fits. ``O(n^2)`` worst case
  (``O(n k)`` with ``k`` the buffers placed and overlapping in time).
* ``method="cpsat"``: the exact assignment as a case of **pools** (:mod:`planners.multipool`):
  pools ``sram`` (the capacity, cost 0) and ``dram`` (unbounded, cost 1), solved by the pool model
  of :mod:`planners.feature_cpsat` with each buffer's accesses, which minimises the DRAM traffic
  (then the total arena) with OR-Tools CP-SAT (for up to a few hundred buffers).

:func:`assign_tier_slices` works on **time slices** instead of whole buffers (XLA's memory-space
assignment with prefetches and evictions): each buffer's lifetime is cut at its uses (the steps
of its producer and consumers, given per buffer; :func:`scheduling.uses.buffer_uses` derives them
from a graph and a schedule) into 1-step *use slices* ``[u, u + 1)`` -- each use is one access of
``size`` bytes, served by the tier of its slice -- and the *gap slices* between two uses (no
access). Every slice sits in SRAM or DRAM; consecutive SRAM slices of one buffer keep one
offset; when consecutive slices change tier, the buffer is moved (a DRAM -> SRAM prefetch or an
SRAM -> DRAM eviction of ``size`` bytes, counted as DRAM traffic). Whole-buffer assignment is the
special case where all slices of a buffer share a tier, so the exact slice optimum is never
worse than the exact whole-buffer optimum.

:func:`multi_model_arenas` compares one arena per model with one arena planned jointly (seed
001 section 4: isolated regions per model waste about 5-15 %).

Sizes and offsets are bytes; lifetimes half-open ``[start, end)`` steps.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import catalogue
from .errors import ProblemError
from .feature_cpsat import solve_features
from .model import Buffer, MemoryPool, Problem
from .placement import FeaturePlacement
from .validate import check_plan

__all__ = [
    "TierAssignment",
    "assign_tiers",
    "multi_model_arenas",
    "TIER_METHODS",
    "SliceAssignment",
    "tier_slices",
    "assign_tier_slices",
    "SLICE_METHODS",
]


@dataclass
class TierAssignment:
    """Result of :func:`assign_tiers` (bytes).

    Attributes
    ----------
    in_sram : bool array ``(n,)``
        Problem order.
    sram_offsets : int64 array ``(n,)``
        SRAM offset of SRAM buffers, -1 for DRAM buffers.
    sram_arena, dram_arena : int
        Highest SRAM address used; arena of the DRAM buffers (planned with ``dram_planner``).
    dram_traffic, total_traffic : int
        ``sum size x accesses`` over DRAM buffers, over all buffers.
    method : str
    seconds : float
    status : str
        ``"heuristic"``, ``"optimal"`` or ``"feasible"``.
    """

    in_sram: np.ndarray
    sram_offsets: np.ndarray
    sram_arena: int
    dram_arena: int
    dram_traffic: int
    total_traffic: int
    method: str
    seconds: float
    status: str

    @property
    def traffic_saved(self) -> float:
        """Share of the traffic served by SRAM: ``1 - dram_traffic / total_traffic``."""
        return 1.0 - self.dram_traffic / self.total_traffic if self.total_traffic else 0.0

    def as_dict(self) -> dict:
        """A flat record."""
        return {"method": self.method, "status": self.status, "sram_buffers": int(self.in_sram.sum()),
                "sram_arena": self.sram_arena, "dram_arena": self.dram_arena,
                "dram_traffic": self.dram_traffic, "total_traffic": self.total_traffic,
                "traffic_saved": self.traffic_saved, "seconds": self.seconds}


def _greedy(problem: Problem, cap: int, traffic: np.ndarray):
    n = problem.n
    life = (problem.ends - problem.starts).astype(float)
    dens = traffic / np.maximum(1.0, problem.sizes * life)
    order = np.lexsort((np.arange(n), -traffic, -dens))
    off = np.full(n, -1, np.int64)
    placed: list[int] = []
    sz = problem.aligned_sizes
    for i in order.tolist():
        if problem.sizes[i] == 0 or sz[i] > cap:
            continue
        s, e, a = problem.starts[i], problem.ends[i], int(problem.alignments[i])
        busy = sorted((int(off[j]), int(off[j] + sz[j])) for j in placed
                      if problem.starts[j] < e and s < problem.ends[j])
        cand = 0
        for lo, hi in busy:
            if cand + sz[i] <= lo:
                break
            cand = max(cand, -(-hi // a) * a)
        if cand + sz[i] <= cap:
            off[i] = cand
            placed.append(i)
    return off, "heuristic"


def _cpsat(problem: Problem, cap: int, traffic: np.ndarray, time_limit: float, seed: int):
    """The exact whole-buffer assignment as a case of pools: ``sram`` (``cap`` bytes, cost 0)
    and ``dram`` (unbounded, cost 1) solved by the pool model of
    :mod:`planners.feature_cpsat` with ``accesses = traffic / size``, so it minimises the DRAM
    traffic (then the total arena). The greedy answer is the hint and the fallback."""
    g, _ = _greedy(problem, cap, traffic)
    pools = (MemoryPool("sram", cap), MemoryPool("dram", None, cost=1))
    # the intervals only, as the greedy sees them (no alias groups, pins, hints or gaps)
    pp = Problem([Buffer(b.id, b.start, b.end, b.size, b.alignment, b.kind)
                  for b in problem.buffers], alignment=problem.alignment,
                 name=f"{problem.name}:tiers", pools=pools)
    acc = np.where(problem.sizes > 0, traffic // np.maximum(problem.sizes, 1), 0)
    warm = FeaturePlacement(np.where(g >= 0, g, 0), np.where(g >= 0, 0, 1), [])
    res = solve_features(pp, None, "minimize", time_limit, workers=1, seed=seed,
                         accesses=acc, hint=warm)
    if res.offsets is None:
        return g, "heuristic"
    off = np.where(res.pools == 0, res.offsets, -1).astype(np.int64)
    off[problem.sizes == 0] = -1  # a zero-size buffer moves no bytes: left out, as greedy does
    return off, res.status


def _placement_model(problem: Problem, cap: int):
    """CP-SAT model of an optional SRAM placement: item ``i`` is in SRAM iff ``pres[i]``, at an
    aligned offset ``xs[i]`` in ``[0, cap - aligned size]``; present items never overlap in time
    (half-open ``[start, end)``) x address (``NoOverlap2D``). Items larger than ``cap`` or of size 0
    stay out. Returns ``(model, pres, xs)``; the caller adds the objective."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    pres, xs, xiv, tiv = [], [], [], []
    sz = problem.aligned_sizes
    for i in range(problem.n):
        p = m.NewBoolVar(f"p{i}")
        a = int(problem.alignments[i])
        hi = max(0, cap - int(sz[i]))
        k = m.NewIntVar(0, hi // a, f"k{i}")
        x = m.NewIntVar(0, hi, f"x{i}")
        m.Add(x == a * k)
        if sz[i] > cap or problem.sizes[i] == 0:
            m.Add(p == 0)
        xiv.append(m.NewOptionalFixedSizeIntervalVar(x, int(sz[i]), p, f"xi{i}"))
        tiv.append(m.NewOptionalFixedSizeIntervalVar(
            int(problem.starts[i]), int(problem.ends[i] - problem.starts[i]), p, f"ti{i}"))
        pres.append(p)
        xs.append(x)
    m.AddNoOverlap2D(tiv, xiv)
    return m, pres, xs


def _solve_placement(m, pres, xs, hint, time_limit: float, seed: int):
    """Solve a CP-SAT placement model whose item ``i`` is in SRAM iff ``pres[i]`` at offset
    ``xs[i]``; ``hint`` (offsets, -1 = not in SRAM) is the greedy answer, used as the solution hint
    and returned (status ``"heuristic"``) when the solver finds nothing in ``time_limit`` seconds.
    Returns ``(offsets, status)``, offsets -1 for items left out."""
    from ortools.sat.python import cp_model

    for i, h in enumerate(hint.tolist()):
        m.AddHint(pres[i], h >= 0)
        if h >= 0:
            m.AddHint(xs[i], int(h))
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = float(time_limit)
    s.parameters.num_search_workers = 1
    s.parameters.random_seed = int(seed)
    st = s.Solve(m)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return hint, "heuristic"
    off = np.array([s.Value(x) if s.BooleanValue(q) else -1 for q, x in zip(pres, xs)], np.int64)
    return off, "optimal" if st == cp_model.OPTIMAL else "feasible"


#: Name -> SRAM selection method ``f(problem, capacity, traffic, ...) -> (offsets, status)``.
TIER_METHODS = {"greedy": _greedy, "cpsat": _cpsat}


def assign_tiers(problem: Problem, sram_capacity: int, accesses: Sequence[int] | None = None,
                 method: str = "greedy", dram_planner: str = "greedy_by_size",
                 time_limit: float = 10.0, seed: int = 0) -> TierAssignment:
    """Choose the buffers that live in SRAM (module docstring) and plan both regions.

    Parameters
    ----------
    problem : Problem
        Activation buffers (resident buffers may be included; they compete like the others).
    sram_capacity : int
        SRAM bytes for buffers.
    accesses : sequence of int or None, shape ``(n,)``
        Times each buffer is written or read (default 2: one write, one read). For a graph:
        ``1 + number of consumers``.
    method : {"greedy", "cpsat"}
    dram_planner : str
        Registry name of the planner for the DRAM buffers.

    Returns
    -------
    TierAssignment
        The SRAM layout is checked with :func:`planners.validate.check_plan`.

    Raises
    ------
    ProblemError
        Negative capacity, accesses of the wrong length or negative, an unknown method.
    """
    run_plan = catalogue.plan

    t0 = time.perf_counter()
    if sram_capacity < 0:
        raise ProblemError(f"problem {problem.name!r}: SRAM capacity must be >= 0 bytes, "
                           f"got {sram_capacity}")
    if method not in TIER_METHODS:
        raise ProblemError(f"unknown tier method {method!r}; known: {sorted(TIER_METHODS)}")
    acc = np.full(problem.n, 2, np.int64) if accesses is None else np.asarray(accesses, np.int64)
    if acc.shape != (problem.n,) or (acc < 0).any():
        raise ProblemError(f"problem {problem.name!r}: accesses must be {problem.n} integers "
                           ">= 0 (one per buffer)")
    traffic = problem.sizes * acc
    if method == "greedy":
        off, status = _greedy(problem, int(sram_capacity), traffic)
    else:
        off, status = _cpsat(problem, int(sram_capacity), traffic, time_limit, seed)
    ins = off >= 0
    sram_bufs = [problem.buffers[i] for i in np.flatnonzero(ins)]
    sp = Problem(sram_bufs, capacity=int(sram_capacity), alignment=problem.alignment,
                 name=f"{problem.name}:sram")
    check_plan(sp, off[ins])
    sram_arena = int(max((off[i] + problem.sizes[i] for i in np.flatnonzero(ins)), default=0))
    dram = [problem.buffers[i] for i in np.flatnonzero(~ins)]
    dram_arena = 0
    if dram:
        dp = Problem(dram, alignment=problem.alignment, name=f"{problem.name}:dram")
        dram_arena = run_plan(dp, dram_planner).arena_size
    return TierAssignment(ins, np.where(ins, off, -1), sram_arena, dram_arena,
                          int(traffic[~ins].sum()), int(traffic.sum()), method,
                          time.perf_counter() - t0, status)


def multi_model_arenas(problems: Sequence[Problem], planner: str = "greedy_by_size",
                       mode: str = "interleaved") -> dict:
    """One arena per model (isolated regions, seed 001 section 4) vs one arena planned jointly.

    Parameters
    ----------
    problems : sequence of Problem
        One activation problem per model.
    planner : str
        Registry name used for every plan.
    mode : {"interleaved", "sequential"}
        ``"interleaved"``: the models run concurrently, step ``k`` of model ``i`` (of ``m``) is
        global step ``k m + i`` (round robin), so their buffers overlap in time; the joint
        arena plans all of them at once. ``"sequential"``: one model after the other (model
        ``i``'s steps shifted after model ``i - 1``'s), the joint arena is then their maximum.

    Returns
    -------
    dict
        ``separate`` (sum of per-model arenas), ``joint`` (arena of the joint plan),
        ``joint_lower_bound`` (max live bytes of the joint problem), ``waste`` (``(separate -
        joint) / separate``, the share isolation wastes) and ``per_model`` arenas.

    Raises
    ------
    ProblemError
        Unknown mode or no problems.
    """
    from .bounds import lower_bound
    run_plan = catalogue.plan

    if mode not in ("interleaved", "sequential"):
        raise ProblemError(f"mode must be 'interleaved' or 'sequential', got {mode!r}")
    if not problems:
        raise ProblemError("multi_model_arenas needs at least one problem")
    per = [run_plan(p, planner).arena_size for p in problems]
    m = len(problems)
    bufs = []
    shift = 0
    for i, p in enumerate(problems):
        for b in p.buffers:
            if mode == "interleaved":
                s, e = b.start * m + i, (b.end - 1) * m + i + 1
            else:
                s, e = b.start + shift, b.end + shift
            bufs.append(Buffer(f"m{i}:{b.id}", s, e, b.size, b.alignment, b.kind))
        shift += p.horizon
    joint_p = Problem(bufs, alignment=max(p.alignment for p in problems), name="joint")
    joint = run_plan(joint_p, planner).arena_size
    sep = int(sum(per))
    return {"separate": sep, "joint": int(joint), "joint_lower_bound": lower_bound(joint_p),
            "waste": (sep - joint) / sep if sep else 0.0, "per_model": per, "mode": mode}


# -- time slices (prefetch / eviction) -----------------------------------------------------------


@dataclass
class SliceAssignment:
    """Result of :func:`assign_tier_slices` (bytes, schedule steps).

    Attributes
    ----------
    slices : Problem
        One buffer per slice, ids ``"<buffer id>@<k>"`` (``k``: slice number within the buffer),
        half-open lifetimes ``[start, end)``, the buffer's size, alignment and kind; ``S`` slices.
    owner : int64 array ``(S,)``
        Index in the original problem of each slice's buffer.
    accesses : int64 array ``(S,)``
        Accesses served in each slice (uses at its step; 0 for gap slices).
    in_sram : bool array ``(S,)``
    sram_offsets : int64 array ``(S,)``
        SRAM offset of SRAM slices, -1 for DRAM slices (consecutive SRAM slices of one buffer share
        an offset).
    sram_arena, dram_arena : int
        Highest SRAM address used; arena of the DRAM runs (maximal runs of consecutive DRAM slices
        of a buffer, each one buffer, planned with ``dram_planner``).
    dram_access_traffic : int
        ``sum size x accesses`` over DRAM slices.
    bytes_prefetched, bytes_evicted : int
        Bytes moved DRAM -> SRAM and SRAM -> DRAM at tier changes.
    total_traffic : int
        ``sum size x accesses`` over all slices (every access served by DRAM).
    method, status : str
        ``"greedy"``/``"cpsat"``; ``"heuristic"``, ``"optimal"`` or ``"feasible"``.
    seconds : float
    """

    slices: Problem
    owner: np.ndarray
    accesses: np.ndarray
    in_sram: np.ndarray
    sram_offsets: np.ndarray
    sram_arena: int
    dram_arena: int
    dram_access_traffic: int
    bytes_prefetched: int
    bytes_evicted: int
    total_traffic: int
    method: str
    status: str
    seconds: float

    @property
    def bytes_moved(self) -> int:
        """``bytes_prefetched + bytes_evicted``."""
        return self.bytes_prefetched + self.bytes_evicted

    @property
    def dram_traffic(self) -> int:
        """DRAM traffic in bytes: accesses served by DRAM plus the bytes moved between tiers."""
        return self.dram_access_traffic + self.bytes_moved

    @property
    def traffic_saved(self) -> float:
        """``1 - dram_traffic / total_traffic`` (can be negative only if moves cost more than
        they save, which neither method chooses)."""
        return 1.0 - self.dram_traffic / self.total_traffic if self.total_traffic else 0.0

    def sram_problem(self) -> tuple[Problem, np.ndarray]:
        """The SRAM slices as a :class:`Problem` (capacity = the SRAM arena) and their offsets,
        for :func:`planners.validate.check_plan`."""
        idx = np.flatnonzero(self.in_sram)
        p = Problem([self.slices.buffers[i] for i in idx], alignment=self.slices.alignment,
                    name=f"{self.slices.name}:sram")
        return p, self.sram_offsets[idx]

    def as_dict(self) -> dict:
        """A flat record."""
        return {"method": self.method, "status": self.status, "slices": int(self.owner.size),
                "sram_slices": int(self.in_sram.sum()), "sram_arena": self.sram_arena,
                "dram_arena": self.dram_arena, "dram_access_traffic": self.dram_access_traffic,
                "bytes_prefetched": self.bytes_prefetched, "bytes_evicted": self.bytes_evicted,
                "dram_traffic": self.dram_traffic, "total_traffic": self.total_traffic,
                "traffic_saved": self.traffic_saved, "seconds": self.seconds}


def tier_slices(problem: Problem, uses: Sequence[Sequence[int]] | None = None
                ) -> tuple[Problem, np.ndarray, np.ndarray]:
    """Cut every buffer's lifetime at its uses (module docstring).

    Parameters
    ----------
    problem : Problem
        ``n`` buffers, half-open lifetimes ``[start, end)`` (steps).
    uses : sequence of ``n`` sequences of int, or None
        Use steps of each buffer (producer and consumer steps; a step listed twice is two
        accesses). Every use must lie in the buffer's lifetime ``start <= u < end``. Default:
        ``[start, end - 1]`` (one write, one read: 2 accesses, as :func:`assign_tiers`).

    Returns
    -------
    slices : Problem
        ``S`` slices in buffer order, then time order: ids ``"<id>@<k>"``; use slices
        ``[u, u + 1)``, gap slices between them (and before the first / after the last use).
    owner : int64 array ``(S,)``
        Buffer index of each slice.
    accesses : int64 array ``(S,)``
        Accesses per slice (the multiplicity of the use step, 0 for gap slices).

    Raises
    ------
    ProblemError
        ``uses`` of the wrong length, a non-integer use, or a use outside the buffer's lifetime
        (naming the buffer and the step).

    Notes
    -----
    ``O(n + U log U)`` for ``U`` uses in total; at most ``2 x distinct uses + 1`` slices per buffer.
    """
    n = problem.n
    if uses is not None and len(uses) != n:
        raise ProblemError(f"problem {problem.name!r}: uses must give one list of use steps per "
                           f"buffer ({n}), got {len(uses)}")
    bufs: list[Buffer] = []
    owner: list[int] = []
    acc: list[int] = []
    for i, b in enumerate(problem.buffers):
        if uses is None:
            u = np.array([b.start, b.end - 1], np.int64)
        else:
            try:
                u = np.asarray(list(uses[i]), dtype=np.int64).reshape(-1)
            except (TypeError, ValueError):
                raise ProblemError(f"buffer {b.id!r}: use steps must be integers, "
                                   f"got {uses[i]!r}") from None
        bad = u[(u < b.start) | (u >= b.end)]
        if bad.size:
            raise ProblemError(
                f"buffer {b.id!r}: use step {int(bad[0])} lies outside its lifetime "
                f"[start, end) = [{b.start}, {b.end}); every use must be a step where it is live"
            )
        steps, counts = np.unique(u, return_counts=True)
        cur, k = b.start, 0
        for st, c in zip(steps.tolist(), counts.tolist()):
            if st > cur:
                bufs.append(Buffer(f"{b.id}@{k}", cur, st, b.size, b.alignment, b.kind))
                owner.append(i)
                acc.append(0)
                k += 1
            bufs.append(Buffer(f"{b.id}@{k}", st, st + 1, b.size, b.alignment, b.kind))
            owner.append(i)
            acc.append(c)
            k += 1
            cur = st + 1
        if cur < b.end:
            bufs.append(Buffer(f"{b.id}@{k}", cur, b.end, b.size, b.alignment, b.kind))
            owner.append(i)
            acc.append(0)
    sp = Problem(bufs, alignment=problem.alignment, name=f"{problem.name}:slices")
    return sp, np.array(owner, np.int64), np.array(acc, np.int64)


def _first_fit(ps, pe, po, ptop, count, s, e, size, align, cap) -> int:
    """Lowest offset (multiple of ``align``) where ``size`` bytes fit in ``[0, cap)`` over steps
    ``[s, e)`` among the ``count`` placed rectangles; -1 if none. ``O(count)`` numpy plus
    ``O(k log k)`` for the ``k`` placed rectangles live in ``[s, e)``."""
    hit = np.flatnonzero((ps[:count] < e) & (s < pe[:count]))
    cand = 0
    if hit.size:
        order = hit[np.argsort(po[hit], kind="stable")]
        for lo, hi in zip(po[order].tolist(), ptop[order].tolist()):
            if cand + size <= lo:
                break
            if hi > cand:
                cand = -(-hi // align) * align
    return cand if cand + size <= cap else -1


def _slice_greedy(sp: Problem, owner, acc, cap: int):
    """Greedy over SRAM *runs* (consecutive slices of one buffer from a use slice to a use slice).

    The benefit of a run is ``size x accesses in it`` minus ``size`` for a prefetch (it does not
    start at the buffer's first slice) and ``size`` for an eviction (it does not end at the last
    slice). Runs with a positive benefit are placed first fit in one of two orders, and the
    assignment with less DRAM traffic is kept (ties: the first):

    1. whole buffers first, in :func:`assign_tiers`'s greedy order (``accesses / lifetime``,
       then traffic), then partial runs by benefit density -- so the result is never worse than
       the whole-buffer greedy;
    2. all runs by decreasing benefit density (``benefit / (size x steps)``; ties: larger
       benefit, then slice order).

    A run is skipped when it overlaps, or touches without a DRAM slice in between, a run already
    placed for the same buffer, so every run pays its own moves. ``O(R log R + R x P)`` for ``R``
    candidate runs (``sum over buffers of uses^2 / 2``) and ``P`` placed runs, with numpy over
    the placed runs."""
    S = sp.n
    if S == 0:
        return np.full(0, -1, np.int64), "heuristic"
    sizes, asz = sp.sizes, sp.aligned_sizes
    starts, ends = sp.starts, sp.ends
    first = np.r_[True, owner[1:] != owner[:-1]]
    last = np.r_[owner[1:] != owner[:-1], True]
    cacc = np.r_[0, np.cumsum(acc)]
    cand = []  # (is_whole, density, benefit, k, l)
    grp_start = np.flatnonzero(first)
    grp_end = np.r_[grp_start[1:], S]
    for a, b in zip(grp_start.tolist(), grp_end.tolist()):
        if sizes[a] == 0 or asz[a] > cap:
            continue
        us = [j for j in range(a, b) if acc[j] > 0]
        sz = int(sizes[a])
        for x, k in enumerate(us):
            for q in us[x:]:
                ben = sz * int(cacc[q + 1] - cacc[k]) - sz * (not first[k]) - sz * (not last[q])
                if ben > 0:
                    span = int(ends[q] - starts[k])
                    whole = k == a and q == b - 1  # a whole buffer: all of its slices
                    cand.append((whole, ben / max(1, sz * span), ben, k, q))
        if us and not (us[0] == a and us[-1] == b - 1):
            ben = sz * int(cacc[b] - cacc[a])  # whole buffer with gap slices at its ends
            cand.append((True, ben / max(1, sz * int(ends[b - 1] - starts[a])), ben, a, b - 1))
    orders = [sorted(cand, key=lambda c: (not c[0], -c[1], -c[2], c[3], c[4])),
              sorted(cand, key=lambda c: (-c[1], -c[2], c[3], c[4]))]
    best = None
    for ordered in orders:
        off = _place_runs(sp, owner, ordered, cap)
        ins = off >= 0
        same = owner[1:] == owner[:-1]
        moved = int(sizes[1:][same & (ins[:-1] != ins[1:])].sum())
        cost = int((sizes * acc)[~ins].sum()) + moved
        if best is None or cost < best[0]:
            best = (cost, off)
    return best[1], "heuristic"


def _place_runs(sp: Problem, owner, ordered, cap: int) -> np.ndarray:
    """First-fit placement of the candidate runs ``(whole, density, benefit, k, l)`` in the given
    order (see :func:`_slice_greedy`); returns the SRAM offset per slice, -1 for DRAM."""
    off = np.full(sp.n, -1, np.int64)
    asz, starts, ends = sp.aligned_sizes, sp.starts, sp.ends
    ps = np.empty(len(ordered), np.int64)
    pe, po, ptop = np.empty_like(ps), np.empty_like(ps), np.empty_like(ps)
    count = 0
    taken: dict[int, list[tuple[int, int]]] = {}
    for *_, k, q in ordered:
        runs = taken.setdefault(int(owner[k]), [])
        if any(k <= q2 + 1 and k2 <= q + 1 for k2, q2 in runs):
            continue
        s, e = int(starts[k]), int(ends[q])
        o = _first_fit(ps, pe, po, ptop, count, s, e, int(asz[k]), int(sp.alignments[k]), cap)
        if o < 0:
            continue
        ps[count], pe[count], po[count], ptop[count] = s, e, o, o + int(asz[k])
        count += 1
        runs.append((k, q))
        off[k:q + 1] = o
    return off


def _slice_cpsat(sp: Problem, owner, acc, cap: int, time_limit: float, seed: int):
    """Exact 0-1 model of the slice assignment (module docstring) with OR-Tools CP-SAT: an
    optional (time x address) rectangle per slice in one ``NoOverlap2D``; equal offsets for
    consecutive SRAM slices of a buffer; a move boolean ``m >= |p_j - p_{j+1}|`` per consecutive
    pair; maximise ``sum size x accesses x p - sum size x m``. Hinted with the greedy."""

    S = sp.n
    g, _ = _slice_greedy(sp, owner, acc, cap)
    if S == 0:
        return g, "optimal"
    m, pres, xs = _placement_model(sp, cap)
    gain = [int(sp.sizes[j]) * int(acc[j]) * pres[j] for j in range(S) if acc[j] and sp.sizes[j]]
    cost = []
    for j in range(S - 1):
        if owner[j] != owner[j + 1] or sp.sizes[j] == 0:
            continue
        m.Add(xs[j] == xs[j + 1]).OnlyEnforceIf([pres[j], pres[j + 1]])
        mv = m.NewBoolVar(f"m{j}")
        m.Add(mv >= pres[j] - pres[j + 1])
        m.Add(mv >= pres[j + 1] - pres[j])
        cost.append(int(sp.sizes[j]) * mv)
    m.Maximize(sum(gain) - sum(cost))
    return _solve_placement(m, pres, xs, g, time_limit, seed)


#: Name -> slice selection method ``f(slices, owner, accesses, capacity, ...) -> (offsets, status)``.
SLICE_METHODS = {"greedy": _slice_greedy, "cpsat": _slice_cpsat}


def assign_tier_slices(problem: Problem, sram_capacity: int,
                       uses: Sequence[Sequence[int]] | None = None, method: str = "greedy",
                       dram_planner: str = "greedy_by_size", time_limit: float = 10.0,
                       seed: int = 0) -> SliceAssignment:
    """Place time slices of buffers in SRAM or DRAM, minimising DRAM traffic (module docstring).

    Parameters
    ----------
    problem : Problem
        ``n`` buffers, half-open lifetimes ``[start, end)`` in steps, sizes in bytes.
    sram_capacity : int
        SRAM bytes for buffers.
    uses : sequence of ``n`` sequences of int, or None
        Use steps per buffer (see :func:`tier_slices`; for a graph:
        :func:`scheduling.uses.buffer_uses`). Default: ``[start, end - 1]``.
    method : {"greedy", "cpsat"}
        Greedy over SRAM runs by benefit density with first-fit offsets, or the exact CP-SAT
        model (``time_limit`` seconds, one worker, ``seed``: deterministic).
    dram_planner : str
        Registry name of the planner of the DRAM runs.

    Returns
    -------
    SliceAssignment
        Traffic recomputed from the assignment (not taken from the solver). The SRAM slices are
        checked with :func:`planners.validate.check_plan` (no overlap in address x time, below
        the capacity), and consecutive SRAM slices of a buffer are checked to share an offset.

    Raises
    ------
    ProblemError
        Negative capacity, unknown method, bad ``uses`` (:func:`tier_slices`).
    InvalidPlanError
        The SRAM layout breaks a rule (a bug, never silenced).

    References
    ----------
    XLA memory-space assignment (``xla/service/memory_space_assignment``): alternate-memory
    allocations per use with prefetches and evictions. Seed 000 section 6, seed 002 section 5.1.4.
    """
    from .errors import InvalidPlanError
    run_plan = catalogue.plan

    t0 = time.perf_counter()
    if sram_capacity < 0:
        raise ProblemError(f"problem {problem.name!r}: SRAM capacity must be >= 0 bytes, "
                           f"got {sram_capacity}")
    if method not in SLICE_METHODS:
        raise ProblemError(f"unknown slice tier method {method!r}; known: {sorted(SLICE_METHODS)}")
    sp, owner, acc = tier_slices(problem, uses)
    cap = int(sram_capacity)
    if method == "greedy":
        off, status = _slice_greedy(sp, owner, acc, cap)
    else:
        off, status = _slice_cpsat(sp, owner, acc, cap, time_limit, seed)
    ins = off >= 0
    S = sp.n
    sizes = sp.sizes
    same = owner[1:] == owner[:-1] if S else np.zeros(0, bool)
    both = same & ins[:-1] & ins[1:]
    bad = np.flatnonzero(both & (off[:-1] != off[1:]))
    if bad.size:
        j = int(bad[0])
        raise InvalidPlanError(f"slices {sp.ids[j]!r} and {sp.ids[j + 1]!r}: consecutive SRAM "
                               f"slices of one buffer must share an offset ({off[j]} vs "
                               f"{off[j + 1]})")
    sram_p = Problem([sp.buffers[j] for j in np.flatnonzero(ins)], capacity=cap,
                     alignment=sp.alignment, name=f"{problem.name}:sram")
    check_plan(sram_p, off[ins], capacity=cap)
    sram_arena = int(max((off[j] + sizes[j] for j in np.flatnonzero(ins)), default=0))
    pre = int(sizes[1:][same & ~ins[:-1] & ins[1:]].sum()) if S else 0
    evi = int(sizes[1:][same & ins[:-1] & ~ins[1:]].sum()) if S else 0
    # DRAM runs: maximal runs of consecutive DRAM slices of one buffer, one buffer each.
    dram_bufs: list[Buffer] = []
    j = 0
    while j < S:
        if ins[j]:
            j += 1
            continue
        k = j
        while k + 1 < S and owner[k + 1] == owner[j] and not ins[k + 1]:
            k += 1
        b = sp.buffers[j]
        dram_bufs.append(Buffer(f"{b.id}..{k - j}", b.start, sp.buffers[k].end, b.size,
                                b.alignment, b.kind))
        j = k + 1
    dram_arena = 0
    if dram_bufs:
        dp = Problem(dram_bufs, alignment=problem.alignment, name=f"{problem.name}:dram")
        dram_arena = run_plan(dp, dram_planner).arena_size
    traffic = sizes * acc
    return SliceAssignment(sp, owner, acc, ins, np.where(ins, off, -1), sram_arena, dram_arena,
                           int(traffic[~ins].sum()), pre, evi, int(traffic.sum()), method, status,
                           time.perf_counter() - t0)
