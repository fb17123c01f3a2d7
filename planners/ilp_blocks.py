"""``ilp_blocks``: the shared-block integer program of seed 002 section 5.1.3.

Every buffer is assigned to one of ``M`` shared blocks, buffers live at the same step (half-open
lifetimes ``[start, end)``, schedule steps) never share a block, a block is as large as its largest
member, and the total block size is minimised. The blocks are then laid out one after the other
(offset of a block = sum of the earlier blocks' sizes, aligned), so the arena equals the total block
size. This is the exact version of the "shared objects" family (Pisarchyk & Lee 2020); its optimum is
the best **block** layout, which can be larger than the best offset plan (``cpsat``).

Model (``x[i, m]`` binary: buffer ``i`` in block ``m``; ``s[m] >= 0`` bytes)::

    min  sum_m s[m]
    s.t. sum_m x[i, m] = 1                       for every buffer i          (seed constraint 1)
         sum_{i in C} x[i, m] <= 1               for every maximal clique C  (seed constraint 2)
         s[m] >= size_i * x[i, m]                for every i, m              (seed constraint 3, fixed)

**Constraint 3 of the seed** reads ``sum_{i: x_im = 1} s_i <= s_m``: a sum of the member sizes. That
is the size of a block whose members are laid side by side; but the members of a shared block are by
constraint 2 never live at the same time, so they reuse the same bytes and the block only needs the
**largest** member, ``s_m >= s_i`` for each member ``i``. With the seed's sum the model would forbid
all reuse inside a block and its optimum would be the naive arena. The seed's ``y_m`` ("block used")
variables are dropped: an unused block simply has ``s_m = 0``.

Seed constraint 2 is stated per interference edge; with ``conflicts="clique"`` (default) it is
stated once per maximal clique of the interval graph (the live set at a start time, at most ``n`` of
them), which is equivalent for integer points and much tighter for the LP relaxation.

``M`` defaults to the max live count (clique number = chromatic number of an interval graph), the
fewest blocks any layout needs. More blocks can be smaller in bytes: for closed lifetimes
``a[0,1] 10, b[1,2] 1, c[2,3] 1, d[3,4] 10`` two blocks force ``{a, c}, {b, d}`` (20 bytes) while
three blocks allow ``{a, d}, {b}, {c}`` (12 bytes); parameter ``blocks`` raises ``M``. Symmetry breaking (``symmetry_breaking=True``): buffers sorted by size
(descending, ties by index) at rank ``r`` may only use blocks ``m <= r``, and ``s[m] >= s[m+1]``;
relabelling the blocks of any solution by their largest member's rank satisfies both, so no optimum
is cut off.
"""

from __future__ import annotations

import math
import time
from numbers import Integral

import numpy as np

from .base import Planner, SolveResult
from .bounds import lower_bound
from .colouring import interference_edges, interval_colouring_blocks, layout_blocks, max_live_count
from .errors import ProblemError
from .lp_backends import solve_pulp
from .model import Problem
from .model_size import ModelEstimate, clique_terms, decline_reason, interference_pairs
from .params import MODEL_BUDGET, POSITIVE_SECONDS, THREADS, Interval, StrOptions
from .time_limits import Deadline, import_within

__all__ = ["ILPBlocks", "maximal_cliques", "BACKENDS", "ORTOOLS_SOLVERS", "estimate_model"]

BACKENDS = ("ortools", "pulp")
#: pywraplp MIP solvers accepted by ``backend="ortools"``. ortools 9.15 also builds ``"HIGHS"`` into
#: pywraplp, but it crashed the interpreter (segmentation fault) on this model with a solution hint,
#: so it is not offered; PuLP's HiGHS (``highspy``) is used by ``backend="pulp"`` when installed.
ORTOOLS_SOLVERS = ("SCIP", "CBC", "CP_SAT")


def maximal_cliques(problem: Problem) -> list[list[int]]:
    """Maximal cliques of the interval graph of the non-zero-size buffers.

    A clique is the live set at some start time; the live set at start time ``t`` is maximal iff it
    is not contained in the live set at the next start time, i.e. some member ends at or before that
    next start. ``O(n log n + sum of clique sizes)``.

    Returns
    -------
    list of lists of buffer indices (problem order), each sorted.

    >>> p = Problem.from_closed([("a", 0, 1, 8), ("b", 1, 2, 8), ("c", 2, 3, 8)])
    >>> maximal_cliques(p)
    [[0, 1], [1, 2]]
    """
    idx = np.flatnonzero(problem.sizes > 0)
    if idx.size == 0:
        return []
    times = np.unique(problem.starts[idx])
    starts, ends = problem.starts.tolist(), problem.ends.tolist()
    by_start = sorted(idx.tolist(), key=lambda i: (starts[i], i))
    out: list[list[int]] = []
    live: set[int] = set()
    p = 0
    tl = times.tolist()
    for k, t in enumerate(tl):
        live = {i for i in live if ends[i] > t}
        while p < len(by_start) and starts[by_start[p]] == t:
            live.add(by_start[p])
            p += 1
        nxt = tl[k + 1] if k + 1 < len(tl) else None
        if nxt is None or any(ends[i] <= nxt for i in live):
            out.append(sorted(live))
    return out


