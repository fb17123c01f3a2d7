"""``telamalloc``: TelaMalloc-style skyline placement with backtracking under a capacity target.

TelaMalloc (Maas et al., ASPLOS 2023) places the buffers of an accelerator program on a 2D plane
(time x address) with a heuristic that is steered by **contention** and **backtracks** when a
placement cannot meet the capacity; a solver guides it in production. This module keeps the
heuristic search part:

* **Skyline placement.** Buffers are placed bottom-up: each at the lowest aligned offset above the
  buffers already placed that are live with it (its *skyline*), and in non-decreasing offset: at
  every step the candidates are the unplaced buffers whose skyline offset is the lowest of all
  (the lowest point of the skyline). Every layout pushed down as far as it goes is reachable this
  way (MiniMalloc's canonical layouts), so backtracking over the candidates loses nothing.
* **Priorities.** Candidates at the same offset are tried by decreasing contention, the largest
  live bytes at any step of the buffer's lifetime (``"contention"``; ties: larger size, longer
  lifetime, problem order), by lifetime then size x lifetime then contention (``"width"``,
  MiniMalloc's ``WAT``), by size (``"size"``) or by size x lifetime (``"area"``); by default
  the searches of ``width``, ``contention`` and ``area`` take turns, one target each.
* **Capacity target and pruning.** A placement whose top exceeds the target fails, and a node is
  abandoned as soon as some step's floor (the highest placed top there, at least the current
  offset) plus the unplaced bytes live at it exceeds the target.
* **Backtracking.** Depth-first over the candidates (at most ``max_branch`` per node), at most
  ``node_limit`` placements per target; the limit doubles after every priority failed once.
* **Lowering the target.** The first target is below the best greedy arena (every order of
  :data:`planners.greedy.ORDERS` with both fits, the compiled engine when built). After a success
  the target drops halfway towards the best proved bound; after a failure it moves halfway back
  towards the best arena. When a search with untruncated branching is exhausted, no layout
  within the target exists: the bound becomes ``target + 1`` (a proof; ``status="optimal"``
  when the arena meets it).

Conventions: half-open lifetimes ``[start, end)`` in schedule steps, sizes, offsets and targets in
bytes. ``plan.info["trajectory"]`` lists ``(seconds, arena)`` at the start plan and at every
improvement. Deterministic: no randomness; with the default ``time_limit`` not reached the result
is the same on every machine, and ``max_nodes`` (a total placement budget) makes a stopped run
repeat exactly too.

Complexity: each search node costs ``O(n + m)`` numpy work for ``n`` buffers and ``m`` distinct
lifetime end points; a descent is ``n`` nodes; the budget bounds the rest (the problem is
NP-hard).

References
----------
.. [1] M. Maas, U. Beaugnon, A. Chauhan, B. Ilbeyi, "TelaMalloc: Efficient On-Chip Memory
   Allocation for Production Machine Learning Accelerators", ASPLOS 2023.
.. [2] M. D. Moffitt, "MiniMalloc: A Lightweight Memory Allocator for Hardware-Accelerated Machine
   Learning", ASPLOS 2023 (canonical layouts, section inference).
"""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np

from .base import Planner, SolveResult
from .bounds import live_profile
from .local_search import DEFAULT_START_ORDERS, START_ORDERS_RULE, anytime_start
from .model import Problem
from .params import POSITIVE_SECONDS, SHARE, Interval, SequenceOf, StrOptions

__all__ = ["TelaMalloc", "PRIORITIES", "contention"]

#: Candidate orders of :class:`TelaMalloc`.
PRIORITIES = ("contention", "size", "area", "width")

