"""Control flow in ONNX models (``If``, ``Loop``, ``Scan``) for the importer.

:func:`scheduling.onnx_import.load_onnx` calls three functions of this module:

1. :func:`prepare_model`, before shape inference: model-local functions are expanded with
   ``onnx.inliner.inline_local_functions``; sequence, optional and map types, their operators
   and any other operator with a subgraph attribute are refused (:data:`UNMODELED_OPS`); an
   ``If`` whose condition is truly constant -- an initializer that is not also a graph input
   (IR >= 4: such an initializer is only a default that a caller may override) or the output of
   a ``Constant`` node, in its own graph or an enclosing one -- is **inlined**: its node is
   replaced by the taken branch's nodes, the branch outputs renamed to the ``If``'s outputs (an
   ``Identity`` where the branch output is not computed inside the branch), branch initializers
   moved out, clashing inner names renamed. At any nesting depth.
2. :func:`infer_subgraphs`, after the main graph's shapes are resolved: strict ONNX shape
   inference of the subgraphs in their nodes' context. It leaves the iteration dimension of a ``Loop``'s scan outputs unknown. It is set to the trip count ``M``
   only when that count is exact: ``M`` is a constant and the loop cannot stop early (no
   condition input or a constant true one, and the body passes its condition through
   unchanged). Otherwise the output keeps its unknown size and the import fails naming it --
   the size is never guessed.
   Declared subgraph output shapes are hints: when strict inference fails, it runs again
   without them and each one it contradicts is named in the import's notes. When it still
   fails and succeeds once one ``If`` branch is replaced by a copy of the other, that branch
   cannot run with these shapes (the ONNX specification rejects an operator in it, and ONNX
   Runtime fails when it is taken): it is ruled out, named in the notes, and only the other
   branch's workspace counts (silero-vad's ``silero_vad.onnx``: the 8 kHz branch given 512
   samples feeds ``LSTM`` a rank-4 input).
   It also returns the ``If`` conditions that static shapes decide
   (``Not(Equal(Size(Shape(x)), 3))``, as exporters write them; rules of
   :func:`shape_constant_conditions`); the importer inlines those with :func:`prepare_model`
   and resolves the shapes again, until none is left. On
   silero-vad's ``silero_vad_16k_op15.onnx`` this removes all 12 ``If`` nodes (3 in the main
   graph, 9 nested) and ONNX Runtime gives bit-identical outputs for the inlined model.
3. :func:`control_flow_nodes`, after constant folding: for each control-flow node of the main
   graph, its **implicit inputs** (outer-scope tensors read inside its subgraphs, at any depth)
   and its **subgraph workspace** in bytes.

Execution model (the source is ONNX Runtime): each subgraph has its own session state and its
own allocation plan, and runs inside the control-flow kernel (``onnxruntime/core/framework/
session_state.h`` ``GetSubgraphSessionState``; ``core/providers/cpu/controlflow/if.cc``,
``loop.cc``, ``scan_9.cc``, ``scan_utils.h``). So in the outer schedule

* an implicit input is read at the step of the outer control-flow node that (transitively)
  contains the read: the importer adds it to that operator's inputs, which makes lifetimes,
  use lists and scheduling dependencies right without special cases;
* the node's step needs one extra buffer ``<op>_subgraph_ws`` (``uint8``), an output that no
  operator reads, so it lives exactly during that step. Its size:

  - ``If``: the larger of the two branches' needs. Branch outputs are written into the ``If``'s
    outputs (``IfImpl::Execute`` gives the subgraph fetch allocators that allocate the ``If``
    outputs), so they are not counted;
  - ``Loop``: the body's need, where the body holds its feeds (iteration number, condition,
    loop-carried inputs) for the whole iteration and its fetched outputs (condition, carried
    outputs, per-iteration scan values) from their producer to its end: one iteration's fetches
    become the next one's feeds (``LoopImpl::SaveOutputsAndUpdateFeeds``), so the previous and
    the next carried values coexist. ORT keeps every iteration's scan value and concatenates
    them into the output after the last one (``LoopImpl::ConcatenateLoopOutput``), so with ``S``
    the bytes of one iteration's scan values and ``O`` those of the outputs:
    ``max(need(body) + O - S, O)``;
  - ``Scan``: the body's need, with the state inputs and outputs counted as for ``Loop``
    (``LoopStateVariable`` in ``scan_utils.h`` keeps the previous and the next value); scan
    input slices are views of the outer input and scan output slices are written into the outer
    output (``OutputIterator`` through fetch allocators), so neither is counted. Non-zero scan axes (ORT transposes into
    a temporary) and the opset-8 form are refused as not modelled.

  ``need(G)`` is the **planned arena** of ``G``'s own buffers: its temporaries (outputs of its
  non-constant nodes, live from the producer to the last reader in ``G``, implicit readers in
  nested subgraphs included), the feeds and fetches above, and the workspace of each nested
  control-flow node at its step, computed by the same rules (recursively). The arena is that of
  ``greedy_by_size`` (a plan checked by :func:`planners.check_plan`), not the subgraph's lower
  bound: the subgraph's buffers are placed inside the workspace by their own plan, and only a
  real plan is known to fit; a workspace the size of the lower bound could be too small when
  that bound is not achievable. The lower bound is kept on the operator
  (``subgraph_lower_bound``) for reference. The outer problem's lower bound is therefore a lower
  bound of this execution model (a separate arena per subgraph, as in ORT), at least that of
  the inlined network.

Every tensor of a subgraph that the model counts must have a static shape; otherwise
:class:`~scheduling.errors.OnnxImportError` names the subgraph, the node and its operator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from planners.bounds import lower_bound
from planners.model import Buffer, Problem
from planners.registry import plan

from .constfold import evaluate_constant_op
from .errors import OnnxImportError

__all__ = [
    "CONTROL_FLOW_OPS",
    "UNMODELED_OPS",
    "NONDETERMINISTIC_OPS",
    "ControlFlowNode",
    "prepare_model",
    "infer_subgraphs",
    "shape_constant_conditions",
    "control_flow_nodes",
    "outer_reads",
    "has_subgraph",
    "is_foldable_node",
]

#: Operators with subgraphs that the importer models.
CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan"})

#: Operators on sequence, optional or map values (not tensors), refused by :func:`prepare_model`.
UNMODELED_OPS = frozenset(
    {
        "SequenceConstruct", "SequenceEmpty", "SequenceAt", "SequenceInsert", "SequenceErase",
        "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence", "Optional",
        "OptionalGetElement", "OptionalHasElement",
    }
)

#: Operators whose output is not a function of their inputs; never folded into weights.
NONDETERMINISTIC_OPS = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
     "Bernoulli"}
)

_DEFAULT_DOMAINS = ("", "ai.onnx")
_WS_PLANNER = "greedy_by_size"


@dataclass(frozen=True)
class ControlFlowNode:
    """What the importer needs of one control-flow node of the main graph.

    Attributes
    ----------
    implicit_inputs : tuple of str
        Outer-scope tensors read inside its subgraphs at any depth, in first-read order.
    workspace : int
        Bytes of the subgraph workspace at the node's step (planned arena; module docstring).
    lower_bound : int
        The same quantity with each subgraph's lower bound instead of its planned arena (bytes).
    """

    implicit_inputs: tuple[str, ...]
    workspace: int
    lower_bound: int


# -- structure ------------------------------------------------------------------------------------
def _subgraphs(node: onnx.NodeProto) -> list[tuple[str, onnx.GraphProto]]:
    out = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            out.append((a.name, a.g))
        elif a.type == onnx.AttributeProto.GRAPHS:
            out.extend((f"{a.name}[{k}]", g) for k, g in enumerate(a.graphs))
    return out


def has_subgraph(node: onnx.NodeProto) -> bool:
    """True iff ``node`` has a graph-valued attribute (``If``, ``Loop``, ``Scan``, ...)."""
    return any(
        a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute
    )


def is_foldable_node(node: onnx.NodeProto) -> bool:
    """False for a node that constant folding must never turn into a weight even when all its
    explicit inputs are constants: a node with a subgraph (its subgraphs may read runtime
    tensors of the outer scope, and ORT runs control flow at run time) or a random generator."""
    return not has_subgraph(node) and node.op_type not in NONDETERMINISTIC_OPS


def _defined(g: onnx.GraphProto) -> set[str]:
    names = {i.name for i in g.input} | {t.name for t in g.initializer}
    names |= {t.values.name for t in g.sparse_initializer}
    for n in g.node:
        names.update(o for o in n.output if o)
    return names


def outer_reads(g: onnx.GraphProto) -> list[str]:
    """Names read in ``g`` (or in subgraphs nested in it, at any depth) that ``g`` does not define:
    the outer-scope inputs of ``g``, in first-read order. ``O(size of g and its subgraphs)``.

    >>> from onnx import helper
    >>> b = helper.make_graph([helper.make_node("Neg", ["a"], ["o"])], "b", [],
    ...                       [helper.make_tensor_value_info("o", 1, [1])])
    >>> outer_reads(b)
    ['a']
    """
    defined = _defined(g)
    out: dict[str, None] = {}
    for n in g.node:
        for i in n.input:
            if i and i not in defined:
                out[i] = None
        for _, sub in _subgraphs(n):
            for i in outer_reads(sub):
                if i not in defined:
                    out[i] = None
    for o in g.output:
        if o.name not in defined:
            out[o.name] = None  # an output passed straight through from the outer scope
    return list(out)


def _node_implicit(node: onnx.NodeProto) -> list[str]:
    out: dict[str, None] = {}
    for _, sub in _subgraphs(node):
        out.update(dict.fromkeys(outer_reads(sub)))
    return list(out)


def _walk_graphs(g: onnx.GraphProto) -> Iterable[onnx.GraphProto]:
    yield g
    for n in g.node:
        for _, sub in _subgraphs(n):
            yield from _walk_graphs(sub)


# -- 1. before shape inference --------------------------------------------------------------------
def _check_types(model: onnx.ModelProto, where: str, inferred: bool) -> None:
    for g in _walk_graphs(model.graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            t = vi.type
            if t.WhichOneof("value") not in (None, "tensor_type"):
                raise OnnxImportError(
                    f"{where}: value {vi.name!r} of graph {g.name!r} has a "
                    f"{t.WhichOneof('value').replace('_type', '')} type; only tensors are "
                    "modelled (sequence, optional and map values are not)"
                )
        if not inferred:
            for n in g.node:
                if n.domain in _DEFAULT_DOMAINS and n.op_type in UNMODELED_OPS:
                    raise OnnxImportError(
                        f"{where}: node {n.name or n.op_type!r} of graph {g.name!r} (op "
                        f"{n.op_type}) works on sequence or optional values, which are not "
                        "modelled"
                    )
                if has_subgraph(n) and not (
                    n.domain in _DEFAULT_DOMAINS and n.op_type in CONTROL_FLOW_OPS
                ):
                    raise OnnxImportError(
                        f"{where}: node {n.name or n.op_type!r} of graph {g.name!r} (op "
                        f"{n.domain + '.' if n.domain else ''}{n.op_type}) has a subgraph; only "
                        f"{sorted(CONTROL_FLOW_OPS)} are modelled"
                    )


def _scalar_truth(v: np.ndarray | None) -> bool | None:
    if v is None or v.size != 1:
        return None
    return bool(v.ravel()[0])


def _inline_constant_ifs(
    g: onnx.GraphProto,
    consts: Mapping[str, np.ndarray],
    overridable: set[str],
    defined_count: dict[str, int],
    fresh: Callable[[str], str],
    decided: Mapping[tuple, bool] | None = None,
    path: tuple = (),
) -> int:
    """Inline every constant-condition ``If`` of ``g`` and its subgraphs; return how many.

    ``decided``: conditions found constant by :func:`shape_constant_conditions`, by node path."""
    decided = decided or {}
    consts = dict(consts)
    for t in g.initializer:
        if t.name not in overridable and math.prod(t.dims) == 1:
            try:
                consts[t.name] = numpy_helper.to_array(t)
            except Exception:  # an element type numpy cannot hold: not a usable condition
                pass
    count = 0
    new_nodes: list[onnx.NodeProto] = []
    for k, node in enumerate(list(g.node)):
        for name, sub in _subgraphs(node):
            count += _inline_constant_ifs(sub, consts, set(), defined_count, fresh, decided,
                                          path + ((k, name),))
        default = node.domain in _DEFAULT_DOMAINS
        if default and node.op_type == "Constant" and len(node.output) == 1:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            res = evaluate_constant_op("Constant", attrs, [])
            if res is not None and res[0].size == 1:
                consts[node.output[0]] = res[0]
        taken = _scalar_truth(consts.get(node.input[0])) if node.input else None
        if taken is None:
            taken = decided.get(path + (k,))
        if not (default and node.op_type == "If" and taken is not None):
            new_nodes.append(node)
            continue
        branch = next(sub for name, sub in _subgraphs(node)
                      if name == ("then_branch" if taken else "else_branch"))
        new_nodes.extend(_inlined_branch(node, branch, g, defined_count, fresh))
        count += 1
    del g.node[:]
    g.node.extend(new_nodes)
    return count


def _rename(g: onnx.GraphProto, mapping: Mapping[str, str]) -> None:
    """Rename tensor names in ``g`` and its nested subgraphs (ONNX names are SSA: no shadowing)."""
    if not mapping:
        return
    for n in g.node:
        for k, i in enumerate(n.input):
            if i in mapping:
                n.input[k] = mapping[i]
        for k, o in enumerate(n.output):
            if o in mapping:
                n.output[k] = mapping[o]
        for _, sub in _subgraphs(n):
            _rename(sub, mapping)
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.name in mapping:
            vi.name = mapping[vi.name]
    for t in g.initializer:
        if t.name in mapping:
            t.name = mapping[t.name]


def _inlined_branch(
    node: onnx.NodeProto,
    branch: onnx.GraphProto,
    g: onnx.GraphProto,
    defined_count: dict[str, int],
    fresh: Callable[[str], str],
) -> list[onnx.NodeProto]:
    b = onnx.GraphProto()
    b.CopyFrom(branch)
    produced = {o for n in b.node for o in n.output if o}
    local = produced | {t.name for t in b.initializer}
    mapping: dict[str, str] = {}
    # the If's outputs take the names of the branch outputs computed inside the branch
    for bo, io in zip(b.output, node.output):
        if bo.name in produced and bo.name not in mapping and io:
            mapping[bo.name] = io
    for name in sorted(local - set(mapping)):
        if defined_count.get(name, 0) > 1:  # also defined in another scope: would clash
            mapping[name] = fresh(name)
    out_names = [bo.name for bo in b.output]
    _rename(b, mapping)
    g.initializer.extend(b.initializer)
    nodes = list(b.node)
    for src, io in zip(out_names, node.output):
        if io and mapping.get(src) != io:  # not computed in the branch (outer value, constant)
            nodes.append(helper.make_node("Identity", [mapping.get(src, src)], [io],
                                          name=f"{node.name or 'If'}/{io}"))
    return nodes


def prepare_model(
    model: onnx.ModelProto, where: str, decided: Mapping[tuple, bool] | None = None
) -> onnx.ModelProto:
    """Step 1 of the module docstring: expand local functions, refuse what is not modelled,
    inline constant-condition ``If`` nodes.

    Parameters
    ----------
    model : onnx.ModelProto
        Not modified; a changed copy is returned when something was expanded or inlined.
    where : str
        File or model label for error messages.
    decided : mapping, optional
        More ``If`` conditions known constant, ``{node path: taken}`` from
        :func:`shape_constant_conditions` on the inferred model.

    Returns
    -------
    onnx.ModelProto

    Raises
    ------
    OnnxImportError
        A model-local function that ``onnx.inliner`` cannot expand; a sequence, optional or map
        value or operator; an operator other than ``If``/``Loop``/``Scan`` with a subgraph.
    """
    if len(model.functions):
        names = sorted(f"{f.domain}.{f.name}" if f.domain else f.name for f in model.functions)
        try:
            from onnx import inliner

            expanded = inliner.inline_local_functions(model)
        except Exception as e:
            raise OnnxImportError(
                f"{where}: model-local function(s) {names} cannot be expanded "
                f"({type(e).__name__}: {e})"
            ) from None
        left = {(f.domain, f.name) for f in model.functions}
        for sub in _walk_graphs(expanded.graph):
            for n in sub.node:
                if (n.domain, n.op_type) in left:
                    raise OnnxImportError(
                        f"{where}: node {n.name or n.op_type!r} still calls model-local function "
                        f"{n.op_type!r} after expansion; it cannot be modelled"
                    )
        model = expanded
    _check_types(model, where, inferred=False)
    if not any(n.op_type == "If" for sub in _walk_graphs(model.graph) for n in sub.node):
        return model
    m = onnx.ModelProto()
    m.CopyFrom(model)
    overridable = (
        {i.name for i in m.graph.input} & {t.name for t in m.graph.initializer}
        if m.ir_version >= 4 else set()
    )
    defined_count: dict[str, int] = {}
    for sub in _walk_graphs(m.graph):
        for name in _defined(sub):
            defined_count[name] = defined_count.get(name, 0) + 1
    taken = set(defined_count)

    def fresh(name: str) -> str:
        k = 1
        while f"{name}__{k}" in taken:
            k += 1
        taken.add(f"{name}__{k}")
        return f"{name}__{k}"

    n = _inline_constant_ifs(m.graph, {}, overridable, defined_count, fresh, decided)
    return m if n else model


# -- 2. after shape inference ---------------------------------------------------------------------
def _static_dims(vi: onnx.ValueInfoProto | None) -> list[int] | None:
    if vi is None or vi.type.WhichOneof("value") != "tensor_type":
        return None
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    if not all(d.HasField("dim_value") for d in tt.shape.dim):
        return None
    return [int(d.dim_value) for d in tt.shape.dim]


def _vinfo(g: onnx.GraphProto) -> dict[str, onnx.ValueInfoProto]:
    return {vi.name: vi for vi in list(g.input) + list(g.value_info) + list(g.output)}


def _exact_trip_count(
    node: onnx.NodeProto, consts: Mapping[str, np.ndarray]
) -> int | None:
    """The exact number of iterations of a ``Loop``, or ``None`` when it is not known."""
    ins = list(node.input) + ["", ""]
    m_name, c_name = ins[0], ins[1]
    if not m_name or m_name not in consts or consts[m_name].size != 1:
        return None
    if c_name and _scalar_truth(consts.get(c_name)) is not True:
        return None
    body = next(sub for name, sub in _subgraphs(node) if name == "body")
    if len(body.input) < 2 or len(body.output) < 1:
        return None
    cond_in, cond_out = body.input[1].name, body.output[0].name
    while cond_out != cond_in:  # follow Identity nodes back to the condition input
        prod = [n for n in body.node if cond_out in n.output]
        if len(prod) != 1 or prod[0].op_type != "Identity":
            return None
        cond_out = prod[0].input[0]
    return max(int(consts[m_name].ravel()[0]), 0)


_LEND_MAX_ELEMS = 1024


def _lend_outer_constants(
    g: onnx.GraphProto, available: Mapping[str, onnx.TensorProto], overridable: set[str]
) -> set[str]:
    """Copy the small outer-scope constants each subgraph of ``g`` reads into its initializers,
    so that shape inference, which reads constant *values* (``Pad`` pads, ``Reshape`` targets)
    only from a graph's own initializers, sees them. Returns the copied names (taken back by
    :func:`_take_back_constants` after inference; the model's meaning is unchanged)."""
    here = dict(available)
    for t in g.initializer:
        if t.name not in overridable and math.prod(t.dims) <= _LEND_MAX_ELEMS:
            here[t.name] = t
    copied: set[str] = set()
    for n in g.node:
        if n.op_type == "Constant" and len(n.output) == 1 and n.domain in _DEFAULT_DOMAINS:
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            res = evaluate_constant_op("Constant", attrs, [])
            if res is not None and res[0].size <= _LEND_MAX_ELEMS:
                try:
                    here[n.output[0]] = numpy_helper.from_array(np.asarray(res[0]), n.output[0])
                except Exception:  # an element type ONNX cannot hold: no value to lend
                    pass
        for _, sub in _subgraphs(n):
            for name in outer_reads(sub):
                if name in here and name not in _defined(sub):
                    sub.initializer.append(here[name])
                    copied.add(name)
            copied |= _lend_outer_constants(sub, here, set())
    return copied


