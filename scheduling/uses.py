"""Use steps of the buffers of a scheduled graph (for slice-level memory tiers).

A :class:`planners.Problem` has lifetimes but no use lists; the slice-level SRAM/DRAM assignment
(:func:`planners.tiers.assign_tier_slices`) cuts each buffer's lifetime at its uses. This module
derives them from a :class:`~scheduling.graph.Graph` and a schedule: the step of the tensor's
producer (the write; graph inputs and weights: step 0, or the buffer's start) and the step of
each consumer (one read per consuming operator); a graph output is also read at its last step
(``T - 1``, by the caller). Steps are schedule positions; lifetimes follow
:func:`scheduling.lifetimes.lifetime_problem` (half-open ``[first, last + 1)``).
"""

from __future__ import annotations

from collections.abc import Sequence

from planners.errors import ProblemError
from planners.model import Problem

from .graph import Graph
from .lifetimes import _resolve_order, lifetime_problem
from .schedule import Schedule

__all__ = ["buffer_uses"]


def buffer_uses(graph: Graph, problem: Problem | None = None,
                order: Sequence[str] | Schedule | None = None) -> list[list[int]]:
    """Use steps of each buffer of ``problem``, in problem order.

    Parameters
    ----------
    graph : Graph
    problem : Problem or None
        Buffers whose ids are tensor names of ``graph`` (default:
        ``lifetime_problem(graph, order)``).
    order : sequence of operator names, Schedule, or None
        The schedule the problem was built with (default: stored order).

    Returns
    -------
    list of list of int
        For buffer ``i``: its producer step (or the buffer's start for inputs and weights), the
        step of each consumer, and ``T - 1`` for a graph output; sorted, each inside the buffer's
        half-open lifetime ``[start, end)`` (a use outside is dropped only if the buffer's
        lifetime was cut by the caller -- never for :func:`lifetime_problem`'s problems).

    Raises
    ------
    ProblemError
        A buffer id that is not a tensor of ``graph`` (named).
    ScheduleError
        ``order`` is not a valid topological order.

    Notes
    -----
    ``O(#buffers + #tensor uses)``.

    Examples
    --------
    >>> from scheduling.examples import seed000_graph
    >>> g = seed000_graph()
    >>> p = lifetime_problem(g)
    >>> dict(zip(p.ids, buffer_uses(g, p)))["skip"]
    [0, 1, 2]
    """
    order = _resolve_order(graph, order)
    if problem is None:
        problem = lifetime_problem(graph, order)
    step = {name: k for k, name in enumerate(order)}
    T = len(order)
    out: list[list[int]] = []
    for b in problem.buffers:
        t = graph.tensors.get(b.id)
        if t is None:
            raise ProblemError(f"buffer {b.id!r}: no tensor of that name in graph {graph.name!r}; "
                               "use steps need buffer ids that are tensor names")
        u = [step[t.producer] if t.producer is not None else b.start]
        u += [step[c] for c in t.consumers if c in step]
        if t.kind == "output" and T:
            u.append(T - 1)
        out.append(sorted(x for x in u if b.start <= x < b.end))
    return out
