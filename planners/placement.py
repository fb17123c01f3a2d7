"""Greedy placement with the compiler features: pins, hints, gaps and pools.

The engine of :mod:`planners.greedy` places plain intervals (and has a compiled core); a problem
with fixed offsets, hints, gaps or pools (:attr:`planners.model.Problem.features`) is placed here,
buffer by buffer in the same orders, in Python:

* **pins** are placed first, at their fixed offsets. With pools a pinned buffer may go to any
  candidate pool that can hold it (:func:`pin_pools`: the pool's alignment divides the pin and
  its capacity holds ``pin + size``); :func:`assign_pins` gives each pin the first such pool in
  preference order where it does not collide with the pins already placed, else the next, and
  backtracks (most constrained pins first) when a later pin finds every pool taken. Only when no
  choice avoids a collision (or no candidate pool's alignment divides a pin) is the problem
  infeasible, which is reported as a proof (pins cannot move). A pin that fits no pool's
  capacity goes to a pool whose alignment divides it (the plan is then over capacity);
* a buffer's space is its **pieces** (:meth:`planners.model.Problem.pieces`): outside its gaps
  ``[offset, offset + size)``, in a gap with window ``(lo, hi)`` only ``[offset + lo,
  offset + hi)``, in a gap without window nothing. Offset ``x`` is forbidden by a placed piece
  ``[a, b)`` that shares a step with an own piece ``[lo, hi)`` iff ``a - hi < x < b - lo``;
* the **hint** is tried first; if it is free (aligned, no collision, within the pool's
  capacity) the buffer goes there, else by the fit rule: ``first`` takes the lowest free aligned
  offset, ``best`` the free candidate (0 or just above a forbidden range) with the smallest free
  room above it (ties: the lowest);
* **pools** (the spill policy of ExecuTorch's banked greedy ``greedy`` with several ``mem_id``
  arenas and of TVM's USMP greedy with ``size_hint_bytes``): a buffer goes to the first of its
  candidate pools, in the problem's preference order, where its offset ends within the pool's
  capacity; when none has room, to its last candidate pool (the plan is then over capacity).

Offsets are relative to the pool's base and multiples of ``lcm(buffer alignment, pool
alignment)``. Time ``O(n R)`` for ``R`` placed pieces (every placed piece is scanned per buffer):
meant for the compilers' problems (hundreds to a few thousand buffers), not for MiniMalloc's
million-buffer benchmarks (those have no features and take the compiled engine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .model import Problem

__all__ = ["FeaturePlacement", "place_features", "pinned_conflict", "pin_pools", "assign_pins",
           "PIN_SEARCH_LIMIT", "CAPABILITIES"]

#: What the greedy engine handles (:data:`planners.base.CAPABILITY_MODES`): a planner that
#: places through :func:`place_features` (or :func:`planners.greedy.greedy_offsets` for plain
#: problems, as :class:`planners.greedy.GreedyPlanner` does) gets pins pre-placed, hints tried
#: first, gaps as pieces and pools by the spill policy of this module, all ``native``;
#: colocations are left to :meth:`planners.base.Planner.plan` (``merged``). A planner declares
#: ``_engine = "greedy"`` to take this table (:meth:`planners.base.Planner.capabilities`).
CAPABILITIES: dict[str, str] = {"pins": "native", "hints": "native", "gaps": "native",
                                "pools": "native", "colocations": "merged"}

#: Nodes of :func:`assign_pins`'s backtracking search before it gives up (no proof either way).
PIN_SEARCH_LIMIT = 200_000


@dataclass
class FeaturePlacement:
    """Result of :func:`place_features`: ``offsets`` and ``pools`` (int64 arrays in problem
    order; ``pools`` all 0 without pools), ``over`` (ids of buffers above their pool's
    capacity), ``conflict`` (two pinned buffers that collide, or ``None``) and ``proof`` (one
    line proving that no valid plan exists, or ``None``: a ``conflict`` without ``proof`` means
    the pin search stopped at :data:`PIN_SEARCH_LIMIT`, nothing proved). Callers report a
    ``conflict`` as ``infeasible`` when ``proof`` is set, else as ``timeout``."""

    offsets: np.ndarray
    pools: np.ndarray
    over: list[str]
    conflict: tuple[str, str] | None = None
    proof: str | None = None


def pin_pools(problem: Problem, i: int, capacity: bool = True) -> list[int]:
    """Pools (indices, preference order) that can hold pinned buffer ``i`` at its fixed offset:
    its candidate pools whose alignment divides the pin and, with ``capacity``, whose capacity
    holds ``pin + size`` bytes (a zero-size buffer fits any capacity) -- the pools the validator
    (:func:`planners.validate.check_plan`) accepts it in. ``[0]`` without pools (one arena)."""
    if not problem.pools:
        return [0]
    pin, size = int(problem.pins[i]), int(problem.sizes[i])
    out = []
    for k in problem.candidate_pools(i):
        q = problem.pools[k]
        if pin % q.alignment:
            continue
        if capacity and size > 0 and q.capacity is not None and pin + size > q.capacity:
            continue
        out.append(k)
    return out


def _pin_collisions(problem: Problem, idx: np.ndarray) -> np.ndarray:
    """``(P, P)`` bool matrix: pinned buffers ``idx[u]`` and ``idx[v]`` (``u != v``) take a
    common byte at a common step at their fixed offsets (pieces of :meth:`Problem.pieces`)."""
    own, st, en, lo, hi = problem.pieces()
    pos = np.full(problem.n, -1, np.int64)
    pos[idx] = np.arange(idx.size)
    keep = pos[own] >= 0
    own, st, en = pos[own[keep]], st[keep], en[keep]
    base = problem.pins[idx][own]
    alo, ahi = base + lo[keep], base + hi[keep]
    hit = ((st[:, None] < en[None, :]) & (st[None, :] < en[:, None])
           & (alo[:, None] < ahi[None, :]) & (alo[None, :] < ahi[:, None])
           & (own[:, None] != own[None, :]))
    out = np.zeros((idx.size, idx.size), bool)
    a, b = np.nonzero(hit)
    out[own[a], own[b]] = True
    return out


def assign_pins(problem: Problem) -> tuple[dict[int, int], tuple[str, str] | None, str | None]:
    """A pool for every pinned buffer such that no two pins in one pool collide (module
    docstring): ``(pools, conflict, proof)`` with ``pools`` ``{buffer index: pool index}``.

    Each pin's choices are :func:`pin_pools` (in preference order), then the candidate pools
    whose alignment divides it but whose capacity is too small (over capacity, still a layout).
    Depth-first search over the pins, fewest choices first, each trying its choices in
    preference order: without collisions among pins that is the first pool in preference order
    for every pin. When no assignment exists, ``conflict`` names two colliding pins and
    ``proof`` says why no plan exists; when the search stops at :data:`PIN_SEARCH_LIMIT` nodes,
    ``conflict`` is set and ``proof`` is ``None`` (nothing proved).
    """
    idx = np.flatnonzero(problem.pins >= 0)
    ids = problem.ids
    if idx.size == 0:
        return {}, None, None
    dom: list[list[int]] = []
    for i in idx.tolist():
        fit = pin_pools(problem, i)
        d = fit + [k for k in pin_pools(problem, i, capacity=False) if k not in fit]
        if not d:
            names = [problem.pools[k].name for k in problem.candidate_pools(i)]
            return {}, (ids[i], ids[i]), (
                f"buffer {ids[i]!r}: fixed offset {int(problem.pins[i])} is not a multiple of the "
                f"alignment of any of its candidate pools {names}")
        dom.append(d)
    col = _pin_collisions(problem, idx)
    order = sorted(range(idx.size), key=lambda u: (len(dom[u]), u))
    choice = [-1] * idx.size          # pool chosen per pin (position in idx), -1: not yet
    at = [0] * idx.size               # next choice to try, per depth
    depth, nodes = 0, 0
    while 0 <= depth < len(order):
        u = order[depth]
        choice[u] = -1
        while at[depth] < len(dom[u]):
            k = dom[u][at[depth]]
            at[depth] += 1
            nodes += 1
            if not any(choice[v] == k for v in np.flatnonzero(col[u]).tolist()):
                choice[u] = k
                break
        if nodes > PIN_SEARCH_LIMIT:
            break
        if choice[u] >= 0:
            depth += 1
            if depth < len(order):
                at[depth] = 0
        else:
            depth -= 1
    if depth == len(order):
        return {int(i): choice[u] for u, i in enumerate(idx.tolist())}, None, None
    a, b = np.nonzero(np.triu(col))
    pair = (ids[int(idx[a[0]])], ids[int(idx[b[0]])]) if a.size else (ids[int(idx[0])],) * 2
    if nodes > PIN_SEARCH_LIMIT:
        return {}, pair, None
    both = sorted({ids[int(idx[v])] for v in np.concatenate([a, b]).tolist()})
    if len(both) == 2 or not problem.pools:
        return {}, pair, f"pinned buffers {pair[0]!r} and {pair[1]!r} collide"
    return {}, pair, (f"pinned buffers {', '.join(map(repr, both))} collide in every choice of "
                      "their candidate pools")


def _rect_lists(problem: Problem) -> list[list[tuple[int, int, int, int]]]:
    """Per buffer, its pieces ``(t0, t1, lo, hi)`` (steps half-open; bytes above the offset)."""
    own, st, en, lo, hi = problem.pieces()
    out: list[list[tuple[int, int, int, int]]] = [[] for _ in range(problem.n)]
    for i, a, b, c, d in zip(own.tolist(), st.tolist(), en.tolist(), lo.tolist(), hi.tolist()):
        out[i].append((a, b, c, d))
    return out


def _forbidden(mine, placed) -> list[tuple[int, int]]:
    """Open ranges ``(a - hi, b - lo)`` of offsets at which pieces ``mine`` hit ``placed``
    pieces ``(t0, t1, a, b)`` (absolute addresses) sharing a step, sorted."""
    out = []
    for t0, t1, lo, hi in mine:
        for p0, p1, a, b in placed:
            if t0 < p1 and p0 < t1:
                out.append((a - hi, b - lo))
    out.sort()
    return out


def _free(x: int, forb) -> bool:
    return all(not (a < x < b) for a, b in forb)


def _lowest(forb, align: int, start: int = 0) -> int:
    """Lowest multiple of ``align`` ``>= start`` outside every open range of ``forb`` (sorted)."""
    x = -(-start // align) * align
    changed = True
    while changed:
        changed = False
        for a, b in forb:
            if a < x < b:
                x = -(-b // align) * align
                changed = True
    return x


def _best(forb, align: int, cap: int | None, top: int) -> int:
    """Best fit: among free candidates (0 and each forbidden range's aligned upper end) the one
    with the smallest room to the next forbidden range above it that still fits within ``cap``
    (``top``: the buffer's extent above its offset); ties to the lowest; else the first fit."""
    cands = sorted({0} | {-(-b // align) * align for _, b in forb if b > 0})
    best, room_best = None, None
    for x in cands:
        if not _free(x, forb) or (cap is not None and x + top > cap):
            continue
        above = [a for a, _ in forb if a >= x]
        room = (min(above) - x) if above else None
        if room is None:
            if best is None:
                best = x
            continue
        if room_best is None or room < room_best:
            best, room_best = x, room
    return best if best is not None else _lowest(forb, align)


def pinned_conflict(problem: Problem, pools: np.ndarray | None = None) -> tuple[str, str] | None:
    """Two pinned buffers in one pool whose fixed ranges collide at a common step, or ``None``.
    ``pools``: the pool index per buffer, a fixed assignment (then not ``None`` means no plan
    with that assignment exists); default: the pools chosen by :func:`assign_pins` (then not
    ``None`` means no plan exists at all, when :func:`assign_pins` proved it)."""
    if pools is None:
        return assign_pins(problem)[1]
    pins = problem.pins
    idx = np.flatnonzero(pins >= 0).tolist()
    if len(idx) < 2:
        return None
    rects = _rect_lists(problem)
    pool = [int(pools[i]) for i in idx]
    ids = problem.ids
    for u in range(len(idx)):
        i = idx[u]
        for v in range(u):
            j = idx[v]
            if pool[u] != pool[v]:
                continue
            pj = [(t0, t1, int(pins[j]) + lo, int(pins[j]) + hi) for t0, t1, lo, hi in rects[j]]
            if not _free(int(pins[i]), _forbidden(rects[i], pj)):
                return ids[j], ids[i]
    return None


def place_features(problem: Problem, perm, fit: str = "first",
                   pools: np.ndarray | None = None) -> FeaturePlacement:
    """Place ``problem`` greedily in the order ``perm`` (a permutation of buffer indices) with the
    rule ``fit`` (``"first"`` or ``"best"``) and the features of the module docstring.

    ``pools``: a fixed pool index per buffer (e.g. an assignment to re-place); ``None`` lets the
    spill policy choose. Pinned buffers are placed first whatever ``perm`` says. Returns a
    :class:`FeaturePlacement`; the caller reports ``conflict`` as infeasible.
    """
    n = problem.n
    rects = _rect_lists(problem)
    aligns = problem.alignments.tolist()
    pins = problem.pins.tolist()
    hints = problem.hints.tolist()
    npools = max(1, len(problem.pools))
    caps = [q.capacity for q in problem.pools] or [problem.capacity]
    palign = [q.alignment for q in problem.pools] or [1]
    placed: list[list[tuple[int, int, int, int]]] = [[] for _ in range(npools)]
    off = np.zeros(n, np.int64)
    where = np.zeros(n, np.int64)
    over: list[str] = []
    ids = problem.ids
    proof = None
    if pools is not None:
        conflict = pinned_conflict(problem, pools)
        if conflict is not None:
            proof = f"pinned buffers {conflict[0]!r} and {conflict[1]!r} collide"
        pin_at: dict[int, int] = {}
    else:
        pin_at, conflict, proof = assign_pins(problem)
    if conflict is not None:
        return FeaturePlacement(off, where, over, conflict, proof)
    order = [i for i in range(n) if pins[i] >= 0] + [int(i) for i in perm if pins[int(i)] < 0]
    for i in order:
        mine = rects[i]
        if not mine:
            if pools is not None:
                where[i] = int(pools[i])
            elif i in pin_at:
                where[i] = pin_at[i]
            else:
                where[i] = problem.candidate_pools(i)[0]
            off[i] = pins[i] if pins[i] >= 0 else 0
            continue
        top = max(hi for _, _, _, hi in mine)
        cands = [int(pools[i])] if pools is not None else problem.candidate_pools(i)
        if pins[i] >= 0:
            k, x = (cands[0] if pools is not None else pin_at[i]), pins[i]
        else:
            k = x = None
            for c in cands:
                a = math.lcm(aligns[i], palign[c])
                forb = _forbidden(mine, placed[c])
                h = hints[i]
                if h >= 0 and h % a == 0 and _free(h, forb) and (caps[c] is None
                                                                 or h + top <= caps[c]):
                    y = h
                else:
                    y = _lowest(forb, a) if fit == "first" else _best(forb, a, caps[c], top)
                if caps[c] is None or y + top <= caps[c] or c == cands[-1]:
                    k, x = c, y
                    break
        if caps[k] is not None and x + top > caps[k]:
            over.append(ids[i])
        off[i], where[i] = x, k
        placed[k].extend((t0, t1, x + lo, x + hi) for t0, t1, lo, hi in mine)
    return FeaturePlacement(off, where, over, None, None)
