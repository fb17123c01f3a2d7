"""Shared-object planners from graph colouring: ``chaitin`` and ``interval_colouring``.

Both assign every buffer to a **block** (a colour) so that buffers sharing a block are never live at
the same step; a block's size is its largest member (bytes) and the blocks are laid out one after the
other, so the arena is the sum of the block sizes (plus alignment padding). This is the "shared
objects" family of Pisarchyk & Lee (2020); it never beats the best offset plan and is usually above
it, because a block reserves its largest member's bytes for its whole life.

* :class:`Chaitin` -- Chaitin-style simplify / spill / select on the interference graph (seed 002
  section 5.1.2).
* :class:`IntervalColouring` -- the linear-time interval-graph colouring with a min-heap of busy
  blocks from seed 001 section 2 (sort by ``first_used``, release blocks whose ``last_used`` is before
  the new ``first_used``, reuse the largest free block, else open a new one).

Helpers :func:`interference_edges` (the interference graph as an edge array), :func:`max_live_count`
(the clique number of the interval graph) and :func:`layout_blocks` (consecutive block layout) are
shared with :mod:`planners.ilp_blocks`.

Lifetimes are half-open ``[start, end)`` in schedule steps (two buffers interfere iff
``a.start < b.end and b.start < a.end``); the seeds' closed ``[first_used, last_used]`` rule
"``last_used(A) < first_used(B)``" is ``A.end <= B.start`` here. Zero-size buffers take no space:
they are left out of every graph and get offset 0.

References
----------
.. [1] G. J. Chaitin, "Register allocation & spilling via graph coloring", SIGPLAN 1982.
.. [2] Y. Pisarchyk, J. Lee, "Efficient Memory Management for Deep Neural Net Inference", 2020.
"""

from __future__ import annotations

import heapq
import math
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported where used: `import planners` stays light
    import networkx as nx

from .base import Planner, SolveResult
from .errors import ProblemError
from .interference import interference_edges as shared_interference_edges
from .model import INT64_MAX, Problem
from .params import Interval, StrOptions

__all__ = [
    "Chaitin",
    "IntervalColouring",
    "interference_edges",
    "interference_graph",
    "max_live_count",
    "layout_blocks",
    "SPILL_RULES",
]


def interference_edges(problem: Problem) -> np.ndarray:
    """Pairs of buffers live at the same step (the interference graph's edges).

    The edges of :func:`planners.interference.interference_edges` (an ``O(n log n + E)`` sweep) as
    one ``(E, 2)`` array. Zero-size buffers are left out (they never conflict).

    Parameters
    ----------
    problem : Problem
        Half-open lifetimes ``[start, end)`` in steps.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(E, 2)`` of buffer indices ``i < j``, sorted lexicographically.

    Examples
    --------
    >>> p = Problem.from_closed([("a", 0, 1, 8), ("b", 1, 2, 8), ("c", 2, 3, 8)])
    >>> interference_edges(p).tolist()
    [[0, 1], [1, 2]]
    """
    i, j = shared_interference_edges(problem, ignore_zero_size=True)
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    e = np.stack([np.minimum(i, j), np.maximum(i, j)], axis=1).reshape(-1, 2)
    return e[np.lexsort((e[:, 1], e[:, 0]))]


def interference_graph(problem: Problem) -> nx.Graph:
    """The interference graph as a networkx graph on buffer indices ``0..n-1`` (non-zero sizes only).

    Node attribute ``size`` (bytes). ``O(n log n + E)``.
    """
    import networkx as nx  # imported here: `import planners` stays light

    g = nx.Graph()
    for i in np.flatnonzero(problem.sizes > 0).tolist():
        g.add_node(i, size=int(problem.sizes[i]))
    g.add_edges_from(interference_edges(problem).tolist())
    return g


