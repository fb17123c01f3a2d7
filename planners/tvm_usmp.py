"""TVM's Unified Static Memory Planner (USMP) algorithms, their orders, placement rules and random
sequence exactly: ``tvm_greedy_by_size``, ``tvm_greedy_by_conflicts`` and ``tvm_hill_climb``.

Reproductions of apache/tvm ``src/tir/usmp/algo/greedy.cc`` (``GreedyBase::PostSortAllocation``,
``GreedySize``, ``GreedyConflicts``) and ``src/tir/usmp/algo/hill_climb.cc``
(``HillClimbAllocator``). USMP was removed from TVM's main branch with the Relax rewrite; the
sources read are the last versions that carry it (before apache/tvm commit a531d170b9).

* **Pools.** The two greedy planners choose pools as USMP does (capability ``pools: native``): a
  problem's :class:`planners.model.MemoryPool` is a ``PoolInfo`` (``capacity`` its
  ``size_hint_bytes``), a buffer's candidate pools are its ``pool_candidates`` in their order (all
  pools, in the problem's order, when it names none); see :func:`usmp_greedy_offsets`. A problem
  without pools is one unbounded pool. The hill climb plans one pool at a time after the
  toolkit's spill assignment (capability ``spill``), not with USMP's own pool choice.

* **Conflicts.** A buffer's ``conflicts`` are the buffers whose lifetimes overlap its own (the
  interference graph of :mod:`planners.interference`, zero-size buffers included: USMP keeps every
  ``BufferInfo``). The conflict count is the degree.
* **Orders.** ``greedy_by_size`` sorts by size descending, then conflict count descending, then
  name (``name_hint``, here the buffer id) descending; ``greedy_by_conflicts`` by conflict count
  descending, then size descending, then name descending (:func:`usmp_order`). Ids are unique in a
  problem, so both are total orders and ``std::sort``'s instability does not show.
* **Greedy placement** (:func:`usmp_greedy_offsets`). A buffer goes at the **highest** aligned top
  of its already placed conflicts: ``max(round_up(offset_c + size_c, alignment_c))``, or 0. It never
  goes into a gap below a placed conflict; this is why TVM's published arena for its ResNet
  subgraph is 7,920,256 bytes with ``greedy_by_size`` where best-fit orders reach 7,200,256.
* **Hill climb** (:func:`usmp_hill_climb_offsets`). At most 500 attempts; each places the buffers
  in the current order with a *first-fit* rule (placed conflicts sorted by offset, the candidate
  moved above every conflict it overlaps), accepts a plan that is smaller, or a larger one with
  probability ``50 * (new - old) / new / attempt`` percent (integer arithmetic, as the original),
  else undoes the last swap; then picks one of the buffers that reach the top (in order position,
  at random), and swaps a conflict placed before it with a second-level neighbour (75 %) or another
  first-level one. It stops early when the arena is at most ``memory_pressure`` bytes (TVM passes
  USMP's memory pressure, the maximum live bytes: default here the lower bound). The result is the
  **last accepted** plan, not the best one seen, as in the original. The random numbers are
  glibc's ``rand_r`` seeded with 0 (TVM's ``rand_r(&_seedp)`` on Linux), so the plans are
  deterministic and equal to TVM's.

Alignment: TVM rounds a conflict's top up to the *conflict's* alignment. Here the result is also
rounded up to the buffer's own alignment (which changes nothing when all alignments are equal,
TVM's case) so plans of mixed-alignment problems stay valid in the interval model. Sizes and
offsets are bytes; lifetimes half-open ``[start, end)`` in steps.

Pinned by the vectors of TVM's ``tests/python/tir-usmp/test_tir_usmp_algo.py`` (``test_fanout``:
7,920,256 and 7,200,256 bytes on its ResNet subgraph; ``test_linear``: a 200,704-byte fast pool and
a 1,418,528-byte slow pool) and ``test_tir_usmp_algo_hill_climb.py`` (``test_intervals``: within
5 % of the maximum live bytes, the tolerance of TVM's last version of the test; three of the four
interval sets reach it exactly, ``deep_speech`` ends at 102,416 bytes for 100,352) in
``tests/test_peer_planners.py``. TVM itself is not installed here, so the hill climb's exact
offsets beyond those published numbers are not checked against TVM.

Complexity: the greedy rules run on the interference graph in CSR form, ``O(n log n + E)``; the
hill climb's first-fit placement runs in the compiled greedy core (:mod:`planners.greedy`) when the
alignment is uniform and no buffer has size 0 (then TVM's scan and the core's first fit give the
same offsets), else in a Python scan of each buffer's placed conflicts (``O(E log k)``), 500 times
at most.
"""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np