def estimate_model(
    problem: Problem,
    blocks: int | None = None,
    conflicts: str = "clique",
    symmetry_breaking: bool = True,
    backend: str = "ortools",
) -> ModelEstimate:
    """Size of the shared-block model before building it (``O(n log n)``).

    With ``n`` non-zero-size buffers, ``M`` blocks and ``X`` assignment binaries (``n M``, or with
    symmetry breaking ``sum_r min(r + 1, M)`` over the size ranks ``r``): ``X + M`` variables,
    ``n + X + M G + M - 1`` constraints for ``G`` conflict groups (maximal cliques or edges,
    :func:`planners.model_size.clique_terms`), and ``3X + M T + 2M`` terms for ``T`` group members
    in total.
    """
    n = int((problem.sizes > 0).sum())
    M = max_live_count(problem) if blocks is None else int(blocks)
    if symmetry_breaking:
        x = M * (M + 1) // 2 + (n - M) * M if n >= M else n * (n + 1) // 2
    else:
        x = n * M
    if conflicts == "clique":
        g, t = clique_terms(problem)
    else:
        g = interference_pairs(problem)
        t = 2 * g
    kind = "ilp_blocks_pulp" if backend == "pulp" else "ilp_blocks_ortools"
    return ModelEstimate.of(kind, x + M, n + x + M * g + max(M - 1, 0), 3 * x + M * t + 2 * M)


