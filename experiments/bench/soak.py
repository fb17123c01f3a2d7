"""Soak test: many random problems through every planner, many mutated files through the importers.

``make soak`` (``python -m experiments.bench.soak``) runs

* ``--problems`` seeded random allocation problems (sizes from 0 to 2**40 and a few near the
  representable limit, power-of-two and odd alignments, every lifetime shape, zero sizes, alias
  groups, capacities) through the planners of :data:`planners.registry.PLANNERS`. Problem ``i``
  goes to the planner ``SCHEDULE[i % len(SCHEDULE)]``: every heuristic gets ``--heuristic-weight``
  slots, every planner with a ``time_limit`` (exact and search planners, :data:`EXACT`) one slot,
  with at most 12 buffers and a 0.5 s time limit;
* ``--files`` mutated MiniMalloc CSV, ONNX and TFLite files (one third each) through
  :func:`planners.io.read_minimalloc_csv`, :func:`experiments.workloads.onnx_problem` and
  :func:`scheduling.tflite_import.tflite_problem`; an imported problem is then planned with
  ``greedy_by_size`` and checked like any other.

Every plan is checked here, in Python integers, without :mod:`planners.validate` or
:mod:`planners.bounds`: all pairs of alias groups live at the same step are disjoint in address,
offsets are aligned and non-negative, alias children sit at parent + delta, the arena and the
capacity agree with the status; the reported lower bound equals the one recomputed here; ``best
bound <= arena``; ``optimal`` means ``arena == best bound``. On problems of at most 8 non-empty
groups (every exact run, every 10th heuristic run) a branch-and-bound over all placement orders
(lowest fitting aligned offset, which reaches every optimum) gives the optimum, and no reported
best bound may exceed it, no arena be below it, and an ``optimal`` arena must equal it.

Outcomes of one run (columns of ``results/soak.csv``, one row per planner or importer):

``ok``
    a valid plan with consistent bounds and status (or a correct ``infeasible``, ``timeout`` or
    ``skipped``, which carry no offsets).
``refused``
    a clean toolkit error (:class:`planners.errors.MemplanError` and the subclasses of
    :mod:`scheduling.errors`) naming the input; for mutated files this is the expected result.
``invalid``
    the plan breaks a rule of the interval model (here, or :class:`InvalidPlanError` in ``plan``).
``wrong_bound``
    a lower bound, best bound, status or arena claim that the checks above refute (also a
    :class:`CapacityError` for a capacity that is not below the lower bound).
``traceback``
    any other exception, or a worker process that died.
``hang``
    the planner or importer itself took longer than its wall limit (``--hang-limit`` s for
    heuristics and imports, time limit + ``--hang-limit`` for exact planners; the checks here are
    not counted), or the pool killed the run 30 s after that limit.

Runs go to a :class:`pebble.ProcessPool` in chunks; a chunk that overruns its limit or whose
worker dies is rerun one item per task with the per-run limit, which names the culprit. Every item
is rebuilt from ``(seed, kind, index)`` alone, so the counts are deterministic (except where a
solver stopped by its wall-clock limit is involved) and any failure replays with
``python -m experiments.bench.soak --seed S --replay KIND:INDEX``. The first failures of each
(target, outcome) are written to ``results/soak_failures/``.
"""

from __future__ import annotations

import argparse
import base64
import csv
import io
import math
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "OUTCOMES",
    "SCHEDULE",
    "EXACT",
    "soak_problem",
    "mutated_file",
    "run_item",
    "check_plan_ints",
    "lower_bound_ints",
    "brute_force_optimum",
    "soak",
    "main",
]

#: Outcome columns of ``results/soak.csv`` (module docstring).
OUTCOMES = ("ok", "refused", "invalid", "wrong_bound", "traceback", "hang")


def _timed_planners() -> tuple[str, ...]:
    from planners.registry import PLANNERS

    return tuple(n for n, c in PLANNERS.items() if "time_limit" in c._param_names())


#: Planners run under a time limit (exact and search planners: every registered planner with a
#: ``time_limit`` parameter): at most ``EXACT_MAX_N`` buffers, ``--exact-time``, one slot each.
EXACT = _timed_planners()
EXACT_MAX_N = 12
#: Brute-force optimum on problems of at most this many non-empty alias groups.
BRUTE_MAX = 8
IMPORTERS = ("csv", "onnx", "tflite")
#: Largest integer the model accepts (``planners.model``: ``|value| < 2**62``).
_LIMIT = 2**62


def _schedule(heuristic_weight: int = 10) -> list[str]:
    from planners.registry import PLANNERS

    out: list[str] = []
    for name in PLANNERS:
        out += [name] * (1 if name in EXACT else heuristic_weight)
    return out


#: Planner of problem ``i``: ``SCHEDULE[i % len(SCHEDULE)]`` (default weights).
SCHEDULE = _schedule()


# --------------------------------------------------------------------------------------------
# Random problems
# --------------------------------------------------------------------------------------------
_POW2 = [1 << k for k in range(21)]
_ODD = [3, 5, 6, 7, 9, 12, 24, 48, 96, 100, 1000, 65537, 1000003]


#: Alignments (bytes) and their probabilities: 1 half the time, powers of two, odd ones.
_ALIGNS = np.array([1] + _POW2[1:] + _ODD, np.int64)
_ALIGN_P = np.array([0.5] + [0.35 / 20] * 20 + [0.15 / len(_ODD)] * len(_ODD))


def _alignments(rng: np.random.Generator, n: int) -> list[int]:
    return rng.choice(_ALIGNS, n, p=_ALIGN_P / _ALIGN_P.sum()).tolist()


def _sizes(rng: np.random.Generator, n: int) -> tuple[list[int], str]:
    mode = str(rng.choice(["small", "tensor", "lognormal", "large", "mixed", "huge"],
                          p=[0.2, 0.25, 0.2, 0.2, 0.13, 0.02]))
    if mode == "small":
        sizes = rng.integers(0, 65, n).tolist()
    elif mode == "tensor":
        sizes = [int(a) << int(k) for a, k in zip(rng.integers(1, 8, n), rng.integers(0, 24, n))]
    elif mode == "lognormal":
        sizes = np.rint(4096 * np.exp(1.5 * rng.standard_normal(n))).astype(np.int64).tolist()
    elif mode == "large":  # uniform below 2**k, k uniform in [20, 40]
        sizes = rng.integers(0, np.left_shift(1, rng.integers(20, 41, n))).tolist()
    elif mode == "mixed":  # k uniform in [0, 40]: from zero to 2**40
        sizes = rng.integers(0, np.left_shift(1, rng.integers(0, 41, n))).tolist()
    else:  # near the representable limit: the model may refuse these (ProblemError)
        near = [_LIMIT - 1, _LIMIT // 2, _LIMIT // 2 + 1, _LIMIT // n if n else 1, 2**61 - 7,
                2**53 + 1, 2**40]
        sizes = [int(rng.choice(near)) if rng.random() < 0.5 else int(rng.integers(0, 1 << 40))
                 for _ in range(n)]
    zf = float(rng.choice([0.0, 0.0, 0.1, 0.5, 1.0], p=[0.5, 0.2, 0.15, 0.1, 0.05]))
    zero = (rng.random(n) < zf).tolist()
    sizes = [0 if z else int(s) for s, z in zip(sizes, zero)]
    return sizes, f"sizes={mode} zero_fraction={zf}"