from .base import Planner, SolveResult
from .bounds import lower_bound
from .errors import SolverError
from .greedy import greedy_offsets
from .interference import interference_csr, interference_degrees
from .model import Problem
from .params import OPTIONAL_POSITIVE_SECONDS, Interval
from .time_limits import Deadline

__all__ = [
    "TvmGreedyBySize",
    "TvmGreedyByConflicts",
    "TvmHillClimb",
    "glibc_rand_r",
    "usmp_order",
    "usmp_greedy_offsets",
    "usmp_first_fit_offsets",
    "usmp_hill_climb_offsets",
]

_U32 = 0xFFFFFFFF
#: Attempts of ``HillClimbAllocator::PlanMemory`` (``_max_attempts``).
MAX_ATTEMPTS = 500


def glibc_rand_r(seed: int) -> tuple[int, int]:
    """One step of glibc's ``rand_r`` (stdlib/rand_r.c): ``(value, next_seed)``.

    Three rounds of the linear congruential step ``next = next * 1103515245 + 12345`` (mod
    ``2**32``), keeping 11 + 10 + 10 high bits; ``value`` is in ``0 .. 2**31 - 1``. TVM's hill climb
    calls ``rand_r(&seed)`` with ``seed = 0`` on Linux.

    >>> glibc_rand_r(0)[0]
    1012484
    """
    nxt = seed & _U32
    nxt = (nxt * 1103515245 + 12345) & _U32
    result = (nxt >> 16) % 2048
    nxt = (nxt * 1103515245 + 12345) & _U32
    result = (result << 10) ^ ((nxt >> 16) % 1024)
    nxt = (nxt * 1103515245 + 12345) & _U32
    result = (result << 10) ^ ((nxt >> 16) % 1024)
    return result, nxt


