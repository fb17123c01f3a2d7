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
    "ParameterError",
    "SolverError",
    "OutputError",
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


class FeatureError(MemplanError, ValueError):
    """A planner was given a problem with a compiler feature (fixed offsets, pools, ...;
    :data:`planners.model.FEATURES`) it does not handle. The message names the planner, the
    feature, one buffer that uses it and the planners that do handle it (one line)."""


class ParameterError(MemplanError, ValueError):
    """A planner, scheduler or graph pass was given a parameter value its declared rules
    (``_parameter_constraints``, :mod:`planners.params`) do not allow, or a parameter it does not
    have. The message names the owner, the parameter, the value and what is allowed. A
    ``ValueError`` (so ``except ValueError`` keeps working) but not a :class:`ProblemError`: the
    allocation problem is not at fault."""


class SolverError(MemplanError, RuntimeError):
    """An external solver (CBC through PuLP, HiGHS) failed to run or to report a result; the
    message names the solver and its last log line. Never a claim about the problem."""


class OutputError(MemplanError, OSError):
    """A result file or folder could not be written: a full disk (ENOSPC), a read-only file
    system, a missing parent folder, a parent that is not a folder, no permission. The message
    names the path and the cause (``cannot write PATH: CAUSE``); the command-line interface prints
    it as its one ``memplan: error:`` line and exits 2. Raised by :func:`planners.io.atomic_write`
    and :func:`planners.io.atomic_output`, which leave no temporary file behind and the old file,
    if any, untouched. Also an ``OSError`` (``errno`` is the underlying one), so callers that
    catch ``OSError`` keep working."""

    def __str__(self) -> str:  # the message alone, also when errno/filename are set
        return str(self.args[0]) if self.args else ""
