"""``exact_search``: a complete search for the fixed-capacity decision problem, compiled core.

Given a problem and a capacity (bytes), either find offsets such that every buffer lies in
``[0, capacity)`` and buffers live at the same step (half-open ``[start, end)`` lifetimes in
schedule steps) never overlap in address, or prove that none exist. It is the dynamic storage
allocation decision problem, NP-complete in general; the search is exponential in the worst case
but solves MiniMalloc's challenging suite (A-F, 150-300 buffers) in seconds.

Method (MiniMalloc, Moffitt, ASPLOS 2023; the implementation is our own C99 in
``planners/_ext/_exact_search.c``), each technique a named switch, all on by default:

``canonical_only``
    Only canonical layouts: each buffer goes to the lowest aligned offset above the buffers already
    placed that are live with it, and buffers are placed in non-decreasing ``(offset, rank)``
    order, so every canonical layout is enumerated once. Any feasible problem has a canonical
    solution (push every buffer down), so the search stays complete.
``section_inference``
    Time is cut into *sections* at lifetime end points (only sections not dominated by a
    neighbour are kept). For every section, ``floor + unplaced bytes <= capacity`` must hold,
    where the floor is the highest placed top in the section, raised to the current offset
    (placements never go lower, when canonical) and to the smallest min offset of an unplaced
    member.
``dynamic_ordering``
    At every node try the unplaced buffers by increasing min offset, ties by a static rank.
``check_dominance``
    Never place a buffer at an offset ``>= min offset + size`` of another unplaced buffer: that
    buffer would fit in the gap below, so a layout with a lower sum of offsets exists. Also
    breaks symmetry: identical buffers (same size, alignment and sections) are interchangeable,
    so they are placed in problem order only.
``decompose``
    When no unplaced buffer crosses a section boundary, both sides are independent subproblems
    and are solved one after the other (statically at the start and dynamically during search).
``memo_floor_profiles``
    MiniMalloc's "same floor profile already explored" cut. With canonical placements every
    placed buffer lies below every later one, so the placed layout acts on the rest of the search
    only through the floor profile (skyline) it leaves: the min offsets of the unplaced buffers.
    A subtree is therefore determined by its section range, its unplaced buffers with their min
    offsets and static ranks, and the canonical constraint ``(last offset, last rank)``, a larger
    constraint admitting a subset of the completions. Every subtree that ends with "no
    completion" is stored in a hash set under that key with its constraint; a node reached again
    (through another placement order giving the same profile) with a constraint at least the
    stored one is cut. Keys are stored in full and compared exactly (a hash collision never cuts
    anything); memory is bounded by ``memo_megabytes`` (keys plus table): at the cap the set is
    emptied and starts again (a key holds ``3 + 3 k`` int64 for ``k`` unplaced buffers, so on
    MiniMalloc's D, 213 buffers, 256 MiB hold some 10^5 subtrees). Only proved failures are
    stored, so the answer is unchanged (tested on/off).
    A :class:`SearchMemo` passed as ``memo`` keeps the set across calls on the same problem
    (``minimize``'s probes): a failure proved at capacity ``K`` holds at every capacity ``<= K``,
    so each entry keeps its capacity and is used only at capacities at most that; a probe
    repeated with a longer time limit skips every subtree the shorter one proved empty.

The static rank comes from ``preorderings``: one string per ranking, each a sequence of keys, all
descending, ties by problem order: ``T`` the largest unplaced bytes of any section the buffer
spans, ``W`` lifetime width (steps), ``A`` area (size x width), ``C`` number of sections spanned,
``Z`` size, ``R`` a pseudo-random number drawn from ``seed`` and the buffer (so ``"WR"`` breaks
ties of ``W`` at random, and ``"R"`` is a random order: different seeds give restarts that explore
different parts of the tree, the usual cure for heavy-tailed search times). Each (sub)problem is ranked when its search starts, with the totals left at that
point. With several rankings the search runs them round robin with a node budget that doubles
each round (MiniMalloc's default is the three rankings ``WAT``, ``TAW``, ``TWA``), which protects
against one unlucky order; a completed search under any ranking is a proof.

``heuristic_first``
    Before searching, run the cheap heuristics of :func:`planners.warmstart.best_heuristic` (the
    greedy family, the colouring planners, ``naive``) and stop at the first whose arena fits the
    capacity: the answer is then "fits" at once (``info["answered_by"]`` names the heuristic), so
    the search is never worse than a heuristic it could have run. Their time counts against
    ``time_limit``; none is started after :data:`planners.warmstart.HEURISTIC_SHARE` of it. This shortcut leaves the search itself unchanged (still complete).

Zero-size buffers take no space and get offset 0. Offsets respect each buffer's alignment
(min offsets are rounded up to it), so the method is complete for aligned problems as well.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .base import Planner, SolveResult
from .bounds import lower_bound
from .errors import ProblemError
from .feature_cpsat import solve_features
from .model import Problem
from .params import POSITIVE_SECONDS, InstanceOf, Interval, Satisfies, SequenceOf
from .time_limits import Deadline
from .warmstart import HEURISTIC_SHARE, best_heuristic

__all__ = ["ExactSearch", "SearchMemo", "sections", "PREORDER_KEYS"]

#: Keys of a static preordering string (all sorted descending), see :class:`ExactSearch`.
PREORDER_KEYS = {
    "T": "largest unplaced bytes of a section the buffer spans (total)",
    "W": "lifetime width end - start (steps)",
    "A": "area = size x width (bytes x steps)",
    "C": "number of sections the buffer spans",
    "Z": "size (bytes)",
    "R": "pseudo-random number from the seed and the buffer (random tie-breaking)",
}


#: One static ranking: 1-8 characters from :data:`PREORDER_KEYS`.
_PREORDERING = Satisfies(
    lambda k: isinstance(k, str) and 1 <= len(k) <= 8 and not set(k) - set(PREORDER_KEYS),
    f"a string of 1-8 characters from {''.join(PREORDER_KEYS)!r}",
)


def _core():
    try:
        from . import _exact_search
    except ImportError as e:  # pragma: no cover - depends on the build
        raise ImportError(
            "planners._exact_search is not built; run `pip install -e .` (needs gcc and the "
            f"Python headers): {e}"
        ) from None
    return _exact_search


class SearchMemo:
    """A floor-profile memo kept across :class:`ExactSearch` calls on one problem.

    Pass the same object as ``ExactSearch(memo=...)`` to several calls (probes at decreasing
    capacities, or one capacity with growing time limits); each call reuses the failures the
    earlier ones proved at a capacity at least its own. Used with another problem it is cleared
    first (the compiled core keeps a fingerprint of sizes, alignments and sections).

    Parameters
    ----------
    megabytes : float
        Memory cap in MiB (keys plus hash table); when reached, the memo is emptied and starts
        again.
    """

    def __init__(self, megabytes: float = 256.0) -> None:
        self.megabytes = megabytes
        self._capsule = _core().memo_new(int(max(0.0, float(megabytes)) * 2**20))

    def __repr__(self) -> str:
        return f"SearchMemo(megabytes={self.megabytes!r})"


def sections(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut time into sections and give each buffer its half-open section range.

    Parameters
    ----------
    starts, ends : int arrays of shape ``(n,)``
        Half-open lifetimes ``[start, end)`` in schedule steps.

    Returns
    -------
    times : int array of shape ``(m,)``
        For section ``k``, the step at which it ends (exclusive): section ``k`` is the elementary
        interval ``[t, times[k])`` between the previous distinct end point ``t`` and ``times[k]``.
        Only elementary intervals whose right end is some buffer's ``end`` are kept: any other
        interval's live set is a subset of the next one's, so it adds no constraint.
    slo, shi : int arrays of shape ``(n,)``
        Buffer ``i`` is live in sections ``slo[i] <= k < shi[i]`` (never empty).

    Runs in ``O(n log n)``.

    Examples
    --------
    >>> t, lo, hi = sections(np.array([0, 1, 2]), np.array([2, 3, 4]))
    >>> t.tolist(), lo.tolist(), hi.tolist()
    ([2, 3, 4], [0, 0, 1], [1, 2, 3])
    """
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    if starts.size == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    pts = np.unique(np.concatenate([starts, ends]))
    # Elementary interval j is [pts[j], pts[j+1]); keep it iff pts[j+1] is some buffer's end.
    keep = np.isin(pts[1:], ends)
    kept_before = np.concatenate([[0], np.cumsum(keep)])  # kept intervals with index < j
    slo = kept_before[np.searchsorted(pts, starts)]
    shi = kept_before[np.searchsorted(pts, ends)]
    return pts[1:][keep], slo.astype(np.int64), shi.astype(np.int64)


