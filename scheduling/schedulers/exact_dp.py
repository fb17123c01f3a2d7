"""Optimal-peak scheduling by dynamic programming over sets of scheduled operators (Serenity),
divided at the graph's cut points."""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np

from planners.params import OPTIONAL_POSITIVE_SECONDS, Interval, StrOptions

from ..graph import Graph
from .base import Scheduler, ScheduleResult
from .bounds import CUT_MAX_OPS, ENGINES, ancestor_matrix, complete_cuts, order_bound_details
from .budget_search import BudgetSearch
from .list_base import list_schedule
from .memsim import MemoryModel, shared_notes
from .pivot_search import PivotSearch

__all__ = ["ExactDP", "initial_order", "SEARCH_CANDIDATES", "MEMO_BYTES"]

#: The pivot splits are asked only while the incumbent is within this factor of the proved
#: bound (a proof is within reach near the bound; farther, the probes find better orders).
PIVOT_GAP = 1.03

#: Memory for one segment's DP memo (bytes, estimated at ``200 + k / 8`` per state of a
#: ``k``-operator segment): it caps the states of wide segments below ``max_states``.
MEMO_BYTES = 1 << 30

#: Search heuristics added to :data:`.best_of.DEFAULT_CANDIDATES` in :func:`initial_order`.
SEARCH_CANDIDATES = ("anneal", "genetic")


def initial_order(
    model: MemoryModel,
    best_of: bool = True,
    info: dict | None = None,
    search_seconds: float | None = None,
    deadline: float | None = None,
) -> tuple[list[int], int]:
    """The best of the toolkit's heuristic orders, as operator indices, with its peak (bytes).

    The candidates are greedy ``min_live``, ONNX Runtime's DFS and the stored order (when
    topological) and, with ``best_of=True``, every candidate of :class:`.best_of.BestOf`
    (:data:`.best_of.DEFAULT_CANDIDATES`) and the search heuristics ``anneal`` and ``genetic``
    (:data:`SEARCH_CANDIDATES`, default parameters, each stopped after ``search_seconds`` when
    given), so an exact scheduler that starts from it is never worse than any heuristic of the
    toolkit run with those settings. Ties keep that order. It is the upper bound and fallback of
    the exact schedulers. ``info`` (optional dict) receives ``initial_winner``, the name of the
    best, and ``initial_peaks`` (peak per candidate, bytes). ``deadline`` (a
    :func:`time.perf_counter` value or ``None``): a candidate after greedy ``min_live`` is not
    started when less than 1.5 times the greedy order's time (``info["min_live_seconds"]``, the
    yardstick of one candidate, raised to the slowest candidate seen with its check) is left
    (``info["initial_skipped"]`` names them), and each search gets at most the time left before
    it less one yardstick (its set-up and check).
    Cost: the candidates' costs, each about ``O((n + #tensor uses) log n)`` except the two
    searches (``O(iterations * (n + #tensor uses))``, bounded by ``search_seconds``).
    """
    from .best_of import DEFAULT_CANDIDATES
    from .catalogue import get_scheduler
    from .traversal import DFS

    t_ml = time.perf_counter()
    cands = [
        (
            "min_live_greedy",
            *list_schedule(model, lambda tr, v: (tr.alloc[v] - tr.freed_now[v], tr.alloc[v], v)),
        )
    ]
    cost = time.perf_counter() - t_ml  # the yardstick: each greedy candidate costs about this
    if info is not None:
        info["min_live_seconds"] = round(cost, 4)
    skipped: list[str] = []

    def late() -> bool:  # too late to start another greedy candidate
        return deadline is not None and time.perf_counter() + 1.5 * cost >= deadline

    def timed(run):  # run a candidate; the yardstick grows to the slowest one seen (with its
        nonlocal cost  # schedule() check, which min_live's own time does not include)
        t = time.perf_counter()
        out = run()
        cost = max(cost, time.perf_counter() - t)
        return out

    if late():
        skipped.append("dfs")
    else:
        dfs = timed(lambda: model.to_indices(DFS()._schedule(model.graph).order))
        cands.append(("dfs", dfs, model.peak(dfs)))
    stored = list(range(model.n))
    if model.is_topological(stored):
        cands.append(("file_order", stored, model.peak(stored)))
    if best_of:
        for name in DEFAULT_CANDIDATES:
            if late():
                skipped.append(name)
                continue
            order = timed(lambda name=name: model.to_indices(
                get_scheduler(name).schedule(model.graph).order))
            cands.append((name, order, model.peak(order)))
        for name in SEARCH_CANDIDATES:
            secs = search_seconds
            if deadline is not None:  # its set-up and check cost about a candidate's time too
                left = deadline - time.perf_counter() - cost
                secs = left if secs is None else min(secs, left)
            if late() or (secs is not None and secs < 1e-3):
                skipped.append(name)
                continue
            params = {} if secs is None else {"time_limit": secs}
            order = timed(lambda name=name, params=params: model.to_indices(
                get_scheduler(name, **params).schedule(model.graph).order))
            cands.append((name, order, model.peak(order)))
    name, order, peak = min(cands, key=lambda c: c[2])
    if info is not None:
        info["initial_winner"] = name
        info["initial_peaks"] = {c[0]: int(c[2]) for c in cands}
        if skipped:
            info["initial_skipped"] = skipped
    return list(order), int(peak)


