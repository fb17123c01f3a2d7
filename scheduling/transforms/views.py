"""Views: ``Reshape``, ``Flatten``, ``Squeeze``, ``Unsqueeze`` produce no new buffer.

The output of a view operator aliases its input at byte offset 0 (annotation ``[output, input,
0]`` on the operator, kernel ``view``): one alias group, planned as one buffer whose lifetime is
the union of both (a reshape that copies was a real complaint against a TFLite Micro compiler).
A view is made only when input and output have the same byte size and the input is an arena
tensor (an activation or graph output produced by an operator; graph inputs and weights live
outside the activation arena). Runs in ``O(#ops)``.
"""

from __future__ import annotations

from planners.params import Satisfies, param_rules

from ..graph import Graph
from .base import VIEW_OPS, PassLog, add_alias, graph_aliases

__all__ = ["views"]


@param_rules({"op_types": [Satisfies(
    lambda v: isinstance(v, (set, frozenset, list, tuple)) and all(isinstance(t, str) for t in v),
    "a set (or list) of operator type names",
)]})
def views(graph: Graph, *, op_types: frozenset[str] = VIEW_OPS) -> tuple[Graph, PassLog]:
    """Alias every view operator's output to its input (module docstring).

    Parameters
    ----------
    graph : Graph
    op_types : set of str
        Operator types treated as views.

    Returns
    -------
    (Graph, PassLog)
        A copy with ``aliases`` and ``kernel="view"`` on each view operator; log actions
        ``alias`` (op, child, parent, bytes) and ``skip`` (op, reason).
    """
    g = graph.copy()
    log = PassLog("views")
    existing = graph_aliases(g)
    for op in g.ops.values():
        if op.op_type not in op_types or not op.inputs:
            continue
        x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
        if x.producer is None:
            log.add("skip", op=op.name, reason=f"input {x.name!r} is a {x.kind}, not an arena tensor")
            continue
        if x.nbytes != y.nbytes:
            log.add("skip", op=op.name, reason=f"{x.nbytes} bytes in, {y.nbytes} bytes out")
            continue
        if y.name in existing:
            log.add("skip", op=op.name, reason=f"{y.name!r} already aliases another tensor")
            continue
        add_alias(op, y.name, x.name, 0)
        op.attributes["kernel"] = "view"
        existing[y.name] = (x.name, 0)
        log.add("alias", op=op.name, child=y.name, parent=x.name, delta=0, bytes=y.nbytes)
    return g, log