def _constants_in_place(
    g: onnx.GraphProto, produced: Mapping[tuple, Mapping[int, list[np.ndarray]]], path: tuple,
    depth: int,
) -> int:
    """Replace each single-output subgraph node whose value :func:`_fold_scopes` computed (a
    constant: shape arithmetic, constants) by a ``Constant`` node with the same output, for
    shape inference only (positions unchanged); return how many were replaced."""
    changed = 0
    here = produced.get(path, {}) if depth > 0 else {}
    for k, n in enumerate(g.node):
        for name, sub in _subgraphs(n):
            changed += _constants_in_place(sub, produced, path + ((k, name),), depth + 1)
        if k in here and n.op_type != "Constant" and len(n.output) == 1:
            try:
                value = numpy_helper.from_array(np.asarray(here[k][0]), n.output[0])
            except Exception:  # an element type ONNX cannot hold: keep the node
                continue
            n.CopyFrom(helper.make_node("Constant", [], [n.output[0]], name=n.name, value=value))
            changed += 1
    return changed


def _node_at(g: onnx.GraphProto, path: tuple) -> onnx.NodeProto:
    for k, name in path[:-1]:
        g = dict(_subgraphs(g.node[k]))[name]
    return g.node[path[-1]]


def _take_back_constants(g: onnx.GraphProto, names: set[str]) -> None:
    for n in g.node:
        for _, sub in _subgraphs(n):
            keep = [t for t in sub.initializer if t.name not in names]
            if len(keep) != len(sub.initializer):
                del sub.initializer[:]
                sub.initializer.extend(keep)
            _take_back_constants(sub, names)


