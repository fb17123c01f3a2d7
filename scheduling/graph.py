"""The dataflow graph model: operators in a stored order, and the tensors they read and write.

A :class:`Graph` holds

* **tensors** (:class:`Tensor`): name, shape, dtype, bytes, kind, producer and consumers. The kind
  is one of :data:`TENSOR_KINDS`:

  - ``"weight"``  -- a constant (ONNX initializer, or anything computed only from constants); it
    has no producer in the graph;
  - ``"input"``   -- a graph input fed at run time; no producer;
  - ``"output"``  -- a graph output, produced by an operator and kept until the end of the run;
  - ``"activation"`` -- an intermediate tensor, produced by one operator and read by others.

* **operators** (:class:`Operator`): name, op_type, input and output tensor names, attributes and an
  optional multiply-accumulate estimate ``macs``. The graph keeps them in a **stored order** (the
  order they were added, the file order for an ONNX import). That order is one possible schedule;
  it need not be topological until :meth:`Graph.validate` is called.

Producer and consumer links are kept in step with the operators by the builder methods
(:meth:`Graph.add_tensor`, :meth:`Graph.add_op`, :meth:`Graph.remove_op`,
:meth:`Graph.remove_tensor`); transforms (fusion, in-place, tiling) should use those methods on a
:meth:`Graph.copy` rather than edit the fields directly.

:meth:`Graph.op_graph` gives the networkx ``DiGraph`` view of operators (an edge ``u -> v`` for
every tensor produced by ``u`` and read by ``v``), on which schedulers can run networkx algorithms.

Examples
--------
>>> g = Graph("tiny")
>>> _ = g.add_tensor("x", (1, 4), "float32", kind="input")
>>> _ = g.add_tensor("w", (4, 4), "float32", kind="weight")
>>> _ = g.add_tensor("y", (1, 4), "float32")
>>> _ = g.add_op("mm", "MatMul", ["x", "w"], ["y"], macs=16)
>>> g.mark_output("y")
>>> g.validate()
>>> g.tensors["y"].nbytes, g.tensors["y"].kind, g.tensors["y"].producer
(16, 'output', 'mm')
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from .errors import CycleError, GraphError
from .nxgraph import build_from_networkx

__all__ = ["Tensor", "Operator", "Graph", "TENSOR_KINDS", "dtype_itemsize", "find_cycle_in"]

#: Tensor kinds (see the module docstring).
TENSOR_KINDS = ("weight", "input", "output", "activation")


def dtype_itemsize(dtype: str) -> int:
    """Bytes per element of a numpy dtype name (``"float32" -> 4``, ``"int8" -> 1``).

    Raises
    ------
    GraphError
        Unknown dtype, or a dtype without a fixed element size (``object``, ``str``).
    """
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise GraphError(f"unknown dtype {dtype!r}") from None
    if dt.kind in "OUSV" or dt.itemsize == 0:
        raise GraphError(f"dtype {dtype!r} has no fixed element size in bytes")
    return int(dt.itemsize)


def find_cycle_in(edges: Iterable[tuple[str, str]], source: str | None = None) -> list[str] | None:
    """Node names along one directed cycle of ``edges`` (``(u, v)`` pairs), as ``[a, b, ..., a]``,
    searched from ``source`` when given (else anywhere); ``None`` if there is none.

    For graphs that are not yet a :class:`Graph` (an importer's nodes). ``networkx.find_cycle``,
    ``O(V + E)``.
    """
    g = nx.DiGraph(list(edges))
    if source is not None and source not in g:
        return None
    try:
        cyc = nx.find_cycle(g, source=source)
    except nx.NetworkXNoCycle:
        return None
    return [u for u, _ in cyc] + [cyc[-1][1]]


@dataclass
class Tensor:
    """A tensor of the dataflow graph.

    Attributes
    ----------
    name : str
        Unique within the graph.
    shape : tuple of int
        Dimensions (all ``>= 0``); ``()`` for a scalar.
    dtype : str
        numpy dtype name (``"float32"``, ``"int8"``, ...).
    nbytes : int
        Storage in bytes, ``prod(shape) * itemsize(dtype)`` unless given explicitly (packed
        weights, padded layouts). Also readable as :attr:`bytes`.
    kind : {"weight", "input", "output", "activation"}
    producer : str or None
        Name of the operator that writes it (``None`` for weights and inputs). Maintained by
        :class:`Graph`.
    consumers : list of str
        Names of the operators that read it, in stored operator order, one entry per operator
        (an operator reading the tensor twice appears once). Maintained by :class:`Graph`.
    value : numpy.ndarray or None
        The constant's elements when known (shape :attr:`shape`, dtype :attr:`dtype`, read-only),
        else ``None``. Only weights carry one: the ONNX importer keeps the values of small
        initializers and folded constants (:func:`scheduling.onnx_import.load_onnx`,
        ``max_value_elems``), which lets :func:`scheduling.transforms.simplify` find
        multiply-by-one / add-zero from the graph alone. Not part of equality or ``repr``.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    kind: str = "activation"
    producer: str | None = None
    consumers: list[str] = field(default_factory=list)
    value: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def bytes(self) -> int:
        """Alias of :attr:`nbytes` (bytes)."""
        return self.nbytes

    @property
    def numel(self) -> int:
        """Number of elements, ``prod(shape)`` (1 for a scalar)."""
        return math.prod(self.shape)


@dataclass
class Operator:
    """An operator (node) of the dataflow graph.

    Attributes
    ----------
    name : str
        Unique within the graph.
    op_type : str
        ONNX-style operator type (``"Conv"``, ``"Relu"``, ...); free text for hand-built graphs.
    inputs, outputs : tuple of str
        Tensor names read and written, in argument order (an input may repeat).
    attributes : dict
        Operator attributes (kernel shape, strides, ...), plain Python values.
    macs : int or None
        Multiply-accumulate estimate, ``None`` when unknown (only Conv/Gemm/MatMul get one from
        the ONNX importer).
    """

    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: dict[str, Any] = field(default_factory=dict)
    macs: int | None = None


class Graph:
    """A dataflow graph of operators (in a stored order) and tensors. See the module docstring.

    Parameters
    ----------
    name : str
        Label carried into the problems built from the graph.

    Attributes
    ----------
    tensors : dict[str, Tensor]
        In insertion order.
    ops : dict[str, Operator]
        In stored order (the file order for an imported model).
    """

    def __init__(self, name: str = "") -> None:
        self.name = str(name)
        self.tensors: dict[str, Tensor] = {}
        self.ops: dict[str, Operator] = {}

    # -- building -----------------------------------------------------------------------------
    def add_tensor(
        self,
        name: str,
        shape: Sequence[int] = (),
        dtype: str = "float32",
        kind: str = "activation",
        nbytes: int | None = None,
        value: Any = None,
    ) -> Tensor:
        """Add a tensor and return it.

        Parameters
        ----------
        name : str
        shape : sequence of int
            Dimensions, each ``>= 0``.
        dtype : str
            numpy dtype name.
        kind : {"weight", "input", "output", "activation"}
        nbytes : int or None
            Bytes; default ``prod(shape) * itemsize(dtype)``.
        value : array-like or None
            Known constant elements (weights only); stored as a read-only numpy array of
            ``dtype``, which must have exactly ``shape`` (no broadcasting).

        Raises
        ------
        GraphError
            Empty or duplicate name, unknown kind, a negative or non-integer dimension, unknown
            dtype, ``nbytes < 0``, a ``value`` on a non-weight or whose shape is not ``shape``.
        """
        if not isinstance(name, str) or not name:
            raise GraphError(
                f"graph {self.name!r}: tensor name must be a non-empty string, got {name!r}"
            )
        if name in self.tensors:
            raise GraphError(f"graph {self.name!r}: duplicate tensor name {name!r}")
        if kind not in TENSOR_KINDS:
            raise GraphError(f"tensor {name!r}: kind must be one of {TENSOR_KINDS}, got {kind!r}")
        dims = []
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
                raise GraphError(
                    f"tensor {name!r}: dimensions must be integers >= 0, got shape {tuple(shape)!r}"
                )
            dims.append(int(d))
        item = dtype_itemsize(dtype)
        if nbytes is None:
            nbytes = math.prod(dims) * item
        elif isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise GraphError(f"tensor {name!r}: nbytes must be an integer >= 0, got {nbytes!r}")
        arr = None
        if value is not None:
            if kind != "weight":
                raise GraphError(
                    f"tensor {name!r}: only a weight carries a constant value, kind is {kind!r}"
                )
            arr = np.array(value, dtype=np.dtype(dtype))  # a private copy
            if arr.shape != tuple(dims):
                raise GraphError(
                    f"tensor {name!r}: value has shape {arr.shape}, the tensor has shape "
                    f"{tuple(dims)}"
                )
            arr.setflags(write=False)
        t = Tensor(name, tuple(dims), str(np.dtype(dtype)), int(nbytes), kind, value=arr)
        self.tensors[name] = t
        return t

    def add_op(
        self,
        name: str,
        op_type: str,
        inputs: Iterable[str],
        outputs: Iterable[str],
        attributes: Mapping[str, Any] | None = None,
        macs: int | None = None,
        position: int | None = None,
    ) -> Operator:
        """Add an operator and return it. Its tensors must have been added already.

        Parameters
        ----------
        name, op_type : str
        inputs, outputs : iterables of tensor names
        attributes : mapping, optional
        macs : int or None
        position : int or None
            Index in the stored order to insert at (``None``: append, ``O(#inputs + #outputs)``);
        ``O(#ops)`` when given.

        Raises
        ------
        GraphError
            Empty or duplicate operator name, an unknown tensor, an output that is a weight or an
            input, an output that already has a producer, an output listed twice, no outputs.
        """
        if not isinstance(name, str) or not name:
            raise GraphError(
                f"graph {self.name!r}: operator name must be a non-empty string, got {name!r}"
            )
        if name in self.ops:
            raise GraphError(f"graph {self.name!r}: duplicate operator name {name!r}")
        inputs, outputs = tuple(inputs), tuple(outputs)
        if not outputs:
            raise GraphError(f"operator {name!r}: an operator must write at least one tensor")
        for t in inputs + outputs:
            if t not in self.tensors:
                raise GraphError(f"operator {name!r}: unknown tensor {t!r} (add_tensor it first)")
        if len(set(outputs)) != len(outputs):
            raise GraphError(f"operator {name!r}: an output is listed twice in {outputs}")
        for t in outputs:
            ten = self.tensors[t]
            if ten.kind in ("weight", "input"):
                raise GraphError(
                    f"operator {name!r}: cannot write tensor {t!r} of kind {ten.kind!r} "
                    "(weights and graph inputs have no producer)"
                )
            if ten.producer is not None:
                raise GraphError(
                    f"operator {name!r}: tensor {t!r} is already produced by {ten.producer!r} "
                    "(a tensor has one producer)"
                )
        op = Operator(name, str(op_type), inputs, outputs, dict(attributes or {}), macs)
        if position is None:
            self.ops[name] = op
        else:
            items = list(self.ops.items())
            items.insert(position, (name, op))
            self.ops = dict(items)
        for t in outputs:
            self.tensors[t].producer = name
        if position is None:  # appended last: consumer lists stay in stored order, O(#inputs)
            for t in dict.fromkeys(inputs):
                self.tensors[t].consumers.append(name)
        else:
            self._relink_consumers(inputs)
        return op

    def remove_op(self, name: str) -> Operator:
        """Remove an operator (its tensors stay; its outputs lose their producer) and return it.

        Raises ``GraphError`` for an unknown operator.
        """
        if name not in self.ops:
            raise GraphError(f"graph {self.name!r}: no operator named {name!r}")
        op = self.ops.pop(name)
        for t in op.outputs:
            self.tensors[t].producer = None
        for t in set(op.inputs):
            self.tensors[t].consumers = [c for c in self.tensors[t].consumers if c != name]
        return op

    def remove_tensor(self, name: str) -> Tensor:
        """Remove a tensor that no operator reads or writes, and return it.

        Raises ``GraphError`` for an unknown tensor or one still used (naming the operator).
        """
        t = self.tensors.get(name)
        if t is None:
            raise GraphError(f"graph {self.name!r}: no tensor named {name!r}")
        if t.producer is not None or t.consumers:
            user = t.producer or t.consumers[0]
            raise GraphError(
                f"tensor {name!r} is still used by operator {user!r}; remove that first"
            )
        return self.tensors.pop(name)

    def mark_output(self, name: str) -> None:
        """Make tensor ``name`` a graph output (kind ``"output"``; it lives to the end of a run).

        Raises ``GraphError`` for an unknown tensor or a weight.
        """
        t = self.tensors.get(name)
        if t is None:
            raise GraphError(f"graph {self.name!r}: no tensor named {name!r}")
        if t.kind == "weight":
            raise GraphError(f"tensor {name!r}: a weight cannot be a graph output")
        if t.kind == "activation":
            t.kind = "output"

    def _relink_consumers(self, names: Iterable[str]) -> None:
        """Recompute ``consumers`` of the given tensors in stored operator order (``O(#ops)``)."""
        names = set(names)
        if not names:
            return
        cons: dict[str, list[str]] = {t: [] for t in names}
        for op in self.ops.values():
            for t in dict.fromkeys(op.inputs):
                if t in cons:
                    cons[t].append(op.name)
        for t, c in cons.items():
            self.tensors[t].consumers = c

    def copy(self, name: str | None = None) -> Graph:
        """An independent deep copy (tensors, operators and attributes), optionally renamed."""
        g = Graph(self.name if name is None else name)
        for t in self.tensors.values():
            g.tensors[t.name] = Tensor(
                t.name, t.shape, t.dtype, t.nbytes, t.kind, t.producer, list(t.consumers),
                t.value,  # read-only, safe to share
            )
        for op in self.ops.values():
            g.ops[op.name] = Operator(
                op.name, op.op_type, op.inputs, op.outputs, copy.deepcopy(op.attributes), op.macs
            )
        return g

    @classmethod
    def from_networkx(cls, G: nx.DiGraph, size: Any = "cost_ram", name: str | None = None) -> Graph:
        """A graph from a networkx directed graph with one operation per node (Checkmate/MOCCASIN).

        Node ``n`` becomes operator ``n`` writing tensor ``n`` of ``size`` bytes; an edge
        ``u -> v`` means ``v`` reads ``u``'s output; nodes without successors are graph outputs.
        Full rules in :mod:`scheduling.nodelink` (:func:`~scheduling.nodelink.graph_from_networkx`).

        Parameters
        ----------
        G : networkx.DiGraph or MultiDiGraph
        size : str or callable
            Node attribute with the output bytes (default ``"cost_ram"``), or
            ``size(node, attrs) -> int``.
        name : str, optional

        Raises
        ------
        GraphError
            (:class:`~scheduling.nodelink.NodeLinkError`) undirected graph, a missing (node
            named), non-integer or negative size; :class:`CycleError` naming the cycle's nodes.
        """
        return build_from_networkx(cls, G, size=size, name=name)

    # -- queries ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ops)

    def __repr__(self) -> str:
        kinds = {k: 0 for k in TENSOR_KINDS}
        for t in self.tensors.values():
            kinds[t.kind] += 1
        summary = ", ".join(f"{k}s={v}" for k, v in kinds.items())
        return f"Graph(name={self.name!r}, ops={len(self.ops)}, {summary})"

    @property
    def order(self) -> list[str]:
        """Operator names in stored order."""
        return list(self.ops)

    def tensors_of_kind(self, *kinds: str) -> list[Tensor]:
        """Tensors whose kind is one of ``kinds``, in insertion order."""
        return [t for t in self.tensors.values() if t.kind in kinds]

    @property
    def inputs(self) -> list[str]:
        """Names of the graph inputs."""
        return [t.name for t in self.tensors_of_kind("input")]

    @property
    def outputs(self) -> list[str]:
        """Names of the graph outputs."""
        return [t.name for t in self.tensors_of_kind("output")]

    @property
    def weights(self) -> list[str]:
        """Names of the weights."""
        return [t.name for t in self.tensors_of_kind("weight")]

    def op_graph(self) -> nx.DiGraph:
        """The operator graph as a networkx ``DiGraph``.

        Nodes are operator names in stored order (node attribute ``op``: the :class:`Operator`).
        An edge ``u -> v`` exists when ``v`` reads a tensor that ``u`` writes; its attribute
        ``tensors`` lists those tensor names. Runs in ``O(#ops + #edges)``.
        """
        dg = nx.DiGraph(name=self.name)
        for op in self.ops.values():
            dg.add_node(op.name, op=op)
        for op in self.ops.values():
            for t in dict.fromkeys(op.inputs):
                p = self.tensors[t].producer
                if p is None:
                    continue
                if dg.has_edge(p, op.name):
                    dg.edges[p, op.name]["tensors"].append(t)
                else:
                    dg.add_edge(p, op.name, tensors=[t])
        return dg

    def find_cycle(self) -> list[str] | None:
        """Operator names along one cycle (``[a, b, ..., a]``), or ``None`` if acyclic."""
        try:
            edges = nx.find_cycle(self.op_graph())
        except nx.NetworkXNoCycle:
            return None
        return [u for u, _ in edges] + [edges[0][0]]

    def check_acyclic(self) -> None:
        """Raise :class:`CycleError` naming an operator on a cycle (and the cycle) if there is one."""
        cyc = self.find_cycle()
        if cyc is not None:
            raise CycleError(
                f"graph {self.name!r}: operator {cyc[0]!r} is on a cycle "
                f"({' -> '.join(cyc)}); a dataflow graph must be acyclic"
            )

    def is_topological(self, order: Sequence[str] | None = None) -> bool:
        """True iff ``order`` (default: the stored order) lists every operator once and each one
        after the producers of all its inputs. ``O(#ops + #tensor uses)``."""
        order = list(self.ops) if order is None else list(order)
        if len(order) != len(self.ops) or set(order) != set(self.ops):
            return False
        pos = {name: i for i, name in enumerate(order)}
        for name, i in pos.items():
            for t in self.ops[name].inputs:
                p = self.tensors[t].producer
                if p is not None and pos[p] >= i:
                    return False
        return True

    def topological_order(self) -> list[str]:
        """A topological order that keeps the stored order wherever it can (networkx
        lexicographical topological sort keyed by stored position). Raises :class:`CycleError`."""
        self.check_acyclic()
        pos = {n: i for i, n in enumerate(self.ops)}
        return list(nx.lexicographical_topological_sort(self.op_graph(), key=pos.__getitem__))

    def validate(self) -> None:
        """Check the graph's rules; raise :class:`GraphError` naming the first offending item.

        Rules: every tensor an operator reads has a producer or is a weight/input; every
        activation and graph output has a producer; links are consistent; no cycle
        (:class:`CycleError`). Duplicate names cannot occur (the builders refuse them).
        Runs in ``O(#ops + #tensors)`` plus the cycle search.
        """
        for op in self.ops.values():
            for t in op.inputs:
                ten = self.tensors.get(t)
                if ten is None:
                    raise GraphError(f"operator {op.name!r}: reads unknown tensor {t!r}")
                if ten.producer is None and ten.kind not in ("weight", "input"):
                    raise GraphError(
                        f"operator {op.name!r}: reads tensor {t!r} (kind {ten.kind!r}) that no "
                        "operator produces; it must be produced or be a graph input or weight"
                    )
            for t in op.outputs:
                if self.tensors[t].producer != op.name:
                    raise GraphError(
                        f"tensor {t!r}: producer link does not name operator {op.name!r}"
                    )
        for ten in self.tensors.values():
            if ten.kind in ("activation", "output") and ten.producer is None:
                raise GraphError(
                    f"tensor {ten.name!r} (kind {ten.kind!r}) has no producer; an activation or "
                    "graph output must be written by an operator"
                )
            if ten.producer is not None and ten.producer not in self.ops:
                raise GraphError(
                    f"tensor {ten.name!r}: producer {ten.producer!r} is not in the graph"
                )
        self.check_acyclic()
