"""Exceptions of the :mod:`scheduling` package.

All of them subclass :class:`planners.errors.MemplanError` (the command-line interface catches that
one), and every message names the offending item (tensor, operator, file) and the rule it breaks.
"""

from __future__ import annotations

from planners.errors import MemplanError

__all__ = ["GraphError", "CycleError", "OnnxImportError", "ScheduleError"]


class GraphError(MemplanError, ValueError):
    """A malformed dataflow graph: duplicate tensor or operator name, unknown tensor, a consumed
    activation with no producer, two producers of one tensor, an unknown tensor size."""


class CycleError(GraphError):
    """The operator graph has a cycle; the message names an operator on it and the cycle."""


class OnnxImportError(GraphError):
    """An ONNX file cannot be imported: unreadable or malformed protobuf, failed strict shape
    inference, a tensor whose size stays unknown (the message names the tensor and the symbolic
    dimension to override), or an unsupported element type."""


class ScheduleError(GraphError):
    """An operator order is not a valid schedule: a missing, repeated or unknown operator, or an
    operator placed before the producer of one of its inputs."""
