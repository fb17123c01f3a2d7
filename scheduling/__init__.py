"""Graphs, schedules and lifetimes: the front of the pipeline
graph -> schedule -> lifetimes -> :class:`planners.Problem`.

* :mod:`scheduling.graph` -- the dataflow :class:`Graph` (operators in a stored order, tensors).
* :mod:`scheduling.onnx_import` -- :func:`load_onnx` (an ``.onnx`` file to a Graph).
* :mod:`scheduling.schedulers` -- the :class:`~scheduling.schedulers.Scheduler` interface and the
  ``SCHEDULERS`` registry (``file_order``, ...).
* :mod:`scheduling.lifetimes` -- closed lifetimes ``[first, last]`` per tensor, the allocation
  problem (half-open ``[first, last + 1)``), live bytes per step and the peak.
* :mod:`scheduling.examples` / :mod:`scheduling.workloads` -- seed example graphs, the nine light
  ONNX models of the onnx wheel.

>>> from scheduling import load_onnx, lifetime_problem
>>> from scheduling.workloads import onnx_light_models
>>> lifetime_problem(load_onnx(onnx_light_models()["resnet50"])).n
176
"""

from .errors import CycleError, GraphError, OnnxImportError, ScheduleError
from .graph import Graph, Operator, Tensor
from .lifetimes import (
    lifetime_problem,
    live_bytes,
    peak_live_bytes,
    problem_from_graph,
    resident_bytes,
    tensor_lifetimes,
)
from .onnx_import import load_onnx
from .schedule import Schedule, check_schedule

__all__ = [
    "Graph",
    "Operator",
    "Tensor",
    "GraphError",
    "CycleError",
    "OnnxImportError",
    "ScheduleError",
    "load_onnx",
    "Schedule",
    "check_schedule",
    "tensor_lifetimes",
    "lifetime_problem",
    "problem_from_graph",
    "live_bytes",
    "peak_live_bytes",
    "resident_bytes",
]
