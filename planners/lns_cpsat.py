"""``lns_cpsat``: large-neighbourhood search with CP-SAT sub-solves.

Starting from the best greedy plan (smallest arena; ties to the fewest bytes above the max-live
bound, :func:`planners.local_search.best_greedy_start`), repeat until ``time_limit`` or ``max_rounds``:

1. **Choose a neighbourhood** with a seeded rule (``neighbourhoods``, drawn in turn from
   ``numpy.random.default_rng(seed)``), always around a **critical** buffer ``c`` (one whose top is
   the arena), so the buffers that set the arena are freed:

   * ``"time"`` -- a time window: the window starts as ``c``'s lifetime and widens one lifetime end
     point at a time, alternately left and right, until ``window`` buffers live in it; those
     buffers are freed (any offset in ``[0, arena)``); when ``c``'s lifetime alone holds more,
     the ``window`` nearest to ``c`` in address are freed;
   * ``"band"`` -- an address band: the ``window`` buffers live with ``c`` whose tops are highest
     are freed, each kept above the band floor (the lowest offset among them);
   * ``"events"`` -- the buffers allocated or freed in a time window: those with a start or end
     step in a window grown from ``c``'s lifetime until ``window`` buffers have one there.
     Buffers live across the whole window stay fixed: around a peak they are the stack the
     others fit into, and the buffers whose lifetimes begin or end there are the ones a
     different layout can exchange (on ``somas_pangu_2.6B`` one such sub-solve of 40 buffers
     takes the breadth-first plan from 1.0076 x the max-live bound to the bound itself).

2. **Re-solve** the freed buffers with CP-SAT: NoOverlap2D over their rectangles (x = the fixed
   lifetime ``[start, end)``, y = ``[offset, offset + size)``); each fixed buffer live with a
   freed one is encoded in that buffer's offset domain (the offsets whose block misses every such
   fixed block; the same constraint as a fixed rectangle, but the model's size follows the freed
   buffers only). The objective is the highest top of the freed buffers, bounded by the current
   arena; the current layout is the solution hint. Each sub-solve gets at most
   ``sub_time_limit`` seconds (or ``sub_deterministic_time``) and what is left of
   ``time_limit``.
3. **Accept** the new layout when that highest top is not above the old one (so the arena never
   grows; ties move the search on). With ``adaptive`` the window grows by a quarter after a
   sub-solve proved its neighbourhood optimal without improving, and shrinks by a quarter after
   one that stopped on its time limit.

Conventions: half-open lifetimes in schedule steps; sizes, offsets and arenas in bytes.
``plan.info["trajectory"]`` lists ``(seconds, arena)`` at the start plan and at every improvement.
The best bound is the max-live lower bound (a neighbourhood optimum proves nothing globally);
the status is ``"optimal"`` when the arena reaches it, else ``"heuristic"``.

Determinism: neighbourhoods come from the seeded generator and every sub-solve runs CP-SAT with one
worker and ``random_seed=seed``. With ``max_rounds`` and ``sub_deterministic_time`` set (CP-SAT's
deterministic time, and a ``time_limit`` that is not reached) a run repeats exactly; with
wall-clock sub-limits the sub-solves may stop at different points under load.

Complexity: per round ``O(n)`` numpy work to choose the neighbourhood, ``O(k f log f)`` to build
the offset domains of ``k = window`` freed buffers against the ``f`` fixed buffers live with them,
plus a CP-SAT model of ``k`` rectangles.

References
----------
.. [1] P. Shaw, "Using Constraint Programming and Local Search Methods to Solve Vehicle Routing
   Problems", CP 1998 (large neighbourhood search).
.. [2] L. Perron, F. Didier, "CP-SAT", OR-Tools, Google (NoOverlap2D).
"""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np

from .base import Planner, SolveResult
from .feature_cpsat import solve_features
from .local_search import DEFAULT_START_ORDERS, START_ORDERS_RULE, anytime_start
from .model import Problem
from .params import (
    CPSAT_SEED,
    OPTIONAL_POSITIVE_SECONDS,
    POSITIVE_SECONDS,
    SHARE,
    Interval,
    SequenceOf,
    StrOptions,
)

