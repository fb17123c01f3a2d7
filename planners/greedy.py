"""The greedy offset-planning engine: an ORDER times a FIT rule (XLA heap simulator's split).

Every classic greedy offset planner places the buffers one at a time, in some **order**, each at an
offset chosen by a **fit** rule among the address ranges not used by the already-placed buffers that
are live at the same time (its placed neighbours in the interference graph):

* ``fit="first"`` -- the lowest offset (a multiple of the buffer's alignment) that collides with no
  placed neighbour (first-fit; seed 002 section 5.1.1, seed 000 section 8, TFLite Micro).
* ``fit="best"`` -- the smallest gap between placed neighbours (the unbounded space above the top
  one as the last resort) that can hold the buffer at an aligned offset; ties go to the lowest
  offset (best-fit; seed 002 section 5.1.1; Pisarchyk & Lee 2020, Algorithm 3; XLA
  ``GlobalDecreasingSizeBestFitHeap``).

Orders are functions ``problem -> permutation`` collected in :data:`ORDERS` (networkx-style
strategies); :class:`GreedyPlanner` accepts a name or any callable, so a sweep can combine any order
with any fit. The named planners of the literature are thin subclasses with fixed defaults
(:class:`FirstFit`, :class:`BestFit`, :class:`GreedyInOrder`, :class:`GreedyBySize`,
:class:`GreedyBySizeBestFit`, :class:`GreedyByBreadth`, :class:`GreedyByConflicts`,
:class:`LifetimeAware`).

Conventions: half-open lifetimes ``[start, end)`` in schedule steps, sizes and offsets in bytes,
every offset a multiple of the buffer's alignment. Zero-size buffers take no space and are placed
at offset 0. Placement runs on Python integers; each offset is 0, the aligned round-up of a placed
neighbour's top, or inside a gap, so every top stays within the problem's worst-case arena
(``<= 2**63 - 1``, the range rule of :mod:`planners.model`) and the int64 result is exact.

Complexity
----------
Let ``E`` be the number of interfering pairs and ``k`` the number of placed neighbours of a buffer.
General orders build the interference graph once with numpy (``O(n log n + E)``, see
:mod:`planners.interference`), direct each edge from the later-placed to the earlier-placed buffer,
and then, per buffer, sort only its ``k`` placed neighbours by offset and scan them:
``O(n log n + E log k)`` in total, never a loop over all placed buffers. When the order is
non-decreasing in start time (first-fit in start order, best-fit, seed 000's order) a sweep keeps
the live placed buffers in a list sorted by offset instead, with no graph at all. Both paths give
identical offsets.

Engines
-------
The placement runs in one of two engines with byte-identical offsets (``engine=`` of
:func:`greedy_offsets` and of every greedy planner; ``plan.info["engine"]`` says which ran):

* ``"c"`` -- the compiled core ``planners._greedy`` (``planners/_ext/_greedy.c``), two paths:

  - an order non-decreasing in start (``best_fit``, ``order="start"``, ``greedy_in_order``
    without residents): a sweep over time with an address-ordered free list (``sweep``). The
    gaps between the live placed buffers sit in blocked sorted arrays (blocks of 64 gaps by
    address with the longest gap of each block and of each group of 64 blocks, for best fit also
    by ``(length, address)``); a buffer is placed by splitting a gap and an expiring buffer's
    range coalesces with the gaps on both sides. ``O(log L + 64 + L / 4096)`` per buffer for
    ``L`` buffers live at once, plus block splits and merges (``O(L / 64)`` each, on average at
    most one per 8 insertions) and one step per gap that holds the size but not at its aligned
    start; never a pass over the interfering pairs;
  - any other order (``place``): a static centred interval tree over time yields each buffer's
    placed neighbours in ``O(log n + d)`` for ``d`` buffers live with it (no edge list, ``O(n)``
    memory); they are radix-sorted by offset and scanned with the same first-fit / best-fit
    loops as below. ``O(n log n + E)`` time.

  The GIL is released while placing.
* ``"python"`` -- the reference implementation in this module (the graph and sweep paths above).
* ``"auto"`` (default) -- the C engine when it is built, else the Python engine.

The orders are computed with numpy in both cases.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable

import numpy as np

from .base import Planner, SolveResult, pick_engine
from .bounds import live_profile
from .errors import ProblemError
from .interference import interference_degrees, sweep_pairs
from .model import Problem, arena_top
from .params import StrOptions
from .placement import place_features

__all__ = [
    "ORDERS",
    "FITS",
    "ENGINES",
    "resolve_engine",
    "greedy_offsets",
    "arena_of",
    "placement_edges",
    "order_problem",
    "order_in_order",
    "order_by_start",
    "order_by_size",
    "order_by_breadth",
    "order_by_conflicts",
    "order_by_lifetime_area",
    "GreedyPlanner",
    "FirstFit",
    "BestFit",
    "GreedyInOrder",
    "GreedyBySize",
    "GreedyBySizeBestFit",
    "GreedyByBreadth",
    "GreedyByConflicts",
    "LifetimeAware",
]

#: Fit rules understood by :func:`greedy_offsets`.
FITS = ("first", "best")

#: Placement engines (see "Engines" in the module docstring).
ENGINES = ("auto", "c", "python")


def _c_core():
    """The compiled placement core ``planners._greedy``, or ``None`` when it is not built."""
    try:
        from . import _greedy
    except ImportError:  # pragma: no cover - depends on the build
        return None
    return _greedy


def resolve_engine(engine: str = "auto") -> str:
    """The engine that runs for ``engine``: ``"c"`` or ``"python"``.

    ``"auto"`` gives ``"c"`` when the compiled core ``planners._greedy`` is built, else
    ``"python"``.

    Raises
    ------
    ValueError
        ``engine`` is not one of :data:`ENGINES`.
    ImportError
        ``engine="c"`` but the compiled core is not built (``pip install -e .`` needs a C compiler
        and the Python headers).
    """
    return pick_engine(engine, ENGINES, "c", _c_core, "planners._greedy")


# ---------------------------------------------------------------------------------------------
# Orders: problem -> permutation of range(n) (int64 array, first placed first)
# ---------------------------------------------------------------------------------------------
def order_problem(problem: Problem) -> np.ndarray:
    """The order the buffers were given in (``0 .. n-1``); first-fit of seed 002 section 5.1.1."""
    return np.arange(problem.n, dtype=np.int64)


def order_in_order(problem: Problem) -> np.ndarray:
    """Seed 000 section 8: resident buffers first, then the others by first use (stable sort, ties
    in problem order). ``O(n log n)``."""
    key = np.where(problem.resident, np.iinfo(np.int64).min, problem.starts)
    return np.argsort(key, kind="stable").astype(np.int64)


def order_by_start(problem: Problem) -> np.ndarray:
    """By start step ascending, ties in problem order (best-fit of seed 002 section 5.1.1).

    When ``(max start - min start + 1) x n`` fits in int64, the key ``(start - min start) x n +
    index`` is sorted as values (no index array carried) and the permutation is ``key mod n``;
    otherwise a stable argsort. Both give the same permutation. ``O(n log n)``."""
    n = problem.n
    st = problem.starts
    if n and (int(st.max()) - int(st.min()) + 1) * n <= 2**63 - 1:
        key = (st - st.min()) * n
        key += np.arange(n, dtype=np.int64)
        key.sort()
        return np.remainder(key, n, out=key)
    return np.argsort(st, kind="stable").astype(np.int64)


def order_by_size(problem: Problem) -> np.ndarray:
    """Largest size first; ties: earlier start, then problem order (TFLite Micro's
    ``GreedyMemoryPlanner``; Pisarchyk & Lee 2020 "greedy by size"). ``O(n log n)``.

    When ``(max size - size)`` and ``(start - min start)`` fit in 31 and 32 bits, both keys are
    packed into one int64 and sorted once (stable, so ties keep problem order); otherwise a
    three-key ``lexsort``. Both give the same permutation."""
    n = problem.n
    if n == 0:
        return np.zeros(0, np.int64)
    sizes, starts = problem.sizes, problem.starts
    smax, tmin = int(sizes.max()), int(starts.min())
    if smax - int(sizes.min()) < 2**31 and int(starts.max()) - tmin < 2**32:
        key = (smax - sizes) << 32
        key |= starts - tmin
        return np.argsort(key, kind="stable").astype(np.int64, copy=False)
    return np.lexsort((np.arange(n), starts, -sizes)).astype(np.int64)


def order_by_lifetime_area(problem: Problem) -> np.ndarray:
    """Priority ``(end - start) * size`` descending (seed 002 section 5.1.4, lifetime-aware
    allocation); ties: earlier start, then problem order. ``O(n log n)``.

    The area (up to ``2**124`` bytes x steps) is compared exactly: in int64 when the largest
    product fits, else as Python integers."""
    n = problem.n
    width = problem.ends - problem.starts
    if not n or int(width.max()) * int(problem.sizes.max()) <= 2**63 - 1:
        area = width * problem.sizes
        return np.lexsort((np.arange(n), problem.starts, -area)).astype(np.int64)
    w, z, st = width.tolist(), problem.sizes.tolist(), problem.starts.tolist()
    return np.asarray(sorted(range(n), key=lambda i: (-w[i] * z[i], st[i], i)), np.int64)


def order_by_conflicts(problem: Problem) -> np.ndarray:
    """Number of conflicts (degree in the interference graph of the non-zero-size buffers)
    descending, ties by size descending, then problem order (TVM USMP ``greedy_by_conflicts``).
    ``O(n log n)`` (degrees by binary search, no edge list)."""
    deg = interference_degrees(problem, ignore_zero_size=True)
    return np.lexsort((np.arange(problem.n), -problem.sizes, -deg)).astype(np.int64)


def order_by_breadth(problem: Problem) -> np.ndarray:
    """Pisarchyk & Lee's greedy by breadth as an order.

    Schedule steps are visited by decreasing breadth (live bytes at the step; ties: earlier step);
    at each step its not-yet-placed live buffers follow, largest first (ties: problem order). A
    buffer is therefore keyed by the first-visited step of its lifetime. The breadth is constant
    between consecutive lifetime end points and every buffer covers whole segments, so the key is a
    range minimum over segment ranks, answered for all buffers at once with a numpy sparse table:
    ``O(n log n)``.
    """
    n = problem.n
    if n == 0:
        return np.zeros(0, np.int64)
    ptimes, plive = live_profile(problem)
    # every lifetime end point is a segment end (with gaps the profile's own points may miss
    # the ends of a zero-size buffer); for plain problems times == ptimes
    times = np.unique(np.concatenate([problem.starts, problem.ends]))
    at = np.searchsorted(ptimes, times, side="right") - 1
    live = np.where(at >= 0, plive[np.maximum(at, 0)], 0)
    m = len(times)
    seg_order = np.lexsort((times, -live))
    seg_rank = np.empty(m, np.int64)
    seg_rank[seg_order] = np.arange(m)
    lo = np.searchsorted(times, problem.starts)
    hi = np.searchsorted(times, problem.ends)  # exclusive; hi > lo since start < end
    length = hi - lo
    # Sparse table: table[k][x] = min(seg_rank[x : x + 2**k]).
    table = [seg_rank]
    while (1 << len(table)) <= m:
        prev, half = table[-1], 1 << (len(table) - 1)
        table.append(np.minimum(prev[:-half], prev[half:]))
    lvl = np.floor(np.log2(length)).astype(np.int64)
    first = np.empty(n, np.int64)
    for k in np.unique(lvl).tolist():
        sel = np.flatnonzero(lvl == k)
        t = table[k]
        first[sel] = np.minimum(t[lo[sel]], t[hi[sel] - (1 << k)])
    return np.lexsort((np.arange(n), -problem.sizes, first)).astype(np.int64)


#: Named orders (networkx-style strategy registry): name -> ``f(problem) -> permutation``.
ORDERS: dict[str, Callable[[Problem], np.ndarray]] = {
    "problem": order_problem,
    "in_order": order_in_order,
    "start": order_by_start,
    "size": order_by_size,
    "breadth": order_by_breadth,
    "conflicts": order_by_conflicts,
    "lifetime_area": order_by_lifetime_area,
}


def _is_permutation(perm: np.ndarray) -> bool:
    """True iff the integer array ``perm`` of shape ``(n,)`` holds each of ``0 .. n-1`` once
    (``O(n)``: range check, then every index marked)."""
    n = perm.size
    if int(perm.min()) < 0 or int(perm.max()) >= n:
        return False
    seen = np.zeros(n, bool)
    seen[perm] = True
    return bool(seen.all())


def _resolve_order(problem: Problem, order) -> np.ndarray:
    if isinstance(order, str):
        try:
            fn = ORDERS[order]
        except KeyError:
            raise ValueError(
                f"unknown order {order!r}; known orders: {', '.join(ORDERS)}"
            ) from None
        perm = fn(problem)
        label = order
    elif callable(order):
        perm = order(problem)
        label = getattr(order, "__name__", repr(order))
    else:
        perm = order
        label = "given permutation"
    perm = np.asarray(perm)
    n = problem.n
    if (
        perm.shape != (n,)
        or (n and not np.issubdtype(perm.dtype, np.integer))
        or (n and not _is_permutation(perm))
    ):
        raise ProblemError(
            f"order {label!r} must return a permutation of 0..{n - 1} (one index per buffer of "
            f"problem {problem.name!r}), got shape {perm.shape} dtype {perm.dtype}"
        )
    return perm.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Placement
# ---------------------------------------------------------------------------------------------
def _first_fit_scan(segs, s: int, a: int) -> int:
    """Lowest multiple of ``a`` where ``[x, x + s)`` misses every ``(offset, top)`` in ``segs``
    (sorted by offset)."""
    c = 0
    for o, t in segs:
        if c + s <= o:
            break
        if t > c:
            c = -(-t // a) * a
    return c


def _best_fit_scan(segs, s: int, a: int) -> int:
    """Aligned start of the smallest gap between the ``(offset, top)`` ranges of ``segs`` (sorted by
    offset) that holds ``s`` bytes; ties to the lowest; else the aligned top of all of them."""
    best_len = -1
    best = 0
    c = 0  # highest top seen so far: the gap [c, o) lies below the next range
    for o, t in segs:
        if o > c:
            x = -(-c // a) * a
            if x + s <= o and (best_len < 0 or o - c < best_len):
                best_len = o - c
                best = x
        if t > c:
            c = t
    if best_len < 0:
        best = -(-c // a) * a
    return best


def _place_sweep(problem: Problem, perm: np.ndarray, fit: str) -> np.ndarray:
    """Placement for an order that is non-decreasing in start: the placed neighbours of a buffer are
    exactly the placed buffers still live at its start, kept sorted by offset."""
    scan = _first_fit_scan if fit == "first" else _best_fit_scan
    starts = problem.starts.tolist()
    ends = problem.ends.tolist()
    sizes = problem.sizes.tolist()
    aligns = problem.alignments.tolist()
    offsets = [0] * problem.n
    # Live placed buffers sorted by offset. Their offsets are distinct (non-zero sizes, disjoint
    # address ranges), so the offset alone is the sort and removal key.
    act_off: list[int] = []
    act_top: list[int] = []
    expiry: list[tuple[int, int]] = []  # heap of (end, offset)
    for i in perm.tolist():
        s = sizes[i]
        if s == 0:
            continue
        st = starts[i]
        while expiry and expiry[0][0] <= st:
            pos = bisect.bisect_left(act_off, heapq.heappop(expiry)[1])
            del act_off[pos]
            del act_top[pos]
        x = scan(zip(act_off, act_top, strict=True), s, aligns[i])
        offsets[i] = x
        pos = bisect.bisect_left(act_off, x)
        act_off.insert(pos, x)
        act_top.insert(pos, x + s)
        heapq.heappush(expiry, (ends[i], x))
    return np.asarray(offsets, dtype=np.int64)


def placement_edges(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Unsorted interference edges among the non-zero-size buffers, the input of the greedy engine.

    Same pairs as :func:`planners.interference.interference_edges` with ``ignore_zero_size=True``
    but in sweep order and in the smallest integer type (no final sort), so it is cheaper to build
    and to keep. Compute it once and pass it as ``edges=`` to :func:`greedy_offsets` to plan one
    problem with several orders (as :class:`planners.choose_best.ChooseBest` does).

    Returns
    -------
    a, b : integer arrays of shape ``(E,)``, buffer indices (problem order), each pair once.

    ``O(n log n + E)`` time and memory.
    """
    return sweep_pairs(problem, ignore_zero_size=True)


