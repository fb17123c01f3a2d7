"""Lower bounds on the minimum peak over **all** topological orders, and the graph's cut points.

Every bound here is a number of bytes that no valid operator order of the graph can go below,
under the memory convention of :mod:`.memsim` (activations and graph outputs count; a tensor is
live on the closed range ``[producer step, last consumer step]``, a graph output to the end, an
unread tensor on its producer's step only). Write ``u < v`` when ``u`` is a strict ancestor of
``v`` (a path of tensors leads from ``u`` to ``v``), so ``u`` runs before ``v`` in every order.

Proofs
------
1. **Working set of one operator** (``op``): at the step of ``v`` its inputs are still live (``v``
   reads them) and its outputs are written, so ``peak >= in_bytes(v) + alloc(v)``
   (:meth:`.memsim.MemoryModel.op_lower_bound`).

2. **The cut around one operator** (``cut``): a tensor ``t`` produced by ``p < v`` and either a
   graph output or read by some ``c`` with ``c = v`` or ``v < c`` is live at ``v``'s step in every
   order: ``p`` has run (it is an ancestor) and the reader has not finished before ``v`` (it is
   ``v`` or a descendant), or ``t`` is kept to the end. These tensors are exactly those crossing
   the cut between ``v``'s ancestors and ``v`` with its descendants, so
   ``peak >= W(v) = alloc(v) + sum of such t``. ``W(v) >= in_bytes(v) + alloc(v)`` (each input
   of ``v`` is such a ``t`` with ``c = v``), so this bound is never weaker than 1.

3. **Pairs of incomparable operators** (``pair``): if neither ``u < w`` nor ``w < u``, every
   order runs one of them first. If ``u`` runs first, every tensor produced by ``u`` or one of its
   ancestors that is a graph output or read by ``w`` or a descendant of ``w`` is live at ``w``'s
   step, on top of the tensors of 2 (counted once: those already produced by ancestors of ``w``
   are left out). Calling that ``W(w) + E(u, w)``, every order peaks at
   ``>= min(W(w) + E(u, w), W(u) + E(w, u))``; the bound is the maximum over incomparable pairs.

The result is the maximum of the three (each proof holds for every topological order, hence for
the best one). :func:`order_lower_bound` is never above the brute-force minimum over every
topological order (property test ``tests/test_order_bounds.py``).

Cut points
----------
A **complete cut** is a set ``D`` of operators such that every ``u`` in ``D`` is an ancestor of
every ``w`` outside it. Every topological order then runs exactly ``D`` first (an order that ran
some ``w`` before some ``u`` would break ``u < w``), so the orders of the graph are the
concatenations of independent orders of the segments between consecutive complete cuts. An
operator through which every path passes (an articulation operator: comparable to every other)
gives two complete cuts, just before and just after it. :func:`complete_cuts` finds them all.

Costs: ``ancestor_matrix`` is ``O(n^2)`` bytes of memory and ``O(E * n)`` time; bound 2 adds
``O(#tensors * n)``; bound 3 one ``n x #tensors x n`` matrix product, run only up to
``pair_max_ops`` operators. Above ``cut_max_ops`` operators only bound 1 is computed (``O(n)``)
and :func:`order_bound_details` says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph
from .memsim import MemoryModel

__all__ = [
    "order_lower_bound",
    "order_bound_details",
    "ancestor_matrix",
    "complete_cuts",
    "CUT_MAX_OPS",
    "PAIR_MAX_OPS",
]

#: Largest graph (operators) for the cut bound (an ``n x n`` boolean ancestor matrix).
CUT_MAX_OPS = 4000
#: Largest graph (operators) for the pair bound (an ``n x #tensors x n`` matrix product).
PAIR_MAX_OPS = 1500


def ancestor_matrix(model: MemoryModel) -> np.ndarray:
    """``A[v, u]`` is True iff operator ``u`` is a strict ancestor of ``v`` (operator indices of
    ``model``). numpy bool ``(n, n)``; ``O(E * n)`` time, ``n^2`` bytes."""
    n = model.n
    A = np.zeros((n, n), dtype=bool)
    for v in model.topological():
        row = A[v]
        for p in model.preds[v]:
            row |= A[p]
            row[p] = True
    return A


def _forced(model: MemoryModel, A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(R, P, W)``: ``R[t, v]`` tensor ``t`` is a graph output or has a reader ``c`` with ``c == v``
    or ``v < c``; ``P[t, v]`` its producer is a strict ancestor of ``v``; ``W[v]`` bound 2."""
    n, m = model.n, model.m
    keep = model.keep
    R = np.zeros((m, n), dtype=bool)
    for t in range(m):
        if keep[t]:
            R[t] = True
            continue
        row = R[t]
        for c in model.consumers[t]:
            row |= A[c]
            row[c] = True
    P = A.T[model.producer] if m else np.zeros((0, n), dtype=bool)
    W = model.alloc.copy()
    step = 256  # rows per int64 product: 256 * n * 8 bytes at a time, not m * n * 8
    for lo in range(0, m, step):
        F = (P[lo:lo + step] & R[lo:lo + step]).astype(np.int64)
        W += model.size[lo:lo + step] @ F
    return R, P, W


