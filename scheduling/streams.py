"""Concurrent streams of a dataflow graph: a stream assignment and its :class:`ConcurrentProblem`.

A runtime that runs independent branches at once puts each operator on a **stream** (thread,
core, queue). :func:`assign_streams` builds such an assignment, :func:`concurrent_problem` turns a
graph plus an assignment into a :class:`planners.concurrent.ConcurrentProblem` whose buffers are
the graph's activations and outputs (planned with reuse across the partial order, see
:mod:`planners.concurrent`).

Rules of :func:`concurrent_problem`
-----------------------------------
* Each stream runs its operators in the order of :meth:`Graph.topological_order` (the stored
  order wherever it is topological); step ``i`` of stream ``s`` is its ``i``-th operator.
* Every data edge ``u -> v`` between operators on different streams (a tensor ``u`` writes and
  ``v`` reads) is a happens-before edge ``(stream(u), step(u)) -> (stream(v), step(v))``: ``v``
  waits for ``u``'s result. Nothing else synchronises the streams.
* A tensor written by ``u`` lives on ``u``'s stream from ``step(u)`` to its last reader there
  (``step(u)`` if none) and is also held until its last reader on every other stream
  (``reads``). A graph output is kept until the run ends (as
  :func:`scheduling.lifetimes.tensor_lifetimes` keeps it to the last step): to the last step of
  its own stream and, with several streams, to step 0 of an **end stream** (number ``1 + max
  stream``, no operator) that the last step of every stream happens before; so an output
  conflicts with every buffer not entirely before its write.
* Weights and graph inputs are not buffers of the problem (they are residents outside the
  activation arena, as in :func:`scheduling.lifetimes.lifetime_problem`'s default).

With one stream the problem has the interference graph of
:func:`scheduling.lifetimes.lifetime_problem` under :meth:`Graph.topological_order` (tested).
"""

from __future__ import annotations

from collections.abc import Mapping

import networkx as nx

from planners.concurrent import ConcurrentBuffer, ConcurrentProblem

from .errors import GraphError
from .graph import Graph

__all__ = ["assign_streams", "concurrent_problem", "stream_orders"]