def _placed_neighbours(problem: Problem, perm: np.ndarray, edges=None):
    """CSR of the interference graph (non-zero sizes) directed from each buffer to its neighbours
    placed before it: ``(indptr, nbrs)`` indexed by placement position."""
    n = problem.n
    rank = np.empty(n, np.int64)
    rank[perm] = np.arange(n)
    a, b = placement_edges(problem) if edges is None else edges
    indptr = np.zeros(n + 1, np.int64)
    if a.size == 0:
        return indptr, np.zeros(0, np.int64)
    ra, rb = rank[a], rank[b]
    later = ra > rb
    owner_rank = np.where(later, ra, rb)
    nbr = np.where(later, b, a)
    del ra, rb, later
    srt = np.argsort(owner_rank, kind="stable")
    counts_k = np.bincount(owner_rank, minlength=n)
    np.cumsum(counts_k, out=indptr[1:])
    return indptr, nbr[srt]


def _place_graph(problem: Problem, perm: np.ndarray, fit: str, edges=None) -> np.ndarray:
    """Placement for any order: per buffer, sort its placed neighbours by offset and scan them."""
    scan = _first_fit_scan if fit == "first" else _best_fit_scan
    indptr, nbrs = _placed_neighbours(problem, perm, edges)
    sizes = problem.sizes.tolist()
    aligns = problem.alignments.tolist()
    off = [0] * problem.n
    top = [0] * problem.n
    ptr = indptr.tolist()
    for k, i in enumerate(perm.tolist()):
        s = sizes[i]
        if s == 0:
            continue
        p0, p1 = ptr[k], ptr[k + 1]
        if p0 == p1:
            x = 0
        else:
            nb = nbrs[p0:p1].tolist()
            x = scan(
                sorted(zip([off[j] for j in nb], [top[j] for j in nb], strict=True)), s, aligns[i]
            )
        off[i] = x
        top[i] = x + s
    return np.asarray(off, dtype=np.int64)


