"""The file-order scheduler: run the operators in the order the graph stores them."""

from __future__ import annotations

from ..graph import Graph
from .base import Scheduler, ScheduleResult

__all__ = ["FileOrder"]


class FileOrder(Scheduler):
    """Keep the graph's stored operator order (the ONNX file order for an imported model).

    Exporters write nodes in a topological order, so this is the baseline every other scheduler
    is compared with. The order is checked like any scheduler's; a stored order that is not
    topological raises :class:`scheduling.errors.ScheduleError` naming the offending operator.
    Runs in ``O(#ops)``.

    Examples
    --------
    >>> from scheduling.examples import seed000_graph
    >>> FileOrder().schedule(seed000_graph()).order[:3]
    ('stage', 'conv', 'add')
    """

    name = "file_order"
    _parameter_constraints: dict = {}  # no parameters

    def __init__(self) -> None:
        pass

    def _schedule(self, graph: Graph) -> ScheduleResult:
        return ScheduleResult(list(graph.ops), "heuristic")
