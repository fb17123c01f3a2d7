"""The interval model: buffers with a live range and a size, problems, and plans.

Conventions (used everywhere in the toolkit)
-------------------------------------------
* Time is measured in **schedule steps** (the index of an operator in the schedule).
* A lifetime is **half-open** ``[start, end)``, as in MiniMalloc's CSV (``lower``, ``upper``): the
  buffer is live at every step ``t`` with ``start <= t < end``. Two buffers interfere (are live at
  the same time) iff ``a.start < b.end and b.start < a.end``.
* The seeds write closed ranges ``[first_use, last_use]`` (seed 000 section 5/8, seed 001 section 2);
  :meth:`Buffer.from_closed` converts them: ``start = first_use``, ``end = last_use + 1``.
* Sizes and offsets are **bytes**. A buffer occupies addresses ``[offset, offset + size)``.
* ``alignment`` (bytes): every offset must be a multiple of it. A buffer with ``alignment=None``
  takes the problem's default alignment.

The lower bound on any arena is the maximum over time of the live bytes (seed 000 section 1:
``peak = max_k sum{size(t) : first_use(t) <= k <= last_use(t)}``); see :mod:`planners.bounds`.

Arithmetic range (one policy for the whole toolkit)
---------------------------------------------------
Offsets, sizes, bounds and arenas are stored and computed as **int64** (numpy arrays, the C
extension, the RV64 cores), so a number above ``2**63 - 1`` would wrap silently. Two rules keep
every such computation exact:

* every integer of the model (steps, bytes, alignment, alias delta) has ``|value| < 2**62``
  (:class:`Buffer`, :class:`Problem`), so the sum or difference of any two fits in int64; a
  capacity may be up to ``2**63 - 1`` bytes (it is only compared with tops, never added to), so
  a problem's own arena can always serve as its capacity;
* :class:`Problem` refuses, with one :class:`~planners.errors.ProblemError` naming the problem and
  this rule, a problem whose **worst-case arena** exceeds :data:`INT64_MAX` (``2**63 - 1``) bytes.
  The worst-case arena (:attr:`Problem.worst_case_arena`) is
  ``sum_i (round_up(size_i, align_i) + align_i - 1)`` over all buffers: every buffer stacked on
  top of the others, each after the largest padding its alignment allows. A correct planner puts
  each buffer at 0, at the aligned round-up of a placed buffer's top, or in a gap below a placed
  buffer, so it never produces an ``offset + size``, an aligned round-up ``top + align - 1``, a live
  sum or a lower bound above it. The same holds for the problem that
  :meth:`Problem.collapse` builds for alias groups (built, and so checked, at construction).

Anything that can still go beyond it (requests rounded up to a planner-specific granule, blocks
aligned to an lcm of alignments, offsets a faulty planner returns) is computed in Python integers
and refused with one clear error: :class:`~planners.errors.ProblemError` from the planner, or
:class:`~planners.errors.InvalidPlanError` from :func:`planners.validate.check_plan` ("offset +
size exceeds the representable range"). A number is never reported after it wrapped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

from .errors import InvalidPlanError, ProblemError

__all__ = ["Buffer", "Gap", "MemoryPool", "Problem", "Plan", "STATUSES", "KINDS", "FEATURES",
           "INT64_MAX", "arena_top", "SolveResult", "is_proved_optimal", "pool_subproblem"]

#: The compilers' features a problem may use beyond plain intervals (section "Compiler features"
#: of :class:`Problem`); each planner declares which it handles (:mod:`planners.base`).
FEATURES = ("pins", "hints", "gaps", "pools", "colocations")

#: Buffer kinds: ``activation`` buffers are planned with reuse; ``resident`` buffers (weights, graph
#: inputs kept for the whole run; seed 000 section 8 "常驻") live for the whole schedule;
#: ``scratch`` buffers are an operator's one-step temporaries (:mod:`planners.scratch`).
KINDS = ("activation", "resident", "scratch")

#: Plan statuses. ``optimal``: the arena is proved minimal: it equals a proved lower bound
#: (:func:`is_proved_optimal`, the one rule; a heuristic whose arena meets the bound is optimal too);
#: ``feasible``: a valid plan from an exact method without that proof (e.g. a decision solver that
#: found a plan within the capacity, a solve stopped by its time limit, or the optimum of a
#: restricted model such as shared blocks); ``heuristic``: a valid plan from a heuristic;
#: ``infeasible``: proved that nothing fits the capacity; ``timeout``: the time limit ended the solve
#: before any plan was found; ``over_capacity``: a valid layout whose arena exceeds the problem's
#: capacity (a heuristic that did not fit, nothing proved); ``skipped``: the method declined to
#: run because its estimated model could not be built within its time limit (no plan, nothing
#: proved; the estimate and the reason are in ``plan.info``).
STATUSES = ("optimal", "feasible", "heuristic", "infeasible", "timeout", "over_capacity",
            "skipped")


def is_proved_optimal(arena, bound) -> bool:
    """The one rule for "optimal": a plan's ``arena`` (bytes) equals a proved lower bound
    ``bound`` (bytes; max live bytes, or a solver's stronger proved bound), so no plan can be
    smaller. Every place that says "optimal" uses it: :meth:`planners.base.Planner.plan` sets the
    status ``optimal`` by it (heuristics at the bound included) and refuses a solver's "optimal"
    above the bound; records carry it as the ``proved`` column; legends, the heatmap's ``*``, the
    plan explorer and the reports read that status. ``False`` when either is missing (``None``,
    NaN or ``pd.NA``, e.g. a failed run's record). Compared as exact integers (no float rounding
    above 2**53).

    >>> is_proved_optimal(780, 780), is_proved_optimal(781, 780), is_proved_optimal(None, 780)
    (True, False, False)
    """
    try:
        return int(arena) == int(bound)
    except (TypeError, ValueError, OverflowError):  # None, NaN, pd.NA: nothing to compare
        return False


#: Bound on every integer of the model (steps, bytes): ``|value| < 2**62``, so the sum or difference
#: of two stays within int64.
_LIMIT = 2**62

#: Largest value of int64 (bytes): no offset + size, bound or arena of an admissible problem
#: exceeds it (see "Arithmetic range" in the module docstring).
INT64_MAX = 2**63 - 1


def _as_int(value: Any, what: str, item: str, wide: bool = False) -> int:
    """Return ``value`` as a Python int or raise a :class:`ProblemError` naming ``item``.

    The range is ``|value| < 2**62``, or ``|value| <= 2**63 - 1`` with ``wide=True`` (a capacity,
    which is compared with tops but never added to anything)."""
    if isinstance(value, bool):
        raise ProblemError(f"{item}: {what} must be an integer, got {value!r}")
    if isinstance(value, (int, np.integer)):
        out = int(value)
    elif isinstance(value, (float, np.floating)) and float(value).is_integer():
        out = int(value)
    else:
        raise ProblemError(f"{item}: {what} must be an integer, got {value!r}")
    if wide and not -INT64_MAX <= out <= INT64_MAX:
        raise ProblemError(f"{item}: {what} {out} is out of range (|value| <= 2**63 - 1)")
    if not wide and not -_LIMIT < out < _LIMIT:
        raise ProblemError(f"{item}: {what} {out} is out of range (|value| < 2**62)")
    return out

@dataclass(frozen=True, slots=True)
class Gap:
    """A half-open sub-interval ``[start, end)`` (steps) of a buffer's lifetime in which the buffer
    takes no space (``window=None``) or only the addresses ``[offset + lo, offset + hi)`` of its
    range (``window=(lo, hi)``, bytes, ``0 <= lo <= hi <= size``). MiniMalloc's ``Gap``
    (``src/minimalloc.h``: ``lifespan``, optional ``window``), e.g. a buffer whose low half is
    dead while a later operator still reads its high half.
    """

    start: int
    end: int
    window: tuple[int, int] | None = None

    def __repr__(self) -> str:
        w = "" if self.window is None else f"@{self.window[0]}:{self.window[1]}"
        return f"Gap({self.start}-{self.end}{w})"


@dataclass(frozen=True, slots=True)
class MemoryPool:
    """A named memory of a problem with pools (:class:`Problem`, ``pools=``): ``capacity`` in
    bytes (``None``: unbounded) and an offset ``alignment`` in bytes that every buffer placed in
    it also obeys (TVM's ``PoolInfo`` with ``size_hint_bytes``, ExecuTorch's ``mem_id`` arenas, a
    fast SRAM/TCM beside a slow PSRAM/DRAM). Offsets are relative to the pool's base.
    ``cost`` is the cost weight of one byte accessed in this pool (the pool assignment of
    :mod:`planners.feature_cpsat` minimises ``sum(accesses x bytes x cost)``; 0 for the
    fastest). When every pool of a problem has cost 0 (the default, and ``--pools``), each
    pool's cost is its rank in the preference order (0 for the first, 1 for the next, ...;
    :attr:`Problem.pool_costs`), so the order is a preference; equal non-zero costs state
    "no preference".

    Raises :class:`ProblemError` on an empty name, a negative capacity, an alignment below 1 or
    a negative cost.
    """

    name: str
    capacity: int | None = None
    alignment: int = 1
    cost: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "=" in self.name \
                or "," in self.name or " " in self.name:
            raise ProblemError(f"pool name must be a non-empty string without '=', ',' or spaces, "
                               f"got {self.name!r}")
        item = f"pool {self.name!r}"
        if self.capacity is not None:
            c = _as_int(self.capacity, "capacity", item, wide=True)
            if c < 0:
                raise ProblemError(f"{item}: capacity must be >= 0 bytes, got {c}")
            object.__setattr__(self, "capacity", c)
        a = _as_int(self.alignment, "alignment", item)
        if a < 1:
            raise ProblemError(f"{item}: alignment must be >= 1 byte, got {a}")
        object.__setattr__(self, "alignment", a)
        c = _as_int(self.cost, "cost", item)
        if c < 0:
            raise ProblemError(f"{item}: cost must be >= 0, got {c}")
        object.__setattr__(self, "cost", c)


def pool_costs(pools) -> list[int]:
    """The costs the planners minimise for ``pools`` (:class:`MemoryPool`, preference order):
    their own ``cost`` when some is non-zero, else each pool's rank (0 for the first)."""
    given = [q.cost for q in pools]
    return given if any(given) else list(range(len(given)))