class _RandR:
    """glibc ``rand_r`` with its state (seed 0, as TVM's hill climb)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def __call__(self) -> int:
        value, self.seed = glibc_rand_r(self.seed)
        return value


def _names_key(problem: Problem) -> np.ndarray:
    """Rank of each buffer id in ascending string order (``std::string`` comparison)."""
    ids = problem.ids
    rank = np.empty(problem.n, np.int64)
    rank[np.asarray(sorted(range(problem.n), key=ids.__getitem__), np.int64)] = np.arange(problem.n)
    return rank


def usmp_order(problem: Problem, key: str = "size", degrees=None) -> np.ndarray:
    """The order in which USMP's greedy (``key="size"``: ``GreedySize``, also the hill climb's
    initial ``sort_vector``) or ``key="conflicts"`` (``GreedyConflicts``) places the buffers.

    ``size``: size descending, conflict count descending, id descending. ``conflicts``: conflict
    count descending, size descending, id descending. Returns a permutation (int64 array, first
    placed first). ``degrees``: the conflict counts if already computed.

    Raises ``ValueError`` for another ``key``.
    """
    if key not in ("size", "conflicts"):
        raise ValueError(f"unknown USMP order {key!r}; choose 'size' or 'conflicts'")
    if degrees is None:
        indptr, _ = interference_csr(problem)
        degrees = np.diff(indptr)
    name = _names_key(problem)
    if key == "size":
        return np.lexsort((-name, -degrees, -problem.sizes)).astype(np.int64)
    return np.lexsort((-name, -problem.sizes, -degrees)).astype(np.int64)


def _round_up(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    return -(-x // a) * a


def usmp_greedy_offsets(problem: Problem, order: np.ndarray, csr=None,
                        name: str = "tvm_greedy") -> tuple[np.ndarray, np.ndarray]:
    """Offsets (bytes) and pool indices of ``GreedyBase::PostSortAllocation``: buffers in
    ``order``; in each candidate pool the buffer would go at the highest
    ``round_up(offset + size, alignment)`` of its placed conflicts in that pool (0 if none); a pool
    where that (or 0) plus the size exceeds the pool's capacity (``size_hint_bytes``) drops out;
    the buffer takes the first remaining candidate in its own candidate order
    (``SelectPlacementPool``). Offsets are relative to the pool and rounded up to the buffer's and
    the pool's alignment. A problem without pools is one unbounded pool (index 0).
    ``csr``: the interference CSR if already built.

    One deviation: in TVM, a conflict whose top still fits re-inserts a pool that an earlier
    conflict had dropped (``std::unordered_map::operator[]``), which can overlap the two; here a
    dropped pool stays dropped, so every plan is valid.

    Raises :class:`planners.errors.SolverError` when no candidate pool has room (USMP's
    "the space available in the provided pools exceeded" error).

    ``O(n + E)`` numpy work in one pass over the buffers.
    """
    n = problem.n
    indptr, nbrs = interference_csr(problem) if csr is None else csr
    sizes = problem.sizes
    align = problem.alignments
    placed = np.zeros(n, bool)
    off = np.zeros(n, np.int64)
    pool = np.zeros(n, np.int64)
    atop = np.zeros(n, np.int64)  # aligned top of each placed buffer
    ptr = indptr.tolist()
    pools = problem.pools
    ids = problem.ids
    if pools:
        own = [[problem.pool_index(c) for c in problem.candidates.get(b, ())]
               or list(range(len(pools))) for b in ids]
    for i in order.tolist():
        nb = nbrs[ptr[i] : ptr[i + 1]]
        nb = nb[placed[nb]] if nb.size else nb
        a = int(align[i])
        z = int(sizes[i])
        if not pools:
            x = int(atop[nb].max()) if nb.size else 0
            x = -(-x // a) * a
            k = 0
        else:
            for k in own[i]:
                q = pools[k]
                inp = nb[pool[nb] == k]
                x = int(atop[inp].max()) if inp.size else 0
                step = int(np.lcm(a, q.alignment))
                x = -(-x // step) * step
                if q.capacity is None or x + z <= q.capacity:
                    break
            else:
                raise SolverError(
                    f"{name}: buffer {ids[i]!r} ({z} bytes) fits in none of its pools "
                    f"{[pools[k].name for k in own[i]]} (TVM USMP: the space available in the "
                    "provided pools exceeded)")
        off[i] = x
        pool[i] = k
        atop[i] = -(-(x + z) // a) * a
        placed[i] = True
    return off, pool


def usmp_first_fit_offsets(problem: Problem, order: np.ndarray, csr=None,
                           use_core: bool | None = None) -> np.ndarray:
    """Offsets (bytes) of ``HillClimbAllocator::greedy`` for one unbounded pool: buffers in
    ``order``; each one's placed conflicts sorted by offset; the candidate (from 0) moves to a
    conflict's ``round_up(offset + size, alignment)`` whenever that is above it and the conflict
    starts below ``candidate + size`` (zero-size conflicts included), rounded up to the buffer's
    own alignment at each move (TVM has one alignment in practice; this keeps the scan valid when
    alignments differ).

    ``use_core``: run the compiled greedy core's first fit (same offsets when the alignment is
    uniform and no size is 0; ``None`` decides by that rule), else a Python scan.
    """
    n = problem.n
    sizes = problem.sizes
    if use_core is None:
        use_core = bool(n == 0 or (np.all(sizes > 0)
                                   and np.all(problem.alignments == problem.alignments[0])))
    if use_core:
        return greedy_offsets(problem, order, "first")
    indptr, nbrs = interference_csr(problem) if csr is None else csr
    sz = sizes.tolist()
    al = problem.alignments.tolist()
    placed = [False] * n
    off = [0] * n
    ptr = indptr.tolist()
    for i in order.tolist():
        conf = [j for j in nbrs[ptr[i] : ptr[i + 1]].tolist() if placed[j]]
        conf.sort(key=off.__getitem__)
        cand = 0
        s = sz[i]
        a = al[i]
        for j in conf:
            nxt = -(-(off[j] + sz[j]) // al[j]) * al[j]
            if nxt > cand and cand + s > off[j]:
                cand = -(-nxt // a) * a  # own alignment inside the scan: the scan stays valid
        off[i] = cand
        placed[i] = True
    return np.asarray(off, np.int64)


#: Seconds per interfering pair to build the interference graph (CSR) the climb draws its swaps
#: from (:func:`planners.interference.interference_csr`), about twice the rate measured on a
#: 2-core machine at a load of 7 (12.7 s for the 9.9M pairs of a 10^5-buffer random problem,
#: 1.3e-6 s per pair). With a time limit the graph is built only when this estimate fits in what
#: is left (see :func:`usmp_hill_climb_offsets`).
CSR_SECONDS_PER_PAIR = 2.5e-6


def usmp_hill_climb_offsets(problem: Problem, memory_pressure: int | None = None,
                            attempts: int = MAX_ATTEMPTS,
                            time_limit: float | None = None,
                            start: float | None = None) -> tuple[np.ndarray | None, dict]:
    """Offsets (bytes) of TVM's ``HillClimbAllocator::PlanMemory`` for one unbounded pool, and
    ``info`` (``attempts`` run, ``accepted`` plans).

    ``memory_pressure``: stop once an accepted arena is at most this many bytes (default: the
    lower bound, max live bytes, what USMP passes). ``attempts``: TVM's ``_max_attempts`` (500).
    ``time_limit``: wall-clock seconds (:class:`planners.time_limits.Deadline`, counted from
    ``start``, a :func:`time.perf_counter` instant, default the call) for the whole climb (not in
    TVM; ``info["stopped"]`` says which limit ended it): an attempt is started only when the
    longest attempt so far fits in what is left, and the interference graph (``O(n log n + E)``
    for ``E`` interfering pairs) only when its estimate (:data:`CSR_SECONDS_PER_PAIR`) does;
    otherwise the climb returns the best plan it has (attempt 0, TVM's greedy first fit), or
    ``None`` when the greedy itself needs the graph (a zero size or mixed alignments) that does
    not fit. See the module docstring for the rules; the random sequence is glibc ``rand_r``
    from seed 0.
    """
    deadline = None if time_limit is None else Deadline(time_limit, start)
    timed_out = False
    n = problem.n
    if n == 0:
        return np.zeros(0, np.int64), {"attempts": 0, "accepted": 0}
    desired = lower_bound(problem) if memory_pressure is None else int(memory_pressure)
    # conflict counts without listing the edges (the same counts as the CSR's row lengths)
    degrees = interference_degrees(problem)
    pairs = int(degrees.sum()) // 2
    sizes = problem.sizes
    use_core = bool(np.all(sizes > 0) and np.all(problem.alignments == problem.alignments[0]))
    csr = None

    def graph_fits() -> bool:
        # whether the interference graph is (or can be) built within the time left
        nonlocal csr
        if csr is None:
            if deadline is not None and pairs * CSR_SECONDS_PER_PAIR > deadline.left():
                return False
            csr = interference_csr(problem)
        return True

    def stopped_info(result, attempt, accepted, why):
        info = {"attempts": attempt, "accepted": accepted, "stopped": "time_limit",
                "stopped_because": why, "interference_pairs": pairs}
        deadline.record(info)
        return result, info

    if not use_core and not graph_fits():
        return stopped_info(None, 0, 0, "interference graph estimated "
                            f"{pairs * CSR_SECONDS_PER_PAIR:.1f} s, not built")
    order = usmp_order(problem, "size", degrees)  # buffer at each position
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    rnd = _RandR(0)

    def swap(i1: int, i2: int) -> None:
        if i1 == i2:
            return
        b1, b2 = int(order[i1]), int(order[i2])
        order[i1], order[i2] = b2, b1
        pos[b1], pos[b2] = i2, i1

    total_size = 0
    swap_i1 = swap_i2 = -1
    pool: np.ndarray | None = None
    result: np.ndarray | None = None
    accepted = 0
    attempt = 0
    longest = 0.0  # seconds of the longest attempt so far
    for attempt in range(attempts):
        if attempt and deadline is not None and deadline.left() < longest:
            timed_out = True
            attempt -= 1
            break
        t_attempt = time.perf_counter()
        rollback = pool
        pool = usmp_first_fit_offsets(problem, order, csr, use_core)
        longest = max(longest, time.perf_counter() - t_attempt)
        total = int((pool + sizes).max())
        accept = total_size == 0 or (
            total_size > total
            or rnd() % 100 < int(50 * (total - total_size) // total // attempt)
        )
        if accept:
            result = pool
            accepted += 1
            total_size = total
            if total_size <= desired:
                break
        else:
            swap(swap_i2, swap_i1)
            pool = rollback
        if not graph_fits():
            return stopped_info(result, attempt + 1, accepted, "interference graph estimated "
                                f"{pairs * CSR_SECONDS_PER_PAIR:.1f} s, not built")
        indptr, nbrs = csr
        tops = pool + sizes
        top = int(tops.max())
        at_top = np.flatnonzero(tops == top)
        node = int(order[np.sort(pos[at_top])[rnd() % at_top.size]])
        nb = nbrs[indptr[node] : indptr[node + 1]]
        first = np.sort(pos[nb[pos[nb] < pos[node]]])  # positions, ascending
        # second level (a multiset): for every conflict c1 of node, c1's conflicts placed before
        # c1; only its size and, when drawn, its k-th smallest position are needed (np.partition)
        if nb.size:
            c2 = np.concatenate([nbrs[indptr[c] : indptr[c + 1]] for c in nb.tolist()])
            owner_pos = np.repeat(pos[nb], indptr[nb + 1] - indptr[nb])
            c2_pos = pos[c2]
            second = c2_pos[c2_pos < owner_pos]
        else:
            second = first[:0]
        if first.size == 0:
            continue
        buf1 = int(order[first[rnd() % first.size]])
        buf2 = buf1
        while buf2 == buf1:
            if second.size and rnd() % 100 > 25:
                k = rnd() % second.size
                buf2 = int(order[np.partition(second, k)[k]])
            else:
                buf2 = int(order[first[rnd() % first.size]])
            if second.size < 2 and first.size < 2:
                break
        if buf1 == buf2:
            continue
        swap_i1, swap_i2 = int(pos[buf1]), int(pos[buf2])
        swap(swap_i1, swap_i2)
    assert result is not None  # attempt 0 is always accepted
    info = {"attempts": attempt + 1, "accepted": accepted}
    if time_limit is not None:
        info["stopped"] = "time_limit" if timed_out else "attempts_or_pressure"
        deadline.record(info)
    return result, info


class _UsmpGreedy(Planner):
    family = "peer"
    in_default_comparison = False  # a peer baseline: run by ``make bench-peers``
    _parameter_constraints: dict = {}  # no parameters
    _capabilities = {"pools": "native"}  # USMP's own pool choice (pool candidates, size hints)
    _key = "size"

    def _solve(self, problem: Problem) -> SolveResult:
        csr = interference_csr(problem)
        order = usmp_order(problem, self._key, np.diff(csr[0]))
        off, pool = usmp_greedy_offsets(problem, order, csr, self.name)
        return SolveResult(off, "heuristic", pools=pool if problem.pools else None)


class TvmGreedyBySize(_UsmpGreedy):
    """TVM USMP ``greedy_by_size`` (src/tir/usmp/algo/greedy.cc ``GreedySize``): size descending
    (ties: more conflicts, then id descending), each buffer just above its highest placed conflict,
    gaps never reused. No parameters. See :mod:`planners.tvm_usmp`."""

    name = "tvm_greedy_by_size"
    _key = "size"


class TvmGreedyByConflicts(_UsmpGreedy):
    """TVM USMP ``greedy_by_conflicts`` (greedy.cc ``GreedyConflicts``): conflict count descending
    (ties: larger size, then id descending), placed as :class:`TvmGreedyBySize`. No parameters."""

    name = "tvm_greedy_by_conflicts"
    _key = "conflicts"


class TvmHillClimb(Planner):
    """TVM USMP ``hill_climb`` (src/tir/usmp/algo/hill_climb.cc), its random sequence included
    (glibc ``rand_r``, seed 0), so deterministic.

    Parameters
    ----------
    memory_pressure : int or None, default None
        Stop once an accepted arena is at most this many bytes; ``None``: the problem's lower bound
        (max live bytes), the memory pressure USMP passes.
    time_limit : float or None, default None
        Wall-clock seconds for the whole call (not in TVM; a cap for benchmarks on large
        problems, where one attempt can take a second and the interference graph longer): no
        attempt is started that the longest so far says cannot finish in time, and the graph is
        not built when its estimate does not fit (:func:`usmp_hill_climb_offsets`); the plan is
        then the best accepted attempt (status ``heuristic``), or none (``timeout``) when not
        even TVM's greedy fitted. ``info`` records ``time_limit`` and ``setup_seconds``.
    """

    name = "tvm_hill_climb"
    family = "peer"
    in_default_comparison = False  # a peer baseline: run by ``make bench-peers``
    _parameter_constraints = {
        "memory_pressure": [Interval(Integral, 0, None, closed="left", unit="bytes"), None],
        "time_limit": OPTIONAL_POSITIVE_SECONDS,
    }

    def __init__(self, memory_pressure: int | None = None,
                 time_limit: float | None = None) -> None:
        self.memory_pressure = memory_pressure
        self.time_limit = time_limit

    def _solve(self, problem: Problem) -> SolveResult:
        off, info = usmp_hill_climb_offsets(problem, self.memory_pressure,
                                            time_limit=self.time_limit)
        return SolveResult(off, "heuristic" if off is not None else "timeout", info=info)
