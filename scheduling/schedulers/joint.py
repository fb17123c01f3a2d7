"""``joint``: the joint order-and-layout optimiser (:func:`scheduling.joint.joint_optimize`) as a
registered scheduler, so every place that takes a scheduler name (``memplan schedule``,
``memplan compare --schedulers``, sweep configs) can run it.

Its order is an ordinary checked schedule (any planner can re-plan it); the offsets it found with
that order travel in ``info``: ``arena_bytes`` (bytes), ``offsets`` ({tensor name: offset},
bytes, the activation problem of :func:`scheduling.lifetimes.lifetime_problem` with default
policy: activations only, alignment ``alignment``), ``joint_bound`` (bytes, a proved lower bound
on every (order, layout) pair's arena), ``joint_status`` (``optimal`` iff
``arena_bytes == joint_bound``, :func:`planners.model.is_proved_optimal`; with pools also the
traffic proved least), ``start_scheduler``/``start_arena`` (the sequential pair it
started from, never better than ``arena_bytes``). Those offsets were checked by
:func:`planners.validate.check_plan`.

The graph's features travel with it: a graph after the ``inplace`` pass (or any pipeline with
alias annotations) is optimised with its alias groups, the order kept valid for the in-place
decisions, and ``offsets`` are those of :func:`scheduling.transforms.transformed_problem` of the
order (``info["aliases"]`` counts the alias links). With ``pools`` (preference order) ``info``
also carries ``pools`` ({tensor name: pool name}), ``arenas`` ({pool name: bytes}, whose sum is
``arena_bytes``) and ``traffic`` (:func:`planners.feature_cpsat.traffic_cost`); with ``pins``
({tensor name: offset}) those offsets are fixed. Pins that collide in every order raise
:class:`planners.errors.ProblemError` with the reason (one line).
"""

from __future__ import annotations

from numbers import Integral

from planners.model import MemoryPool
from planners.params import (
    CPSAT_SEED,
    POSITIVE_SECONDS,
    THREADS,
    Interval,
    Satisfies,
    SequenceOf,
    StrOptions,
)

from ..graph import Graph
from .base import Scheduler, ScheduleResult


def _planner_names() -> list[str]:
    from planners.registry import PLANNERS  # noqa: PLC0415

    return list(PLANNERS)


class Joint(Scheduler):
    """Operator order and offsets optimised together by CP-SAT (exact up to ``exact_max_ops``
    operators, large-neighbourhood search beyond), starting from the best (scheduler, planner)
    pair; see :mod:`scheduling.joint`.

    Parameters
    ----------
    time_limit : float, default 10
        Seconds: the wall-clock outer stop of the whole search and the nominal budget its work
        budgets derive from (:func:`scheduling.joint.joint_optimize`).
    seed : int, default 0
    workers : int, default 1
        CP-SAT workers (1 is deterministic).
    deterministic_time : float or None
        CP-SAT deterministic-time budget of the search (reproducible stop); ``None``:
        :data:`scheduling.joint.DETERMINISTIC_TIME_PER_SECOND` x ``time_limit``. ``info``'s
        ``stopped_by`` is ``"time_limit"`` and ``cut_by_clock`` true when the clock stopped
        it first (the order may then depend on the load).
    planner : str, default ``"telamalloc"``
        The planner of the starting pairs (registry name).
    exact_max_ops : int, default 12
    alignment : int, default 1
        Offset alignment (bytes) of the layout it returns in ``info``.
    pools : sequence of MemoryPool or None
        Memories in preference order (capacities, bytes); objective traffic cost, then the sum
        of the pools' arenas (:mod:`scheduling.joint`).
    pins : mapping or None
        ``{tensor name: offset}`` (bytes): fixed offsets (with pools a pinned buffer takes a
        pool whose alignment and capacity hold its pin, :func:`planners.placement.pin_pools`).

    Raises
    ------
    ParameterError
        A value its rules forbid. ``CycleError`` for a cyclic graph.
    """

    name = "joint"
    _parameter_constraints = {
        "time_limit": [POSITIVE_SECONDS],
        "seed": [CPSAT_SEED],
        "workers": [THREADS],
        "deterministic_time": [POSITIVE_SECONDS, None],
        "planner": [StrOptions(_planner_names)],
        "exact_max_ops": [Interval(Integral, 0, None)],
        "alignment": [Interval(Integral, 1, None)],
        "pools": [SequenceOf(MemoryPool), None],
        "pins": [Satisfies(lambda v: isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(o, Integral) and not isinstance(o, bool) and o >= 0
            for k, o in v.items()), "a dict {tensor name: offset >= 0 bytes}"), None],
    }

    def __init__(self, time_limit: float = 10.0, seed: int = 0, workers: int = 1,
                 deterministic_time: float | None = None, planner: str = "telamalloc",
                 exact_max_ops: int = 12, alignment: int = 1, pools=None,
                 pins=None) -> None:
        self.time_limit = time_limit
        self.seed = seed
        self.workers = workers
        self.deterministic_time = deterministic_time
        self.planner = planner
        self.exact_max_ops = exact_max_ops
        self.alignment = alignment
        self.pools = pools
        self.pins = pins

    def _schedule(self, graph: Graph) -> ScheduleResult:
        from ..joint import joint_optimize  # noqa: PLC0415

        r = joint_optimize(graph, time_limit=self.time_limit, seed=self.seed,
                           workers=self.workers, deterministic_time=self.deterministic_time,
                           planner=self.planner, exact_max_ops=self.exact_max_ops,
                           alignment=self.alignment, pools=self.pools, pins=self.pins)
        if r.status == "infeasible":
            from planners.errors import ProblemError  # noqa: PLC0415

            raise ProblemError(f"graph {graph.name!r}: {r.info['reason']}")
        info = {"arena_bytes": r.arena, "offsets": r.offsets_by_id(), "joint_bound": r.bound,
                "joint_status": r.status, "start_scheduler": r.start["scheduler"],
                "start_arena": r.start["arena"], "mode": r.info["mode"],
                "iterations": r.info["iterations"], "stopped_by": r.info["stopped_by"],
                "cut_by_clock": r.cut_by_clock, "deterministic_time": r.info["deterministic_time"]}
        if r.problem.aliases:
            info["aliases"] = len(r.problem.aliases)
        if r.pools is not None:
            info.update(pools=r.pools_by_id(), arenas=dict(r.arenas), traffic=r.traffic,
                        start_traffic=r.start.get("traffic"))
        # the order bound it used (raised by what exact_dp proved) bounds every order's peak
        return ScheduleResult(r.order, "feasible", info, bound=r.info["order_bound"])