def _place_c(problem: Problem, perm: np.ndarray, fit: str, sweep: bool = False) -> np.ndarray:
    """Placement by the compiled core (same offsets as :func:`_place_graph`): its interval-tree
    engine ``place``, or with ``sweep`` (an order non-decreasing in start) its free-list sweep
    ``sweep``."""
    out = np.empty(problem.n, np.int64)
    core = _c_core()
    (core.sweep if sweep else core.place)(
        perm=np.ascontiguousarray(perm, np.int64),
        starts=np.ascontiguousarray(problem.starts, np.int64),
        ends=np.ascontiguousarray(problem.ends, np.int64),
        sizes=np.ascontiguousarray(problem.sizes, np.int64),
        alignments=np.ascontiguousarray(problem.alignments, np.int64),
        fit=fit,
        out=out,
    )
    return out


def greedy_offsets(
    problem: Problem,
    order="size",
    fit: str = "first",
    method: str = "auto",
    edges=None,
    engine: str = "auto",
) -> np.ndarray:
    """Offsets of the greedy placement of ``problem`` in ``order`` with rule ``fit``.

    Parameters
    ----------
    problem : Problem
        ``n`` buffers, half-open lifetimes ``[start, end)`` (steps), sizes and alignments (bytes).
    order : str, callable or array
        A name in :data:`ORDERS`, a function ``problem -> permutation``, or a permutation of
        ``0..n-1`` (int array of shape ``(n,)``); position 0 is placed first.
    fit : {"first", "best"}
        Lowest aligned offset that fits, or smallest gap that fits (see the module docstring).
    method : {"auto", "graph", "sweep"}
        Path of either engine: ``graph`` works for any order (Python: the interference graph;
        C: the interval tree); ``sweep`` needs an order non-decreasing in start (Python: the
        sorted live list; C: the free-list sweep); ``auto`` takes the sweep when it applies.
        The offsets depend on neither.
    edges : pair of int arrays or None
        Precomputed :func:`placement_edges` of ``problem`` (Python graph path only; ``None`` builds
        them when needed).
    engine : {"auto", "c", "python"}
        Placement engine (see "Engines" in the module docstring); the offsets are identical.

    Returns
    -------
    numpy int64 array, shape ``(n,)``
        Offsets in bytes, problem order; zero-size buffers get 0.

    Raises
    ------
    ValueError
        Unknown order name, fit, method or engine, or ``method="sweep"`` with an order not sorted
        by start.
    ProblemError
        The order does not return a permutation of ``0..n-1``.
    ImportError
        ``engine="c"`` and the compiled core is not built.

    Notes
    -----
    ``O(n log n + E log k)`` time for ``E`` interfering pairs and ``k`` placed neighbours per buffer
    (graph path); ``O(n log n + n L)`` for at most ``L`` buffers live at once (sweep path); C
    engine ``O(n log n + E)`` time and ``O(n)`` memory on the graph path, about
    ``O(n (log L + 64 + L / 4096))`` on the sweep path (module docstring, "Engines").

    Examples
    --------
    >>> p = Problem.from_closed([("a", 0, 1, 32), ("b", 1, 2, 16), ("c", 2, 3, 32)])
    >>> greedy_offsets(p, "size", "first").tolist()
    [0, 32, 0]
    """
    if fit not in FITS:
        raise ValueError(f"unknown fit {fit!r}; choose from {FITS}")
    if method not in ("auto", "graph", "sweep"):
        raise ValueError(f"unknown method {method!r}; choose from ('auto', 'graph', 'sweep')")
    eng = resolve_engine(engine)
    perm = _resolve_order(problem, order)
    if problem.n == 0:
        return np.zeros(0, np.int64)
    by_start = method != "graph" and bool(np.all(problem.starts[perm[1:]] >= problem.starts[perm[:-1]]))
    if method == "sweep" and not by_start:
        raise ValueError("method='sweep' needs an order that is non-decreasing in start step")
    if eng == "c":
        return _place_c(problem, perm, fit, sweep=by_start)
    if by_start:
        return _place_sweep(problem, perm, fit)
    return _place_graph(problem, perm, fit, edges)


