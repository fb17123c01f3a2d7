"""The interference graph of an allocation problem: which buffers are live at the same time.

Two buffers interfere iff their half-open lifetimes ``[start, end)`` intersect
(``a.start < b.end and b.start < a.end``); interfering buffers need disjoint address ranges. This is
the conflict graph of seed 002 section 5.1.2 (vertices = tensors, edges = overlapping lifetimes) and
the interval graph of seed 000 section 5.

The edges are built by a sweep over the buffers sorted by start: the buffers overlapping buffer ``i``
that start at or after it are exactly the ones whose start lies in ``[start_i, end_i)``, i.e. a
contiguous slice of the sorted order found with one ``searchsorted``. Every edge is emitted once and
the whole construction is vectorised with numpy: ``O(n log n + E)`` time and memory for ``E`` edges.

Public functions (stable signatures, used by the greedy engine and the colouring planners):

* :func:`interference_edges` -- ``(i, j)`` index arrays, each edge once, ``i < j``.
* :func:`interference_csr` -- symmetric adjacency in CSR form ``(indptr, indices)``.
* :func:`interference_degrees` -- the degree (number of conflicts) of every buffer.
* :func:`interference_graph` -- a :class:`networkx.Graph` with buffer attributes.
"""

from __future__ import annotations

import numpy as np

from .model import Problem

__all__ = [
    "interference_edges",
    "sweep_pairs",
    "interference_csr",
    "interference_degrees",
    "interference_graph",
]


def _candidates(problem: Problem, ignore_zero_size: bool) -> np.ndarray:
    if ignore_zero_size:
        return np.flatnonzero(problem.sizes > 0)
    return np.arange(problem.n)


def sweep_pairs(problem: Problem, ignore_zero_size: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The interfering pairs in sweep order, unsorted, in the smallest index type.

    Same pairs as :func:`interference_edges` (each once, but not ordered within a pair nor sorted)
    as int32 arrays when ``n < 2**31``: the cheap form for engines that re-sort the edges anyway
    (the greedy engine directs them by placement rank). ``O(n log n + E)`` time and memory.
    """
    idx_type = np.int32 if problem.n < 2**31 else np.int64
    cand = _candidates(problem, ignore_zero_size)
    starts = problem.starts[cand]
    ends = problem.ends[cand]
    order = np.argsort(starts, kind="stable")
    # first sorted position whose start is >= the end of the buffer at each position
    hi = np.searchsorted(starts[order], ends[order], side="left")
    pos = np.arange(cand.size)
    counts = hi - pos - 1  # >= 0 because start < end
    total = int(counts.sum()) if cand.size else 0
    if total == 0:
        return np.zeros(0, idx_type), np.zeros(0, idx_type)
    # Neighbour positions: src + 1 + (rank of the edge within its source block).
    src_pos = np.repeat(pos.astype(idx_type), counts)
    block_start = np.cumsum(counts) - counts
    dst_pos = (
        np.arange(total, dtype=np.int64) - np.repeat(block_start, counts) + 1 + src_pos
    ).astype(idx_type)
    sorted_cand = cand[order].astype(idx_type)
    return sorted_cand[src_pos], sorted_cand[dst_pos]


def interference_edges(
    problem: Problem, ignore_zero_size: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs of buffers whose half-open lifetimes ``[start, end)`` intersect.

    Parameters
    ----------
    problem : Problem
        ``n`` buffers with half-open lifetimes in schedule steps.
    ignore_zero_size : bool, default False
        Leave out buffers of size 0 bytes (they take no address space, so never conflict in a plan).
        By default the graph is the pure time-overlap graph over all buffers.

    Returns
    -------
    i, j : numpy int64 arrays of shape ``(E,)``
        Buffer indices (problem order) of the ``E`` interfering pairs, each pair once with
        ``i < j``, sorted by ``(i, j)``.

    Notes
    -----
    Sweep over the buffers sorted by start (seed 001's interval sweep): for the buffer at sorted
    position ``p`` the later-starting buffers that overlap it are positions ``p + 1 .. q - 1`` where
    ``q`` is the first position whose start is ``>= end``. Runs in ``O(n log n + E)`` time, fully in
    numpy. ``E`` can be up to ``n (n - 1) / 2`` (all buffers live at once).

    Examples
    --------
    >>> p = Problem.from_closed([("a", 0, 1, 8), ("b", 1, 2, 8), ("c", 3, 3, 8)])
    >>> interference_edges(p)
    (array([0]), array([1]))
    """
    a, b = sweep_pairs(problem, ignore_zero_size)
    i = np.minimum(a, b).astype(np.int64)
    j = np.maximum(a, b).astype(np.int64)
    srt = np.lexsort((j, i))
    return i[srt], j[srt]


def interference_csr(
    problem: Problem, ignore_zero_size: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric adjacency of the interference graph in CSR form.

    Returns
    -------
    indptr : numpy int64 array, shape ``(n + 1,)``
    indices : numpy int64 array, shape ``(2 E,)``
        The neighbours of buffer ``k`` are ``indices[indptr[k]:indptr[k + 1]]`` (sorted ascending).

    ``O(n log n + E)`` time. See :func:`interference_edges` for the parameters.
    """
    i, j = interference_edges(problem, ignore_zero_size)
    src = np.concatenate([i, j])
    dst = np.concatenate([j, i])
    srt = np.lexsort((dst, src))
    counts = np.bincount(src, minlength=problem.n)
    indptr = np.zeros(problem.n + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, dst[srt]


def interference_degrees(problem: Problem, ignore_zero_size: bool = False) -> np.ndarray:
    """Number of buffers each buffer interferes with (its degree), int64 array of shape ``(n,)``.

    Computed without materialising the edges: the buffers overlapping ``i`` are all buffers minus
    those that end at or before ``start_i`` minus those that start at or after ``end_i`` minus ``i``
    itself. Two binary searches per buffer, ``O(n log n)``. Ignored zero-size buffers get degree 0.

    >>> p = Problem.from_closed([("a", 0, 1, 8), ("b", 1, 2, 8), ("c", 0, 3, 8)])
    >>> interference_degrees(p)
    array([2, 2, 2])
    """
    cand = _candidates(problem, ignore_zero_size)
    deg = np.zeros(problem.n, np.int64)
    if cand.size == 0:
        return deg
    starts = problem.starts[cand]
    ends = problem.ends[cand]
    ended_before = np.searchsorted(np.sort(ends), starts, side="right")
    start_after = cand.size - np.searchsorted(np.sort(starts), ends, side="left")
    deg[cand] = cand.size - ended_before - start_after - 1
    return deg


def interference_graph(problem: Problem, ignore_zero_size: bool = False):
    """The interference graph as a :class:`networkx.Graph`.

    Nodes are buffer indices ``0 .. n-1`` (problem order; ignored zero-size buffers are still nodes,
    isolated) with attributes ``id``, ``start``, ``end`` (half-open, steps), ``size`` (bytes) and
    ``alignment`` (bytes); an edge joins two buffers whose lifetimes intersect. Building the
    networkx graph costs ``O(n + E)`` Python objects; use :func:`interference_csr` for large
    problems.
    """
    import networkx as nx

    g = nx.Graph(name=problem.name)
    g.add_nodes_from(
        (
            k,
            {"id": b.id, "start": b.start, "end": b.end, "size": b.size, "alignment": int(a)},
        )
        for k, (b, a) in enumerate(zip(problem.buffers, problem.alignments.tolist(), strict=True))
    )
    i, j = interference_edges(problem, ignore_zero_size)
    g.add_edges_from(zip(i.tolist(), j.tolist(), strict=True))
    return g
