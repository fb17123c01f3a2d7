"""One CP-SAT model of the compilers' problem: pins, hints, gaps and pool assignment.

Used by :class:`planners.cpsat.CPSat`, :class:`planners.exact_search.ExactSearch` and
:class:`planners.minimize.Minimize` for a problem with compiler features (their compiled and
plain-interval models know none of them), so each of them handles them exactly and proves
infeasibility where pins (or pool capacities) make a capacity impossible.

Model (OR-Tools CP-SAT, ``NoOverlap2D``):

* an offset ``x_i`` per buffer; in each pool ``k`` it may go to, ``x_i = lcm(a_i, A_k) k_ik``
  (``a_i``: its alignment, ``A_k``: the pool's), enforced only when the buffer is in pool ``k``,
  so mixed pool alignments are modelled exactly; a pinned buffer has ``x_i`` fixed and may go
  to any candidate pool that holds it (:func:`planners.placement.pin_pools`: alignment divides
  the pin, capacity holds ``pin + size``); a hint is a solver hint (``AddHint``);
* each piece ``[t0, t1) x [lo, hi)`` of a buffer (:meth:`planners.model.Problem.pieces`: gaps
  take nothing or their window) is a rectangle at ``x_i + lo``; per pool one ``NoOverlap2D``
  over the pieces present in it;
* pools: a Boolean ``p_ik`` per candidate pool (exactly one true), optional intervals present
  iff ``p_ik``, ``x_i + top_i <= H_k <= capacity_k``;
* objective: without pools the arena ``H`` (``mode="minimize"``) or nothing (``"decide"``: any
  plan with ``H <= capacity``); with pools ``W * sum_i accesses_i size_i cost(pool_i) + sum_k
  H_k`` with ``W = sum_k UB_k + 1``, i.e. the traffic cost first (bytes placed in slow pools
  weighted by their accesses, :mod:`planners.tiers`'s traffic model; ``accesses_i`` = the
  lifetime in steps, one access per step; ``cost`` = :attr:`planners.model.Problem.pool_costs`,
  the pools' ranks in the preference order when no costs are given) and then the total arena.
  ``accesses_i size_i`` is :attr:`planners.model.Problem.traffic_weights`: for the merged
  buffer of a colocation group the sum over its members, each with its own lifetime and size
  (the traffic of the problem as given, not of the merged buffer's hull).

Infeasibility is proved before the model when pins collide in every choice of their pools
(:func:`planners.placement.assign_pins`) or a buffer fits none of its pools (``info["proof"]``,
one line), else by CP-SAT.

Statuses: ``optimal`` (proved), ``feasible``, ``infeasible`` (proved: no plan within the
capacities, ``best_bound = capacity + 1`` for one arena) or ``timeout``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .bounds import lower_bound
from .model import Problem, SolveResult
from .placement import assign_pins, pin_pools, place_features
from .time_limits import Deadline, import_within

__all__ = ["solve_features", "traffic_cost"]


def traffic_cost(problem: Problem, pools: np.ndarray) -> int:
    """``sum_i weight_i x cost(pool_i)`` with ``weight_i`` = accesses x size = lifetime in steps
    x bytes (:attr:`planners.model.Problem.traffic_weights`: for the merged buffer of a
    colocation group, the sum over its members), costs :attr:`planners.model.Problem.pool_costs`
    (each pool's rank in the preference order when no pool has a cost): the cost the pool
    assignment minimises, exact (Python integers). ``pools``: the pool index per buffer. The
    independent count of a plan's traffic is :func:`planners.validate.plan_traffic`."""
    if not problem.pools:
        return 0
    cost = problem.pool_costs
    return sum(w * cost[k] for w, k in zip(problem.traffic_weights.tolist(),
                                            np.asarray(pools).tolist(), strict=True))


def solve_features(problem: Problem, capacity: int | None, mode: str, time_limit: float,
                   workers: int = 2, seed: int = 0, accesses=None, hint=None):
    """Solve ``problem`` (with compiler features) with the model of the module docstring.

    ``capacity``: bytes of the single arena (``None``: unbounded) -- ignored with pools, whose
    own capacities apply; ``mode``: ``"minimize"`` or ``"decide"``; ``accesses``: accesses per
    buffer for the traffic cost (default: the lifetime in steps); ``hint``: a
    :class:`planners.placement.FeaturePlacement` to start from (default: the greedy spill).
    Returns a :class:`planners.base.SolveResult` (``pools`` set for a problem with pools).
    When the traffic weights times the arenas could leave int64, the total arena is dropped
    from the objective (``info["objective"]`` says which terms were minimised).

    ``time_limit``: wall-clock seconds for the whole call (:class:`planners.time_limits.
    Deadline`): OR-Tools' import (:func:`planners.time_limits.import_within`), the pin proof, the
    greedy spill start and the model building are counted, CP-SAT gets what is left (``info["solver_time_limit"]``; ``info["setup_seconds"]``,
    ``info["time_limit"]``), and with less than :data:`planners.time_limits.MIN_SOLVER_SECONDS`
    left it is not started (status ``timeout``, ``info["stopped_by"]``).
    """
    clock = Deadline(time_limit)
    n = problem.n
    info: dict[str, Any] = {"engine": "cpsat-features", "mode": mode}
    # within the time left: a cold import of OR-Tools took 0.3-2.7 s on a loaded machine
    cp_model = import_within("ortools.sat.python.cp_model", clock.left())
    if cp_model is None:
        info["stopped_by"] = "time_limit"
        info["reason"] = "OR-Tools was still being imported when the time limit passed"
        return SolveResult(None, "timeout", info=clock.record(info))
    bb_inf = None if capacity is None or problem.pools else int(capacity) + 1
    _, _, proof = assign_pins(problem)
    if proof is not None:  # pins that collide in every choice of pools, or fit none
        info["proof"] = proof
        return SolveResult(None, "infeasible", best_bound=bb_inf, info=info)
    own, st, en, lo, hi = problem.pieces()
    # a buffer's top is offset + size, as Plan.arena_size and check_plan count it, also where its
    # pieces stay lower (a gap window over its whole lifetime): one arena measure everywhere
    tops = problem.sizes.astype(np.int64).copy()
    npools = max(1, len(problem.pools))
    caps = [q.capacity for q in problem.pools] or [capacity]
    # a valid plan from the greedy spill gives every unbounded pool an upper bound
    warm = hint if hint is not None else place_features(
        problem, np.lexsort((np.arange(n), -problem.sizes)), "first")
    # A stack of every buffer, each at the next offset its alignment and the pool's allow, ends
    # at most sum(size + a - 1) with a = lcm(buffer alignment, pool alignment): an upper bound of
    # an unbounded pool's arena (the pool's alignment counts: a problem's alignments alone gave
    # psram (alignment 4) 44 bytes for three buffers of 14, 14, 13 that need 45).
    sizes_l = problem.sizes.tolist()
    al_l = problem.alignments.tolist()
    pal_l = [q.alignment for q in problem.pools] or [1]
    pins = problem.pins.tolist()
    pinned = [i for i in range(n) if pins[i] >= 0]
    may = {i: pin_pools(problem, i, capacity=False) for i in pinned}
    ub = []
    for k in range(npools):
        worst = sum(s + math.lcm(a, pal_l[k]) - 1 for s, a in zip(sizes_l, al_l))
        pinned_top = max([pins[i] + int(tops[i]) for i in pinned if k in may[i]], default=0)
        u = caps[k] if caps[k] is not None else worst + pinned_top
        ub.append(int(u))
    m = cp_model.CpModel()
    # each buffer's pools: those whose room (and, for a pin, alignment) can hold it
    cands = []
    for i in range(n):
        if pins[i] >= 0:
            c = [k for k in pin_pools(problem, i)
                 if tops[i] == 0 or pins[i] + int(tops[i]) <= ub[k]]
        else:
            c = [k for k in (problem.candidate_pools(i) if problem.pools else [0])
                 if ub[k] >= int(tops[i])]
        if not c:
            what = (f"fixed at offset {pins[i]} ({int(problem.sizes[i])} bytes)" if pins[i] >= 0
                    else f"({int(tops[i])} bytes)")
            info["proof"] = (f"buffer {problem.ids[i]!r} {what} fits in none of its candidate "
                             "pools (alignment, capacity)" if problem.pools
                             else f"buffer {problem.ids[i]!r} {what} exceeds the capacity")
            return SolveResult(None, "infeasible",
                               best_bound=None if problem.pools else int(ub[0]) + 1, info=info)
        cands.append(c)
    al = problem.alignments.tolist()
    palign = [q.alignment for q in problem.pools] or [1]
    x, pres = [], []
    for i in range(n):
        if len(cands[i]) == 1:
            pres.append({cands[i][0]: None})
        else:
            lits = {k: m.NewBoolVar(f"p{i}_{k}") for k in cands[i]}
            m.AddExactlyOne(lits.values())
            pres.append(lits)
        if pins[i] >= 0:
            x.append(m.NewConstant(pins[i]))
            continue
        top_ub = max(ub[k] for k in cands[i]) - int(tops[i])
        xi = m.NewIntVar(0, top_ub, f"x{i}")
        # exact per pool: a multiple of lcm(buffer, pool) alignment in the pool it is in
        for k, lit in pres[i].items():
            a = math.lcm(al[i], palign[k])
            if a == 1:
                continue
            kk = m.NewIntVar(0, (ub[k] - int(tops[i])) // a, f"k{i}_{k}")
            c = m.Add(xi == a * kk)
            if lit is not None:
                c.OnlyEnforceIf(lit)
        x.append(xi)
    H = [m.NewIntVar(0, ub[k], f"H{k}") for k in range(npools)]
    boxes: list[tuple[list, list]] = [([], []) for _ in range(npools)]
    for r, (i, t0_, t1_, lo_, hi_) in enumerate(zip(own.tolist(), st.tolist(), en.tolist(),
                                                     lo.tolist(), hi.tolist())):
        for k, lit in pres[i].items():
            if lit is None:
                xv = m.NewFixedSizeIntervalVar(x[i] + lo_, hi_ - lo_, f"X{r}_{k}")
                yv = m.NewFixedSizeIntervalVar(t0_, t1_ - t0_, f"Y{r}_{k}")
            else:
                xv = m.NewOptionalFixedSizeIntervalVar(x[i] + lo_, hi_ - lo_, lit, f"X{r}_{k}")
                yv = m.NewOptionalFixedSizeIntervalVar(t0_, t1_ - t0_, lit, f"Y{r}_{k}")
            boxes[k][0].append(xv)
            boxes[k][1].append(yv)
    for i in range(n):
        if tops[i] == 0:
            continue
        for k, lit in pres[i].items():
            c = m.Add(x[i] + int(tops[i]) <= H[k])
            if lit is not None:
                c.OnlyEnforceIf(lit)
    for k in range(npools):
        if boxes[k][0]:
            m.AddNoOverlap2D(boxes[k][0], boxes[k][1])
    lb = lower_bound(problem)
    if problem.pools:
        costs = problem.pool_costs
        # bytes x accesses per buffer: size x lifetime (a merged colocation group: the sum
        # over its members, Problem.traffic_weights), or the given accesses x size
        tw = (problem.traffic_weights.tolist() if accesses is None
              else [a * z for a, z in zip(np.asarray(accesses, np.int64).tolist(),
                                          problem.sizes.tolist(), strict=True)])
        terms = []
        for i in range(n):
            for k, lit in pres[i].items():
                w = tw[i] * costs[k]
                if w and lit is not None:
                    terms.append(w * lit)
                elif w:
                    terms.append(w)
        weight = sum(ub) + 1
        total = sum(H)
        top_cost = sum(tw[i] * max(costs) for i in range(n))
        if not terms:
            m.Minimize(total)
            info["objective"] = "total arena"
        elif weight * (top_cost + 1) < 2**62:
            m.Minimize(weight * sum(terms) + total)
            info["objective"] = "traffic cost, then total arena"
        else:
            m.Minimize(sum(terms))
            info["objective"] = "traffic cost"
        m.Add(total >= lb)
    elif mode == "minimize":
        m.Add(H[0] >= lb)
        m.Minimize(H[0])
    for i in range(n):
        if pins[i] < 0:
            h = int(problem.hints[i])
            m.AddHint(x[i], h if h >= 0 else int(warm.offsets[i]))
        for k, lit in pres[i].items():
            if lit is not None:
                m.AddHint(lit, int(warm.pools[i]) == k)
    left = clock.solver_seconds()  # what the set-up left of time_limit, or None
    clock.record(info)
    if left is None:
        info["stopped_by"] = "time_limit"
        return SolveResult(None, "timeout", info=info)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = left
    solver.parameters.num_search_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    st_ = solver.Solve(m)
    name = solver.StatusName(st_)
    info["solver_status"] = name
    if st_ in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        off = np.array([solver.Value(v) for v in x], np.int64)
        pools = None
        if problem.pools:
            pools = np.array([next(k for k, lit in pres[i].items()
                                   if lit is None or solver.Value(lit)) for i in range(n)], np.int64)
            info["traffic_cost"] = (traffic_cost(problem, pools) if accesses is None else
                                    sum(tw[i] * costs[int(pools[i])] for i in range(n)))
        status = "optimal" if st_ == cp_model.OPTIMAL else "feasible"
        bb = None
        if not problem.pools and mode == "minimize":
            bb = int(math.ceil(solver.BestObjectiveBound() - 1e-9))
        return SolveResult(off, status, best_bound=bb, info=info, pools=pools)
    if st_ == cp_model.INFEASIBLE:
        bb = None if capacity is None or problem.pools else int(capacity) + 1
        return SolveResult(None, "infeasible", best_bound=bb, info=info)
    if st_ == cp_model.MODEL_INVALID:
        from .errors import ProblemError

        raise ProblemError(f"problem {problem.name!r}: CP-SAT rejected the feature model "
                           f"({solver.parameters})")
    info["stopped_by"] = "time_limit"
    return SolveResult(None, "timeout", info=info)