def max_live_count(problem: Problem) -> int:
    """Maximum number of non-zero-size buffers live at one step: the clique number of the interval
    graph, which equals its chromatic number (seed 002 section 5.1.2, ``omega(G) = max_t |Active(t)|``).

    ``O(n log n)``: a sort of the ``2n`` end points, ends before starts at equal times.

    >>> max_live_count(Problem.from_closed([("a", 0, 1, 8), ("b", 1, 2, 8), ("c", 2, 3, 8)]))
    2
    """
    idx = problem.sizes > 0
    if not idx.any():
        return 0
    t = np.concatenate([problem.ends[idx], problem.starts[idx]])
    d = np.concatenate([-np.ones(int(idx.sum()), np.int64), np.ones(int(idx.sum()), np.int64)])
    order = np.lexsort((d, t))  # at equal times -1 (end) sorts first
    return int(np.cumsum(d[order]).max())


def layout_blocks(problem: Problem, block_of: np.ndarray, order: np.ndarray | None = None):
    """Lay shared blocks out one after the other and give each buffer its block's offset.

    Parameters
    ----------
    problem : Problem
    block_of : int array, shape ``(n,)``
        Block index of each buffer (``-1`` for zero-size buffers, which get offset 0). Buffers of one
        block must never be live at the same step (checked later by the plan validator).
    order : int array, optional
        Order in which blocks are laid out (default: block index order).

    Returns
    -------
    offsets : int64 array, shape ``(n,)`` (bytes).
    block_sizes : int64 array, shape ``(m,)``: largest member size per block (bytes).

    Each block starts at the next multiple of the lcm of its members' alignments; with alignment 1
    the arena is exactly ``block_sizes.sum()``. ``O(n + m)``. The layout is computed in Python
    integers: with alignments that are not powers of two the lcm padding can exceed the problem's
    worst-case arena, and a layout whose top exceeds ``2**63 - 1`` bytes raises
    :class:`ProblemError` (never a wrapped offset).
    """
    block_of = np.asarray(block_of, dtype=np.int64)
    n = problem.n
    offsets = np.zeros(n, np.int64)
    used = block_of >= 0
    m = int(block_of.max()) + 1 if used.any() else 0
    sizes = np.zeros(m, np.int64)
    np.maximum.at(sizes, block_of[used], problem.sizes[used])
    align = [1] * m  # Python ints: an lcm of alignments may exceed int64
    for b, a in zip(block_of[used].tolist(), problem.alignments[used].tolist(), strict=True):
        align[b] = math.lcm(align[b], a)
    start = [0] * m
    top = 0
    for b in range(m) if order is None else np.asarray(order).tolist():
        a = align[b]
        top = -(-top // a) * a
        start[b] = top
        top += int(sizes[b])
    if top > INT64_MAX:
        raise ProblemError(
            f"problem {problem.name!r}: the shared-block layout needs {top} bytes (blocks aligned "
            f"to the lcm of their members' alignments), above 2**63 - 1 = {INT64_MAX} bytes, the "
            "largest offset int64 arithmetic represents"
        )
    offsets[used] = np.asarray(start, np.int64)[block_of[used]]
    return offsets, sizes


# -- Chaitin ---------------------------------------------------------------------------------------


def _spill_cost_degree(size: int, degree: int) -> float:
    """Chaitin's rule: spill the node of least cost per degree (cost = the bytes of its own block)."""
    return size / max(degree, 1)


def _spill_max_degree(size: int, degree: int) -> float:
    """Spill the node of highest degree (ties: smallest size)."""
    return -degree + size * 1e-18


#: Spill-candidate rules: ``rule(size_bytes, current_degree) -> key``; the smallest key is spilled.
SPILL_RULES = {"cost_degree": _spill_cost_degree, "max_degree": _spill_max_degree}


class Chaitin(Planner):
    """Chaitin-style colouring of the interference graph into shared blocks (seed 002 sec. 5.1.2).

    1. **simplify**: repeatedly remove a node of current degree ``< k`` (push it on a stack);
    2. **spill**: when every remaining node has degree ``>= k``, remove the node chosen by
       ``spill_rule`` (default ``"cost_degree"``: least ``size / degree``, Chaitin's cost per
       degree where the cost of a spill is the bytes of the private block it gets); a spilled
       buffer gets its **own new block**;
    3. **select**: pop the stack and give each node one of the ``k`` colours not used by its already
       coloured neighbours (one always exists, as it had degree ``< k`` when removed). Among those
       colours the one whose block grows least is chosen (ties: the lowest colour) -- a size-aware
       choice, since a block is sized by its largest member.

    Blocks (used colours, then spill blocks) are laid out consecutively; arena = sum of block sizes
    (bytes, plus alignment padding). Zero-size buffers get offset 0.

    Parameters
    ----------
    k : int or None
        Number of colours; ``None`` = the clique number (max live count, :func:`max_live_count`),
        which an interval graph can always be coloured with, though simplify may still spill.
    spill_rule : {"cost_degree", "max_degree"} or callable
        ``rule(size, degree) -> key``; the remaining node with the smallest key is spilled.

    Raises
    ------
    ParameterError
        (from :meth:`plan`) ``k < 1`` or an unknown spill rule.
    ProblemError
        A block layout above ``2**63 - 1`` bytes (:func:`layout_blocks`).

    Notes
    -----
    ``O((n + E) log n)``: simplify uses a queue and spill candidates a lazily updated heap.
    Interference graph from :func:`interference_edges`. Status ``heuristic``.

    References
    ----------
    G. J. Chaitin, "Register allocation & spilling via graph coloring", SIGPLAN 1982; Pisarchyk & Lee
    2020 (shared objects).
    """

    name = "chaitin"
    family = "colouring"
    _parameter_constraints = {
        "k": [Interval(Integral, 1, None), None],
        "spill_rule": [StrOptions(lambda: SPILL_RULES), callable],
    }

    #: Seconds per interfering pair, about twice the rate measured on a 2-core machine at a load
    #: of 6 (3.9 s for the 484,440 pairs of a 10^4-buffer random problem, 8e-6 s per pair): the
    #: Python adjacency lists and heap dominate.
    SECONDS_PER_PAIR = 1.6e-5

    def __init__(self, k: int | None = None, spill_rule: str = "cost_degree") -> None:
        self.k = k
        self.spill_rule = spill_rule

    @classmethod
    def estimated_seconds(cls, problem: Problem) -> float:
        """Estimated wall-clock seconds to plan ``problem``: its interfering pairs
        (:func:`planners.model_size.interference_pairs`, ``O(n log n)``, nothing built) times
        :data:`SECONDS_PER_PAIR`. :func:`planners.warmstart.best_heuristic` does not start a
        heuristic whose estimate runs past its deadline."""
        from .model_size import interference_pairs

        return interference_pairs(problem) * cls.SECONDS_PER_PAIR

    def _solve(self, problem: Problem) -> SolveResult:
        rule = self.spill_rule
        if isinstance(rule, str):
            rule = SPILL_RULES[rule]
        k = max(1, max_live_count(problem)) if self.k is None else int(self.k)
        nodes = np.flatnonzero(problem.sizes > 0).tolist()
        edges = interference_edges(problem)
        adj: dict[int, list[int]] = {i: [] for i in nodes}
        for a, b in edges.tolist():
            adj[a].append(b)
            adj[b].append(a)
        size = problem.sizes.tolist()
        degree = {i: len(adj[i]) for i in nodes}
        removed: set[int] = set()
        stack: list[int] = []
        spilled: list[int] = []
        low = [i for i in nodes if degree[i] < k]  # simplify work list (index order)
        in_low = set(low)
        low.reverse()  # pop() takes the lowest index first
        heap = [(rule(size[i], degree[i]), i, degree[i]) for i in nodes]
        heapq.heapify(heap)

        def remove(v: int) -> None:
            removed.add(v)
            for u in adj[v]:
                if u in removed:
                    continue
                degree[u] -= 1
                if degree[u] < k and u not in in_low:
                    in_low.add(u)
                    low.append(u)
                else:
                    heapq.heappush(heap, (rule(size[u], degree[u]), u, degree[u]))

        while len(removed) < len(nodes):
            if low:
                v = low.pop()
                if v in removed:
                    continue
                stack.append(v)
                remove(v)
                continue
            while True:  # stuck: spill the best candidate (lazy heap, skip stale entries)
                _, v, d = heapq.heappop(heap)
                if v not in removed and d == degree[v]:
                    break
            spilled.append(v)
            remove(v)

        colour = {}
        block_size = [0] * k
        for v in reversed(stack):
            taken = {colour[u] for u in adj[v] if u in colour}
            best, best_key = -1, None
            for c in range(k):
                if c in taken:
                    continue
                key = (max(0, size[v] - block_size[c]), c)
                if best_key is None or key < best_key:
                    best, best_key = c, key
            colour[v] = best
            block_size[best] = max(block_size[best], size[v])
        # renumber used colours by first use in colour order, then one block per spilled node
        used = sorted({c for c in colour.values()})
        remap = {c: j for j, c in enumerate(used)}
        block_of = np.full(problem.n, -1, np.int64)
        for v, c in colour.items():
            block_of[v] = remap[c]
        for j, v in enumerate(spilled):
            block_of[v] = len(used) + j
        offsets, sizes = layout_blocks(problem, block_of)
        return SolveResult(
            offsets,
            "heuristic",
            info={"k": k, "blocks": int(sizes.size), "spilled": len(spilled), "edges": len(edges)},
        )


# -- interval colouring (seed 001) -------------------------------------------------------------


class IntervalColouring(Planner):
    """Interval-graph colouring with a min-heap of busy blocks (seed 001 section 2).

    Buffers are taken in order of ``first_used`` (``start``; ties by problem order). A min-heap keyed
    by ``last_used`` holds the blocks in use. For each new buffer, every block whose holder's
    ``last_used < first_used(new)`` (half-open: ``end <= start``) is popped and becomes free; if no
    block is free a new block is opened, else the **largest** free block is reused (seed 001: "复用堆
    顶最大块"). A block's size grows to its largest member. Blocks are laid out consecutively in
    the order they were opened; arena = sum of block sizes (bytes, plus alignment padding).

    The number of blocks equals the max live count (the greedy colouring of an interval graph in
    start order is optimal in colours), but not the minimal total bytes.

    Notes
    -----
    ``O(n log n)`` (a sort, a busy min-heap and a free max-heap by block size). Zero-size buffers get
    offset 0. Status ``heuristic``. No parameters. Raises :class:`ProblemError` when the block
    layout exceeds ``2**63 - 1`` bytes (:func:`layout_blocks`).

    References
    ----------
    Seed 001 section 2; Pisarchyk & Lee 2020 ("shared objects").
    """

    name = "interval_colouring"
    family = "colouring"
    _parameter_constraints: dict = {}  # no parameters

    def _solve(self, problem: Problem) -> SolveResult:
        block_of = interval_colouring_blocks(problem)
        offsets, sizes = layout_blocks(problem, block_of)
        return SolveResult(offsets, "heuristic", info={"blocks": int(sizes.size)})


def interval_colouring_blocks(problem: Problem) -> np.ndarray:
    """Block index per buffer from seed 001's min-heap interval colouring (``-1`` for zero sizes).

    Returns an int64 array of shape ``(n,)``. ``O(n log n)``. See :class:`IntervalColouring`.
    """
    idx = np.flatnonzero(problem.sizes > 0)
    order = idx[np.argsort(problem.starts[idx], kind="stable")]
    block_of = np.full(problem.n, -1, np.int64)
    starts, ends, sizes = problem.starts.tolist(), problem.ends.tolist(), problem.sizes.tolist()
    busy: list[tuple[int, int]] = []  # (end of current holder, block)
    free: list[tuple[int, int]] = []  # (-block size, block): a max-heap by size, ties: lowest block
    bsize: list[int] = []
    for i in order.tolist():
        while busy and busy[0][0] <= starts[i]:
            _, b = heapq.heappop(busy)
            heapq.heappush(free, (-bsize[b], b))
        if free:
            _, b = heapq.heappop(free)
            bsize[b] = max(bsize[b], sizes[i])
        else:
            b = len(bsize)
            bsize.append(sizes[i])
        block_of[i] = b
        heapq.heappush(busy, (ends[i], b))
    return block_of
