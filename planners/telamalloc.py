"""``telamalloc``: TelaMalloc-style skyline placement with backtracking under a capacity target.

TelaMalloc (Maas et al., ASPLOS 2023) places the buffers of an accelerator program on a 2D plane
(time x address) with a heuristic that is steered by **contention** and **backtracks** when a
placement cannot meet the capacity; a solver guides it in production. This module keeps the
heuristic search part:

* **Skyline placement.** Buffers are placed bottom-up, each exactly at its *skyline offset* (the
  lowest aligned offset above the buffers already placed that are live with it), in
  non-decreasing ``(offset, rank)``: these are MiniMalloc's canonical layouts, every buffer pushed
  down onto another or onto 0, each enumerated once. Every layout pushed down as far as it goes
  is reachable, so backtracking over the candidates loses nothing. A buffer whose skyline offset
  is behind the last placement waits until a later placement raises it.
* **Priorities.** Candidates at the same offset are tried by a static rank: ``"contention"``
  (the largest live bytes at any step of the buffer's lifetime, then area, then lifetime:
  MiniMalloc's ``TAW``), ``"contention_width"`` (contention, lifetime, area: ``TWA``),
  ``"width"`` (lifetime, area, contention: ``WAT``), ``"size"`` or ``"area"``; by default the
  searches of ``contention_width``, ``width`` and ``contention`` take turns (MiniMalloc's three
  rankings; in our compiled exact search ``TWA`` alone reaches the lower bound of MiniMalloc's
  A, E and F within 60,000 nodes, ``WAT`` and ``TAW`` do not).
* **Pruning.** A placement whose top exceeds the target fails; a node is abandoned as soon as, on
  some segment between lifetime end points, the lowest offset any unplaced member can still
  take plus the unplaced bytes there exceeds the target (MiniMalloc's section inference), and a
  buffer is not placed at or above the top another unplaced buffer would have at its own
  skyline offset (dominance: that buffer would fit below). Of identical buffers (size,
  lifetime, alignment) only the first by rank is a candidate.
  Before placing at offset ``o``, ``o`` plus the most unplaced bytes on any segment must fit
  (every later placement is at least as high), so the candidates of a node stop there.
* **Decomposition.** When no unplaced buffer crosses some lifetime end point, the two sides no
  longer interact and are searched one after the other, each ranked afresh with the contention
  left; a side that fails fails the node (MiniMalloc).
* **Bounded backtracking.** Depth-first over the candidates (at most ``max_branch`` per node),
  at most a budget of placements per probe.
* **Lowering the target.** The first target is below the best greedy arena (every order of
  :data:`planners.greedy.ORDERS` with both fits, the compiled engine when built). *Step* probes
  (``node_limit / 5`` placements) aim a fraction of the gap to the bound below the best arena
  (1/4; after 8 failed steps per priority 1/8, ..., 1/64, then again 1/4 with twice the budget;
  a step found before every priority failed once doubles the fraction again, up to 1/4), the
  priorities taking turns; the first probe is a step. With ``tight_probes``, *tight* probes
  (ten times ``node_limit``, doubled after every priority had one) take about a sixth of the
  placements: at the best proved bound or 1/8 of the gap above it (the priorities alternate
  between the two, the first priority at the bound first), each priority with a search (and
  ranking) of its own: a tight capacity prunes hardest, so such a probe often succeeds where a
  looser one runs out of budget (MiniMalloc's A, C and F at their lower bound). When a search
  with untruncated branching is exhausted, no layout within the target exists: the bound
  becomes ``target + 1`` (a proof; ``status="optimal"`` when the arena meets it).
* **Squeaky wheel.** After a probe runs out of budget, the buffers still unplaced at its deepest
  node rank first in the next probes of that search (a count of such failures is the primary
  key: squeaky-wheel optimisation, D. Joslin and D. Clements, JAIR 10, 1999). Short
  probes with a ranking that learns from each failure reach far lower targets than a long
  chronological backtrack at the bottom of one ranking (MiniMalloc's D and E at 5 s: 1.107 and
  1.153 x the lower bound with bisection probes, 1.07-1.08 and 1.005 x with step probes).

Conventions: half-open lifetimes ``[start, end)`` in schedule steps, sizes, offsets and targets in
bytes. ``plan.info["trajectory"]`` lists ``(seconds, arena)`` at the start plan and at every
improvement. Deterministic: no randomness, and the search is budgeted by work: ``max_nodes``
placements in all (by default :data:`AUTO_NODES_PER_SECOND` times ``time_limit``, a rate the
engine keeps on an idle machine), every start plan run. The wall clock is only the outer stop:
unless ``info["stopped_by"] == "time_limit"`` the same parameters give the same plan on every
machine and under any load, and a run the clock stopped is a prefix of that run.
Time limit: the call returns within ``time_limit`` plus the stated slack (the larger of 10 % and
0.5 s; measured at most 0.18 s over at limits of 0.5-5 s on MiniMalloc's D and
``somas_pangu_2.6B`` at a load of 6 on 2 cores): no greedy start begins that would likely end
after the deadline, no search's tables are built after it (0.16 s each on 18,692 buffers), and a
probe checks the clock every 64 placements.

Engines: the probes (one search at one target, :meth:`_Search.run`) run in the C extension
``planners._telamalloc`` when it is built (``engine="auto"``, the default, or ``"compiled"``) or in
numpy (``engine="python"``, the reference). Both visit the same nodes in the same order with the
same budget counting and deepest-node bookkeeping, so with an integer ``max_nodes`` the plans and
``info`` are identical (``tests/test_telamalloc_engine.py``; ``"auto"`` gives the numpy probe 50
times fewer placements, :data:`AUTO_NODES_PER_SECOND`); the targets, rankings and squeaky wheel stay in
Python. The compiled probe costs about 1 microsecond per placement on MiniMalloc's D, the numpy
one about 50, so within a time limit the compiled one searches about 50 times further.

Complexity: each search node costs ``O(d + p + s + c)`` for ``d`` neighbours of the placed
buffer, ``p`` buffers in the searched range (``n`` without decomposition), ``s`` segments between
lifetime end points and ``c`` (segment, buffer) cells (the section check stops at the first member
that fits, so it is usually ``O(s)`` in C); numpy work in the Python engine, a loop in the
compiled one. A descent is ``n`` nodes; the budget bounds the rest (the problem is NP-hard).
Memory: ``O(n + s + c)`` tables, ``O(n^2)`` neighbour lists up to 4,000 buffers, and the
candidate lists of the nodes on the current path (at most ``n`` each).

References
----------
.. [1] M. Maas, U. Beaugnon, A. Chauhan, B. Ilbeyi, "TelaMalloc: Efficient On-Chip Memory
   Allocation for Production Machine Learning Accelerators", ASPLOS 2023.
.. [2] M. D. Moffitt, "MiniMalloc: A Lightweight Memory Allocator for Hardware-Accelerated Machine
   Learning", ASPLOS 2023 (canonical layouts, section inference).
"""

