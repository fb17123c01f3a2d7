"""The one-operator-per-node reading of a networkx directed graph (Checkmate, MOCCASIN), shared by
:meth:`scheduling.graph.Graph.from_networkx` and :mod:`scheduling.nodelink`.

The rules are those of :mod:`scheduling.nodelink` (its module docstring): node ``n`` becomes
operator ``n`` writing tensor ``n`` of the node's size in bytes; an edge ``u -> v`` means ``v``
reads ``u``'s output; nodes without successors are graph outputs.

This module imports neither :mod:`scheduling.graph` nor :mod:`scheduling.nodelink`: the graph class
to build is a parameter of :func:`build_from_networkx`, so ``graph -> nxgraph <- nodelink ->
graph`` has no import cycle (``tests/test_import_cycles.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any

import networkx as nx
import numpy as np

from .errors import CycleError, GraphError

__all__ = ["NodeLinkError", "DEFAULT_SIZE_ATTR", "AUTO_SIZE_ATTRS", "resolve_size_attr",
           "build_from_networkx"]

#: The size attribute of Checkmate's and MOCCASIN's graphs (bytes of the node's output).
DEFAULT_SIZE_ATTR = "cost_ram"


class NodeLinkError(GraphError):
    """A node-link JSON graph cannot be imported: malformed JSON or structure, an unknown edge
    endpoint, an undirected graph, a missing / non-integer / negative size, or a cycle."""


#: Size attributes tried by ``size="auto"``, after the graph's ``node_output_cost_tag``.
AUTO_SIZE_ATTRS = ("cost_ram", "out_cost")


def resolve_size_attr(G: nx.DiGraph, size: str, where: str = "graph") -> str:
    """The node attribute that holds the output bytes (module docstring, "Size attribute").

    ``size="auto"``, or the default ``"cost_ram"`` when no node has it, picks the first of
    ``G.graph["node_output_cost_tag"]`` (when a string), ``cost_ram``, ``out_cost`` that every node
    has; any other name is returned unchanged. Raises :class:`NodeLinkError` for ``"auto"`` when
    none fits (naming the attributes tried). ``O(#nodes)`` per attribute tried.
    """
    if size != "auto" and (size != DEFAULT_SIZE_ATTR
                           or any(size in d for _, d in G.nodes(data=True))):
        return size
    tag = G.graph.get("node_output_cost_tag")
    tried = list(dict.fromkeys(([tag] if isinstance(tag, str) else []) + list(AUTO_SIZE_ATTRS)))
    for a in tried:
        if all(a in d for _, d in G.nodes(data=True)):
            return a
    if size == "auto":
        raise NodeLinkError(f"{where}: no size attribute found on every node (tried "
                            f"{', '.join(map(repr, tried))}); choose it with --size-attr / size=")
    return size


def _size_of(node, value, size_name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise NodeLinkError(f"{where}: node {node!r}: size {size_name!r} must be an integer number "
                            f"of bytes, got {value!r}")
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value) or not float(value).is_integer():
            raise NodeLinkError(f"{where}: node {node!r}: size {size_name!r} must be an integer "
                                f"number of bytes, got {value!r}")
        value = int(value)
    if value < 0:
        raise NodeLinkError(f"{where}: node {node!r}: size {size_name!r} must be >= 0 bytes, "
                            f"got {value}")
    return int(value)


def build_from_networkx(
    graph_cls: type,
    G: nx.DiGraph,
    size: str | Callable[[Hashable, dict], int] = DEFAULT_SIZE_ATTR,
    name: str | None = None,
    *,
    where: str | None = None,
) -> Any:
    """A ``graph_cls`` (:class:`scheduling.graph.Graph` or a subclass) of a networkx directed graph,
    one operator per node: :func:`scheduling.nodelink.graph_from_networkx` with the class to build
    as a parameter.

    Parameters
    ----------
    graph_cls : type
        Called as ``graph_cls(name)``; the result needs ``add_tensor``, ``add_op`` and
        ``validate`` as :class:`scheduling.graph.Graph` has them.
    G, size, name, where
        As :func:`scheduling.nodelink.graph_from_networkx` (sizes in bytes).

    Returns
    -------
    graph_cls instance
        Tensors in the stored operator order, each ``(size,)`` ``uint8`` of ``size`` bytes.

    Raises
    ------
    NodeLinkError
        ``G`` undirected; a node without the size attribute (named); a size that is not an integer
        or is negative (named); two node ids with the same string.
    CycleError
        ``G`` has a cycle; the message names the nodes along it.

    Notes
    -----
    ``O(#nodes + #edges)`` plus a lexicographic topological sort, ``O((n + m) log n)``.
    """
    gname = str(name if name is not None else G.graph.get("name", ""))
    where = where or gname or "graph"
    if not G.is_directed():
        raise NodeLinkError(f"{where}: the networkx graph is undirected; a dataflow graph needs "
                            "directed edges u -> v (v reads the output of u)")
    if not callable(size):
        size = resolve_size_attr(G, size, where)
    if callable(size):
        size_name = getattr(size, "__name__", "size")
        sizes = {n: _size_of(n, size(n, d), size_name, where) for n, d in G.nodes(data=True)}
    else:
        sizes = {}
        for n, d in G.nodes(data=True):
            if size not in d:
                raise NodeLinkError(f"{where}: node {n!r} has no size attribute {size!r} (its "
                                    f"attributes: {sorted(map(str, d))}); choose it with "
                                    "--size-attr / size=")
            sizes[n] = _size_of(n, d[size], size, where)
    label = {}
    for n in G.nodes:
        s = str(n)
        if s in label.values():
            raise NodeLinkError(f"{where}: two nodes are both named {s!r} as strings")
        label[n] = s
    try:
        cyc = nx.find_cycle(G)
    except nx.NetworkXNoCycle:
        cyc = None
    if cyc:
        nodes = [e[0] for e in cyc] + [cyc[0][0]]
        raise CycleError(f"{where}: node {nodes[0]!r} is on a cycle "
                         f"({' -> '.join(map(repr, nodes))}); a dataflow graph must be acyclic")
    pos = {n: i for i, n in enumerate(G.nodes)}
    order = _declared_order(G)
    if order is None:
        order = list(nx.lexicographical_topological_sort(G, key=pos.__getitem__))
    g = graph_cls(gname)
    for n in order:
        kind = "output" if G.out_degree(n) == 0 else "activation"
        g.add_tensor(label[n], (sizes[n],), "uint8", kind=kind, nbytes=sizes[n])
    for n in order:
        d = G.nodes[n]
        op_type = str(d.get("op_type") or d.get("type") or "node")
        ins = [label[p] for p in sorted(set(G.predecessors(n)), key=pos.__getitem__)]
        g.add_op(label[n], op_type, ins, [label[n]])
    g.validate()
    return g


def _declared_order(G: nx.DiGraph) -> list | None:
    """``G.graph["order"]`` (MOCCASIN's random layered graphs) when it lists every node once in a
    topological order, else ``None``."""
    order = G.graph.get("order")
    if not isinstance(order, list) or len(order) != G.number_of_nodes():
        return None
    try:
        if set(order) != set(G.nodes):
            return None
    except TypeError:  # unhashable entries
        return None
    step = {v: k for k, v in enumerate(order)}
    if any(step[u] >= step[v] for u, v in G.edges()):
        return None
    return list(order)