class ExactSearch(Planner):
    """Complete search for the fixed-capacity decision problem (MiniMalloc-style, compiled core).

    Parameters
    ----------
    capacity : int or None
        Capacity in bytes; ``None`` takes ``problem.capacity``. One of them is required for a
        plain problem; a problem with compiler features and neither (nor pools) is minimised
        by the CP-SAT feature model instead (the least arena, status ``optimal`` when proved).
    time_limit : float
        Wall-clock seconds for the whole call before giving up with status ``"timeout"``
        (:class:`planners.time_limits.Deadline`): the lower bound, the heuristics and the
        sections are counted, and the compiled core gets what is left
        (``info["solver_time_limit"]``; ``info["setup_seconds"]``, ``info["time_limit"]``),
        counted from its entry, so its own set-up (interference lists of ``E`` pairs) is counted
        too; it reads the clock every 4,096 work units. A problem with compiler features goes to
        :func:`planners.feature_cpsat.solve_features` with the same limit.
    node_limit : int or None
        Maximum search nodes (``None``: no limit); reaching it also gives status ``"timeout"``
        (``info["stopped_by"] == "node_limit"``).
    canonical_only, section_inference, dynamic_ordering, check_dominance, decompose : bool
        The search techniques described in the module docstring (all on by default; switching
        any off keeps the search complete, only slower).
    memo_floor_profiles : bool
        The floor-profile memo (module docstring); on by default.
    memo_megabytes : float
        Memory cap of the memo in MiB (default 256; about ``24 + 24 k`` bytes per stored subtree
        with ``k`` unplaced buffers, plus 36 bytes per hash slot).
    memo : SearchMemo or None
        A memo kept across calls (its own cap applies instead of ``memo_megabytes``); ``None``
        gives each call a fresh one.
    heuristic_first : bool
        Answer "fits" with the first cheap heuristic whose arena fits the capacity, before any
        search (module docstring; on by default, off for ablations).
    preorderings : tuple of str
        Static rankings tried round robin (keys in :data:`PREORDER_KEYS`); one string disables
        the round robin.
    seed : int
        Seed of the pseudo-random key ``R`` (``0 <= seed < 2**64``); without ``R`` in the
        preorderings it has no effect.

    Returns (via :meth:`plan`)
    --------------------------
    A :class:`planners.model.Plan` with status ``"optimal"`` or ``"feasible"`` (a layout within
    the capacity was found: the decision question is answered yes; ``optimal`` only when its arena
    equals the lower bound), ``"infeasible"`` (the search finished: no
    layout fits; ``best_bound = capacity + 1``) or ``"timeout"`` (offsets all zero, nothing
    proved). ``info`` holds ``nodes`` (search nodes), ``attempts`` (round-robin attempts),
    ``sections``, ``capacity``, ``memo_hits`` (subtrees cut by the memo), ``memo_entries``
    (failed subtrees stored) and ``answered_by`` (``"search"`` or the heuristic's name), plus
    the heuristics' arenas when ``heuristic_first`` ran them.

    Raises
    ------
    ParameterError
        (from :meth:`plan`) A value ``_parameter_constraints`` does not allow (``time_limit`` not
        > 0, an unknown preordering key, ...).
    ProblemError
        Neither ``capacity`` nor ``problem.capacity`` is set.
    CapacityError
        (from :meth:`plan`) ``problem.capacity`` is below the lower bound.
    KeyboardInterrupt
        Ctrl-C (SIGINT) during the search: the compiled core looks for pending signals every
        50 ms (taking the GIL back briefly) and stops; nothing is returned.

    Notes
    -----
    Worst case exponential; each node costs ``O(k log k + d + s)`` for ``k`` unplaced buffers,
    ``d`` buffers interfering with the placed one and ``s`` sections. Deterministic: same problem
    and parameters give the same layout (node counts, not wall time, decide the round robin).

    References
    ----------
    M. D. Moffitt, "MiniMalloc: A Lightweight Memory Allocator for Hardware-Accelerated Machine
    Learning", ASPLOS 2023. Seed 002 (textbook chapter on memory planning) for the problem.

    Examples
    --------
    >>> from planners import Problem
    >>> p = Problem.from_arrays([0, 0, 1], [1, 2, 2], [4, 2, 4], capacity=6)
    >>> ExactSearch().plan(p).status
    'optimal'
    >>> ExactSearch(capacity=6).plan(Problem.from_arrays([0, 0, 0], [1, 1, 1], [3, 2, 2])).status
    'infeasible'
    """

    name = "exact_search"
    family = "exact"
    #: decided by the CP-SAT feature model (:mod:`planners.feature_cpsat`)
    _capabilities = {"pins": "native", "hints": "native", "gaps": "native", "pools": "native"}
    requires_capacity = True

    def needs_capacity(self, problem) -> bool:
        """A plain problem needs a capacity (the decision problem); one with compiler features
        (:attr:`planners.Problem.features`) and none is minimised by the feature model.
        Decided on what :meth:`_solve` sees: :meth:`plan` first merges colocation groups (not
        native here) into one buffer each (:meth:`planners.Problem.collapse`), which may leave
        a plain problem (groups alone, or members whose gaps the merged buffer fills)."""
        target = problem.collapse()[0] if problem.colocations else problem
        return not target.features

    _parameter_constraints = {
        "capacity": [Interval(Integral, 0, None), None],
        "time_limit": [POSITIVE_SECONDS],
        "node_limit": [Interval(Integral, 1, None), None],
        "canonical_only": ["boolean"],
        "section_inference": ["boolean"],
        "dynamic_ordering": ["boolean"],
        "check_dominance": ["boolean"],
        "decompose": ["boolean"],
        "memo_floor_profiles": ["boolean"],
        "memo_megabytes": [Interval(Real, 0, None)],
        "memo": [InstanceOf(SearchMemo), None],
        "preorderings": [_PREORDERING, SequenceOf(_PREORDERING)],
        "heuristic_first": ["boolean"],
        "seed": [Interval(Integral, 0, 2**64 - 1)],  # the core's uint64 seed of key R
    }

    def __init__(
        self,
        capacity: int | None = None,
        time_limit: float = 60.0,
        node_limit: int | None = None,
        canonical_only: bool = True,
        section_inference: bool = True,
        dynamic_ordering: bool = True,
        check_dominance: bool = True,
        decompose: bool = True,
        memo_floor_profiles: bool = True,
        memo_megabytes: float = 256.0,
        memo: SearchMemo | None = None,
        preorderings: tuple[str, ...] = ("WAT", "TAW", "TWA"),
        heuristic_first: bool = True,
        seed: int = 0,
    ) -> None:
        self.capacity = capacity
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.canonical_only = canonical_only
        self.section_inference = section_inference
        self.dynamic_ordering = dynamic_ordering
        self.check_dominance = check_dominance
        self.decompose = decompose
        self.memo_floor_profiles = memo_floor_profiles
        self.memo_megabytes = memo_megabytes
        self.memo = memo
        self.preorderings = preorderings
        self.heuristic_first = heuristic_first
        self.seed = seed

    def _solve(self, problem: Problem) -> SolveResult:
        cap = self.capacity if self.capacity is not None else problem.capacity
        if problem.features:
            # the compiled core packs plain rectangles only: pins, gaps and pools are decided by
            # the complete CP-SAT feature model (planners.feature_cpsat), which proves
            # infeasibility as the search does. Without a capacity (and without pools, whose
            # capacities apply) there is no question to decide: the model finds the least
            # arena (or the best within the time limit), never "infeasible" for a capacity
            # nobody gave.
            if cap is None and not problem.pools:
                return solve_features(problem, None, "minimize", self.time_limit)
            return solve_features(problem, cap, "decide", self.time_limit)
        if cap is None:
            raise ProblemError(
                f"problem {problem.name!r}: exact_search solves the fixed-capacity decision "
                "problem; set problem.capacity or the planner's capacity parameter (bytes)"
            )
        cap = int(cap)
        clock = Deadline(self.time_limit)  # the whole call: bound, heuristics, sections, core
        t0 = clock.start
        prefs = (
            (self.preorderings,) if isinstance(self.preorderings, str) else tuple(self.preorderings)
        )
        n = problem.n
        offsets = np.zeros(n, np.int64)
        lb = lower_bound(problem)
        info = {"capacity": cap, "nodes": 0, "attempts": 0, "sections": 0}
        if lb > cap:
            info["answered_by"] = "lower_bound"
            return SolveResult(None, "infeasible", best_bound=lb, info=info)
        live = np.flatnonzero(problem.sizes > 0)
        if live.size == 0:
            info["answered_by"] = "search"
            return SolveResult(offsets, "optimal", info=info)
        if self.heuristic_first:
            warm, arena, winfo = best_heuristic(
                problem, stop_at=cap, deadline=t0 + HEURISTIC_SHARE * float(self.time_limit)
            )
            info["heuristic_arenas"] = winfo["heuristic_arenas"]
            info["heuristic_seconds"] = winfo["heuristic_seconds"]
            if arena <= cap:
                info["answered_by"] = winfo["warm_start"]
                # the decision answer "fits", as for the search (plan() keeps "optimal" only
                # when the arena equals the lower bound)
                return SolveResult(warm, "optimal", lb, info)
        sizes = problem.sizes[live]
        starts, ends = problem.starts[live], problem.ends[live]
        aligns = problem.alignments[live]
        _, slo, shi = sections(starts, ends)
        ns = int(shi.max())
        info["sections"] = ns
        left = clock.solver_seconds()  # the core counts it from its entry, set-up included
        clock.record(info)
        if left is None:
            info["stopped_by"] = "time_limit"
            return SolveResult(None, "timeout", best_bound=lb, info=info)
        status, offs, nodes, attempts, hits, entries = _core().search(
            sizes=sizes.tolist(),
            aligns=aligns.tolist(),
            slo=slo.tolist(),
            shi=shi.tolist(),
            widths=(ends - starts).tolist(),
            n_sections=ns,
            capacity=cap,
            preorderings=list(prefs),
            time_limit=left,
            node_limit=int(self.node_limit or 0),
            memo_bytes=int(max(0.0, float(self.memo_megabytes)) * 2**20),
            memo=self.memo._capsule if self.memo is not None else None,
            canonical_only=bool(self.canonical_only),
            section_inference=bool(self.section_inference),
            dynamic_ordering=bool(self.dynamic_ordering),
            check_dominance=bool(self.check_dominance),
            decompose=bool(self.decompose),
            memo_floor_profiles=bool(self.memo_floor_profiles),
            seed=int(self.seed),
        )
        info.update(
            nodes=int(nodes), attempts=int(attempts), memo_hits=int(hits), memo_entries=int(entries)
        )
        if status in ("found", "infeasible"):
            info["answered_by"] = "search"
        if status == "found":
            offsets[live] = offs
            return SolveResult(offsets, "optimal", best_bound=lb, info=info)
        if status == "infeasible":
            return SolveResult(None, "infeasible", best_bound=cap + 1, info=info)
        info["stopped_by"] = "node_limit" if status == "node_limit" else "time_limit"
        return SolveResult(None, "timeout", best_bound=lb, info=info)