def _as_gaps(raw, item: str, start: int, end: int, size: int) -> tuple[Gap, ...]:
    """``raw`` (Gap objects or ``(start, end)`` / ``(start, end, (lo, hi))`` tuples) as a tuple of
    checked :class:`Gap`: inside the lifetime ``[start, end)``, non-empty, sorted and disjoint,
    windows within ``[0, size]``. Raises :class:`ProblemError` naming the buffer and the rule."""
    out: list[Gap] = []
    for g in raw:
        if isinstance(g, Gap):
            gs, ge, w = g.start, g.end, g.window
        else:
            try:
                gs, ge, *rest = g
            except (TypeError, ValueError):
                raise ProblemError(f"{item}: a gap must be (start, end[, (lo, hi)]), got {g!r}") \
                    from None
            w = rest[0] if rest else None
        gs, ge = _as_int(gs, "gap start", item), _as_int(ge, "gap end", item)
        if not start <= gs < ge <= end:
            raise ProblemError(f"{item}: gap [{gs}, {ge}) must be a non-empty sub-interval of its "
                               f"lifetime [{start}, {end}) (half-open, steps)")
        if w is not None:
            try:
                lo, hi = w
            except (TypeError, ValueError):
                raise ProblemError(f"{item}: a gap window must be (lo, hi) bytes, got {w!r}") \
                    from None
            lo, hi = _as_int(lo, "gap window", item), _as_int(hi, "gap window", item)
            if not 0 <= lo <= hi <= size:
                raise ProblemError(f"{item}: gap window [{lo}, {hi}) must satisfy 0 <= lo <= hi <= "
                                   f"size {size} (bytes)")
            w = (lo, hi)
        if out and gs < out[-1].end:
            raise ProblemError(f"{item}: gaps must be sorted and disjoint; [{gs}, {ge}) starts "
                               f"before the previous gap ends at {out[-1].end}")
        out.append(Gap(gs, ge, w))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Buffer:
    """One buffer of the interval model.

    Parameters
    ----------
    id : str
        Unique name within a problem (tensor name, CSV id).
    start, end : int
        Half-open lifetime ``[start, end)`` in schedule steps; ``end > start`` is required.
    size : int
        Bytes, ``>= 0``. Zero-size buffers are valid and take no address space.
    alignment : int or None
        Offset alignment in bytes (``>= 1``); ``None`` takes the problem's default.
    kind : {"activation", "resident", "scratch"}
        ``resident`` buffers (weights, inputs kept for the whole run) come first in seed 000's layout.
        ``scratch``: an operator's one-step temporary (:mod:`planners.scratch`; ``end == start
        + 1``), planned as any buffer; the kind is kept by the problem's buffers and files.
    offset : int or None
        A fixed offset (bytes, a **pin**: pinned I/O or DMA buffers, MiniMalloc ``Buffer.offset``);
        every plan must place the buffer exactly there (in its pool). With pools it may go to
        any of its candidate pools whose alignment divides the pin and whose capacity holds
        ``pin + size`` (:func:`planners.placement.pin_pools`); the planners choose among them.
        ``None``: free.
    hint : int or None
        A preferred offset (bytes; MiniMalloc ``hint``, XLA's preferred offsets): planners that
        handle hints try it first; a plan elsewhere is still valid.
    gaps : tuple of Gap
        Sub-intervals of the lifetime in which the buffer takes no space or only a window of
        its range (:class:`Gap`); sorted, disjoint, inside ``[start, end)``.
    pools : tuple of str
        Candidate pools (names of the problem's :class:`MemoryPool`), in no particular order;
        empty means any pool.

    Raises
    ------
    ProblemError
        Negative size, ``end <= start``, non-integer fields, alignment < 1, empty id, unknown kind,
        a negative pin or hint, a pin that is not a multiple of the buffer's own alignment, a gap
        outside the lifetime, overlapping gaps, a window outside ``[0, size]``, a repeated pool.

    Examples
    --------
    >>> Buffer.from_closed("T1", 0, 3, 100)
    Buffer(id='T1', start=0, end=4, size=100, alignment=None, kind='activation')
    """

    id: str
    start: int
    end: int
    size: int
    alignment: int | None = None
    kind: str = "activation"
    offset: int | None = None
    hint: int | None = None
    gaps: tuple = ()
    pools: tuple = ()

    def __repr__(self) -> str:
        extra = "".join(
            f", {f}={getattr(self, f)!r}" for f, d in
            (("offset", None), ("hint", None), ("gaps", ()), ("pools", ()))
            if getattr(self, f) != d
        )
        return (f"Buffer(id={self.id!r}, start={self.start!r}, end={self.end!r}, size={self.size!r}"
                f", alignment={self.alignment!r}, kind={self.kind!r}{extra})")

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ProblemError(f"buffer id must be a non-empty string, got {self.id!r}")
        item = f"buffer {self.id!r}"
        object.__setattr__(self, "start", _as_int(self.start, "start", item))
        object.__setattr__(self, "end", _as_int(self.end, "end", item))
        object.__setattr__(self, "size", _as_int(self.size, "size", item))
        if self.size < 0:
            raise ProblemError(f"{item}: size must be >= 0 bytes, got {self.size}")
        if self.end <= self.start:
            raise ProblemError(
                f"{item}: lifetime [start, end) = [{self.start}, {self.end}) must have end > start"
            )
        if self.alignment is not None:
            a = _as_int(self.alignment, "alignment", item)
            if a < 1:
                raise ProblemError(f"{item}: alignment must be >= 1 byte, got {a}")
            object.__setattr__(self, "alignment", a)
        if self.kind not in KINDS:
            raise ProblemError(f"{item}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "scratch" and self.end != self.start + 1:
            raise ProblemError(f"{item}: a scratch buffer lives one step (end = start + 1), got "
                               f"[{self.start}, {self.end})")
        if self.offset is not None:
            o = _as_int(self.offset, "fixed offset", item)
            if o < 0:
                raise ProblemError(f"{item}: fixed offset must be >= 0 bytes, got {o}")
            if self.alignment is not None and o % self.alignment:
                raise ProblemError(f"{item}: fixed offset {o} is not a multiple of its alignment "
                                   f"{self.alignment}")
            object.__setattr__(self, "offset", o)
        if self.hint is not None:
            h = _as_int(self.hint, "hint", item)
            if h < 0:
                raise ProblemError(f"{item}: hint must be >= 0 bytes, got {h}")
            object.__setattr__(self, "hint", h)
        if self.gaps:
            object.__setattr__(self, "gaps",
                               _as_gaps(self.gaps, item, self.start, self.end, self.size))
        elif not isinstance(self.gaps, tuple):
            object.__setattr__(self, "gaps", ())
        if self.pools:
            pools = (self.pools,) if isinstance(self.pools, str) else tuple(self.pools)
            if not all(isinstance(p, str) and p for p in pools) or len(set(pools)) != len(pools):
                raise ProblemError(f"{item}: candidate pools must be distinct non-empty names, "
                                   f"got {self.pools!r}")
            object.__setattr__(self, "pools", pools)
        elif not isinstance(self.pools, tuple):
            object.__setattr__(self, "pools", ())

    @property
    def fixed(self) -> bool:
        """True iff the buffer has a fixed offset (a pin)."""
        return self.offset is not None

    @classmethod
    def from_closed(
        cls,
        id: str,
        first_use: int,
        last_use: int,
        size: int,
        alignment: int | None = None,
        kind: str = "activation",
    ) -> Buffer:
        """Build a buffer from the seeds' closed lifetime ``[first_use, last_use]`` (steps).

        ``first_use > last_use`` raises :class:`ProblemError`.
        """
        item = f"buffer {id!r}"
        f = _as_int(first_use, "first_use", item)
        last = _as_int(last_use, "last_use", item)
        if f > last:
            raise ProblemError(
                f"{item}: closed lifetime [first_use, last_use] = [{f}, {last}] needs first_use <= last_use"
            )
        return cls(id, f, last + 1, size, alignment, kind)

    @property
    def first_use(self) -> int:
        """First step of the closed lifetime (``start``)."""
        return self.start

    @property
    def last_use(self) -> int:
        """Last step of the closed lifetime (``end - 1``)."""
        return self.end - 1

    def overlaps_in_time(self, other: Buffer) -> bool:
        """True iff the half-open lifetimes intersect."""
        return self.start < other.end and other.start < self.end


_GET_ID, _GET_START, _GET_END, _GET_SIZE, _GET_ALIGN, _GET_KIND = (
    attrgetter(f) for f in ("id", "start", "end", "size", "alignment", "kind")
)
_GET_OFFSET, _GET_HINT, _GET_GAPS, _GET_POOLS = (
    attrgetter(f) for f in ("offset", "hint", "gaps", "pools"))


def _common_pools(lists) -> tuple[str, ...] | None:
    """The candidate pools shared by every list of ``lists`` (an empty list means any pool):
    ``()`` when all are empty (any pool), ``None`` when non-empty lists share no pool."""
    common: list[str] | None = None
    for c in lists:
        if c:
            common = list(c) if common is None else [p for p in common if p in c]
    if common is None:
        return ()
    return tuple(common) if common else None


def _buffer_pieces(i: int, start: int, end: int, size: int, gaps) -> list[tuple]:
    """Rows ``(i, start, end, lo, hi)`` of the rectangles buffer ``i`` occupies relative to its
    offset (:meth:`Problem.pieces`): its lifetime minus the gaps, plus the gaps' windows."""
    if size <= 0:
        return []
    out = []
    t = start
    for g in gaps:
        if g.start > t:
            out.append((i, t, g.start, 0, size))
        if g.window is not None and g.window[1] > g.window[0]:
            out.append((i, g.start, g.end, g.window[0], g.window[1]))
        t = g.end
    if end > t:
        out.append((i, t, end, 0, size))
    return out


def _colocated_gaps(members: list[Buffer], alignments: list[int]) -> tuple[int, int, int, tuple]:
    """Lifetime hull ``(start, end)``, size and gaps of the one buffer that stands for a
    colocation group (:meth:`Problem.collapse`): at every step the group takes the hull
    ``[min lo, max hi)`` of what its live members take (each member at the group's offset, with
    its own lifetime and gaps); no member live: a gap without window."""
    start = min(b.start for b in members)
    end = max(b.end for b in members)
    size = max(b.size for b in members)
    rows = [r for b in members for r in _buffer_pieces(0, b.start, b.end, b.size, b.gaps)]
    times = sorted({start, end} | {r[1] for r in rows} | {r[2] for r in rows})
    gaps: list[list] = []
    for t0, t1 in zip(times[:-1], times[1:]):
        occ = [(r[3], r[4]) for r in rows if r[1] <= t0 and t1 <= r[2]]
        state = None if not occ else (min(o[0] for o in occ), max(o[1] for o in occ))
        if state == (0, size):
            continue
        if gaps and gaps[-1][1] == t0 and gaps[-1][2] == state:
            gaps[-1][1] = t1
        else:
            gaps.append([t0, t1, state])
    return start, end, size, tuple(Gap(a, b, w) for a, b, w in gaps)


def _colocated_union(members: list[Buffer]) -> tuple[list[tuple[int, int, int, int]], bool]:
    """What a colocation group really takes, relative to its offset: rectangles ``(t0, t1, lo,
    hi)`` (half-open steps, bytes) that never overlap, per elementary step range the union of its
    live members' ranges (each member with its own lifetime and gaps, as
    :func:`_buffer_pieces`), and whether that union is at every step one interval starting at the
    hull's low end, i.e. whether :func:`_colocated_gaps`'s one merged buffer takes exactly it
    (``False``: a member's window above a hole, e.g. ``[0, 1)`` and a window ``[2, 4)`` live at
    one step, where the merged buffer takes ``[0, 4)``)."""
    rows = [r for b in members for r in _buffer_pieces(0, b.start, b.end, b.size, b.gaps)]
    times = sorted({r[1] for r in rows} | {r[2] for r in rows})
    out: list[tuple[int, int, int, int]] = []
    exact = True
    for t0, t1 in zip(times[:-1], times[1:]):
        iv = sorted((r[3], r[4]) for r in rows if r[1] <= t0 and t1 <= r[2])
        merged: list[list[int]] = []
        for lo, hi in iv:
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        exact &= len(merged) <= 1
        out.extend((t0, t1, lo, hi) for lo, hi in merged)
    return out, exact


class Problem:
    """An allocation problem: buffers, an optional capacity and a default alignment.

    The buffers keep the order they were given in; every array below and every plan's offsets use
    that order (index ``i`` is ``problem.buffers[i]``).

    Parameters
    ----------
    buffers : iterable of Buffer
    capacity : int or None
        Arena capacity in bytes, ``0 .. 2**63 - 1``; ``None`` means "minimise the arena".
    alignment : int
        Default offset alignment in bytes for buffers whose own ``alignment`` is ``None``.
    name : str
        Label used in records and plots.

    aliases : mapping or None
        Alias groups: ``{child_id: (parent_id, delta_bytes)}``: the child buffer occupies
        ``[offset(parent) + delta, offset(parent) + delta + size(child))``, inside its parent (a
        view or in-place result: ``delta = 0``; a concat input written in place: ``delta`` = the
        slice offset inside the concat buffer). Rules (each checked, :class:`ProblemError` naming
        the child and the rule): both ids are buffers of the problem; a buffer is not its own
        parent; ``delta`` is an integer ``>= 0`` with ``delta + size(child) <= size(parent)``; the
        parent links have no cycle; the accumulated delta from the group's root is a multiple of
        the child's alignment. A child has one parent (the mapping's key); a parent may have many
        children, and a parent may itself be a child (chains).

        Semantics: an **alias group** (a root and every buffer linked to it) is one buffer of the
        model: it reserves its root's address range ``[offset(root), offset(root) + size(root))``
        for the hull ``[min start, max end)`` of its members' lifetimes (half-open, steps; the
        union when the members' lifetimes chain, as for views and in-place operators). Members
        of one group may overlap in address. :meth:`collapse` builds that one-buffer-per-group
        problem; every planner plans it (:meth:`planners.base.Planner.plan`) and the validator
        checks it.

    pools : sequence of MemoryPool or None
        Named memories in **preference order** (e.g. ``sram`` 256 KiB, then ``psram`` 8 MiB).
        A plan gives every buffer a pool and an offset inside it; each pool's arena must fit its
        capacity; ``capacity`` must then be ``None``.
    colocations : sequence of sequences of ids or None
        Colocation groups whose members keep their own lifetimes (XLA ``ShareWith``): the members
        share one offset (and pool); each takes its own range ``[offset, offset + size)`` over its
        own lifetime (and gaps), so the shared range is needed only while some member is live
        (an alias group reserves it over the hull of the lifetimes).

    Compiler features
    -----------------
    Beyond plain intervals a buffer may carry a fixed offset (pin), a hint, gaps and candidate
    pools (:class:`Buffer`); :attr:`features` names those a problem uses (:data:`FEATURES`).
    Every default is off, so a problem without them behaves exactly as before. Alias groups
    combine with none of them (:class:`ProblemError`). :meth:`collapse` merges colocation
    groups into one buffer with gaps, as it merges alias groups.

    Attributes (read-only numpy int64 arrays of shape ``(n,)``)
    ------------------------------------------------------------
    starts, ends : half-open lifetimes ``[start, end)`` in steps.
    sizes : bytes. alignments : effective alignment in bytes. aligned_sizes : ``size`` rounded up to
    the buffer's alignment. resident : bool mask of ``kind == "resident"``. (Also
    :attr:`worst_case_arena`, a Python int in bytes, ``<= 2**63 - 1`` for every constructed
    problem.)

    Raises
    ------
    ProblemError
        Duplicate ids, capacity < 0, alignment < 1, a buffer that is not a :class:`Buffer`, an
        alias that breaks a rule above, or a worst-case arena (:attr:`worst_case_arena`, of the
        problem or of its alias-collapsed form) above :data:`INT64_MAX` bytes, which int64
        arithmetic cannot represent (module docstring, "Arithmetic range").

    Examples
    --------
    Three buffers of ``2**62 - 1`` bytes live at once need an arena of ``3 * (2**62 - 1)`` bytes,
    more than int64 holds, so the problem is refused rather than planned with wrapped numbers:

    >>> Problem.from_arrays([0, 0, 0], [1, 1, 1], [2**62 - 1] * 3, name="big")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    planners.errors.ProblemError: problem 'big': worst-case arena 13835058055282163709 bytes ...
    """

    def __init__(
        self,
        buffers: Iterable[Buffer],
        capacity: int | None = None,
        alignment: int = 1,
        name: str = "",
        aliases: Mapping[str, tuple[str, int]] | None = None,
        pools: Sequence[MemoryPool] | None = None,
        colocations: Sequence[Sequence[str]] | None = None,
    ) -> None:
        bufs = tuple(buffers)
        self._init_scalars(capacity, alignment, name)
        n = len(bufs)
        # Vectorised screen (C-level passes over the items); any failure re-runs the item-by-item
        # loop below, which raises the first error in item order with the exact message.
        ids = list(map(_GET_ID, bufs)) if set(map(type, bufs)) <= {Buffer} else None
        if ids is None or len(set(ids)) != n:
            index: dict[str, int] = {}
            for i, b in enumerate(bufs):
                if not isinstance(b, Buffer):
                    raise ProblemError(f"problem {name!r}: item {i} is not a Buffer: {b!r}")
                if b.id in index:
                    raise ProblemError(
                        f"problem {name!r}: duplicate buffer id {b.id!r} (items {index[b.id]} and {i})"
                    )
                index[b.id] = i
            ids = list(index)
        own = list(map(_GET_ALIGN, bufs))
        own_align = (
            None if own.count(None) == n
            else np.fromiter((0 if a is None else a for a in own), np.int64, n)
        )
        kinds = list(map(_GET_KIND, bufs))
        resident = (
            None if "resident" not in kinds
            else np.fromiter((k == "resident" for k in kinds), bool, n)
        )
        self._init_columns(
            ids,
            np.fromiter(map(_GET_START, bufs), np.int64, n),
            np.fromiter(map(_GET_END, bufs), np.int64, n),
            np.fromiter(map(_GET_SIZE, bufs), np.int64, n),
            own_align,
            resident,
            aliases,
            bufs,
        )
        if pools or colocations or (n and (
                set(map(_GET_OFFSET, bufs)) != {None} or set(map(_GET_HINT, bufs)) != {None}
                or any(map(_GET_GAPS, bufs)) or any(map(_GET_POOLS, bufs)))):
            self._init_features(bufs, pools, colocations)

    def _init_features(self, bufs, pools, colocations) -> None:
        """Store and check the compiler features (class docstring, "Compiler features") of the
        buffers ``bufs`` (problem order), the pools and the colocation groups. Raises
        :class:`ProblemError` naming the problem, the item and the rule."""
        where = f"problem {self.name!r}"
        n = self.n
        pins = [b.offset for b in bufs]
        hints = [b.hint for b in bufs]
        self._pins = (None if pins.count(None) == n
                      else np.array([-1 if v is None else v for v in pins], np.int64))
        self._hints = (None if hints.count(None) == n
                       else np.array([-1 if v is None else v for v in hints], np.int64))
        self.gaps = {b.id: b.gaps for b in bufs if b.gaps}
        self.candidates = {b.id: b.pools for b in bufs if b.pools}
        pl = tuple(pools or ())
        for q in pl:
            if not isinstance(q, MemoryPool):
                raise ProblemError(f"{where}: pools must be MemoryPool objects, got {q!r}")
        names = [q.name for q in pl]
        if len(set(names)) != len(names):
            raise ProblemError(f"{where}: pool names must be distinct, got {names}")
        if pl and self.capacity is not None:
            raise ProblemError(f"{where}: a problem with pools takes its capacities from the pools "
                               f"(MemoryPool.capacity); capacity must be None, got {self.capacity}")
        self.pools = pl
        for bid, cands in self.candidates.items():
            if not pl:
                raise ProblemError(f"{where}: buffer {bid!r} names candidate pools {list(cands)} "
                                   f"but the problem has no pools")
            bad = [c for c in cands if c not in names]
            if bad:
                raise ProblemError(f"{where}: buffer {bid!r}: unknown candidate pool(s) {bad}; "
                                   f"pools: {names}")
        if self._pins is not None:
            pinned = np.flatnonzero(self._pins >= 0)
            bad = pinned[(self._pins[pinned] % self.alignments[pinned]) != 0]
            if bad.size:
                i = int(bad[0])
                raise ProblemError(f"{where}: buffer {self._id_list()[i]!r}: fixed offset "
                                   f"{int(self._pins[i])} is not a multiple of its alignment "
                                   f"{int(self.alignments[i])}")
            top = int((self._pins[pinned] + self.sizes[pinned]).max()) if pinned.size else 0
            if top > INT64_MAX - self.worst_case_arena:
                raise ProblemError(f"{where}: fixed offsets reach byte {top}; with the worst-case "
                                   f"arena above them an arena would exceed 2**63 - 1 bytes")
        groups: list[tuple[str, ...]] = []
        seen: dict[str, int] = {}
        for k, grp in enumerate(colocations or ()):
            g = (grp,) if isinstance(grp, str) else tuple(grp)
            if len(g) < 2:
                raise ProblemError(f"{where}: colocation group {k} needs at least 2 buffers, got "
                                   f"{list(g)}")
            for bid in g:
                if bid not in self.index:
                    raise ProblemError(f"{where}: colocation group {k}: {bid!r} is not a buffer of "
                                       f"the problem")
                if bid in seen:
                    raise ProblemError(f"{where}: buffer {bid!r} is in colocation groups "
                                       f"{seen[bid]} and {k}; a buffer belongs to at most one")
                seen[bid] = k
            fixed = {int(self._pins[self.index[b]]) for b in g
                     if self._pins is not None and self._pins[self.index[b]] >= 0}
            if len(fixed) > 1:
                raise ProblemError(f"{where}: colocation group {k} {list(g)} has members pinned at "
                                   f"different offsets {sorted(fixed)}; colocated buffers share "
                                   f"one offset")
            if self.candidates and _common_pools([self.candidates.get(b, ()) for b in g]) is None:
                raise ProblemError(f"{where}: colocation group {k} {list(g)}: the members' "
                                   f"candidate pools have no pool in common")
            groups.append(g)
        self.colocations = tuple(groups)
        if self.aliases and self.features:
            raise ProblemError(f"{where}: alias groups cannot be combined with "
                               f"{', '.join(sorted(self.features))} (not supported)")
        if groups:
            try:
                self.collapse()
            except ProblemError as e:
                raise ProblemError(f"{e} (after merging the colocation groups)") from None

    # -- compiler features ------------------------------------------------------------------------
    _pins = None
    _hints = None
    gaps: dict = {}
    candidates: dict = {}
    pools: tuple = ()
    colocations: tuple = ()

    @property
    def features(self) -> frozenset[str]:
        """The compiler features (:data:`FEATURES`) this problem uses: ``pins`` (a buffer with a
        fixed offset), ``hints``, ``gaps``, ``pools`` (the problem has named pools) and
        ``colocations``. Empty for a plain interval problem."""
        out = set()
        if self._pins is not None:
            out.add("pins")
        if self._hints is not None:
            out.add("hints")
        if self.gaps:
            out.add("gaps")
        if self.pools:
            out.add("pools")
        if self.colocations:
            out.add("colocations")
        return frozenset(out)

    @property
    def pins(self) -> np.ndarray:
        """Fixed offsets (bytes) in problem order, ``-1`` for a free buffer (int64, read-only)."""
        if self._pins is None:
            return self._ro(np.full(self.n, -1, np.int64))
        return self._ro(self._pins)

    @property
    def hints(self) -> np.ndarray:
        """Preferred offsets (bytes) in problem order, ``-1`` where none (int64, read-only)."""
        if self._hints is None:
            return self._ro(np.full(self.n, -1, np.int64))
        return self._ro(self._hints)

    def pool_index(self, name: str) -> int:
        """Position of the pool named ``name`` in :attr:`pools` (ProblemError if unknown)."""
        for k, q in enumerate(self.pools):
            if q.name == name:
                return k
        raise ProblemError(f"problem {self.name!r}: no pool named {name!r}; pools: "
                           f"{[q.name for q in self.pools]}")

    def candidate_pools(self, i: int) -> list[int]:
        """Indices (preference order) of the pools buffer ``i`` may go to: its candidates, or
        every pool when it names none; ``[0]`` for a problem without pools (one arena)."""
        if not self.pools:
            return [0]
        c = self.candidates.get(self._id_list()[i]) if self.candidates else None
        if not c:
            return list(range(len(self.pools)))
        return [k for k, q in enumerate(self.pools) if q.name in c]

    @property
    def pool_costs(self) -> list[int]:
        """The cost per byte and access of each pool (preference order) that the planners
        minimise: :attr:`MemoryPool.cost` when some pool has a non-zero cost, else each pool's
        rank in the preference order (0, 1, 2, ...), so the preference order counts even when
        no costs are given. ``[]`` without pools."""
        return pool_costs(self.pools)

    def pieces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The space a buffer takes, as rectangles relative to its offset: arrays ``owner``
        (buffer index), ``start, end`` (half-open steps), ``lo, hi`` (bytes above the offset) of
        equal length, sorted by owner then start. A buffer without gaps is one piece
        ``[start, end) x [0, size)``; a gap without window removes its steps, a gap with window
        ``(lo, hi)`` keeps them with ``[lo, hi)``. Zero-size pieces are dropped. ``O(n + gaps)``.
        """
        if not self.gaps:
            keep = np.flatnonzero(self.sizes > 0)
            return (keep.astype(np.int64), self.starts[keep], self.ends[keep],
                    np.zeros(keep.size, np.int64), self.sizes[keep])
        rows: list[tuple[int, int, int, int, int]] = []
        ids = self._id_list()
        st, en, sz = self.starts.tolist(), self.ends.tolist(), self.sizes.tolist()
        for i in range(self.n):
            rows.extend(_buffer_pieces(i, st[i], en[i], sz[i], self.gaps.get(ids[i], ())))
        if not rows:
            z = np.zeros(0, np.int64)
            return z, z, z, z, z
        a = np.array(rows, np.int64)
        return a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4]

    def with_pools(self, pools: Sequence[MemoryPool] | None) -> Problem:
        """A copy of this problem with the named pools (preference order; capacity then
        ``None``, the pools' own apply), or without pools for ``None``. Raises
        :class:`ProblemError` as the constructor does (e.g. a candidate pool not among them)."""
        return Problem(self.buffers, capacity=None if pools else self.capacity,
                       alignment=self.alignment, name=self.name, aliases=self.aliases or None,
                       pools=pools or None, colocations=self.colocations or None)

    def without(self, *features: str) -> Problem:
        """A copy of this problem without the named relaxable features: ``"hints"`` (dropped:
        a hint is a preference), ``"gaps"`` (each buffer then takes its whole range over its
        whole lifetime, so every plan of the copy is a plan of this problem). Other names raise
        ``ValueError``."""
        bad = set(features) - {"hints", "gaps"}
        if bad:
            raise ValueError(f"only hints and gaps can be dropped, not {sorted(bad)}")
        bufs = [Buffer(b.id, b.start, b.end, b.size, b.alignment, b.kind, b.offset,
                       None if "hints" in features else b.hint,
                       () if "gaps" in features else b.gaps, b.pools) for b in self.buffers]
        out = Problem(bufs, capacity=self.capacity, alignment=self.alignment, name=self.name,
                      pools=self.pools or None, colocations=self.colocations or None)
        # a merged colocation group keeps its members' traffic (traffic_weights)
        out._traffic_weights = getattr(self, "_traffic_weights", None)
        return out

    def _init_scalars(self, capacity, alignment, name) -> None:
        """Name, default alignment and capacity, each checked (ProblemError naming the problem)."""
        self.name = str(name)
        self.alignment = _as_int(alignment, "alignment", f"problem {name!r}")
        if self.alignment < 1:
            raise ProblemError(f"problem {name!r}: default alignment must be >= 1, got {alignment}")
        if capacity is not None:
            capacity = _as_int(capacity, "capacity", f"problem {name!r}", wide=True)
            if capacity < 0:
                raise ProblemError(f"problem {name!r}: capacity must be >= 0 bytes, got {capacity}")
        self.capacity: int | None = capacity

    def _init_columns(self, ids, starts, ends, sizes, own_align, resident, aliases, bufs=None):
        """Store the columns of buffers already checked one by one (ids unique, or ``None`` for
        ``"0" .. "n-1"``; int64 arrays; ``own_align`` 0 where a buffer takes the default or
        ``None`` for all; ``resident`` bool or ``None`` for none), then apply the problem-wide
        rules (range, aliases). ``bufs``: the Buffer objects when they exist already."""
        n = len(starts)
        self._ids: list[str] | None = ids
        self._buffers: tuple[Buffer, ...] | None = bufs
        self._index: dict[str, int] | None = None
        self._own_align = own_align
        self.starts = self._ro(starts)
        self.ends = self._ro(ends)
        self.sizes = self._ro(sizes)
        al = np.full(n, self.alignment, np.int64)
        if own_align is not None:
            al = np.where(own_align > 0, own_align, al)
        self.alignments = self._ro(al)
        self.aligned_sizes = self._ro(-(-self.sizes // self.alignments) * self.alignments)
        self.resident = self._ro(np.zeros(n, bool) if resident is None else resident)
        #: ``{child_id: (parent_id, delta_bytes)}``; empty when the problem has no alias groups.
        self.aliases: dict[str, tuple[str, int]] = {}
        self._collapsed = None
        self._check_range()
        if aliases:
            self._set_aliases(aliases)
            try:
                self.collapse()  # cached; its own construction applies the range rule
            except ProblemError as e:
                raise ProblemError(f"{e} (after collapsing the alias groups)") from None

    # -- arithmetic range -------------------------------------------------------------------------
    @property
    def worst_case_arena(self) -> int:
        """``sum_i (aligned_size_i + alignment_i - 1)`` in bytes, a Python int (exact).

        An upper bound on every ``offset + size``, aligned round-up, live sum and lower bound that a
        correct planner computes for this problem (module docstring, "Arithmetic range"); the
        constructor refuses a problem where it exceeds :data:`INT64_MAX`. ``O(n)``.
        """
        return sum(self.aligned_sizes.tolist()) + sum(self.alignments.tolist()) - self.n

    def _check_range(self) -> None:
        """Refuse a problem whose worst-case arena exceeds :data:`INT64_MAX` (ProblemError)."""
        if not self.n:
            return
        # Cheap screen in float64 (relative error <= n * 2**-53, far below the 2x margin); the
        # exact Python-int sum only when the screen cannot decide.
        approx = float(self.aligned_sizes.sum(dtype=np.float64)) + float(
            self.alignments.sum(dtype=np.float64)
        )
        if approx < 2.0**62:
            return
        w = self.worst_case_arena
        if w > INT64_MAX:
            raise ProblemError(
                f"problem {self.name!r}: worst-case arena {w} bytes (sum of sizes rounded up to "
                f"their alignment, plus alignment - 1 padding per buffer) exceeds 2**63 - 1 = "
                f"{INT64_MAX} bytes, the largest offset int64 arithmetic represents; every "
                "problem must satisfy sum(aligned size + alignment - 1) <= 2**63 - 1"
            )

    # -- alias groups ---------------------------------------------------------------------------
    def _set_aliases(self, aliases: Mapping[str, tuple[str, int]]) -> None:
        """Validate ``aliases`` (rules in the class docstring) and store them. ``O(n)``."""
        where = f"problem {self.name!r}"
        out: dict[str, tuple[str, int]] = {}
        for child, link in aliases.items():
            try:
                parent, delta = link
            except (TypeError, ValueError):
                raise ProblemError(
                    f"{where}: alias of buffer {child!r} must be (parent_id, delta_bytes), got {link!r}"
                ) from None
            item = f"{where}: alias of buffer {child!r}"
            if child not in self.index:
                raise ProblemError(f"{item}: no buffer named {child!r} in the problem")
            if parent not in self.index:
                raise ProblemError(f"{item}: parent {parent!r} is not a buffer of the problem")
            if parent == child:
                raise ProblemError(f"{item}: a buffer cannot alias itself")
            delta = _as_int(delta, "alias delta", item)
            c_size = int(self.sizes[self.index[child]])
            p_size = int(self.sizes[self.index[parent]])
            if delta < 0 or delta + c_size > p_size:
                raise ProblemError(
                    f"{item}: extent [delta, delta + size) = [{delta}, {delta + c_size}) bytes must "
                    f"lie inside parent {parent!r} of size {p_size} bytes"
                )
            out[child] = (parent, delta)
        # Roots and accumulated deltas, memoised (O(n) overall); a revisit on the path is a cycle.
        n = self.n
        ids = self._id_list()
        root = np.arange(n, dtype=np.int64)
        acc = np.zeros(n, dtype=np.int64)
        done = np.zeros(n, dtype=bool)
        for child in out:
            path: list[int] = []
            on_path: set[int] = set()
            i = self.index[child]
            while not done[i] and ids[i] in out:
                if i in on_path:
                    cyc = " -> ".join(ids[j] for j in path[path.index(i):] + [i])
                    raise ProblemError(
                        f"{where}: alias of buffer {ids[i]!r}: the parent links form "
                        f"a cycle ({cyc}); alias groups must be trees"
                    )
                path.append(i)
                on_path.add(i)
                i = self.index[out[ids[i]][0]]
            done[i] = True
            r, d = int(root[i]), int(acc[i])
            for j in reversed(path):
                d += out[ids[j]][1]
                root[j], acc[j] = r, d
                done[j] = True
        for child in out:
            i = self.index[child]
            a = int(self.alignments[i])
            if acc[i] % a:
                raise ProblemError(
                    f"{where}: alias of buffer {child!r}: its offset inside root "
                    f"{ids[int(root[i])]!r} is {int(acc[i])} bytes, not a multiple of "
                    f"its alignment {a}"
                )
        self.aliases = out
        self.alias_root = self._ro(root)
        self.alias_delta = self._ro(acc)

    @property
    def has_aliases(self) -> bool:
        """True iff the problem has at least one alias link."""
        return bool(self.aliases)

    def collapse(self) -> tuple[Problem, np.ndarray, np.ndarray]:
        """One buffer per alias group (see the class docstring); cached.

        Returns
        -------
        collapsed : Problem
            One buffer per group, in the order of the groups' roots in this problem, with the
            root's id, the hull ``[min start, max end)`` of the members' lifetimes (half-open,
            steps), size ``max(delta + size)`` over members (bytes; the root's size under the
            rules), alignment the lcm of the members' effective alignments, kind ``resident`` if a
            member is. Same capacity and name; no aliases. Without aliases: this problem itself.
        group : numpy int64 array, shape ``(n,)``
            Index in ``collapsed`` of each buffer's group.
        delta : numpy int64 array, shape ``(n,)``
            Bytes from the group's root offset to each buffer's offset (0 for roots).

        Expanding a collapsed plan: ``offsets = collapsed_offsets[group] + delta``. Runs in
        ``O(n log n)``.
        """
        if self._collapsed is not None:
            return self._collapsed
        if self.colocations:
            return self._collapse_colocations()
        if not self.aliases:
            return self, np.arange(self.n, dtype=np.int64), np.zeros(self.n, dtype=np.int64)
        roots, group = np.unique(self.alias_root, return_inverse=True)
        group = group.astype(np.int64)
        m = len(roots)
        lo = np.full(m, np.iinfo(np.int64).max, np.int64)
        hi = np.zeros(m, np.int64)
        top = np.zeros(m, np.int64)
        np.minimum.at(lo, group, self.starts)
        np.maximum.at(hi, group, self.ends)
        np.maximum.at(top, group, self.alias_delta + self.sizes)
        res = np.zeros(m, bool)
        np.logical_or.at(res, group, self.resident)
        align = [1] * m
        for g, a in zip(group.tolist(), self.alignments.tolist(), strict=True):
            align[g] = math.lcm(align[g], a)
        ids = self._id_list()
        bufs = [
            Buffer(
                ids[int(r)], int(lo[k]), int(hi[k]), int(top[k]), align[k],
                "resident" if res[k] else "activation",
            )
            for k, r in enumerate(roots.tolist())
        ]
        collapsed = Problem(bufs, capacity=self.capacity, alignment=self.alignment, name=self.name)
        delta = self.alias_delta.copy()
        self._collapsed = (collapsed, group, delta)
        return self._collapsed

    def _collapse_colocations(self) -> tuple[Problem, np.ndarray, np.ndarray]:
        """:meth:`collapse` for colocation groups: one buffer per group, at the position of its
        first member, with that member's id; lifetime, size and gaps from
        :func:`_colocated_gaps` (the shared range is taken only while some member is live:
        XLA ``ShareWith``); the common pin, the first member's hint, the common candidate
        pools, the lcm of the members' alignments; ``resident`` if a member is. Other buffers
        are kept as they are. Cached."""
        bufs = self.buffers
        index = self.index
        first: dict[int, tuple[str, ...]] = {}
        gid = {}
        for g in self.colocations:
            first[min(index[b] for b in g)] = g
            for b in g:
                gid[b] = g
        out: list[Buffer] = []
        group = np.empty(self.n, np.int64)
        al = self.alignments.tolist()
        for i, b in enumerate(bufs):
            g = gid.get(b.id)
            if g is None:
                group[i] = len(out)
                out.append(b)
                continue
            if i not in first:
                continue
            members = sorted((bufs[index[m]] for m in g), key=lambda m: index[m.id])
            k = len(out)
            for m in members:
                group[index[m.id]] = k
            st, en, size, gaps = _colocated_gaps(members, al)
            a = 1
            for m in members:
                a = math.lcm(a, al[index[m.id]])
            pins = [m.offset for m in members if m.offset is not None]
            hint = next((m.hint for m in members if m.hint is not None), None)
            out.append(Buffer(
                members[0].id, st, en, size, a,
                "resident" if any(m.kind == "resident" for m in members) else "activation",
                pins[0] if pins else None, hint, gaps,
                _common_pools([m.pools for m in members]) or (),
            ))
        collapsed = Problem(out, capacity=self.capacity, alignment=self.alignment,
                            name=self.name, pools=self.pools or None)
        # the traffic of a merged group is its members' (each its own lifetime and size), not
        # the merged buffer's hull lifetime x largest size
        w = [0] * collapsed.n
        for k, v in zip(group.tolist(), self.traffic_weights.tolist(), strict=True):
            w[k] += v  # Python integers: a sum beyond int64 is refused, never wrapped
        if w and max(w) > INT64_MAX:
            raise ProblemError(f"problem {self.name!r}: a colocation group's traffic weight "
                               f"{max(w)} (sum of size x lifetime) exceeds 2**63 - 1")
        collapsed._traffic_weights = self._ro(np.array(w, np.int64))
        self._collapsed = (collapsed, group, np.zeros(self.n, np.int64))
        return self._collapsed

    @property
    def traffic_weights(self) -> np.ndarray:
        """Bytes x schedule steps each buffer weighs in the traffic cost of the pool assignment
        (:func:`planners.feature_cpsat.traffic_cost`: ``sum_i weight_i x cost(pool_i)``): its
        size times its lifetime in steps (``end - start``, one access per step). For the merged
        buffer of a colocation group (:meth:`collapse`) the sum over its members, each with its
        own lifetime and size, so the merged problem minimises the traffic of the real one.
        int64, read-only, shape ``(n,)``; computed in Python integers, and
        :class:`ProblemError` when a weight exceeds ``2**63 - 1`` (never wrapped)."""
        w = getattr(self, "_traffic_weights", None)
        if w is None:
            steps = (self.ends - self.starts).tolist()
            vals = [a * b for a, b in zip(steps, self.sizes.tolist(), strict=True)]
            if vals and max(vals) > INT64_MAX:
                raise ProblemError(f"problem {self.name!r}: a traffic weight (size x lifetime) "
                                   f"of {max(vals)} exceeds 2**63 - 1")
            w = self._ro(np.array(vals, np.int64).reshape(self.n))
            self._traffic_weights = w
        return w

    @property
    def colocations_exact(self) -> bool:
        """Whether :meth:`collapse` merges every colocation group exactly: the merged buffer
        takes at every step exactly the union of what its live members take
        (:func:`_colocated_union`). ``True`` without colocation groups. When ``False``, a plan of
        the merged problem is a plan of this one, but its optimum, bounds and infeasibility are
        those of a relaxation (:meth:`planners.base.Planner.plan` reports none of them)."""
        if not self.colocations:
            return True
        return self._colocation_union()[1]

    def occupied_pieces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                       np.ndarray]:
        """The space each buffer of the merged problem (:meth:`collapse`; this problem itself
        without colocation groups) really takes, as :meth:`pieces` of that problem does, but
        for a colocation group the exact union of its members' pieces (several rectangles at
        one step where a window leaves a hole), so live sums over them are exact. Arrays
        ``owner`` (index in the merged problem), ``start, end`` (half-open steps), ``lo, hi``
        (bytes above the offset)."""
        if not self.colocations:
            return self.collapse()[0].pieces() if self.aliases else self.pieces()
        return self._colocation_union()[0]

    def _colocation_union(self):
        """``(pieces, exact)`` for :meth:`occupied_pieces` and :attr:`colocations_exact`;
        cached."""
        cached = getattr(self, "_union_cache", None)
        if cached is not None:
            return cached
        merged, group, _ = self.collapse()
        own, st, en, lo, hi = merged.pieces()
        members: dict[int, list[Buffer]] = {}
        bufs = self.buffers
        for g in self.colocations:
            k = int(group[self.index[g[0]]])
            members[k] = [bufs[self.index[b]] for b in g]
        rows = [r for r in zip(own.tolist(), st.tolist(), en.tolist(), lo.tolist(), hi.tolist())
                if r[0] not in members]
        exact = True
        for k, ms in members.items():
            pieces, ok = _colocated_union(ms)
            exact &= ok
            rows.extend((k, *r) for r in pieces)
        rows.sort()
        a = np.array(rows, np.int64).reshape(len(rows), 5)
        self._union_cache = ((a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4]), exact)
        return self._union_cache

    @staticmethod
    def _ro(a: np.ndarray) -> np.ndarray:
        a.setflags(write=False)
        return a

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        starts: Sequence[int] | np.ndarray,
        ends: Sequence[int] | np.ndarray,
        sizes: Sequence[int] | np.ndarray,
        ids: Sequence[str] | None = None,
        capacity: int | None = None,
        alignment: int = 1,
        name: str = "",
    ) -> Problem:
        """Build a problem from half-open ``[starts, ends)`` arrays (steps) and sizes (bytes).

        ``ids`` defaults to ``"0", "1", ...`` (each id is ``str(id)``). Raises :class:`ProblemError`
        on mismatched lengths or any bad buffer (the same message as :class:`Buffer` and the
        constructor give).

        Integer arrays are checked with numpy (ranges, ``end > start``, ``size >= 0``, empty or
        duplicate ids) and stored without building :class:`Buffer` objects (:attr:`buffers` builds
        them when first read); other inputs (lists, floats, objects), or any failed check, take
        the buffer-by-buffer path, whose first error is raised. ``O(n)`` (plus a hash per id).
        """
        starts, ends, sizes = np.asarray(starts), np.asarray(ends), np.asarray(sizes)
        if not (len(starts) == len(ends) == len(sizes)):
            raise ProblemError(
                f"problem {name!r}: starts, ends, sizes have lengths "
                f"{len(starts)}, {len(ends)}, {len(sizes)}; they must match"
            )
        if ids is not None and len(ids) != len(starts):
            raise ProblemError(f"problem {name!r}: {len(ids)} ids for {len(starts)} buffers")
        fast = cls._from_columns(
            None if ids is None else [str(i) for i in ids], starts, ends, sizes,
            capacity=capacity, alignment=alignment, name=name,
        )
        if fast is not None:
            return fast
        if ids is None:
            ids = [str(i) for i in range(len(starts))]
        bufs = [
            Buffer(str(i), int(s), int(e), int(z))
            for i, s, e, z in zip(ids, starts.tolist(), ends.tolist(), sizes.tolist())
        ]
        return cls(bufs, capacity=capacity, alignment=alignment, name=name)

    @classmethod
    def _from_columns(
        cls,
        ids: list[str] | None,
        starts: np.ndarray,
        ends: np.ndarray,
        sizes: np.ndarray,
        own_align: np.ndarray | None = None,
        capacity: int | None = None,
        alignment: int = 1,
        name: str = "",
    ) -> Problem | None:
        """A problem built from columns checked with numpy, or ``None`` when a column is not an
        integer array of shape ``(n,)`` or a buffer breaks a per-buffer rule (the caller then
        builds :class:`Buffer` objects one by one, which names the first offender).

        ``ids``: unique non-empty strings, or ``None`` for ``"0" .. "n-1"``; ``starts, ends``
        half-open lifetimes (steps); ``sizes`` bytes; ``own_align`` per-buffer alignment (bytes,
        0 = the problem's default) or ``None``. The per-buffer rules are those of
        :class:`Buffer` (``|value| < 2**62``, ``size >= 0``, ``end > start``, alignment >= 1);
        problem-wide errors (capacity, the range rule, a duplicate id) raise
        :class:`ProblemError` as the constructor does. Activation buffers only.
        """
        cols = [starts, ends, sizes] + ([] if own_align is None else [own_align])
        n = len(starts)
        for a in cols:
            if not isinstance(a, np.ndarray) or a.shape != (n,) or a.dtype.kind not in "iu":
                return None
            if n and (a.max() >= _LIMIT or (a.dtype.kind == "i" and a.min() <= -_LIMIT)):
                return None
        starts, ends, sizes = (np.array(a, dtype=np.int64) for a in cols[:3])
        if own_align is not None:
            own_align = np.array(own_align, dtype=np.int64)
            if n and own_align.min() < 0:
                return None
        if n and (sizes.min() < 0 or bool((ends <= starts).any())):
            return None
        if ids is not None and not all(ids):  # Buffer("") is refused before any problem check
            return None
        self = cls.__new__(cls)
        self._init_scalars(capacity, alignment, name)  # the constructor checks these first, too
        if ids is not None and (len(ids) != n or not all(ids) or len(set(ids)) != n):
            if len(ids) == n and all(ids):  # only duplicates: the constructor's message
                seen: dict[str, int] = {}
                for i, b in enumerate(ids):
                    if b in seen:
                        raise ProblemError(
                            f"problem {name!r}: duplicate buffer id {b!r} (items {seen[b]} and {i})"
                        )
                    seen[b] = i
            return None
        self._init_columns(ids, starts, ends, sizes, own_align, None, None)
        return self

    @classmethod
    def from_closed(
        cls,
        items: Iterable[tuple[str, int, int, int]],
        capacity: int | None = None,
        alignment: int = 1,
        name: str = "",
    ) -> Problem:
        """Build a problem from ``(id, first_use, last_use, size)`` tuples with **closed** lifetimes
        ``[first_use, last_use]`` as the seeds write them (converted to half-open internally)."""
        return cls(
            [Buffer.from_closed(i, f, last, s) for i, f, last, s in items],
            capacity=capacity,
            alignment=alignment,
            name=name,
        )

    def with_capacity(self, capacity: int | None) -> Problem:
        """A copy of this problem with another capacity (bytes; ``None`` to minimise); shares
        the (read-only) arrays and buffers of this one."""
        new = Problem.__new__(Problem)
        new._init_scalars(capacity, self.alignment, self.name)
        new._init_columns(
            self._ids, self.starts, self.ends, self.sizes, self._own_align,
            self.resident if self.resident.any() else None, self.aliases or None, self._buffers,
        )
        if self.features:
            if self.pools and capacity is not None:
                raise ProblemError(f"problem {self.name!r}: a problem with pools takes its "
                                   "capacities from the pools; capacity must be None")
            for a in ("_pins", "_hints", "gaps", "candidates", "pools", "colocations"):
                setattr(new, a, getattr(self, a))
        new._traffic_weights = getattr(self, "_traffic_weights", None)
        return new

    # -- summaries ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.starts)

    @property
    def n(self) -> int:
        """Number of buffers."""
        return len(self.starts)

    def _id_list(self) -> list[str]:
        """The ids in problem order (built once for ``"0" .. "n-1"``; do not modify)."""
        if self._ids is None:
            self._ids = list(map(str, range(self.n)))
        return self._ids

    @property
    def ids(self) -> list[str]:
        """Buffer ids in problem order (a new list)."""
        return list(self._id_list())

    @property
    def index(self) -> Mapping[str, int]:
        """``{buffer id: position}`` (built on first use, ``O(n)``; do not modify)."""
        if self._index is None:
            self._index = dict(zip(self._id_list(), range(self.n)))
        return self._index

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """The :class:`Buffer` objects in problem order. A problem built from arrays
        (:meth:`from_arrays`, :func:`planners.io.read_minimalloc_csv`) stores only its columns
        and builds these objects on first use (``O(n)``, about 1 s per 10**6 buffers); the
        planners that need no objects never pay for them."""
        if self._buffers is None:
            new, put = object.__new__, object.__setattr__
            own = self._own_align.tolist() if self._own_align is not None else None
            res = self.resident.tolist() if self.resident.any() else None
            out = []
            for i, (bid, s, e, z) in enumerate(zip(
                self._id_list(), self.starts.tolist(), self.ends.tolist(), self.sizes.tolist(),
                strict=True,
            )):
                b = new(Buffer)
                put(b, "id", bid)
                put(b, "start", s)
                put(b, "end", e)
                put(b, "size", z)
                put(b, "alignment", (own[i] or None) if own is not None else None)
                put(b, "kind", "resident" if res is not None and res[i] else "activation")
                put(b, "offset", None)
                put(b, "hint", None)
                put(b, "gaps", ())
                put(b, "pools", ())
                out.append(b)
            self._buffers = tuple(out)
        return self._buffers

    @property
    def horizon(self) -> int:
        """One past the last step any buffer is live (``max(end)``; 0 for an empty problem)."""
        return int(self.ends.max()) if self.n else 0

    def __repr__(self) -> str:
        cap = "" if self.capacity is None else f", capacity={self.capacity}"
        al = f", aliases={len(self.aliases)}" if self.aliases else ""
        return f"Problem(name={self.name!r}, buffers={self.n}{cap}, alignment={self.alignment}{al})"

    def to_frame(self):
        """A pandas DataFrame with columns id, start, end (half-open), size, alignment, kind."""
        import pandas as pd

        return pd.DataFrame(
            {
                "id": self.ids,
                "start": self.starts,
                "end": self.ends,
                "size": self.sizes,
                "alignment": self.alignments,
                "kind": ["resident" if r else "activation" for r in self.resident],
            }
        )


def arena_top(offsets, sizes) -> int:
    """Highest ``offset + size`` over the buffers with ``size > 0`` (bytes), exact; 0 if none.

    Parameters
    ----------
    offsets, sizes : array-like of int, shape ``(n,)``
        Bytes, problem order.

    Returns
    -------
    int
        A Python int, computed in int64 when no sum can wrap and in Python integers otherwise, so
        an offset near ``2**63`` (e.g. from a faulty planner) gives its true top, never a wrapped
        one. ``O(n)``.
    """
    off = np.asarray(offsets)
    size = np.asarray(sizes)
    mask = size > 0
    if not mask.any():
        return 0
    off, size = off[mask], size[mask]
    if off.dtype.kind == "i" and size.dtype.kind == "i" and int(off.max()) < INT64_MAX - _LIMIT \
            and int(size.max()) < _LIMIT:
        return int((off.astype(np.int64) + size.astype(np.int64)).max())
    return max(int(o) + int(z) for o, z in zip(off.tolist(), size.tolist(), strict=True))


@dataclass
class SolveResult:
    """What :meth:`Planner._solve` returns.

    offsets : int array of shape ``(problem.n,)`` in bytes, problem order; ``None`` when no plan was
        found (status ``infeasible``, ``timeout`` or ``skipped``).
    status : one of :data:`planners.model.STATUSES`.
    best_bound : proved lower bound on the optimal arena (bytes), if the method proves one.
    info : free-form statistics recorded with the plan.
    pools : for a problem with pools, the pool index of each buffer (planners whose
        ``_capabilities["pools"]`` is ``native``); ``None`` otherwise.
    """

    offsets: np.ndarray | None
    status: str = "heuristic"
    best_bound: int | None = None
    info: dict[str, Any] = field(default_factory=dict)
    pools: np.ndarray | None = None


@dataclass
class Plan:
    """The result of a planner: one offset per buffer of a problem.

    Attributes
    ----------
    problem : Problem
    offsets : numpy int64 array, shape ``(problem.n,)``, bytes, in problem order.
    planner : str
        Registry name of the planner.
    status : str
        One of :data:`STATUSES`.
    seconds : float
        Wall-clock seconds of the solve (excludes validation).
    lower_bound : int
        Max over time of live bytes of the problem (bytes); see :func:`planners.bounds.lower_bound`.
    best_bound : int or None
        The best lower bound on the optimal arena proved by the planner (exact solvers); for
        heuristics the problem's lower bound.
    params : dict
        The planner's parameters, verbatim (so the run can be reproduced).
    info : dict
        Planner-specific statistics (nodes explored, solver log summary, ...).
    pools : numpy int64 array of shape ``(problem.n,)`` or None
        For a problem with pools (:attr:`Problem.pools`): the index of each buffer's pool; its
        offset is relative to that pool's base. ``None`` for a problem without pools (one arena).
    """

    problem: Problem
    offsets: np.ndarray
    planner: str
    status: str
    seconds: float = 0.0
    lower_bound: int = 0
    best_bound: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    pools: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.pools is not None:
            self.pools = np.asarray(self.pools, dtype=np.int64)
        try:
            self.offsets = np.asarray(self.offsets, dtype=np.int64)
        except OverflowError:
            big = [(i, int(o)) for i, o in enumerate(np.asarray(self.offsets).tolist())
                   if not -INT64_MAX - 1 <= int(o) <= INT64_MAX]
            i, o = big[0] if big else (0, None)
            raise InvalidPlanError(
                f"buffer {self.problem.buffers[i].id!r}: offset {o} exceeds the representable "
                f"range of int64 offsets (|offset| <= 2**63 - 1 bytes)"
            ) from None
        if self.status not in STATUSES:
            raise ValueError(f"plan status must be one of {STATUSES}, got {self.status!r}")

    @property
    def arena_size(self) -> int:
        """Bytes from address 0 to the highest end ``offset + size`` (0 when nothing takes space),
        exact (:func:`arena_top`). With pools: the sum of the per-pool arenas (:attr:`arenas`),
        which is never below the problem's max live bytes."""
        if self.pools is not None and self.problem.pools:
            return sum(self.arenas.values())
        return arena_top(self.offsets, self.problem.sizes)

    @property
    def arenas(self) -> dict[str, int]:
        """``{pool name: arena bytes}`` (highest ``offset + size`` of the buffers in each pool, 0
        for an empty pool) in the problem's pool order; ``{"arena": arena_size}`` without pools."""
        if self.pools is None or not self.problem.pools:
            return {"arena": arena_top(self.offsets, self.problem.sizes)}
        return {q.name: arena_top(self.offsets[self.pools == k], self.problem.sizes[self.pools == k])
                for k, q in enumerate(self.problem.pools)}

    def pool_of(self, buffer_id: str) -> str | None:
        """Name of the pool of the buffer named ``buffer_id`` (``None`` without pools)."""
        if self.pools is None or not self.problem.pools:
            return None
        return self.problem.pools[int(self.pools[self.problem.index[buffer_id]])].name

    @property
    def ratio(self) -> float:
        """``arena_size / lower_bound`` (1.0 is perfect; ``nan`` when the bound is 0)."""
        return self.arena_size / self.lower_bound if self.lower_bound else math.nan

    def offset_of(self, buffer_id: str) -> int:
        """Offset in bytes of the buffer named ``buffer_id`` (KeyError if unknown)."""
        return int(self.offsets[self.problem.index[buffer_id]])

    def as_dict(self) -> dict[str, int]:
        """``{buffer id: offset}``."""
        return dict(zip(self.problem.ids, self.offsets.tolist()))

    def to_frame(self):
        """Problem table plus an ``offset`` column (pandas DataFrame)."""
        df = self.problem.to_frame()
        df["offset"] = self.offsets
        if self.pools is not None and self.problem.pools:
            df["pool"] = [self.problem.pools[k].name for k in self.pools.tolist()]
        return df

    def summary(self) -> dict[str, Any]:
        """A flat record: planner, status, arena, lower_bound, best_bound, ratio, seconds (and
        ``arenas``, bytes per pool, for a problem with pools)."""
        if self.pools is not None and self.problem.pools:
            return {**self._summary(), "arenas": self.arenas}
        return self._summary()

    def _summary(self) -> dict[str, Any]:
        return {
            "planner": self.planner,
            "status": self.status,
            "arena": self.arena_size,
            "lower_bound": self.lower_bound,
            "best_bound": self.best_bound,
            "ratio": self.ratio,
            "seconds": self.seconds,
        }

    def __repr__(self) -> str:
        return (
            f"Plan(planner={self.planner!r}, status={self.status!r}, arena={self.arena_size}, "
            f"lower_bound={self.lower_bound}, buffers={self.problem.n}, seconds={self.seconds:.4g})"
        )


def pool_subproblem(problem: Problem, pools: np.ndarray, k: int,
                    capacity: int | None) -> tuple[Problem, np.ndarray]:
    """The buffers of ``problem`` assigned to pool ``k`` as a one-arena problem (alignment
    ``lcm(buffer, pool)``, pins, hints and gaps kept, no pools, capacity ``capacity`` bytes),
    and their indices in ``problem``."""
    idx = np.flatnonzero(pools == k)
    pa = problem.pools[k].alignment
    al = problem.alignments.tolist()
    bufs = [problem.buffers[i] for i in idx.tolist()]
    sub = [Buffer(b.id, b.start, b.end, b.size, math.lcm(al[i], pa), b.kind, b.offset, b.hint,
                  b.gaps) for i, b in zip(idx.tolist(), bufs, strict=True)]
    return Problem(sub, capacity=capacity, alignment=problem.alignment,
                   name=f"{problem.name}:{problem.pools[k].name}"), idx
