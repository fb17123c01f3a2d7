"""``local_search``: anytime hill climbing over the greedy placement order.

Every greedy planner is a placement **order** and a **fit** rule (:mod:`planners.greedy`). For the
first-fit rule some order reproduces an optimal layout (list the buffers of any layout pushed down
as far as it goes by increasing offset), so searching over orders loses nothing. This planner

1. starts from the best greedy plan: every order of ``start_orders`` with every fit of
   ``start_fits`` (the compiled engine when it is built), keeping the smallest arena (ties: the
   smaller overflow, defined below);
2. then, until ``time_limit`` or ``max_iters``, picks a **critical** buffer (one whose top is the
   arena), changes the order around it and re-places the buffers, keeping the change when the
   arena does not grow (TVM USMP's hill climb, ``tvm/src/tir/usmp/algo/hill_climb.cc``):

   * ``"move"`` -- move the critical buffer just before one of its neighbours (a buffer live at
     the same time) that is placed earlier, so it is placed before the buffer that pushed it up;
   * ``"swap"`` -- TVM's move: swap a neighbour placed before the critical buffer (first level)
     with a neighbour of that neighbour placed before it (second level);
   * ``"ruin"`` -- ruin and recreate (Schrimpf et al. 2000; iterated greedy, Ruiz & Stuetzle
     2007): the critical buffer and its neighbours whose tops lie in a random band below the
     arena leave the order and go back, shuffled, at random positions before the first of them;

3. after ``patience`` moves without a new best arena, restarts from the best order with ``kick``
   random moves (iterated greedy with restarts, Ruiz & Stuetzle 2007).

Ties on the arena are broken by the **overflow**, the sum over buffers of ``max(0, top -
lower_bound)`` (bytes), so the search walks plateaus towards layouts with fewer bytes above the
lower bound. ``temperature > 0`` accepts a worse arena with probability ``exp(-delta / (T *
lower_bound))`` (simulated annealing, ``T`` falling linearly to 0 over an integer ``max_iters`` when given).

Re-evaluation is incremental: the placement of the buffer at position ``k`` depends only on the
buffers before it, so a changed order is re-placed from its first changed position on, keeping
the offsets of the prefix (:func:`place_suffix`; ``evaluator="incremental"``); it stops as soon as
a top exceeds the cut-off (the current arena in a hill climb). ``evaluator="engine"`` re-places
the whole order with :func:`planners.greedy.greedy_offsets` instead, which is faster while the
compiled engine is built and the problem is small; ``"auto"`` picks the engine when the compiled
core is built and the incremental evaluator otherwise. Both give identical offsets.

Conventions: half-open lifetimes ``[start, end)`` in schedule steps, sizes, offsets and arenas in
bytes. ``plan.info["trajectory"]`` lists ``(seconds, arena)`` at the start plan and at every new
best arena (seconds since the call began). The status is ``"optimal"`` when the arena reaches the
max-live lower bound (the best proved bound this planner knows), else ``"heuristic"``.

Determinism: the moves come from ``numpy.random.default_rng(seed)`` and every stop but the time
limit counts work (``max_iters`` moves, by default scaled by ``time_limit`` and the buffers,
``stall_limit`` moves, the lower bound); every start plan runs
(``start_share=1``). So unless ``info["stopped_by"] == "time_limit"`` the same seed gives the same
plan on any machine and under any load. A run stopped by ``time_limit`` (the outer wall-clock
stop, reported when it bites) is a prefix of that same move sequence, so it can only stop earlier. The call
returns within ``time_limit`` plus the stated slack (the larger of 10 % and 0.5 s; measured at
most 0.11 s over at limits of 0.5-5 s on MiniMalloc's D and ``somas_pangu_2.6B`` at a load of 6
on 2 cores): no start plan or re-placement begins that would likely end after the deadline.

Complexity: one iteration is ``O(n)`` numpy work to find the neighbours plus one re-placement:
``O(n log n + E)`` with the engine, or ``O(L n)`` for a suffix of ``L`` buffers incrementally.

References
----------
.. [1] TVM Unified Static Memory Planner, ``hill_climb.cc`` (Apache TVM, 2021).
.. [2] R. Ruiz, T. Stuetzle, "A simple and effective iterated greedy algorithm for the permutation
   flowshop scheduling problem", EJOR 177(3), 2007.
.. [3] G. Schrimpf, J. Schneider, H. Stamm-Wilbrandt, G. Dueck, "Record breaking optimization
   results using the ruin and recreate principle", J. Comput. Phys. 159(2), 2000.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from .base import Planner, SolveResult
from .bounds import lower_bound
from .errors import ProblemError
from .feature_cpsat import traffic_cost
from .greedy import FITS, ORDERS, arena_of, greedy_offsets, resolve_engine
from .model import Problem
from .params import POSITIVE_SECONDS, SEED, SHARE, Interval, SequenceOf, StrOptions
from .placement import place_features

__all__ = [
    "LocalSearch",
    "MOVES",
    "EVALUATORS",
    "DEFAULT_START_ORDERS",
    "AUTO_PLACEMENTS_PER_SECOND",
    "best_greedy_start",
    "overflow_bytes",
    "AnytimeStart",
    "anytime_start",
    "place_suffix",
    "Trajectory",
]

#: Neighbourhood moves of :class:`LocalSearch`.
MOVES = ("move", "swap", "ruin")
#: Re-evaluation of a changed order (see the module docstring).
EVALUATORS = ("auto", "engine", "incremental")
#: Orders tried for the start plan: every name of :data:`planners.greedy.ORDERS`, ``"size"``
#: first (the classic best, so a large problem has its usual start plan before the time limit
#: stops the others).
DEFAULT_START_ORDERS: tuple[str, ...] = ("size", *(o for o in ORDERS if o != "size"))
#: ``max_iters="auto"`` of :class:`LocalSearch`: buffer placements per second of ``time_limit``;
#: a move re-places up to every buffer, so the budget is this times ``time_limit`` divided by the
#: buffers. Measured: a move on MiniMalloc's A (154 buffers, compiled engine) re-places about
#: 385,000 buffers a second at a load of 6 on 2 cores, about three times that on an idle core.
AUTO_PLACEMENTS_PER_SECOND = 600_000
#: Rule of ``start_orders`` (the anytime planners share it): names in :data:`planners.greedy.ORDERS`.
START_ORDERS_RULE = SequenceOf(StrOptions(lambda: ORDERS))


class Trajectory:
    """``(seconds, arena)`` at the start plan and at every improvement, seconds since ``t0``."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.points: list[tuple[float, int]] = []

    def add(self, arena: int) -> None:
        """Record ``arena`` (bytes) now if it is the first point or a new best."""
        if not self.points or arena < self.points[-1][1]:
            self.points.append((round(time.perf_counter() - self.t0, 6), int(arena)))

    @property
    def best(self) -> int | None:
        """The best arena recorded (bytes), or None before the first point."""
        return self.points[-1][1] if self.points else None