class ILPBlocks(Planner):
    """Exact shared-block layout by integer programming (seed 002 section 5.1.3; see module doc).

    Parameters
    ----------
    backend : {"ortools", "pulp"}
        ``"ortools"``: ``pywraplp`` with the MIP solver named by ``solver``; ``"pulp"``: PuLP with
        HiGHS if ``highspy`` is importable, else PuLP's bundled CBC.
    solver : str
        pywraplp solver id for ``backend="ortools"``: one of :data:`ORTOOLS_SOLVERS` (``"SCIP"``
        default, ``"CBC"``, ``"CP_SAT"``).
    time_limit : float
        Wall-clock seconds for the whole call (:class:`planners.time_limits.Deadline`; the lower
        bound and model building included): the solver gets what is left
        (``info["solver_time_limit"]``; ``info["setup_seconds"]``, ``info["time_limit"]``), and is
        not started with less than :data:`planners.time_limits.MIN_SOLVER_SECONDS` left
        (``timeout``).
    blocks : int or None
        Number of blocks ``M``; ``None`` = max live count (clique number).
    conflicts : {"clique", "edge"}
        One constraint per maximal clique and block, or the seed's one per interference edge.
    symmetry_breaking : bool
        Rank restriction and non-increasing block sizes (see module doc).
    warm_start : bool
        Hint the seed 001 interval colouring (relabelled to satisfy the symmetry breaking).
    workers : int
        Solver threads.
    model_budget : float or None
        Decline with status ``skipped`` (no offsets; ``info["reason"]``,
        ``info["model_estimate"]``) when the model's estimated build time (:func:`estimate_model`,
        :mod:`planners.model_size`) exceeds ``model_budget`` times the seconds left of
        ``time_limit``; ``None`` always builds.

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` means optimal **among block layouts with M blocks** (``info["optimal_within"]
    == "shared_blocks"``), not among all offset plans; ``feasible``/``timeout``/``skipped`` as for
    any exact planner; ``best_bound`` is the solver's bound on the block total (a bound for block layouts only,
    so it is reported as ``info["block_bound"]`` and ``best_bound`` is the max-live lower bound).

    Raises
    ------
    ParameterError
        (from :meth:`plan`) Unknown backend, solver or conflicts rule, ``blocks < 1``, ...
    ProblemError
        ``blocks`` below the clique number of the problem; a solver missing from this ortools
        build.

    Notes
    -----
    ``n * M`` binaries; ``O(sum |C| * M)`` clique-constraint non-zeros. NP-hard; small problems only.
    Sizes in the model are rounded up to alignment; blocks are laid out at the lcm of their members'
    alignments (:func:`planners.colouring.layout_blocks`).
    """

    name = "ilp_blocks"
    family = "exact"
    _parameter_constraints = {
        "backend": [StrOptions(BACKENDS)],
        "solver": [StrOptions(ORTOOLS_SOLVERS)],
        "time_limit": [POSITIVE_SECONDS],
        "blocks": [Interval(Integral, 1, None), None],
        "conflicts": [StrOptions(("clique", "edge"))],
        "symmetry_breaking": ["boolean"],
        "warm_start": ["boolean"],
        "workers": [THREADS],
        "model_budget": MODEL_BUDGET,
    }

    def __init__(
        self,
        backend: str = "ortools",
        solver: str = "SCIP",
        time_limit: float = 30.0,
        blocks: int | None = None,
        conflicts: str = "clique",
        symmetry_breaking: bool = True,
        warm_start: bool = True,
        workers: int = 1,
        model_budget: float | None = 0.5,
    ) -> None:
        self.backend = backend
        self.solver = solver
        self.time_limit = time_limit
        self.blocks = blocks
        self.conflicts = conflicts
        self.symmetry_breaking = symmetry_breaking
        self.warm_start = warm_start
        self.workers = workers
        self.model_budget = model_budget

    # -- model data shared by both backends ------------------------------------------------------
    def _data(self, problem: Problem):
        omega = max_live_count(problem)
        M = omega if self.blocks is None else int(self.blocks)
        if M < omega:
            raise ProblemError(
                f"ilp_blocks: blocks={M} is below the clique number {omega} (max live buffers); "
                "no block layout exists"
            )
        live = np.flatnonzero(problem.sizes > 0)
        sz = problem.aligned_sizes
        rank_order = live[np.lexsort((live, -sz[live]))]  # size descending, ties by index
        rank = {int(i): r for r, i in enumerate(rank_order.tolist())}
        allowed = {
            i: range(min(rank[i] + 1, M)) if self.symmetry_breaking else range(M) for i in rank
        }
        if self.conflicts == "clique":
            groups = maximal_cliques(problem)
        else:
            groups = interference_edges(problem).tolist()
        hint = None
        if self.warm_start:
            b = interval_colouring_blocks(problem)
            # relabel blocks by the rank of their largest member (satisfies symmetry breaking)
            key: dict[int, int] = {}
            for i in rank_order.tolist():
                key.setdefault(int(b[i]), rank[i])
            relabel = {blk: j for j, blk in enumerate(sorted(key, key=key.get))}
            hint = {i: relabel[int(b[i])] for i in rank}
        return M, rank, allowed, groups, hint, sz.tolist()

    def _solve(self, problem: Problem) -> SolveResult:
        if not (problem.sizes > 0).any():
            return SolveResult(np.zeros(problem.n, np.int64), "optimal", 0)
        clock = Deadline(self.time_limit)  # the whole call: bound, model, search
        t0 = clock.start
        lb = lower_bound(problem)
        omega = max_live_count(problem)
        if self.blocks is not None and int(self.blocks) < omega:
            self._data(problem)  # raises the ProblemError naming the rule
        est = estimate_model(
            problem, self.blocks, self.conflicts, self.symmetry_breaking, self.backend
        )
        left = float(self.time_limit) - (time.perf_counter() - t0)
        reason = decline_reason(est, left, self.model_budget, "ilp_blocks")
        if reason is not None:
            info = {"model_estimate": est.as_info(), "reason": reason}
            return SolveResult(None, "skipped", lb, clock.record(info))
        M, rank, allowed, groups, hint, sz = self._data(problem)
        if self.backend == "ortools":
            status, bound, assign, info = self._ortools(M, allowed, groups, hint, sz, lb, clock)
        else:
            status, bound, assign, info = self._pulp(M, allowed, groups, hint, sz, lb, clock)
        clock.record(info)
        info["model_estimate"] = est.as_info()
        info.update(blocks_max=M, groups=len(groups), optimal_within="shared_blocks")
        info["block_bound"] = None if bound is None else math.ceil(bound - 1e-6)
        if assign is None:
            return SolveResult(None, status, None, info)
        block_of = np.full(problem.n, -1, np.int64)
        for i, m in assign.items():
            block_of[i] = m
        # compact block numbers (unused blocks dropped), keep block order
        used = np.unique(block_of[block_of >= 0])
        block_of[block_of >= 0] = np.searchsorted(used, block_of[block_of >= 0])
        offsets, sizes = layout_blocks(problem, block_of)
        info["blocks_used"] = int(sizes.size)
        return SolveResult(offsets, status, None, info)

    # -- OR-Tools pywraplp ----------------------------------------------------------------------
    def _ortools(self, M, allowed, groups, hint, sz, lb, clock):
        # within the time left: a cold import of OR-Tools took 0.3-2.7 s on a loaded machine
        pywraplp = import_within("ortools.linear_solver.pywraplp", clock.left())
        if pywraplp is None:
            info = {"lp_solver": f"ortools-{self.solver}", "stopped_by": "time_limit",
                    "reason": "OR-Tools was still being imported when the time limit passed"}
            return "timeout", None, None, info

        s = pywraplp.Solver.CreateSolver(self.solver)
        if s is None:
            raise ProblemError(
                f"ilp_blocks: pywraplp solver {self.solver!r} is not available in this ortools build"
            )
        big = max(sz)
        x = {(i, m): s.BoolVar(f"x{i}_{m}") for i, ms in allowed.items() for m in ms}
        blk = [s.NumVar(0, big, f"s{m}") for m in range(M)]
        for i, ms in allowed.items():
            s.Add(sum(x[i, m] for m in ms) == 1)
            for m in ms:
                s.Add(blk[m] >= sz[i] * x[i, m])
        for m in range(M):
            for g in groups:
                terms = [x[i, m] for i in g if (i, m) in x]
                if len(terms) > 1:
                    s.Add(sum(terms) <= 1)
        if self.symmetry_breaking:
            for m in range(M - 1):
                s.Add(blk[m] >= blk[m + 1])
        s.Add(sum(blk) >= lb)
        s.Minimize(sum(blk))
        if hint is not None:
            hv, hval = [], []
            bmax = [0] * M
            for (i, m), v in x.items():
                hv.append(v)
                hval.append(1.0 if hint[i] == m else 0.0)
                if hint[i] == m:
                    bmax[m] = max(bmax[m], sz[i])
            s.SetHint(hv + blk, hval + [float(b) for b in bmax])
        left = clock.solver_seconds()  # what the model building left, or None
        if left is None:
            info = {"lp_solver": f"ortools-{self.solver}", "stopped_by": "time_limit"}
            return "timeout", None, None, info
        s.SetTimeLimit(max(1, int(left * 1000)))
        s.SetNumThreads(int(self.workers))
        st = s.Solve()
        names = {
            pywraplp.Solver.OPTIMAL: "optimal",
            pywraplp.Solver.FEASIBLE: "feasible",
            pywraplp.Solver.INFEASIBLE: "infeasible",
        }
        status = names.get(st, "timeout")
        info = {"lp_solver": f"ortools-{self.solver}", "solver_status": int(st)}
        if status in ("optimal", "feasible"):
            bound = s.Objective().BestBound()
            assign = {i: m for (i, m), v in x.items() if v.solution_value() > 0.5}
            return status, bound, assign, info
        return status, None, None, info

    # -- PuLP -----------------------------------------------------------------------------------
    def _pulp(self, M, allowed, groups, hint, sz, lb, clock):
        import pulp

        prob = pulp.LpProblem("ilp_blocks", pulp.LpMinimize)
        big = max(sz)
        x = {
            (i, m): pulp.LpVariable(f"x{i}_{m}", cat="Binary")
            for i, ms in allowed.items()
            for m in ms
        }
        blk = [pulp.LpVariable(f"s{m}", 0, big) for m in range(M)]
        prob += pulp.lpSum(blk)
        for i, ms in allowed.items():
            prob += pulp.lpSum(x[i, m] for m in ms) == 1
            for m in ms:
                prob += blk[m] >= sz[i] * x[i, m]
        for m in range(M):
            for g in groups:
                terms = [x[i, m] for i in g if (i, m) in x]
                if len(terms) > 1:
                    prob += pulp.lpSum(terms) <= 1
        if self.symmetry_breaking:
            for m in range(M - 1):
                prob += blk[m] >= blk[m + 1]
        prob += pulp.lpSum(blk) >= lb
        if hint is not None:
            bmax = [0] * M
            for (i, m), v in x.items():
                v.setInitialValue(1 if hint[i] == m else 0)
                if hint[i] == m:
                    bmax[m] = max(bmax[m], sz[i])
            for m in range(M):
                blk[m].setInitialValue(bmax[m])
        left = clock.solver_seconds()  # what the model building left, or None
        if left is None:
            return "timeout", None, None, {"lp_solver": "pulp", "stopped_by": "time_limit"}
        status, bound, info = solve_pulp(
            prob, left, warm_start=hint is not None, threads=self.workers
        )
        if status in ("optimal", "feasible"):
            assign = {i: m for (i, m), v in x.items() if (v.value() or 0) > 0.5}
            return status, bound, assign, info
        return status, None, None, info