def _twin_branch(node: onnx.NodeProto, keep: str, drop: str) -> None:
    """For inference only: replace ``node``'s branch ``drop`` by a copy of branch ``keep`` with
    its inner names suffixed (SSA: no shared names); outer reads and outputs stay the kept
    branch's."""
    subs = dict(_subgraphs(node))
    twin = onnx.GraphProto()
    twin.CopyFrom(subs[keep])
    inner = set()
    for sub in _walk_graphs(twin):
        inner |= _defined(sub)
    _rename(twin, {x: f"{x}::{drop}" for x in inner})
    for a in node.attribute:
        if a.name == drop:
            a.g.CopyFrom(twin)


def _inference_rounds(
    m: onnx.ModelProto,
) -> tuple[onnx.ModelProto | None, dict[tuple, bool], set[str], str | None]:
    """The rounds of :func:`infer_subgraphs` on ``m`` (changed in place: lent constants, values
    in place, the untaken branch of each decided ``If`` twinned); returns (inferred model,
    decided conditions, lent constant names, the strict failure or ``None``)."""
    g = m.graph
    overridable = {i.name for i in g.input} if m.ir_version >= 4 else set()
    copied: set[str] = set()
    n_nodes = sum(len(sub.node) for sub in _walk_graphs(g))
    decided: dict[tuple, bool] = {}
    pruned: set[tuple] = set()  # graph paths of branches that static shapes rule out
    inferred, failure = None, None
    for _ in range(n_nodes + 1):  # each round folds or decides at least one more node
        copied |= _lend_outer_constants(g, {}, overridable)
        failure = None
        try:
            inferred = shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        except Exception as e:  # InferenceError / ValidationError / RuntimeError
            failure = " ".join(str(e).split())
            if not decided:
                break
            # the failure may lie in a branch that the new values rule out: decide with the
            # shapes lenient inference still gives; a strict round must succeed at the end
            inferred = shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
        now, produced = _fold_scopes(inferred)
        changed = _constants_in_place(g, produced, (), 0)
        for path, taken in now.items():
            if path in decided or any(path[:i] in pruned for i in range(1, len(path))):
                continue
            # for inference only, the branch not taken becomes a copy of the taken one, so
            # that shapes it rules out (a Squeeze of a dimension that is not 1) cannot fail
            decided[path] = taken
            keep, drop = ("then_branch", "else_branch") if taken else ("else_branch", "then_branch")
            _twin_branch(_node_at(g, path), keep, drop)
            pruned.add(path[:-1] + ((path[-1], drop),))
            changed += 1
        if not changed:
            break
    return inferred, decided, copied, failure