def overflow_bytes(offsets: np.ndarray, sizes: np.ndarray, lower_bound: int) -> int:
    """The **overflow** of a plan: the sum over buffers of ``max(0, offset + size -
    lower_bound)`` (bytes; int64 arrays of shape ``(n,)``), exact: summed in int64 when no sum
    can overflow it, else as Python integers. The anytime planners break arena ties by it (fewer
    bytes above the max-live bound, fewer buffers to move). ``O(n)``."""
    excess = np.maximum(offsets + sizes - lower_bound, 0)
    if int(excess.max(initial=0)) <= (2**63 - 1) // max(1, excess.size):
        return int(excess.sum())
    return sum(excess.tolist())


def best_greedy_start(
    problem: Problem,
    orders=DEFAULT_START_ORDERS,
    fits=FITS,
    deadline: float | None = None,
    engine: str = "auto",
):
    """The best greedy plan over ``orders`` x ``fits``: ``(perm, fit, offsets, arena, arenas,
    name)``, ``name`` being its ``"order/fit"``.

    ``arenas`` maps ``"order/fit"`` to the arena (bytes) of every combination that ran. Ties on
    the arena go to the plan with the smaller **overflow** (the sum over buffers of ``max(0, top -
    lower bound)``, bytes: the fewer bytes above the max-live bound, the fewer buffers an
    improvement search must move), then to the earlier order, then the earlier fit. An order
    equal to an earlier one (e.g. ``problem`` and ``in_order`` on a problem listed by start) is
    not placed again: it gets the earlier one's arenas. No combination starts after ``deadline``
    (a :func:`time.perf_counter` instant), nor one that would end after it if it took as long as
    the previous one; at least one always runs. Cost: one greedy placement per combination, ``O(n log n + E)`` each, plus ``O(n)`` for
    the overflow of a plan that ties or beats the best arena so far.
    """
    best = None
    best_over, best_name = 0, ""
    lb = lower_bound(problem)
    arenas: dict[str, int] = {}
    seen: list[tuple[str, np.ndarray]] = []  # orders placed so far: an equal order is not re-run
    last = 0.0  # seconds the last combination took: none starts that would likely overrun
    for name in orders:
        perm = np.asarray(ORDERS[name](problem), np.int64) if isinstance(name, str) else None
        if perm is None:
            raise ProblemError(f"start order {name!r} is not a name in ORDERS: {list(ORDERS)}")
        same = next((old for old, q in seen if np.array_equal(q, perm)), None)
        seen.append((name, perm))
        for fit in fits:
            if same is not None:  # the same order as an earlier name: the same placement
                if f"{same}/{fit}" in arenas:
                    arenas[f"{name}/{fit}"] = arenas[f"{same}/{fit}"]
                continue
            now = time.perf_counter()
            if best is not None and deadline is not None and now + last > deadline:
                return (*best, arenas, best_name)
            off = greedy_offsets(problem, perm, fit, engine=engine)
            last = time.perf_counter() - now
            arena = arena_of(problem, off)
            arenas[f"{name}/{fit}"] = arena
            if best is not None and arena > best[3]:
                continue
            over = overflow_bytes(off, problem.sizes, lb)
            if best is None or arena < best[3] or over < best_over:
                best, best_over, best_name = (perm, fit, off, arena), over, f"{name}/{fit}"
    return (*best, arenas, best_name)


