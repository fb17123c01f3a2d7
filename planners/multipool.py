"""Several memories: pool assignment for problems with pools (:attr:`Problem.pools`).

A problem with pools names its memories in **preference order** (a fast SRAM/TCM of known
capacity first, then a large slow PSRAM/DRAM); a plan gives every buffer a pool among its
candidates and an offset inside it. Two assignments:

* :func:`spill_assignment` -- the greedy **spill policy** of ExecuTorch's banked greedy
  (``exir/memory_planning.py``, one arena per ``mem_id``) and TVM's USMP greedy
  (``size_hint_bytes`` per pool): buffers in decreasing size (pins first, each in the first
  candidate pool that holds it where it meets no other pin), each to the first
  candidate pool where it fits below the pool's capacity (:func:`planners.placement.place_features`).
  :func:`plan_pools` uses it for every planner whose ``_capabilities["pools"]`` is ``spill``: the
  planner then plans each pool on its own (capacity the pool's), and a pool it cannot fit keeps
  the spill's own offsets (``info["pools"]`` says which).
* :func:`cpsat_pool_assignment` (in :mod:`planners.feature_cpsat`) -- assignment and offsets in one
  CP-SAT model that minimises the **traffic cost** ``sum_i accesses_i x size_i x cost(pool_i)``
  (bytes moved to slow memories weighted by their accesses, the traffic model of
  :mod:`planners.tiers`; ``accesses_i`` defaults to the lifetime in steps, one access per step).

An overflow is known at plan time: the plan's status is ``over_capacity`` when a pool's arena
exceeds its capacity, with ``plan.arenas`` per pool.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .model import Problem, SolveResult, pool_subproblem  # noqa: F401 (re-exported)
from .placement import place_features

__all__ = ["spill_assignment", "pool_subproblem", "plan_pools"]


def spill_assignment(problem: Problem, order=None, fit: str = "first"):
    """The spill policy (module docstring): a :class:`planners.placement.FeaturePlacement` of
    ``problem`` in ``order`` (default: pins first, then the buffers with fewer candidate pools
    (those that can go nowhere else), then decreasing size, ties by index)."""
    if order is None:
        ncand = np.array([len(problem.candidate_pools(i)) for i in range(problem.n)], np.int64)
        order = np.lexsort((np.arange(problem.n), -problem.sizes, ncand))
    return place_features(problem, order, fit)


def plan_pools(planner, problem: Problem):
    """Plan a problem with pools with any planner: :func:`spill_assignment`, then
    ``planner.plan`` per pool. Returns a :class:`planners.base.SolveResult` with ``pools``.

    Status: ``infeasible`` only when pinned buffers collide in every choice of their pools (a
    proof: pins cannot move; :func:`planners.placement.assign_pins`);
    else ``feasible`` when every pool was planned by an exact method (``optimal``/``feasible``;
    the assignment itself is heuristic), otherwise ``heuristic``. ``info["pools"]`` holds, per
    pool, the planner's status and arena or why the spill's offsets were kept.

    Time: a planner with a ``time_limit`` (seconds) keeps it for the whole call, not per pool:
    each pool's plan gets an equal share of what is left (``info["pools"][name]["time_limit"]``,
    the share; the time a pool does not use goes to the pools after it), and a pool left less
    than :data:`planners.time_limits.MIN_SOLVER_SECONDS` keeps the spill's offsets. Before, each
    pool got the whole limit, so ``k`` pools could take ``k`` times it.
    """
    import copy
    import time

    from .errors import MemplanError
    from .time_limits import MIN_SOLVER_SECONDS

    t0 = time.perf_counter()
    names = getattr(planner, "_param_names", lambda: [])()
    limit = getattr(planner, "time_limit", None) if "time_limit" in names else None

    sp = spill_assignment(problem)
    if sp.conflict is not None:  # pins colliding in every choice of pools (a proof)
        if sp.proof is None:
            return SolveResult(None, "timeout", info={"stopped_by": "pin search limit"})
        return SolveResult(None, "infeasible", info={"proof": sp.proof})
    off = sp.offsets.copy()
    info: dict[str, Any] = {"assignment": "spill", "pools": {}}
    exact = True
    used = [k for k in range(len(problem.pools)) if (sp.pools == k).any()]
    for k, q in enumerate(problem.pools):
        idx = np.flatnonzero(sp.pools == k)
        if idx.size == 0:
            info["pools"][q.name] = {"buffers": 0}
            continue
        spill_top = int((sp.offsets[idx] + problem.sizes[idx]).max())
        cap = q.capacity
        if cap is None and getattr(planner, "requires_capacity", False):
            cap = spill_top  # the spill's own arena fits: a decision planner answers "fits"
        sub, idx = pool_subproblem(problem, sp.pools, k, cap)
        rec: dict[str, Any] = {"buffers": int(idx.size), "spill_arena": spill_top}
        runner = planner
        if limit is not None:
            share = (float(limit) - (time.perf_counter() - t0)) / len([j for j in used if j >= k])
            if share < MIN_SOLVER_SECONDS:
                rec["kept_spill"] = f"no time left of time_limit {float(limit):g} s"
                exact = False
                info["pools"][q.name] = rec
                continue
            rec["time_limit"] = round(share, 6)
            runner = copy.copy(planner)
            runner.time_limit = share
        try:
            p = runner.plan(sub)
        except MemplanError as e:
            rec["kept_spill"] = f"{type(e).__name__}: {e}"
            exact = False
            info["pools"][q.name] = rec
            continue
        rec.update(status=p.status, arena=p.arena_size)
        if p.status in ("infeasible", "timeout", "skipped") or (
                q.capacity is not None and p.arena_size > q.capacity >= spill_top):
            rec["kept_spill"] = f"{planner.name} gave {p.status} with arena {p.arena_size}"
            exact = False
        else:
            off[idx] = p.offsets
            # an exact method per pool (its own word: a heuristic at a pool's bound says
            # optimal by the one status rule, but its method stays a heuristic)
            exact &= p.info.get("solver_claim", p.status) in ("optimal", "feasible")
        info["pools"][q.name] = rec
    return SolveResult(off, "feasible" if exact else "heuristic", info=info, pools=sp.pools)