def _declared_outputs(g: onnx.GraphProto) -> dict[tuple[str, str], list | None]:
    """``{(subgraph name, output name): declared dims}`` of every subgraph of ``g`` (dims are
    ints or ``dim_param`` strings; ``None``: no shape)."""
    out = {}
    for sub in _walk_graphs(g):
        if sub is g:
            continue
        for vi in sub.output:
            if vi.type.WhichOneof("value") != "tensor_type":
                continue
            tt = vi.type.tensor_type
            out[(sub.name, vi.name)] = (
                [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                 for d in tt.shape.dim] if tt.HasField("shape") else None)
    return out


def _note_hint_conflicts(declared: Mapping, inferred: Mapping, notes: list[str] | None) -> int:
    """Record in ``notes`` each declared subgraph output shape that inference contradicts (rank,
    or a static dimension against another static value); return how many."""
    n = 0
    for key, d in declared.items():
        i = inferred.get(key)
        if d is None or i is None:
            continue
        if len(d) != len(i) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                   for a, b in zip(d, i)):
            if notes is not None:
                notes.append(f"subgraph {key[0]!r}: output {key[1]!r} is declared with shape "
                             f"{d}, shape inference gives {i}; the declared shape was ignored")
            n += 1
    return n


def _if_paths(g: onnx.GraphProto, path: tuple = ()) -> list[tuple]:
    """Paths (as :func:`prepare_model` takes them) of every ``If`` of ``g``, outermost first."""
    out, inner = [], []
    for k, n in enumerate(g.node):
        if n.op_type == "If" and n.domain in _DEFAULT_DOMAINS:
            out.append(path + (k,))
        for name, sub in _subgraphs(n):
            inner.extend(_if_paths(sub, path + ((k, name),)))
    return out + inner


def _root_cause(failure: str) -> str:
    """The first error of a strict-inference message that is not a nesting header (``If``) or
    a consequence (an input left without a type), e.g. ``LSTM 'rnn/LSTM': First input tensor
    must have rank 3``."""
    import re

    for op, name, msg in re.findall(
            r"\(op_type:(\w+)(?:, node name: ([^)]*))?\): \[\w+\] (.*?)(?= \(op_type:|$)",
            failure):
        if not msg.startswith("Inference error(s)") and "instead is null" not in msg:
            return f"op {op}" + (f", node {name!r}" if name else "") + f": {msg.strip()}"
    return failure[:300]