@dataclass
class AnytimeStart:
    """Where every anytime planner starts (:func:`anytime_start`): the clock, the deadline of the
    whole call, the trajectory, the max-live lower bound (bytes), and the best greedy plan
    (``perm``, ``fit``, ``offsets``, ``arena`` in bytes) with ``info`` naming it and every start's
    arena (``{"start", "start_arenas"}``)."""

    t0: float
    deadline: float
    trajectory: Trajectory
    lower_bound: int
    perm: np.ndarray
    fit: str
    offsets: np.ndarray
    arena: int
    info: dict


def anytime_start(problem: Problem, time_limit: float, start_orders, start_share: float = 1.0
                  ) -> AnytimeStart:
    """Start an anytime planner's call.

    Parameters
    ----------
    problem : Problem
        Half-open lifetimes (schedule steps), sizes in bytes, no features.
    time_limit : float
        Wall-clock seconds of the whole call: the deadline is ``time_limit`` seconds from now.
    start_orders : sequence of str
        Orders of :data:`planners.greedy.ORDERS`, each placed with both fits by
        :func:`best_greedy_start`.
    start_share : float, default 1.0
        No start plan begins after ``start_share * time_limit`` seconds (one always runs). The
        default 1.0 makes the deadline the only clock: every start plan runs unless the time
        limit itself bites, so the start plan (and every search from it) does not depend on the
        machine's load. A share below 1 is a wall-clock slice: under load it may leave start
        plans out.

    Returns
    -------
    AnytimeStart
        ``info`` holds ``start`` (``"order/fit"``) and ``start_arenas`` (bytes per combination
        run); ``start_cut`` is ``True`` when the clock left some combination out (the caller
        then reports ``stopped_by="time_limit"`` unless its search ends otherwise). The
        trajectory is left empty: the caller records its start arena.
    """
    t0 = time.perf_counter()
    limit = float(time_limit)
    perm, fit, off, arena, arenas, name = best_greedy_start(
        problem, start_orders, FITS, t0 + start_share * limit
    )
    info = {"start": name, "start_arenas": arenas,
            "start_cut": len(arenas) < len(set(start_orders)) * len(FITS)}
    return AnytimeStart(t0, t0 + limit, Trajectory(t0), lower_bound(problem), perm, fit, off,
                        arena, info)