__all__ = ["LNSCPSat", "NEIGHBOURHOODS"]

#: Neighbourhood rules of :class:`LNSCPSat`.
NEIGHBOURHOODS = ("time", "band", "events")


class LNSCPSat(Planner):
    """Large-neighbourhood search: free a time window, an address band or the buffers allocated and
    freed near a top buffer, re-solve them with CP-SAT.

    Parameters
    ----------
    time_limit : float, default 5.0
        Wall-clock seconds for the whole call (start plans included).
    seed : int, default 0
        Seed of the neighbourhood choice and of CP-SAT.
    max_rounds : int or None, default None
        Sub-solve budget (see Determinism in the module docstring).
    neighbourhoods : tuple of str, default ("time", "band", "events")
        Rules drawn uniformly each round (:data:`NEIGHBOURHOODS`).
    window : int, default 40
        Buffers freed per round (the starting size when ``adaptive``): exactly ``window`` for
        ``band`` and for a truncated window; at least ``window`` when the ``time`` or ``events``
        window grows, since it grows by whole lifetime end points.
    sub_time_limit : float, default 0.5
        Wall-clock seconds per sub-solve.
    sub_deterministic_time : float or None, default None
        If set, each sub-solve stops on CP-SAT's deterministic time instead (reproducible).
    adaptive : bool, default True
        Grow the window after a proved neighbourhood optimum, shrink it after a stopped sub-solve
        (between 8 and ``4 * window`` buffers).
    stall_rounds : int or None, default 30
        Stop after this many rounds without a new best arena; ``None`` runs to the time limit.
    start_orders : tuple of str, default :data:`planners.local_search.DEFAULT_START_ORDERS`
        (every name in :data:`planners.greedy.ORDERS`, ``"size"`` first)
        Orders of the greedy start plans (each with both fits).
    start_share : float, default 0.3
        Share of ``time_limit`` after which no further start plan begins (one always runs).

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` when the arena equals the best proved bound: the max-live lower bound, or
    the arena itself when one neighbourhood held every buffer and CP-SAT proved it optimal (small
    problems); else ``heuristic``. ``info``: ``trajectory``, ``start``, ``rounds``, ``accepted``,
    ``windows`` (last window size), ``stopped_by`` (``"lower_bound"``, ``"proved"``,
    ``"max_rounds"``, ``"stall_rounds"``, ``"time_limit"``, or ``"range"``: the worst-case arena
    exceeds ``2**60`` bytes, beyond what the CP-SAT models here are built for, and the start plan
    is returned).

    Raises
    ------
    ParameterError
        (from :meth:`plan`) Unknown neighbourhood, a window below 2, a time limit that is not
        positive, ... (``_parameter_constraints``).

    Examples
    --------
    >>> from planners.examples import exercise_5_1_problem
    >>> LNSCPSat(max_rounds=5, sub_deterministic_time=1.0).plan(exercise_5_1_problem()).arena_size
    780
    """

    name = "lns_cpsat"
    family = "search"
    #: the CP-SAT feature model (:mod:`planners.feature_cpsat`) for pins, hints, gaps, pools
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native"}
    _parameter_constraints = {
        "time_limit": [POSITIVE_SECONDS],
        "seed": [CPSAT_SEED],
        "max_rounds": [Interval(Integral, 0, None), None],
        "neighbourhoods": [SequenceOf(StrOptions(NEIGHBOURHOODS))],
        "window": [Interval(Integral, 2, None)],
        "sub_time_limit": [POSITIVE_SECONDS],
        "sub_deterministic_time": OPTIONAL_POSITIVE_SECONDS,
        "adaptive": ["boolean"],
        "stall_rounds": [Interval(Integral, 1, None), None],
        "start_orders": [START_ORDERS_RULE],
        "start_share": [SHARE],
    }

    def __init__(
        self,
        time_limit: float = 5.0,
        seed: int = 0,
        max_rounds: int | None = None,
        neighbourhoods: tuple[str, ...] = NEIGHBOURHOODS,
        window: int = 40,
        sub_time_limit: float = 0.5,
        sub_deterministic_time: float | None = None,
        adaptive: bool = True,
        stall_rounds: int | None = 30,
        start_orders: tuple[str, ...] = DEFAULT_START_ORDERS,
        start_share: float = 0.3,
    ) -> None:
        self.time_limit = time_limit
        self.seed = seed
        self.max_rounds = max_rounds
        self.neighbourhoods = neighbourhoods
        self.window = window
        self.sub_time_limit = sub_time_limit
        self.sub_deterministic_time = sub_deterministic_time
        self.adaptive = adaptive
        self.stall_rounds = stall_rounds
        self.start_orders = start_orders
        self.start_share = start_share

    def _solve(self, problem: Problem) -> SolveResult:
        if problem.features:
            # pins, hints, gaps, pools: the CP-SAT feature model, stopped by the time limit with
            # its best plan (CP-SAT's own LNS workers improve it as this planner's rounds do)
            return solve_features(problem, problem.capacity, "minimize", self.time_limit,
                                  workers=1, seed=self.seed)
        st = anytime_start(problem, self.time_limit, self.start_orders, self.start_share)
        deadline, traj, lb, arena = st.deadline, st.trajectory, st.lower_bound, st.arena
        off = np.asarray(st.offsets, np.int64).copy()
        traj.add(arena)
        info: dict = dict(st.info)
        sizes = problem.sizes
        live = sizes > 0
        rng = np.random.default_rng(self.seed)
        window = int(self.window)
        wmin, wmax = min(8, window), 4 * window
        rounds = accepted = since_best = 0
        last_round = 0.0  # seconds the last round spent building its model
        stopped = "lower_bound"
        bound = lb
        n_live = int(live.sum())
        if problem.worst_case_arena > 2**60:
            stopped = "range"
        while arena > bound and stopped != "range":
            if self.max_rounds is not None and rounds >= self.max_rounds:
                stopped = "max_rounds"
                break
            left = deadline - time.perf_counter()
            if left <= max(0.01, last_round):  # the next round would likely overrun
                stopped = "time_limit"
                break
            if self.stall_rounds is not None and since_best >= self.stall_rounds:
                stopped = "stall_rounds"
                break
            rounds += 1
            since_best += 1
            top = off + sizes
            crit = np.flatnonzero(live & (top == arena))
            c = int(crit[rng.integers(crit.size)])
            kind = self.neighbourhoods[int(rng.integers(len(self.neighbourhoods)))]
            if kind == "time":
                free, floor = _time_window(problem, off, c, window), 0
            elif kind == "events":
                free, floor = _event_window(problem, off, c, window), 0
            else:
                free, floor = _address_band(problem, off, c, window)
            res, last_round = self._sub_solve(problem, off, free, floor, arena, left)
            if res is None:
                continue
            new_off, new_max, old_max, proved = res
            if new_max <= old_max:
                off = new_off
                new_arena = int((off + sizes)[live].max())
                if new_arena < arena:
                    since_best = 0
                arena = new_arena
                accepted += 1
                traj.add(arena)
            if proved and floor == 0 and int((sizes[free] > 0).sum()) >= n_live:  # the whole problem, solved
                bound = arena
                stopped = "proved"
            if self.adaptive:
                if proved and new_max >= old_max:
                    window = min(wmax, window + max(1, window // 4))
                elif not proved:
                    window = max(wmin, window - max(1, window // 4))
        info.update(
            trajectory=traj.points,
            rounds=rounds,
            accepted=accepted,
            windows=window,
            stopped_by=stopped,
        )
        return SolveResult(off, "optimal" if arena <= bound else "heuristic", bound, info)

    def _sub_solve(self, problem, off, free, floor, arena, left):
        """Re-place ``free`` (buffer indices) among the fixed others.

        Returns ``(result, build_seconds)``: ``result`` is ``None`` if CP-SAT found nothing, else
        ``(offsets, new highest free top, old highest free top, proved)``; ``build_seconds`` is
        the time spent building the model."""
        from ortools.sat.python import cp_model  # imported here: `import planners` stays light

        t0 = time.perf_counter()
        starts, ends, sizes, aligns = (
            problem.starts,
            problem.ends,
            problem.sizes,
            problem.alignments,
        )
        free = free[sizes[free] > 0]
        if free.size == 0:
            return None, 0.0
        is_free = np.zeros(problem.n, bool)
        is_free[free] = True
        t_lo, t_hi = int(starts[free].min()), int(ends[free].max())
        top = off + sizes
        near = np.flatnonzero(
            ~is_free & (sizes > 0) & (starts < t_hi) & (ends > t_lo) & (top > floor)
        )
        n_st, n_en, n_off, n_top = starts[near], ends[near], off[near], top[near]
        m = cp_model.CpModel()
        xs, ys, tops = [], [], []
        hz = m.NewIntVar(floor, arena, "z")
        ovars = {}
        for i in free.tolist():
            s, a = int(sizes[i]), int(aligns[i])
            meet = (n_st < ends[i]) & (n_en > starts[i])
            dom = _offset_domain(n_off[meet], n_top[meet], s, a, floor, arena - s)
            k = m.NewIntVarFromDomain(dom, f"k{i}")
            o = k if a == 1 else a * k
            ovars[i] = (k, a)
            m.AddHint(k, int(off[i]) // a)
            xs.append(m.NewFixedSizeIntervalVar(int(starts[i]), int(ends[i] - starts[i]), f"t{i}"))
            ys.append(m.NewIntervalVar(o, s, o + s, f"y{i}"))
            m.Add(o + s <= hz)
            tops.append(int(top[i]))
        m.AddNoOverlap2D(xs, ys)
        old_max = max(tops)
        m.AddHint(hz, old_max)
        m.Minimize(hz)
        build = time.perf_counter() - t0
        left -= build
        if left <= 0.01:
            return None, build
        solver = cp_model.CpSolver()
        prm = solver.parameters
        prm.num_workers = 1
        prm.random_seed = int(self.seed)
        prm.max_time_in_seconds = max(0.01, min(float(self.sub_time_limit), left))
        if self.sub_deterministic_time is not None:
            prm.max_deterministic_time = float(self.sub_deterministic_time)
        st = solver.Solve(m)
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, build
        new = off.copy()
        for i, (k, a) in ovars.items():
            new[i] = solver.Value(k) * a
        new_max = int((new[free] + sizes[free]).max())
        # Above 2**53 bytes CP-SAT compares objective and bound as doubles, so its OPTIMAL may be
        # off by a few bytes (planners.cpsat): such a claim proves nothing here.
        proved = st == cp_model.OPTIMAL and new_max <= 2**53
        return (new, new_max, old_max, proved), build


def _offset_domain(fix_off, fix_top, size: int, align: int, lo: int, hi: int):
    """CP-SAT domain of ``k`` (offset ``= align * k``, bytes) for a buffer of ``size`` bytes that
    must avoid the fixed blocks ``[fix_off[j], fix_top[j])`` (int64 arrays of the fixed buffers
    live with it) and stay within ``lo <= offset <= hi``.

    The blocks forbid the offsets ``[fix_off - size + 1, fix_top - 1]`` (closed); the domain is
    ``[lo, hi]`` minus their union, each allowed gap reduced to the multiples of ``align`` in it.
    This states exactly what NoOverlap2D against fixed rectangles states (a fixed rectangle meets
    the buffer in time, so only the address ranges matter), with no fixed rectangle in the model:
    the sub-problem's size follows the free buffers, not the fixed ones around them.
    ``O(f log f)`` for ``f`` blocks."""
    f_lo = np.asarray(fix_off, np.int64) - (size - 1)
    f_hi = np.asarray(fix_top, np.int64) - 1
    keep = (f_hi >= lo) & (f_lo <= hi)
    f_lo, f_hi = f_lo[keep], f_hi[keep]
    if f_lo.size:
        order = np.argsort(f_lo, kind="stable")
        f_lo, f_hi = f_lo[order], np.maximum.accumulate(f_hi[order])
    gap_lo = np.maximum(np.concatenate(([lo], f_hi + 1)), lo)
    gap_hi = np.minimum(np.concatenate((f_lo - 1, [hi])), hi)
    k_lo = -(-gap_lo // align)
    k_hi = gap_hi // align
    ok = k_lo <= k_hi
    flat = np.column_stack((k_lo[ok], k_hi[ok])).ravel().tolist()
    from ortools.sat.python import cp_model

    return cp_model.Domain.FromFlatIntervals(flat)


def _grown_window(problem: Problem, off: np.ndarray, c: int, window: int, pick) -> np.ndarray:
    """``pick(lo, hi)`` (buffer indices for the steps ``lo..hi``) over a window grown from ``c``'s
    lifetime one lifetime end point at a time, alternately left and right, until it gives at
    least ``window`` buffers. When ``c``'s lifetime alone gives more than ``window``, the
    ``window`` of them nearest to ``c`` in address (distance between centres) are taken, ``c``
    first."""
    starts, ends, sizes = problem.starts, problem.ends, problem.sizes
    points = np.unique(np.concatenate([starts, ends]))
    a = int(np.searchsorted(points, starts[c]))
    b = int(np.searchsorted(points, ends[c]))
    sel = pick(points[a], points[b])
    if sel.size > window:
        mid = 2 * off[sel] + sizes[sel]  # twice the centre (bytes), exact in int64
        dist = np.abs(mid - (2 * off[c] + sizes[c]))
        return sel[np.lexsort((sel, dist, sel != c))[:window]]  # c first, then by distance
    side = 0
    while sel.size < window and (a > 0 or b < len(points) - 1):
        if (side == 0 and a > 0) or b >= len(points) - 1:
            a -= 1
        else:
            b += 1
        side ^= 1
        sel = pick(points[a], points[b])
    return sel


def _event_window(problem: Problem, off: np.ndarray, c: int, window: int) -> np.ndarray:
    """Buffers allocated or freed in a time window: those whose start or end step lies in ``[lo,
    hi]`` (closed, steps), the window grown from ``c``'s lifetime by :func:`_grown_window` until
    at least ``window`` buffers have an end point in it. Buffers live across the whole window are
    not freed: around a peak they are the stack the others are placed into, while the ones
    allocated or freed there are what a different layout of the window can exchange."""
    starts, ends = problem.starts, problem.ends
    live = problem.sizes > 0

    def pick(lo, hi):
        return np.flatnonzero(
            live & (((starts >= lo) & (starts <= hi)) | ((ends >= lo) & (ends <= hi)))
        )

    return _grown_window(problem, off, c, window, pick)


def _time_window(problem: Problem, off: np.ndarray, c: int, window: int) -> np.ndarray:
    """Buffers live in a time window (``start < hi`` and ``end > lo``, steps) grown from ``c``'s
    lifetime by :func:`_grown_window` until at least ``window`` buffers are live in it."""
    starts, ends = problem.starts, problem.ends
    live = problem.sizes > 0

    def pick(lo, hi):
        return np.flatnonzero((starts < hi) & (ends > lo) & live)

    return _grown_window(problem, off, c, window, pick)


def _address_band(problem: Problem, off: np.ndarray, c: int, window: int):
    """The ``window`` buffers live with ``c`` (``c`` included) whose tops are highest, and the
    band floor (the lowest offset among them)."""
    starts, ends, sizes = problem.starts, problem.ends, problem.sizes
    nbr = np.flatnonzero((starts < ends[c]) & (ends > starts[c]) & (sizes > 0))
    top = off[nbr] + sizes[nbr]
    sel = nbr[np.argsort(-top, kind="stable")[:window]]
    return sel, int(off[sel].min())