def _rule_out_branches(m: onnx.ModelProto, failure: str, where: str,
                       notes: list[str] | None) -> tuple | None:
    """Find one ``If`` branch that cannot run with the static shapes; return the rounds of
    :func:`_inference_rounds` on ``m`` with it replaced by a copy of the other, or ``None``.

    A branch is ruled out when strict inference of the whole model fails (``failure``) and
    succeeds once that branch (only) is replaced by a copy of the other: the failure lies in the
    branch, whose operators the ONNX specification rejects at these shapes (silero-vad's 8 kHz
    branch fed 512 samples gives a ``Squeeze`` a dimension 2 and ``LSTM`` a rank-4 input; ONNX
    Runtime raises when it takes that branch). Every run that succeeds takes the other branch,
    so only that one's workspace counts. Probes go outermost first, ``then_branch`` kept first;
    the ruled-out branch is named in ``notes``.
    """
    for path in _if_paths(m.graph):
        for keep, drop in (("then_branch", "else_branch"), ("else_branch", "then_branch")):
            probe = onnx.ModelProto()
            probe.CopyFrom(m)
            _twin_branch(_node_at(probe.graph, path), keep, drop)
            inferred, decided, copied, fail = _inference_rounds(probe)
            if fail is None:
                # conditions decided inside the copy are not the ruled-out branch's own
                inside = path[:-1] + ((path[-1], drop),)
                decided = {p: t for p, t in decided.items() if p[:len(inside)] != inside}
                node = _node_at(m.graph, path)
                if notes is not None:
                    notes.append(
                        f"{where}: {drop} of If node {node.name or 'If'!r} cannot run with these "
                        "shapes: the ONNX operator specification rejects them (strict shape "
                        f"inference: {_root_cause(failure)}); a run that "
                        f"takes it fails, so only "
                        f"{keep}'s workspace is counted")
                return inferred, decided, copied, None
    return None


def infer_subgraphs(
    model: onnx.ModelProto,
    shapes: dict[str, tuple[int, ...]],
    elem_types: dict[str, int],
    where: str,
    notes: list[str] | None = None,
    values: Mapping[str, np.ndarray] | None = None,
) -> tuple[onnx.ModelProto | None, dict[tuple, bool]]:
    """Step 2 of the module docstring: shapes inside the subgraphs.

    Writes the main graph's resolved shapes (``shapes``, ``elem_types``: name -> dims and ONNX
    element type, e.g. from :func:`scheduling.onnx_shapes.resolve_shapes`) into a copy of
    ``model`` as value infos and runs strict ONNX shape inference (with data propagation), which
    infers every subgraph in the context of its node. Then gives a ``Loop``'s scan outputs whose
    iteration dimension is unknown the exact trip count where it is exact (also in ``shapes``
    for the main graph). The outputs of a ``GroupNormalization`` (or another operator of
    :data:`scheduling.onnx_shapes.UNTYPED_SPEC_OPS`) inside a subgraph, which inference leaves
    untyped, are declared with their specification's type first
    (:func:`scheduling.onnx_shapes.type_untyped_outputs`). Nothing else is guessed.

    Subgraph shapes that need constant values (``Pad`` pads, ``Reshape`` targets computed in
    the subgraph or read from the outer scope) are found in rounds: the values of
    :func:`shape_constant_conditions`' rules are lent to inference as ``Constant`` nodes and
    initializers of the copy, and an ``If`` those values decide gets its other branch replaced
    by the taken one in the copy (static shapes may make the other one fail inference).

    Returns
    -------
    onnx.ModelProto or None
        The inferred copy, or ``None`` when no node of the main graph has a subgraph. When the
        second item is not empty, the copy's untaken branches are not the model's: inline those
        ``If`` nodes (:func:`prepare_model`) and call again before planning.
    dict
        ``{node path: taken}`` of the ``If`` nodes whose condition the values decide (paths as
        :func:`prepare_model` takes them).

    Raises
    ------
    OnnxImportError
        Strict inference fails, also without declared subgraph output shapes and with any one
        ``If`` branch ruled out; a value of a sequence, optional or map type.

    Notes
    -----
    ``notes`` (a list, appended to): declared subgraph output shapes that inference
    contradicts, and a ruled-out branch (see the module docstring). ``values``: constant values
    of main-graph tensors (constant folding, e.g. a trip count ``Gather(Shape(x), 0)``); a
    one-element value is a constant for :func:`_exact_trip_count`.
    """
    if not any(has_subgraph(n) for n in model.graph.node):
        return None, {}

    def fresh_copy(clear_outputs: bool) -> onnx.ModelProto:
        m = onnx.ModelProto()
        m.CopyFrom(model)
        g = m.graph
        inits = {t.name for t in g.initializer}
        io = {vi.name: vi for vi in list(g.input) + list(g.output)}
        del g.value_info[:]
        for name, dims in shapes.items():
            if name in inits or name not in elem_types:
                continue
            vi = io.get(name)
            if vi is None:
                g.value_info.append(helper.make_tensor_value_info(name, elem_types[name], dims))
            elif vi.type.WhichOneof("value") == "tensor_type":
                vi.type.tensor_type.shape.Clear()
                for d in dims:
                    vi.type.tensor_type.shape.dim.add().dim_value = int(d)
        for sub in _walk_graphs(g):  # declared inner shapes may describe another trace: re-infer
            if sub is not g:
                del sub.value_info[:]
                if clear_outputs:  # a subgraph's declared output shapes are hints too
                    for vi in sub.output:
                        if vi.type.WhichOneof("value") == "tensor_type":
                            vi.type.tensor_type.ClearField("shape")
        from .onnx_shapes import type_untyped_outputs

        type_untyped_outputs(m)  # e.g. a GroupNormalization in a branch: its spec's type
        return m

    m = fresh_copy(False)
    variant: bool | None = False  # which fresh copy gave the inference (None: a branch ruled out)
    inferred, decided, copied, failure = _inference_rounds(m)
    if failure is not None:
        # declared subgraph output shapes (often those of the export trace) are hints, not
        # laws: infer again without them and keep the shapes inference backs
        declared = _declared_outputs(model.graph)
        m = fresh_copy(True)
        variant = True
        inferred, decided, copied, retry_failure = _inference_rounds(m)
        if retry_failure is None:
            if not _note_hint_conflicts(declared, _declared_outputs(inferred.graph), notes) \
                    and notes is not None:
                notes.append(f"{where}: declared subgraph output shapes conflicted with strict "
                             f"shape inference ({failure[:300]}); they were inferred again")
            failure = None
        else:
            rounds = _rule_out_branches(fresh_copy(True), retry_failure, where, notes)
            variant = None
            if rounds is not None:
                inferred, decided, copied, failure = rounds
                _note_hint_conflicts(declared, _declared_outputs(inferred.graph), notes)
    if failure is not None:
        raise OnnxImportError(
            f"{where}: strict ONNX shape inference of the subgraphs failed: {failure}"
        )
    m = inferred
    _take_back_constants(m.graph, copied)
    _check_types(m, where, inferred=True)
    if variant is not None:
        # inside subgraphs, ONNX Runtime's kernel arithmetic where its size is the larger: the
        # node is replaced by a placeholder of that size in a fresh copy, inferred again
        places = _subgraph_runtime_sizes(m, where, notes)
        if places:
            again = fresh_copy(variant)
            for path, (node, init) in places.items():
                sub = _graph_at(again.graph, path[:-1])
                sub.node[path[-1]].CopyFrom(node)
                sub.initializer.append(init)
            inferred, decided, copied, failure = _inference_rounds(again)
            if failure is not None:
                raise OnnxImportError(
                    f"{where}: strict ONNX shape inference of the subgraphs failed with ONNX "
                    f"Runtime's sizes: {failure}")
            m = inferred
            _take_back_constants(m.graph, copied)
            _check_types(m, where, inferred=True)

    def visit(g: onnx.GraphProto, consts: dict[str, np.ndarray], top: bool) -> None:
        consts = dict(consts)
        for t in g.initializer:
            if math.prod(t.dims) == 1:
                try:
                    consts[t.name] = numpy_helper.to_array(t)
                except Exception:  # an element type numpy cannot hold: not a trip count
                    pass
        vinfo = _vinfo(g)
        for n in g.node:
            if n.op_type == "Constant" and len(n.output) == 1:
                attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                res = evaluate_constant_op("Constant", attrs, [])
                if res is not None and res[0].size == 1:
                    consts[n.output[0]] = res[0]
            for _, sub in _subgraphs(n):
                visit(sub, consts, False)
            if n.op_type != "Loop":
                continue
            trips = _exact_trip_count(n, consts)
            n_carried = max(len(n.input) - 2, 0)
            for o in list(n.output)[n_carried:]:
                vi = vinfo.get(o)
                if trips is None or vi is None or vi.type.WhichOneof("value") != "tensor_type":
                    continue
                dims = vi.type.tensor_type.shape.dim
                if len(dims) and not dims[0].HasField("dim_value"):
                    dims[0].Clear()
                    dims[0].dim_value = trips
                static = _static_dims(vi)
                if top and static is not None and o not in shapes:
                    shapes[o] = tuple(static)
                    elem_types[o] = int(vi.type.tensor_type.elem_type)

    top = {k: np.asarray(v) for k, v in (values or {}).items() if np.size(v) == 1}
    visit(m.graph, top, True)
    return m, decided