class _Part:
    """Outcome of the DP on one segment: ``order`` (operator indices) or ``None`` when the search
    stopped, ``peak`` (bytes, of ``order``), ``bound`` (bytes, proved for the segment), states
    created and why it stopped."""

    __slots__ = ("order", "peak", "bound", "states", "stopped")

    def __init__(self, order, peak, bound, states, stopped=None):
        self.order, self.peak, self.bound, self.states, self.stopped = (
            order, peak, bound, states, stopped)


class ExactDP(Scheduler):
    """The minimum peak over all topological orders, by dynamic programming with memoisation
    inside the segments between the graph's cut points (Ahn et al., "Ordering Chaos:
    Memory-Aware Scheduling of Irregularly Wired Neural Networks for Edge Devices" (Serenity),
    MLSys 2020, sections 3.1-3.3; seed 002 exercise 5.4).

    Divide and conquer
    ------------------
    A complete cut (:func:`.bounds.complete_cuts`) is a set ``D`` of operators each of which is an
    ancestor of every operator outside ``D`` -- e.g. everything up to an articulation operator
    that every path crosses. Every order runs ``D`` first, so the orders of the graph are exactly
    the concatenations of independent orders of the segments ``J_1, ..., J_r`` between
    consecutive cuts. What carries across a cut does not depend on any order: the tensors
    produced before ``J`` and still needed at its start (read in ``J`` or later, or graph
    outputs) are live when ``J`` starts -- those read only after ``J`` stay live throughout (the
    segment's baseline), those read in ``J`` are freed by ``J``'s own order -- and the tensors
    ``J`` produces for later segments stay live to its end. So the live bytes at every step of
    ``J`` are a function of ``J``'s order alone, ``f_J``, and the peak of the whole order is
    ``max_J f_J``. Because the segments' orders are chosen independently,
    ``min over orders of max_J f_J = max_J min f_J``: the optimum of the whole is the maximum of
    the segments' optima and the composition of the segments' optimal orders attains it.

    Inside a segment
    ----------------
    A state is the set ``S`` of the segment's operators already run (a down-set, an integer bit
    mask); the live bytes after ``S`` depend on ``S`` only, so the best peak of any order that
    runs exactly ``S`` first obeys::

        peak*(S + v) = min over ready v of max(peak*(S), live(S) + alloc(v))

    The DP goes level by level (``|S| = 0, 1, ...``), keeping one entry per state (the memo:
    orders reaching the same set merge) with its predecessor for reconstruction. Pruning: the
    upper bound is the initial order's peak on the segment (states reaching it cannot improve
    it); segments whose initial peak is already at or below the proved bound of the whole (the
    order lower bound of :mod:`.bounds`, raised by each segment optimum found) are not searched,
    and segments are searched largest initial peak first.

    Budget search first
    -------------------
    Before the DP, with ``budget_search=True``, the decision search of :mod:`.budget_search`
    (depth first, pruned by the closure bound of the operators already run, floors of failed
    states memoised) runs rounds of probes, each probe expanding at most a number of states
    that doubles every round from ``1,000 + 2n``. A round first probes the proved bound ``L`` (an order
    found there is optimal; a probe that fails raises ``L`` to the floor it proved, soundly, and
    the round restarts there), then bisects the budgets between ``L + 1`` and ``ub - 1``: an
    order found becomes the incumbent ``ub``, a failure raises ``L``, a probe that runs out of
    states sends the bisection to the budgets above it (Serenity's adaptive soft budgeting, with
    a proof in each failure). A failure at ``ub - 1`` proves the incumbent optimal. It stops
    when ``L = ub``, after ``max_states`` expanded states in all (a probe also stops after a
    third of the search's time left), or when its share of the time is spent (two fifths of
    what is left after the initial orders); the DP below then starts from the incumbent and the
    bound it reached (with three fifths of the time left), and when the DP stops without a
    proof the budget search resumes with the time left (its memo kept), keeping the better
    order and the larger bound.

    With ``pivot_search=True``, each round of the budget search also asks, after its probe at
    ``L`` and while ``ub`` is within :data:`PIVOT_GAP` (3 %) of ``L``, whether any order has
    peak ``<= ub - 1``, by the pivot splits of :mod:`.pivot_search`
    (every order runs the operator with the largest closure bound after one of the few
    least-live sets that fit it; each part before and after it is decided by a short probe or
    split again), each decision for as long as all the decisions before it took together (at
    least 2 s; and within the budget search's time): a proved "no" sets ``L = ub`` (the
    incumbent is optimal), an order found becomes the incumbent before the bisection, and a
    decision that stops skips that round's bisection (within 3 % of ``L`` its probes between
    ``L`` and ``ub`` mostly stop too; the decision is the one that settles it). A decision asked
    again at the same budget resumes from the parts it settled, in both calls of the budget
    search, and once the probes have spent ``max_states`` states the decision goes on alone with
    the time left, at any gap (``moccasin_layered`` seed 6 at 250 operators: incumbent 188,520
    bytes, 3.8 % above the closure bound, proved optimal by the decision at 188,519). It
    proves ``moccasin_layered`` seed 0 at 250 operators optimal (195,560 bytes, closure bound
    194,170): the decision at 195,559 fails in 0.13 s (1.9 s with the Python engine), where the
    probes alone expanded 6.7 million states in 15 minutes without an answer.

    The initial order is :func:`initial_order` (the best of all the toolkit's heuristics,
    ``genetic`` and ``anneal`` included), so the result is never worse than any of them; when a
    segment's search stops (time limit or memo limit) that segment keeps the initial order's
    steps, and the proved bound of the stopped search (the least peak over its last complete
    level, capped by the initial peak) still raises the bound of the whole.

    Parameters
    ----------
    max_states : int, default 500_000
        The memo limit: the most DP states held in memory for one segment (a segment's memo is
        freed when it is done; about ``200 + k / 8`` bytes per state of a ``k``-operator
        segment in CPython, the set being a ``k``-bit integer). A segment's limit is also at
        most :data:`MEMO_BYTES` over that size (below the default on segments of more than about
        15,600 operators: 397,682 states at 20,000). When a segment needs more, its search stops,
        ``info["reason"]`` says so and the status is ``"timeout"`` unless the bound still
        proves the result optimal.
    time_limit : float or None, default 10.0
        Budget in seconds for the whole :meth:`schedule` call, compiling the graph, the order
        bound and the initial orders included (checked once per state expansion, per probe and
        between initial orders: the candidates after greedy ``min_live`` are skipped once it
        has passed, ``info["initial_skipped"]``, and the status is ``"timeout"`` with the best
        order found). Segments share what is left after the initial orders: each gets
        the time left divided by the number of segments still to search (those whose initial
        peak is above the bound proved so far). The call returns within the limit plus the
        larger of 10 % and 0.5 s (``experiments.bench.sched_scale`` measures the overrun at
        1,000 to 20,000 operators), except for a graph whose compilation, order bound and
        ``min_live`` order alone take longer (they always run: the fallback order). Above
        :data:`.bounds.CUT_MAX_OPS` operators the sampled closure bound of the order bound
        gets a third of the limit at most (:meth:`Scheduler.schedule`).
    best_of_start : bool, default True
        Start from the best of all heuristics (:func:`initial_order`), so the result is never
        worse than any; ``False`` (ablation) starts from ``min_live``, DFS and the stored order.
    decompose : bool, default True
        Divide at the complete cuts; ``False`` runs one DP over the whole graph (ablation).
    budget_search : bool, default True
        Run the budget search (above) before the DP; ``False`` (ablation) runs the DP alone.
        Only for graphs of at most :data:`.bounds.CUT_MAX_OPS` operators.
    pivot_search : bool, default True
        Ask the pivot-split question below the incumbent in the budget search (above);
        ``False`` (ablation) leaves it out.
    engine : {"auto", "compiled", "python"}, default "auto"
        Engine of the budget search and the pivot splits (:data:`.bounds.ENGINES`): the C
        extension ``scheduling._budget`` when built, or the Python reference; both expand the
        same states and parts (ablation: the same ``info`` counts, another speed).

    Returns (via :meth:`schedule`)
    ------------------------------
    Schedule with status ``"optimal"`` (``info["peak_bytes"]`` is the proved minimum, equal to
    the schedule's ``bound``) or ``"timeout"`` with the best order known and its peak. ``info``
    also holds ``lower_bound`` (the proved bound of the whole, bytes), ``order_bound``
    (:func:`.bounds.order_lower_bound`), ``states`` (created in all segments),
    ``memo_peak_states`` (the most held at once, in one segment: the memory used), ``segments``,
    ``segments_searched``, ``largest_segment`` (operators), ``initial_peak``,
    ``initial_winner`` and, when a search stopped, ``reason``. With the budget search:
    ``budget_nodes`` (states it expanded: with ``states``, the machine-independent measure of
    the work), ``budget_flows`` (max-flows it solved), ``budget_probes``, ``budget_bound`` and
    ``budget_peak`` (the proved bound and the incumbent's peak when it stopped, bytes) and
    ``budget_seconds``; with the pivot splits ``pivot_decisions``, ``pivot_parts`` (parts
    decided), ``pivot_sets`` (pivot sets enumerated) and ``pivot_seconds``.

    Raises
    ------
    CycleError
        The graph has a cycle (named).

    Notes
    -----
    A state expansion tries only the operators ready after its set (kept per state as a bit
    mask), ``O(width)`` rather than ``O(n)``. Worst case ``O(#down-sets * width)`` time and
    ``O(#down-sets)`` memory per segment: exponential
    in the width of a segment, fine for chains of small irregular cells, hopeless for one wide
    segment -- hence the budgets. Peak convention of :mod:`.memsim` (the same as
    :func:`scheduling.lifetimes.peak_live_bytes`).
    """

    name = "exact_dp"
    _parameter_constraints = {
        "max_states": [Interval(Integral, 1, None)],
        "time_limit": OPTIONAL_POSITIVE_SECONDS,
        "best_of_start": ["boolean"],
        "decompose": ["boolean"],
        "budget_search": ["boolean"],
        "pivot_search": ["boolean"],
        "engine": [StrOptions(ENGINES)],
    }

    def __init__(
        self,
        max_states: int = 500_000,
        time_limit: float | None = 10.0,
        best_of_start: bool = True,
        decompose: bool = True,
        budget_search: bool = True,
        pivot_search: bool = True,
        engine: str = "auto",
    ) -> None:
        self.max_states = max_states
        self.time_limit = time_limit
        self.best_of_start = best_of_start
        self.decompose = decompose
        self.budget_search = budget_search
        self.pivot_search = pivot_search
        self.engine = engine

    def _schedule(self, graph: Graph) -> ScheduleResult:
        t0 = self._started()  # compiling the graph in schedule() counts against the limit
        deadline = None if self.time_limit is None else t0 + float(self.time_limit)
        m = MemoryModel.of(graph)
        n = m.n
        if n == 0:
            return ScheduleResult([], "optimal", {"peak_bytes": 0, "states": 0, "lower_bound": 0},
                                  bound=0)
        A = ancestor_matrix(m) if n <= CUT_MAX_OPS else None
        notes = shared_notes(graph)
        if notes is not None and "order_bound" in notes:  # schedule() computed it
            lb = int(notes["order_bound"])
        else:  # above CUT_MAX_OPS the closure bound is sampled: a third of the limit at most
            det = order_bound_details(m, ancestors=A, deadline=None if deadline is None
                                      or A is not None else t0 + float(self.time_limit) / 3)
            lb = int(det["bound"])
        info: dict = {"order_bound": lb}
        search = None if self.time_limit is None else 0.1 * float(self.time_limit)
        greedy, ub = initial_order(m, self.best_of_start, info, search, deadline)
        info["initial_peak"] = ub
        if deadline is not None:  # keep time for schedule()'s check (a few greedy orders' worth)
            lim = float(self.time_limit)
            deadline -= min(3 * info["min_live_seconds"], 0.5 * max(0.1 * lim, 0.5))
        if ub <= lb:
            info.update(lower_bound=lb, peak_bytes=ub, states=1, segments=1, segments_searched=0,
                        largest_segment=n)
            return ScheduleResult(m.to_names(greedy), "optimal", info, bound=lb)
        if deadline is not None and time.perf_counter() >= deadline:
            # the set-up spent the time: the best initial order, unsearched
            info.update(lower_bound=lb, peak_bytes=ub, states=0, segments=1, segments_searched=0,
                        largest_segment=n, reason="time limit reached in the initial orders")
            return ScheduleResult(m.to_names(greedy), "timeout", info, bound=lb)
        all_cuts = complete_cuts(m, A) if A is not None else []
        bs = None
        ps = None  # the pivot splits, kept for both budget search calls
        if self.budget_search and A is not None:
            try:
                bs = BudgetSearch(m, A, all_cuts, max_memo=self.max_states, engine=self.engine)
            except ValueError as e:  # sizes too large for int64 flow capacities
                info["budget_skipped"] = str(e)
        if bs is not None:
            now = time.perf_counter()
            end = None if deadline is None else now + 0.4 * max(deadline - now, 0.0)
            if self.pivot_search:
                ps = PivotSearch(m, probe_top=False, engine=self.engine)
            greedy, ub, lb = self._budget(bs, ps, m, greedy, ub, lb, end, info)
            if ub <= lb:
                info.update(lower_bound=lb, peak_bytes=ub, states=0, segments=len(all_cuts) + 1,
                            segments_searched=0, largest_segment=n)
                return ScheduleResult(m.to_names(greedy), "optimal", info, bound=lb)
        dp_deadline = deadline
        if bs is not None and deadline is not None:  # leave the resumed budget search a share
            now = time.perf_counter()
            dp_deadline = now + 0.6 * max(deadline - now, 0.0)
        cuts = all_cuts if self.decompose else []
        edges = [0, *cuts, n]
        segs = list(zip(edges[:-1], edges[1:], strict=True))
        prof = m.profile(greedy)
        before = prof - m.alloc[np.asarray(greedy, dtype=np.int64)]
        seg_of = np.empty(n, np.int64)
        for i, (a, b) in enumerate(segs):
            seg_of[np.asarray(greedy[a:b], dtype=np.int64)] = i
        chosen = [list(greedy[a:b]) for a, b in segs]
        peaks = [int(prof[a:b].max()) for a, b in segs]
        bound = lb
        states = 0
        memo_peak = 0
        searched = 0
        reasons: list[str] = []
        todo = sorted(range(len(segs)), key=lambda i: (-peaks[i], i))
        for k, i in enumerate(todo):
            if peaks[i] <= bound:
                continue  # this segment cannot raise the peak above what is proved necessary
            a, b = segs[i]
            part_deadline = None
            if dp_deadline is not None:  # an equal share of what is left for each segment
                waiting = sum(1 for j in todo[k:] if peaks[j] > bound)
                left = dp_deadline - time.perf_counter()
                part_deadline = time.perf_counter() + max(left, 0.0) / waiting
            res = self._search(m, chosen[i], i, seg_of, int(before[a]), peaks[i], part_deadline)
            searched += 1
            states += res.states
            memo_peak = max(memo_peak, res.states)
            if res.order is not None:
                chosen[i], peaks[i] = res.order, res.peak
                bound = max(bound, res.peak)
            else:
                bound = max(bound, res.bound)
                reasons.append(f"segment {i} ({b - a} operators): {res.stopped}")
        order = [v for part in chosen for v in part]
        peak = max(peaks)
        if bs is not None and peak > bound and (deadline is None or
                                                time.perf_counter() < deadline):
            # the budget search again, with the time the DP left (its memo of floors kept)
            o2, p2, lb2 = self._budget(bs, ps, m, order, peak, bound, deadline, info,
                                       resume=True)
            bound = max(bound, lb2)
            if p2 < peak:
                order, peak = o2, p2
        info.update(lower_bound=int(min(bound, peak)), peak_bytes=peak, states=states,
                    memo_peak_states=memo_peak,
                    segments=len(segs), segments_searched=searched,
                    largest_segment=max(b - a for a, b in segs))
        status = "optimal" if peak <= bound else "timeout"
        if reasons and status != "optimal":
            info["reason"] = "; ".join(reasons)
        return ScheduleResult(m.to_names(order), status, info, bound=int(min(bound, peak)))

    def _budget(self, bs: BudgetSearch, ps: PivotSearch | None, m: MemoryModel,
                order: list[int], ub: int, lb: int, end: float | None, info: dict,
                resume: bool = False) -> tuple[list[int], int, int]:
        """The budget search of the class docstring until ``end`` (a :func:`time.perf_counter`
        value or ``None``): ``(order, its peak, proved bound)``; ``info``'s ``budget_*`` keys
        accumulate over calls. ``ps``: the pivot splits (``None``: not used), one object for
        both calls, so a decision stopped in the first goes on from its parts in the second.
        ``resume``: the first round skips the probe at the bound (the first call made it with
        the same number of states)."""
        t0 = time.perf_counter()
        probes = 0
        cap = 1000 + 2 * m.n  # a probe needs n states to reach a whole order

        def share() -> float | None:  # a probe's deadline: a third of the time left at most
            if end is None:
                return None
            now = time.perf_counter()
            return now + max(end - now, 0.0) / 3

        def pivot(stop: float | None) -> str:
            """One pivot decision below the incumbent until ``stop`` (and ``end``): an order
            found becomes the incumbent, a proved "no" proves it optimal; returns the status."""
            nonlocal order, ub, lb
            t1 = time.perf_counter()
            if end is not None:
                stop = end if stop is None else min(end, stop)
            r = ps.decide(ub - 1, stop)
            info["pivot_decisions"] = info.get("pivot_decisions", 0) + 1
            info["pivot_parts"] = info.get("pivot_parts", 0) + r.parts
            info["pivot_sets"] = info.get("pivot_sets", 0) + r.sets
            info["pivot_seconds"] = round(info.get("pivot_seconds", 0.0)
                                          + time.perf_counter() - t1, 3)
            if r.status == "found":
                order, ub = r.order, int(r.peak)
            elif r.status == "failed":
                lb = max(lb, ub)
            return r.status

        while ub > lb and bs.nodes < self.max_states:
            if end is not None and time.perf_counter() >= end:
                break
            if not resume:
                r = bs.probe(lb, min(cap, self.max_states - bs.nodes), share())
                probes += 1
                if r.status == "found":  # an order within the proved bound: optimal
                    order, ub = r.order, int(r.peak)
                    continue
                if r.status == "failed":  # no order within lb: the bound rises; retry there
                    lb = max(lb, int(r.bound))
                    continue
            resume = False
            if ps is not None and ub <= lb * PIVOT_GAP:  # any order below the incumbent?
                # as long as the decisions before it together (2 s at least)
                st = pivot(time.perf_counter() + max(2.0, info.get("pivot_seconds", 0.0)))
                if st == "failed":  # the incumbent is optimal
                    break
                if st == "stopped":  # the next round's decision goes on from its parts
                    cap *= 2
                    continue
                # found: the bisection goes on below the new incumbent
            soft = lb + 1  # bisect [soft, ub - 1]: budgets below soft stopped this round
            while soft < ub and bs.nodes < self.max_states and (
                    end is None or time.perf_counter() < end):
                target = (soft + ub - 1) // 2
                r = bs.probe(target, min(cap, self.max_states - bs.nodes), share())
                probes += 1
                if r.status == "found":  # a better incumbent
                    order, ub = r.order, int(r.peak)
                elif r.status == "failed":  # nothing within target: the bound rises
                    lb = max(lb, int(r.bound))
                    soft = max(soft, lb)
                else:
                    soft = target + 1
            cap *= 2
        while ps is not None and lb < ub and (end is None or time.perf_counter() < end):
            # the probes' states are spent: the pivot splits go on with the time left, at any
            # gap (an incumbent far above the bound is often optimal, the bound weak)
            if pivot(None) == "stopped":
                break
        info.update(budget_nodes=bs.nodes, budget_flows=bs.flows,
                    budget_probes=info.get("budget_probes", 0) + probes,
                    budget_bound=int(min(lb, ub)), budget_peak=int(ub),
                    budget_seconds=round(info.get("budget_seconds", 0.0)
                                         + time.perf_counter() - t0, 3))
        return order, ub, lb

    def _search(self, m: MemoryModel, ops: list[int], seg: int, seg_of: np.ndarray, live0: int,
                ub: int, deadline: float | None) -> _Part:
        """Serenity's DP on one segment (operator indices ``ops``, all of segment ``seg``), with
        ``live0`` bytes live at its start and ``ub`` the peak to beat (the initial order's)."""
        k = len(ops)
        loc = {v: j for j, v in enumerate(ops)}
        alloc = m.alloc.tolist()
        dead = m.dead.tolist()
        size = m.size.tolist()
        keep = m.keep.tolist()
        def late(j: int) -> bool:  # the set-up (bit masks of k bits) checks the limit too
            return deadline is not None and not j & 63 and time.perf_counter() > deadline

        def stop() -> _Part:  # nothing proved for the segment: its bound is 0
            return _Part(None, ub, 0, 0, "time limit reached in the segment's set-up")

        pred_mask = [0] * k
        for j, v in enumerate(ops):
            if late(j):
                return stop()
            for p in m.preds[v]:
                if p in loc:
                    pred_mask[j] |= 1 << loc[p]
        # inputs a segment operator frees: (mask of the segment's readers, bytes); a tensor read
        # by a later segment or kept as a graph output is never freed inside this one
        frees: list[list[tuple[int, int]]] = []
        for j, v in enumerate(ops):
            if late(j):
                return stop()
            fr = []
            for t in m.ins[v]:
                if keep[t]:
                    continue
                cm = 0
                later = False
                for c in m.consumers[t]:
                    if c in loc:
                        cm |= 1 << loc[c]
                    elif seg_of[c] > seg:
                        later = True
                        break
                if not later:
                    fr.append((cm, size[t]))
            frees.append(fr)
        al = [alloc[v] for v in ops]
        de = [dead[v] for v in ops]
        full = (1 << k) - 1
        cap = min(int(self.max_states), max(1000, MEMO_BYTES // (200 + k // 8)))
        succ_loc: list[list[int]] = [[] for _ in range(k)]
        for j, v in enumerate(ops):
            if late(j):
                return stop()
            for p in m.preds[v]:
                if p in loc:
                    succ_loc[loc[p]].append(j)
        ready0 = 0
        for j in range(k):
            if not pred_mask[j]:
                ready0 |= 1 << j
        # a state: S -> (peak, live bytes after S, mask of the operators ready after S); only
        # the ready operators are tried (not every operator outside S), in increasing index
        level: dict[int, tuple[int, int, int]] = {0: (0, live0, ready0)}
        parents: list[dict[int, tuple[int, int]]] = []
        states = 1
        proved = 0  # least peak over the last complete level: every order of the segment >= it
        for _ in range(k):
            nxt: dict[int, tuple[int, int, int]] = {}
            par: dict[int, tuple[int, int]] = {}
            for S, (pk, live, ready) in level.items():
                if deadline is not None and time.perf_counter() > deadline:
                    return _Part(None, ub, min(proved, ub), states, "time limit reached")
                r = ready
                while r:
                    low = r & -r
                    j = low.bit_length() - 1
                    r ^= low
                    at = live + al[j]
                    npk = pk if pk >= at else at
                    if npk >= ub:
                        continue
                    S2 = S | low
                    cur = nxt.get(S2)
                    if cur is not None and cur[0] <= npk:
                        continue
                    nl = at - de[j]
                    for cm, sz in frees[j]:
                        if not (cm & ~S2):
                            nl -= sz
                    if cur is None:
                        states += 1
                        if states > cap:
                            return _Part(None, ub, min(proved, ub), states,
                                         f"memo limit of {cap} states reached" + (
                                             "" if cap == self.max_states else
                                             f" ({MEMO_BYTES} bytes for sets of {k} operators)"))
                        rd = ready ^ low
                        for q in succ_loc[j]:
                            if not (pred_mask[q] & ~S2):
                                rd |= 1 << q
                    else:
                        rd = cur[2]  # the same set S2: the same ready operators
                    nxt[S2] = (npk, nl, rd)
                    par[S2] = (S, j)
            parents.append(par)
            level = nxt
            if not level:
                break
            proved = min(st[0] for st in level.values())
        if full not in level:  # every order of the segment peaks at >= ub: the initial one is best
            return _Part(list(ops), ub, ub, states)
        best = level[full][0]
        out = []
        S = full
        for lv in range(k - 1, -1, -1):
            S, j = parents[lv][S]
            out.append(ops[j])
        out.reverse()
        return _Part(out, best, best, states)
