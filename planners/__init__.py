"""Offset planners for static memory planning, on the interval model.

Data flow: a :class:`Problem` (buffers with half-open ``[start, end)`` lifetimes in schedule steps
and sizes in bytes) goes into a planner, which returns a validated :class:`Plan` (one offset per
buffer, the arena size, status, seconds and the lower bound).

>>> from planners import Problem, plan
>>> p = Problem.from_closed([("a", 0, 1, 32), ("b", 1, 2, 16), ("c", 2, 3, 32)])
>>> plan(p, "naive").arena_size
80
"""

from . import catalogue as _catalogue
from . import registry as _registry
from .base import FunctionPlanner, Planner, SolveResult
from .bounds import live_profile, lower_bound, naive_arena, peak_step
from .errors import (
    CapacityError,
    FeatureError,
    InfeasibleError,
    InvalidPlanError,
    MemplanError,
    ParameterError,
    ProblemError,
)
from .io import capacity_from_name, read_minimalloc_csv, write_minimalloc_csv
from .model import KINDS, STATUSES, Buffer, Gap, MemoryPool, Plan, Problem
from .registry import PLANNERS, available_planners, get_planner, plan
from .validate import check_plan, is_valid

_catalogue.bind(_registry)  # planner modules look names up here, never in the registry

__all__ = [
    "Buffer",
    "Gap",
    "MemoryPool",
    "Problem",
    "Plan",
    "KINDS",
    "STATUSES",
    "Planner",
    "SolveResult",
    "FunctionPlanner",
    "PLANNERS",
    "available_planners",
    "get_planner",
    "plan",
    "check_plan",
    "is_valid",
    "live_profile",
    "lower_bound",
    "naive_arena",
    "peak_step",
    "read_minimalloc_csv",
    "write_minimalloc_csv",
    "capacity_from_name",
    "MemplanError",
    "ProblemError",
    "ParameterError",
    "InvalidPlanError",
    "InfeasibleError",
    "CapacityError",
    "FeatureError",
]