_COND_MAX_ELEMS = 4096


def _graph_at(g: onnx.GraphProto, path: tuple) -> onnx.GraphProto:
    """The subgraph of ``g`` at ``path`` (``((node index, attribute name), ...)``)."""
    for k, name in path:
        g = dict(_subgraphs(g.node[k]))[name]
    return g


def _subgraph_runtime_sizes(
    inferred: onnx.ModelProto, where: str, notes: list[str] | None
) -> dict[tuple, tuple[onnx.NodeProto, onnx.TensorProto]]:
    """Inside the subgraphs of an inferred model, the ``Resize``/``Upsample`` nodes whose output
    ONNX Runtime's kernel makes larger than the specification
    (:func:`scheduling.onnx_shapes.runtime_output_shape`; the main graph is
    :func:`scheduling.onnx_shapes.resolve_shapes`' to judge). Returns, by node path
    (``((node, attribute), ..., node index)``), a placeholder ``Pad`` of the node's data input to
    exactly that shape (a runtime value, so never a constant of the workspace) and its pads
    initializer; each disagreement is one line of ``notes``, which says which size was taken."""
    from .onnx_shapes import RUNTIME_NOTE, runtime_output_shape

    opset = next((int(o.version) for o in inferred.opset_import
                  if o.domain in _DEFAULT_DOMAINS), 0)
    out: dict[tuple, tuple[onnx.NodeProto, onnx.TensorProto]] = {}

    def visit(g, shapes, values, path, top):
        shapes, values = dict(shapes), dict(values)
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            dims = _static_dims(vi)
            if dims is not None:
                shapes[vi.name] = tuple(dims)
        for t in g.initializer:
            shapes[t.name] = tuple(int(d) for d in t.dims)
            if math.prod(t.dims) <= _COND_MAX_ELEMS:
                try:
                    values[t.name] = numpy_helper.to_array(t)
                except Exception:  # an element type numpy cannot hold: no value
                    pass
        for k, n in enumerate(g.node):
            if n.op_type == "Constant" and len(n.output) == 1:
                attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                res = evaluate_constant_op("Constant", attrs, [])
                if res is not None and res[0].size <= _COND_MAX_ELEMS:
                    values[n.output[0]] = res[0]
            for name, sub in _subgraphs(n):
                visit(sub, shapes, values, path + ((k, name),), False)
            if top or n.op_type not in ("Resize", "Upsample") or not n.output:
                continue
            o = n.output[0]
            rt = runtime_output_shape(n, shapes, values, opset)
            spec, x = shapes.get(o), shapes.get(n.input[0])
            if rt is None or spec is None or x is None or tuple(rt) == tuple(spec):
                continue
            larger = math.prod(rt) > math.prod(spec)
            if notes is not None:
                notes.append(
                    f"{where}: tensor {o!r} ({n.op_type} node {n.name or n.op_type!r} in "
                    f"subgraph {g.name!r}): the ONNX specification gives shape {list(spec)}, "
                    f"{RUNTIME_NOTE} {list(rt)} (its own arithmetic, see "
                    "scheduling.onnx_shapes.runtime_output_shape); planned at the larger, "
                    + ("ONNX Runtime's" if larger else "the specification's"))
            if not larger or len(rt) != len(x):
                continue
            pads_name = f"{o}__runtime_pads"
            pads = [0] * len(x) + [int(r) - int(d) for r, d in zip(rt, x)]
            if opset >= 11:
                node = helper.make_node("Pad", [n.input[0], pads_name], [o], name=n.name)
            else:
                node = helper.make_node("Pad", [n.input[0]], [o], name=n.name, pads=pads)
            out[path + (k,)] = (node, numpy_helper.from_array(np.asarray(pads, np.int64),
                                                              pads_name))

    visit(inferred.graph, {}, {}, (), True)
    return out


def shape_constant_conditions(inferred: onnx.ModelProto) -> dict[tuple, bool]:
    """``If`` nodes (at any depth) whose condition is a constant computed from static shapes.

    Exporters write conditions such as ``Not(Equal(Size(Shape(x)), 3))``: once every shape is
    static they are constants, not runtime values. A value here comes only from a
    non-overridable initializer, a ``Constant``, ``Shape``/``Size`` of a tensor whose shape is
    static (``inferred`` is the model from :func:`infer_subgraphs`, so resolved shapes and
    overrides count), and default-domain, deterministic, subgraph-free operators evaluated by
    the ONNX reference evaluator on such values. Never from a runtime tensor.

    Returns
    -------
    dict
        ``{node path: taken branch is then_branch}``; a path is ``((node index, attribute
        name), ..., node index)`` from the main graph down, as :func:`prepare_model` takes it.
        Nodes that already have a constant condition are included too.
    """
    return _fold_scopes(inferred)[0]


