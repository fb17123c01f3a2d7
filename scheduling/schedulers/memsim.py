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

__all__ = ["MemoryModel", "ReadyTracker"]


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
    Construction is ``O(#ops + #tensor uses)`` plus networkx's cycle check.
    """

    def __init__(self, graph: Graph) -> None:
        graph.check_acyclic()
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
        alloc = np.zeros(n, np.int64)
        for i in range(n):
            alloc[i] = sum(sizes[t] for t in outs[i])
            for p in preds[i]:
                self.succs[p].append(i)
            for t in ins[i]:
                self.consumers[t].append(i)
        self.alloc = alloc
        self.n_consumers = np.asarray([len(c) for c in self.consumers], dtype=np.int64)
        dead = np.zeros(n, np.int64)
        for t in range(m):
            if not self.consumers[t] and not keep[t]:
                dead[prod[t]] += sizes[t]
        self.dead = dead
        self.in_bytes = np.asarray([int(self.size[i].sum()) for i in ins], np.int64)
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

    def peak(self, order: Sequence[int]) -> int:
        """Peak live bytes of ``order`` (operator indices, assumed topological); 0 if empty.

        Pure-Python loop over integer lists, ``O(n + #tensor uses)``.
        """
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