def _align_up(v: np.ndarray, a: int) -> np.ndarray:
    return -(-v // a) * a


def place_suffix(
    problem: Problem,
    perm: np.ndarray,
    offsets: np.ndarray,
    first: int,
    fit: str = "first",
    cutoff: int | None = None,
) -> np.ndarray | None:
    """Greedy placement of ``perm`` from position ``first`` on, keeping the prefix's offsets.

    Parameters
    ----------
    problem : Problem
        Half-open lifetimes (steps), sizes and alignments (bytes).
    perm : int array, shape ``(n,)``
        The placement order; positions ``< first`` must be the same buffers, in the same order, as
        in the order that produced ``offsets``.
    offsets : int64 array, shape ``(n,)``
        Offsets (bytes) of that earlier placement; only the prefix's entries are read.
    first : int
        First changed position.
    fit : {"first", "best"}
        The fit rule (as :func:`planners.greedy.greedy_offsets`).
    cutoff : int or None
        Stop and return ``None`` as soon as a re-placed top exceeds ``cutoff`` bytes.

    Returns
    -------
    int64 array of shape ``(n,)`` (the same offsets :func:`planners.greedy.greedy_offsets` gives
    for ``perm``), or ``None`` when ``cutoff`` was exceeded.

    Notes
    -----
    ``O(L (n + d log d))`` for ``L = n - first`` re-placed buffers with ``d`` placed neighbours
    each: one numpy mask over all buffers per placed buffer, then a vectorised scan of its sorted
    neighbours (a running maximum of their tops gives every first-fit candidate at once).
    """
    n = problem.n
    starts, ends, sizes, aligns = problem.starts, problem.ends, problem.sizes, problem.alignments
    off = np.array(offsets, dtype=np.int64, copy=True)
    rank = np.empty(n, np.int64)
    rank[perm] = np.arange(n)
    placed = (rank < first) & (sizes > 0)
    suffix = perm[first:]
    off[suffix] = 0
    top = off + sizes
    sz = sizes.tolist()
    al = aligns.tolist()
    for i in suffix.tolist():
        s = sz[i]
        if s == 0:
            continue
        nb = np.flatnonzero(placed & (starts < ends[i]) & (ends > starts[i]))
        if nb.size == 0:
            x = 0
        else:
            a = al[i]
            o = off[nb]
            srt = np.argsort(o, kind="stable")
            o = o[srt]
            t = top[nb][srt]
            if fit == "first":
                cm = np.maximum.accumulate(t)
                cand = _align_up(np.concatenate(([0], cm)), a)
                ok = np.flatnonzero(cand[:-1] + s <= o)
                x = int(cand[ok[0]] if ok.size else cand[-1])
            else:
                prev = np.concatenate(([0], np.maximum.accumulate(t)[:-1]))  # highest top below
                xs = _align_up(prev, a)
                ok = np.flatnonzero((o > prev) & (xs + s <= o))
                if ok.size:
                    gap = (o - prev)[ok]
                    x = int(xs[ok[int(np.argmin(gap))]])
                else:
                    x = int(_align_up(np.asarray([t.max()]), a)[0])
        if cutoff is not None and x + s > cutoff:
            return None
        off[i] = x
        top[i] = x + s
        placed[i] = True
    return off


class LocalSearch(Planner):
    """Anytime hill climb over the greedy order (TVM USMP hill climb + iterated greedy restarts).

    Parameters
    ----------
    time_limit : float, default 5.0
        Wall-clock seconds for the whole call (start plans included).
    seed : int, default 0
        Seed of the move generator (``numpy.random.default_rng``).
    max_iters : int, "auto" or None, default "auto"
        Move budget; with it the result repeats exactly for a seed (see the module docstring).
        ``"auto"``: :data:`AUTO_PLACEMENTS_PER_SECOND` times ``time_limit`` divided by the
        buffers (``info["max_iters"]``); ``None``: no move count, so a search that neither
        stalls nor reaches the bound runs to the time limit and depends on the machine's load.
    moves : tuple of str, default ("move", "swap", "ruin")
        Neighbourhood moves (:data:`MOVES`), drawn uniformly.
    fit : {"auto", "first", "best"}, default "auto"
        Fit rule of the search; ``"auto"`` keeps the fit of the best start plan.
    start_orders : tuple of str, default :data:`planners.local_search.DEFAULT_START_ORDERS`
        (every name in :data:`planners.greedy.ORDERS`, ``"size"`` first)
        Orders tried for the start plan, each with both fits.
    temperature : float, default 0.0
        Annealing temperature as a fraction of the lower bound; 0 is a pure hill climb (accept
        when the arena does not grow).
    patience : int or None, default 300
        Moves without a new best arena before a restart from the best order; ``None`` never
        restarts.
    kick : int, default 3
        Random moves (a buffer moved to a random position) applied at a restart.
    tie_break : bool, default True
        Break arena ties by the overflow above the lower bound (lower is better); off, every
        equal-arena move is accepted.
    evaluator : {"auto", "engine", "incremental"}, default "auto"
        Re-evaluation of a changed order (see the module docstring).
    stall_limit : int, "auto" or None, default "auto"
        Stop after this many moves without a new best arena (``"auto"``: 25 per non-empty
        buffer, so a small problem stops in milliseconds); ``None`` runs to the time limit.
    start_share : float, default 1.0
        Share of ``time_limit`` after which no further start plan begins (one always runs); the
        default runs every start plan unless the time limit bites (:func:`anytime_start`).

    Returns (through :meth:`plan`)
    ------------------------------
    status ``optimal`` when the arena equals the max-live lower bound, else ``heuristic``;
    ``info``: ``trajectory`` (list of ``(seconds, arena)``), ``start`` (``"order/fit"`` of the
    start plan), ``start_arenas``, ``iterations``, ``accepted``, ``restarts``, ``stopped_by``
    (``"lower_bound"``, ``"max_iters"``, ``"stall_limit"``, ``"time_limit"`` or ``"range"``: the
    worst-case arena exceeds ``2**62`` bytes, so the start plan is returned without a search,
    keeping every sum of the search inside int64).

    Raises
    ------
    ParameterError
        (from :meth:`plan`) An unknown move, fit, evaluator or start order, a time limit that is
        not positive, ... (``_parameter_constraints``).

    Examples
    --------
    >>> from planners.examples import exercise_5_1_problem
    >>> LocalSearch(max_iters=50).plan(exercise_5_1_problem()).arena_size
    780
    """

    name = "local_search"
    family = "search"
    #: orders searched with the feature placement (:meth:`_solve_features`)
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native"}
    _parameter_constraints = {
        "time_limit": [POSITIVE_SECONDS],
        "seed": [SEED],
        "max_iters": [Interval(Integral, 0, None), StrOptions(("auto",)), None],
        "moves": [SequenceOf(StrOptions(MOVES))],
        "fit": [StrOptions(("auto", *FITS))],
        "start_orders": [START_ORDERS_RULE],
        "temperature": [Interval(Real, 0, None)],
        "patience": [Interval(Integral, 0, None), None],
        "kick": [Interval(Integral, 0, None)],
        "tie_break": ["boolean"],
        "evaluator": [StrOptions(EVALUATORS)],
        "stall_limit": [Interval(Integral, 0, None), StrOptions(("auto",)), None],
        "start_share": [SHARE],
    }

    def __init__(
        self,
        time_limit: float = 5.0,
        seed: int = 0,
        max_iters: int | str | None = "auto",
        moves: tuple[str, ...] = MOVES,
        fit: str = "auto",
        start_orders: tuple[str, ...] = DEFAULT_START_ORDERS,
        temperature: float = 0.0,
        patience: int | None = 300,
        kick: int = 3,
        tie_break: bool = True,
        evaluator: str = "auto",
        stall_limit: int | str | None = "auto",
        start_share: float = 1.0,
    ) -> None:
        self.time_limit = time_limit
        self.seed = seed
        self.max_iters = max_iters
        self.moves = moves
        self.fit = fit
        self.start_orders = start_orders
        self.temperature = temperature
        self.patience = patience
        self.kick = kick
        self.tie_break = tie_break
        self.evaluator = evaluator
        self.stall_limit = stall_limit
        self.start_share = start_share

    def _solve(self, problem: Problem) -> SolveResult:
        if problem.features:
            return self._solve_features(problem)
        st = anytime_start(problem, self.time_limit, self.start_orders, self.start_share)
        deadline, traj, lb = st.deadline, st.trajectory, st.lower_bound
        perm, off, arena = st.perm, st.offsets, st.arena
        fit = st.fit if self.fit == "auto" else self.fit
        if fit != st.fit:  # the search fit differs from the start plan's: re-place its order
            off = greedy_offsets(problem, perm, fit)
            arena = arena_of(problem, off)
        traj.add(arena)
        info = dict(st.info, fit=fit)
        best_perm, best_off, best_arena = perm.copy(), off, arena
        n = problem.n
        live = problem.sizes > 0
        if arena <= lb or int(live.sum()) < 2 or problem.worst_case_arena > 2**62:
            why = "lower_bound" if arena <= lb or int(live.sum()) < 2 else "range"
            info.update(trajectory=traj.points, iterations=0, stopped_by=why)
            return SolveResult(best_off, "optimal" if arena <= lb else "heuristic", lb, info)
        stall = 25 * int(live.sum()) if self.stall_limit == "auto" else self.stall_limit
        max_iters = info["max_iters"] = self._max_iters(n)
        since_best = 0
        engine = self.evaluator == "engine" or (
            self.evaluator == "auto" and resolve_engine("auto") == "c"
        )
        info["evaluator"] = "engine" if engine else "incremental"
        starts, ends, sizes = problem.starts, problem.ends, problem.sizes
        rng = np.random.default_rng(self.seed)
        rank = np.empty(n, np.int64)
        rank[perm] = np.arange(n)

        def overflow(o):
            return float(overflow_bytes(o, sizes, lb)) if self.tie_break else 0.0

        cur_perm, cur_off, cur_arena, cur_over = perm, off, arena, overflow(off)
        it = accepted = restarts = stale = 0
        last_eval = 0.0  # seconds of the last re-placement: none starts that would overrun
        stopped = "time_limit"
        while True:
            if max_iters is not None and it >= max_iters:
                stopped = "max_iters"
                break
            if time.perf_counter() + last_eval >= deadline:  # the next one would overrun
                break
            if stall is not None and since_best >= stall:
                stopped = "stall_limit"
                break
            it += 1
            since_best += 1
            if self.patience is not None and stale >= self.patience:
                cur_perm, first = _kick(best_perm, self.kick, rng)
                cur_off = self._evaluate(problem, cur_perm, best_off, first, fit, engine, None)
                cur_arena, cur_over = arena_of(problem, cur_off), overflow(cur_off)
                rank[cur_perm] = np.arange(n)
                restarts += 1
                stale = 0
                continue
            stale += 1
            top = cur_off + sizes
            crit = np.flatnonzero(live & (top == cur_arena))
            c = int(crit[rng.integers(crit.size)])
            nbr = live & (starts < ends[c]) & (ends > starts[c])
            nbr[c] = False
            below = np.flatnonzero(nbr & (rank < rank[c]))
            if below.size == 0:  # placed at 0 with nothing before it: only a kick helps
                stale = self.patience or stale
                continue
            move = self.moves[int(rng.integers(len(self.moves)))]
            j = int(below[rng.integers(below.size)])
            if move == "move":
                new_perm, first = _move_before(cur_perm, rank, c, j)
            elif move == "ruin":
                new_perm, first = _ruin(cur_perm, rank, cur_off + sizes, nbr, c, cur_arena, lb, rng)
            else:
                nb2 = live & (starts < ends[j]) & (ends > starts[j]) & (rank < rank[j])
                nb2[j] = False
                second = np.flatnonzero(nb2)
                pool = second if second.size and rng.random() < 0.75 else below
                k = int(pool[rng.integers(pool.size)])
                if k == j:
                    continue
                new_perm = cur_perm.copy()
                new_perm[rank[j]], new_perm[rank[k]] = k, j
                first = int(min(rank[j], rank[k]))
            temp = self.temperature
            if temp and isinstance(self.max_iters, Integral) and self.max_iters:
                temp *= 1.0 - it / self.max_iters  # an explicit budget: annealing schedule
            cutoff = None if temp > 0 else int(cur_arena)
            t_eval = time.perf_counter()
            new_off = self._evaluate(problem, new_perm, cur_off, first, fit, engine, cutoff)
            last_eval = time.perf_counter() - t_eval
            if new_off is None:
                continue
            new_arena = arena_of(problem, new_off)
            if new_arena > cur_arena:
                if temp <= 0 or rng.random() >= math.exp(-(new_arena - cur_arena) / (temp * lb)):
                    continue
                new_over = overflow(new_off)
            else:
                new_over = overflow(new_off)
                if new_arena == cur_arena and new_over > cur_over:
                    continue
            cur_perm, cur_off, cur_arena, cur_over = new_perm, new_off, new_arena, new_over
            rank[cur_perm] = np.arange(n)
            accepted += 1
            if cur_arena < best_arena:
                best_perm, best_off, best_arena = cur_perm.copy(), cur_off, cur_arena
                traj.add(best_arena)
                stale = since_best = 0
                if best_arena <= lb:
                    stopped = "lower_bound"
                    break
        if st.info["start_cut"] and stopped != "lower_bound":
            stopped = "time_limit"  # the clock left start plans out
        info.update(
            trajectory=traj.points,
            iterations=it,
            accepted=accepted,
            restarts=restarts,
            stopped_by=stopped,
        )
        return SolveResult(best_off, "optimal" if best_arena <= lb else "heuristic", lb, info)

    def _solve_features(self, problem: Problem) -> SolveResult:
        """The hill climb over orders for a problem with pins, hints, gaps or pools: each order is
        placed by :func:`planners.placement.place_features` (pins pre-placed, hints first, gaps
        as pieces, pools by the spill policy) and scored by ``(bytes above the capacities,
        traffic cost of :mod:`planners.feature_cpsat`, total arena)``, lower is better; the
        start is the best of ``start_orders`` with both fits; moves ``move``/``swap`` (``ruin``
        acts as ``move`` here), seeded; it stops at the lower bound, ``max_iters``,
        ``stall_limit`` or ``time_limit``. Two colliding pins are a proof of infeasibility."""
        t0 = time.perf_counter()
        deadline = t0 + float(self.time_limit)
        lb = lower_bound(problem)
        n = problem.n
        caps = [q.capacity for q in problem.pools] or [problem.capacity]

        def score(perm: np.ndarray, fit: str):
            fp = place_features(problem, perm, fit)
            tops = problem.sizes + fp.offsets
            arenas = [int(tops[(fp.pools == k) & (problem.sizes > 0)].max(initial=0))
                      for k in range(len(caps))]
            over = sum(max(0, a - c) for a, c in zip(arenas, caps, strict=True) if c is not None)
            cost = traffic_cost(problem, fp.pools) if problem.pools else 0
            return (over, cost, sum(arenas)), fp

        best = None
        for name in self.start_orders:
            for fit in FITS:
                perm = np.asarray(ORDERS[name](problem), np.int64)
                sc, fp = score(perm, fit)
                if fp.conflict is not None:
                    if fp.proof is None:
                        return SolveResult(None, "timeout", info={
                            "stopped_by": "pin search limit", "engine": "features"})
                    return SolveResult(None, "infeasible", info={
                        "proof": fp.proof, "engine": "features"})
                if best is None or sc < best[0]:
                    best = (sc, perm, fit, fp)
        sc, perm, fit, fp = best
        max_iters = self._max_iters(n)
        rng = np.random.default_rng(self.seed)
        stall = (25 * max(1, int((problem.sizes > 0).sum()))
                 if self.stall_limit == "auto" else self.stall_limit)
        it = since = 0
        stopped = "lower_bound"
        while sc[0] == 0 and sc[2] > lb or sc[0] > 0:
            if time.perf_counter() > deadline:
                stopped = "time_limit"
                break
            if max_iters is not None and it >= max_iters:
                stopped = "max_iters"
                break
            if stall is not None and since >= stall:
                stopped = "stall_limit"
                break
            it += 1
            cand = perm.copy()
            i, j = (int(v) for v in rng.integers(0, n, 2)) if n > 1 else (0, 0)
            if rng.random() < 0.5:
                cand[i], cand[j] = cand[j], cand[i]
            else:
                cand = np.insert(np.delete(cand, i), j, cand[i])
            csc, cfp = score(cand, fit)
            if csc < sc:
                since = 0
            else:
                since += 1
            if csc <= sc:
                sc, perm, fp = csc, cand, cfp
        info = {"engine": "features", "fit": fit, "iterations": it, "stopped_by": stopped,
                "score": list(sc)}
        return SolveResult(fp.offsets, "heuristic", info=info,
                           pools=fp.pools if problem.pools else None)

    def _max_iters(self, n: int) -> int | None:
        """The move budget for ``n`` buffers: ``max_iters``, or for ``"auto"``
        :data:`AUTO_PLACEMENTS_PER_SECOND` times ``time_limit`` over ``n`` (at least 1)."""
        if self.max_iters == "auto":
            return max(1, int(AUTO_PLACEMENTS_PER_SECOND * float(self.time_limit) / max(1, n)))
        return self.max_iters

    @staticmethod
    def _evaluate(problem, perm, prev_off, first, fit, engine, cutoff):
        if engine:
            off = greedy_offsets(problem, perm, fit)
            if cutoff is not None and arena_of(problem, off) > cutoff:
                return None
            return off
        return place_suffix(problem, perm, prev_off, first, fit, cutoff)


def _move_before(perm: np.ndarray, rank: np.ndarray, c: int, j: int):
    """``perm`` with buffer ``c`` moved to just before buffer ``j`` (``rank[j] < rank[c]``);
    returns the new order and its first changed position."""
    rc, rj = int(rank[c]), int(rank[j])
    new = perm.copy()
    new[rj + 1 : rc + 1] = perm[rj:rc]
    new[rj] = c
    return new, rj


def _ruin(perm, rank, top, nbr, c, arena, lb, rng) -> tuple[np.ndarray, int]:
    """Ruin and recreate (Schrimpf et al. 2000) on the order: the critical buffer ``c`` and its
    neighbours (mask ``nbr``) whose tops lie in a random band below the arena (a fraction
    ``U(0, 0.2)`` of the lower bound, bytes) leave the order and are put back, in random order,
    at random positions before the first of them, so they are placed before the buffers that
    pushed them up. Returns the new order and its first changed position."""
    band = arena - int(rng.random() * 0.2 * lb)
    ruined = np.flatnonzero(nbr & (top > band))
    ruined = np.concatenate(([c], ruined[ruined != c]))
    lo = int(rank[ruined].min())
    keep = np.ones(len(perm), bool)
    keep[rank[ruined]] = False
    rest = perm[keep]
    spots = np.sort(rng.integers(0, lo + 1, ruined.size))
    new = np.insert(rest, spots, rng.permutation(ruined))
    return new, int(spots[0])


def _kick(perm: np.ndarray, k: int, rng) -> tuple[np.ndarray, int]:
    """``perm`` with ``k`` random buffers each moved to a random position; returns the order and
    its first changed position."""
    new = perm.copy()
    n = len(new)
    first = n
    for _ in range(k):
        a, b = int(rng.integers(n)), int(rng.integers(n))
        x = new[a]
        new = np.insert(np.delete(new, a), b, x)
        first = min(first, a, b)
    return new, first