from __future__ import annotations

import copy
import sys
import time
from numbers import Integral

import numpy as np

from .base import Planner, SolveResult, pick_engine
from .bounds import live_profile
from .feature_cpsat import solve_features
from .local_search import DEFAULT_START_ORDERS, START_ORDERS_RULE, anytime_start
from .model import Problem
from .params import POSITIVE_SECONDS, SHARE, Interval, SequenceOf, StrOptions

__all__ = ["TelaMalloc", "PRIORITIES", "ENGINES", "AUTO_NODES_PER_SECOND", "contention"]

#: Candidate orders of :class:`TelaMalloc`.
PRIORITIES = ("contention", "contention_width", "size", "area", "width")
#: Their codes in the compiled probe (``planners/_ext/_telamalloc.c``).
PRIORITIES_CODE = {"contention": 0, "contention_width": 1, "size": 2, "area": 3, "width": 4}
#: Probe engines of :class:`TelaMalloc` (``engine=``).
ENGINES = ("auto", "compiled", "python")

_INF = np.iinfo(np.int64).max
#: Largest ``buffers x segments`` for which the search keeps a membership matrix (section floors).
_MEMBER_CELLS = 4_000_000
#: Largest problem (buffers) for which the search keeps neighbour lists (an ``n x n`` pass).
_NBR_BUFFERS = 4_000
#: Largest problem (buffers) searched with decomposition (a recursion as deep as the buffers).
_DECOMPOSE_BUFFERS = 2_000
#: Step probes get ``node_limit // _STEP_SHARE`` placements each at first.
_STEP_SHARE = 5
#: Tight probes get about one placement in ``1 + _TIGHT_WEIGHT``.
_TIGHT_WEIGHT = 5
#: Failed step probes per priority before the step shrinks.
_STEP_TRIES = 8
#: Step probes aim ``gap >> shift`` below the best arena, ``gap`` its distance to the bound.
_SHIFTS = (2, 3, 4, 5, 6)
#: Placements per second of ``time_limit`` in the default budget (``max_nodes="auto"``), per
#: engine. Measured on MiniMalloc's B and D (``experiments.bench.anytime``): the compiled probe
#: makes about 1.4 million placements a second on an idle core and 0.35-0.5 million with six
#: processes on two cores; the numpy probe about 50 times fewer. So the default budget ends
#: within the time limit on an idle machine, and under load the time limit stops it (reported).
AUTO_NODES_PER_SECOND = {"compiled": 1_000_000, "python": 20_000}


def _compiled_probe():
    """The compiled probe module ``planners._telamalloc``, or ``None`` when it is not built."""
    try:
        from . import _telamalloc
    except ImportError:  # pragma: no cover - depends on the build
        return None
    return _telamalloc


def _resolve_engine(engine: str) -> str:
    """The probe engine that runs for ``engine`` (:data:`ENGINES`): ``"compiled"`` or
    ``"python"``; ``"auto"`` is ``"compiled"`` when ``planners._telamalloc`` is built.

    Raises ValueError for an unknown engine, ImportError for ``"compiled"`` when the module is
    not built (``pip install -e .`` needs a C compiler and the Python headers)."""
    return pick_engine(engine, ENGINES, "compiled", _compiled_probe, "planners._telamalloc")


