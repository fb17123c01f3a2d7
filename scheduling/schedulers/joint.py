"""``joint``: the joint order-and-layout optimiser (:func:`scheduling.joint.joint_optimize`) as a
registered scheduler, so every place that takes a scheduler name (``memplan schedule``,
``memplan compare --schedulers``, sweep configs) can run it.

Its order is an ordinary checked schedule (any planner can re-plan it); the offsets it found with
that order travel in ``info``: ``arena_bytes`` (bytes), ``offsets`` ({tensor name: offset},
bytes, the activation problem of :func:`scheduling.lifetimes.lifetime_problem` with default
policy: activations only, alignment ``alignment``), ``joint_bound`` (bytes, a proved lower bound
on every (order, layout) pair's arena), ``joint_status`` (``optimal`` iff
``arena_bytes <= joint_bound``), ``start_scheduler``/``start_arena`` (the sequential pair it
started from, never better than ``arena_bytes``). Those offsets were checked by
:func:`planners.validate.check_plan`.
"""

from __future__ import annotations

from numbers import Integral

from planners.params import CPSAT_SEED, POSITIVE_SECONDS, THREADS, Interval, StrOptions

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
        Wall-clock seconds for the whole search.
    seed : int, default 0
    workers : int, default 1
        CP-SAT workers (1 is deterministic).
    deterministic_time : float or None
        CP-SAT deterministic-time budget (reproducible stop), ``None`` for the wall clock only.
    planner : str, default ``"telamalloc"``
        The planner of the starting pairs (registry name).
    exact_max_ops : int, default 12
    alignment : int, default 1
        Offset alignment (bytes) of the layout it returns in ``info``.

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
    }

    def __init__(self, time_limit: float = 10.0, seed: int = 0, workers: int = 1,
                 deterministic_time: float | None = None, planner: str = "telamalloc",
                 exact_max_ops: int = 12, alignment: int = 1) -> None:
        self.time_limit = time_limit
        self.seed = seed
        self.workers = workers
        self.deterministic_time = deterministic_time
        self.planner = planner
        self.exact_max_ops = exact_max_ops
        self.alignment = alignment

    def _schedule(self, graph: Graph) -> ScheduleResult:
        from ..joint import joint_optimize  # noqa: PLC0415

        r = joint_optimize(graph, time_limit=self.time_limit, seed=self.seed,
                           workers=self.workers, deterministic_time=self.deterministic_time,
                           planner=self.planner, exact_max_ops=self.exact_max_ops,
                           alignment=self.alignment)
        info = {"arena_bytes": r.arena, "offsets": r.offsets_by_id(), "joint_bound": r.bound,
                "joint_status": r.status, "start_scheduler": r.start["scheduler"],
                "start_arena": r.start["arena"], "mode": r.info["mode"],
                "iterations": r.info["iterations"]}
        # the order bound it used (raised by what exact_dp proved) bounds every order's peak
        return ScheduleResult(r.order, "feasible", info, bound=r.info["order_bound"])