_INF = np.iinfo(np.int64).max


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
    ) -> None:
        self.dominance = dominance
        self.p = problem
        n = problem.n
        times = np.unique(np.concatenate([problem.starts, problem.ends]))
        self.lo = np.searchsorted(times, problem.starts)
        self.hi = np.searchsorted(times, problem.ends)
        self.m = len(times)
        width = problem.ends - problem.starts
        if priority == "contention":
            keys = (np.arange(n), -width, -problem.sizes, -contention(problem))
        elif priority == "size":
            keys = (np.arange(n), -width, -problem.sizes)
        elif priority == "area":
            keys = (np.arange(n), -problem.sizes, -(width.astype(np.float64) * problem.sizes))
        else:  # "width": MiniMalloc's WAT preordering (width, area, contention)
            keys = (
                np.arange(n),
                -contention(problem),
                -(width.astype(np.float64) * problem.sizes),
                -width,
            )
        rank = np.empty(n, np.int64)
        rank[np.lexsort(keys)] = np.arange(n)
        self.rank = rank
        # buffers with the same size, lifetime and alignment are interchangeable: one class id each
        key = np.stack([problem.sizes, problem.starts, problem.ends, problem.alignments], axis=1)
        self.cls = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
        self.max_branch = max_branch
        self.symmetry = symmetry
        self.nodes = 0
        self.truncated = False

    def _candidates(self, minoff: np.ndarray, floor: int):
        """Unplaced buffers to try next and their offsets, by offset then priority.

        Each goes to its skyline offset raised to ``floor`` and aligned. With ``dominance``, a
        buffer is left out when another unplaced buffer would fit entirely below its offset
        (nothing placed later can fill that gap, so the layout is not pushed down and another
        branch reaches a better one)."""
        sizes = self.p.sizes
        unpl = np.flatnonzero(minoff != _INF)
        a = self.p.alignments[unpl]
        x = -(-np.maximum(minoff[unpl], floor) // a) * a
        if self.dominance and unpl.size > 1:
            reach = x + sizes[unpl]  # top of each unplaced buffer at its lowest offset
            two = np.partition(reach, 1)[:2] if reach.size > 2 else np.sort(reach)
            lim = np.where(reach == two[0], two[1], two[0])  # lowest reach of another buffer
            keep = x < lim
            unpl, x = unpl[keep], x[keep]
        order = np.lexsort((self.rank[unpl], x))
        cand, x = unpl[order], x[order]
        if self.symmetry and cand.size > 1:
            first = np.sort(np.unique(self.cls[cand], return_index=True)[1])
            cand, x = cand[first], x[first]
        if self.max_branch is not None and cand.size > self.max_branch:
            cand, x = cand[: self.max_branch], x[: self.max_branch]
            self.truncated = True
        return cand, x

    def run(self, target: int, budget: int, deadline: float):
        """Offsets (int64, bytes) of a layout with arena ``<= target``; ``"exhausted"`` when the
        search space is exhausted (no such layout exists unless ``self.truncated``); ``"budget"``
        when ``budget`` placements or the ``deadline`` were reached first."""
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

        def place(i: int, level: int, floor: int) -> None:
            s = int(sizes[i])
            a, b = lo[i], hi[i]
            nb = np.flatnonzero((starts < ends[i]) & (ends > starts[i]) & (minoff < level + s))
            undo.append((i, height[a:b].copy(), nb, minoff[nb], floor))
            height[a:b] = level + s
            unplaced[a:b] -= s
            minoff[nb] = level + s
            minoff[i] = _INF
            off[i] = level

        def unplace() -> int:
            i, old_h, nb, old_min, floor = undo.pop()
            height[lo[i] : hi[i]] = old_h
            unplaced[lo[i] : hi[i]] += sizes[i]
            minoff[nb] = old_min  # restores i itself too (it was its own neighbour)
            return floor

        floor = 0
        remaining = live.size
        used = 0
        stack = [[*self._candidates(minoff, floor), 0]]  # candidates, their offsets, next
        while stack:
            node = stack[-1]
            cand, xs, k = node
            if k >= cand.size:  # every candidate failed: take back the placement leading here
                stack.pop()
                if not undo:
                    return "exhausted"
                floor = unplace()
                remaining += 1
                continue
            node[2] = k + 1
            i = int(cand[k])
            level = int(xs[k])
            if level + int(sizes[i]) > target:
                continue
            if used >= budget or (used & 63 == 0 and time.perf_counter() > deadline):
                return "budget"
            used += 1
            self.nodes += 1
            place(i, level, floor)
            floor = level
            remaining -= 1
            if remaining == 0:
                return off
            seg = unplaced > 0
            if np.any(np.maximum(height[seg], floor) + unplaced[seg] > target):
                floor = unplace()
                remaining += 1
                continue
            stack.append([*self._candidates(minoff, floor), 0])
        return "exhausted"


class TelaMalloc(Planner):
    """TelaMalloc-style skyline search with backtracking and a falling capacity target.

    Parameters
    ----------
    time_limit : float, default 5.0
        Wall-clock seconds for the whole call (start plans included).
    priority : str or tuple of str, default ("width", "contention", "area")
        Order of the candidates at a node (:data:`PRIORITIES`, see the module docstring). A
        tuple runs one search per priority in turn, one target attempt each (MiniMalloc's round
        robin of preorderings), which protects against one unlucky order.
    node_limit : int, default 2000
        Placements allowed for the first target; doubled after every failed target.
    max_nodes : int or None, default None
        Total placement budget over all targets; with it a run repeats exactly whatever the load.
    max_branch : int or None, default None
        Candidates tried per node (``None``: all, which keeps the search complete).
    symmetry : bool, default True
        Try only one of interchangeable candidates (same size, lifetime and alignment) per node.
    check_dominance : bool, default True
        Abandon a node where an unplaced buffer would fit entirely below the current offset
        (MiniMalloc's dominance rule: nothing placed later can fill that gap, so a layout with
        the buffer pushed down exists and is searched elsewhere).
    start_orders : tuple of str, default every name in :data:`planners.greedy.ORDERS`
        Orders of the greedy start plans (each with both fits).
    start_share : float, default 0.3
        Share of ``time_limit`` after which no further start plan begins (one always runs).

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` when the arena meets the best proved bound (the max-live lower bound, or
    ``target + 1`` after an exhausted complete search), else ``heuristic``. ``info``:
    ``trajectory`` (list of ``(seconds, arena)``), ``start``, ``targets`` (list of ``(target,
    outcome)`` with outcome ``"found"``, ``"budget"`` or ``"exhausted"``), ``nodes``,
    ``stopped_by`` (``"bound"``, ``"time_limit"``, ``"max_nodes"``, or ``"range"``: the
    worst-case arena exceeds ``2**62`` bytes and the start plan is returned without a search, so
    that every sum the search forms stays inside int64).

    Raises
    ------
    ParameterError
        (from :meth:`plan`) Unknown priority, a time limit or node limit that is not positive, ...
        (``_parameter_constraints``).

    Examples
    --------
    >>> from planners.examples import exercise_5_1_problem
    >>> TelaMalloc().plan(exercise_5_1_problem()).arena_size
    780
    """

    name = "telamalloc"
    family = "search"
    _parameter_constraints = {
        "time_limit": [POSITIVE_SECONDS],
        "priority": [StrOptions(PRIORITIES), SequenceOf(StrOptions(PRIORITIES))],
        "node_limit": [Interval(Integral, 1, None)],
        "max_nodes": [Interval(Integral, 1, None), None],
        "max_branch": [Interval(Integral, 1, None), None],
        "symmetry": ["boolean"],
        "check_dominance": ["boolean"],
        "start_orders": [START_ORDERS_RULE],
        "start_share": [SHARE],
    }

    def __init__(
        self,
        time_limit: float = 5.0,
        priority: str | tuple[str, ...] = ("width", "contention", "area"),
        node_limit: int = 2000,
        max_nodes: int | None = None,
        max_branch: int | None = None,
        symmetry: bool = True,
        check_dominance: bool = True,
        start_orders: tuple[str, ...] = DEFAULT_START_ORDERS,
        start_share: float = 0.3,
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

    def _solve(self, problem: Problem) -> SolveResult:
        prios = (self.priority,) if isinstance(self.priority, str) else tuple(self.priority)
        st = anytime_start(problem, self.time_limit, self.start_orders, self.start_share)
        deadline, traj, lb = st.deadline, st.trajectory, st.lower_bound
        best_off, best = st.offsets, st.arena
        traj.add(best)
        info: dict = dict(st.info)
        bound = lb
        targets: list[tuple[int, str]] = []
        prios = (self.priority,) if isinstance(self.priority, str) else tuple(self.priority)
        searches = [
            _Search(problem, pr, self.max_branch, self.symmetry, self.check_dominance)
            for pr in prios
        ]
        turn = 0
        budget = int(self.node_limit)
        failed = bound - 1  # highest target that failed on its budget (bound - 1: none yet)
        stopped = "lower_bound"
        if problem.worst_case_arena > 2**62:
            info.update(trajectory=traj.points, targets=[], nodes=0, stopped_by="range")
            return SolveResult(best_off, "optimal" if best <= bound else "heuristic", bound, info)
        while best > bound:
            if time.perf_counter() >= deadline:
                stopped = "time_limit"
                break
            used = sum(x.nodes for x in searches)
            left = None if self.max_nodes is None else self.max_nodes - used
            if left is not None and left <= 0:
                stopped = "max_nodes"
                break
            low = max(bound, failed + 1)
            if low >= best:  # every target below the best failed on its budget: more budget
                failed = bound - 1
                low = bound
                budget *= 2
            target = (low + best - 1) // 2 if best - low > 1 else low
            search = searches[turn % len(searches)]
            turn += 1
            res = search.run(target, budget if left is None else min(budget, left), deadline)
            if isinstance(res, np.ndarray):
                targets.append((target, "found"))
                best_off, best = res, int((res + problem.sizes).max())
                traj.add(best)
            elif res == "exhausted" and not search.truncated:
                targets.append((target, "exhausted"))
                bound = target + 1
            else:
                targets.append((target, res))
                failed = target
                if turn % len(searches) == 0:  # every priority has had this budget
                    budget *= 2
        info.update(
            trajectory=traj.points,
            targets=targets,
            nodes=sum(x.nodes for x in searches),
            stopped_by=stopped if best > bound else "bound",
        )
        return SolveResult(best_off, "optimal" if best <= bound else "heuristic", bound, info)
