"""Greedy placement with the compiler features: pins, hints, gaps and pools.

The engine of :mod:`planners.greedy` places plain intervals (and has a compiled core); a problem
with fixed offsets, hints, gaps or pools (:attr:`planners.model.Problem.features`) is placed here,
buffer by buffer in the same orders, in Python:

* **pins** are placed first, at their fixed offsets (in their first candidate pool, or the first
  pool); two pinned buffers that collide make the problem infeasible, which is reported as a
  proof (they cannot move);
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

__all__ = ["FeaturePlacement", "place_features", "pinned_conflict"]


@dataclass
class FeaturePlacement:
    """Result of :func:`place_features`: ``offsets`` and ``pools`` (int64 arrays in problem
    order; ``pools`` all 0 without pools), ``over`` (ids of buffers above their pool's
    capacity) and ``conflict`` (two pinned buffers that collide, or ``None``)."""

    offsets: np.ndarray
    pools: np.ndarray
    over: list[str]
    conflict: tuple[str, str] | None = None


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
    """Two pinned buffers (in one pool) whose fixed ranges collide at a common step, or ``None``:
    if not ``None`` no plan exists (both cannot move). ``pools``: the pool index per buffer
    (default: each pinned buffer's first candidate pool)."""
    pins = problem.pins
    idx = np.flatnonzero(pins >= 0).tolist()
    if len(idx) < 2:
        return None
    rects = _rect_lists(problem)
    pool = [problem.candidate_pools(i)[0] if pools is None else int(pools[i]) for i in idx]
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
    conflict = pinned_conflict(problem, pools)
    order = [i for i in range(n) if pins[i] >= 0] + [int(i) for i in perm if pins[int(i)] < 0]
    for i in order:
        mine = rects[i]
        if not mine:
            if pools is not None:
                where[i] = int(pools[i])
            else:
                where[i] = problem.candidate_pools(i)[0]
            off[i] = pins[i] if pins[i] >= 0 else 0
            continue
        top = max(hi for _, _, _, hi in mine)
        cands = [int(pools[i])] if pools is not None else problem.candidate_pools(i)
        if pins[i] >= 0:
            k, x = cands[0], pins[i]
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
    return FeaturePlacement(off, where, over, conflict)
