"""Estimate a solver model's size before building it, and decline what cannot be built in time.

The exact planners (``cpsat``, ``milp_offsets``, ``ilp_blocks``) and the exact schedulers build
models whose size grows with the number of interfering pairs (``O(n^2)`` in the worst case) or with
operators x steps. Building such a model in Python can take longer than the whole time limit (and
gigabytes of memory) before the solver even starts, so a time limit would not hold for the call.
Each of them therefore counts its model first (:class:`ModelEstimate`, in ``O(n log n)`` without
building anything), turns the count of non-zero terms into estimated build seconds with a rate
measured on this toolkit's models, and declines with status ``skipped`` when that estimate exceeds
a fraction of the time limit (:func:`decline_reason`).

The rates (seconds per non-zero term, :data:`BUILD_RATES`) were measured on a 2-core x86-64
machine shared with other jobs and doubled; they estimate the Python build plus the solver's own
loading of the model (which its time limit does not interrupt), not the search.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .model import Problem

__all__ = ["ModelEstimate", "BUILD_RATES", "interference_pairs", "clique_terms", "decline_reason"]

#: Seconds per non-zero term to build the model and load it into the solver, about twice the
#: slowest rate measured (random problems / layered graphs, 2-core machine under load; solver
#: stopped right after loading): ``cpsat`` NoOverlap2D 5.2e-6 to 7.3e-6 without hints (n = 1k to
#: 20k buffers; 2.4 s for 20k buffers with hints at a load of 7 on 2 cores, 1.7e-5),
#: pairwise 3.2e-6 to 5.0e-6 (42k to 2.1M terms); ``milp_offsets`` 4.8e-5 to 9.4e-5 including
#: PuLP writing the file and CBC reading it (20k to 1.1M terms); ``ilp_blocks`` with OR-Tools SCIP
#: 1.3e-5 to 1.7e-5 (59k to 11M terms), with PuLP/CBC 2.6e-4 (59k terms); ``cpsat_schedule``
#: 1.3e-5 to 3.4e-5 (50 to 400 operators, 42k to 2.7M terms).
BUILD_RATES = {
    "cpsat_nooverlap2d": 2.0e-5,
    "cpsat_pairwise": 1.0e-5,
    "milp_offsets": 2.0e-4,
    "ilp_blocks_ortools": 3.5e-5,
    "ilp_blocks_pulp": 5.0e-4,
    "cpsat_schedule": 6.0e-5,
}


@dataclass(frozen=True)
class ModelEstimate:
    """The size of a model that has not been built.

    Attributes
    ----------
    variables, constraints : int
        Counts of the model's variables and constraints.
    terms : int
        Non-zero terms (variable occurrences in constraints), the measure of build cost.
    seconds : float
        Estimated seconds to build and load the model: ``terms`` times the measured rate.
    """

    variables: int
    constraints: int
    terms: int
    seconds: float

    @classmethod
    def of(cls, kind: str, variables: int, constraints: int, terms: int) -> ModelEstimate:
        """Estimate with the measured rate :data:`BUILD_RATES` ``[kind]``."""
        return cls(int(variables), int(constraints), int(terms), float(terms) * BUILD_RATES[kind])

    def as_info(self) -> dict:
        """The estimate as a plain dict (recorded in ``info["model_estimate"]``)."""
        d = asdict(self)
        d["seconds"] = round(d["seconds"], 3)
        return d


def interference_pairs(problem: Problem) -> int:
    """Number of pairs of non-zero-size buffers live at the same step, without listing them.

    Pairs ``i < j`` with ``start_i < end_j`` and ``start_j < end_i`` (half-open lifetimes in
    steps): all pairs minus those where one ends at or before the other starts. ``O(n log n)``.

    >>> interference_pairs(Problem.from_closed([("a", 0, 1, 8), ("b", 1, 2, 8), ("c", 2, 3, 8)]))
    2
    """
    live = problem.sizes > 0
    s = np.sort(problem.starts[live])
    e = np.sort(problem.ends[live])
    n = int(s.size)
    # for each buffer j, buffers i with end_i <= start_j are disjoint from it (counted once)
    disjoint = int(np.searchsorted(e, s, side="right").sum())
    return n * (n - 1) // 2 - disjoint


def clique_terms(problem: Problem) -> tuple[int, int]:
    """Number and total size of the maximal cliques of the interval graph, without listing them.

    The maximal cliques are the live sets at those start times ``t`` where some live buffer ends
    at or before the next start time (:func:`planners.ilp_blocks.maximal_cliques`); the live count
    at ``t`` is ``#(start <= t) - #(end <= t)``. Non-zero-size buffers only. ``O(n log n)``.

    >>> clique_terms(Problem.from_closed([("a", 0, 1, 8), ("b", 1, 2, 8), ("c", 2, 3, 8)]))
    (2, 4)
    """
    live = problem.sizes > 0
    if not live.any():
        return 0, 0
    s = np.sort(problem.starts[live])
    e = np.sort(problem.ends[live])
    times = np.unique(s)
    nxt = np.append(times[1:], np.iinfo(np.int64).max)
    count = np.searchsorted(s, times, side="right") - np.searchsorted(e, times, side="right")
    ending = np.searchsorted(e, nxt, side="right") - np.searchsorted(e, times, side="right")
    maximal = ending > 0
    return int(maximal.sum()), int(count[maximal].sum())


def decline_reason(
    estimate: ModelEstimate, seconds: float | None, fraction: float | None, what: str
) -> str | None:
    """Why a model should not be built, or ``None`` to build it.

    Declines when ``estimate.seconds > fraction * seconds``, ``seconds`` being what is left of the
    call's time limit: the build would eat more than that share of it. ``fraction=None`` (or no
    time limit) never declines (for ablations; the time limit may then be exceeded by the build).
    """
    if fraction is None or seconds is None:
        return None
    budget = float(fraction) * max(float(seconds), 0.0)
    if estimate.seconds <= budget:
        return None
    return (
        f"{what}: the model would have {estimate.variables} variables, {estimate.constraints} "
        f"constraints and {estimate.terms} terms, estimated {estimate.seconds:.1f} s to build, "
        f"above {fraction:g} x {float(seconds):.1f} s left of the time limit = {budget:.1f} s; "
        "not built"
    )
