"""``lns_cpsat``: large-neighbourhood search with CP-SAT sub-solves, started from TelaMalloc.

Starting from TelaMalloc's plan (:class:`planners.telamalloc.TelaMalloc` with a placement budget,
``start="telamalloc"``; the default ``"auto"`` up to :data:`AUTO_TELAMALLOC_BUFFERS` buffers) or
from the best greedy plan (``start="greedy"``, and ``"auto"`` above that size: smallest arena,
ties to the fewest bytes above the max-live bound,
:func:`planners.local_search.best_greedy_start`), repeat until a stop below:

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
   arena; the current layout is the solution hint. Each sub-solve stops on CP-SAT's
   deterministic time (``sub_deterministic_time``, and what is left of ``deterministic_time``),
   with one worker and ``random_seed=seed``; the wall clock (what is left of ``time_limit``,
   and ``sub_time_limit`` only when set) is the outer stop.
3. **Accept** the new layout when that highest top is not above the old one (so the arena never
   grows; ties move the search on). With ``adaptive`` the window grows by a quarter after a
   sub-solve proved its neighbourhood optimal without improving, and shrinks by a quarter after
   one that stopped on its budget.

Why the start is TelaMalloc's plan. From the greedy start the search is stuck on MiniMalloc's
challenging problems A-F (1.11-1.32 x the lower bound after 5 s, barely below
``greedy_by_size``): their live profile stays above 0.9 x the max-live bound on 86-95 % of the
steps (A-D), and the greedy plans (1.22-1.37 x) have 15-59 buffers above the bound whose lifetimes
cover every step of A-E. The excess is spread over the whole time axis, so a neighbourhood local
in time (or a band around one critical buffer) can lower its own highest top only to the next
highest top elsewhere: 30 rounds on A and D accepted 8 and 14 improvements of 1-4 KiB each
while 16-20 of the sub-solves proved their neighbourhood optimal -- neither the sub-solve limit
nor the window size is the obstacle, the locality is. TelaMalloc's skyline search places every
buffer under a falling global target and reaches the bound of A, C, E and F. From its plan the
neighbourhoods mend what is left around the top: with the budgets of ``time_limit=5`` (4 million
placements, then 0.1 deterministic-time units) B ends at 1.0117 x the bound (TelaMalloc alone
with its 5 million: 1.0137 x) and D at 1.0436 x (TelaMalloc 1.0436 x; the LNS rounds alone gain
one 1 KiB step there, 40 rounds of 40 buffers nothing, 15 of 100 nothing). So this planner is
TelaMalloc with :data:`AUTO_START_SHARE` of its placements plus a seeded CP-SAT polish of the
buffers around the arena's top; the polish pays most where a plan's excess is local
(``somas_pangu_2.6B``, which starts from the greedy plan, and the ``chain`` problem).

Budget and determinism (``time_limit`` is the outer stop only). The start is budgeted by
placements (``start_nodes``, by default :data:`AUTO_START_SHARE` of TelaMalloc's default budget
for the same limit), the search by rounds (``max_rounds``, ``stall_rounds``) and CP-SAT
deterministic time (``sub_deterministic_time`` per sub-solve, ``deterministic_time`` in all: by
default :data:`AUTO_DETERMINISTIC_SHARE` per second of ``time_limit``); neighbourhoods come from
the seeded generator. So two runs with the same parameters give the same plan on an idle and on
a busy machine unless ``info["stopped_by"] == "time_limit"``: the clock stopped the start, a
sub-solve, or the rounds (a sub-solve that would start with less time left than the last model
took to build is not started). CP-SAT's deterministic time is a count of work, not seconds: on
these sub-problems one unit is about 10 s of one idle core (30 s at a load of 6 on 2 cores), hence
the small defaults.

Time limit. The call returns within ``time_limit`` plus the stated slack, the larger of 10 % and
0.5 s (measured: at most 0.13 s over at limits of 0.5-5 s on MiniMalloc's D and
``somas_pangu_2.6B`` at a load of 6 on 2 cores). Heavy set-up counts: the TelaMalloc start gets
what is left of the limit, no greedy start plan begins that would end after the deadline if it
took as long as the previous one, OR-Tools (up to 1 s to import under load) is imported before
the first decision on the time left, no round starts with less time left than the last model
took to build, and CP-SAT gets only what is left.

Conventions: half-open lifetimes in schedule steps; sizes, offsets and arenas in bytes.
``plan.info["trajectory"]`` lists ``(seconds, arena)`` at the start plan and at every improvement.
The best bound is the max-live lower bound (a neighbourhood optimum proves nothing globally);
the status is ``"optimal"`` when the arena reaches it, else ``"heuristic"``.

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
from numbers import Integral, Real

import numpy as np

from .base import Planner, SolveResult
from .bounds import lower_bound
from .feature_cpsat import solve_features
from .local_search import DEFAULT_START_ORDERS, START_ORDERS_RULE, Trajectory, anytime_start
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
from .telamalloc import AUTO_NODES_PER_SECOND, TelaMalloc, _resolve_engine

__all__ = [
    "LNSCPSat",
    "NEIGHBOURHOODS",
    "STARTS",
    "AUTO_TELAMALLOC_BUFFERS",
    "AUTO_START_SHARE",
    "AUTO_DETERMINISTIC_SHARE",
]

#: Neighbourhood rules of :class:`LNSCPSat`.
NEIGHBOURHOODS = ("time", "band", "events")
#: Start plans of :class:`LNSCPSat` (``start=``).
STARTS = ("auto", "telamalloc", "greedy")
#: ``start="auto"`` starts from TelaMalloc up to this many buffers (the size up to which its
#: search keeps neighbour lists, :data:`planners.telamalloc._NBR_BUFFERS`; beyond it a placement
#: scans every buffer and the budget goes further in the neighbourhoods), else from the greedy
#: plan.
AUTO_TELAMALLOC_BUFFERS = 4_000
#: ``start_nodes="auto"``: this share of TelaMalloc's default placement budget for the same
#: time limit (:data:`planners.telamalloc.AUTO_NODES_PER_SECOND`).
AUTO_START_SHARE = 0.8
#: ``deterministic_time="auto"``: CP-SAT deterministic time of all sub-solves, per second of
#: ``time_limit`` (one unit is about 10 s of an idle core on MiniMalloc's sub-problems).
AUTO_DETERMINISTIC_SHARE = 0.02


class LNSCPSat(Planner):
    """TelaMalloc's plan polished by CP-SAT large-neighbourhood search (work-budgeted, seeded).

    Parameters
    ----------
    time_limit : float, default 5.0
        Wall-clock seconds for the whole call (start plans included): the outer stop, reported
        as ``info["stopped_by"] == "time_limit"`` when it ends the call; it also sets the
        ``"auto"`` work budgets below.
    seed : int, default 0
        Seed of the neighbourhood choice and of CP-SAT.
    start : {"auto", "telamalloc", "greedy"}, default "auto"
        Start plan (:data:`STARTS`): TelaMalloc's skyline search with ``start_nodes``
        placements, or the best greedy plan; ``"auto"``: TelaMalloc up to
        :data:`AUTO_TELAMALLOC_BUFFERS` buffers, else greedy (see the module docstring).
    start_nodes : int or "auto", default "auto"
        Placements of the TelaMalloc start; ``"auto"`` is :data:`AUTO_START_SHARE` times
        TelaMalloc's own default budget for ``time_limit``
        (:data:`planners.telamalloc.AUTO_NODES_PER_SECOND`).
    max_rounds : int or None, default None
        Sub-solves in all; ``None``: no round count.
    deterministic_time : float, "auto" or None, default "auto"
        CP-SAT deterministic time of all sub-solves together (a work count; see the module
        docstring); ``"auto"`` is :data:`AUTO_DETERMINISTIC_SHARE` times ``time_limit``.
    neighbourhoods : tuple of str, default ("time", "band", "events")
        Rules drawn uniformly each round (:data:`NEIGHBOURHOODS`).
    window : int, default 40
        Buffers freed per round (the starting size when ``adaptive``): exactly ``window`` for
        ``band`` and for a truncated window; at least ``window`` when the ``time`` or ``events``
        window grows, since it grows by whole lifetime end points.
    sub_time_limit : float or None, default None
        Wall-clock seconds per sub-solve; set, the sub-solves (and so the plan) depend on the
        machine's load. ``None``: only the time left of ``time_limit``.
    sub_deterministic_time : float or None, default 0.02
        CP-SAT deterministic time per sub-solve (reproducible).
    adaptive : bool, default True
        Grow the window after a proved neighbourhood optimum, shrink it after a sub-solve that
        stopped on its budget (between 8 and ``4 * window`` buffers).
    stall_rounds : int or None, default 30
        Stop after this many rounds without a new best arena; ``None``: no such stop.
    start_orders : tuple of str, default :data:`planners.local_search.DEFAULT_START_ORDERS`
        (every name in :data:`planners.greedy.ORDERS`, ``"size"`` first)
        Orders of the greedy start plans (each with both fits), for either start.
    start_share : float, default 1.0
        Share of ``time_limit`` after which no further greedy start plan begins (one always
        runs); the default runs them all unless the time limit bites.

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` when the arena equals the best proved bound: the max-live lower bound,
    TelaMalloc's proved bound, or the arena itself when one neighbourhood held every buffer and
    CP-SAT proved it optimal (small problems); else ``heuristic``. ``info``: ``trajectory``
    (``(seconds, arena)`` pairs, bytes), ``start``, ``start_arenas``, ``start_nodes`` (the
    TelaMalloc start's placements), ``start_cut``, ``rounds``, ``accepted``, ``windows`` (last
    window size), ``deterministic_time`` (spent by the sub-solves), ``stopped_by``
    (``"lower_bound"``, ``"proved"``, ``"max_rounds"``, ``"deterministic_time"``,
    ``"stall_rounds"``, ``"time_limit"``, or ``"range"``: the worst-case arena exceeds ``2**60``
    bytes, beyond what the CP-SAT models here are built for, and the start plan is returned).

    Raises
    ------
    ParameterError
        (from :meth:`plan`) Unknown neighbourhood or start, a window below 2, a time limit that is
        not positive, ... (``_parameter_constraints``).

    Examples
    --------
    >>> from planners.examples import exercise_5_1_problem
    >>> LNSCPSat(max_rounds=5).plan(exercise_5_1_problem()).arena_size
    780
    """

    name = "lns_cpsat"
    family = "search"
    #: the CP-SAT feature model (:mod:`planners.feature_cpsat`) for pins, hints, gaps, pools
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native"}
    _parameter_constraints = {
        "time_limit": [POSITIVE_SECONDS],
        "seed": [CPSAT_SEED],
        "start": [StrOptions(STARTS)],
        "start_nodes": [Interval(Integral, 1, None), StrOptions(("auto",))],
        "max_rounds": [Interval(Integral, 0, None), None],
        "deterministic_time": [Interval(Real, 0, 1e9, closed="right"), StrOptions(("auto",)),
                               None],
        "neighbourhoods": [SequenceOf(StrOptions(NEIGHBOURHOODS))],
        "window": [Interval(Integral, 2, None)],
        "sub_time_limit": OPTIONAL_POSITIVE_SECONDS,
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
        start: str = "auto",
        start_nodes: int | str = "auto",
        max_rounds: int | None = None,
        deterministic_time: float | str | None = "auto",
        neighbourhoods: tuple[str, ...] = NEIGHBOURHOODS,
        window: int = 40,
        sub_time_limit: float | None = None,
        sub_deterministic_time: float | None = 0.02,
        adaptive: bool = True,
        stall_rounds: int | None = 30,
        start_orders: tuple[str, ...] = DEFAULT_START_ORDERS,
        start_share: float = 1.0,
    ) -> None:
        self.time_limit = time_limit
        self.seed = seed
        self.start = start
        self.start_nodes = start_nodes
        self.max_rounds = max_rounds
        self.deterministic_time = deterministic_time
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
        t0 = time.perf_counter()
        deadline = t0 + float(self.time_limit)
        traj = Trajectory(t0)
        start = self.start
        if start == "auto":
            start = "telamalloc" if problem.n <= AUTO_TELAMALLOC_BUFFERS else "greedy"
        if start == "telamalloc":
            off, arena, lb, info = self._telamalloc_start(problem, traj)
        else:
            st = anytime_start(problem, self.time_limit, self.start_orders, self.start_share)
            lb, arena = st.lower_bound, st.arena
            off = np.asarray(st.offsets, np.int64).copy()
            traj.add(arena)
            info = dict(st.info)
        bound = int(info.pop("start_bound", lb))
        sizes = problem.sizes
        live = sizes > 0
        rng = np.random.default_rng(self.seed)
        window = int(self.window)
        wmin, wmax = min(8, window), 4 * window
        rounds = accepted = since_best = 0
        last_round = 0.0  # seconds the last round spent building its model
        det_total = 0.0  # CP-SAT deterministic time spent by the sub-solves
        det_budget = self._deterministic_budget()
        stopped = "lower_bound"
        n_live = int(live.sum())
        if info.get("start_cut"):
            stopped = "time_limit"  # the clock stopped the start phase
        if problem.worst_case_arena > 2**60:
            stopped = "range"
        while arena > bound and stopped not in ("range", "time_limit"):
            if self.max_rounds is not None and rounds >= self.max_rounds:
                stopped = "max_rounds"
                break
            if det_budget is not None and det_total >= det_budget:
                stopped = "deterministic_time"
                break
            if self.stall_rounds is not None and since_best >= self.stall_rounds:
                stopped = "stall_rounds"
                break
            if rounds == 0:
                # OR-Tools takes up to a second to import on a loaded machine: imported before
                # the first decision on the time left (and only when a round may run)
                from ortools.sat.python import cp_model  # noqa: F401
            left = deadline - time.perf_counter()
            if left <= max(0.01, last_round):  # the next round would likely overrun
                stopped = "time_limit"
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
            det_left = None if det_budget is None else det_budget - det_total
            res, last_round, det, cut = self._sub_solve(problem, off, free, floor, arena,
                                                        deadline, det_left)
            det_total += det
            if cut:  # the wall clock stopped this sub-solve: its outcome depends on the load
                stopped = "time_limit"
                break
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
        if arena <= bound and stopped not in ("proved", "range"):
            stopped = "lower_bound" if bound == lb else "proved"
        info.update(
            trajectory=traj.points,
            rounds=rounds,
            accepted=accepted,
            windows=window,
            deterministic_time=round(det_total, 6),
            stopped_by=stopped,
        )
        return SolveResult(off, "optimal" if arena <= bound else "heuristic", bound, info)

    def _deterministic_budget(self) -> float | None:
        """CP-SAT deterministic time for all sub-solves (``deterministic_time``; ``"auto"`` is
        :data:`AUTO_DETERMINISTIC_SHARE` of ``time_limit``)."""
        if self.deterministic_time == "auto":
            return AUTO_DETERMINISTIC_SHARE * float(self.time_limit)
        return None if self.deterministic_time is None else float(self.deterministic_time)

    def _start_nodes(self, engine: str) -> int:
        """Placement budget of the TelaMalloc start (``start_nodes``; ``"auto"`` is
        :data:`AUTO_START_SHARE` of TelaMalloc's own default budget for ``time_limit``)."""
        if self.start_nodes != "auto":
            return int(self.start_nodes)
        rate = AUTO_NODES_PER_SECOND[engine]
        return max(1, int(AUTO_START_SHARE * rate * float(self.time_limit)))

    def _telamalloc_start(self, problem: Problem, traj: Trajectory):
        """The start plan of ``start="telamalloc"``: :class:`planners.telamalloc.TelaMalloc`
        with ``start_nodes`` placements (its greedy starts over ``start_orders`` included) and
        what is left of the time limit as its outer stop. Returns ``(offsets, arena, lower bound,
        info)``, the trajectory extended by TelaMalloc's (seconds since this call began); ``info`` holds
        ``start`` (``"telamalloc/" + its greedy start``), ``start_nodes``, ``start_arenas``,
        ``start_cut`` (the clock stopped it) and ``start_bound`` (its proved bound, bytes)."""
        t_start = time.perf_counter()
        left = max(1e-3, float(self.time_limit) - (t_start - traj.t0))  # what is left of the limit
        tela = TelaMalloc(time_limit=left, max_nodes=1,
                          start_orders=self.start_orders, start_share=self.start_share)
        tela.max_nodes = self._start_nodes(_resolve_engine(tela.engine))
        res = tela._solve(problem)
        shift = t_start - traj.t0
        for secs, arena in res.info["trajectory"]:
            if not traj.points or arena < traj.points[-1][1]:
                traj.points.append((round(secs + shift, 6), int(arena)))
        off = np.asarray(res.offsets, np.int64).copy()
        arena = int((off + problem.sizes).max(initial=0))
        ri = res.info
        info = {
            "start": f"telamalloc/{ri['start']}",
            "start_arenas": ri["start_arenas"],
            "start_nodes": int(ri["nodes"]),
            "start_cut": ri["stopped_by"] == "time_limit",
            "start_bound": int(res.best_bound),
        }
        return off, arena, lower_bound(problem), info

    def _sub_solve(self, problem, off, free, floor, arena, deadline, det_left):
        """Re-place ``free`` (buffer indices) among the fixed others.

        CP-SAT stops on ``min(sub_deterministic_time, det_left)`` deterministic time, on
        ``sub_time_limit`` seconds when that is set, and on the call's ``deadline`` (a
        :func:`time.perf_counter` instant). Returns ``(result, build_seconds, det, cut)``:
        ``result`` is ``None`` if CP-SAT found nothing, else ``(offsets, new highest free top,
        old highest free top, proved)``; ``build_seconds`` is the time spent building the model,
        ``det`` the deterministic time CP-SAT spent, ``cut`` whether a wall clock (the deadline
        or ``sub_time_limit``) rather than the work budget ended the sub-solve."""
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
            return None, 0.0, 0.0, False
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
        t1 = time.perf_counter()
        build = t1 - t0
        left = deadline - t1
        if left <= 0.01:
            return None, build, 0.0, True
        wall = left if self.sub_time_limit is None else min(float(self.sub_time_limit), left)
        det_cap = self.sub_deterministic_time
        if det_left is not None:
            det_cap = det_left if det_cap is None else min(float(det_cap), det_left)
        solver = cp_model.CpSolver()
        prm = solver.parameters
        prm.num_workers = 1
        prm.random_seed = int(self.seed)
        prm.max_time_in_seconds = max(0.01, wall)
        if det_cap is not None:
            prm.max_deterministic_time = max(1e-3, float(det_cap))
        st = solver.Solve(m)
        det = float(solver.deterministic_time)
        # a wall clock bit when CP-SAT ran out of seconds before its deterministic budget
        cut = st != cp_model.OPTIMAL and st != cp_model.INFEASIBLE and (
            time.perf_counter() - t1 >= prm.max_time_in_seconds - 1e-3
        ) and (det_cap is None or det < float(det_cap))
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, build, det, cut
        new = off.copy()
        for i, (k, a) in ovars.items():
            new[i] = solver.Value(k) * a
        new_max = int((new[free] + sizes[free]).max())
        # Above 2**53 bytes CP-SAT compares objective and bound as doubles, so its OPTIMAL may be
        # off by a few bytes (planners.cpsat): such a claim proves nothing here.
        proved = st == cp_model.OPTIMAL and new_max <= 2**53
        return (new, new_max, old_max, proved), build, det, cut


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
