"""Warm starts for the exact planners: the best plan among the registered cheap heuristics.

:func:`best_heuristic` runs every registered heuristic planner named in :data:`HEURISTICS` (the
greedy family written in other modules, plus this package's colouring planners) and ``naive`` as the
last resort, on the problem **without** its capacity, and keeps the plan with the smallest arena. The
exact planners (``cpsat``, ``milp_offsets``) use it as a solution hint and as an upper bound on the
arena (a valid layout of that height exists).
"""

from __future__ import annotations

import time

import numpy as np

from .catalogue import planner_classes
from .errors import MemplanError
from .model import Problem

__all__ = ["HEURISTICS", "HEURISTIC_SHARE", "best_heuristic"]

#: Registry names tried, in this order, when registered (unregistered names are skipped).
HEURISTICS = (
    "greedy_by_size",
    "greedy_by_size_best_fit",
    "greedy_by_breadth",
    "greedy_by_conflicts",
    "lifetime_aware",
    "first_fit",
    "best_fit",
    "greedy_in_order",
    "interval_colouring",
    "chaitin",
    "naive",
)


#: Share of an exact planner's time limit after which no further warm-start heuristic is started
#: (``deadline`` of :func:`best_heuristic`); at least one always runs. Measured on 20000 random
#: buffers: the eight greedy heuristics take 0.16-0.24 s each, ``interval_colouring`` 0.27 s,
#: ``chaitin`` 5.6 s, so under a short limit the slow colouring is left out.
HEURISTIC_SHARE = 0.25


def best_heuristic(
    problem: Problem,
    names: tuple[str, ...] | None = None,
    stop_at: int | None = None,
    deadline: float | None = None,
):
    """Run the registered heuristics and return the best plan's offsets.

    Parameters
    ----------
    problem : Problem
        Any capacity is ignored (the heuristics minimise the arena).
    names : tuple of str, optional
        Registry names to try (default :data:`HEURISTICS`); unregistered names are skipped.
    stop_at : int or None
        Arena in bytes that is good enough: stop at the first heuristic whose arena is
        ``<= stop_at`` (the exact planners' "does it fit the capacity?" shortcut). ``None`` runs all.
    deadline : float or None
        A :func:`time.perf_counter` instant after which no further heuristic is started (the one
        running finishes), nor one whose class estimates (``estimated_seconds(problem)``, e.g.
        :meth:`planners.colouring.Chaitin.estimated_seconds`) that it would end past it
        (``info["heuristics_skipped"]``: name -> estimated seconds); heuristics run until one has
        succeeded (``naive`` last), so a plan is always returned.

    Returns
    -------
    offsets : int64 array of shape ``(n,)`` (bytes), a validated plan.
    arena : int
        Its arena (bytes).
    info : dict
        ``{"warm_start": name, "warm_start_arena": arena, "heuristic_arenas": {name: arena},
        "heuristic_seconds": s}``; a heuristic that raised a toolkit error is recorded as
        ``"error: ..."`` and skipped. Heuristics not run (``stop_at`` met or ``deadline`` passed)
        are absent from ``heuristic_arenas``; ``info["heuristics_stopped_by"]`` is ``"stop_at"``
        or ``"deadline"`` then. Ties go to the earlier name.

    Notes
    -----
    Cost: the sum of the heuristics' costs (each ``O(n log n)`` to ``O(n^2)``). ``naive`` (``O(n)``)
    always succeeds, so a plan is always returned.
    """
    PLANNERS = planner_classes()

    free = problem.with_capacity(None)
    names = HEURISTICS if names is None else tuple(names)
    if "naive" not in names:
        names = names + ("naive",)
    t0 = time.perf_counter()
    arenas: dict[str, object] = {}
    skipped: dict[str, float] = {}
    best = None
    stopped = None
    for name in names:
        if name not in PLANNERS:
            continue
        if best is not None and stop_at is not None and best[1] <= stop_at:
            stopped = "stop_at"
            break
        if deadline is not None and best is not None and time.perf_counter() > deadline:
            stopped = "deadline"
            break
        estimate = getattr(PLANNERS[name], "estimated_seconds", None)
        if deadline is not None and best is not None and estimate is not None:
            seconds = float(estimate(free))
            if time.perf_counter() + seconds > deadline:
                skipped[name] = round(seconds, 3)
                continue
        try:
            p = PLANNERS[name]().plan(free)
        except MemplanError as e:  # a broken heuristic must not stop an exact solve; recorded
            arenas[name] = f"error: {e}"
            continue
        arenas[name] = p.arena_size
        if best is None or p.arena_size < best[1]:
            best = (name, p.arena_size, np.asarray(p.offsets, np.int64))
    assert best is not None  # naive is always registered
    info = {
        "warm_start": best[0],
        "warm_start_arena": int(best[1]),
        "heuristic_arenas": arenas,
        "heuristic_seconds": time.perf_counter() - t0,
    }
    if stopped is not None:
        info["heuristics_stopped_by"] = stopped
    if skipped:
        info["heuristics_skipped"] = skipped
    return best[2], int(best[1]), info
