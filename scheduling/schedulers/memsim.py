"""Compiled memory model of a graph, shared by the memory-aware schedulers.

Every memory-aware scheduler needs the same bookkeeping: which activation bytes an operator
allocates, which bytes it frees, which operators are ready. :class:`MemoryModel` compiles a
:class:`scheduling.graph.Graph` once into integer arrays (operators ``0 .. n-1`` in stored order,
tensors ``0 .. m-1``) so that a scheduler simulates an order in ``O(#ops + #tensor uses)``
instead of recomputing lifetimes per candidate.

Convention (identical to :func:`scheduling.lifetimes.peak_live_bytes` with its defaults)
-------------------------------------------------------------------------------------------
Only activations and graph outputs count (weights and graph inputs are residents). A tensor is
live on the **closed** range of steps ``[producer step, last consumer step]``; a graph output to
the last step; a tensor nobody reads on its producer's step only. Running operator ``v`` when
``L`` bytes are live before it gives

* live bytes *at* its step: ``L + alloc[v]`` (its outputs are live, its inputs still are);
* live bytes *after* it: ``L + alloc[v] - freed(v)``, where ``freed(v)`` is the bytes of its
  inputs whose last unscheduled consumer is ``v`` (not graph outputs) plus its outputs that nobody
  reads (``dead[v]``).

The peak of an order is the maximum over steps of the live bytes at the step (seed 000 section 1,
seed 002 section 5.4.1: ``M_peak = max_t M(t)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import CycleError, GraphError
from ..graph import Graph

#: Largest int64 (bytes): the live sums of a memory model are computed in int64.
_INT64_MAX = 2**63 - 1

__all__ = ["MemoryModel", "ReadyTracker", "shared_model", "shared_notes"]

#: id(graph) -> (graph, model, notes) of the :meth:`Scheduler.schedule` calls under way: a
#: scheduler that calls others on the same graph (``best_of``, ``exact_dp``'s initial orders)
#: compiles it once. ``notes`` holds per-call results keyed by name (the order bound).
_SHARED: dict[int, tuple[Graph, MemoryModel, dict]] = {}


class MemoryModel:
    """A graph compiled for fast memory simulation of operator orders.

    Parameters
    ----------
    graph : Graph
        Must be acyclic (checked: :class:`scheduling.errors.CycleError` naming the cycle).

    Attributes
    ----------
    names : list of str, length ``n``
        Operator names in stored order (operator index = position here).
    preds, succs : list of list of int
        Unique predecessor / successor operator indices (stored order).
    ins : list of list of int
        Per operator, the unique activation tensors it reads (tensors with a producer).
    alloc : numpy int64 array, shape ``(n,)``
        Bytes of activations/outputs the operator writes.
    dead : numpy int64 array, shape ``(n,)``
        Bytes of its outputs that nobody reads and are not graph outputs (freed right after).
    size : numpy int64 array, shape ``(m,)``
        Bytes per compiled tensor.
    keep : numpy bool array, shape ``(m,)``
        Graph outputs (never freed).
    consumers : list of list of int
        Unique consumer operator indices per compiled tensor.
    in_bytes : numpy int64 array, shape ``(n,)``
        Bytes of the activation inputs of each operator.

    Notes
    -----
    Construction is ``O(#ops + #tensor uses)``, the cycle check included (Kahn's algorithm;
    networkx runs only on a cyclic graph, to name the cycle in the error).
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.names: list[str] = list(graph.ops)
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        tindex: dict[str, int] = {}
        sizes: list[int] = []
        keep: list[bool] = []
        prod: list[int] = []
        for t in graph.tensors.values():
            if t.producer is not None and t.producer in self.index:
                tindex[t.name] = len(sizes)
                sizes.append(int(t.nbytes))
                keep.append(t.kind == "output")
                prod.append(self.index[t.producer])
        self.tindex = tindex
        total = sum(sizes)  # Python integers: every live sum below is at most this
        if total > _INT64_MAX:
            big = max((t for t in graph.tensors.values() if t.name in tindex),
                      key=lambda t: int(t.nbytes))
            raise GraphError(
                f"graph {graph.name!r}: its operator outputs sum to {total} bytes, above "
                f"2**63 - 1, so live bytes cannot be computed in int64 (largest: tensor "
                f"{big.name!r}, {int(big.nbytes)} bytes)")
        ins_of: list[list[int]] = []
        outs_of: list[list[int]] = []
        preds: list[list[int]] = []
        for name in self.names:
            op = graph.ops[name]
            ins = [tindex[t] for t in dict.fromkeys(op.inputs) if t in tindex]
            ins_of.append(ins)
            outs_of.append([tindex[t] for t in op.outputs if t in tindex])
            preds.append(list(dict.fromkeys(prod[t] for t in ins)))
        self._compile(sizes, keep, prod, ins_of, outs_of, preds)
        if self._kahn() is None:  # a cycle: the graph names it (networkx, only on this path)
            graph.check_acyclic()
            raise CycleError(f"graph {graph.name!r}: the operator graph has a cycle")  # pragma: no cover

    @classmethod
    def of(cls, graph: Graph) -> MemoryModel:
        """The model of ``graph``: the one compiled by the :func:`shared_model` block under way
        for this graph object (a :meth:`Scheduler.schedule` call), else a new one. The graph
        must not change inside such a block (schedulers only read it)."""
        hit = _SHARED.get(id(graph))
        if hit is not None and hit[0] is graph:
            return hit[1]
        return cls(graph)

    @classmethod
    def from_arrays(cls, sizes: Sequence[int], keep: Sequence[bool], producer: Sequence[int],
                    ins: list[list[int]], outs: list[list[int]],
                    preds: list[list[int]]) -> MemoryModel:
        """A memory model built from compiled lists instead of a graph (``graph`` is ``None``,
        operators are named ``"0" .. "n-1"``): tensor ``t`` has ``sizes[t]`` bytes, is a graph
        output when ``keep[t]`` and is written by operator ``producer[t]``; operator ``v`` reads
        the tensors ``ins[v]``, writes ``outs[v]`` and runs after ``preds[v]`` (which must hold
        the producers of its inputs, and may hold more operators). Not checked: the caller
        builds an acyclic model (the parts of :func:`.pivot_search.sub_model`)."""
        self = cls.__new__(cls)
        self.graph = None
        self.names = [str(i) for i in range(len(ins))]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.tindex = {}
        self._compile(list(sizes), list(keep), list(producer), ins, outs, preds)
        return self

    def _compile(self, sizes: list[int], keep: list[bool], prod: list[int],
                 ins: list[list[int]], outs: list[list[int]], preds: list[list[int]]) -> None:
        """The arrays of the class docstring from per-tensor and per-operator lists."""
        n, m = len(ins), len(sizes)
        self.size = np.asarray(sizes, dtype=np.int64)
        self.keep = np.asarray(keep, dtype=bool)
        self.producer = np.asarray(prod, dtype=np.int64)
        self.ins, self.outs, self.preds = ins, outs, preds
        self.consumers: list[list[int]] = [[] for _ in range(m)]
        self.succs: list[list[int]] = [[] for _ in range(n)]
        for i in range(n):
            for p in preds[i]:
                self.succs[p].append(i)
            for t in ins[i]:
                self.consumers[t].append(i)
        i64 = np.int64
        olen = np.fromiter((len(o) for o in outs), i64, n)
        oflat = np.fromiter((t for o in outs for t in o), i64, int(olen.sum()))
        ilen = np.fromiter((len(x) for x in ins), i64, n)
        iflat = np.fromiter((t for x in ins for t in x), i64, int(ilen.sum()))
        alloc = np.zeros(n, i64)
        np.add.at(alloc, np.repeat(np.arange(n, dtype=i64), olen), self.size[oflat])
        self.alloc = alloc
        self.n_consumers = np.fromiter((len(c) for c in self.consumers), i64, m)
        dead = np.zeros(n, i64)
        unread = (self.n_consumers == 0) & ~self.keep
        np.add.at(dead, self.producer[unread], self.size[unread])
        self.dead = dead
        in_bytes = np.zeros(n, i64)
        np.add.at(in_bytes, np.repeat(np.arange(n, dtype=i64), ilen), self.size[iflat])
        self.in_bytes = in_bytes
        self._float_exact = int(self.size.sum()) < 2**53
        # CSR arrays of the readers (for the vectorised evaluation in :meth:`peak_vector`)
        self._cons_ptr = np.concatenate([[0], np.cumsum(self.n_consumers)]).astype(i64)
        self._cons_flat = np.fromiter((c for cs in self.consumers for c in cs), i64,
                                      int(self.n_consumers.sum()))
        self.n = n
        self.m = m

    # -- bounds -------------------------------------------------------------------------------
    def op_lower_bound(self) -> int:
        """A lower bound on the peak of **every** order (bytes): at an operator's step its inputs
        and outputs are all live, so ``peak >= max_v (in_bytes[v] + alloc[v])``. ``O(n)``."""
        return int((self.in_bytes + self.alloc).max()) if self.n else 0

    # -- evaluation ---------------------------------------------------------------------------
    def to_indices(self, order: Sequence[str]) -> list[int]:
        """Operator names to indices (``KeyError`` for an unknown name)."""
        return [self.index[v] for v in order]

    def to_names(self, order: Sequence[int]) -> list[str]:
        """Operator indices to names."""
        return [self.names[i] for i in order]

    def profile(self, order: Sequence[int]) -> np.ndarray:
        """Live bytes at each step of ``order`` (operator indices, assumed topological).

        Returns a numpy int64 array of shape ``(n,)``, equal to
        :func:`scheduling.lifetimes.live_bytes` of the same order. ``O(n + #tensor uses)``.
        """
        remaining = self.n_consumers.copy()
        size, keep, ins, alloc, dead = self.size, self.keep, self.ins, self.alloc, self.dead
        out = np.empty(len(order), np.int64)
        live = 0
        for k, v in enumerate(order):
            live += int(alloc[v])
            out[k] = live
            freed = int(dead[v])
            for t in ins[v]:
                remaining[t] -= 1
                if remaining[t] == 0 and not keep[t]:
                    freed += int(size[t])
            live -= freed
        return out

    def _kahn(self) -> list[int] | None:
        """A topological order (first in, first out), or ``None`` when the operators have a
        cycle. ``O(n + E)``, no networkx."""
        indeg = [len(p) for p in self.preds]
        out = [v for v in range(self.n) if indeg[v] == 0]
        succs = self.succs
        for v in out:  # the list grows while it is read
            for s in succs[v]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    out.append(s)
        return out if len(out) == self.n else None

    #: From this many operators on, :meth:`peak` is evaluated by numpy (below it the Python loop
    #: is faster; both give the same number).
    VECTOR_MIN_OPS = 512

    def peak(self, order: Sequence[int]) -> int:
        """Peak live bytes of ``order`` (operator indices, assumed topological, possibly a
        prefix of an order: tensors whose readers have not all run stay live to its end); 0 if
        empty.

        ``O(n + #tensor uses)``: a Python loop over integer lists below
        :data:`VECTOR_MIN_OPS` operators, else :meth:`peak_vector` (the same number).
        """
        if self.n >= self.VECTOR_MIN_OPS:
            return self.peak_vector(order)
        return self.peak_loop(order)

    def peak_vector(self, order: Sequence[int]) -> int:
        """:meth:`peak` by numpy, without a Python loop over the steps: each tensor is live on
        the closed range ``[its producer's step, its last reader's step]`` (a graph output, or a
        tensor with a reader not in ``order``, to the last step; an unread one on its producer's
        step), added to a difference array whose running sum is the live bytes at each step.
        Tensors whose producer is not in ``order`` are not counted. ``O(n + #tensor uses)``
        numpy work: float64 sums when the sizes sum below ``2**53`` bytes (exact), else int64
        (exact: a model's sizes sum below ``2**63``). Returns bytes (int)."""
        L = len(order)
        if L == 0 or self.m == 0:
            return 0
        o = np.asarray(order, dtype=np.int64)
        pos = np.full(self.n, L, np.int64)
        pos[o] = np.arange(L, dtype=np.int64)
        start = pos[self.producer]
        end = start.copy()
        has = self.n_consumers > 0
        if self._cons_flat.size:
            last = np.maximum.reduceat(pos[self._cons_flat], self._cons_ptr[:-1][has])
            end[has] = np.maximum(start[has], last)
        end[self.keep] = L - 1
        np.minimum(end, L - 1, out=end)
        ok = start < L
        sz = self.size[ok]
        if self._float_exact:  # every partial sum is an integer below 2**53: float64 is exact
            diff = (np.bincount(start[ok], sz, L + 1)
                    - np.bincount(end[ok] + 1, sz, L + 1))[:L]
            return int(round(float(np.cumsum(diff).max())))
        diff = np.zeros(L + 1, np.int64)
        np.add.at(diff, start[ok], sz)
        np.subtract.at(diff, end[ok] + 1, sz)
        return int(np.cumsum(diff[:L]).max())

    def peak_loop(self, order: Sequence[int]) -> int:
        """:meth:`peak` by a pure-Python loop over integer lists, ``O(n + #tensor uses)``."""
        remaining = self.n_consumers.tolist()
        size = self.size.tolist()
        keep = self.keep.tolist()
        alloc = self.alloc.tolist()
        dead = self.dead.tolist()
        ins = self.ins
        live = peak = 0
        for v in order:
            live += alloc[v]
            if live > peak:
                peak = live
            live -= dead[v]
            for t in ins[v]:
                r = remaining[t] - 1
                remaining[t] = r
                if r == 0 and not keep[t]:
                    live -= size[t]
        return peak

    def is_topological(self, order: Sequence[int]) -> bool:
        """True iff ``order`` lists every operator once, each after its predecessors."""
        if len(order) != self.n or len(set(order)) != self.n:
            return False
        pos = np.empty(self.n, np.int64)
        pos[np.asarray(order, dtype=np.int64)] = np.arange(self.n)
        return all(pos[p] < pos[v] for v in range(self.n) for p in self.preds[v])

    def levels(self) -> np.ndarray:
        """ASAP level of each operator: 0 for operators without predecessors, else
        ``1 + max(level of predecessors)`` (longest path from a source, in edges). ``O(n + E)``."""
        lev = np.zeros(self.n, np.int64)
        for v in self.topological():
            if self.preds[v]:
                lev[v] = 1 + max(lev[p] for p in self.preds[v])
        return lev

    def topological(self) -> list[int]:
        """Kahn's topological order, smallest stored index first among ready operators.

        ``O((n + E) log n)``; raises :class:`CycleError` if some operator never becomes ready.
        """
        import heapq

        indeg = [len(p) for p in self.preds]
        heap = [v for v in range(self.n) if indeg[v] == 0]
        heapq.heapify(heap)
        out = []
        while heap:
            v = heapq.heappop(heap)
            out.append(v)
            for s in self.succs[v]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(heap, s)
        if len(out) != self.n:  # pragma: no cover - check_acyclic ran first
            name = self.graph.name if self.graph is not None else "part"
            raise CycleError(f"graph {name!r}: the operator graph has a cycle")
        return out