def arena_of(problem: Problem, offsets) -> int:
    """Arena in bytes of ``offsets``: the highest ``offset + size`` over non-zero-size buffers
    (0 if none), exact for any offsets (:func:`planners.model.arena_top`)."""
    return arena_top(offsets, problem.sizes)


# ---------------------------------------------------------------------------------------------
# Planners
# ---------------------------------------------------------------------------------------------
class GreedyPlanner(Planner):
    """Greedy offset planner: any order with any fit rule (the engine, usable directly).

    Parameters
    ----------
    order : str or callable, default "size"
        A name in :data:`ORDERS` or a function ``problem -> permutation of 0..n-1``.
    fit : {"first", "best"}, default "first"
        Lowest aligned offset that fits, or smallest gap that fits.
    engine : {"auto", "c", "python"}, default "auto"
        Placement engine: the compiled core when built (``auto``), or the Python reference; the
        offsets are identical. ``plan.info["engine"]`` records the one that ran.

    Examples
    --------
    >>> from planners.examples import exercise_5_1_problem
    >>> GreedyPlanner(order="problem", fit="first").plan(exercise_5_1_problem()).arena_size
    880

    See :func:`greedy_offsets` for complexity and errors.
    """

    name = "greedy"
    family = "greedy"
    in_default_comparison = False  # its default is greedy_by_size
    #: pins pre-placed, hints tried first, gaps as pieces, pools by the spill policy
    #: (:mod:`planners.placement`); a concurrent problem over its conflict edges
    #: (:func:`planners.concurrent.greedy_concurrent`)
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native",
                     "concurrency": "native"}
    # the named subclasses share these rules (same parameters, other defaults)
    _parameter_constraints = {
        "order": [StrOptions(lambda: ORDERS), callable, "array-like"],
        "fit": [StrOptions(FITS)],
        "engine": [StrOptions(ENGINES)],
    }

    def __init__(self, order="size", fit: str = "first", engine: str = "auto") -> None:
        self.order = order
        self.fit = fit
        self.engine = engine

    def _solve(self, problem: Problem, edges=None) -> SolveResult:
        """Place ``problem``; ``edges`` (optional) are its precomputed :func:`placement_edges`
        (used by the Python engine only). A problem with compiler features (pins, hints, gaps,
        pools) is placed by :func:`planners.placement.place_features` in the same order and fit
        (``info["engine"] == "features"``); two colliding pinned buffers are reported
        ``infeasible`` (a proof: neither can move) when no choice of their candidate pools separates
        them (:func:`planners.placement.assign_pins`)."""
        if problem.features:
            fp = place_features(problem, _resolve_order(problem, self.order), self.fit)
            info = {"order": _label(self.order), "fit": self.fit, "engine": "features"}
            if fp.conflict is not None:  # pins colliding in every pool choice (a proof)
                if fp.proof is None:
                    info["stopped_by"] = "pin search limit"
                    return SolveResult(None, "timeout", info=info)
                info["proof"] = fp.proof
                return SolveResult(None, "infeasible", info=info)
            return SolveResult(fp.offsets, "heuristic", info=info,
                               pools=fp.pools if problem.pools else None)
        eng = resolve_engine(self.engine)
        off = greedy_offsets(problem, self.order, self.fit, edges=edges, engine=eng)
        info = {"order": _label(self.order), "fit": self.fit, "engine": eng}
        return SolveResult(off, "heuristic", info=info)


