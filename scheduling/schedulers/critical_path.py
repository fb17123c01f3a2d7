"""Critical-path-aware scheduling (seed 002 section 5.4.2, "关键路径感知调度")."""

from __future__ import annotations

from numbers import Real

import numpy as np

from planners.params import Interval

from .list_base import ListScheduler
from .memsim import MemoryModel, ReadyTracker

__all__ = ["CriticalPath", "operator_latency", "bottom_levels"]


def operator_latency(model: MemoryModel) -> np.ndarray:
    """Per-operator latency estimate, float64 array of shape ``(n,)``.

    The MACs the ONNX importer estimates (:attr:`scheduling.graph.Operator.macs`) when known, else
    the bytes the operator writes (a memory-bound operator's cost grows with its output), and at
    least 1. Units are therefore mixed (MACs or bytes): only the relative order matters here.
    """
    lat = np.empty(model.n, np.float64)
    for i, name in enumerate(model.names):
        macs = model.graph.ops[name].macs
        lat[i] = float(macs) if macs is not None else float(model.alloc[i])
    return np.maximum(lat, 1.0)


def bottom_levels(model: MemoryModel, latency: np.ndarray) -> np.ndarray:
    """Length of the longest latency-weighted path from each operator to a sink, the operator's own
    latency included (float64 array, shape ``(n,)``). ``O(n + E)`` over a reverse topological order."""
    bl = np.zeros(model.n, np.float64)
    for v in reversed(model.topological()):
        best = 0.0
        for s in model.succs[v]:
            if bl[s] > best:
                best = bl[s]
        bl[v] = latency[v] + best
    return bl


class CriticalPath(ListScheduler):
    """Critical-path-aware list scheduling with a memory term.

    Seed 002 section 5.4.2: ``cost(op) = alpha * latency(op) + beta * delta_M(op)``, the ready
    operator of least cost runs first. Here the latency term is the operator's remaining critical
    path (its bottom level: latency of the longest path from it to a sink, see
    :func:`bottom_levels`), taken with a minus sign so that operators on long paths go first, and
    both terms are normalised to be dimensionless::

        cost(v) = -alpha * bottom_level(v) / max(bottom_level) + beta * delta_M(v) / max(alloc)

    where ``delta_M(v) = alloc(v) - freed(v)`` is the change of live bytes. ``beta = 0`` gives a
    pure critical-path list scheduler (latency-oriented), ``alpha = 0`` gives ``min_live``.
    Ties go to the stored order.

    Parameters
    ----------
    alpha : float, default 1.0
        Weight of the critical-path term (>= 0).
    beta : float, default 1.0
        Weight of the memory term (>= 0).

    Raises
    ------
    ParameterError
        (from :meth:`schedule`, a ``ValueError``) A negative weight (named). ``CycleError`` for a cyclic graph.

    Notes
    -----
    Latency per operator: :func:`operator_latency` (MACs, else bytes written). Complexity
    ``O((n + #tensor uses) log n)``.
    """

    name = "critical_path"
    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None)],
        "beta": [Interval(Real, 0, None)],
    }

    def __init__(self, alpha: float = 1.0, beta: float = 1.0) -> None:
        self.alpha = alpha
        self.beta = beta

    def _prepare(self, model: MemoryModel) -> None:
        bl = bottom_levels(model, operator_latency(model))
        top = float(bl.max()) if model.n else 1.0
        amax = float(model.alloc.max()) if model.n and model.alloc.max() > 0 else 1.0
        self._cp = (-float(self.alpha) * bl / top).tolist()
        self._mscale = float(self.beta) / amax

    def _key(self, tracker: ReadyTracker, v: int) -> tuple:
        dm = tracker.alloc[v] - tracker.freed_now[v]
        return (self._cp[v] + self._mscale * dm, v)
