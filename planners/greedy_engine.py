"""A base class for new planners built on the shared greedy engine (an order times a fit rule).

Most greedy offset planners differ only in the **order** in which the buffers are placed; the
**fit** rule and the placement itself are the engine's (:mod:`planners.greedy`: the compiled core
and its Python reference for plain problems; :mod:`planners.placement` for problems with pins,
hints, gaps or pools). A new planner of that kind subclasses :class:`GreedyEnginePlanner`, writes
an order function ``problem -> permutation of 0..n-1`` and calls :meth:`~GreedyEnginePlanner.
greedy_solve` from its ``_solve``:

* it handles what the engine handles without restating it: the class declares
  ``_engine = "greedy"``, so :meth:`planners.base.Planner.capabilities` takes the engine's own
  table :data:`planners.placement.CAPABILITIES` (pins, hints, gaps and pools ``native``;
  colocations ``merged``);
* its plans are the engine's, offset for offset, as :class:`planners.greedy.GreedyPlanner` with
  the same order and fit gives them (``greedy_solve`` runs that planner's ``_solve``), so the
  engine's choice of compiled or Python core, its feature placement and its infeasibility
  proofs for colliding pins come with it.

A planner that declares ``_engine = "greedy"`` but places with something else would claim what
it does not do; :meth:`planners.base.Planner.plan` validates every plan
(:func:`planners.validate.check_plan`), so such a claim fails loudly, but it is still a bug.
"""

from __future__ import annotations

from .base import Planner
from .greedy import GreedyPlanner
from .model import Problem, SolveResult

__all__ = ["GreedyEnginePlanner"]


class GreedyEnginePlanner(Planner):
    """Base class of planners that place with the shared greedy engine (module docstring).

    A subclass sets ``name``, declares ``_parameter_constraints``, stores its keyword
    parameters in ``__init__`` and implements ``_solve`` as a call of :meth:`greedy_solve` with
    its order and fit. Its capabilities are the engine's (``_engine = "greedy"``); it may still
    override a feature in its own ``_capabilities`` (e.g. ``{"pins": "refused"}``).

    Examples
    --------
    Smallest first, first fit (sizes 100, 150, 180, 200, 250 in that order; each goes on top of
    the ones live with it), and a pin the engine places first:

    >>> import numpy as np
    >>> from planners import Buffer, Problem
    >>> from planners.examples import exercise_5_1_problem
    >>> from planners.params import StrOptions
    >>> class SmallestFirst(GreedyEnginePlanner):
    ...     "Smallest buffer first (ties: problem order), placed by the greedy engine."
    ...     name = "smallest_first"
    ...     _parameter_constraints = {"fit": [StrOptions({"first", "best"})]}
    ...     def __init__(self, fit="first"):
    ...         self.fit = fit
    ...     def _solve(self, problem):
    ...         order = np.argsort(problem.sizes, kind="stable")
    ...         return self.greedy_solve(problem, order, self.fit)
    >>> SmallestFirst().plan(exercise_5_1_problem()).offsets.tolist()
    [0, 430, 100, 630, 250]
    >>> SmallestFirst.capabilities()["pins"]
    'native'
    >>> pinned = Problem([Buffer("a", 0, 2, 64, offset=128), Buffer("b", 1, 3, 32)])
    >>> SmallestFirst().plan(pinned).offsets.tolist()
    [128, 0]
    """

    family = "greedy"
    _engine = "greedy"

    def greedy_solve(self, problem: Problem, order, fit: str = "first",
                     engine: str = "auto") -> SolveResult:
        """Place ``problem`` with the greedy engine in ``order`` with rule ``fit``.

        Parameters
        ----------
        problem : Problem
            The problem :meth:`planners.base.Planner.plan` hands to ``_solve`` (half-open
            lifetimes ``[start, end)`` in schedule steps, sizes and alignments in bytes; alias
            and colocation groups already merged, features it keeps as declared).
        order : str, callable or array
            A name in :data:`planners.greedy.ORDERS`, a function ``problem -> permutation of
            0..n-1`` (position 0 is placed first), or such a permutation.
        fit : {"first", "best"}
            Lowest aligned offset that fits, or the smallest gap that fits
            (:func:`planners.greedy.greedy_offsets`).
        engine : {"auto", "c", "python"}
            The placement core for problems without features; identical offsets.

        Returns
        -------
        SolveResult
            Offsets in bytes (problem order), status ``"heuristic"`` (``plan`` promotes an arena
            at the lower bound to ``optimal``), ``info`` with ``order``, ``fit`` and ``engine``
            (``"features"`` when :func:`planners.placement.place_features` placed it); status
            ``"infeasible"`` with ``info["proof"]`` when two pins collide in every choice of
            pools, ``"timeout"`` when the pin search stopped first.

        Raises
        ------
        ValueError
            Unknown order name, fit or engine.
        ProblemError
            ``order`` does not give a permutation of ``0..n-1``.

        Notes
        -----
        The work of :func:`planners.greedy.greedy_offsets` (``O(n log n + E log k)``, or
        expected ``O(n log n)`` for orders sorted by start on the compiled core) on plain
        problems; ``O(n R)`` for ``R`` placed pieces with features
        (:mod:`planners.placement`).
        """
        return GreedyPlanner(order=order, fit=fit, engine=engine)._solve(problem)
