"""Exceptions shared by the whole toolkit.

Every error names the offending item (buffer id, file and line, tensor name, operator) and the rule
it breaks, so that a researcher can fix the input without reading a traceback. The command-line
interface catches :class:`MemplanError` and exits non-zero with the message alone.
"""

from __future__ import annotations

__all__ = [
    "MemplanError",
    "ProblemError",
    "InvalidPlanError",
    "InfeasibleError",
    "CapacityError",
    "SolverError",
]


class MemplanError(Exception):
    """Base class of every error the toolkit raises on bad input or an impossible request."""


class ProblemError(MemplanError, ValueError):
    """A malformed allocation problem: negative size, ``end <= start``, duplicate id, bad CSV row."""


class InvalidPlanError(MemplanError, AssertionError):
    """A plan breaks a rule of the interval model (overlap in time and address, misalignment,
    negative offset, arena above capacity). Raised by :func:`planners.validate.check_plan`."""


class InfeasibleError(MemplanError):
    """No plan can exist, e.g. the capacity is below the lower bound (max live bytes)."""


class CapacityError(InfeasibleError):
    """The requested capacity is below what is provably needed; the message states the bound."""


class SolverError(MemplanError, RuntimeError):
    """An external solver (CBC through PuLP, HiGHS) failed to run or to report a result; the
    message names the solver and its last log line. Never a claim about the problem."""