def _label(order) -> str:
    return order if isinstance(order, str) else getattr(order, "__name__", repr(order))


class FirstFit(GreedyPlanner):
    """First-fit in problem order (seed 002 section 5.1.1): each buffer, in the order given, at the
    lowest aligned offset not colliding with the placed buffers live at the same time."""

    name = "first_fit"

    def __init__(self, order="problem", fit: str = "first", engine: str = "auto") -> None:
        super().__init__(order, fit, engine)


class BestFit(GreedyPlanner):
    """Best-fit in start order (seed 002 section 5.1.1): each buffer, by start step, into the
    smallest gap between placed time-overlapping buffers (the space above the top one last)."""

    name = "best_fit"

    def __init__(self, order="start", fit: str = "best", engine: str = "auto") -> None:
        super().__init__(order, fit, engine)


class GreedyInOrder(GreedyPlanner):
    """Seed 000 section 8's allocator: residents first, then by first use (stable), lowest aligned
    offset that fits. Reproduces the seed's offsets table exactly."""

    name = "greedy_in_order"

    def __init__(self, order="in_order", fit: str = "first", engine: str = "auto") -> None:
        super().__init__(order, fit, engine)


class GreedyBySize(GreedyPlanner):
    """Greedy by size (TFLite Micro ``GreedyMemoryPlanner``): largest first (ties: earlier start,
    then problem order), lowest aligned offset that fits."""

    name = "greedy_by_size"

    def __init__(self, order="size", fit: str = "first", engine: str = "auto") -> None:
        super().__init__(order, fit, engine)


