"""Import node-link JSON graphs (networkx, Checkmate, MOCCASIN) as a dataflow :class:`Graph`.

Scheduling and rematerialisation research (Checkmate, Jain et al. MLSys 2020; MOCCASIN, Bartan et
al. ICML 2023) stores a computation graph as node-link JSON: one **node per operation**, whose
output tensor has the size held in a node attribute (``cost_ram`` in Checkmate's graphs and
MOCCASIN's copies of them, ``out_cost`` in MOCCASIN's random layered graphs), and one **edge**
``u -> v`` when operation ``v`` reads the output of ``u``.

The model
---------
Node ``n`` becomes operator ``n`` (``op_type`` from the node's ``op_type``/``type`` attribute, else
``"node"``) writing one tensor named ``n`` of ``size`` bytes; it reads the tensors of its
predecessors in node order (parallel edges of a multigraph read a tensor once). A node with no successor is a
**graph output** (kept until the end of the run); every other tensor is an activation, live from
its producer's step to its last reader's step (:mod:`scheduling.lifetimes`). A node with no
predecessor is an operator with no input (e.g. the graph's input node in Checkmate, whose output
is the input tensor). Node ids are turned into strings (``0 -> "0"``). Operators are stored in a
topological order that keeps the file's node order wherever it can (or in the graph's own
``"order"`` when it declares a valid topological one, as MOCCASIN's files do), so the
``file_order`` scheduler gives a valid schedule.

Accepted JSON
-------------
* networkx's ``node_link_data`` output, with edges under ``"links"`` (networkx < 3.6 default) or
  ``"edges"`` (networkx >= 3.6 default);
* the older d3-style format that :func:`networkx.node_link_graph` refuses or misreads: missing
  ``"directed"`` / ``"multigraph"`` / ``"graph"`` keys (the graph is read as directed, parallel
  edges allowed), nodes without ``"id"`` (the id is the node's position), and integer
  ``"source"`` / ``"target"`` that **index the nodes list**. Endpoints are read as node ids when
  every endpoint is a node id, else as indices when every endpoint is an integer in
  ``range(len(nodes))``; otherwise the import fails naming the endpoint.

* MOCCASIN's random layered graphs as published (``data/random_layered_n*.json`` of
  github.com/haoming-codes/moccasin, generated after Appendix A of Gagrani et al., "Neural
  Topological Ordering for Computation Graphs", NeurIPS 2022): networkx ``node_link_data``
  written with ``source="0", target="1"``, so each link is ``{"0": u, "1": v}``; nodes carry no
  ``"id"`` (the id is the position, as :func:`networkx.node_link_graph` reads them, equal to
  their ``"name"`` attribute there) and their output bytes in ``out_cost``; the graph names that
  attribute in ``"node_output_cost_tag"`` and lists a topological ``"order"`` (the order
  MOCCASIN evaluates as its baseline), which becomes the stored order.

``"directed": false`` is refused (a dataflow graph needs directions).

Size attribute
--------------
``size="auto"`` -- and the default ``"cost_ram"`` when no node has ``cost_ram`` -- reads the
attribute the graph declares in ``graph["node_output_cost_tag"]``, else ``cost_ram``, else
``out_cost``: the first one every node has. So Checkmate and MOCCASIN files of both kinds import
without ``--size-attr``; ``--size-attr out_cost`` says it explicitly.

Errors (:class:`NodeLinkError`, a :class:`GraphError`): unreadable or malformed JSON, a node
without the size attribute (named), a size that is not an integer or is negative (an integral
float such as ``4.0`` is accepted as ``4``), a cycle (its nodes named), an edge naming no node.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from .graph import Graph
from .nxgraph import (
    AUTO_SIZE_ATTRS,
    DEFAULT_SIZE_ATTR,
    NodeLinkError,
    build_from_networkx,
    resolve_size_attr,
)

__all__ = ["NodeLinkError", "read_nodelink", "nodelink_to_networkx", "graph_from_networkx",
           "DEFAULT_SIZE_ATTR", "AUTO_SIZE_ATTRS", "resolve_size_attr"]


def nodelink_to_networkx(data: Mapping[str, Any], where: str = "graph") -> nx.MultiDiGraph:
    """A networkx ``MultiDiGraph`` from node-link data (both key spellings and the old format).

    Parameters
    ----------
    data : mapping
        The parsed JSON object (see the module docstring for the accepted forms).
    where : str
        Label for error messages (e.g. the file name).

    Returns
    -------
    networkx.MultiDiGraph
        Nodes in the listed order with their attributes (``id`` removed); graph attributes from
        ``"graph"`` (a dict, or a list of ``[key, value]`` pairs as very old networkx wrote).

    Raises
    ------
    NodeLinkError
        Not an object with a ``"nodes"`` list, ``"directed": false``, a node that is not an object,
        a duplicate node id, an edge without source/target, or an endpoint that names no node.

    Notes
    -----
    ``O(#nodes + #edges)``.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("nodes"), list):
        raise NodeLinkError(f"{where}: not a node-link graph (expected an object with a 'nodes' list)")
    if data.get("directed", True) is False:
        raise NodeLinkError(f"{where}: the graph is undirected ('directed': false); a dataflow "
                            "graph needs directed edges u -> v (v reads the output of u)")
    if "links" in data and "edges" in data:
        raise NodeLinkError(f"{where}: both 'links' and 'edges' keys; expected one of them")
    edges = data.get("links", data.get("edges", []))
    if not isinstance(edges, list):
        raise NodeLinkError(f"{where}: 'links'/'edges' must be a list")
    G = nx.MultiDiGraph()
    ginfo = data.get("graph", {})
    if isinstance(ginfo, list):  # networkx 1.x wrote [[key, value], ...]
        ginfo = {k: v for k, v in ginfo}
    if isinstance(ginfo, Mapping):
        G.graph.update(ginfo)
    ids: list[Hashable] = []
    for i, nd in enumerate(data["nodes"]):
        if not isinstance(nd, Mapping):
            raise NodeLinkError(f"{where}: node #{i} is not an object: {nd!r}")
        attrs = dict(nd)
        nid = attrs.pop("id", i)
        if isinstance(nid, list):
            nid = tuple(nid)
        if nid in G:
            raise NodeLinkError(f"{where}: duplicate node id {nid!r}")
        G.add_node(nid, **attrs)
        ids.append(nid)
    ends = []
    keys = []
    for j, e in enumerate(edges):
        if isinstance(e, Mapping) and "source" in e and "target" in e:
            k = ("source", "target")
        elif isinstance(e, Mapping) and "0" in e and "1" in e:  # MOCCASIN: source="0", target="1"
            k = ("0", "1")
        else:
            raise NodeLinkError(f"{where}: edge #{j} lacks 'source'/'target' (or MOCCASIN's "
                                f"'0'/'1'): {e!r}")
        ends.append((e[k[0]], e[k[1]]))
        keys.append(k)
    as_ids = all(s in G and t in G for s, t in ends)
    if not as_ids:
        def index(v):
            return (not isinstance(v, bool) and isinstance(v, int) and 0 <= v < len(ids))

        bad = next(((j, v) for j, (s, t) in enumerate(ends) for v in (s, t) if not index(v)), None)
        if bad is not None:
            j, v = bad
            raise NodeLinkError(f"{where}: edge #{j} endpoint {v!r} is neither a node id nor an "
                                f"index into the {len(ids)} nodes")
        ends = [(ids[s], ids[t]) for s, t in ends]
    for (s, t), e, k in zip(ends, edges, keys, strict=True):
        attrs = {a: v for a, v in e.items() if a not in (*k, "key")}
        G.add_edge(s, t, **attrs)
    return G


def graph_from_networkx(
    G: nx.DiGraph,
    size: str | Callable[[Hashable, dict], int] = DEFAULT_SIZE_ATTR,
    name: str | None = None,
    *,
    where: str | None = None,
) -> Graph:
    """The dataflow :class:`Graph` of a networkx directed graph, one operator per node.

    Parameters
    ----------
    G : networkx.DiGraph or MultiDiGraph
        Node = operation; edge ``u -> v`` = ``v`` reads the output of ``u``.
    size : str or callable
        The node attribute holding the bytes of the node's output (default ``"cost_ram"``, with
        the fallback of :func:`resolve_size_attr`; ``"auto"`` to detect it), or a function
        ``size(node, attrs) -> int``.
    name : str, optional
        Graph name (default ``G.graph["name"]`` or ``""``).
    where : str, optional
        Label that starts error messages (default: the graph name, or ``"graph"``).

    Returns
    -------
    Graph
        See the module docstring for the model (sinks are graph outputs; node ids as strings).

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

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph([("a", "b"), ("b", "c"), ("a", "c")])
    >>> nx.set_node_attributes(G, {"a": 4, "b": 8, "c": 2}, "cost_ram")
    >>> g = graph_from_networkx(G)
    >>> list(g.ops), g.tensors["c"].kind, g.ops["c"].inputs
    (['a', 'b', 'c'], 'output', ('a', 'b'))
    """
    return build_from_networkx(Graph, G, size=size, name=name, where=where)


def read_nodelink(
    path: str | os.PathLike,
    size: str | Callable[[Hashable, dict], int] = DEFAULT_SIZE_ATTR,
    name: str | None = None,
) -> Graph:
    """Read a node-link JSON file as a dataflow :class:`Graph` (rules in the module docstring).

    Parameters
    ----------
    path : path-like
    size : str or callable
        Size attribute name (default ``"cost_ram"``) or ``size(node, attrs) -> int``.
    name : str, optional
        Graph name (default: the file name without ``.json``).

    Raises
    ------
    NodeLinkError
        Missing file, invalid JSON, or any error of :func:`nodelink_to_networkx` /
        :func:`graph_from_networkx`, the message starting with the file name.
    CycleError
        The graph has a cycle (its nodes named).
    """
    path = Path(path)
    if not path.is_file():
        raise NodeLinkError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise NodeLinkError(f"{path}: not valid JSON ({e})") from None
    G = nodelink_to_networkx(data, where=str(path))
    return graph_from_networkx(G, size=size, name=name if name is not None else path.stem,
                               where=str(path))