def contention(problem: Problem) -> np.ndarray:
    """Contention of every buffer: the largest live bytes at any step of its lifetime (bytes).

    A range maximum over the live profile (:func:`planners.bounds.live_profile`) answered for all
    buffers at once with a sparse table, ``O((n + m) log m)`` for ``m`` distinct end points.
    """
    n = problem.n
    if n == 0:
        return np.zeros(0, np.int64)
    times, live = live_profile(problem)
    lo = np.searchsorted(times, problem.starts)
    hi = np.searchsorted(times, problem.ends)
    table = [live]
    while (1 << len(table)) <= len(live):
        prev, half = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-half], prev[half:]))
    lvl = np.floor(np.log2(hi - lo)).astype(np.int64)
    out = np.empty(n, np.int64)
    for k in np.unique(lvl).tolist():
        sel = np.flatnonzero(lvl == k)
        t = table[k]
        out[sel] = np.maximum(t[lo[sel]], t[hi[sel] - (1 << k)])
    return out


class _Search:
    """Depth-first skyline search for one problem; :meth:`run` once per target."""

    def __init__(
        self,
        problem: Problem,
        priority: str,
        max_branch: int | None,
        symmetry: bool,
        dominance: bool,
        decompose: bool = True,
        engine: str = "python",
    ) -> None:
        self.engine = _resolve_engine(engine)
        self._tables = None  # the compiled probe's tables (built at its first run)
        self.dominance = dominance
        self.p = problem
        n = problem.n
        times = np.unique(np.concatenate([problem.starts, problem.ends]))
        self.lo = np.searchsorted(times, problem.starts)
        self.hi = np.searchsorted(times, problem.ends)
        self.m = len(times)
        self.priority = priority
        self.boost = np.zeros(n, np.int64)  # failures a buffer was left unplaced at (squeaky wheel)
        self.cont = contention(problem)
        rank = np.empty(n, np.int64)
        rank[np.lexsort(self._keys(np.arange(n), self.cont))] = np.arange(n)
        self.rank = rank
        self.deep = 0
        self.deep_unplaced = None
        # buffers with the same size, lifetime and alignment are interchangeable: one class id each
        key = np.stack([problem.sizes, problem.starts, problem.ends, problem.alignments], axis=1)
        cls = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
        # twin[i]: the identical buffer just before i by rank (-1: none); i waits for it
        self.twin = None
        if symmetry and np.unique(cls).size < n:
            by = np.lexsort((rank, cls))
            same = np.concatenate(([False], cls[by][1:] == cls[by][:-1]))
            self.twin = np.full(n, -1, np.int64)
            self.twin[by[1:][same[1:]]] = by[:-1][same[1:]]
        self.aligned = bool(np.any(problem.alignments > 1))
        # neighbour lists (buffers live at a common step), kept when their total is small
        self.nbrs = None
        if n <= _NBR_BUFFERS:
            meet = (problem.starts[:, None] < problem.ends[None, :]) & (
                problem.ends[:, None] > problem.starts[None, :]
            )
            self.nbrs = [np.flatnonzero(row) for row in meet]
        self.max_branch = max_branch
        self.symmetry = symmetry
        # (segment, buffer) cells sorted by segment, for the section floors; left out when large
        self.member = None
        span = self.hi - self.lo
        if int(span.sum()) <= _MEMBER_CELLS:
            owner = np.repeat(np.arange(n), span)
            first = np.repeat(self.lo - np.cumsum(span) + span, span)
            seg = np.arange(owner.size) + first
            order = np.argsort(seg, kind="stable")
            segs, at = np.unique(seg[order], return_index=True)
            self.member = (owner[order], segs, at)
            self.dense = bool(np.array_equal(segs, np.arange(segs.size)))
            self.cell_seg = seg  # the same cells by buffer: contention left in one reduceat
            self.cell_at = np.cumsum(span) - span
        self.decompose = bool(
            decompose and self.member is not None and n <= _DECOMPOSE_BUFFERS and np.all(span > 0)
        )
        self.nodes = 0
        self.truncated = False

    def _keys(self, idx: np.ndarray, cont: np.ndarray) -> tuple:
        """``numpy.lexsort`` keys (last is primary) ranking buffers ``idx`` by the priority, with
        ``cont`` their contention (bytes)."""
        p = self.p
        width = p.ends[idx] - p.starts[idx]
        size = p.sizes[idx]
        area = width.astype(np.float64) * size
        if self.boost.any():
            return (*self._keys0(idx, cont, width, size, area), -self.boost[idx])
        return self._keys0(idx, cont, width, size, area)

    def _keys0(self, idx, cont, width, size, area) -> tuple:
        n = idx
        if self.priority == "contention":  # MiniMalloc's TAW (contention, area, width)
            return (n, -width, -area, -cont)
        if self.priority == "contention_width":  # MiniMalloc's TWA (contention, width, area)
            return (n, -area, -width, -cont)
        if self.priority == "size":
            return (n, -width, -size)
        if self.priority == "area":
            return (n, -size, -area)
        return (n, -cont, -area, -width)  # "width": MiniMalloc's WAT (width, area, contention)

    def fork(self) -> _Search:
        """A search sharing this one's tables, with a ranking (and squeaky-wheel counts) of its
        own and no placements counted."""
        other = copy.copy(self)
        other.rank, other.boost = self.rank.copy(), self.boost.copy()
        other.nodes, other.truncated = 0, False
        other.deep, other.deep_unplaced = 0, None
        return other

    def reorder(self) -> None:
        """Rank afresh (after :attr:`boost` changed)."""
        self.rank[np.lexsort(self._keys(np.arange(self.p.n), self.cont))] = np.arange(self.p.n)

    def _lowest(self, minoff: np.ndarray) -> np.ndarray:
        """Lowest offset of every buffer (its skyline offset, aligned; ``_INF`` once placed)."""
        if not self.aligned:
            return minoff
        a = self.p.alignments
        return np.where(minoff == _INF, _INF, -(-minoff // a) * a)

    def _candidates(self, xa: np.ndarray, floor: int, last_rank: int, pool=None):
        """Unplaced buffers to try next and their offsets, by offset then priority.

        Each goes exactly to its skyline offset ``xa`` (aligned, :meth:`_lowest`): the layouts
        searched are the *canonical* ones, every buffer pushed down onto a buffer below it or
        onto 0, placed in non-decreasing ``(offset, rank)``, so each is enumerated once
        (MiniMalloc). A buffer whose ``(offset, rank)`` is behind the last placement waits (its
        skyline offset can still rise onto a buffer placed later). With ``dominance``, a buffer
        is left out when another unplaced buffer would fit entirely below its offset (nothing
        placed later can fill that gap, so the layout is not pushed down and another branch
        reaches it). With ``symmetry``, of identical buffers (same size, lifetime, alignment)
        only the first by rank still unplaced is a candidate."""
        sizes = self.p.sizes
        unpl = np.flatnonzero(xa != _INF) if pool is None else pool[xa[pool] != _INF]
        x = xa[unpl]
        rk = self.rank[unpl]
        keep = (x > floor) | ((x == floor) & (rk > last_rank))
        if self.dominance:  # below the lowest top of any unplaced buffer
            keep &= x < int((x + sizes[unpl]).min())
        if self.twin is not None:
            tw = self.twin[unpl]
            keep &= (tw < 0) | (xa[np.maximum(tw, 0)] == _INF)
        unpl, x = unpl[keep], x[keep]
        order = np.lexsort((self.rank[unpl], x))
        cand, x = unpl[order], x[order]
        if self.max_branch is not None and cand.size > self.max_branch:
            cand, x = cand[: self.max_branch], x[: self.max_branch]
            self.truncated = True
        return cand, x

    def _sections_fit(self, xa, floor, target, unplaced, within=None) -> bool:
        """MiniMalloc's section inference: on every segment, the lowest offset any unplaced
        member can still take (``xa``, at least ``floor`` on the segments ``within = (s0, s1)``
        being searched, everywhere when ``None``) plus the unplaced bytes there must fit in
        ``target``. One ``minimum.reduceat`` over the (segment, buffer) cells."""
        owner, segs, at = self.member
        lowest = np.minimum.reduceat(xa[owner], at)  # a fresh array: raised in place
        if within is None:
            np.maximum(lowest, floor, out=lowest)
        elif self.dense:  # segment k is row k
            part = lowest[within[0] : within[1]]
            np.maximum(part, floor, out=part)
        else:
            inside = (segs >= within[0]) & (segs < within[1])
            lowest = np.where(inside, np.maximum(lowest, floor), lowest)
        left = unplaced[: segs.size] if self.dense else unplaced[segs]
        return not ((left > 0) & (lowest > target - left)).any()

    def run(self, target: int, budget: int, deadline: float):
        """Offsets (int64, bytes) of a layout with arena ``<= target``; ``"exhausted"`` when the
        search space is exhausted (no such layout exists unless ``self.truncated``); ``"budget"``
        when ``budget`` placements or the ``deadline`` (a :func:`time.perf_counter` time in
        seconds) were reached first. Runs the compiled probe when :attr:`engine` is
        ``"compiled"``, else the Python reference (:meth:`run_python`); both give identical
        results and bookkeeping (``nodes``, ``deep``, ``deep_unplaced``, ``truncated``)."""
        if self.engine == "compiled":
            return self.run_compiled(target, budget, deadline)
        return self.run_python(target, budget, deadline)

    def _compiled_tables(self) -> tuple:
        """The static arguments of ``planners._telamalloc.probe`` (see its docstring)."""
        if self._tables is None:
            p, n = self.p, self.p.n
            empty = np.zeros(0, np.int64)
            i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
            nptr = nidx = empty
            if self.nbrs is not None:
                nptr = np.zeros(n + 1, np.int64)
                nptr[1:] = np.cumsum([len(x) for x in self.nbrs])
                nidx = i64(np.concatenate(self.nbrs)) if n else empty
            owner = segs = at = empty
            if self.member is not None:
                owner, segs, at = self.member
                at = np.append(at, owner.size)
            self._tables = (
                i64(p.sizes), i64(p.starts), i64(p.ends), i64(p.alignments),
                i64(self.lo), i64(self.hi), i64(nptr), i64(nidx),
                i64(owner), i64(segs), i64(at),
                empty if self.twin is None else i64(self.twin),
                int(self.m), PRIORITIES_CODE[self.priority], int(bool(self.dominance)),
                -1 if self.max_branch is None else int(self.max_branch), int(self.aligned),
                int(self.decompose), int(self.nbrs is not None), int(self.member is not None),
                int(self.twin is not None),
            )  # fmt: skip
        return self._tables

    def run_compiled(self, target: int, budget: int, deadline: float):
        """:meth:`run` in the compiled probe ``planners._telamalloc`` (C, the GIL released):
        node for node the search of :meth:`run_python`, ``deadline`` passed on as the seconds
        left. Raises ImportError when the module is not built."""
        from . import _telamalloc

        n = self.p.n
        if n == 0:
            return np.zeros(0, np.int64)
        off = np.zeros(n, np.int64)
        deep = np.zeros(n, np.int64)
        rank = np.ascontiguousarray(self.rank, dtype=np.int64)
        boost = np.ascontiguousarray(self.boost, dtype=np.int64)
        budget = min(int(budget), 2**62)
        seconds = float(deadline - time.perf_counter())
        code, used, depth, deep_set, truncated, reset = _telamalloc.probe(
            self._compiled_tables(), rank, boost, off, deep, int(target), budget, seconds
        )
        self.nodes += used
        if truncated:
            self.truncated = True
        if reset:
            self.deep = depth
            self.deep_unplaced = deep.astype(bool) if deep_set else None
        return off if code == 0 else ("exhausted" if code == 1 else "budget")

    def run_python(self, target: int, budget: int, deadline: float):
        """:meth:`run` in Python and numpy (the reference engine)."""
        if self.decompose:
            return self._run_decomposed(target, budget, deadline)
        p = self.p
        n, m = p.n, self.m
        sizes, starts, ends = p.sizes, p.starts, p.ends
        lo, hi = self.lo, self.hi
        live = np.flatnonzero(sizes > 0)
        off = np.zeros(n, np.int64)
        if live.size == 0:
            return off
        minoff = np.full(n, _INF, np.int64)  # skyline offset of unplaced buffers, _INF otherwise
        minoff[live] = 0
        height = np.zeros(m, np.int64)  # highest placed top on each segment between end points
        delta = np.zeros(m + 1, np.int64)
        np.add.at(delta, lo[live], sizes[live])
        np.add.at(delta, hi[live], -sizes[live])
        unplaced = np.cumsum(delta[:-1])  # unplaced bytes live on each segment
        if int(unplaced.max()) > target:
            return "exhausted"
        undo: list[tuple] = []
        nbrs = self.nbrs

        self.deep, self.deep_unplaced = 0, None

        def place(i: int, level: int, floor: int, last: int) -> None:
            if len(undo) >= self.deep:
                self.deep = len(undo) + 1
                self.deep_unplaced = minoff != _INF
            s = int(sizes[i])
            a, b = lo[i], hi[i]
            if nbrs is None:
                nb = np.flatnonzero((starts < ends[i]) & (ends > starts[i]) & (minoff < level + s))
            else:
                nb = nbrs[i]
                nb = nb[minoff[nb] < level + s]
            undo.append((i, height[a:b].copy(), nb, minoff[nb], floor, last))
            height[a:b] = level + s
            unplaced[a:b] -= s
            minoff[nb] = level + s
            minoff[i] = _INF
            off[i] = level

        def unplace() -> tuple[int, int]:
            i, old_h, nb, old_min, floor, last = undo.pop()
            height[lo[i] : hi[i]] = old_h
            unplaced[lo[i] : hi[i]] += sizes[i]
            minoff[nb] = old_min  # restores i itself too (it was its own neighbour)
            return floor, last

        floor, last = 0, -1
        remaining = live.size
        every = 63 if n <= 2000 else 0  # clock checks: every 64 nodes, every node when large
        used = 0
        stack = [[*self._candidates(self._lowest(minoff), floor, last), 0]]  # candidates, their offsets, next
        while stack:
            node = stack[-1]
            cand, xs, k = node
            if k >= cand.size:  # every candidate failed: take back the placement leading here
                stack.pop()
                if not undo:
                    return "exhausted"
                floor, last = unplace()
                remaining += 1
                continue
            node[2] = k + 1
            i = int(cand[k])
            level = int(xs[k])
            if level + int(unplaced.max()) > target:  # so is every later candidate here
                node[2] = cand.size
                continue
            if level + int(sizes[i]) > target:
                continue
            if used >= budget or (used & every == 0 and time.perf_counter() > deadline):
                return "budget"
            used += 1
            self.nodes += 1
            place(i, level, floor, last)
            floor, last = level, int(self.rank[i])
            remaining -= 1
            if remaining == 0:
                return off
            xa = self._lowest(minoff)
            if (
                not self._sections_fit(xa, floor, target, unplaced)
                if self.member is not None
                else np.any((np.maximum(height, floor) + unplaced > target) & (unplaced > 0))
            ):
                floor, last = unplace()
                remaining += 1
                continue
            stack.append([*self._candidates(xa, floor, last), 0])
        return "exhausted"

    def _run_decomposed(self, target: int, budget: int, deadline: float):
        """:meth:`run` with MiniMalloc's decomposition: whenever no unplaced buffer crosses some
        lifetime end point, the buffers on either side no longer interact (the placed ones are
        fixed), so the sides are searched one after the other, each from its own canonical
        start and ranked afresh with the contention left (a side that fails fails the node,
        whatever the other side did). Same answers as :meth:`run`, usually far fewer nodes."""
        p = self.p
        n, m = p.n, self.m
        sizes, lo, hi, nbrs = p.sizes, self.lo, self.hi, self.nbrs
        live = np.flatnonzero(sizes > 0)
        off = np.zeros(n, np.int64)
        if live.size == 0:
            return off
        minoff = np.full(n, _INF, np.int64)
        minoff[live] = 0
        delta = np.zeros(m + 1, np.int64)
        np.add.at(delta, lo[live], sizes[live])
        np.add.at(delta, hi[live], -sizes[live])
        unplaced = np.cumsum(delta[:-1])
        if int(unplaced.max()) > target:
            return "exhausted"
        cross = np.zeros(m + 1, np.int64)  # cross[k]: unplaced buffers spanning end point k
        np.add.at(cross, lo[live] + 1, 1)
        np.add.at(cross, hi[live], -1)
        cross = np.cumsum(cross)
        undo: list[tuple] = []
        rank = self.rank
        used = [0]

        class _Stop(Exception):
            pass

        self.deep, self.deep_unplaced = 0, None

        def place(i: int, level: int) -> None:
            if len(undo) >= self.deep:  # the deepest node yet: who is still unplaced
                self.deep = len(undo) + 1
                self.deep_unplaced = minoff != _INF
            s = int(sizes[i])
            nb = nbrs[i]
            nb = nb[minoff[nb] < level + s]
            undo.append((i, nb, minoff[nb]))
            unplaced[lo[i] : hi[i]] -= s
            cross[lo[i] + 1 : hi[i]] -= 1
            minoff[nb] = level + s
            minoff[i] = _INF
            off[i] = level

        def unplace() -> None:
            i, nb, old_min = undo.pop()
            unplaced[lo[i] : hi[i]] += sizes[i]
            cross[lo[i] + 1 : hi[i]] += 1
            minoff[nb] = old_min

        def solve_range(pool: np.ndarray, s0: int, s1: int) -> bool:
            pool = pool[minoff[pool] != _INF]
            if pool.size == 0:
                return True
            mark = len(undo)
            cuts = np.flatnonzero(cross[s0 + 1 : s1] == 0) + s0 + 1
            bounds = [s0, *cuts.tolist(), s1]
            for a, e in zip(bounds[:-1], bounds[1:]):
                part = pool[(lo[pool] < e) & (hi[pool] > a)]
                if part.size == 0:
                    continue
                saved = rank[part].copy()
                cont = np.maximum.reduceat(unplaced[self.cell_seg], self.cell_at)[part]
                rank[part[np.lexsort(self._keys(part, cont))]] = np.arange(part.size)
                try:
                    ok = dfs(part, a, e, 0, -1, self._lowest(minoff))
                finally:
                    rank[part] = saved
                if not ok:
                    while len(undo) > mark:
                        unplace()
                    return False
            return True

        def dfs(pool: np.ndarray, s0: int, s1: int, floor: int, last: int, xa) -> bool:
            if not (xa[pool] != _INF).any():
                return True
            cand, xs = self._candidates(xa, floor, last, pool)
            # every later placement here is at least as high: the bytes left on a segment
            # must fit above it (MiniMalloc's cheap check before placing)
            room = target - int(unplaced[s0:s1].max())
            for i, level in zip(cand.tolist(), xs.tolist()):
                if level > room:
                    break
                if level + int(sizes[i]) > target:
                    continue
                if used[0] >= budget or (used[0] & 63 == 0 and time.perf_counter() > deadline):
                    raise _Stop
                used[0] += 1
                self.nodes += 1
                place(i, level)
                xb = self._lowest(minoff)
                if self._sections_fit(xb, level, target, unplaced, (s0, s1)):
                    split = bool((cross[max(lo[i] + 1, s0 + 1) : min(hi[i], s1)] == 0).any())
                    if split:
                        ok = solve_range(pool, s0, s1)
                    else:
                        ok = dfs(pool, s0, s1, level, int(rank[i]), xb)
                    if ok:
                        return True
                unplace()
            return False

        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4 * n + 200))
        try:
            found = solve_range(live, 0, m)
        except _Stop:
            return "budget"
        finally:
            sys.setrecursionlimit(limit)
        return off if found else "exhausted"