class GreedyBySizeBestFit(GreedyPlanner):
    """Greedy by size with best fit (Pisarchyk & Lee 2020, "Efficient Memory Management for Deep
    Neural Net Inference", Algorithm 3; XLA ``GlobalDecreasingSizeBestFitHeap``)."""

    name = "greedy_by_size_best_fit"

    def __init__(self, order="size", fit: str = "best", engine: str = "auto") -> None:
        super().__init__(order, fit, engine)


class GreedyByBreadth(GreedyPlanner):
    """Greedy by breadth (Pisarchyk & Lee 2020): steps by decreasing live bytes, each step's
    unplaced live buffers largest first, best fit (see :func:`order_by_breadth`)."""

    name = "greedy_by_breadth"

    def __init__(self, order="breadth", fit: str = "best", engine: str = "auto") -> None:
        super().__init__(order, fit, engine)


class GreedyByConflicts(GreedyPlanner):
    """TVM USMP ``greedy_by_conflicts``: most conflicts first (ties: larger size), lowest offset."""

    name = "greedy_by_conflicts"

    def __init__(self, order="conflicts", fit: str = "first", engine: str = "auto") -> None:
        super().__init__(order, fit, engine)


class LifetimeAware(GreedyPlanner):
    """Lifetime-aware allocation (seed 002 section 5.1.4): priority ``(end - start) * size``
    descending, lowest aligned offset that fits."""

    name = "lifetime_aware"

    def __init__(self, order="lifetime_area", fit: str = "first", engine: str = "auto") -> None:
        super().__init__(order, fit, engine)
