"""``choose_best``: run several planners and keep the smallest arena (XLA ``ChooseBestHeapAlgorithm``).

XLA's heap simulator runs a list of heap algorithms (spatial, temporal, ... orderings) on the same
buffers and keeps the one with the smallest heap. Here the list holds any planners (registry names,
instances or classes); ties go to the first in the list. The cost is the sum of the members' costs,
spread over threads for the members that run the compiled greedy engine (it releases the GIL).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral

from .base import Planner, SolveResult
from .catalogue import get_planner, planner_names
from .errors import FeatureError
from .greedy import GreedyPlanner, arena_of, placement_edges, resolve_engine
from .model import Problem
from .params import (
    InstanceOf,
    Interval,
    SequenceOf,
    StrOptions,
    validate_params,
)

__all__ = ["ChooseBest", "DEFAULT_CANDIDATES"]

#: Default members: the greedy orders of the literature with both fit rules.
DEFAULT_CANDIDATES: tuple[str, ...] = (
    "greedy_by_size",
    "greedy_by_size_best_fit",
    "greedy_by_breadth",
    "greedy_by_conflicts",
    "lifetime_aware",
    "best_fit",
    "greedy_in_order",
)


def _registered_planners() -> list[str]:
    """Names in :data:`planners.registry.PLANNERS`, read at check time (the registry imports this
    module)."""
    return planner_names()


class ChooseBest(Planner):
    """Run each planner of ``planners`` and return the plan with the smallest arena.

    Parameters
    ----------
    planners : sequence of str, Planner or Planner class, default :data:`DEFAULT_CANDIDATES`
        Members, resolved with :func:`planners.registry.get_planner`; the first one reaching the
        smallest arena (bytes) wins.
    workers : int or None, default None
        Threads for the greedy members that run the compiled engine (``plan.info["engine"] ==
        "c"``), which releases the GIL while placing; ``None`` takes one per CPU core (at most one
        per such member), ``1`` runs every member in turn. The other members run in the calling
        thread meanwhile. The result does not depend on it: members are compared in list order
        whatever order they finish in.

    Notes
    -----
    Greedy members on the Python engine share one interference-edge list
    (:func:`planners.greedy.placement_edges`), so the graph is built once. The winner's name and every member's arena are recorded in ``plan.info`` (``chosen``,
    ``arenas``). The status is the winner's (``heuristic`` for greedy members). A member that returns
    no offsets (infeasible / timeout) is skipped; if all do, the status of the first is returned.

    Compiler features (pins, hints, gaps, pools, colocations): ``choose_best`` declares them all
    ``native`` and hands each member the problem as given through the member's own
    :meth:`Planner.plan`, so each member's capability gate applies (a member that handles gaps
    keeps them, one that does not relaxes them for itself only); the winner is the valid plan
    that fits its pools' capacities (status not ``over_capacity``), then has the smallest arena
    (the total over the pools), ties to the first. A member that refuses a feature is skipped
    (``info["refused"]``); only when every member refuses does ``choose_best`` raise the
    :class:`~planners.errors.FeatureError` of the first.

    Raises
    ------
    ParameterError
        (from :meth:`plan`, a ``ValueError``) An empty list, an unknown planner name, ``workers``
        not a positive integer, or a member whose own parameters break its rules.

    Examples
    --------
    >>> from planners.examples import pisarchyk_lee_problem
    >>> ChooseBest(planners=("first_fit", "greedy_by_size")).plan(pisarchyk_lee_problem()).arena_size
    124
    """

    name = "choose_best"
    family = "greedy"
    #: each member applies its own capabilities (class docstring): the problem is passed as given
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native",
                     "colocations": "native"}
    _parameter_constraints = {
        "planners": [SequenceOf(StrOptions(_registered_planners), InstanceOf(Planner), callable)],
        "workers": [Interval(Integral, 1, None), None],
    }

    def __init__(self, planners=DEFAULT_CANDIDATES, workers: int | None = None) -> None:
        self.planners = planners
        self.workers = workers

    def _run_members(self, problem: Problem, resolved: list) -> list[SolveResult]:
        """Every member's :class:`SolveResult`, in list order; compiled greedy members in threads."""
        w = self.workers
        compiled = [
            isinstance(p, GreedyPlanner) and resolve_engine(p.engine) == "c" for p in resolved
        ]
        n_threads = min((os.cpu_count() or 1) if w is None else w, sum(compiled))
        results: list[SolveResult | None] = [None] * len(resolved)
        edges = None  # interference edges shared by the Python-engine greedy members
        pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else None
        try:
            futures = {
                k: pool.submit(p._solve, problem)
                for k, p in enumerate(resolved)
                if pool is not None and compiled[k]
            }
            for k, planner in enumerate(resolved):
                if k in futures:
                    continue
                if isinstance(planner, GreedyPlanner) and not compiled[k]:
                    if edges is None:
                        edges = placement_edges(problem)
                    results[k] = planner._solve(problem, edges=edges)
                else:
                    results[k] = planner._solve(problem)
            for k, fut in futures.items():
                results[k] = fut.result()
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        return results

    def _solve_features(self, problem: Problem, resolved: list) -> SolveResult:
        """Compiler features: every member plans ``problem`` through its own
        :meth:`Planner.plan` (its capability gate, its validation); the best valid plan by
        ``(over capacity, arena)`` wins (class docstring)."""
        best = None
        arenas: dict[str, int | None] = {}
        refused: dict[str, str] = {}
        first_fail = first_refusal = None
        for planner in resolved:
            label = planner.name
            if label in arenas or label in refused:
                label = f"{label}#{len(arenas) + len(refused)}"
            try:
                plan = planner.plan(problem)
            except FeatureError as e:
                refused[label] = str(e)
                first_refusal = first_refusal or e
                continue
            if plan.status in ("infeasible", "timeout", "skipped"):
                arenas[label] = None
                first_fail = first_fail or plan
                continue
            arenas[label] = plan.arena_size
            key = (plan.status == "over_capacity", plan.arena_size)
            if best is None or key < best[0]:
                best = (key, label, plan)
        if best is None and first_fail is None:
            raise FeatureError(f"planner 'choose_best': every member refuses problem "
                               f"{problem.name!r}; the first: {first_refusal}")
        extra = {"arenas": arenas}
        if refused:
            extra["refused"] = refused
        if best is None:
            return SolveResult(None, first_fail.status, info={**first_fail.info, **extra})
        _, label, plan = best
        info = dict(plan.info)
        info.update(extra, chosen=label)
        status = "heuristic" if plan.status == "over_capacity" else plan.status
        bound = plan.best_bound if plan.best_bound > plan.lower_bound else None
        return SolveResult(plan.offsets, status, bound, info, pools=plan.pools)

    def _solve(self, problem: Problem) -> SolveResult:
        members = list(self.planners)
        best = None
        arenas: dict[str, int | None] = {}
        first_fail = None
        resolved = [get_planner(m) for m in members]
        for p in resolved:  # members run through _solve, not plan(): check their rules here
            validate_params(p)
        if problem.features:
            return self._solve_features(problem, resolved)
        for planner, res in zip(resolved, self._run_members(problem, resolved), strict=True):
            label = planner.name
            if label in arenas:  # same planner twice with other params: keep both records
                label = f"{label}#{len(arenas)}"
            if res.offsets is None:
                arenas[label] = None
                first_fail = first_fail or res
                continue
            arena = arena_of(problem, res.offsets)
            arenas[label] = arena
            if best is None or arena < best[0]:
                best = (arena, label, res)
        if best is None:
            return SolveResult(None, first_fail.status, info={"arenas": arenas})
        _, label, res = best
        info = dict(res.info)
        info.update({"chosen": label, "arenas": arenas})
        return SolveResult(res.offsets, res.status, res.best_bound, info)
