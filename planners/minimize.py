"""``minimize``: turn any fixed-capacity decision planner into an anytime arena minimiser.

The optimal arena lies between a proved lower bound and the best arena found so far (the
incumbent). :class:`Minimize` runs the registered cheap heuristics
(:func:`planners.warmstart.best_heuristic`) and, when registered, the anytime planners of
``anytime_planners`` (``local_search``, ``telamalloc``; skipped when not registered) for the first
incumbent, so the result is never worse than any of them; the floor is
:func:`planners.lower_bounds.best_lower_bound` (max live bytes, window relaxations). Then it probes
capacities with a decision planner (by default :class:`planners.exact_search.ExactSearch`; its own
heuristic shortcut is switched off in the probes, as those heuristics already ran).

Strategy ``"descend"`` (default, anytime): probe just below the incumbent, so that every probe
that succeeds improves the plan at once. The step below the incumbent doubles after a success
(up to a quarter of the gap to the proved bound) and is halved after a timeout; after a proof of infeasibility the next probe bisects the
remaining gap. Each probe's time budget adapts to the last probes: a success that took ``s``
seconds gives the next probe ``max(base, 4 s)``; a timeout at the smallest step doubles the
budget (the next capacity is worth a longer look); never more than the time left. The search's
difficulty is not monotone in the capacity (MiniMalloc's section inference prunes more at a tight
capacity: on C the floor is proved feasible in milliseconds while capacities 7% above it time
out), so the descent starts with one probe at the floor (``probe_lower_bound_first``) and every
timed-out descent probe is followed by a *dive* to the middle of the gap; floor and dive probes
get the base budget only. Probes cycle through a *portfolio* of solver settings (for
``exact_search``: its default rankings, then a seeded random restart ranking ``"WR"`` whose seed
is the probe's index), because the time a complete search needs at one capacity is heavy-tailed
and depends on the order far more than on the capacity; a capacity that timed out is thus
retried with another order.
Strategy ``"bisect"`` (ablation, the earlier behaviour): binary search between the floor and the
incumbent, optionally probing the floor first. In both:

* a probe that finds a layout at capacity ``c`` lowers the best arena to that layout's arena
  (which may be below ``c``), and the search continues below it;
* a probe that proves ``c`` infeasible raises the proved bound to ``c + 1`` (to the next
  multiple of :func:`arena_quantum`, the gcd of sizes and alignments, which every pushed-down
  arena is a multiple of; probes are made at such multiples only);
* a probe that times out proves nothing; the bisection then continues above ``c`` (looking for
  better layouts) while the proved bound stays where it was.

The result is optimal when the best arena equals the proved bound. Every improvement of the arena
and of the proved bound is recorded with its time (``info["trajectory"]``,
``info["bound_trajectory"]``). Capacities are bytes; buffers keep their half-open
``[start, end)`` lifetimes (schedule steps) from the problem.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .base import Planner, SolveResult
from .bounds import arena_quantum, lower_bound
from .catalogue import get_planner, planner_classes, planner_names
from .errors import MemplanError, ParameterError
from .feature_cpsat import solve_features
from .model import Plan, Problem
from .params import (
    OPTIONAL_POSITIVE_SECONDS,
    POSITIVE_SECONDS,
    SHARE,
    InstanceOf,
    Satisfies,
    SequenceOf,
    StrOptions,
)
from .warmstart import HEURISTIC_SHARE, HEURISTICS, best_heuristic

__all__ = ["Minimize", "UPPER_BOUND_HEURISTICS", "ANYTIME_PLANNERS", "STRATEGIES", "arena_quantum"]

#: Heuristics run (when registered) for the starting upper bound: the exact planners' warm-start
#: list :data:`planners.warmstart.HEURISTICS` (greedy family, colouring, ``naive`` as fallback).
UPPER_BOUND_HEURISTICS = HEURISTICS

#: Anytime planners run (when registered) for the first incumbent, each with a share of the time.
ANYTIME_PLANNERS = ("telamalloc", "local_search")

#: Probe orders of :class:`Minimize` (module docstring).
STRATEGIES = ("descend", "bisect")


def _registered_planners() -> list[str]:
    """Names in :data:`planners.registry.PLANNERS`, read at check time (the registry imports this
    module)."""
    return planner_names()


class Minimize(Planner):
    """Minimise the arena with a decision planner, anytime from the incumbent downward.

    Parameters
    ----------
    solver : str or Planner
        A registered decision planner honouring ``problem.capacity`` and reporting status
        ``"optimal"`` (fits), ``"infeasible"`` (proved not to fit) or ``"timeout"``.
    solver_params : dict or None
        Keyword parameters of the solver (its ``time_limit`` is capped by the time left).
    time_limit : float
        Total seconds for the whole call (heuristics, anytime planners, bounds and probes).
    probe_time_limit : float or None
        Base seconds per probe. ``None``: ``max(0.5, time_limit / 30)`` for ``"descend"``
        (adapted as described in the module docstring), ``time_limit / 4`` for ``"bisect"``.
    heuristics : tuple of str
        Registered planners tried for the initial upper bound (unregistered names are skipped).
    strategy : {"descend", "bisect"}
        Probe order (module docstring).
    probe_lower_bound_first : bool
        Probe the floor itself first (both strategies).
    heuristic_incumbent : bool
        Start from the best heuristic plan (incumbent and upper bound) and switch the solver's
        own heuristic shortcut off in the probes (``heuristic_first=False`` when the solver has
        that parameter), since every probe capacity is below the heuristics' best arena. With
        ``False`` (ablation) only ``naive`` gives the starting upper bound and the solver runs
        with its own defaults.
    anytime_planners : tuple of str
        Registered anytime planners run after the heuristics for a better first incumbent
        (unregistered names are skipped; a planner that raises a toolkit error is recorded in
        ``info["anytime"]`` and skipped). ``()`` switches this off.
    anytime_share : float, default 0.5
        Share of ``time_limit`` given to the anytime planners together (split equally). Half:
        on MiniMalloc's D with 600 s, ``telamalloc`` alone reaches 1,015,808 B within 120 s,
        while the probes of ``exact_search`` from a 30 s incumbent (share 0.05) ended at
        1,024,000 B; with share 0.5 ``minimize`` ends at 1,014,784 B.
    strong_bound : bool
        Raise the floor with :func:`planners.lower_bounds.best_lower_bound` (window
        relaxations) before probing; off: max live bytes only.
    bound_share : float
        Share of ``time_limit`` given to the stronger lower bound.
    share_memo : bool
        When the solver is ``exact_search``, keep one floor-profile memo
        (:class:`planners.exact_search.SearchMemo`) across all probes of the call, so a probe
        reuses every failure an earlier probe proved at a capacity at least its own (a timed-out
        probe repeated with a longer budget resumes instead of redoing its work).
    portfolio : tuple of dict or None
        Solver parameter variants cycled over the probes (probe ``k`` uses variant
        ``k mod len``, on top of ``solver_params``); a variant may say ``"seed": "probe"`` to
        take the probe's index as its ``seed``. ``None`` (default): for ``exact_search``,
        alternate its default rankings with the seeded random-restart ranking ``"WR"`` (width,
        ties at random; :data:`planners.exact_search.PREORDER_KEYS`), since search times at
        one capacity are heavy-tailed and differ by order of magnitude between orders
        (measured on MiniMalloc's D at 1,024,000 bytes: the default rankings 15.6 s, ``"WR"``
        0.5-4.9 s for 4 of 5 seeds, on a loaded machine); for other solvers ``({},)``.
        ``({},)`` switches this off.

    Returns (via :meth:`plan`)
    --------------------------
    The best plan found, status ``"optimal"`` (best arena equals the proved bound) or
    ``"feasible"``, ``best_bound`` = the proved bound (the largest capacity proved infeasible
    + 1, or the stronger lower bound, rounded up to the arena quantum). ``info``: ``probes``
    (``{"capacity", "status", "arena", "seconds", "budget", "nodes", "memo_hits", "variant"}``
    in probe order, ``variant`` the portfolio index; ``"kind"``: ``floor``, ``descend`` or
    ``dive`` for ``"descend"``),
    ``trajectory`` (``[seconds, arena]`` at every improvement, from the start of the call),
    ``bound_trajectory`` (``[seconds, proved bound]``), ``upper_bound`` and ``heuristic`` (the best
    heuristic's arena and name), ``anytime`` (arena per anytime planner), ``lower_bound``
    (which bound gave the floor), ``bounds`` (bytes, every bound of
    :func:`planners.lower_bounds.best_lower_bound` computed, by name), ``bound_source`` (which
    gave ``best_bound``: that, or ``"probe"`` when a probe proved a capacity infeasible),
    ``strategy``.

    Raises
    ------
    ParameterError
        (from :meth:`plan`) ``time_limit`` not positive, unknown strategy, the solver is not a
        known planner, ... (``_parameter_constraints``); an unknown key in ``solver_params``.

    Notes
    -----
    ``"bisect"`` makes ``O(log2(U - L))`` probes for incumbent ``U`` and floor ``L``; ``"descend"``
    makes as many as the time allows. The problem's own capacity is ignored (the problem is
    re-posed with each probe capacity via :meth:`Problem.with_capacity`). Deterministic when no
    probe or anytime planner is stopped by the clock.

    References
    ----------
    M. D. Moffitt, "MiniMalloc", ASPLOS 2023 (the decision solver and the A-F benchmarks).

    Examples
    --------
    >>> from planners import Problem
    >>> p = Problem.from_arrays([0, 0, 1], [1, 2, 2], [4, 2, 4])
    >>> plan = Minimize(time_limit=5).plan(p)
    >>> plan.arena_size, plan.status
    (6, 'optimal')
    """

    #: minimised by the CP-SAT feature model (:mod:`planners.feature_cpsat`)
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native"}
    name = "minimize"
    family = "exact"
    _parameter_constraints = {
        "solver": [
            StrOptions(_registered_planners),
            InstanceOf(Planner),
            Satisfies(lambda c: isinstance(c, type) and issubclass(c, Planner),
                      "a Planner subclass"),
        ],
        "solver_params": [dict, None],
        "time_limit": [POSITIVE_SECONDS],
        "probe_time_limit": OPTIONAL_POSITIVE_SECONDS,
        "heuristics": [SequenceOf(str, min_len=0)],  # unregistered names are skipped
        "strategy": [StrOptions(STRATEGIES)],
        "probe_lower_bound_first": ["boolean"],
        "heuristic_incumbent": ["boolean"],
        "anytime_planners": [SequenceOf(str, min_len=0)],  # () switches them off
        "anytime_share": [SHARE],
        "strong_bound": ["boolean"],
        "bound_share": [SHARE],
        "share_memo": ["boolean"],
        "portfolio": [SequenceOf(dict), None],
    }

    def __init__(
        self,
        solver: str | Planner = "exact_search",
        solver_params: dict[str, Any] | None = None,
        time_limit: float = 60.0,
        probe_time_limit: float | None = None,
        heuristics: tuple[str, ...] = UPPER_BOUND_HEURISTICS,
        strategy: str = "descend",
        probe_lower_bound_first: bool = True,
        heuristic_incumbent: bool = True,
        anytime_planners: tuple[str, ...] = ANYTIME_PLANNERS,
        anytime_share: float = 0.5,
        strong_bound: bool = True,
        bound_share: float = 0.05,
        share_memo: bool = True,
        portfolio: tuple[dict[str, Any], ...] | None = None,
    ) -> None:
        self.solver = solver
        self.solver_params = solver_params
        self.time_limit = time_limit
        self.probe_time_limit = probe_time_limit
        self.heuristics = heuristics
        self.strategy = strategy
        self.probe_lower_bound_first = probe_lower_bound_first
        self.heuristic_incumbent = heuristic_incumbent
        self.anytime_planners = anytime_planners
        self.anytime_share = anytime_share
        self.strong_bound = strong_bound
        self.bound_share = bound_share
        self.share_memo = share_memo
        self.portfolio = portfolio

    def _upper_bound(self, problem: Problem, deadline: float) -> tuple[np.ndarray, int, str]:
        """The incumbent: offsets, arena (bytes) and name of the best heuristic run."""
        names = tuple(self.heuristics) if self.heuristic_incumbent else ("naive",)
        offsets, arena, info = best_heuristic(problem, names, deadline=deadline)
        return offsets, arena, info["warm_start"]

    def _portfolio(self) -> tuple[dict[str, Any], ...]:
        """The solver parameter variants cycled over the probes (see ``portfolio``)."""
        if self.portfolio is not None:
            return tuple(self.portfolio)
        from .exact_search import ExactSearch

        s = self.solver
        if s == "exact_search" or s is ExactSearch or isinstance(s, ExactSearch):
            return ({}, {"preorderings": ("WR",), "seed": "probe"})
        return ({},)

    def _probe(
        self, problem: Problem, capacity: int, seconds: float, memo=None, variant=None, index=0
    ) -> Plan:
        params = dict(self.solver_params or {})
        for k, v in (variant or {}).items():
            params[k] = index if (k == "seed" and v == "probe") else v
        limit = params.get("time_limit")
        params["time_limit"] = max(1e-3, min(seconds, limit) if limit else seconds)
        cls = planner_classes().get(self.solver) if isinstance(self.solver, str) else self.solver
        names = getattr(cls, "_param_names", lambda: [])()
        if self.heuristic_incumbent and "heuristic_first" not in params:
            if "heuristic_first" in names:
                params["heuristic_first"] = False
        if memo is not None and "memo" in names and "memo" not in params:
            params["memo"] = memo
        try:
            solver = get_planner(self.solver, **params)
        except ValueError as e:  # an unknown parameter in solver_params
            raise ParameterError(f"minimize: solver {self.solver!r}: {e}") from None
        return solver.plan(problem.with_capacity(capacity))

    def _solve(self, problem: Problem) -> SolveResult:
        if problem.features:  # pins, hints, gaps, pools: the CP-SAT feature model minimises
            return solve_features(problem, problem.capacity, "minimize", self.time_limit)
        t0 = time.perf_counter()
        limit = float(self.time_limit)
        variants = self._portfolio()
        memo = None
        if self.share_memo:
            from .exact_search import ExactSearch, SearchMemo

            cls = self.solver if not isinstance(self.solver, str) else None
            if self.solver == "exact_search" or isinstance(cls, ExactSearch) or cls is ExactSearch:
                mb = (self.solver_params or {}).get("memo_megabytes", 256.0)
                memo = SearchMemo(mb)

        def now() -> float:
            return round(time.perf_counter() - t0, 4)

        lb = lower_bound(problem)
        best_offsets, best_arena, heuristic = self._upper_bound(
            problem, t0 + HEURISTIC_SHARE * limit
        )
        upper_bound, first_heuristic = best_arena, heuristic
        trajectory = [[now(), int(best_arena)]]
        g = arena_quantum(problem)
        proved = -(-lb // g) * g  # every arena is >= proved
        bound_trajectory = [[now(), int(proved)]]
        source = "max_live"
        floor_proved = False
        anytime: dict[str, Any] = {}
        bounds: dict[str, int] = {"max_live": int(lb)}
        probes: list[dict[str, Any]] = []

        def probe(cap: int, budget: float) -> Plan:
            k = len(probes)
            v = k % len(variants)
            p = self._probe(problem, cap, budget, memo, variants[v], k)
            probes.append(
                {
                    "capacity": cap,
                    "status": p.status,
                    "arena": p.arena_size if p.status in ("optimal", "feasible") else None,
                    "seconds": round(p.seconds, 4),
                    "budget": round(budget, 4),
                    "nodes": p.info.get("nodes"),
                    "memo_hits": p.info.get("memo_hits"),
                    "variant": v,
                }
            )
            return p

        def fits(p: Plan, cap: int) -> bool:
            return p.status in ("optimal", "feasible", "heuristic") and p.arena_size <= cap

        # One short probe at the floor first: a tight capacity is often the easiest one.
        first = self.probe_lower_bound_first
        if self.strategy == "descend":
            base = self.probe_time_limit or max(0.5, limit / 30)
        else:
            base = self.probe_time_limit or limit / 4
        if first and best_arena > proved:
            first = False
            left = limit - (time.perf_counter() - t0)
            if left > 1e-3:
                p = probe(proved, min(base, left))
                probes[-1]["kind"] = "floor"
                if fits(p, proved):
                    best_arena, best_offsets = p.arena_size, np.asarray(p.offsets, np.int64)
                    heuristic = None
                    trajectory.append([now(), int(best_arena)])
                elif p.status == "infeasible":
                    proved += g
                    bound_trajectory.append([now(), int(proved)])
                    floor_proved = True
        # Anytime planners (registered ones only) for a better first incumbent.
        if self.heuristic_incumbent and self.anytime_planners and best_arena > proved:
            PLANNERS = planner_classes()
            names = [a for a in self.anytime_planners if a in PLANNERS]
            share = max(0.0, float(self.anytime_share)) * limit
            for name in names:
                left = min(share / len(names), limit - (time.perf_counter() - t0))
                if left <= 0.05 or best_arena <= proved:
                    break
                try:
                    p = PLANNERS[name](time_limit=left).plan(problem.with_capacity(None))
                except (MemplanError, TypeError, ValueError) as e:
                    anytime[name] = f"error: {e}"
                    continue
                anytime[name] = p.arena_size if p.offsets is not None else p.status
                if p.status not in ("timeout", "skipped") and p.arena_size < best_arena:
                    best_arena, best_offsets, heuristic = p.arena_size, np.asarray(p.offsets), name
                    trajectory.append([now(), int(best_arena)])
        # A stronger proved floor.
        if self.strong_bound and best_arena > proved:
            from .lower_bounds import best_lower_bound

            budget = min(max(0.0, float(self.bound_share)) * limit,
                         limit - (time.perf_counter() - t0))
            if budget > 0.05:
                b = best_lower_bound(problem, time_limit=budget, ceiling=best_arena)
                bounds.update(b.values)
                if b.value > proved:
                    proved, source = min(b.value, best_arena), b.source
                    bound_trajectory.append([now(), int(proved)])
                    floor_proved = False
        bound_source = "probe" if floor_proved else source
        if self.strategy == "bisect":
            per_probe = base
            lo, hi = proved, (best_arena - 1) // g * g  # capacities still worth probing
            while lo <= hi and best_arena > proved:
                left = limit - (time.perf_counter() - t0)
                if left <= 1e-3:
                    break
                cap = lo if first else (lo + hi) // 2 // g * g
                first = False
                p = probe(cap, min(per_probe, left))
                if fits(p, cap):
                    if p.arena_size < best_arena:
                        best_arena, best_offsets = p.arena_size, np.asarray(p.offsets, np.int64)
                        heuristic = None
                        trajectory.append([now(), int(best_arena)])
                    hi = (min(cap, best_arena) - 1) // g * g
                elif p.status == "infeasible":
                    proved = max(proved, cap + g)
                    bound_trajectory.append([now(), int(proved)])
                    bound_source = "probe"
                    lo = cap + g
                else:  # timeout: nothing proved; look for better layouts above cap
                    lo = cap + g
        else:
            budget, step = base, g
            kind = "descend"
            while best_arena > proved:
                left = limit - (time.perf_counter() - t0)
                if left <= 1e-3:
                    break
                if kind == "dive":
                    cap = max(proved, (proved + best_arena) // 2 // g * g)
                else:
                    cap = max(proved, (best_arena - step) // g * g)
                # dive probes are long shots: they get the base budget only
                p = probe(cap, min(budget if kind == "descend" else base, left))
                probes[-1]["kind"] = kind
                if fits(p, cap):
                    if p.arena_size < best_arena:
                        best_arena, best_offsets = p.arena_size, np.asarray(p.offsets, np.int64)
                        heuristic = None
                        trajectory.append([now(), int(best_arena)])
                    if kind == "descend":
                        # bolder after a success, but never below a quarter of the gap left
                        step = max(g, min(2 * step, (best_arena - proved) // 4 // g * g))
                    budget = max(base, 4 * p.seconds)
                    kind = "descend"
                elif p.status == "infeasible":
                    proved = max(proved, cap + g)
                    bound_trajectory.append([now(), int(proved)])
                    bound_source = "probe"
                    step = max(g, (best_arena - proved) // 2 // g * g)
                    kind = "descend"
                elif kind == "descend":
                    # timeout: nothing proved. Come closer to the incumbent, or look longer; the
                    # solver's difficulty is not monotone in the capacity (a tight capacity
                    # prunes more), so the next probe dives to the middle of the gap.
                    if step > g:
                        step = max(g, step // 2 // g * g)
                    else:
                        budget = 2 * budget
                    kind = "dive"
                else:  # a dive probe timed out: back to the descent
                    kind = "descend"
        status = "optimal" if best_arena <= proved else "feasible"
        info = {
            "strategy": self.strategy,
            "probes": probes,
            "trajectory": trajectory,
            "bound_trajectory": bound_trajectory,
            "upper_bound": upper_bound,
            "heuristic": first_heuristic,
            "anytime": anytime,
            "improved_by_solver": heuristic is None,
            "best_arena": best_arena,
            "proved_bound": proved,
            "lower_bound": source,
            "bound_source": bound_source,
            "quantum": g,
            "bounds": bounds,
        }
        return SolveResult(best_offsets, status, best_bound=proved, info=info)