def assign_streams(graph: Graph, k: int) -> dict[str, int]:
    """Put independent branches of ``graph`` on ``k`` streams, round-robin over antichain layers.

    The operators are split into networkx topological generations (layer ``L`` holds the
    operators whose longest path from a source has ``L`` arcs; two operators of one layer are
    never connected by a path, so they may run at once). Within a layer, in stored order, the
    ``j``-th operator goes to stream ``j mod k``. Within one stream the layers increase, so each
    stream's order is topological.

    Parameters
    ----------
    graph : Graph
    k : int
        Number of streams, ``>= 1``.

    Returns
    -------
    dict
        ``{operator name: stream}``, streams ``0 .. k-1``.

    Raises
    ------
    ValueError
        ``k < 1``.
    scheduling.errors.CycleError
        The graph has a cycle.

    Examples
    --------
    >>> g = Graph("fork")
    >>> for t in ("x", "a", "b", "y"):
    ...     _ = g.add_tensor(t, (4,), "float32", kind="input" if t == "x" else "activation")
    >>> _ = g.add_op("pa", "Relu", ["x"], ["a"]); _ = g.add_op("pb", "Relu", ["x"], ["b"])
    >>> _ = g.add_op("join", "Add", ["a", "b"], ["y"])
    >>> assign_streams(g, 2)
    {'pa': 0, 'pb': 1, 'join': 0}

    ``O(V + E)`` for ``V`` operators and ``E`` data edges.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"the number of streams must be an int >= 1, got {k!r}")
    graph.check_acyclic()
    pos = {n: i for i, n in enumerate(graph.ops)}
    out: dict[str, int] = {}
    for layer in nx.topological_generations(graph.op_graph()):
        for j, op in enumerate(sorted(layer, key=pos.__getitem__)):
            out[op] = j % k
    return {op: out[op] for op in graph.ops}


def stream_orders(graph: Graph, assignment: Mapping[str, int]) -> dict[int, list[str]]:
    """Each stream's operators in order (``{stream: [operator names]}``, the order of
    :meth:`Graph.topological_order`). Raises :class:`GraphError` for an operator without a
    stream, an unknown operator, or a stream that is not an int ``>= 0``."""
    missing = [op for op in graph.ops if op not in assignment]
    if missing:
        raise GraphError(f"graph {graph.name!r}: operators without a stream: {missing[:5]}")
    unknown = [op for op in assignment if op not in graph.ops]
    if unknown:
        raise GraphError(f"graph {graph.name!r}: the assignment names unknown operators "
                         f"{unknown[:5]}")
    for op, s in assignment.items():
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise GraphError(f"operator {op!r}: stream must be an int >= 0, got {s!r}")
    orders: dict[int, list[str]] = {}
    for op in graph.topological_order():
        orders.setdefault(assignment[op], []).append(op)
    return dict(sorted(orders.items()))


def concurrent_problem(graph: Graph, assignment: Mapping[str, int] | int,
                       alignment: int = 1, capacity: int | None = None,
                       name: str | None = None) -> ConcurrentProblem:
    """The :class:`~planners.concurrent.ConcurrentProblem` of ``graph`` run on streams.

    Parameters
    ----------
    graph : Graph
        An ONNX/TFLite import or a hand-built graph; must be acyclic.
    assignment : mapping or int
        ``{operator: stream}`` (every operator, streams ints ``>= 0``), or a number of streams
        ``k`` for :func:`assign_streams`.
    alignment : int
        Default offset alignment (bytes).
    capacity : int or None
        Arena capacity (bytes).
    name : str or None
        Problem name (default: the graph name).

    Returns
    -------
    ConcurrentProblem
        One buffer per activation and output tensor some operator writes (id = tensor name, size
        = :attr:`Tensor.nbytes` bytes), in graph tensor order; steps and edges by the rules of
        the module docstring.

    Raises
    ------
    GraphError
        A bad assignment (:func:`stream_orders`), or an operator reading a tensor that nothing
        produces and that is neither input nor weight.
    scheduling.errors.CycleError
        The graph has a cycle.

    Notes
    -----
    ``O(V + E + T)`` for ``V`` operators, ``E`` tensor reads and ``T`` tensors, plus the
    problem's own construction (:class:`~planners.concurrent.ConcurrentProblem`).
    """
    if not isinstance(assignment, Mapping):
        assignment = assign_streams(graph, assignment)
    orders = stream_orders(graph, assignment)
    where = {op: (s, i) for s, ops in orders.items() for i, op in enumerate(ops)}
    final = {s: len(ops) - 1 for s, ops in orders.items()}
    edges = set()
    end = None  # the end-of-run stream, when outputs must outlive several streams
    if len(orders) > 1 and any(t.kind == "output" for t in graph.tensors.values()):
        end = max(orders) + 1
        edges.update((s, ft, end, 0) for s, ft in final.items())
    bufs = []
    for t in graph.tensors.values():
        if t.kind in ("weight", "input"):
            continue
        if t.producer is None:
            if t.consumers:
                raise GraphError(f"tensor {t.name!r} (kind {t.kind!r}) is read but no operator "
                                 "produces it")
            continue
        s, first = where[t.producer]
        last = {s: first}
        for c in t.consumers:
            cs, ci = where[c]
            last[cs] = max(last.get(cs, -1), ci)
            if cs != s:
                edges.add((s, first, cs, ci))
        if t.kind == "output":  # held to the end of the run
            last[s] = final[s]
            if end is not None:
                last[end] = 0
        reads = tuple((rs, rt) for rs, rt in sorted(last.items()) if rs != s)
        bufs.append(ConcurrentBuffer(t.name, s, first, last[s], t.nbytes, reads=reads))
    return ConcurrentProblem(bufs, sorted(edges), alignment=alignment, capacity=capacity,
                             name=graph.name if name is None else name)