def _lifetimes(rng: np.random.Generator, n: int) -> tuple[list[tuple[int, int]], str]:
    shape = str(rng.choice(["random", "same", "chain", "nested", "staircase", "point", "wide",
                            "mixed"], p=[0.4, 0.08, 0.08, 0.08, 0.1, 0.08, 0.06, 0.12]))
    if shape == "random":  # the law of planners.random_problems: uniform starts, geometric lengths
        mean = float(rng.choice([1.0, 3.0, 10.0, 50.0]))
        starts = rng.integers(0, int(rng.integers(1, 2 * n + 2)), n).tolist()
        lengths = rng.geometric(1.0 / mean, n).tolist()
        out = [(s, s + k) for s, k in zip(starts, lengths)]
    elif shape == "same":
        s = int(rng.integers(0, 100))
        e = s + int(rng.integers(1, 100))
        out = [(s, e)] * n
    elif shape == "chain":
        out = [(i, i + 1) for i in range(n)]
    elif shape == "nested":
        out = [(i, 2 * n - i) for i in range(n)]
    elif shape == "staircase":
        k = int(rng.integers(1, 6))
        out = [(i, i + k) for i in range(n)]
    elif shape == "point":
        out = [(int(t), int(t) + 1) for t in rng.integers(0, max(n // 2, 1), n)]
    elif shape == "wide":  # huge step numbers
        base = int(rng.choice([1 << 40, _LIMIT - 4 * n - 8, 1 << 61]))
        out = []
        for _ in range(n):
            s = base + int(rng.integers(0, 2 * n + 1))
            out.append((s, min(s + int(rng.integers(1, n + 2)), _LIMIT - 1)))
    else:
        out = []
        for _ in range(n):
            s = int(rng.integers(0, n + 1))
            length = 1 if rng.random() < 0.3 else int(rng.integers(1, n + 2))
            out.append((s, s + length))
    order = rng.permutation(n).tolist() if rng.random() < 0.5 else list(range(n))
    return [out[i] for i in order], f"lifetimes={shape}"


def _aliases(rng: np.random.Generator, bufs: list, default_align: int, valid: bool) -> dict:
    """A random alias forest over ``bufs`` (ids ``b0``...); with ``valid=False`` one link may
    break a rule (the model must refuse it)."""
    n = len(bufs)
    perm = rng.permutation(n).tolist()
    acc: dict[int, int] = {}
    out: dict[str, tuple[str, int]] = {}
    for pos in range(1, n):
        c = perm[pos]
        if rng.random() > 0.4:
            continue
        p = perm[int(rng.integers(0, pos))]
        cb, pb = bufs[c], bufs[p]
        room = pb.size - cb.size
        a = cb.alignment or default_align
        base = acc.get(p, 0)
        if room < 0:
            continue
        # delta in [0, room] with (base + delta) % a == 0
        first = (-base) % a
        if first > room:
            continue
        steps = (room - first) // a
        delta = first + a * int(rng.integers(0, min(steps, 1 << 40) + 1))
        out[cb.id] = (pb.id, delta)
        acc[c] = base + delta
    if not valid and bufs:
        c = int(rng.integers(0, n))
        kind = str(rng.choice(["self", "unknown", "outside", "negative", "cycle"]))
        cid = bufs[c].id
        if kind == "self":
            out[cid] = (cid, 0)
        elif kind == "unknown":
            out[cid] = ("nope", 0)
        elif kind == "outside":
            p = int(rng.integers(0, n))
            out[cid] = (bufs[p].id, bufs[p].size + 1)
        elif kind == "negative":
            out[cid] = (bufs[(c + 1) % n].id, -1)
        elif n >= 2:
            out[bufs[0].id] = (bufs[1].id, 0)
            out[bufs[1].id] = (bufs[0].id, 0)
    return out


def soak_problem(seed: int, index: int, exact: bool = False):
    """The random problem of soak item ``index`` (``planners.model.Problem``) and a description.

    Deterministic in ``(seed, index, exact)``. Raises :class:`planners.errors.ProblemError` when
    the drawn problem breaks a rule of the model (deliberately bad aliases, sizes too large): the
    soak counts that as a clean refusal.
    """
    from planners.model import Buffer, Problem

    rng = np.random.default_rng([seed, 0, index])
    if exact:
        n = int(rng.integers(0, EXACT_MAX_N + 1))
    else:
        r = rng.random()
        n = (int(rng.integers(0, 17)) if r < 0.7 else int(rng.integers(17, 65)) if r < 0.95
             else int(rng.integers(65, 257)) if r < 0.995 else int(rng.integers(257, 401)))
    sizes, sdesc = _sizes(rng, n)
    lifes, ldesc = _lifetimes(rng, n)
    default_align = _alignments(rng, 1)[0]
    per_buffer = rng.random() < 0.3
    own = _alignments(rng, n) if per_buffer else [0] * n
    own = [a if per_buffer and r < 0.5 else None for a, r in zip(own, rng.random(n).tolist())]
    resident = (rng.random(n) < 0.05).tolist()
    bufs = [
        Buffer(f"b{i}", s, e, z, a, "resident" if res else "activation")
        for i, ((s, e), z, a, res) in enumerate(zip(lifes, sizes, own, resident))
    ]
    aliases = None
    adesc = ""
    if rng.random() < 0.25 and n >= 2:
        valid = rng.random() < 0.9
        aliases = _aliases(rng, bufs, default_align, valid)
        adesc = f" aliases={len(aliases)}{'' if valid else ' (one deliberately bad)'}"
    p = Problem(bufs, alignment=default_align, name=f"soak-{seed}-{index}", aliases=aliases)
    cap_mode = str(rng.choice(["none", "below", "lb", "slack", "naive"],
                              p=[0.8, 0.04, 0.06, 0.06, 0.04]))
    desc = f"n={n} {sdesc} {ldesc} alignment={default_align} per_buffer_align={per_buffer}{adesc}"
    return p, cap_mode, desc, rng


def _with_capacity(p, cap_mode: str, rng, need: bool):
    """Attach a capacity (bytes) chosen relative to the independent lower bound."""
    from planners.model import Problem

    if cap_mode == "none" and not need:
        return p
    lb = lower_bound_ints(p)
    naive = sum(_round_up(z, a) for (_, _, z, a) in _groups(p)[0])
    if cap_mode in ("none", "lb"):
        cap = lb
    elif cap_mode == "below":
        cap = max(lb - 1 - int(rng.integers(0, 8)), 0)
    elif cap_mode == "slack":
        cap = lb + lb // int(rng.integers(2, 9))
    else:
        cap = naive
    cap = min(cap, _LIMIT - 1)
    return Problem(p.buffers, capacity=cap, alignment=p.alignment, name=p.name,
                   aliases=p.aliases or None)


# --------------------------------------------------------------------------------------------
# Independent checks, Python integers only
# --------------------------------------------------------------------------------------------
def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def _align_of(p, b) -> int:
    return p.alignment if b.alignment is None else b.alignment


def _groups(p) -> tuple[list[tuple[int, int, int, int]], list[int], list[int]]:
    """Alias groups of ``p`` computed from ``p.buffers`` and ``p.aliases`` alone.

    Returns ``(items, root, acc)``: one ``(start, end, size, alignment)`` per group (hull of the
    members' half-open lifetimes, the root's size, lcm of the members' alignments; in order of
    the roots), and per buffer its root index and its byte offset from the root.
    """
    index = {b.id: i for i, b in enumerate(p.buffers)}
    parent = {index[c]: (index[q], d) for c, (q, d) in p.aliases.items()}
    n = len(p.buffers)
    root, acc = list(range(n)), [0] * n
    for i in range(n):
        j, d, hops = i, 0, 0
        while j in parent:
            q, dj = parent[j]
            d += dj
            j = q
            hops += 1
            if hops > n:
                raise AssertionError(f"alias cycle through buffer {p.buffers[i].id!r}")
        root[i], acc[i] = j, d
    items: dict[int, list[int]] = {}
    for i in range(n):
        b = p.buffers[i]
        r = root[i]
        a = _align_of(p, b)
        if r not in items:
            rb = p.buffers[r]
            items[r] = [b.start, b.end, rb.size, a]
        else:
            it = items[r]
            it[0], it[1], it[3] = min(it[0], b.start), max(it[1], b.end), math.lcm(it[3], a)
    return [tuple(items[r]) for r in sorted(items)], root, acc


def _peak(items: list[tuple[int, int, int]]) -> int:
    """Max over steps of the summed sizes of ``(start, end, size)`` live at the step."""
    events = sorted([(s, 1, z) for s, _, z in items] + [(e, 0, -z) for _, e, z in items])
    best = cur = 0
    for _, _, dz in events:  # at equal steps ends (0) come before starts (1): half-open
        cur += dz
        best = max(best, cur)
    return best


def lower_bound_ints(p) -> int:
    """The lower bound of :func:`planners.bounds.lower_bound`, recomputed in Python integers.

    Max over steps of live bytes of the alias groups, or the padded peak when larger: every offset
    is a multiple of ``g`` (gcd of the non-empty groups' alignments), so every buffer of a stack
    but the top one takes its size rounded up to ``g``; the peak of rounded sizes minus the
    largest rounding is also a bound (bytes).
    """
    items, _, _ = _groups(p)
    if not items:
        return 0
    raw = _peak([(s, e, z) for s, e, z, _ in items])
    g = 0
    for _, _, z, a in items:
        if z > 0:
            g = math.gcd(g, a)
    g = g or 1
    rounded = [(s, e, _round_up(z, g)) for s, e, z, _ in items]
    slack = max(_round_up(z, g) - z for _, _, z, _ in items)
    return max(raw, _peak(rounded) - slack)


def check_plan_ints(p, offsets) -> str | None:
    """First rule of the interval model that ``offsets`` break, or ``None``.

    All pairs of alias groups with overlapping half-open lifetimes and non-zero sizes must be
    disjoint in address; every offset is an integer ``>= 0`` and a multiple of the buffer's
    alignment; every alias child sits at its parent's offset plus delta. ``O(n**2)`` worst case
    (pairs are visited in start order, each buffer against those starting before it ends).
    """
    n = len(p.buffers)
    offs = [int(o) for o in offsets]
    if len(offs) != n:
        return f"{len(offs)} offsets for {n} buffers"
    for b, o in zip(p.buffers, offs):
        if o < 0:
            return f"buffer {b.id!r}: negative offset {o}"
        if o % _align_of(p, b):
            return f"buffer {b.id!r}: offset {o} not a multiple of {_align_of(p, b)}"
    index = {b.id: i for i, b in enumerate(p.buffers)}
    for c, (q, d) in p.aliases.items():
        if offs[index[c]] != offs[index[q]] + d:
            return f"alias {c!r}: offset {offs[index[c]]} != {q!r} {offs[index[q]]} + {d}"
    items, root, acc = _groups(p)
    for i, b in enumerate(p.buffers):
        if acc[i] + b.size > p.buffers[root[i]].size:
            return f"alias {b.id!r}: extends past its root {p.buffers[root[i]].id!r}"
    boxes = sorted(
        (s, e, offs[r], offs[r] + z, p.buffers[r].id)
        for r, (s, e, z, _) in zip(sorted(set(root)), items)
        if z > 0
    )
    # every pair; sorted by start, so the inner loop stops at the first box starting after e1
    for x in range(len(boxes)):
        s1, e1, lo1, hi1, id1 = boxes[x]
        for y in range(x + 1, len(boxes)):
            s2, e2, lo2, hi2, id2 = boxes[y]
            if s2 >= e1:
                break
            if lo1 < hi2 and lo2 < hi1:
                return (f"{id1!r} [{lo1}, {hi1}) and {id2!r} [{lo2}, {hi2}) overlap while both "
                        f"live in [{max(s1, s2)}, {min(e1, e2)})")
    return None


def _arena_ints(p, offsets) -> int:
    return max([int(o) + b.size for b, o in zip(p.buffers, offsets) if b.size > 0], default=0)


def brute_force_optimum(p, node_limit: int = 20_000, seconds: float = 0.5) -> int | None:
    """Minimum arena of ``p`` (bytes) by branch and bound over placement orders, or ``None``.

    Each order places every non-empty alias group at its lowest aligned offset that collides with
    no group placed before it and live at the same time, and only orders whose offsets come out
    non-decreasing (ties by index) are explored. That loses no optimum: some optimal layout has
    no group that can move to a lower aligned offset (moving groups down ends), and placing its
    groups in (offset, index) order reproduces it exactly, since a lower fit for a group would
    collide with nothing above it either. ``None`` when more than :data:`BRUTE_MAX` non-empty
    groups, more than ``node_limit`` search nodes or more than ``seconds`` of search.
    """
    items = [it for it in _groups(p)[0] if it[2] > 0]
    m = len(items)
    if m > BRUTE_MAX:
        return None
    if m == 0:
        return 0
    conflict = [[i != j and items[i][0] < items[j][1] and items[j][0] < items[i][1]
                 for j in range(m)] for i in range(m)]
    lb = lower_bound_ints(p)
    best = [math.inf]
    nodes = [0]
    deadline = time.perf_counter() + seconds
    off = [0] * m
    placed: list[int] = []

    def lowest(i: int) -> int:
        z, a = items[i][2], items[i][3]
        cands = sorted({0} | {_round_up(off[j] + items[j][2], a) for j in placed if conflict[i][j]})
        for c in cands:
            if all(not conflict[i][j] or off[j] + items[j][2] <= c or c + z <= off[j]
                   for j in placed):
                return c
        raise AssertionError("unreachable: the highest candidate always fits")

    def dfs(top: int, last: tuple[int, int]) -> bool:
        nodes[0] += 1
        if nodes[0] > node_limit or (nodes[0] % 256 == 0 and time.perf_counter() > deadline):
            return False
        if len(placed) == m:
            best[0] = min(best[0], top)
            return True
        for i in range(m):
            if i in placed:
                continue
            c = lowest(i)
            t = max(top, c + items[i][2])
            if t >= best[0] or (c, i) < last:  # canonical: (offset, index) non-decreasing
                continue
            off[i] = c
            placed.append(i)
            ok = dfs(t, (c, i))
            placed.pop()
            if not ok:
                return False
            if best[0] == lb:
                return True
        return True

    return int(best[0]) if dfs(0, (-1, -1)) and best[0] != math.inf else None


def _pin_conflict(p) -> str | None:
    """Why the pins of ``p`` alone admit no plan, or ``None``: a pin that is negative or not a
    multiple of its buffer's alignment, or two pinned non-empty buffers live at the same step
    whose address ranges ``[pin, pin + size)`` overlap. ``O(k log k + overlapping pairs)`` for
    ``k`` pinned buffers (pairs are visited in start order)."""
    pinned = [(b.start, b.end, int(q), int(q) + b.size, b) for b, q in zip(p.buffers, p.pins.tolist())
              if q >= 0 or q < -1]
    for _, _, lo, _, b in pinned:
        if lo < 0 or lo % _align_of(p, b):
            return f"buffer {b.id!r}: pin {lo} is negative or not a multiple of {_align_of(p, b)}"
    pinned = sorted((x for x in pinned if x[4].size > 0), key=lambda x: x[0])
    for i, (_s, e, lo, hi, b) in enumerate(pinned):
        for s2, _, lo2, hi2, b2 in pinned[i + 1:]:
            if s2 >= e:
                break
            if lo < hi2 and lo2 < hi:
                return f"pins of {b.id!r} and {b2.id!r} overlap while both are live"
    return None


def _check_pinned(p, plan) -> tuple[str, str]:
    """(outcome, detail) of a plan of a problem with pins (and hints, which bind nothing): the
    bound is at least max live bytes and every pin's top, never above a valid arena; a plan
    honours every pin; ``infeasible`` without a capacity only when :func:`_pin_conflict`."""
    from planners.model import STATUSES

    st = plan.status
    if st not in STATUSES:
        return "wrong_bound", f"unknown status {st!r}"
    items, _, _ = _groups(p)
    raw = _peak([(s, e, z) for s, e, z, _ in items]) if items else 0
    tops = max((int(q) + b.size for b, q in zip(p.buffers, p.pins.tolist()) if q >= 0),
               default=0)
    if plan.lower_bound < max(raw, tops):
        return "wrong_bound", (f"reported lower bound {plan.lower_bound} below max live {raw} or "
                               f"the highest pinned top {tops}")
    if st in ("infeasible", "timeout", "skipped"):
        if st == "infeasible" and p.capacity is None and _pin_conflict(p) is None:
            return "wrong_bound", "infeasible without a capacity, and no two pins collide"
        return "ok", ""
    offs = plan.offsets.tolist()
    bad = check_plan_ints(p, offs)
    if bad:
        return "invalid", bad
    for b, q, o in zip(p.buffers, p.pins.tolist(), offs):
        if q >= 0 and int(o) != int(q):
            return "invalid", f"buffer {b.id!r}: offset {o}, pinned at {q}"
    arena = _arena_ints(p, offs)
    if plan.arena_size != arena or arena < plan.lower_bound:
        return "wrong_bound", f"arena_size {plan.arena_size}, recomputed {arena}, lower bound " \
                              f"{plan.lower_bound}"
    return "ok", ""


def _check(p, plan, brute: bool) -> tuple[str, str]:
    """(outcome, detail) of one returned plan (problems with pins: :func:`_check_pinned`)."""
    from planners.model import STATUSES

    feats = getattr(p, "features", frozenset())
    if feats and feats <= {"pins", "hints"}:
        return _check_pinned(p, plan)
    if feats:
        return "wrong_bound", f"the soak cannot recheck problems with {sorted(feats)}"
    lb = lower_bound_ints(p)
    st = plan.status
    if st not in STATUSES:
        return "wrong_bound", f"unknown status {st!r}"
    if plan.lower_bound != lb:
        return "wrong_bound", f"reported lower bound {plan.lower_bound} != recomputed {lb}"
    has_plan = st not in ("infeasible", "timeout", "skipped")
    arena = _arena_ints(p, plan.offsets.tolist()) if has_plan else None
    if has_plan:
        bad = check_plan_ints(p, plan.offsets.tolist())
        if bad:
            return "invalid", bad
        if plan.arena_size != arena:
            return "wrong_bound", f"arena_size {plan.arena_size} != recomputed {arena}"
        if arena < lb:
            return "wrong_bound", f"arena {arena} below the lower bound {lb}"
        if plan.best_bound is None or plan.best_bound > arena:
            return "wrong_bound", f"best_bound {plan.best_bound} above arena {arena} ({st})"
        if st == "optimal" and arena != plan.best_bound:
            return "wrong_bound", f"optimal but arena {arena} != best_bound {plan.best_bound}"
        over = p.capacity is not None and arena > p.capacity
        if over != (st == "over_capacity"):
            return "wrong_bound", f"status {st} with arena {arena}, capacity {p.capacity}"
    elif st == "infeasible" and p.capacity is None:
        return "wrong_bound", "infeasible without a capacity"
    if brute:
        opt = brute_force_optimum(p)
        if opt is not None:
            if lb > opt:
                return "wrong_bound", f"recomputed lower bound {lb} above brute-force optimum {opt}"
            if plan.best_bound is not None and plan.best_bound > opt:
                return "wrong_bound", f"best_bound {plan.best_bound} above the optimum {opt} ({st})"
            if has_plan and arena < opt:
                return "invalid", f"arena {arena} below the brute-force optimum {opt}"
            if st == "optimal" and arena != opt:
                return "wrong_bound", f"optimal arena {arena} != brute-force optimum {opt}"
            if st == "infeasible" and p.capacity is not None and opt <= p.capacity:
                return "wrong_bound", f"infeasible, yet the optimum {opt} fits {p.capacity}"
    return "ok", ""


# --------------------------------------------------------------------------------------------
# Planner runs
# --------------------------------------------------------------------------------------------
def _planner_params(name: str, rng, has_capacity: bool, exact_time: float) -> dict:
    from planners.greedy import resolve_engine
    from planners.registry import PLANNERS

    names = PLANNERS[name]._param_names()
    extra: dict[str, Any] = {}
    if "engine" in names:  # both placement engines of the greedy family, when the C one is built
        extra["engine"] = str(rng.choice(["c", "python"] if resolve_engine() == "c"
                                         else ["python"]))
    if "workers" in names:  # one thread or process per soak worker
        extra["workers"] = 1
    if "time_limit" in names:
        extra["time_limit"] = exact_time
    return {**_own_params(name, rng, has_capacity, exact_time), **extra}


def _own_params(name: str, rng, has_capacity: bool, exact_time: float) -> dict:
    from planners.greedy import FITS, ORDERS

    if name == "greedy":
        return {"order": str(rng.choice(list(ORDERS))), "fit": str(rng.choice(list(FITS)))}
    if name == "chaitin":
        return {"spill_rule": str(rng.choice(["cost_degree", "max_degree"]))}
    if name == "freelist_bump":
        return {"granule": int(rng.choice([1, 16, 64, 3]))}
    if name == "cpsat":
        modes = ["auto", "minimize"] + (["decide"] if has_capacity else [])
        return {"formulation": str(rng.choice(["nooverlap2d", "pairwise"])),
                "mode": str(rng.choice(modes)), "time_limit": exact_time, "workers": 1,
                "warm_start": bool(rng.random() < 0.7)}
    if name == "ilp_blocks":
        return {"backend": str(rng.choice(["ortools", "pulp"])), "time_limit": exact_time}
    if name == "milp_offsets":
        return {"time_limit": exact_time, "warm_start": bool(rng.random() < 0.7)}
    if name == "exact_search":
        params: dict[str, Any] = {"time_limit": exact_time}
        for sw in ("canonical_only", "section_inference", "dynamic_ordering", "check_dominance",
                   "decompose"):
            if rng.random() < 0.15:
                params[sw] = False
        return params
    if name == "minimize":
        if rng.random() < 0.3:
            return {"solver": "cpsat", "solver_params": {"workers": 1}, "time_limit": exact_time}
        return {"time_limit": exact_time}
    return {}


def _classify_exception(e: BaseException) -> str:
    from planners.errors import InvalidPlanError, MemplanError

    if isinstance(e, InvalidPlanError):
        return "invalid"
    if isinstance(e, MemplanError):
        return "refused"
    return "traceback"


def _tb(e: BaseException) -> str:
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return text[-2500:]


def _run_planner_item(seed: int, index: int, cfg: dict) -> dict:
    from planners.errors import CapacityError, ProblemError
    from planners.registry import get_planner

    schedule = cfg["schedule"]
    name = schedule[index % len(schedule)]
    exact = name in EXACT
    out: dict[str, Any] = {"kind": "planner", "target": name, "index": index}
    try:
        p, cap_mode, desc, rng = soak_problem(seed, index, exact=exact)
        from planners.registry import PLANNERS

        p = _with_capacity(p, cap_mode, rng, need=PLANNERS[name].requires_capacity)
    except ProblemError as e:
        out.update(outcome="refused", detail=f"model refused the problem: {e}", desc="")
        return out
    except Exception as e:  # noqa: BLE001 - a crash while building a problem is a finding
        out.update(outcome="traceback", detail=_tb(e), desc="building the problem")
        return out
    out["desc"] = f"{desc} capacity={p.capacity} ({cap_mode})"
    params = _planner_params(name, rng, p.capacity is not None, cfg["exact_time"])
    out["params"] = repr(params)
    out["problem"] = _problem_text(p)
    t0 = time.perf_counter()
    try:
        plan = get_planner(name, **params).plan(p)
    except CapacityError as e:
        lb = lower_bound_ints(p)
        if p.capacity is not None and lb <= p.capacity:
            out.update(outcome="wrong_bound", detail=f"CapacityError with capacity {p.capacity} "
                       f">= lower bound {lb}: {e}")
        else:
            out.update(outcome="refused", detail=str(e))
        return out
    except Exception as e:  # noqa: BLE001
        kind = _classify_exception(e)
        out.update(outcome=kind, detail=str(e) if kind == "refused" else _tb(e))
        return out
    finally:
        out["run_seconds"] = time.perf_counter() - t0
    brute = exact or index % 10 == 0
    outcome, detail = _check(p, plan, brute)
    out.update(outcome=outcome, detail=detail, status=plan.status)
    return out


def _problem_text(p) -> str:
    """A small reproducible text of a problem (only kept for failures)."""
    if len(p.buffers) > 64:
        return ""
    lines = [f"# capacity={p.capacity} alignment={p.alignment} aliases={dict(p.aliases)}",
             "id,lower,upper,size,alignment,kind"]
    lines += [f"{b.id},{b.start},{b.end},{b.size},{b.alignment or ''},{b.kind}"
              for b in p.buffers]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Mutated files
# --------------------------------------------------------------------------------------------
_HUGE_TEXT = [str(2**63), str(-(2**63) - 1), str(2**62), str(2**62 - 1), "9" * 40, str(-(2**70)),
              str(2**64), "-1", "0"]
_BAD_TEXT = ["abc", "1.5", "1e3", "", " ", "0x10", "\u0663", "1_000", "NaN", "inf", "-0", "+5",
             "1 2", '"7"', "\u00a0", "\x00", "1" * 5000, "💥"]


def _csv_seed(rng) -> tuple[str, str]:
    from planners.io import write_minimalloc_csv
    from planners.random_problems import random_problem

    n = int(rng.integers(1, 21))
    p = random_problem(n, seed=int(rng.integers(1 << 31)),
                       mean_lifetime=float(rng.choice([1.0, 3.0, 10.0])),
                       size_dist=str(rng.choice(["lognormal", "uniform", "pow2"])),
                       max_size=int(rng.choice([64, 1 << 20, 1 << 40])),
                       zero_fraction=float(rng.choice([0.0, 0.2])),
                       alignment=int(rng.choice([1, 1, 4, 16, 3])))
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "seed.csv"
        write_minimalloc_csv(p, f)
        return f.read_text(), f"random_problem n={n}"


def _mutate_csv(rng, text: str) -> tuple[bytes, str, str]:
    """(file bytes, file name, description) of one mutated MiniMalloc CSV."""
    rows = [r for r in csv.reader(io.StringIO(text))]
    name = "soak.csv"
    ops = []
    for _ in range(int(rng.choice([1, 1, 1, 2, 3]))):
        op = str(rng.choice([
            "bad_field", "huge_field", "negative_size", "swap_bounds", "dup_id", "empty_id",
            "drop_column", "extra_column", "reorder_columns", "header_case", "dup_header",
            "extra_field", "missing_field", "truncate", "flip_bytes", "nul", "bom", "crlf",
            "blank_lines", "long_field", "open_quote", "alignment", "offset_column",
            "capacity_name", "header_only", "empty", "id_quotes",
        ]))
        ops.append(op)
        body = rows[1:]
        r = int(rng.integers(0, max(len(body), 1))) + 1
        c = int(rng.integers(0, max(len(rows[0]), 1)))
        try:
            if op == "bad_field" and len(rows) > 1:
                rows[r][c % len(rows[r])] = str(rng.choice(_BAD_TEXT))
            elif op == "huge_field" and len(rows) > 1:
                rows[r][c % len(rows[r])] = str(rng.choice(_HUGE_TEXT))
            elif op == "negative_size" and len(rows) > 1 and "size" in rows[0]:
                rows[r][rows[0].index("size")] = str(-int(rng.integers(1, 100)))
            elif op == "swap_bounds" and len(rows) > 1 and len(rows[r]) >= 3:
                rows[r][1], rows[r][2] = rows[r][2], rows[r][1]
            elif op == "dup_id" and len(rows) > 2:
                rows[r][0] = rows[1][0] if r != 1 else rows[2][0]
            elif op == "empty_id" and len(rows) > 1:
                rows[r][0] = ""
            elif op == "drop_column":
                for row in rows:
                    if len(row) > c:
                        del row[c]
            elif op == "extra_column":
                rows[0].append(str(rng.choice(["note", "alignment", "offset", ""])))
                for row in rows[1:]:
                    row.append(str(int(rng.integers(0, 64))))
            elif op == "reorder_columns":
                perm = rng.permutation(len(rows[0])).tolist()
                rows = [[row[i] for i in perm if i < len(row)] for row in rows]
            elif op == "header_case":
                rows[0] = [h.upper() if rng.random() < 0.5 else f" {h} " for h in rows[0]]
            elif op == "dup_header" and rows[0]:
                rows[0][c % len(rows[0])] = rows[0][(c + 1) % len(rows[0])]
            elif op == "extra_field" and len(rows) > 1:
                rows[r].append("1")
            elif op == "missing_field" and len(rows) > 1 and rows[r]:
                rows[r].pop()
            elif op == "alignment":
                if "alignment" not in rows[0]:
                    rows[0].append("alignment")
                    for row in rows[1:]:
                        row.append("1")
                k = rows[0].index("alignment")
                if len(rows) > 1 and len(rows[r]) > k:
                    rows[r][k] = str(rng.choice(["0", "-4", "x", "3", str(2**62), str(2**70), "",
                                                 "1048576"]))
            elif op == "offset_column":
                rows[0].append("offset")
                for row in rows[1:]:
                    row.append(str(rng.choice(["0", "-1", "x", "16"])))
            elif op == "capacity_name":
                name = "soak." + str(rng.choice(["0", "1", "1048576", "9" * 30, str(2**62),
                                                 str(2**61)])) + ".csv"
            elif op == "header_only":
                rows = rows[:1]
            elif op == "id_quotes" and len(rows) > 1:
                rows[r][0] = str(rng.choice(['a,b', 'x"y', "line\nbreak", " ", "é"]))
        except (IndexError, ZeroDivisionError, ValueError):
            ops[-1] += "(not applicable)"  # an earlier mutation removed its target
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    text = buf.getvalue()
    for op in ops:
        if op == "truncate" and text:
            text = text[: int(rng.integers(0, len(text)))]
        elif op == "nul" and text:
            k = int(rng.integers(0, len(text)))
            text = text[:k] + "\x00" + text[k:]
        elif op == "bom":
            text = "\ufeff" + text
        elif op == "crlf":
            text = text.replace("\n", "\r\n").replace("\r\r\n", "\r\n")
        elif op == "blank_lines":
            text = text.replace("\n", "\n\n", int(rng.integers(1, 4)))
        elif op == "long_field":
            k = text.find("\n") + 1
            text = text[:k] + "x" * int(rng.choice([200_000, 1_000])) + text[k:]
        elif op == "open_quote" and text:
            k = int(rng.integers(0, len(text)))
            text = text[:k] + '"' + text[k:]
        elif op == "empty":
            text = str(rng.choice(["", " ", "\n\n", ",,,"]))
    data = text.encode("utf-8", "surrogatepass")
    if "flip_bytes" in ops and data:
        data = _flip(rng, data, int(rng.integers(1, 6)))
    return data, name, "+".join(ops)


def _flip(rng, data: bytes, k: int) -> bytes:
    b = bytearray(data)
    for _ in range(k):
        i = int(rng.integers(0, len(b)))
        b[i] = int(rng.integers(0, 256))
    return bytes(b)


def _bytes_mutation(rng, data: bytes, keep_header: int = 0) -> tuple[bytes, str]:
    op = str(rng.choice(["truncate", "flip", "insert", "delete", "zero", "int32", "dup_region"]))
    b = bytearray(data)
    lo = min(keep_header, len(b))
    if len(b) <= lo + 4:
        return data[: len(data) // 2], "bytes:truncate"
    if op == "truncate":
        b = b[: int(rng.integers(0, len(b)))]
    elif op == "flip":
        for _ in range(int(rng.integers(1, 17))):
            i = int(rng.integers(lo, len(b)))
            b[i] ^= 1 << int(rng.integers(0, 8))
    elif op == "insert":
        i = int(rng.integers(lo, len(b) + 1))
        b[i:i] = bytes(rng.integers(0, 256, int(rng.integers(1, 64))).astype(np.uint8))
    elif op == "delete":
        i = int(rng.integers(lo, len(b)))
        del b[i: i + int(rng.integers(1, 64))]
    elif op == "zero":
        i = int(rng.integers(lo, len(b)))
        k = min(int(rng.integers(1, 256)), len(b) - i)
        b[i: i + k] = bytes(k)
    elif op == "int32":
        for _ in range(int(rng.integers(1, 5))):
            i = int(rng.integers(lo, max(len(b) - 4, lo + 1))) & ~3
            v = int(rng.choice([-1, 0, 1, 0x7FFFFFFF, -0x80000000, len(b), 1 << 20]))
            b[i: i + 4] = int(v).to_bytes(4, "little", signed=True)
    else:
        i = int(rng.integers(lo, len(b)))
        j = int(rng.integers(lo, len(b)))
        b[j:j] = b[i: i + int(rng.integers(1, 256))]
    return bytes(b), f"bytes:{op}"


def _onnx_seeds() -> list[tuple[str, bytes]]:
    """The nine light ONNX models of the onnx wheel and a few small models built here."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    seeds = []
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    for f in sorted(light.glob("*.onnx")):
        seeds.append((f.name, f.read_bytes()))

    def model(nodes, inputs, outputs, inits=(), name="g"):
        g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        return m.SerializeToString()

    vi = helper.make_tensor_value_info
    f32 = TensorProto.FLOAT
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    seeds.append(("chain", model(
        [helper.make_node("Relu", ["x"], ["a"], name="r0"),
         helper.make_node("MatMul", ["a", "w"], ["b"], name="mm"),
         helper.make_node("Add", ["b", "a"], ["y"], name="add")],
        [vi("x", f32, [1, 4])], [vi("y", f32, [1, 4])], [w])))
    k = numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "k")
    seeds.append(("conv", model(
        [helper.make_node("Conv", ["x", "k"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2],
                          strides=[2, 2])],
        [vi("x", f32, [1, 3, 16, 16])], [vi("y", f32, [1, 8, 8, 8])], [k])))
    seeds.append(("branch", model(
        [helper.make_node("Sigmoid", ["x"], ["s"], name="s"),
         helper.make_node("Tanh", ["x"], ["t"], name="t"),
         helper.make_node("Concat", ["s", "t"], ["c"], name="cat", axis=1),
         helper.make_node("Shape", ["c"], ["sh"], name="shape"),
         helper.make_node("Reshape", ["c", "sh"], ["y"], name="reshape")],
        [vi("x", f32, ["N", 5])], [vi("y", f32, [None, 10])])))
    seeds.append(("symbolic", model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        [vi("x", TensorProto.INT8, [2, 3])], [vi("y", TensorProto.INT8, [2, 3])])))
    # control flow: If with two branches reading the outer scope, a Loop, a Scan
    b, i64 = TensorProto.BOOL, TensorProto.INT64
    then_b = helper.make_graph([helper.make_node("Concat", ["a", "a"], ["t"], axis=0),
                                helper.make_node("ReduceSum", ["t", "ax"], ["ot"], keepdims=1)],
                               "then", [], [vi("ot", f32, [1, 64])],
                               [helper.make_tensor("ax", i64, [1], [0])])
    else_b = helper.make_graph([helper.make_node("Neg", ["a"], ["oe"])], "else", [],
                               [vi("oe", f32, [1, 64])])
    seeds.append(("if", model(
        [helper.make_node("Relu", ["x"], ["a"], name="relu"),
         helper.make_node("If", ["flag"], ["y"], name="if", then_branch=then_b,
                          else_branch=else_b)],
        [vi("x", f32, [1, 64]), vi("flag", b, [])], [vi("y", f32, [1, 64])])))
    body = helper.make_graph(
        [helper.make_node("Mul", ["s_in", "x"], ["t"]),
         helper.make_node("Add", ["t", "x"], ["s_out"]),
         helper.make_node("Relu", ["s_out"], ["scan_o"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", i64, []), vi("cond_in", b, []), vi("s_in", f32, [1, 16])],
        [vi("cond_out", b, []), vi("s_out", f32, [1, 16]), vi("scan_o", f32, [1, 16])])
    seeds.append(("loop", model(
        [helper.make_node("Relu", ["x0"], ["x"], name="relu"),
         helper.make_node("Loop", ["M", "cond", "s0"], ["s_fin", "scans"], name="loop",
                          body=body),
         helper.make_node("Add", ["s_fin", "x"], ["z"], name="add")],
        [vi("x0", f32, [1, 16]), vi("s0", f32, [1, 16])],
        [vi("z", f32, [1, 16]), vi("scans", f32, [None, 1, 16])],
        [helper.make_tensor("M", i64, [], [4]), helper.make_tensor("cond", b, [], [True])])))
    sbody = helper.make_graph(
        [helper.make_node("Mul", ["xs", "xs"], ["t"]),
         helper.make_node("Add", ["s_in", "t"], ["s_out"]),
         helper.make_node("Relu", ["s_out"], ["ys"])],
        "scan_body", [vi("s_in", f32, [1, 16]), vi("xs", f32, [1, 16])],
        [vi("s_out", f32, [1, 16]), vi("ys", f32, [1, 16])])
    seeds.append(("scan", model(
        [helper.make_node("Relu", ["x0"], ["X"], name="relu"),
         helper.make_node("Scan", ["s0", "X"], ["s_fin", "Y"], name="scan", body=sbody,
                          num_scan_inputs=1, scan_input_axes=[0]),
         helper.make_node("Sigmoid", ["Y"], ["z"], name="sig")],
        [vi("x0", f32, [5, 1, 16]), vi("s0", f32, [1, 16])],
        [vi("z", f32, [5, 1, 16]), vi("s_fin", f32, [1, 16])])))
    return seeds


_DIMS = [-1, 0, -(2**31), 2**31, 2**40, 2**62, 2**63 - 1, 1 << 20]


def _mutate_onnx(rng, data: bytes) -> tuple[bytes, str]:
    import onnx
    from onnx import helper

    if rng.random() < 0.25:
        return _bytes_mutation(rng, data)
    m = onnx.ModelProto()
    m.ParseFromString(data)
    g = m.graph
    ops = []
    for _ in range(int(rng.choice([1, 1, 2, 3]))):
        op = str(rng.choice(["dim", "dim_param", "drop_init", "cycle", "dup_output", "dup_node_name",
                             "dup_init", "dangling", "elem_type", "op_type", "opset", "attr",
                             "no_nodes", "reverse", "raw_data", "no_outputs", "init_dims",
                             "subgraph", "subgraph", "trip_count"]))
        ops.append(op)
        nodes = list(g.node)
        vis = list(g.input) + list(g.value_info) + list(g.output)
        if op == "dim":
            cand = [vi for vi in vis if vi.type.tensor_type.shape.dim]
            if cand:
                vi = cand[int(rng.integers(0, len(cand)))]
                dims = vi.type.tensor_type.shape.dim
                dims[int(rng.integers(0, len(dims)))].dim_value = int(rng.choice(_DIMS))
        elif op == "dim_param":
            cand = [vi for vi in vis if vi.type.tensor_type.shape.dim]
            if cand:
                vi = cand[int(rng.integers(0, len(cand)))]
                dims = vi.type.tensor_type.shape.dim
                dims[int(rng.integers(0, len(dims)))].dim_param = "Q"
        elif op == "init_dims" and len(g.initializer):
            t = g.initializer[int(rng.integers(0, len(g.initializer)))]
            if t.dims:
                t.dims[int(rng.integers(0, len(t.dims)))] = int(rng.choice(_DIMS))
        elif op == "drop_init" and len(g.initializer):
            del g.initializer[int(rng.integers(0, len(g.initializer)))]
        elif op == "cycle" and len(nodes) >= 1:
            i = int(rng.integers(0, len(nodes)))
            j = int(rng.integers(i, len(nodes)))
            if nodes[j].output and nodes[i].input:
                nodes[i].input[int(rng.integers(0, len(nodes[i].input)))] = nodes[j].output[0]
        elif op == "dup_output" and len(nodes) >= 2:
            i, j = rng.choice(len(nodes), 2, replace=False).tolist()
            if nodes[i].output and nodes[j].output:
                nodes[j].output[0] = nodes[i].output[0]
        elif op == "dup_node_name" and len(nodes) >= 2:
            nodes[1].name = nodes[0].name or "n"
            nodes[0].name = nodes[1].name
        elif op == "dup_init" and len(g.initializer):
            t = g.initializer.add()
            t.CopyFrom(g.initializer[int(rng.integers(0, len(g.initializer) - 1))])
        elif op == "dangling" and nodes:
            nd = nodes[int(rng.integers(0, len(nodes)))]
            if nd.input:
                nd.input[0] = "missing_tensor"
        elif op == "elem_type" and vis:
            vi = vis[int(rng.integers(0, len(vis)))]
            vi.type.tensor_type.elem_type = int(rng.choice([0, 8, 16, 17, 23, 99, 1]))
        elif op == "op_type" and nodes:
            nd = nodes[int(rng.integers(0, len(nodes)))]
            if rng.random() < 0.5:
                nd.op_type = str(rng.choice(["NoSuchOp", "", "Loop", "If", "Relu"]))
            else:
                nd.domain = "com.nosuch"
        elif op == "opset":
            if rng.random() < 0.3:
                del m.opset_import[:]
            else:
                for o in m.opset_import:
                    o.version = int(rng.choice([0, 1, 7, 9999, -1]))
        elif op == "attr" and nodes:
            nd = nodes[int(rng.integers(0, len(nodes)))]
            for a in nd.attribute:
                if a.ints:
                    a.ints[int(rng.integers(0, len(a.ints)))] = int(rng.choice(_DIMS))
                elif a.type == onnx.AttributeProto.INT:
                    a.i = int(rng.choice(_DIMS))
            if rng.random() < 0.3:
                nd.attribute.append(helper.make_attribute("bogus", [1, -2]))
        elif op == "no_nodes":
            del g.node[:]
        elif op == "reverse":
            rev = [onnx.NodeProto.FromString(nd.SerializeToString()) for nd in g.node][::-1]
            del g.node[:]
            g.node.extend(rev)
        elif op == "raw_data" and len(g.initializer):
            t = g.initializer[int(rng.integers(0, len(g.initializer)))]
            if t.raw_data:
                t.raw_data = t.raw_data[: int(rng.integers(0, len(t.raw_data)))]
            else:
                t.raw_data = b"\x01\x02\x03"
        elif op == "no_outputs":
            del g.output[:]
        elif op == "trip_count" and len(g.initializer):
            t = g.initializer[int(rng.integers(0, len(g.initializer)))]
            if t.data_type == onnx.TensorProto.INT64 and not t.dims:
                t.CopyFrom(helper.make_tensor(t.name, onnx.TensorProto.INT64, [],
                                              [int(rng.choice([-1, 0, 1, 2**40, 2**62]))]))
        elif op == "subgraph":
            subs = [a.g for nd in nodes for a in nd.attribute if a.type == onnx.AttributeProto.GRAPH]
            if subs:
                sg = subs[int(rng.integers(0, len(subs)))]
                what = str(rng.choice(["drop_node", "dangling", "drop_output", "dim", "drop_input",
                                       "outer_cycle"]))
                ops[-1] = f"subgraph:{what}"
                if what == "drop_node" and len(sg.node):
                    del sg.node[int(rng.integers(0, len(sg.node)))]
                elif what == "dangling" and len(sg.node) and sg.node[0].input:
                    sg.node[0].input[0] = "missing_tensor"
                elif what == "drop_output" and len(sg.output):
                    del sg.output[int(rng.integers(0, len(sg.output)))]
                elif what == "dim":
                    vis2 = [v for v in list(sg.input) + list(sg.output)
                            if v.type.tensor_type.shape.dim]
                    if vis2:
                        dims = vis2[int(rng.integers(0, len(vis2)))].type.tensor_type.shape.dim
                        dims[int(rng.integers(0, len(dims)))].dim_value = int(rng.choice(_DIMS))
                elif what == "drop_input" and len(sg.input):
                    del sg.input[int(rng.integers(0, len(sg.input)))]
                elif what == "outer_cycle" and len(sg.node) and sg.node[0].input and nodes:
                    sg.node[0].input[0] = nodes[-1].output[0] if nodes[-1].output else "y"
    out = m.SerializeToString()
    desc = "onnx:" + "+".join(ops)
    if rng.random() < 0.1:
        out, d2 = _bytes_mutation(rng, out)
        desc += "+" + d2
    return out, desc


def _tflite_seeds() -> list[tuple[str, bytes]]:
    from experiments.workloads import tflite_model_files

    return [(k, Path(f).read_bytes()) for k, f in tflite_model_files().items()]


def _tflite_fields(data: bytes) -> dict[str, list[tuple[int, int]]]:
    """Byte positions of int32 vectors and scalars of subgraph 0 (shapes, operator tensor
    indices, tensor types and buffers), found through the ``tflite`` flatbuffer accessors."""
    import tflite

    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    m = tflite.Model.GetRootAsModel(data, 0)
    sg = m.Subgraphs(0)

    def vec(tab, field_off, name):
        o = tab.Offset(field_off)
        if o:
            start = tab.Vector(o)
            out[name].append((start, tab.VectorLen(o)))

    def scalar(tab, field_off, name, width):
        o = tab.Offset(field_off)
        if o:
            out[name].append((tab.Pos + o, width))

    for j in range(min(sg.TensorsLength(), 400)):
        t = sg.Tensors(j)
        vec(t._tab, 4, "shape")
        scalar(t._tab, 6, "type", 1)
        scalar(t._tab, 8, "buffer", 4)
    for j in range(min(sg.OperatorsLength(), 400)):
        op = sg.Operators(j)
        scalar(op._tab, 4, "opcode", 4)
        vec(op._tab, 6, "op_inputs")
        vec(op._tab, 8, "op_outputs")
    vec(sg._tab, 6, "sg_inputs")
    vec(sg._tab, 8, "sg_outputs")
    return out


def _mutate_tflite(rng, data: bytes, fields: dict) -> tuple[bytes, str]:
    if rng.random() < 0.4 or not fields:
        return _bytes_mutation(rng, data, keep_header=8 if rng.random() < 0.8 else 0)
    b = bytearray(data)
    ops = []
    for _ in range(int(rng.choice([1, 1, 2, 3]))):
        kinds = [k for k, v in fields.items() if v]
        kind = str(rng.choice(kinds))
        pos, length = fields[kind][int(rng.integers(0, len(fields[kind])))]
        if kind == "type":
            b[pos] = int(rng.choice([17, 18, 19, 40, 200, 255, 9]))
        elif kind in ("buffer", "opcode"):
            v = int(rng.choice([-1, 0, 1 << 20, 0x7FFFFFFF, 3]))
            b[pos: pos + 4] = v.to_bytes(4, "little", signed=True)
        elif length:
            i = pos + 4 * int(rng.integers(0, length))
            vals = _DIMS[:3] + [2**31 - 1, 1 << 20, 7] if kind == "shape" else [-1, -2, 0, 1,
                                                                                 10**6, 2**31 - 1]
            v = int(rng.choice(vals))
            v = max(min(v, 2**31 - 1), -(2**31))
            b[i: i + 4] = v.to_bytes(4, "little", signed=True)
        ops.append(kind)
    return bytes(b), "tflite:" + "+".join(ops)


_CACHE: dict[str, Any] = {}


def mutated_file(seed: int, kind: str, index: int) -> tuple[bytes, str, str]:
    """``(bytes, file name, description)`` of mutated file ``index`` of importer ``kind``
    (``"csv"``, ``"onnx"`` or ``"tflite"``), deterministic in ``(seed, kind, index)``."""
    rng = np.random.default_rng([seed, 1 + IMPORTERS.index(kind), index])
    if kind == "csv":
        text, sdesc = _csv_seed(rng)
        data, name, desc = _mutate_csv(rng, text)
        return data, name, f"{sdesc}; {desc}"
    if kind == "onnx":
        if "onnx" not in _CACHE:
            _CACHE["onnx"] = _onnx_seeds()
        seeds = _CACHE["onnx"]
        sname, sdata = seeds[index % len(seeds)]
        data, desc = _mutate_onnx(rng, sdata)
        return data, "soak.onnx", f"seed {sname}; {desc}"
    seeds = _CACHE.get("tflite")
    if seeds is None:
        seeds = _CACHE["tflite"] = _tflite_seeds()
        _CACHE["tflite_fields"] = [_tflite_fields(d) for _, d in seeds]
    if not seeds:
        raise RuntimeError("no .tflite seed models (pip install pymicro-wakeword tflite)")
    k = index % len(seeds)
    sname, sdata = seeds[k]
    data, desc = _mutate_tflite(rng, sdata, _CACHE["tflite_fields"][k])
    return data, "soak.tflite", f"seed {sname}; {desc}"


def _import(kind: str, path: Path):
    if kind == "csv":
        from planners.io import read_minimalloc_csv

        return read_minimalloc_csv(path)
    if kind == "onnx":
        from experiments.workloads import onnx_problem

        return onnx_problem(path)
    from scheduling.tflite_import import tflite_problem

    return tflite_problem(path)


def _run_import_item(seed: int, kind: str, index: int, cfg: dict) -> dict:
    from planners.errors import CapacityError
    from planners.registry import get_planner

    out: dict[str, Any] = {"kind": "importer", "target": kind, "index": index}
    try:
        data, fname, desc = mutated_file(seed, kind, index)
    except Exception as e:  # noqa: BLE001 - a broken generator is the soak's bug, not the importer's
        out.update(kind="harness", target=f"{kind} mutation", outcome="traceback",
                   detail="mutation failed: " + _tb(e), desc="")
        return out
    out["desc"] = desc
    if len(data) <= 300_000:
        out["data"] = base64.b64encode(data).decode()
        out["fname"] = fname
    tmp = Path(cfg.get("tmpdir") or tempfile.gettempdir()) / f"soak-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / fname
    path.write_bytes(data)
    t0 = time.perf_counter()
    try:
        p = _import(kind, path)
    except Exception as e:  # noqa: BLE001
        k = _classify_exception(e)
        out.update(outcome=k, detail=str(e)[:500] if k == "refused" else _tb(e))
        return out
    finally:
        out["run_seconds"] = time.perf_counter() - t0
        path.unlink(missing_ok=True)
    # Imported: the problem must give a correct bound and a valid plan.
    if p.n > 3000:
        out.update(outcome="ok", detail="imported (too large to check)")
        return out
    try:
        plan = get_planner("greedy_by_size").plan(p)
    except CapacityError as e:
        lb = lower_bound_ints(p)
        bad = p.capacity is not None and lb <= p.capacity
        out.update(outcome="wrong_bound" if bad else "refused", detail=str(e))
        return out
    except Exception as e:  # noqa: BLE001
        k = _classify_exception(e)
        out.update(outcome=k, detail="planning the import: " + (str(e) if k == "refused"
                                                                   else _tb(e)))
        return out
    outcome, detail = _check(p, plan, brute=False)
    out.update(outcome=outcome, detail=detail)
    return out


def run_item(seed: int, kind: str, index: int, cfg: dict | None = None) -> dict:
    """Run soak item ``index`` of ``kind`` (``"problem"`` or an importer name) and return its
    record: ``target``, ``outcome`` (one of :data:`OUTCOMES`), ``detail``, ``desc``,
    ``run_seconds`` (the planner's or importer's own wall time) and ``seconds`` (with the checks).

    Never raises for a failure of the code under test; ``run_seconds`` above the item's wall limit
    turns the outcome into ``hang`` (the checks here are not counted).
    """
    cfg = {**_default_cfg(), **(cfg or {})}
    t0 = time.perf_counter()
    if kind == "problem":
        rec = _run_planner_item(seed, index, cfg)
    else:
        rec = _run_import_item(seed, kind, index, cfg)
    rec["seconds"] = time.perf_counter() - t0
    rec.setdefault("run_seconds", 0.0)
    limit = _item_limit(cfg, rec["target"])
    if rec["run_seconds"] > limit:
        rec["detail"] = (f"took {rec['run_seconds']:.1f} s > limit {limit:.1f} s; "
                         f"outcome was {rec['outcome']}: {rec.get('detail', '')}")
        rec["outcome"] = "hang"
    if rec["outcome"] in ("ok", "refused"):  # inputs are only kept to reproduce failures
        for key in ("data", "problem"):
            rec.pop(key, None)
    return rec


def _default_cfg() -> dict:
    # kill_slack: seconds a single rerun may take beyond its wall limit before the pool kills it
    # (the checks of this module run in the same task); chunk_slack: seconds of a chunk's limit
    # besides half the exact planners' limits.
    return {"schedule": SCHEDULE, "exact_time": 0.5, "hang_limit": 30.0, "tmpdir": None,
            "kill_slack": 30.0, "chunk_slack": 120.0}


def _item_limit(cfg: dict, target: str) -> float:
    return cfg["hang_limit"] + (cfg["exact_time"] if target in EXACT else 0.0)


def _run_chunk(seed: int, kind: str, indices: list[int], cfg: dict) -> list[dict]:
    return [run_item(seed, kind, i, cfg) for i in indices]


def _init_worker(mem_bytes: int) -> None:
    """Cap the worker's address space so a runaway allocation fails instead of the machine."""
    try:
        import resource

        if mem_bytes > 0:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    except (ImportError, ValueError, OSError):
        pass


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------
def _items(problems: int, files: int) -> list[tuple[str, int]]:
    out = [("problem", i) for i in range(problems)]
    per = [files // 3 + (1 if k < files % 3 else 0) for k in range(3)]
    for kind, m in zip(IMPORTERS, per):
        out += [(kind, i) for i in range(m)]
    return out


def soak(
    problems: int = 100_000,
    files: int = 10_000,
    seed: int = 1,
    jobs: int = 2,
    chunk: int = 100,
    exact_time: float = 0.5,
    hang_limit: float = 30.0,
    heuristic_weight: int = 10,
    mem_limit_gb: float = 4.0,
    failures_dir: str | Path | None = None,
    max_failures: int = 3,
    progress: bool = True,
    kill_slack: float = 30.0,
    chunk_slack: float = 120.0,
) -> tuple[dict[tuple[str, str], Counter], list[dict], float, dict[tuple[str, str], dict]]:
    """Run the soak and return ``(counts, failures, seconds, busy)``.

    Parameters
    ----------
    problems, files : number of random problems and of mutated files (split evenly over
        :data:`IMPORTERS`).
    seed : every item is drawn from ``numpy.random.default_rng([seed, kind, index])``.
    jobs : worker processes (``0``: run in this process, without hang protection).
    chunk : items per pool task; a chunk that overruns or whose worker dies is rerun one item
        per task with the per-item limit.
    exact_time : time limit in seconds given to the exact planners.
    hang_limit : wall limit of a run in seconds (plus ``exact_time`` for exact planners).
    heuristic_weight : slots per heuristic planner in the round-robin schedule (exact planners
        get one each).
    mem_limit_gb : address-space limit of each worker (``RLIMIT_AS``), GiB; 0 for none.
    failures_dir : where to write the first ``max_failures`` failing inputs per
        (target, outcome); ``None`` writes none.
    progress : print progress lines to stderr.
    kill_slack : seconds beyond its wall limit after which the pool kills a single rerun (it
        also runs the checks of this module).
    chunk_slack : a chunk's limit in seconds is this plus half the limits of its exact runs.

    Returns
    -------
    counts : ``{(kind, target): Counter(outcome -> runs)}``
    failures : records of failing runs (outcomes other than ``ok`` and ``refused``)
    seconds : wall-clock seconds of the whole soak
    busy : ``{(kind, target): {"seconds": total, "max": longest, "max_index": its item}}``, wall
        times (s) of the planner or importer calls alone
    """
    cfg = {**_default_cfg(), "schedule": _schedule(heuristic_weight), "exact_time": exact_time,
           "hang_limit": hang_limit, "kill_slack": kill_slack, "chunk_slack": chunk_slack}
    items = _items(problems, files)
    replay_args = "".join(
        f" --{k.replace('_', '-')} {v}" for k, v, d in
        (("heuristic_weight", heuristic_weight, 10), ("exact_time", exact_time, 0.5),
         ("hang_limit", hang_limit, 30.0)) if v != d)
    t0 = time.perf_counter()
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    busy: dict[tuple[str, str], dict] = defaultdict(
        lambda: {"seconds": 0.0, "max": 0.0, "max_index": None})
    failures: list[dict] = []
    kept: Counter = Counter()
    done = [0]
    total = len(items)
    next_report = [0.0]

    def record(rec: dict) -> None:
        counts[(rec["kind"], rec["target"])][rec["outcome"]] += 1
        b, sec = busy[(rec["kind"], rec["target"])], rec.get("run_seconds") or 0.0
        b["seconds"] += sec
        if sec > b["max"]:
            b["max"], b["max_index"] = sec, rec["index"]
        done[0] += 1
        if rec["outcome"] not in ("ok", "refused"):
            failures.append(rec)
            key = (rec["target"], rec["outcome"])
            kept[key] += 1
            if failures_dir is not None and kept[key] <= max_failures:
                _write_failure(Path(failures_dir), seed, rec, replay_args)
        if progress and done[0] / total >= next_report[0]:
            next_report[0] += 0.05
            bad = sum(1 for f in failures)
            print(f"soak: {done[0]}/{total} runs, {bad} failures, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    # group by kind, chunk contiguous indices
    by_kind: dict[str, list[int]] = defaultdict(list)
    for kind, i in items:
        by_kind[kind].append(i)
    chunks = [(kind, idx[k: k + chunk]) for kind, idx in by_kind.items()
              for k in range(0, len(idx), chunk)]
    if jobs <= 0:
        for kind, idx in chunks:
            for rec in _run_chunk(seed, kind, idx, cfg):
                record(rec)
        return counts, failures, time.perf_counter() - t0, busy
    _pool_run(chunks, seed, cfg, jobs, mem_limit_gb, record)
    return counts, failures, time.perf_counter() - t0, busy


def _kind_of(kind: str) -> str:
    return "planner" if kind == "problem" else "importer"


def _target_of(cfg: dict, kind: str, index: int) -> str:
    return cfg["schedule"][index % len(cfg["schedule"])] if kind == "problem" else kind


def _pool_run(chunks, seed, cfg, jobs, mem_limit_gb, record) -> None:
    from concurrent.futures import TimeoutError as FutureTimeout

    from pebble import ProcessExpired, ProcessPool

    mem = int(mem_limit_gb * 2**30)
    # workers from a fresh fork server, not forked from the caller: a caller that loaded a large
    # library (torch, in a test process) would hand each worker its address space, and the
    # RLIMIT_AS cap below it then fails the worker's next mappings (segfaults, SystemError)
    ctx = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn")
    with ProcessPool(max_workers=jobs, initializer=_init_worker, initargs=(mem,),
                     context=ctx) as pool:
        def chunk_limit(kind, idx):
            return cfg["chunk_slack"] + sum(_item_limit(cfg, _target_of(cfg, kind, i)) * 0.5 for i in idx
                              if _target_of(cfg, kind, i) in EXACT)

        pending = [(pool.schedule(_run_chunk, args=(seed, kind, idx, cfg),
                                  timeout=chunk_limit(kind, idx)), kind, idx) for kind, idx in chunks]
        retry: list[tuple[str, int]] = []
        for fut, kind, idx in pending:
            try:
                for rec in fut.result():
                    record(rec)
            except (FutureTimeout, ProcessExpired, Exception):  # noqa: BLE001
                retry += [(kind, i) for i in idx]
        singles = [(pool.schedule(run_item, args=(seed, kind, i, cfg),
                                  timeout=_item_limit(cfg, _target_of(cfg, kind, i)) + cfg["kill_slack"]),
                    kind, i) for kind, i in retry]
        for fut, kind, i in singles:
            base = {"kind": _kind_of(kind), "target": _target_of(cfg, kind, i), "index": i,
                    "desc": "", "seconds": float("nan")}
            try:
                record(fut.result())
            except FutureTimeout:
                record({**base, "outcome": "hang",
                        "detail": f"killed after {_item_limit(cfg, base['target']) + cfg['kill_slack']:.1f} s"})
            except ProcessExpired as e:
                record({**base, "outcome": "traceback",
                        "detail": f"worker process died (exit code {e.exitcode})"})
            except Exception as e:  # noqa: BLE001 - run_item itself failed
                record({**base, "outcome": "traceback", "detail": _tb(e)})


def _write_failure(folder: Path, seed: int, rec: dict, replay_args: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    kind = "problem" if rec["kind"] == "planner" else rec["target"].split()[0]
    stem = f"{rec['target']}-{rec['outcome']}-{rec['index']}"
    lines = [
        f"target: {rec['target']}",
        f"outcome: {rec['outcome']}",
        f"seed: {seed}  item: {kind}:{rec['index']}",
        f"replay: python -m experiments.bench.soak --seed {seed} --replay {kind}:{rec['index']}"
        f"{replay_args}",
        f"input: {rec.get('desc', '')}",
    ]
    if rec.get("params"):
        lines.append(f"planner params: {rec['params']}")
    if rec.get("status"):
        lines.append(f"status: {rec['status']}")
    lines += ["", "detail:", str(rec.get("detail", ""))]
    if rec.get("problem"):
        lines += ["", "problem (half-open [lower, upper), bytes):", rec["problem"]]
    (folder / f"{stem}.txt").write_text("\n".join(lines) + "\n")
    if rec.get("data") is not None:
        suffix = Path(rec.get("fname", "x.bin")).suffix
        (folder / f"{stem}{suffix}").write_bytes(base64.b64decode(rec["data"]))


def write_results(counts, out: str | Path, seed: int, seconds: float, jobs: int, args: dict,
                  failures: list[dict], busy: dict | None = None) -> None:
    """Write ``out`` (CSV, one row per planner / importer) and the markdown summary beside it."""
    from planners.registry import PLANNERS

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    order = [("planner", p) for p in PLANNERS] + [("importer", k) for k in IMPORTERS]
    order += sorted(k for k in counts if k not in order)
    rows = []
    for key in order:
        c = counts.get(key)
        if not c:
            continue
        rows.append({"kind": key[0], "target": key[1], "runs": sum(c.values()),
                     **{o: c.get(o, 0) for o in OUTCOMES}, "seed": seed})
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["kind", "target", "runs", *OUTCOMES, "seed"])
        w.writeheader()
        w.writerows(rows)
    tmp.replace(out)
    bad = {o: sum(r[o] for r in rows) for o in OUTCOMES}
    md = [
        "# Soak run",
        "",
        f"`python -m experiments.bench.soak {args['cmd']}`: seed {seed}, {jobs} worker processes, "
        f"{seconds / 60:.1f} min wall clock.",
        "",
        f"{sum(r['runs'] for r in rows if r['kind'] == 'planner')} random problems through "
        f"{sum(1 for r in rows if r['kind'] == 'planner')} planners and "
        f"{sum(r['runs'] for r in rows if r['kind'] == 'importer')} mutated files through "
        f"{sum(1 for r in rows if r['kind'] == 'importer')} importers. Target: zero invalid plans, "
        "wrong bounds, tracebacks and hangs. Totals: "
        + ", ".join(f"{o} {bad[o]}" for o in OUTCOMES) + ".",
        "",
        "| kind | target | runs | " + " | ".join(OUTCOMES) + " | run s | slowest s (item) |",
        "|---|---|---:|" + "---:|" * len(OUTCOMES) + "---:|---:|",
    ]
    busy = busy or {}
    for r in rows:
        b = busy.get((r["kind"], r["target"]), {"seconds": 0.0, "max": 0.0, "max_index": None})
        md.append(f"| {r['kind']} | {r['target']} | {r['runs']} | "
                  + " | ".join(str(r[o]) for o in OUTCOMES)
                  + f" | {b['seconds']:.0f} | {b['max']:.1f} ({b['max_index']}) |")
    md += ["", "Run s: summed wall time of the planner or importer calls alone (the checks are "
           "not included); slowest s: the longest single call and its item index. Both under "
           "whatever else ran on the machine. A hang is a call over the wall limit "
           f"({args.get('hang_limit', 30.0):g} s, exact planners plus their time limit).", "",
           "`refused` is a clean toolkit error naming the input (for mutated files, the "
           "expected answer; for problems, the model refusing e.g. a deliberately bad alias or "
           "sizes near 2**62). Checks are described in `experiments/bench/soak.py`.", ""]
    if failures:
        md += ["## Failures", "", "First failures per target and outcome (inputs in "
               "`results/soak_failures/`):", ""]
        shown: Counter = Counter()
        for f in sorted(failures, key=lambda r: (r["target"], r["outcome"], r["index"])):
            k = (f["target"], f["outcome"])
            shown[k] += 1
            if shown[k] > 3:
                continue
            detail = str(f.get("detail", "")).strip().splitlines()
            last = detail[-1] if detail else ""
            item = "problem" if f["kind"] == "planner" else f["target"].split()[0]
            md.append(f"- `{f['target']}` {f['outcome']} (item `{item}:{f['index']}`): "
                      f"{last[:300]}")
        md.append("")
    out.with_suffix(".md").write_text("\n".join(md))


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m experiments.bench.soak [--problems N] [--files N] [--seed S] ...``.

    Writes ``--out`` (CSV) and the markdown summary beside it (same stem, ``.md``), and the
    first failing inputs to ``--failures``. Exit status 0 when every count of invalid plans, wrong
    bounds, tracebacks and hangs is zero, else 1. ``--replay KIND:INDEX`` reruns one item in this
    process and prints its record.
    """
    ap = argparse.ArgumentParser(prog="python -m experiments.bench.soak", description=__doc__.split(
        "\n\n")[0])
    ap.add_argument("--problems", type=int, default=100_000, help="random problems (default 1e5)")
    ap.add_argument("--files", type=int, default=10_000, help="mutated files (default 1e4)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (0: in process)")
    ap.add_argument("--chunk", type=int, default=100, help="items per pool task")
    ap.add_argument("--exact-time", type=float, default=0.5,
                    help="time limit of the exact planners, s")
    ap.add_argument("--hang-limit", type=float, default=30.0,
                    help="wall limit of one planner or importer call, s (exact planners: plus "
                         "--exact-time)")
    ap.add_argument("--heuristic-weight", type=int, default=10,
                    help="round-robin slots per heuristic planner (exact planners get 1)")
    ap.add_argument("--mem-limit-gb", type=float, default=4.0)
    ap.add_argument("--out", default="results/soak.csv")
    ap.add_argument("--failures", default=None,
                    help="folder for failing inputs (default: soak_failures beside --out)")
    ap.add_argument("--replay", default=None, metavar="KIND:INDEX",
                    help="rerun one item (problem:123, csv:7, onnx:9, tflite:4) and print it")
    a = ap.parse_args(argv)
    for k in ("problems", "files"):
        if getattr(a, k) < 0:
            ap.error(f"--{k} must be >= 0, got {getattr(a, k)}")
    if a.jobs < 0 or a.chunk < 1 or a.exact_time <= 0 or a.hang_limit <= 0:
        ap.error("--jobs must be >= 0, --chunk >= 1, --exact-time and --hang-limit > 0")
    if a.replay:
        kind, _, idx = a.replay.partition(":")
        if kind not in ("problem", *IMPORTERS) or not idx.isdigit():
            ap.error(f"--replay must be KIND:INDEX with KIND in problem, {', '.join(IMPORTERS)}; "
                     f"got {a.replay!r}")
        cfg = {"schedule": _schedule(a.heuristic_weight), "exact_time": a.exact_time,
               "hang_limit": a.hang_limit}
        rec = run_item(a.seed, kind, int(idx), cfg)
        rec.pop("data", None)
        for k, v in rec.items():
            print(f"{k}: {v}")
        return 0 if rec["outcome"] in ("ok", "refused") else 1
    failures_dir = Path(a.failures) if a.failures else Path(a.out).parent / "soak_failures"
    if failures_dir.exists():
        for f in failures_dir.iterdir():
            if f.is_file():
                f.unlink()
    counts, failures, seconds, busy = soak(
        a.problems, a.files, a.seed, a.jobs, a.chunk, a.exact_time, a.hang_limit,
        a.heuristic_weight, a.mem_limit_gb, failures_dir)
    cmd = " ".join(argv if argv is not None else sys.argv[1:])
    write_results(counts, a.out, a.seed, seconds, a.jobs, {"cmd": cmd, "hang_limit": a.hang_limit},
                  failures, busy)
    bad = sum(c[o] for c in counts.values() for o in OUTCOMES[2:])
    print(f"soak: {sum(sum(c.values()) for c in counts.values())} runs in {seconds:.0f} s; "
          f"{bad} failures; wrote {a.out}", file=sys.stderr)
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
