"""Graph transforms that change lifetimes, as composable passes (issue 7).

A **pass** is a function ``f(graph, **params) -> (Graph, PassLog)``: it never modifies its input,
returns a new valid graph and a :class:`PassLog` of what it changed. Its parameter rules are
declared once with :func:`planners.params.param_rules` (``f._parameter_constraints``) and checked
on every call (:class:`planners.errors.ParameterError`). :data:`PASSES` maps names to
passes (networkx-style registry: :func:`run_pipeline` accepts names or callables).

=============  ===================================================================================
name           pass
=============  ===================================================================================
simplify       :func:`~.simplify.simplify` -- constant folding, Identity/Dropout removal,
               cancelling Transpose pairs, multiply-by-one / add-zero from the constants'
               values (:attr:`scheduling.graph.Tensor.value`) (seed 000 section 3.1)
views          :func:`~.views.views` -- Reshape/Flatten/Squeeze/Unsqueeze alias their input
fuse           :func:`~.fuse.fuse` -- BN folding, epilogue/elementwise/residual fusion, prologue
               casts, Concat in place, horizontal fusion, with legality and cost rules (seeds
               003, 000 section 4)
inplace        :func:`~.inplace.inplace` -- elementwise operators write into a dying input
               (seed 002 section 5.3.3)
workspaces     :func:`~.workspace.workspaces` -- im2col / GEMM scratch buffers (seed 002 5.3.4)
quantize       :func:`~.quantize.quantize` -- int8/fp16 element sizes with boundary casts
               (seed 000 section 3.3)
=============  ===================================================================================

Buffers that share memory are expressed as **alias groups** (:mod:`.base`); the allocation
problem of a transformed graph is :func:`transformed_problem` (a :class:`planners.Problem` with
``aliases``), which every planner and the validator honour.

>>> from scheduling.examples import mobilenet_v1_first_layer
>>> g, logs = run_pipeline(mobilenet_v1_first_layer(), "simplify,views,fuse,inplace")
>>> list(g.ops), transformed_peak(g), logs[2].stats["saved_bytes"]
(['conv'], 401408, 1605632)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..graph import Graph
from .base import (
    PassLog,
    add_alias,
    graph_aliases,
    rebuild,
    transformed_peak,
    transformed_problem,
)
from .fuse import fold_batchnorm, fuse
from .inplace import inplace
from .legality import VectorRegisterModel, consumes_partial_result, saved_bytes
from .quantize import quantize
from .simplify import simplify
from .views import views
from .workspace import workspace_bytes, workspaces

__all__ = [
    "PASSES",
    "PassLog",
    "run_pipeline",
    "parse_pipeline",
    "simplify",
    "views",
    "fuse",
    "inplace",
    "workspaces",
    "quantize",
    "fold_batchnorm",
    "workspace_bytes",
    "VectorRegisterModel",
    "consumes_partial_result",
    "saved_bytes",
    "graph_aliases",
    "add_alias",
    "rebuild",
    "transformed_problem",
    "transformed_peak",
]

Pass = Callable[..., tuple[Graph, PassLog]]

#: Registry of graph passes by name.
PASSES: dict[str, Pass] = {
    "simplify": simplify,
    "views": views,
    "fuse": fuse,
    "inplace": inplace,
    "workspaces": workspaces,
    "quantize": quantize,
}


def parse_pipeline(pipeline: str | Sequence[str | Pass] | None) -> list[tuple[str, Pass]]:
    """``"simplify,views,fuse"`` (or a list of names/callables) -> ``[(name, pass), ...]``.

    Raises
    ------
    ValueError
        An unknown pass name (the message lists the registered ones).
    """
    if pipeline is None:
        return []
    items = [x.strip() for x in pipeline.split(",") if x.strip()] if isinstance(pipeline, str) \
        else list(pipeline)
    out = []
    for it in items:
        if callable(it):
            out.append((getattr(it, "__name__", "pass"), it))
        elif it in PASSES:
            out.append((it, PASSES[it]))
        else:
            raise ValueError(f"unknown pass {it!r}; registered passes: {', '.join(PASSES)}")
    return out


def run_pipeline(
    graph: Graph,
    pipeline: str | Sequence[str | Pass] | None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    validate: bool = True,
) -> tuple[Graph, list[PassLog]]:
    """Run passes in order.

    Parameters
    ----------
    graph : Graph
        Not modified.
    pipeline : str or sequence
        Comma-separated pass names (``"simplify,views,fuse,inplace"``) or a list of names and
        callables ``f(graph, **params) -> (Graph, PassLog)``.
    params : mapping, optional
        Keyword parameters per pass name, e.g. ``{"fuse": {"vlen": 64}}``.
    validate : bool
        Call :meth:`Graph.validate` and :func:`graph_aliases` on every pass's output (a pass that
        breaks the graph is a bug, reported with the pass's name).

    Returns
    -------
    (Graph, list of PassLog)
    """
    params = dict(params or {})
    logs: list[PassLog] = []
    g = graph
    for name, f in parse_pipeline(pipeline):
        g, log = f(g, **dict(params.get(name, {})))
        if validate:
            g.validate()
            graph_aliases(g)
        logs.append(log)
    return g, logs
