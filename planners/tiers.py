"""Memory tiers: two-level SRAM/DRAM assignment, and several models on one device.

Seed 000 section 6 and seed 002 section 5.1.4 (分层分配) split memory into regions by access
pattern: resident weights, the activation arena, and tensors kept across layers or invocations;
on a device with a small fast SRAM and a large DRAM, **which buffers live in SRAM** decides the
DRAM traffic. As XLA's memory-space assignment does, :func:`assign_tiers` picks a set of buffers
whose offset plan fits the SRAM capacity and minimises the DRAM traffic
``sum over DRAM buffers of size x accesses`` (bytes); the rest is planned in a DRAM arena.

* ``method="greedy"``: buffers by decreasing traffic density ``size x accesses / (size x
  lifetime)`` = ``accesses / lifetime`` (ties: larger traffic first), each placed at the lowest
  SRAM offset free over its lifetime (first fit), skipped when none fits. ``O(n^2)`` worst case
  (``O(n k)`` with ``k`` the buffers placed and overlapping in time).
* ``method="cpsat"``: the exact 0-1 model -- optional rectangles (time x address) in a
  ``NoOverlap2D``, offsets in ``[0, capacity - size]``, maximise the SRAM traffic -- with
  OR-Tools CP-SAT (for up to a few hundred buffers).

Whole buffers only: splitting a buffer's lifetime into slices between its uses (prefetch /
eviction, as XLA does) is not modelled.

:func:`multi_model_arenas` compares one arena per model with one arena planned jointly (seed
001 section 4: isolated regions per model waste about 5-15 %).

Sizes and offsets are bytes; lifetimes half-open ``[start, end)`` steps.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import ProblemError
from .model import Buffer, Problem
from .validate import check_plan

__all__ = ["TierAssignment", "assign_tiers", "multi_model_arenas", "TIER_METHODS"]


@dataclass
class TierAssignment:
    """Result of :func:`assign_tiers` (bytes).

    Attributes
    ----------
    in_sram : bool array ``(n,)``
        Problem order.
    sram_offsets : int64 array ``(n,)``
        SRAM offset of SRAM buffers, -1 for DRAM buffers.
    sram_arena, dram_arena : int
        Highest SRAM address used; arena of the DRAM buffers (planned with ``dram_planner``).
    dram_traffic, total_traffic : int
        ``sum size x accesses`` over DRAM buffers, over all buffers.
    method : str
    seconds : float
    status : str
        ``"heuristic"``, ``"optimal"`` or ``"feasible"``.
    """

    in_sram: np.ndarray
    sram_offsets: np.ndarray
    sram_arena: int
    dram_arena: int
    dram_traffic: int
    total_traffic: int
    method: str
    seconds: float
    status: str

    @property
    def traffic_saved(self) -> float:
        """Share of the traffic served by SRAM: ``1 - dram_traffic / total_traffic``."""
        return 1.0 - self.dram_traffic / self.total_traffic if self.total_traffic else 0.0

    def as_dict(self) -> dict:
        """A flat record."""
        return {"method": self.method, "status": self.status, "sram_buffers": int(self.in_sram.sum()),
                "sram_arena": self.sram_arena, "dram_arena": self.dram_arena,
                "dram_traffic": self.dram_traffic, "total_traffic": self.total_traffic,
                "traffic_saved": self.traffic_saved, "seconds": self.seconds}


def _greedy(problem: Problem, cap: int, traffic: np.ndarray):
    n = problem.n
    life = (problem.ends - problem.starts).astype(float)
    dens = traffic / np.maximum(1.0, problem.sizes * life)
    order = np.lexsort((np.arange(n), -traffic, -dens))
    off = np.full(n, -1, np.int64)
    placed: list[int] = []
    sz = problem.aligned_sizes
    for i in order.tolist():
        if problem.sizes[i] == 0 or sz[i] > cap:
            continue
        s, e, a = problem.starts[i], problem.ends[i], int(problem.alignments[i])
        busy = sorted((int(off[j]), int(off[j] + sz[j])) for j in placed
                      if problem.starts[j] < e and s < problem.ends[j])
        cand = 0
        for lo, hi in busy:
            if cand + sz[i] <= lo:
                break
            cand = max(cand, -(-hi // a) * a)
        if cand + sz[i] <= cap:
            off[i] = cand
            placed.append(i)
    return off, "heuristic"


def _cpsat(problem: Problem, cap: int, traffic: np.ndarray, time_limit: float, seed: int):
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    n = problem.n
    pres, xs, xiv, tiv = [], [], [], []
    sz = problem.aligned_sizes
    for i in range(n):
        p = m.NewBoolVar(f"p{i}")
        a = int(problem.alignments[i])
        hi = max(0, cap - int(sz[i]))
        k = m.NewIntVar(0, hi // a, f"k{i}")
        x = m.NewIntVar(0, hi, f"x{i}")
        m.Add(x == a * k)
        if sz[i] > cap or problem.sizes[i] == 0:
            m.Add(p == 0)
        xiv.append(m.NewOptionalFixedSizeIntervalVar(x, int(sz[i]), p, f"xi{i}"))
        tiv.append(m.NewOptionalFixedSizeIntervalVar(
            int(problem.starts[i]), int(problem.ends[i] - problem.starts[i]), p, f"ti{i}"))
        pres.append(p)
        xs.append(x)
    m.AddNoOverlap2D(tiv, xiv)
    m.Maximize(sum(int(traffic[i]) * pres[i] for i in range(n)))
    g, _ = _greedy(problem, cap, traffic)
    for i in range(n):
        m.AddHint(pres[i], bool(g[i] >= 0))
        if g[i] >= 0:
            m.AddHint(xs[i], int(g[i]))
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = float(time_limit)
    s.parameters.num_search_workers = 1
    s.parameters.random_seed = int(seed)
    st = s.Solve(m)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return g, "heuristic"
    off = np.array([s.Value(xs[i]) if s.BooleanValue(pres[i]) else -1 for i in range(n)],
                   np.int64)
    return off, "optimal" if st == cp_model.OPTIMAL else "feasible"


#: Name -> SRAM selection method ``f(problem, capacity, traffic, ...) -> (offsets, status)``.
TIER_METHODS = {"greedy": _greedy, "cpsat": _cpsat}


def assign_tiers(problem: Problem, sram_capacity: int, accesses: Sequence[int] | None = None,
                 method: str = "greedy", dram_planner: str = "greedy_by_size",
                 time_limit: float = 10.0, seed: int = 0) -> TierAssignment:
    """Choose the buffers that live in SRAM (module docstring) and plan both regions.

    Parameters
    ----------
    problem : Problem
        Activation buffers (resident buffers may be included; they compete like the others).
    sram_capacity : int
        SRAM bytes for buffers.
    accesses : sequence of int or None, shape ``(n,)``
        Times each buffer is written or read (default 2: one write, one read). For a graph:
        ``1 + number of consumers``.
    method : {"greedy", "cpsat"}
    dram_planner : str
        Registry name of the planner for the DRAM buffers.

    Returns
    -------
    TierAssignment
        The SRAM layout is checked with :func:`planners.validate.check_plan`.

    Raises
    ------
    ProblemError
        Negative capacity, accesses of the wrong length or negative, an unknown method.
    """
    from .registry import plan as run_plan

    t0 = time.perf_counter()
    if sram_capacity < 0:
        raise ProblemError(f"problem {problem.name!r}: SRAM capacity must be >= 0 bytes, "
                           f"got {sram_capacity}")
    if method not in TIER_METHODS:
        raise ProblemError(f"unknown tier method {method!r}; known: {sorted(TIER_METHODS)}")
    acc = np.full(problem.n, 2, np.int64) if accesses is None else np.asarray(accesses, np.int64)
    if acc.shape != (problem.n,) or (acc < 0).any():
        raise ProblemError(f"problem {problem.name!r}: accesses must be {problem.n} integers "
                           ">= 0 (one per buffer)")
    traffic = problem.sizes * acc
    if method == "greedy":
        off, status = _greedy(problem, int(sram_capacity), traffic)
    else:
        off, status = _cpsat(problem, int(sram_capacity), traffic, time_limit, seed)
    ins = off >= 0
    sram_bufs = [problem.buffers[i] for i in np.flatnonzero(ins)]
    sp = Problem(sram_bufs, capacity=int(sram_capacity), alignment=problem.alignment,
                 name=f"{problem.name}:sram")
    check_plan(sp, off[ins])
    sram_arena = int(max((off[i] + problem.sizes[i] for i in np.flatnonzero(ins)), default=0))
    dram = [problem.buffers[i] for i in np.flatnonzero(~ins)]
    dram_arena = 0
    if dram:
        dp = Problem(dram, alignment=problem.alignment, name=f"{problem.name}:dram")
        dram_arena = run_plan(dp, dram_planner).arena_size
    return TierAssignment(ins, np.where(ins, off, -1), sram_arena, dram_arena,
                          int(traffic[~ins].sum()), int(traffic.sum()), method,
                          time.perf_counter() - t0, status)


def multi_model_arenas(problems: Sequence[Problem], planner: str = "greedy_by_size",
                       mode: str = "interleaved") -> dict:
    """One arena per model (isolated regions, seed 001 section 4) vs one arena planned jointly.

    Parameters
    ----------
    problems : sequence of Problem
        One activation problem per model.
    planner : str
        Registry name used for every plan.
    mode : {"interleaved", "sequential"}
        ``"interleaved"``: the models run concurrently, step ``k`` of model ``i`` (of ``m``) is
        global step ``k m + i`` (round robin), so their buffers overlap in time; the joint
        arena plans all of them at once. ``"sequential"``: one model after the other (model
        ``i``'s steps shifted after model ``i - 1``'s), the joint arena is then their maximum.

    Returns
    -------
    dict
        ``separate`` (sum of per-model arenas), ``joint`` (arena of the joint plan),
        ``joint_lower_bound`` (max live bytes of the joint problem), ``waste`` (``(separate -
        joint) / separate``, the share isolation wastes) and ``per_model`` arenas.

    Raises
    ------
    ProblemError
        Unknown mode or no problems.
    """
    from .bounds import lower_bound
    from .registry import plan as run_plan

    if mode not in ("interleaved", "sequential"):
        raise ProblemError(f"mode must be 'interleaved' or 'sequential', got {mode!r}")
    if not problems:
        raise ProblemError("multi_model_arenas needs at least one problem")
    per = [run_plan(p, planner).arena_size for p in problems]
    m = len(problems)
    bufs = []
    shift = 0
    for i, p in enumerate(problems):
        for b in p.buffers:
            if mode == "interleaved":
                s, e = b.start * m + i, (b.end - 1) * m + i + 1
            else:
                s, e = b.start + shift, b.end + shift
            bufs.append(Buffer(f"m{i}:{b.id}", s, e, b.size, b.alignment, b.kind))
        shift += p.horizon
    joint_p = Problem(bufs, alignment=max(p.alignment for p in problems), name="joint")
    joint = run_plan(joint_p, planner).arena_size
    sep = int(sum(per))
    return {"separate": sep, "joint": int(joint), "joint_lower_bound": lower_bound(joint_p),
            "waste": (sep - joint) / sep if sep else 0.0, "per_model": per, "mode": mode}