class ReadyTracker:
    """Incremental state of a forward list scheduler (ready set, live bytes, freed bytes).

    ``freed_now[v]`` is kept equal to ``freed(v)`` of the module docstring for every operator, as
    tensors lose unscheduled consumers: when a tensor's count of unscheduled consumers drops to
    one, the remaining consumer's ``freed_now`` grows by the tensor's bytes, and that operator is
    reported through the ``on_change`` callback (so a heap-based scheduler re-keys it lazily).
    Each tensor reaches one remaining consumer once, so the total cost over a run is
    ``O(n + #tensor uses)``.

    Parameters
    ----------
    model : MemoryModel
    on_ready : callable(v) -> None
        Called when operator ``v`` becomes ready (all predecessors scheduled), also at start.
    on_change : callable(v) -> None, optional
        Called when ``freed_now[v]`` changes for an unscheduled operator.
    """

    def __init__(self, model: MemoryModel, on_ready, on_change=None) -> None:
        self.model = model
        self.remaining = model.n_consumers.tolist()
        self.size = model.size.tolist()
        self.keep = model.keep.tolist()
        self.alloc = model.alloc.tolist()
        self.dead = model.dead.tolist()
        self.indeg = [len(p) for p in model.preds]
        self.done = [False] * model.n
        self.freed_now = list(self.dead)
        for v in range(model.n):
            for t in model.ins[v]:
                if self.remaining[t] == 1 and not self.keep[t]:
                    self.freed_now[v] += self.size[t]
        self.live = 0
        self.peak = 0
        self.order: list[int] = []
        self.on_ready = on_ready
        self.on_change = on_change
        for v in range(model.n):
            if self.indeg[v] == 0:
                on_ready(v)

    def delta(self, v: int) -> int:
        """Change of live bytes if ``v`` runs now: ``alloc[v] - freed_now[v]`` (bytes)."""
        return self.alloc[v] - self.freed_now[v]

    def run(self, v: int) -> None:
        """Schedule ``v`` next: update live bytes, peak, consumers and the ready set."""
        m = self.model
        self.order.append(v)
        self.done[v] = True
        self.live += self.alloc[v]
        if self.live > self.peak:
            self.peak = self.live
        self.live -= self.freed_now[v]
        for t in m.ins[v]:
            r = self.remaining[t] - 1
            self.remaining[t] = r
            if r == 1 and not self.keep[t]:
                for c in m.consumers[t]:
                    if not self.done[c]:
                        self.freed_now[c] += self.size[t]
                        if self.on_change is not None:
                            self.on_change(c)
                        break
        for s in m.succs[v]:
            self.indeg[s] -= 1
            if self.indeg[s] == 0:
                self.on_ready(s)


def shared_notes(graph: Graph) -> dict | None:
    """The ``notes`` dict of the :class:`shared_model` block under way for ``graph`` (``None``
    outside one)."""
    hit = _SHARED.get(id(graph))
    return hit[2] if hit is not None and hit[0] is graph else None


class shared_model:
    """Context manager: ``with shared_model(graph) as (model, notes):`` compiles ``graph`` once
    (or reuses the model of an enclosing block on the same graph object), so that
    :meth:`MemoryModel.of` inside the block returns it; ``notes`` is a dict shared by the
    nested blocks (results that depend on the graph alone, e.g. the order lower bound). The
    outermost block forgets both on exit. Not thread-safe (one scheduler call at a time per
    process, as the schedulers run)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.owner = False

    def __enter__(self) -> tuple[MemoryModel, dict]:
        hit = _SHARED.get(id(self.graph))
        if hit is not None and hit[0] is self.graph:
            return hit[1], hit[2]
        m = MemoryModel(self.graph)
        _SHARED[id(self.graph)] = (self.graph, m, {})
        self.owner = True
        return m, _SHARED[id(self.graph)][2]

    def __exit__(self, *exc) -> None:
        if self.owner:
            _SHARED.pop(id(self.graph), None)
