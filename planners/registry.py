"""The planner registry: name -> planner class.

Adding an algorithm is one module with a :class:`planners.base.Planner` subclass (or a
:class:`planners.greedy_engine.GreedyEnginePlanner`, for an order placed by the greedy engine) and
one line in ``PLANNERS`` below; that line also puts it under ``tests/test_planner_contract.py``,
which every registered planner passes (valid plans of the seed problems, bounds, determinism,
parameter rules, capabilities, one-line refusals). :func:`get_planner` and :func:`plan` accept a registry name, a planner instance,
a planner class, or a plain function ``func(problem, **params) -> offsets`` (networkx-style
name-or-callable entry points).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .base import FunctionPlanner, Planner
from .choose_best import ChooseBest
from .colouring import Chaitin, IntervalColouring
from .cpsat import CPSat
from .errors import ParameterError
from .exact_search import ExactSearch
from .freelist_bump import FreelistBump
from .greedy import (
    BestFit,
    FirstFit,
    GreedyByBreadth,
    GreedyByConflicts,
    GreedyBySize,
    GreedyBySizeBestFit,
    GreedyInOrder,
    GreedyPlanner,
    LifetimeAware,
)
from .ilp_blocks import ILPBlocks
from .lns_cpsat import LNSCPSat
from .local_search import LocalSearch
from .milp_offsets import MILPOffsets
from .minimize import Minimize
from .model import Plan, Problem
from .naive import Naive
from .params import check_names
from .telamalloc import TelaMalloc
from .tflm_greedy import TflmGreedy
from .tvm_usmp import TvmGreedyByConflicts, TvmGreedyBySize, TvmHillClimb
from .vela_hillclimb import VelaHillClimb
from .xla_heap import XlaHeap

__all__ = ["PLANNERS", "get_planner", "planner_for", "plan", "available_planners",
           "check_planner_names"]

#: Registry of offset planners by name (the name used on the command line and in records).
PLANNERS: dict[str, type[Planner]] = {
    "naive": Naive,
    "greedy_in_order": GreedyInOrder,
    "first_fit": FirstFit,
    "best_fit": BestFit,
    "greedy_by_size": GreedyBySize,
    "greedy_by_size_best_fit": GreedyBySizeBestFit,
    "greedy_by_breadth": GreedyByBreadth,
    "greedy_by_conflicts": GreedyByConflicts,
    "lifetime_aware": LifetimeAware,
    "greedy": GreedyPlanner,
    "choose_best": ChooseBest,
    "chaitin": Chaitin,
    "interval_colouring": IntervalColouring,
    "cpsat": CPSat,
    "ilp_blocks": ILPBlocks,
    "milp_offsets": MILPOffsets,
    "freelist_bump": FreelistBump,
    "exact_search": ExactSearch,
    "minimize": Minimize,
    "local_search": LocalSearch,
    "telamalloc": TelaMalloc,
    "lns_cpsat": LNSCPSat,
    "tflm_greedy": TflmGreedy,
    "tvm_greedy_by_size": TvmGreedyBySize,
    "tvm_greedy_by_conflicts": TvmGreedyByConflicts,
    "tvm_hill_climb": TvmHillClimb,
    "xla_heap": XlaHeap,
    "vela_hillclimb": VelaHillClimb,
}


def available_planners() -> list[str]:
    """Registered planner names, in registry order."""
    return list(PLANNERS)


def check_planner_names(names: Iterable[str]) -> list[str]:
    """``names`` as a list when every one is a registered planner; the one check of planner names
    that callers (command line, sweeps, harness) use before running anything.

    Raises ``ValueError`` naming the unknown names and listing the registered ones, e.g.
    ``unknown planner 'x'; registered planners: ...``.
    """
    return check_names(names, PLANNERS, "planner")


def planner_for(name: str, time_limit: float | None = None,
                params: dict[str, Any] | None = None) -> Planner:
    """Instantiate registered planner ``name`` with ``params``; ``time_limit`` (seconds) is the
    default for planners that take one, and a ``time_limit`` in ``params`` overrides it.

    Raises ``ValueError`` for an unknown planner or parameter, and
    :class:`planners.errors.ParameterError` for a value its rules forbid (e.g. a time limit that
    is not > 0), checked here before any run.
    """
    from .params import validate_params

    params = dict(params or {})
    cls = PLANNERS.get(name)
    if cls is not None and time_limit is not None and "time_limit" in cls._param_names():
        params.setdefault("time_limit", time_limit)
    planner = get_planner(name, **params)
    validate_params(planner)  # its declared rules, checked before any run
    return planner


def get_planner(planner: str | Planner | type[Planner] | Any, **params: Any) -> Planner:
    """Return a configured planner instance.

    Parameters
    ----------
    planner : registry name, Planner instance, Planner subclass, or callable
        ``func(problem, **params) -> offsets`` (wrapped in :class:`FunctionPlanner`).
    **params : keyword parameters of the planner's constructor.

    Raises
    ------
    ValueError
        Unknown planner name (the message lists the registered names); an unknown parameter is
        a :class:`planners.errors.ParameterError` (a ``ValueError``). Values are checked against
        the planner's ``_parameter_constraints`` when it plans.
    """
    if isinstance(planner, str):
        try:
            cls = PLANNERS[planner]
        except KeyError:
            check_planner_names([planner])  # unknown: one line with "did you mean"
            raise  # pragma: no cover - check_planner_names raised
        return _construct(cls, planner, params)
    if isinstance(planner, Planner):
        return planner.set_params(**params) if params else planner
    if isinstance(planner, type) and issubclass(planner, Planner):
        return _construct(planner, getattr(planner, "name", planner.__name__), params)
    if callable(planner):
        return FunctionPlanner(planner, **params)
    raise ValueError(f"not a planner: {planner!r}")


def _construct(cls: type[Planner], name: str, params: dict[str, Any]) -> Planner:
    """``cls(**params)``; a name that is not one of its parameters is a
    :class:`ParameterError` naming it and the parameters there are, also for a planner without
    parameters (whose constructor's own ``TypeError`` names none)."""
    names = cls._param_names()
    unknown = [k for k in params if k not in names]
    if unknown:
        raise ParameterError(f"planner {name!r}: got an unexpected keyword argument "
                             f"{unknown[0]!r}; its parameters: {', '.join(names) or 'none'}")
    try:
        return cls(**params)
    except TypeError as e:
        raise ParameterError(f"planner {name!r}: {e}") from None


def plan(problem: Problem, planner: str | Planner | Any = "greedy_by_size", **params: Any) -> Plan:
    """Plan ``problem`` with ``planner`` (registry name, instance, class or function; default
    ``"greedy_by_size"``) configured by ``params``, and return a validated :class:`Plan`.

    Raises ``ValueError`` for an unknown planner or parameter, and what
    :meth:`planners.base.Planner.plan` raises (:class:`CapacityError` when the capacity is below
    the lower bound)."""
    return get_planner(planner, **params).plan(problem)
