"""In-place execution (seed 002 section 5.3.3): an elementwise or activation operator writes its
result into an input that dies there.

For each elementwise operator (or fused operator whose members are all elementwise) in stored
order, the first input ``x`` such that

* ``x`` is an activation produced by an operator (not a graph input, weight or graph output),
* ``x`` has the output's shape and dtype (hence its byte size),
* no member of ``x``'s alias group (views of it, the concat buffer it is a slice of, earlier
  in-place results) is read after this operator's step or is a graph output,

becomes the output's alias parent at delta 0 (annotation ``[output, x, 0]``). Expressed through
alias groups, the planners then give both one address range. Group bookkeeping is incremental,
so the pass runs in ``O(#ops + #tensor uses)``.
"""

from __future__ import annotations

from planners.params import param_rules

from ..graph import Graph
from .base import PassLog, add_alias, alias_root, graph_aliases, is_elementwise

__all__ = ["inplace"]


@param_rules({})  # no parameters
def inplace(graph: Graph) -> tuple[Graph, PassLog]:
    """In-place pass (module docstring).

    Returns
    -------
    (Graph, PassLog)
        A copy with alias annotations (``kernel`` gets suffix ``_inplace``); log action
        ``inplace`` (op, output, input, bytes).
    """
    g = graph.copy()
    log = PassLog("inplace")
    aliases = graph_aliases(g)
    step = {n: k for k, n in enumerate(g.ops)}
    T = len(step)

    def last_read(t: str) -> int:
        ten = g.tensors[t]
        if ten.kind == "output":
            return T
        ks = [step[c] for c in ten.consumers]
        return max(ks) if ks else step.get(ten.producer, 0)

    grp_last: dict[str, int] = {}
    grp_out: dict[str, bool] = {}
    for t in g.tensors.values():
        if t.producer is None:
            continue
        r = alias_root(aliases, t.name)[0]
        grp_last[r] = max(grp_last.get(r, -1), last_read(t.name))
        grp_out[r] = grp_out.get(r, False) or t.kind == "output"
    log.stats["inplace"] = 0
    log.stats["saved_bytes"] = 0
    for name, op in g.ops.items():
        if len(op.outputs) != 1 or "aliases" in op.attributes or not is_elementwise(op):
            continue
        y = g.tensors[op.outputs[0]]
        if y.name in aliases:
            continue
        k = step[name]
        for x in dict.fromkeys(op.inputs):
            tx = g.tensors[x]
            if tx.producer is None or tx.kind != "activation":
                continue
            if tx.shape != y.shape or tx.dtype != y.dtype or tx.nbytes != y.nbytes:
                continue
            r = alias_root(aliases, x)[0]
            if grp_out.get(r) or grp_last.get(r, T) > k:
                continue
            add_alias(op, y.name, x, 0)
            op.attributes["kernel"] = str(op.attributes.get("kernel", op.op_type.lower())) + "_inplace"
            aliases[y.name] = (x, 0)
            yr = alias_root(aliases, y.name)[0]
            old = grp_last.pop(y.name, -1), grp_out.pop(y.name, False)
            grp_last[yr] = max(grp_last[yr], old[0], last_read(y.name))
            grp_out[yr] = grp_out[yr] or old[1] or y.kind == "output"
            log.add("inplace", op=name, output=y.name, input=x, bytes=y.nbytes)
            log.stats["saved_bytes"] += y.nbytes
            break
    return g, log
