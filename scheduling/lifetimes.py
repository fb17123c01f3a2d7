"""Lifetime analysis: from a graph and a schedule to the interval model of :mod:`planners`.

A schedule is an operator order; step ``k`` is the ``k``-th operator (``T`` steps, ``0 .. T-1``).
The closed lifetime ``[first, last]`` of a tensor (seed 000 section 5, seed 001 section 2:
``first_used`` = producer's position, ``last_used`` = the last consumer's position) is

* an activation: from its producer's step to its **true last** consumer's step (the maximum over
  all consumers, seed 000 section 9); a tensor produced but never read lives for its producer's
  step only (``first == last``);
* a graph output: from its producer's step to the end of the run, ``T - 1``;
* a graph input: from step 0 to its last consumer's step (step 0 if nothing reads it);
* a weight: from step 0 to its last consumer's step (informational: in a unified arena weights and
  inputs are *residents* that live for the whole schedule, as ``span_of`` in seed 000 section 8).

Control flow needs no rule of its own: an imported ``If``/``Loop``/``Scan`` operator lists the
outer-scope tensors its subgraphs read among its inputs (so they live until its step) and its
subgraph workspace ``<op>_subgraph_ws`` among its outputs, read by no operator (so it lives
exactly during its step); see :mod:`scheduling.onnx_control_flow`.

Graph inputs are **not** activations by default (``include_inputs=False``): like seed 000
section 8, which keeps ``input`` in the resident area, the caller provides the input buffer. This
is the convention behind the independent cross-check on ``light_resnet50`` in file order: 176
activation buffers (the outputs of the 176 non-constant operators, graph output included) and a
peak of 9,633,792 live activation bytes. Counting the graph input as an activation gives 177
buffers and the same peak (the 602,112-byte input dies after step 0, before the peak).

The half-open ``[start, end)`` lifetimes of :class:`planners.Buffer` are ``[first, last + 1)``.
Every function here runs in ``O(#ops + #tensor uses + #tensors)`` (plus ``O(n log n)`` in the
planners' helpers) and checks the order with the independent schedule checker
:func:`scheduling.schedule.check_schedule` first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from planners.model import Buffer, Problem

from .errors import GraphError
from .graph import Graph
from .schedule import Schedule, check_schedule

__all__ = [
    "tensor_lifetimes",
    "lifetime_problem",
    "problem_from_graph",
    "live_bytes",
    "peak_live_bytes",
    "resident_bytes",
]


def _resolve_order(graph: Graph, order: Sequence[str] | Schedule | None) -> list[str]:
    if order is None:
        order = list(graph.ops)
    elif isinstance(order, Schedule):
        order = list(order.order)
    else:
        order = list(order)
    check_schedule(graph, order)
    return order


def tensor_lifetimes(
    graph: Graph, order: Sequence[str] | Schedule | None = None
) -> dict[str, tuple[int, int]]:
    """Closed lifetimes ``{tensor name: (first, last)}`` in schedule steps, for every tensor that
    is read or written by an operator, or is a graph input (rules in the module docstring).

    Parameters
    ----------
    graph : Graph
    order : sequence of operator names, Schedule, or None
        The schedule; ``None`` takes the graph's stored order.

    Returns
    -------
    dict
        In first-step order (ties in graph tensor order); weights and inputs have step 0.

    Raises
    ------
    ScheduleError
        ``order`` is not a valid topological order of ``graph``.
    GraphError
        An operator reads an activation that no operator produces (named).

    Examples
    --------
    >>> from scheduling.examples import seed000_graph
    >>> lt = tensor_lifetimes(seed000_graph())
    >>> lt["skip"], lt["res"], lt["probs"]
    ((0, 2), (2, 3), (5, 5))
    """
    order = _resolve_order(graph, order)
    T = len(order)
    step = {name: k for k, name in enumerate(order)}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for t in graph.tensors.values():
        if t.kind in ("weight", "input"):
            if t.consumers or t.kind == "input":
                first[t.name] = 0
                last[t.name] = 0
        elif t.producer is not None:
            first[t.name] = last[t.name] = step[t.producer]
    for k, name in enumerate(order):
        for t in graph.ops[name].inputs:
            cur = last.get(t)
            if cur is None:
                raise GraphError(
                    f"operator {name!r}: reads tensor {t!r} (kind {graph.tensors[t].kind!r}) that "
                    "no operator produces; it must be produced or be a graph input or weight"
                )
            if cur < k:
                last[t] = k
    for t in graph.tensors.values():
        if t.kind == "output" and t.name in first:
            last[t.name] = max(T - 1, 0)
    names = sorted(first, key=lambda n: first[n])  # stable: graph order within a step
    return {n: (first[n], last[n]) for n in names}


def lifetime_problem(
    graph: Graph,
    order: Sequence[str] | Schedule | None = None,
    *,
    unified: bool = False,
    include_inputs: bool = False,
    alignment: int = 1,
    capacity: int | None = None,
    name: str | None = None,
) -> Problem:
    """The allocation :class:`planners.Problem` of a graph under a schedule.

    Parameters
    ----------
    graph : Graph
    order : sequence of operator names, Schedule, or None
        The schedule (``None``: stored order).
    unified : bool
        ``False`` (default): only activations (and graph outputs; graph inputs too with
        ``include_inputs``), each a buffer with half-open lifetime ``[first, last + 1)``.
        ``True``: one arena as in seed 000 section 8 -- first the residents (graph inputs and the
        weights some operator reads, ``kind="resident"``, lifetime ``[0, T)``), then the
        activations. Its lower bound is ``resident bytes + activation peak``.
    include_inputs : bool
        Count graph inputs as activations (lifetime from step 0 to the last consumer) instead of
        residents. Default ``False`` (see the module docstring for the resnet50 numbers).
    alignment : int
        Default offset alignment of the problem (bytes).
    capacity : int or None
        Arena capacity (bytes), ``None`` to minimise.
    name : str or None
        Problem name (default: the graph name).

    Returns
    -------
    Problem
        Buffer ids are tensor names; sizes are :attr:`Tensor.nbytes`; activations in order of
        their first step (ties: graph tensor order).

    Raises
    ------
    ScheduleError
        Invalid order. ``ProblemError`` from :class:`planners.Problem` on a bad alignment/capacity.
    """
    lt = tensor_lifetimes(graph, order)
    T = len(graph.ops)
    residents: list[Buffer] = []
    acts: list[Buffer] = []
    for tname, (f, last) in lt.items():
        t = graph.tensors[tname]
        if t.kind == "weight" or (t.kind == "input" and not include_inputs):
            if unified and T > 0:
                residents.append(Buffer(tname, 0, T, t.nbytes, kind="resident"))
            continue
        acts.append(Buffer(tname, f, last + 1, t.nbytes))
    return Problem(
        residents + acts,
        capacity=capacity,
        alignment=alignment,
        name=graph.name if name is None else name,
    )


#: Alias of :func:`lifetime_problem` (the name :mod:`experiments.workloads` uses).
problem_from_graph = lifetime_problem


def live_bytes(
    graph: Graph,
    order: Sequence[str] | Schedule | None = None,
    *,
    include_inputs: bool = False,
    unified: bool = False,
) -> np.ndarray:
    """Live bytes at each schedule step (the memory-over-time curve).

    Returns
    -------
    numpy int64 array of shape ``(T,)``
        ``live[k] = sum(nbytes of buffers with first <= k <= last)``, over activations by default,
        over activations and residents with ``unified=True``. ``O(n + T)`` with a difference
        array.
    """
    p = lifetime_problem(graph, order, unified=unified, include_inputs=include_inputs)
    T = len(graph.ops)
    delta = np.zeros(T + 1, np.int64)
    np.add.at(delta, p.starts, p.sizes)
    np.add.at(delta, p.ends, -p.sizes)
    return np.cumsum(delta[:T])


def peak_live_bytes(
    graph: Graph,
    order: Sequence[str] | Schedule | None = None,
    *,
    include_inputs: bool = False,
    unified: bool = False,
) -> int:
    """Max over steps of :func:`live_bytes` (seed 000 section 1 ``peak``; bytes; 0 for no ops)."""
    live = live_bytes(graph, order, include_inputs=include_inputs, unified=unified)
    return int(live.max()) if live.size else 0


def resident_bytes(graph: Graph, include_inputs: bool = False) -> int:
    """Bytes of the residents of a unified arena: graph inputs (unless ``include_inputs``) and the
    weights that some operator reads."""
    total = 0
    for t in graph.tensors.values():
        if (t.kind == "weight" and t.consumers) or (t.kind == "input" and not include_inputs):
            total += t.nbytes
    return total
