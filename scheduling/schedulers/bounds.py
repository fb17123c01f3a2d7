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

4. **The least live set around one operator** (``closure``): when ``v`` runs, the operators
   already run form a down-set ``D`` (closed under predecessors) with every strict ancestor of
   ``v`` in ``D`` and neither ``v`` nor any descendant of ``v`` in it. The live bytes at ``v``'s
   step are then ``alloc(v) + live(D)``, where ``live(D)`` sums the tensors produced in ``D``
   that are graph outputs or have a reader outside ``D`` (unread tensors died at their
   producer's step). So ``peak >= C(v) = alloc(v) + min over such D of live(D)``. ``D = anc(v)``
   is one such set, and every ``D`` holds the tensors counted by ``W(v)`` (produced by
   ancestors, read by ``v`` or a descendant), so ``W(v) <= C(v) <= alloc(v) + live(anc(v))``:
   never weaker than 2. The minimum is a maximum-weight closure problem (Picard, "Maximal
   closure of a graph and applications to combinatorial problems", Management Science 1976):
   writing ``x_u = [u in D]`` and ``y_t = [every reader of t in D]``, ``live(D) = sum over
   produced tensors of size(t) * (x_prod(t) - y_t)`` with ``y_t <= x_c`` for each reader ``c``
   (a tensor all of whose readers ran is freed; the producer of a read tensor precedes its
   readers, so ``y_t = 1`` implies ``x_prod(t) = 1``), graph outputs having no ``y``. It is one
   minimum s-t cut (OR-Tools' max-flow): source arcs of capacity ``size(t)`` to ``y_t``, sink
   arcs of capacity ``sum of v's read or kept outputs`` from ``x_v``, infinite arcs ``y_t ->
   x_c`` and ``x_u -> x_p`` for each predecessor ``p``, and infinite arcs forcing ``anc(v)``
   into and ``v`` with its descendants out of the source side; then ``live(D*) = cut - sum of
   the source arcs``. :func:`closure_bounds` also takes a set ``S`` forced into ``D`` (the
   operators an exact search already ran): ``C_S(v)`` then bounds every order that runs ``S``
   before ``v``.

The result is the maximum of the four (each proof holds for every topological order, hence for
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
``pair_max_ops`` operators; bound 4 one max-flow on ``n + #tensors`` nodes and
``O(E + #tensor uses)`` arcs per operator, but only for operators whose upper value
``alloc(v) + live(anc(v))`` is above the best bound found so far (the others cannot raise it),
up to ``closure_max_ops`` operators. Above ``cut_max_ops`` operators bound 1 is computed
(``O(n)``) and bound 4 at a sample of operators (:func:`sampled_closure_bound`, one max-flow and
two graph searches each), and :func:`order_bound_details` says so.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..graph import Graph
from .memsim import MemoryModel

__all__ = [
    "order_lower_bound",
    "order_bound_details",
    "ancestor_matrix",
    "complete_cuts",
    "closure_bounds",
    "closure_network",
    "sampled_closure_bound",
    "sample_operators",
    "CUT_MAX_OPS",
    "CLOSURE_SAMPLE",
    "PAIR_MAX_OPS",
    "CLOSURE_MAX_OPS",
]

#: Largest graph (operators) for the cut bound (an ``n x n`` boolean ancestor matrix).
CUT_MAX_OPS = 4000
#: Largest graph (operators) for the pair bound (an ``n x #tensors x n`` matrix product).
PAIR_MAX_OPS = 1500
#: Largest graph (operators) for the closure bound (one max-flow per operator that can raise it).
CLOSURE_MAX_OPS = 4000


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


#: Engines of the order decision's flows and budget search (:class:`ClosureCut`,
#: :class:`.budget_search.BudgetSearch`).
ENGINES = ("auto", "compiled", "python")


def compiled_module():
    """The compiled engine ``scheduling._budget`` (``scheduling/_ext/_budget.c``), or ``None``
    when it is not built."""
    try:
        from .. import _budget
    except ImportError:  # pragma: no cover - built by `pip install -e .`
        return None
    return _budget


def resolve_engine(engine: str) -> str:
    """``"compiled"`` or ``"python"`` for ``engine`` (:data:`ENGINES`; ``"auto"``: compiled
    when built), by the planners' rule (:func:`planners.base.pick_engine`).

    Raises ValueError for an unknown engine, ImportError for ``"compiled"`` when
    ``scheduling._budget`` is not built."""
    from planners.base import pick_engine

    return pick_engine(engine, ENGINES, "compiled", compiled_module, "scheduling._budget")



def closure_network(model: MemoryModel) -> dict[str, Any]:
    """The flow network of bound 4 (module docstring), without any forcing: arrays ``tails``,
    ``heads``, ``caps`` (int64; node 0 is the source, 1 the sink, ``2 + u`` operator ``u``,
    ``2 + n + j`` the ``j``-th freeable tensor of ``free``), then ``n`` arcs source ->
    operator from ``force0`` on and ``n`` arcs operator -> sink from ``ban0`` on, capacity 0
    (set to ``inf`` to force an operator into or out of the set), ``pos`` (the sum of the
    source arcs, bytes) and ``inf``. ``O(n + E + #tensor uses)``, no ancestor matrix.

    Raises ValueError when the capacities could overflow int64 (outputs summing to ``2**59``
    bytes or more)."""
    n = model.n
    size = model.size
    free = [t for t in range(model.m) if not model.keep[t] and model.consumers[t]]
    total = int(size.sum())
    if 2 * total + 1 >= 2**60:
        raise ValueError(f"closure bound: operator outputs sum to {total} bytes, too many "
                         "for int64 flow capacities")
    inf = 2 * total + 1
    pos = int(size[free].sum()) if free else 0  # sum of the source arcs
    # the arcs: u -> each predecessor (inf), source -> tensor (its bytes), tensor -> each reader
    # (inf), u -> sink (alloc - dead, when not 0), then the forcing arcs
    i64 = np.int64
    plen = np.fromiter((len(p) for p in model.preds), i64, n)
    pred_heads = np.fromiter((p for ps in model.preds for p in ps), i64, int(plen.sum()))
    nf = len(free)
    free_a = np.asarray(free, i64)
    clen = model.n_consumers[free_a] if nf else np.zeros(0, i64)
    readers = np.fromiter((c for t in free for c in model.consumers[t]), i64, int(clen.sum()))
    w = model.alloc - model.dead
    wu = np.flatnonzero(w)
    ops = np.arange(n, dtype=i64)
    tails_a = np.concatenate([np.repeat(2 + ops, plen), np.zeros(nf, i64),
                              np.repeat(2 + n + np.arange(nf, dtype=i64), clen), 2 + wu])
    heads_a = np.concatenate([2 + pred_heads, 2 + n + np.arange(nf, dtype=i64), 2 + readers,
                              np.ones(wu.size, i64)])
    caps_a = np.concatenate([np.full(plen.sum(), inf, i64), size[free_a].astype(i64),
                             np.full(readers.size, inf, i64), w[wu].astype(i64)])
    force0 = int(tails_a.size)
    return {
        "tails": np.concatenate([tails_a, np.zeros(n, i64), 2 + ops]),
        "heads": np.concatenate([heads_a, 2 + ops, np.ones(n, i64)]),
        "caps": np.concatenate([caps_a, np.zeros(2 * n, i64)]),
        "force0": force0, "ban0": force0 + n, "pos": pos, "inf": inf, "free": free,
    }


def _reach(adj: list[list[int]], v: int, n: int) -> np.ndarray:
    """Operators reachable from ``v`` along ``adj`` (``v`` excluded unless on a cycle): numpy
    bool ``(n,)``. ``O(n + E)``."""
    seen = bytearray(n)
    stack = list(adj[v])
    for u in stack:
        seen[u] = 1
    while stack:
        u = stack.pop()
        for w in adj[u]:
            if not seen[w]:
                seen[w] = 1
                stack.append(w)
    return np.frombuffer(bytes(seen), dtype=bool).copy()


#: Operators whose closure bound :func:`order_bound_details` computes above ``closure_max_ops``.
CLOSURE_SAMPLE = 8


def sample_operators(model: MemoryModel, k: int) -> list[int]:
    """``k`` operators spread over the graph for :func:`sampled_closure_bound`: the ASAP levels
    (:meth:`.memsim.MemoryModel.levels`) split into ``k`` equal ranges, and in each the operator
    with the largest working set ``in_bytes + alloc`` (lowest index on ties); listed from the
    middle range outwards (the middle of a layered graph holds the most live bytes, so a
    sample cut short by a deadline keeps its likely strongest operators). Deterministic,
    ``O(n + E)``."""
    n = model.n
    if n == 0 or k <= 0:
        return []
    lev = model.levels()
    top = int(lev.max()) + 1
    bucket = (lev * min(k, top)) // top
    ws = model.in_bytes + model.alloc
    order = np.lexsort((np.arange(n), -ws, bucket))  # by bucket, largest working set first
    first = np.ones(n, bool)
    first[1:] = bucket[order[1:]] != bucket[order[:-1]]
    picked = order[first]  # one per range, by range
    mid = (picked.size - 1) / 2
    return [int(picked[i]) for i in sorted(range(picked.size), key=lambda i: (abs(i - mid), i))]


def sampled_closure_bound(model: MemoryModel, ops: list[int] | None = None,
                          sample: int = CLOSURE_SAMPLE,
                          deadline: float | None = None) -> tuple[int, dict[int, int]]:
    """Bound 4 (``closure``, Picard's minimum closure; module docstring) at some operators
    only, without the ``n x n`` ancestor matrix.

    Parameters
    ----------
    model : MemoryModel
    ops : iterable of int, optional
        Operator indices (default: :func:`sample_operators` of ``sample``).
    sample : int, default :data:`CLOSURE_SAMPLE`
        How many operators :func:`sample_operators` picks when ``ops`` is not given.
    deadline : float, optional
        A :func:`time.perf_counter` value (below).

    Returns
    -------
    best : int
        ``max over the operators of C(v)`` (bytes; 0 for no operator): a lower bound on the
        peak of live bytes of every topological order, under the closed ``[producer step, last
        reader step]`` lifetimes of :mod:`.memsim`.
    values : dict int -> int
        ``C(v)`` (bytes) per operator evaluated.

    Every ``C(v)`` is a lower bound on the peak of every order (module docstring, proof 4), so
    their maximum over any set of operators is one too, weaker than :func:`closure_bounds` at
    most by the operators left out. ``ops``: the operators (default
    :func:`sample_operators` of ``sample``). Each one costs two graph searches (its ancestors
    ``a`` and descendants, ``O(n + E)`` in Python), ``O(n + #tensor uses)`` numpy work and one
    OR-Tools max-flow on the operators incomparable to ``v`` only: the ancestors' part of
    ``live(D)`` is fixed (their read or kept outputs, less the tensors all of whose readers
    are ancestors), a tensor with a reader among ``v`` and its descendants is never freed
    before ``v``, and the network of bound 4 restricted to the rest decides the others (about
    0.05 s per operator at 20,000 operators of ``moccasin_layered``). The same values as
    :class:`ClosureCut` (tested). ``deadline`` (a
    :func:`time.perf_counter` value): no operator but the first is started after it (the
    values so far are kept; a time-limited scheduler's set-up).

    Raises ValueError when the sizes could overflow int64 capacities (:func:`closure_network`).
    """
    from ortools.graph.python import max_flow

    n = model.n
    ops = sample_operators(model, sample) if ops is None else list(ops)
    if n == 0 or not ops:
        return 0, {}
    total = int(model.size.sum())
    if 2 * total + 1 >= 2**60:
        raise ValueError(f"closure bound: operator outputs sum to {total} bytes, too many "
                         "for int64 flow capacities")
    inf = 2 * total + 1
    i64 = np.int64
    size, keep = model.size, model.keep
    w = (model.alloc - model.dead).astype(i64)  # bytes of an operator's read or kept outputs
    has = model.n_consumers > 0
    freeable = has & ~keep
    t_has = np.flatnonzero(has)
    ptr = model._cons_ptr[:-1][has]
    t_of = np.repeat(np.arange(model.m, dtype=i64), model.n_consumers)  # tensor of each use
    readers = model._cons_flat
    plen = np.fromiter((len(p) for p in model.preds), i64, n)
    e_u = np.repeat(np.arange(n, dtype=i64), plen)
    e_p = np.fromiter((p for ps in model.preds for p in ps), i64, int(plen.sum()))
    vals: dict[int, int] = {}
    for v in ops:
        if vals and deadline is not None and time.perf_counter() >= deadline:
            break  # (the first operator always: one max-flow on the incomparable part)
        fin = _reach(model.preds, v, n)  # forced into D: the ancestors
        out = _reach(model.succs, v, n)  # kept out: v and its descendants
        out[v] = True
        free = ~(fin | out)
        # per tensor with readers: one reader out of D (never freed before v), all in fin
        any_out = np.zeros(model.m, bool)
        all_in = np.zeros(model.m, bool)
        if readers.size:
            any_out[t_has] = np.logical_or.reduceat(out[readers], ptr)
            all_in[t_has] = np.logical_and.reduceat(fin[readers], ptr)
        fixed = int(w[fin].sum()) - int(size[freeable & all_in].sum())
        rel = freeable & ~any_out & ~all_in  # freed iff every reader in the free part runs
        rel_t = np.flatnonzero(rel)
        pos = int(size[rel_t].sum())
        if not rel_t.size and not free.any():
            vals[int(v)] = int(model.alloc[v]) + fixed
            continue
        # the network of the free part only: 0 source, 1 sink, free operators, relevant tensors
        f_ops = np.flatnonzero(free)
        node = np.full(n, -1, i64)
        node[f_ops] = 2 + np.arange(f_ops.size, dtype=i64)
        tnode = np.full(model.m, -1, i64)
        tnode[rel_t] = 2 + f_ops.size + np.arange(rel_t.size, dtype=i64)
        ke = free[e_u] & free[e_p]  # closure inside the free part
        ku = rel[t_of] & free[readers]  # a relevant tensor -> each of its free readers
        ws = f_ops[w[f_ops] > 0]
        tails = np.concatenate([node[e_u[ke]], np.zeros(rel_t.size, i64), tnode[t_of[ku]],
                                node[ws]])
        heads = np.concatenate([node[e_p[ke]], tnode[rel_t], node[readers[ku]],
                                np.ones(ws.size, i64)])
        caps = np.concatenate([np.full(int(ke.sum()), inf, i64), size[rel_t].astype(i64),
                               np.full(int(ku.sum()), inf, i64), w[ws]])
        cut = 0
        if tails.size:
            f = max_flow.SimpleMaxFlow()
            f.add_arcs_with_capacity(tails.astype(np.int32), heads.astype(np.int32), caps)
            status = f.solve(0, 1)
            if status != f.OPTIMAL:
                raise ValueError(f"closure bound: max-flow status {status} at operator {v}")
            cut = int(f.optimal_flow())
        vals[int(v)] = int(model.alloc[v]) + fixed + cut - pos
    return max(vals.values(), default=0), vals

class ClosureCut:
    """Bound 4 of the module docstring (``closure``) for one graph: the least live bytes at an
    operator's step over every set of operators that can have run before it, by one minimum cut.

    The flow network (module docstring, bound 4) is built once; :meth:`value` sets the forcing
    arcs of one operator (and of a forced set ``S``) and solves it: with the compiled engine
    ``scheduling._budget.Net`` (Dinic's algorithm, ``engine="compiled"``) or OR-Tools'
    ``SimpleMaxFlow`` (push-relabel, ``engine="python"``, the reference). The two sides of a
    minimum cut that :meth:`value` returns (the smallest and the largest source side) are unique,
    so both engines give the same values and sets (``tests/test_budget_engine.py``).

    Parameters
    ----------
    model : MemoryModel
    ancestors : numpy bool array ``(n, n)``
        :func:`ancestor_matrix` of ``model``.
    engine : {"auto", "compiled", "python"}, default "auto"
        ``"auto"``: ``"compiled"`` when ``scheduling._budget`` is built.

    Attributes
    ----------
    upper : numpy int64 array ``(n,)``
        ``alloc(v) + live(anc(v))`` (bytes): ``C(v)`` never exceeds it (``D = anc(v)``).

    Raises
    ------
    ValueError
        Capacities could overflow int64 (the operators' outputs sum to ``2**60`` bytes or more),
        or an unknown ``engine``.
    ImportError
        ``engine="compiled"`` but ``scheduling._budget`` is not built.
    """

    def __init__(self, model: MemoryModel, ancestors: np.ndarray, engine: str = "auto") -> None:
        self.engine = resolve_engine(engine)
        n, A = model.n, ancestors
        size = model.size
        net = closure_network(model)
        tails, heads, caps = net["tails"], net["heads"], net["caps"]
        self.inf, self.pos = net["inf"], net["pos"]
        self.force0, self.ban0 = net["force0"], net["ban0"]
        free = net["free"]
        self.model, self.A, self.n = model, A, n
        self.cnet = None  # the compiled network (engine "compiled")
        self.flow = None  # OR-Tools' (engine "python")
        if self.engine == "compiled":
            self.cnet = compiled_module().Net(
                n, np.ascontiguousarray(A, dtype=bool), np.ascontiguousarray(model.alloc, np.int64),
                self.pos, self.inf, tails, heads, caps, self.force0, self.ban0)
        else:
            from ortools.graph.python import max_flow

            # arc ids of the forcing arcs per operator, and capacities to set them to
            self._force_arcs = (self.force0 + np.arange(n)).astype(np.int32)
            self._ban_arcs = (self.ban0 + np.arange(n)).astype(np.int32)
            self._infs = np.full(n, self.inf, np.int64)
            self._zeros = np.zeros(n, np.int64)
            self.flow = max_flow.SimpleMaxFlow()
            self.flow.add_arcs_with_capacity(np.asarray(tails, np.int32),
                                             np.asarray(heads, np.int32),
                                             np.asarray(caps, np.int64))
        # upper(v): the tensors produced by ancestors of v that are kept or have a reader that is
        # not an ancestor of v (exactly live(anc(v)))
        freed = np.zeros((model.m, n), bool)  # every reader of t is an ancestor of v
        one = [t for t in free if len(model.consumers[t]) == 1]
        if one:  # one reader: its column of A
            freed[one] = A[:, [model.consumers[t][0] for t in one]].T
        for t in free:
            if len(model.consumers[t]) > 1:
                freed[t] = A[:, model.consumers[t]].all(axis=1)
        P = A.T[model.producer] if model.m else np.zeros((0, n), bool)
        lv = size @ (P & ~freed).astype(np.int64) if model.m else np.zeros(n, np.int64)
        self.upper = (model.alloc + lv).astype(np.int64)

    def value(self, v: int, forced: np.ndarray | None = None,
              largest: bool = False, banned: np.ndarray | None = None) -> tuple[int, np.ndarray]:
        """``C_S(v)`` (bytes) and a down-set ``D`` attaining it (numpy bool ``(n,)``).

        ``forced``: numpy bool ``(n,)``, the set ``S`` that must be in ``D`` (a down-set, none of
        it ``v`` or a descendant of ``v``; ``None``: empty). ``banned``: numpy bool ``(n,)``,
        operators kept out of ``D`` besides ``v`` and its descendants (an up-set, disjoint from
        ``forced``): the least live bytes over the sets ``D`` between the two. ``D`` is the
        smallest such set with the least live bytes (the source side of the minimum cut), or
        with ``largest=True`` the largest (every operator that cannot reach the sink in the
        residual network).

        Raises
        ------
        ValueError
            ``forced`` holds ``v``, a descendant of ``v`` or a banned operator (no order runs it
            before ``v``), or the solver did not finish.
        """
        if self.cnet is not None:
            c, D = self.cnet.value(int(v), None if forced is None else
                                   np.ascontiguousarray(forced, dtype=bool), None if banned is None
                                   else np.ascontiguousarray(banned, dtype=bool), bool(largest))
            return c, np.frombuffer(D, dtype=bool).copy()
        n, A = self.n, self.A
        fin = A[v].copy()
        if forced is not None:
            fin |= forced
        out = A[:, v].copy()
        out[v] = True
        if banned is not None:
            out |= banned
        if (fin & out).any():
            bad = int(np.flatnonzero(fin & out)[0])
            raise ValueError(f"closure bound: operator {bad} is forced to run before operator {v}"
                             " but is that operator or one of its descendants")
        fa, ba = self._force_arcs[fin], self._ban_arcs[out]
        f = self.flow
        f.set_arcs_capacity(fa, self._infs[:fa.size])
        f.set_arcs_capacity(ba, self._infs[:ba.size])
        try:
            status = f.solve(0, 1)
            if status != f.OPTIMAL:
                raise ValueError(f"closure bound: max-flow status {status} at operator {v}")
            cut = int(f.optimal_flow())
            side = np.asarray(f.get_sink_side_min_cut() if largest
                              else f.get_source_side_min_cut(), np.int64)
        finally:
            f.set_arcs_capacity(fa, self._zeros[:fa.size])
            f.set_arcs_capacity(ba, self._zeros[:ba.size])
        if cut >= self.inf:  # pragma: no cover - the forcing above is always feasible
            raise ValueError(f"closure bound: no down-set fits operator {v}")
        D = np.full(n, largest, bool)
        D[side[(side >= 2) & (side < 2 + n)] - 2] = not largest
        return int(self.model.alloc[v]) + cut - self.pos, D


def closure_bounds(model: MemoryModel, ancestors: np.ndarray | None = None,
                   floor: int = 0) -> tuple[int, np.ndarray]:
    """Bound 4 of the module docstring: ``(max over v of C(v), C)`` in bytes.

    ``C`` is a numpy int64 array ``(n,)`` holding ``C(v)`` for every operator whose upper value
    ``alloc(v) + live(anc(v))`` is above ``floor`` and above the largest ``C`` found before it
    (operators are taken by decreasing upper value), and ``-1`` for the others, which cannot
    raise the maximum above ``floor``. The first value is ``max(C)`` (``-1`` when every operator
    was skipped). ``ancestors``: :func:`ancestor_matrix` when already computed.

    Raises ``ValueError`` when the sizes could overflow int64 capacities (:class:`ClosureCut`).
    Cost: one max-flow per operator evaluated (``O(n + #tensors)`` nodes).
    """
    A = ancestor_matrix(model) if ancestors is None else ancestors
    C = np.full(model.n, -1, np.int64)
    if model.n == 0:
        return -1, C
    net = ClosureCut(model, A)
    best = int(floor)
    for v in np.argsort(-net.upper, kind="stable").tolist():
        if net.upper[v] <= best:
            break
        C[v] = net.value(v)[0]
        best = max(best, int(C[v]))
    return int(C.max()), C


def order_bound_details(
    graph: Graph | MemoryModel,
    *,
    cut_max_ops: int = CUT_MAX_OPS,
    pair_max_ops: int = PAIR_MAX_OPS,
    closure_max_ops: int = CLOSURE_MAX_OPS,
    ancestors: np.ndarray | None = None,
    closure_sample: int = CLOSURE_SAMPLE,
    deadline: float | None = None,
) -> dict[str, Any]:
    """The four bounds of the module docstring, in bytes, and the largest.

    Returns ``{"bound", "op", "cut", "pair", "closure", "closure_sampled", "sampled_ops",
    "skipped", "per_op"}``:
    ``cut``/``pair``/``closure`` are ``None`` when the graph has more operators than
    ``cut_max_ops``/``pair_max_ops``/``closure_max_ops`` (or the pair product could lose
    precision, sizes summing to ``2**53`` bytes or more; or the closure's capacities could
    overflow, ``2**60``), and ``skipped`` then says which was left out and why (one line per
    bound, joined by ``"; "``); ``closure`` is computed only where it can exceed the other three
    (:func:`closure_bounds` with that floor), so it is reported as the largest of them when no
    operator can raise it; ``bound`` is the maximum of those computed;
    ``per_op`` is the numpy array of ``W(v)`` (bound 2 per operator, bytes live at ``v``'s step
    in every order) or ``None``. ``ancestors``: :func:`ancestor_matrix` when already computed.

    Above ``cut_max_ops`` operators (no ancestor matrix), the closure bound is computed at
    ``closure_sample`` operators spread over the graph (:func:`sampled_closure_bound`, cost
    stated there: about ``closure_sample`` times 0.1-0.3 s at 20,000 operators):
    ``closure_sampled`` is the largest of those values (``None`` when not computed, e.g.
    ``closure_sample=0``) and ``sampled_ops`` how many operators it covered; a valid lower bound
    on every order, never above the full closure bound, and the ``skipped`` line says it is a
    sample. ``deadline`` (a :func:`time.perf_counter` value) stops the sample early
    (:func:`sampled_closure_bound`; ``sampled_ops`` says how far it got).

    Raises :class:`scheduling.errors.CycleError` for a cyclic graph.
    """
    m = graph if isinstance(graph, MemoryModel) else MemoryModel(graph)
    out: dict[str, Any] = {"op": m.op_lower_bound(), "cut": None, "pair": None, "closure": None,
                           "closure_sampled": None, "sampled_ops": 0, "skipped": None,
                           "per_op": None}
    n = m.n
    if n == 0:
        out["bound"] = 0
        return out
    if n > cut_max_ops:
        why = (f"cut, pair and closure bounds not computed: {n} operators > {cut_max_ops} "
               "(an n x n ancestor matrix)")
        out["bound"] = out["op"]
        if closure_sample > 0 and 2 * int(m.size.sum()) + 1 < 2**60:
            val, vals = sampled_closure_bound(m, sample=closure_sample, deadline=deadline)
            out["closure_sampled"], out["sampled_ops"] = val, len(vals)
            out["bound"] = max(out["op"], val)
            why += f"; closure bound at {len(vals)} sampled operators only"
        out["skipped"] = why
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
    base = max(v for v in (out["op"], out["cut"], out["pair"]) if v is not None)
    skipped = [out["skipped"]] if out["skipped"] else []
    if n > closure_max_ops:
        skipped.append(f"closure bound not computed: {n} operators > {closure_max_ops}")
    elif 2 * int(m.size.sum()) + 1 >= 2**60:
        skipped.append("closure bound not computed: sizes sum to 2**59 bytes or more")
    else:
        out["closure"] = max(base, closure_bounds(m, A, floor=base)[0])
    out["skipped"] = "; ".join(skipped) or None
    out["bound"] = max(base, out["closure"] or 0)
    return out


def order_lower_bound(graph: Graph | MemoryModel, **kw: int) -> int:
    """A lower bound (bytes) on the peak of live bytes of **every** topological order of
    ``graph``: the largest of the working-set, cut, pair and closure bounds (proofs in the
    module docstring). ``kw``: ``cut_max_ops`` / ``pair_max_ops`` / ``closure_max_ops`` of
    :func:`order_bound_details`.

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
