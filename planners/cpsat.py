"""``cpsat``: exact offset planning with OR-Tools CP-SAT.

The model has one offset variable per buffer ``o_i = a_i * k_i`` (``a_i`` its alignment in bytes,
``k_i`` an integer), an arena height ``H >= o_i + s_i`` and, for every pair of buffers live at the
same step (half-open lifetimes ``[start, end)`` in schedule steps), disjoint address ranges
``[o_i, o_i + s_i)``. Two formulations of the non-overlap (parameter ``formulation``):

* ``"nooverlap2d"``: one rectangle per buffer, x = its fixed time interval ``[start, end)``, y = the
  offset interval ``[o_i, o_i + s_i)``, all in one ``AddNoOverlap2D`` constraint;
* ``"pairwise"``: for each interference-graph edge a boolean ``b_ij`` with
  ``b_ij => o_i + s_i <= o_j`` and ``not b_ij => o_j + s_j <= o_i``.

Mode ``"minimize"`` (the default) minimises ``H`` with
``lower_bound <= H <= min(warm start arena, capacity)``: a capacity (``problem.capacity``, e.g. from
a ``NAME.CAPACITY.csv`` file name) constrains the minimisation, it never replaces it. Mode
``"decide"``, only when asked, answers ``H <= capacity`` (no objective). ``"auto"`` (the behaviour
before the explicit default, kept to reproduce old records) is ``"decide"`` when the problem has a
capacity and ``"minimize"`` otherwise. The mode that ran is ``info["mode"]`` (the requested one
``info["mode_requested"]``). The warm start (solution hint) is
the best registered heuristic (:func:`planners.warmstart.best_heuristic`). Zero-size buffers are left
out (offset 0); residents are ordinary buffers here.

Two safeguards, each a named switch: ``heuristic_first`` answers mode ``"decide"`` at once when a
cheap heuristic already fits the capacity (an exact method is never worse than a heuristic it could
have run), and ``model_budget`` declines (status ``skipped``) a model whose estimated build time
(:mod:`planners.model_size`) exceeds that fraction of ``time_limit``, which holds for the whole
call: heuristics, model building and search.

References
----------
.. [1] Laurent Perron, Frédéric Didier, "CP-SAT", OR-Tools, Google.
.. [2] M. D. Moffitt, "MiniMalloc: A Lightweight Memory Allocator for Hardware-Accelerated Machine
   Learning", ASPLOS 2023 (the A-F benchmarks and the NoOverlap2D baseline).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .base import Planner, SolveResult
from .bounds import lower_bound
from .colouring import interference_edges
from .errors import ProblemError
from .feature_cpsat import solve_features
from .model import Problem
from .model_size import ModelEstimate, decline_reason, interference_pairs
from .params import (
    CPSAT_SEED,
    MODEL_BUDGET,
    OPTIONAL_POSITIVE_SECONDS,
    POSITIVE_SECONDS,
    THREADS,
    StrOptions,
)
from .time_limits import Deadline, import_within
from .warmstart import HEURISTIC_SHARE, best_heuristic

__all__ = ["CPSat", "FORMULATIONS", "MODES", "estimate_model"]

FORMULATIONS = ("nooverlap2d", "pairwise")
MODES = ("auto", "minimize", "decide")


class CPSat(Planner):
    """Exact offset planner on OR-Tools CP-SAT (see module docstring for the model).

    Parameters
    ----------
    formulation : {"nooverlap2d", "pairwise"}
        How non-overlap is stated (NoOverlap2D rectangles, or a disjunction per interference edge).
    mode : {"minimize", "decide", "auto"}
        ``"minimize"`` (default): smallest arena, subject to ``<= capacity`` when the problem has
        one (an infeasible answer then proves ``best_bound = capacity + 1``);
        ``"decide"``: any plan with arena ``<= problem.capacity``; ``"auto"``: ``"decide"`` when
        the problem has a capacity, else ``"minimize"`` (the earlier default).
    time_limit : float
        Wall-clock seconds for the whole call (:class:`planners.time_limits.Deadline`): the
        warm-start heuristics and the model building are counted, the solver gets what is left
        less the seconds the model took to build, kept back for CP-SAT's loading of it, which
        its own limit does not count (``info["solver_time_limit"]``, with
        ``info["setup_seconds"]`` the set-up, ``info["solver_reserve"]`` what was kept back and
        ``info["time_limit"]``); OR-Tools is imported within the time left
        (:func:`planners.time_limits.import_within`: a cold import took up to 2.7 s); with less
        than :data:`planners.time_limits.MIN_SOLVER_SECONDS` left it is not started (status
        ``feasible`` with the warm start, else ``timeout``; ``info["stopped_by"]``).
    workers : int
        CP-SAT search workers (threads).
    seed : int
        CP-SAT ``random_seed``.
    warm_start : bool
        Hint the best heuristic plan and use its arena as an upper bound on ``H``.
    deterministic_time : float or None
        If set, the solve stops on CP-SAT's deterministic time (``max_deterministic_time``) with
        ``interleave_search``, so a stopped run is reproducible bit for bit; ``time_limit`` stays a
        wall-clock safety cap. With ``None`` (default) a run that hits the wall-clock limit may
        differ between runs with ``workers > 1``; a proved optimum is the same arena either way.
    heuristic_first : bool
        In mode ``"decide"``, run the cheap heuristics first and answer with the first whose arena
        fits the capacity (``info["answered_by"]`` names it; the model is not built). Off for
        ablations.
    model_budget : float or None
        Decline with status ``skipped`` (``info["reason"]``, ``info["model_estimate"]``) when the
        model's estimated build time (:func:`estimate_model`) exceeds ``model_budget`` times the
        seconds left of ``time_limit`` after the heuristics; ``None`` always builds. A skipped
        plan has no offsets, like a timeout (the heuristics' arenas are still in ``info``).

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` (minimum proved, or in decide mode: a fitting plan found), ``feasible``
    (a plan, optimality not proved; when the solver found nothing in time this is the warm start,
    ``info["source"] == "warm_start"``), ``infeasible`` (proved: no plan fits the capacity) or
    ``timeout`` (no plan at all in decide mode), or ``skipped`` (the model was not built, see
    ``model_budget``). ``best_bound`` is the solver's proved lower bound on
    the arena (bytes, at least the max-live lower bound), so a stopped run reports its gap.

    Raises
    ------
    ParameterError
        (from :meth:`plan`) A value ``_parameter_constraints`` does not allow (unknown formulation
        or mode, ``time_limit <= 0``, ...).
    ProblemError
        ``mode="decide"`` without a capacity; the solver rejected the model (``MODEL_INVALID``).

    Notes
    -----
    NP-hard in general; the model has ``n`` integer variables and ``E`` booleans (pairwise) or one
    global constraint (NoOverlap2D); building it is ``O(n log n + E)``.
    """

    name = "cpsat"
    family = "exact"
    #: pins, hints, gaps and pool assignment in one model (:mod:`planners.feature_cpsat`); a
    #: concurrent problem by the exact conflict-graph model (:func:`planners.concurrent.cpsat_concurrent`)
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native",
                     "concurrency": "native"}
    _parameter_constraints = {
        "formulation": [StrOptions(FORMULATIONS)],
        "mode": [StrOptions(MODES)],
        "time_limit": [POSITIVE_SECONDS],
        "workers": [THREADS],
        "seed": [CPSAT_SEED],
        "warm_start": ["boolean"],
        "deterministic_time": OPTIONAL_POSITIVE_SECONDS,
        "heuristic_first": ["boolean"],
        "model_budget": MODEL_BUDGET,
    }

    def __init__(
        self,
        formulation: str = "nooverlap2d",
        mode: str = "minimize",
        time_limit: float = 30.0,
        workers: int = 2,
        seed: int = 0,
        warm_start: bool = True,
        deterministic_time: float | None = None,
        heuristic_first: bool = True,
        model_budget: float | None = 0.5,
    ) -> None:
        self.formulation = formulation
        self.mode = mode
        self.time_limit = time_limit
        self.workers = workers
        self.seed = seed
        self.warm_start = warm_start
        self.deterministic_time = deterministic_time
        self.heuristic_first = heuristic_first
        self.model_budget = model_budget

    def _solve(self, problem: Problem) -> SolveResult:
        mode = self.mode
        if mode == "auto":
            mode = "minimize" if problem.capacity is None else "decide"
        if problem.features:  # pins, hints, gaps, pools: the feature model
            if mode == "decide" and problem.capacity is None and not problem.pools:
                raise ProblemError(
                    f"cpsat: mode='decide' needs a capacity, problem {problem.name!r} has none")
            return solve_features(problem, problem.capacity, mode, self.time_limit,
                                  self.workers, self.seed)
        if mode == "decide" and problem.capacity is None:
            raise ProblemError(
                f"cpsat: mode='decide' needs a capacity, problem {problem.name!r} has none"
            )
        clock = Deadline(self.time_limit)  # the whole call: heuristics, model, search
        t0, limit = clock.start, clock.time_limit
        lb = lower_bound(problem)
        info: dict = {"mode": mode, "mode_requested": self.mode, "formulation": self.formulation}
        warm, warm_arena = None, None
        cap = problem.capacity
        shortcut = self.heuristic_first and mode == "decide"
        if self.warm_start or shortcut:
            warm, warm_arena, winfo = best_heuristic(
                problem, stop_at=cap if shortcut else None, deadline=t0 + HEURISTIC_SHARE * limit
            )
            info.update(winfo)
            if shortcut and warm_arena <= cap:
                info["answered_by"] = winfo["warm_start"]
                clock.record(info)
                return SolveResult(warm, "optimal" if warm_arena <= lb else "feasible", lb, info)
            if not self.warm_start:
                warm, warm_arena = None, None
        est = estimate_model(problem, self.formulation)
        info["model_estimate"] = est.as_info()
        left = limit - (time.perf_counter() - t0)
        reason = decline_reason(est, left, self.model_budget, f"cpsat ({self.formulation})")
        if reason is not None:
            info["reason"] = reason
            clock.record(info)
            return SolveResult(None, "skipped", lb, info)
        if mode == "minimize":
            ub = warm_arena if warm_arena is not None else int(problem.aligned_sizes.sum())
            if cap is not None:
                ub = min(ub, cap)
        else:
            ub = cap
        live = np.flatnonzero(problem.sizes > 0).tolist()
        offsets0 = np.zeros(problem.n, np.int64)
        if not live:
            return SolveResult(offsets0, "optimal", 0, info)
        sizes = problem.sizes.tolist()
        aligns = problem.alignments.tolist()
        if any(sizes[i] > ub for i in live):  # cannot happen past plan()'s capacity check
            return SolveResult(None, "infeasible", lb, info)

        # imported here (`import planners` stays light), within the time left: its first import
        # in a process took 0.3 s to 2.7 s on a loaded 2-core machine
        cp_model = import_within("ortools.sat.python.cp_model", clock.left())
        if cp_model is None:
            info["stopped_by"] = "time_limit"
            info["reason"] = "OR-Tools was still being imported when the time limit passed"
            clock.record(info)
            if warm is not None and warm_arena <= ub:
                info["source"] = "warm_start"
                return SolveResult(warm, "feasible", lb, info)
            return SolveResult(None, "timeout", lb, info)
        t_build = time.perf_counter()
        m = cp_model.CpModel()
        off = {}
        for i in live:
            a = aligns[i]
            k = m.NewIntVar(0, (ub - sizes[i]) // a, f"k{i}")
            off[i] = k if a == 1 else a * k
            if warm is not None and warm_arena <= ub:
                m.AddHint(k, int(warm[i]) // a)
        height = m.NewIntVar(min(lb, ub), ub, "height")
        for i in live:
            m.Add(off[i] + sizes[i] <= height)
        if self.formulation == "nooverlap2d":
            xs, ys = [], []
            starts, ends = problem.starts.tolist(), problem.ends.tolist()
            for i in live:
                xs.append(m.NewFixedSizeIntervalVar(starts[i], ends[i] - starts[i], f"t{i}"))
                ys.append(m.NewIntervalVar(off[i], sizes[i], off[i] + sizes[i], f"y{i}"))
            m.AddNoOverlap2D(xs, ys)
            info["edges"] = None
        else:
            edges = interference_edges(problem).tolist()
            for i, j in edges:
                b = m.NewBoolVar(f"b{i}_{j}")
                m.Add(off[i] + sizes[i] <= off[j]).OnlyEnforceIf(b)
                m.Add(off[j] + sizes[j] <= off[i]).OnlyEnforceIf(b.Not())
                if warm is not None and warm_arena <= ub:
                    m.AddHint(b, bool(warm[i] < warm[j]))
            info["edges"] = len(edges)
        if mode == "minimize":
            m.Minimize(height)
            if warm is not None and warm_arena <= ub:
                m.AddHint(height, warm_arena)

        info["build_seconds"] = round(time.perf_counter() - t0, 4)
        # CP-SAT's own limit does not count loading the model (measured: 1.06 s past a 3.94 s
        # limit for 10^4 NoOverlap2D rectangles at a load of 5), which grows with the model as
        # its building here does: the measured build seconds are kept back for it
        load = time.perf_counter() - t_build
        left = clock.solver_seconds(reserve=load)  # what the set-up left of time_limit, or None
        clock.record(info)
        if left is None:
            info["stopped_by"] = "time_limit"
            if warm is not None and warm_arena <= ub:
                info["source"] = "warm_start"
                return SolveResult(warm, "feasible", lb, info)
            return SolveResult(None, "timeout", lb, info)
        solver = cp_model.CpSolver()
        prm = solver.parameters
        prm.max_time_in_seconds = left
        prm.num_workers = int(self.workers)
        prm.random_seed = int(self.seed)
        if self.deterministic_time is not None:
            prm.max_deterministic_time = float(self.deterministic_time)
            prm.interleave_search = True
        st = solver.Solve(m)
        info.update(
            solver_status=solver.StatusName(st),
            wall_time=solver.WallTime(),
            conflicts=solver.NumConflicts(),
            branches=solver.NumBranches(),
        )
        if st == cp_model.MODEL_INVALID:
            raise ProblemError(f"cpsat: CP-SAT rejected the model of problem {problem.name!r}")
        if st == cp_model.INFEASIBLE:
            # proved: no layout of height <= ub (the capacity, in either mode)
            return SolveResult(None, "infeasible", ub + 1, info)
        bound = lb
        if mode == "minimize" and st != cp_model.UNKNOWN:
            # BestObjectiveBound is a double: above 2**53 bytes it may round up past the true
            # bound, so lower it by two units in the last place before rounding up to bytes.
            b = solver.BestObjectiveBound()
            bound = max(lb, math.ceil(b - 1e-6 - abs(b) * 2.0**-51))
        if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            offsets = offsets0.copy()
            for i in live:
                offsets[i] = solver.Value(off[i])
            info["source"] = "cpsat"
            status = "optimal" if st == cp_model.OPTIMAL else "feasible"
            if mode == "minimize" and status == "optimal":
                v = int(solver.Value(height))  # exact integer (ObjectiveValue is a double)
                if v <= 2**53:
                    bound = v
                elif bound < v:
                    # Above 2**53 CP-SAT compares objective and bound as doubles (its gap limits
                    # are absolute), so OPTIMAL may be off by units: keep the claim only when the
                    # lowered double bound (or max live) reaches the arena.
                    info["solver_claim"] = "optimal"
                    status = "feasible"
            return SolveResult(offsets, status, bound, info)
        # UNKNOWN: stopped before the solver found a plan
        if warm is not None and warm_arena <= ub:
            info["source"] = "warm_start"
            return SolveResult(warm, "feasible", bound, info)
        return SolveResult(None, "timeout", bound, info)


def estimate_model(problem: Problem, formulation: str) -> ModelEstimate:
    """Size of the CP-SAT model of ``problem`` before building it (``O(n log n)``).

    With ``n`` non-zero-size buffers and ``E`` interfering pairs
    (:func:`planners.model_size.interference_pairs`): ``"nooverlap2d"`` has ``3n + 1`` variables
    (offset, two intervals each, the height), ``n + 1`` constraints and ``7n`` terms (with the
    ``n`` solution hints); ``"pairwise"`` has ``n + E + 1`` variables, ``n + 2E`` constraints and
    ``3n + 7E`` terms (two enforced inequalities of three literals per pair, and the hints).
    """
    n = int((problem.sizes > 0).sum())
    if formulation == "nooverlap2d":
        return ModelEstimate.of("cpsat_nooverlap2d", 3 * n + 1, n + 1, 7 * n)
    e = interference_pairs(problem)
    return ModelEstimate.of("cpsat_pairwise", n + e + 1, n + 2 * e, 3 * n + 7 * e)