def _fold_scopes(
    inferred: onnx.ModelProto,
) -> tuple[dict[tuple, bool], dict[tuple, dict[int, list[np.ndarray]]]]:
    """(decided ``If`` conditions, ``{graph path: {node index: output values}}`` of the nodes
    whose every output is a constant); rules of :func:`shape_constant_conditions`."""
    from onnx.reference import ReferenceEvaluator

    from .onnx_shapes import _PLACEHOLDER_DOC

    opset = next((o.version for o in inferred.opset_import if o.domain in _DEFAULT_DOMAINS), 1)
    top = inferred.graph
    overridable = {i.name for i in top.input} if inferred.ir_version >= 4 else set()
    out: dict[tuple, bool] = {}
    produced: dict[tuple, dict[int, list[np.ndarray]]] = {}

    def visit(g: onnx.GraphProto, values: dict[str, np.ndarray],
              outer_vinfo: Mapping[str, onnx.ValueInfoProto], path: tuple) -> None:
        values = dict(values)
        vinfo = {**outer_vinfo, **_vinfo(g)}
        for t in g.initializer:
            if t.name not in overridable and math.prod(t.dims) <= _COND_MAX_ELEMS:
                try:
                    values[t.name] = numpy_helper.to_array(t)
                except Exception:  # an element type numpy cannot hold: no value
                    pass
        for k, n in enumerate(g.node):
            for name, sub in _subgraphs(n):
                visit(sub, values, vinfo, path + ((k, name),))
            default = n.domain in _DEFAULT_DOMAINS
            if default and n.op_type == "If" and n.input:
                taken = _scalar_truth(values.get(n.input[0]))
                if taken is not None:
                    out[path + (k,)] = taken
            ins = [i for i in n.input if i]
            if not default or not is_foldable_node(n) or not n.output \
                    or n.doc_string == _PLACEHOLDER_DOC:  # a runtime value of a known shape
                continue
            if n.op_type in ("Shape", "Size") and len(ins) == 1:
                dims = _static_dims(vinfo.get(ins[0]))
                if dims is None and ins[0] in values:
                    dims = list(values[ins[0]].shape)
                if dims is None:
                    continue
                if n.op_type == "Size":
                    values[n.output[0]] = np.array(math.prod(dims), np.int64)
                else:
                    attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                    res = evaluate_constant_op("Shape", attrs, [None], [dims])
                    if res is not None:
                        values[n.output[0]] = res[0]
                continue
            if not all(i in values for i in ins):
                continue
            try:
                got = ReferenceEvaluator(n, opsets={"": opset}).run(
                    None, {i: values[i] for i in ins})
            except Exception:  # an operator the evaluator cannot run: no value
                continue
            for o, v in zip(n.output, got):
                v = np.asarray(v)
                if o and v.dtype.kind not in "OUSV" and v.size <= _COND_MAX_ELEMS:
                    values[o] = v

        here = produced.setdefault(path, {})
        for k, n in enumerate(g.node):
            outs = [o for o in n.output if o]
            if outs and len(outs) == len(n.output) and all(o in values for o in outs):
                here[k] = [values[o] for o in outs]

    visit(top, {}, {}, ())
    return out, produced


# -- 3. implicit inputs and workspaces ------------------------------------------------------------
def _bytes_of(vi: onnx.ValueInfoProto | None) -> int | None:
    dims = _static_dims(vi)
    if dims is None:
        return None
    try:
        item = np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)).itemsize
    except Exception:
        return None
    return math.prod(dims) * item


class _Scope:
    """Shapes of one subgraph: its own value infos, with fallbacks for loop-carried inputs."""

    def __init__(self, g: onnx.GraphProto, path: str, where: str,
                 fallback: Mapping[str, onnx.ValueInfoProto]):
        self.g, self.path, self.where = g, path, where
        self.vinfo = _vinfo(g)
        self.fallback = fallback

    def nbytes(self, name: str, node: onnx.NodeProto | None, what: str) -> int:
        """Bytes of tensor ``name`` in this subgraph; OnnxImportError naming the node if unknown."""
        b = _bytes_of(self.vinfo.get(name))
        if b is None:
            b = _bytes_of(self.fallback.get(name))
        if b is None:
            at = (f"node {node.name or node.op_type!r} (op {node.op_type})" if node is not None
                  else "its interface")
            raise OnnxImportError(
                f"{self.where}: subgraph {self.path!r}: {what} {name!r} of {at} has an unknown "
                "shape or element size; the subgraph's memory cannot be planned"
            )
        return b


def _need(
    g: onnx.GraphProto,
    path: str,
    where: str,
    outer_const: set[str],
    outer_vinfo: Mapping[str, onnx.ValueInfoProto],
    feeds: Mapping[str, int],
    fetched: Iterable[str],
    aliased: Iterable[str],
    fallback: Mapping[str, onnx.ValueInfoProto],
    opset: int,
) -> tuple[int, int]:
    """(planned arena, lower bound) in bytes of subgraph ``g``'s own buffers (module docstring).

    ``feeds``: input name -> bytes, held for the whole subgraph; ``fetched``: outputs counted
    from their producer to the end; ``aliased``: outputs written into the outer node's outputs
    (not counted)."""
    scope = _Scope(g, path, where, fallback)
    chain = {**outer_vinfo, **scope.vinfo}
    const = set(outer_const) | {t.name for t in g.initializer}
    aliased = set(aliased)
    nodes: list[onnx.NodeProto] = []
    for n in g.node:
        ins = [i for i in n.input if i]
        shape_only = (n.op_type == "Shape" and len(ins) == 1
                      and _static_dims(chain.get(ins[0])) is not None)
        if is_foldable_node(n) and (all(i in const for i in ins) or shape_only):
            const.update(o for o in n.output if o)
        else:
            nodes.append(n)
    T = max(len(nodes), 1)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    size: dict[str, int] = {}
    for name, b in feeds.items():
        first[name], last[name], size[name] = 0, T - 1, b
    for k, n in enumerate(nodes):
        reads = [i for i in n.input if i] + _node_implicit(n)
        for i in reads:
            if i in first and i not in feeds:
                last[i] = max(last[i], k)
        for o in n.output:
            if o and o not in const and o not in aliased:
                first[o] = last[o] = k
                size[o] = scope.nbytes(o, n, "output")
        if has_subgraph(n):
            ws, _ = _workspace(n, f"{path}/{n.name or n.op_type}", where, const, chain, opset)
            if ws:
                wname = f"\0ws{k}"
                first[wname] = last[wname] = k
                size[wname] = ws
    for o in fetched:
        if o in first and o not in feeds:
            last[o] = T - 1
        elif o not in first and o not in feeds:  # an outer value or a constant, copied
            first[o] = last[o] = T - 1
            size[o] = scope.nbytes(o, None, "output")
    bufs = [Buffer(str(k), first[n], last[n] + 1, size[n])
            for k, n in enumerate(first) if size[n] > 0]
    if not bufs:
        return 0, 0
    p = Problem(bufs, name=path)
    return int(plan(p, _WS_PLANNER).arena_size), int(lower_bound(p))


