"""``choose_best``: run several planners and keep the smallest arena (XLA ``ChooseBestHeapAlgorithm``).

XLA's heap simulator runs a list of heap algorithms (spatial, temporal, ... orderings) on the same
buffers and keeps the one with the smallest heap. Here the list holds any planners (registry names,
instances or classes); ties go to the first in the list. The cost is the sum of the members' costs.
"""

from __future__ import annotations

from .base import Planner, SolveResult
from .greedy import GreedyPlanner, arena_of, placement_edges
from .model import Problem

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


class ChooseBest(Planner):
    """Run each planner of ``planners`` and return the plan with the smallest arena.

    Parameters
    ----------
    planners : sequence of str, Planner or Planner class, default :data:`DEFAULT_CANDIDATES`
        Members, resolved with :func:`planners.registry.get_planner`; the first one reaching the
        smallest arena (bytes) wins.

    Notes
    -----
    Greedy members share one interference-edge list (:func:`planners.greedy.placement_edges`), so
    the graph is built once. The winner's name and every member's arena are recorded in ``plan.info`` (``chosen``,
    ``arenas``). The status is the winner's (``heuristic`` for greedy members). A member that returns
    no offsets (infeasible / timeout) is skipped; if all do, the status of the first is returned.

    Raises
    ------
    ValueError
        Empty list or an unknown planner name.

    Examples
    --------
    >>> from planners.examples import pisarchyk_lee_problem
    >>> ChooseBest(planners=("first_fit", "greedy_by_size")).plan(pisarchyk_lee_problem()).arena_size
    124
    """

    name = "choose_best"
    family = "greedy"

    def __init__(self, planners=DEFAULT_CANDIDATES) -> None:
        self.planners = planners

    def _solve(self, problem: Problem) -> SolveResult:
        from .registry import get_planner  # noqa: PLC0415  (the registry imports this module)

        members = list(self.planners)
        if not members:
            raise ValueError("choose_best: the list of planners is empty")
        best = None
        arenas: dict[str, int | None] = {}
        first_fail = None
        edges = None  # interference edges shared by the greedy members (built once)
        for m in members:
            planner = get_planner(m)
            if isinstance(planner, GreedyPlanner):
                if edges is None:
                    edges = placement_edges(problem)
                res = planner._solve(problem, edges=edges)
            else:
                res = planner._solve(problem)
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