def order_bound_details(
    graph: Graph | MemoryModel,
    *,
    cut_max_ops: int = CUT_MAX_OPS,
    pair_max_ops: int = PAIR_MAX_OPS,
    ancestors: np.ndarray | None = None,
) -> dict[str, Any]:
    """The three bounds of the module docstring, in bytes, and the largest.

    Returns ``{"bound", "op", "cut", "pair", "skipped", "per_op"}``: ``cut``/``pair`` are ``None``
    when the graph has more operators than ``cut_max_ops``/``pair_max_ops`` (or the pair product
    could lose precision, sizes summing to ``2**53`` bytes or more), and ``skipped`` then says
    which was left out and why (one line); ``bound`` is the maximum of those computed;
    ``per_op`` is the numpy array of ``W(v)`` (bound 2 per operator, bytes live at ``v``'s step
    in every order) or ``None``. ``ancestors``: :func:`ancestor_matrix` when already computed.

    Raises :class:`scheduling.errors.CycleError` for a cyclic graph.
    """
    m = graph if isinstance(graph, MemoryModel) else MemoryModel(graph)
    out: dict[str, Any] = {"op": m.op_lower_bound(), "cut": None, "pair": None, "skipped": None,
                           "per_op": None}
    n = m.n
    if n == 0:
        out["bound"] = 0
        return out
    if n > cut_max_ops:
        out["skipped"] = (f"cut and pair bounds not computed: {n} operators > {cut_max_ops} "
                          "(an n x n ancestor matrix)")
        out["bound"] = out["op"]
        return out
    A = ancestor_matrix(m) if ancestors is None else ancestors
    R, P, W = _forced(m, A)
    out["cut"] = int(W.max())
    out["per_op"] = W
    total = int(m.size.sum()) + int(m.alloc.max())
    if n > pair_max_ops:
        out["skipped"] = f"pair bound not computed: {n} operators > {pair_max_ops}"
    elif total >= 2**53:
        out["skipped"] = "pair bound not computed: sizes sum to 2**53 bytes or more"
    elif m.m:
        # Pincl[u, t]: producer of t is u or an ancestor of u; G[t, w]: bytes of t when it is not
        # already counted in W[w] (producer not an ancestor of w) and is needed at or after w.
        prod = m.producer
        Pincl = A[:, prod].copy()
        Pincl[prod, np.arange(m.m)] = True
        G = np.where(~P & R, m.size[:, None], 0).astype(np.float64)
        E = Pincl.astype(np.float64) @ G  # E[u, w]: extra bytes at w's step when u runs first
        inc = ~(A | A.T)
        np.fill_diagonal(inc, False)
        if inc.any():
            at_w = W[None, :].astype(np.float64) + E  # u first: live at w's step
            pair = np.minimum(at_w, at_w.T)
            out["pair"] = int(round(float(pair[inc].max())))
        else:
            out["pair"] = out["cut"]
    out["bound"] = max(v for v in (out["op"], out["cut"], out["pair"]) if v is not None)
    return out


def order_lower_bound(graph: Graph | MemoryModel, **kw: int) -> int:
    """A lower bound (bytes) on the peak of live bytes of **every** topological order of
    ``graph``: the largest of the working-set, cut and pair bounds (proofs in the module
    docstring). ``kw``: ``cut_max_ops`` / ``pair_max_ops`` of :func:`order_bound_details`.

    >>> from scheduling.generators import random_layered
    >>> g = random_layered(seed=0, n_ops=12)
    >>> from scheduling.schedulers import schedule
    >>> order_lower_bound(g) <= schedule(g, "exact_dp").info["peak_bytes"]
    True
    """
    return int(order_bound_details(graph, **kw)["bound"])


def complete_cuts(model: MemoryModel, A: np.ndarray | None = None) -> list[int]:
    """Sizes ``k`` (``0 < k < n``) of the complete cuts of the graph (module docstring), as prefix
    lengths of ``model.topological()``: every order runs the same first ``k`` operators, those
    of that order's prefix. ``A``: :func:`ancestor_matrix` when already computed.
    ``O(n^2)``."""
    n = model.n
    if n < 2:
        return []
    if A is None:
        A = ancestor_matrix(model)
    pi = np.asarray(model.topological(), dtype=np.int64)
    B = A[pi][:, pi]  # B[i, j]: pi[j] is an ancestor of pi[i]
    B &= np.tri(n, n, -1, dtype=bool)  # keep j < i only: row i is False from the diagonal on
    lead = np.argmin(B, axis=1)  # first j with B[i, j] False: i when all of pi[:i] are ancestors
    suf = np.minimum.accumulate(lead[::-1])[::-1]
    return [k for k in range(1, n) if suf[k] >= k]