class TelaMalloc(Planner):
    """TelaMalloc-style skyline search with backtracking and a falling capacity target.

    Parameters
    ----------
    time_limit : float, default 5.0
        Wall-clock seconds for the whole call (start plans included).
    priority : str or tuple of str, default ("contention_width", "width", "contention")
        Order of the candidates at a node (:data:`PRIORITIES`, see the module docstring). A
        tuple runs one search per priority in turn, one target attempt each (MiniMalloc's round
        robin of preorderings), which protects against one unlucky order.
    node_limit : int, default 2000
        Sets the budgets: a step probe gets ``node_limit // 5`` placements at first, a tight
        probe ``10 * node_limit`` (see the module docstring for how they grow).
    max_nodes : int, "auto" or None, default "auto"
        Total placement budget over all targets; with it a run repeats exactly whatever the load
        (unless the time limit bites first). ``"auto"``: ``AUTO_NODES_PER_SECOND[engine] *
        time_limit`` placements (``info["max_nodes"]``); ``None``: the time limit alone stops the
        search, so its result depends on the machine's speed and load.
    max_branch : int or None, default None
        Candidates tried per node (``None``: all, which keeps the search complete).
    symmetry : bool, default True
        Try only one of interchangeable candidates (same size, lifetime and alignment) per node.
    check_dominance : bool, default True
        Abandon a node where an unplaced buffer would fit entirely below the current offset
        (MiniMalloc's dominance rule: nothing placed later can fill that gap, so a layout with
        the buffer pushed down exists and is searched elsewhere).
    start_orders : tuple of str, default :data:`planners.local_search.DEFAULT_START_ORDERS`
        (every name in :data:`planners.greedy.ORDERS`, ``"size"`` first)
        Orders of the greedy start plans (each with both fits).
    start_share : float, default 1.0
        Share of ``time_limit`` after which no further start plan begins (one always runs); the
        default runs every start plan unless the time limit bites
        (:func:`planners.local_search.anytime_start`).
    tight_probes : bool, default True
        Give about a sixth of the placements to probes at the bound (or 1/8 of the gap above
        it), each with ten times ``node_limit`` at first.
    decompose : bool, default True
        Search independent sides separately (see the module docstring); used up to 2,000
        buffers (the recursion is as deep as the buffers).
    engine : {"auto", "compiled", "python"}, default "auto"
        Engine of the probes (one search at one target): ``"compiled"`` is the C extension
        ``planners._telamalloc`` (built by ``pip install -e .``), ``"python"`` the numpy
        reference, ``"auto"`` the compiled one when it is built. Both search the same nodes in
        the same order, so with an integer ``max_nodes`` (and no time limit reached) the plans
        and ``info`` are identical; ``max_nodes="auto"`` gives the compiled probe, some 50 times
        faster, 50 times the placements. ``info["engine"]`` records the engine that ran.

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` when the arena meets the best proved bound (the max-live lower bound, or
    ``target + 1`` after an exhausted complete search), else ``heuristic``. ``info``:
    ``trajectory`` (list of ``(seconds, arena)``), ``start``, ``targets`` (list of ``(target,
    outcome)`` with outcome ``"found"``, ``"budget"`` or ``"exhausted"``), ``nodes``,
    ``engine`` (``"compiled"`` or ``"python"``), ``stopped_by`` (``"bound"``, ``"time_limit"``,
    ``"max_nodes"``, or ``"range"``: the
    worst-case arena exceeds ``2**62`` bytes and the start plan is returned without a search, so
    that every sum the search forms stays inside int64).

    Raises
    ------
    ParameterError
        (from :meth:`plan`) Unknown priority or engine, a time limit or node limit that is not
        positive, ... (``_parameter_constraints``).
    ImportError
        (from :meth:`plan`) ``engine="compiled"`` but ``planners._telamalloc`` is not built.

    Examples
    --------
    >>> from planners.examples import exercise_5_1_problem
    >>> TelaMalloc().plan(exercise_5_1_problem()).arena_size
    780
    """

    name = "telamalloc"
    family = "search"
    #: feature problems go to the CP-SAT feature model (:mod:`planners.feature_cpsat`)
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native"}
    _parameter_constraints = {
        "time_limit": [POSITIVE_SECONDS],
        "priority": [StrOptions(PRIORITIES), SequenceOf(StrOptions(PRIORITIES))],
        "node_limit": [Interval(Integral, 1, None)],
        "max_nodes": [Interval(Integral, 1, None), StrOptions(("auto",)), None],
        "max_branch": [Interval(Integral, 1, None), None],
        "symmetry": ["boolean"],
        "check_dominance": ["boolean"],
        "start_orders": [START_ORDERS_RULE],
        "start_share": [SHARE],
        "tight_probes": ["boolean"],
        "decompose": ["boolean"],
        "engine": [StrOptions(ENGINES)],
    }

    def __init__(
        self,
        time_limit: float = 5.0,
        priority: str | tuple[str, ...] = ("contention_width", "width", "contention"),
        node_limit: int = 2000,
        max_nodes: int | str | None = "auto",
        max_branch: int | None = None,
        symmetry: bool = True,
        check_dominance: bool = True,
        start_orders: tuple[str, ...] = DEFAULT_START_ORDERS,
        start_share: float = 1.0,
        tight_probes: bool = True,
        decompose: bool = True,
        engine: str = "auto",
    ) -> None:
        self.time_limit = time_limit
        self.priority = priority
        self.node_limit = node_limit
        self.max_nodes = max_nodes
        self.max_branch = max_branch
        self.symmetry = symmetry
        self.check_dominance = check_dominance
        self.start_orders = start_orders
        self.start_share = start_share
        self.tight_probes = tight_probes
        self.decompose = decompose
        self.engine = engine

    def _solve(self, problem: Problem) -> SolveResult:
        if problem.features:
            # pins, hints, gaps, pools: the skyline search packs plain rectangles; as TelaMalloc
            # pairs its heuristic with a CP solver, the feature problem goes to the CP-SAT
            # feature model (planners.feature_cpsat), stopped by the time limit with its best plan
            return solve_features(problem, problem.capacity, "minimize", self.time_limit,
                                  workers=1)
        prios = (self.priority,) if isinstance(self.priority, str) else tuple(self.priority)
        engine = _resolve_engine(self.engine)
        st = anytime_start(problem, self.time_limit, self.start_orders, self.start_share)
        deadline, traj, lb = st.deadline, st.trajectory, st.lower_bound
        best_off, best = st.offsets, st.arena
        traj.add(best)
        info: dict = dict(st.info)
        info["engine"] = engine
        max_nodes = self.max_nodes
        if max_nodes == "auto":
            max_nodes = max(1, int(AUTO_NODES_PER_SECOND[engine] * float(self.time_limit)))
        info["max_nodes"] = max_nodes
        bound = lb
        targets: list[tuple[int, str]] = []
        prios = (self.priority,) if isinstance(self.priority, str) else tuple(self.priority)
        if problem.worst_case_arena > 2**62:
            info.update(trajectory=traj.points, targets=[], nodes=0, stopped_by="range")
            return SolveResult(best_off, "optimal" if best <= bound else "heuristic", bound, info)
        # a search's tables take a while on a large problem (0.16 s each on 18,692 buffers):
        # none is built once the time limit has passed
        searches: list[_Search] = []
        for pr in prios:
            if best <= bound or time.perf_counter() >= deadline:
                break
            searches.append(_Search(problem, pr, self.max_branch, self.symmetry,
                                    self.check_dominance, self.decompose, engine))
        if best > bound and len(searches) < len(prios):
            info.update(trajectory=traj.points, targets=[], nodes=0, stopped_by="time_limit")
            return SolveResult(best_off, "heuristic", bound, info)
        # tight probes rank with failures of their own (a failed step leaves them as they were)
        tight_searches = [x.fork() for x in searches]
        stopped = "lower_bound"
        tight_budget = 10 * int(self.node_limit)  # a tight probe prunes hardest: more nodes
        step_budget = max(1, int(self.node_limit) // _STEP_SHARE)
        spent = {"tight": 0, "step": 0}
        tight_turn = step_turn = fails = 0
        shift = _SHIFTS[0]
        while best > bound:
            if time.perf_counter() >= deadline:
                stopped = "time_limit"
                break
            used = sum(x.nodes for x in searches + tight_searches)
            left = None if max_nodes is None else max_nodes - used
            if left is not None and left <= 0:
                stopped = "max_nodes"
                break
            # a step first, then tight probes take about a sixth of the placements
            tight = self.tight_probes and step_turn > 0
            kind = "tight" if tight and _TIGHT_WEIGHT * spent["tight"] <= spent["step"] else "step"
            if kind == "tight":  # the bound, or 1/8 of the gap above it: priorities alternate,
                # the first priority at the bound in the first round
                which = tight_turn % len(searches)
                exact = (tight_turn // len(searches) + which) % 2 == 0
                target = bound if exact else bound + (best - bound) // 8
                k_budget = tight_budget
                tight_turn += 1
                if tight_turn % len(searches) == 0:
                    tight_budget *= 2  # every priority has had this budget
            else:  # a step down from the best arena: a fraction of the gap to the bound
                which = step_turn % len(searches)
                step_turn += 1
                target = best - max(1, (best - bound) >> shift)
                k_budget = step_budget
            search = (tight_searches if kind == "tight" else searches)[which]
            before = search.nodes
            res = search.run(target, k_budget if left is None else min(k_budget, left), deadline)
            spent[kind] += search.nodes - before
            if isinstance(res, np.ndarray):
                targets.append((target, "found"))
                best_off, best = res, int((res + problem.sizes).max())
                traj.add(best)
                if kind == "step" and fails < len(searches):  # found at once: a larger step
                    shift = _SHIFTS[max(0, _SHIFTS.index(shift) - 1)]
                fails = 0
            elif res == "exhausted" and not search.truncated:
                targets.append((target, "exhausted"))
                bound = target + 1
                fails = 0
            else:
                targets.append((target, res))
                if search.deep_unplaced is not None:  # squeaky wheel: rank the buffers still
                    search.boost[search.deep_unplaced] += 1  # unplaced at the deepest node first
                    search.reorder()
                if kind == "step":
                    fails += 1
                    if fails >= _STEP_TRIES * len(searches):  # a smaller step, then more budget
                        fails = 0
                        k = _SHIFTS.index(shift) + 1
                        if k == len(_SHIFTS):
                            k, step_budget = 0, 2 * step_budget
                        shift = _SHIFTS[k]
        info.update(
            trajectory=traj.points,
            targets=targets,
            nodes=sum(x.nodes for x in searches + tight_searches),
            stopped_by=stopped if best > bound else "bound",
        )
        if st.info["start_cut"] and best > bound:
            info["stopped_by"] = "time_limit"  # the clock left start plans out
        return SolveResult(best_off, "optimal" if best <= bound else "heuristic", bound, info)