def _workspace(
    node: onnx.NodeProto,
    path: str,
    where: str,
    const: set[str],
    vinfo: Mapping[str, onnx.ValueInfoProto],
    opset: int,
) -> tuple[int, int]:
    """(workspace bytes from planned arenas, from lower bounds) of one control-flow node.

    ``vinfo``: value infos of the node's own graph (for the outer shapes of Loop/Scan)."""
    op = node.op_type
    label = node.name or op
    subs = dict(_subgraphs(node))
    if op == "If":
        needs = [
            _need(subs[b], f"{path}/{b}", where, const, vinfo, {}, [],
                  [o.name for o in subs[b].output], {}, opset)
            for b in ("then_branch", "else_branch")
        ]
        return max(a for a, _ in needs), max(lb for _, lb in needs)
    if op == "Loop":
        body = subs["body"]
        n_carried = max(len(node.input) - 2, 0)
        bin_ = list(body.input)
        scope = _Scope(body, f"{path}/body", where, {})
        # the carried inputs take the outer Loop inputs' shapes if the body does not declare them
        fallback = {bin_[2 + k].name: vinfo[node.input[2 + k]]
                    for k in range(n_carried)
                    if 2 + k < len(bin_) and node.input[2 + k] in vinfo}
        # the spec fixes the iteration number (int64) and the condition (bool) as scalars
        for k, et in ((0, onnx.TensorProto.INT64), (1, onnx.TensorProto.BOOL)):
            if k < len(bin_):
                fallback[bin_[k].name] = helper.make_tensor_value_info(bin_[k].name, et, [])
        outs = [vi.name for vi in body.output]
        for k in range(min(n_carried, len(bin_) - 2)):
            name = bin_[2 + k].name
            if _bytes_of(scope.vinfo.get(name)) is None and (
                1 + k >= len(outs) or _static_dims(scope.vinfo.get(outs[1 + k]))
                != _static_dims(fallback.get(name))
            ):
                raise OnnxImportError(
                    f"{where}: subgraph {path + '/body'!r}: loop-carried input {name!r} of node "
                    f"{label!r} (op Loop) has no declared shape and its carried output's shape "
                    "is not the same static shape; the state's size per iteration is unknown"
                )
        scope.fallback = fallback
        feeds = {vi.name: scope.nbytes(vi.name, None, "body input") for vi in bin_}
        arena, lb = _need(body, f"{path}/body", where, const, vinfo, feeds, outs, [],
                          fallback, opset)
        scan_outs = list(node.output)[n_carried:]
        per_iter = sum(scope.nbytes(o, None, "scan output") for o in outs[1 + n_carried:])
        total = 0
        for o in scan_outs:
            b = _bytes_of(vinfo.get(o)) if o else 0
            if b is None:
                raise OnnxImportError(
                    f"{where}: node {label!r} (op Loop): scan output {o!r} accumulates over "
                    "iterations and its size is unknown (the trip count is not a constant, or "
                    "the loop may stop early); declare its shape in the model -- the size is "
                    "never guessed"
                )
            total += b
        return max(arena + total - per_iter, total), max(lb + total - per_iter, total)
    if op == "Scan":
        if opset < 9:
            raise OnnxImportError(
                f"{where}: node {label!r} (op Scan) uses the opset-{opset} form (with "
                "sequence_lens), which is not modelled"
            )
        for ax_name in ("scan_input_axes", "scan_output_axes"):
            axes = [helper.get_attribute_value(a) for a in node.attribute if a.name == ax_name]
            if axes and any(int(x) != 0 for x in axes[0]):
                raise OnnxImportError(
                    f"{where}: node {label!r} (op Scan) has non-zero {ax_name} {list(axes[0])}; "
                    "ONNX Runtime transposes through a temporary, which is not modelled"
                )
        body = subs["body"]
        n_scan = next((a.i for a in node.attribute if a.name == "num_scan_inputs"), 0)
        n_state = len(body.input) - n_scan
        bin_ = list(body.input)
        fallback = {bin_[k].name: vinfo[node.input[k]]
                    for k in range(n_state) if node.input[k] in vinfo}
        scope = _Scope(body, f"{path}/body", where, fallback)
        feeds = {bin_[k].name: scope.nbytes(bin_[k].name, None, "state input")
                 for k in range(n_state)}
        outs = [vi.name for vi in body.output]
        return _need(body, f"{path}/body", where, const, vinfo, feeds, outs[:n_state],
                     outs[n_state:], fallback, opset)
    raise OnnxImportError(f"{where}: node {label!r} (op {op}) has a subgraph; not modelled")


def control_flow_nodes(
    inferred: onnx.ModelProto | None,
    positions: Iterable[int],
    const: set[str],
    where: str,
    implicit_from: onnx.ModelProto | None = None,
) -> dict[int, ControlFlowNode]:
    """Step 3 of the module docstring for some operators of the main graph.

    Parameters
    ----------
    inferred : onnx.ModelProto or None
        The model from :func:`infer_subgraphs` (``None``: no control flow, empty result).
    positions : iterable of int
        Indices in ``inferred.graph.node`` of the main graph's operators (after constant
        folding; the node order is the file's).
    const : set of str
        Names of the main graph's constants (weights); constants inside subgraphs are found
        the same way as in the main graph (and never from a runtime value).
    where : str
        File or model label for error messages.
    implicit_from : onnx.ModelProto, optional
        The model before inference (same main-graph node order), whose subgraphs give the
        implicit inputs: a branch that :func:`infer_subgraphs` ruled out is a copy of the other
        in ``inferred``, but the node still reads what the original branch reads.

    Returns
    -------
    dict
        ``position -> ControlFlowNode`` for each of those nodes that has a subgraph.

    Raises
    ------
    OnnxImportError
        An unknown shape in a subgraph (naming subgraph, node and op), a ``Loop`` scan output of
        unknown size, a ``Scan`` form that is not modelled.
    """
    if inferred is None:
        return {}
    opset = next((o.version for o in inferred.opset_import if o.domain in _DEFAULT_DOMAINS), 0)
    vinfo = _vinfo(inferred.graph)
    out: dict[int, ControlFlowNode] = {}
    for k in positions:
        n = inferred.graph.node[k]
        if not has_subgraph(n):
            continue
        ws, lb = _workspace(n, n.name or n.op_type, where, const, vinfo, opset)
        orig = implicit_from.graph.node[k] if implicit_from is not None else n
        implicit = dict.fromkeys(_node_implicit(orig))
        implicit.update(dict.fromkeys(_node_implicit(n)))
        out[k] = ControlFlowNode(tuple(implicit), ws, lb)
    return out
