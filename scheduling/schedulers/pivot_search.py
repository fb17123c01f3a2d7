"""Decide ``is there an operator order with peak <= B bytes?`` by splitting at a pivot operator:
every order runs the pivot after one of the few least-live sets that fit it.

The budget search of :mod:`.budget_search` walks the down-sets of the whole graph forward, and a
failing probe must visit every down-set that stays within the budget: on ``moccasin_layered``
seed 0 (250 operators) the probe at 195,559 bytes expanded 6.7 million states in 15 minutes
without an answer. Yet the operator whose closure bound is the largest (:mod:`.bounds`, bound 4)
has very few sets it can run after: at that budget operator 131 fits after 10 down-sets only.
This module decides the budget question through them.

Decomposition
-------------
Write ``live(X)`` for the bytes live once exactly the down-set ``X`` has run (:mod:`.memsim`'s
convention) and ``Reach(S0, T)`` for the question: starting with exactly the down-set ``S0``
run, can the operators of the down-set ``T`` (``S0 <= T``) run, and no others, with every step
within ``B``? The whole question is ``Reach({}, V)``. Pick a **pivot** ``v`` in ``T - S0``.
Every such order runs ``v`` at some step, after a down-set ``D`` with ``S0 <= D``, every
ancestor of ``v`` in ``D``, ``D <= T`` and neither ``v`` nor a descendant of ``v`` in ``D``; its
step has ``live(D) + alloc(v)`` bytes. So the order exists exactly when some such ``D`` with
``live(D) + alloc(v) <= B`` has ``Reach(S0, D)`` and ``Reach(D + v, T)`` (the part of the order
before ``v`` and the part after it). The sets ``D`` are enumerated by branching on the
undecided operators (in ``D``: with its ancestors; out: with its descendants), each branch
bounded by one minimum cut (:meth:`.bounds.ClosureCut.value` with forced and banned
operators): a branch whose least live bytes plus ``alloc(v)`` is above ``B`` holds none. The
pivot is the operator of ``T - S0`` with the largest closure bound, the one with the fewest
sets to fit.

Each ``Reach(S0, T)`` is a problem of the same kind on a smaller graph (:func:`sub_model`):
the operators of ``T - S0``; a tensor produced there is kept to the end when it is a graph
output or has a reader outside ``T``; a tensor live after ``S0`` (produced in ``S0``, kept or
read outside ``S0``) is part of a constant **baseline** (taken off the budget) when it is kept
or read outside ``T``, and is otherwise produced by one **source** operator that runs first
(a predecessor of every operator of the part), so its bytes are freed by its last reader as in
the whole graph. The live bytes at every step of the part are then those of the whole graph
less the baseline. Before a part is built it is **screened** on the whole graph: for an
operator ``w`` of ``T - S0``, the least ``live(D) + alloc(w)`` over the down-sets ``D`` valid for
``w`` with ``S0 <= D <= T`` (one flow of the whole graph's :class:`.bounds.ClosureCut`, ``S0``
forced, the operators outside ``T`` banned) is the part's own ``C(w)`` plus its baseline, so a
value above ``B`` fails the part; the operators that failed parts lately are tried (on
``randwire`` of 101 operators at 1,313,013 bytes nearly every one of the ~90,000 parts fails
this way, by one of six operators). Each part is otherwise first given to a budget search probe of a few hundred states
(:class:`.budget_search.BudgetSearch`, sound: a found order is checked, a failure is proved);
a probe that stops is decided by splitting again. For each set both parts are probed first
(a set one of whose parts fails is out), and only then split, the part with fewer operators
first. Both parts have fewer operators than the
whole (neither holds ``v``), so the recursion ends. Answers are cached per ``(S0, T)`` for
one budget, across decisions at it (a decision that stopped resumes from them).

Outcome: ``found`` (an order of the whole graph, checked by :meth:`.memsim.MemoryModel.peak`),
``failed`` (no order within ``B``: every set ``D`` of every split failed, proved) or ``stopped``
(the time, the set limit or the depth limit ran out somewhere, and no order was found: nothing
is claimed).
"""

from __future__ import annotations

import heapq
import sys
import time
from dataclasses import dataclass

import numpy as np

from .bounds import ClosureCut, ancestor_matrix, complete_cuts, resolve_engine
from .budget_search import BudgetSearch
from .memsim import MemoryModel

__all__ = ["PivotSearch", "PivotResult", "sub_model"]

#: Operators with the largest closure bounds tried as the pivot of one split.
_PIVOTS = 8
#: Operators remembered for the screen (the last ones whose closure bound failed a part), and
#: the most flows one screen solves.
_HOT = 8
_SCREEN = 3


@dataclass
class PivotResult:
    """Outcome of :meth:`PivotSearch.decide`: ``status`` ``"found"`` (``order``: operator
    indices of the whole graph, ``peak`` its peak in bytes, at most the budget), ``"failed"``
    (proved: no order has peak within the budget) or ``"stopped"`` (nothing claimed).
    ``parts``: sub-problems decided; ``sets``: pivot sets enumerated; ``nodes``: budget search
    states expanded in all parts."""

    status: str
    order: list[int] | None
    peak: int | None
    parts: int
    sets: int
    nodes: int


def sub_model(model: MemoryModel, S0: np.ndarray, T: np.ndarray) -> MemoryModel:
    """The part ``Reach(S0, T)`` of ``model`` as a memory model of its own (module docstring,
    :meth:`.memsim.MemoryModel.from_arrays`).

    ``S0``, ``T``: numpy bool ``(model.n,)``, down-sets with ``S0 <= T``. The result also has
    ``ops`` (``ops[i]``: the whole graph's operator of part operator ``i``; ``-1`` for the
    source operator, index 0 when present) and ``baseline`` (bytes live throughout the part).
    ``O(#ops + #tensor uses)``.
    """
    run = np.flatnonzero(T & ~S0).tolist()
    sub = {v: i for i, v in enumerate(run)}
    size = model.size.tolist()
    keep = model.keep.tolist()
    baseline = 0
    src: list[int] = []  # tensors produced in S0, read in T - S0 only (after S0)
    tens: list[int] = []  # tensors produced in T - S0
    for t in range(model.m):
        p = int(model.producer[t])
        cons = model.consumers[t]
        if S0[p]:
            if keep[t] or any(not T[c] for c in cons):  # live throughout the part
                baseline += size[t]
            elif any(not S0[c] for c in cons):
                src.append(t)
        elif T[p]:
            tens.append(t)
    shift = 1 if src else 0
    n = len(run) + shift
    ops = ([-1] if src else []) + run
    sizes, keeps, prod = [], [], []
    ins: list[list[int]] = [[] for _ in range(n)]
    outs: list[list[int]] = [[] for _ in range(n)]
    for t in src:
        outs[0].append(len(sizes))
        for c in model.consumers[t]:
            if not S0[c]:
                ins[sub[c] + shift].append(len(sizes))
        sizes.append(size[t])
        keeps.append(False)
        prod.append(0)
    for t in tens:
        p = sub[int(model.producer[t])] + shift
        outs[p].append(len(sizes))
        cons = model.consumers[t]
        for c in cons:
            if T[c]:
                ins[sub[c] + shift].append(len(sizes))
        sizes.append(size[t])
        keeps.append(bool(keep[t] or any(not T[c] for c in cons)))
        prod.append(p)
    preds: list[list[int]] = [[] for _ in range(shift)]  # the source has none
    for v in run:
        ps = [sub[p] + shift for p in model.preds[v] if not S0[p]]
        preds.append(ps if ps or not src else [0])  # the source runs first
    sm = MemoryModel.from_arrays(sizes, keeps, prod, ins, outs, preds)
    sm.ops = ops
    sm.baseline = baseline
    return sm


class _Stop(Exception):
    """The time limit ran out."""


class PivotSearch:
    """The decision ``peak <= B?`` by pivot splits (module docstring).

    Parameters
    ----------
    model : MemoryModel
    probe_nodes : int, default 200
        States each part's budget search probe may expand (plus twice its operators) before
        the part is split; 0: one state (tests: nearly every part is split).
    max_sets : int, default 5000
        Most pivot sets enumerated for one split; beyond, that split stops (nothing claimed).
    max_depth : int, default 60
        Deepest nesting of splits; deeper parts stop.
    probe_top : bool, default True
        Probe the whole graph before its split (``False`` when the caller has probed it).
    max_parts : int or None, default None
        Most parts one decision may decide anew (a machine-independent work budget); beyond,
        it stops like at its deadline.
    max_cache : int, default 1_000_000
        Most parts whose answers are kept (about 250 bytes each at 250 operators); beyond, new
        answers are not kept, which costs time (a part asked again is decided again), never
        soundness.
    engine : {"auto", "compiled", "python"}, default "auto"
        Engine of the flows, the pivot sets and the parts' probes (:class:`.bounds.ClosureCut`,
        :class:`.budget_search.BudgetSearch`): both give the same decision with the same
        parts, sets and states (``tests/test_budget_engine.py``).

    Budgets and peaks are bytes, under :mod:`.memsim`'s convention (a tensor is live on the
    closed range of steps from its producer to its last reader). The method is this module's
    (its docstring has the proof); the parts' probes are :mod:`.budget_search`'s.

    Raises
    ------
    ValueError
        From :meth:`decide`: the operator outputs sum to ``2**60`` bytes or more, too many for
        the int64 capacities of the closure cuts (:class:`.bounds.ClosureCut`).
    """

    def __init__(self, model: MemoryModel, probe_nodes: int = 200, max_sets: int = 5000,
                 max_depth: int = 60, probe_top: bool = True,
                 max_parts: int | None = None, max_cache: int = 1_000_000,
                 engine: str = "auto") -> None:
        self.m = model
        self.engine = resolve_engine(engine)
        self.max_cache = int(max_cache)
        self.max_parts = max_parts
        self.probe_top = bool(probe_top)
        self._B: int | None = None
        self._cache: dict[tuple[bytes, bytes], tuple[str, list[int] | None]] = {}
        self.probe_nodes = int(probe_nodes)
        self.max_sets = int(max_sets)
        self.max_depth = int(max_depth)
        self._net: ClosureCut | None = None  # the whole graph's, for the screen
        self._hot: list[int] = []  # operators of the whole graph that failed parts lately

    def decide(self, budget: int, deadline: float | None = None) -> PivotResult:
        """Is there an order of the whole graph with peak ``<= budget`` bytes? Stops at
        ``deadline`` (a :func:`time.perf_counter` value; ``None``: no time limit) or after
        ``max_parts`` parts. Returns a :class:`PivotResult`.

        The parts settled by a decision that stopped are kept: asked again at the same budget
        (with a later deadline) the decision goes on from them."""
        m = self.m
        if int(budget) != self._B:  # answers hold for one budget; kept for a retry at it
            self._cache = {}
        self._B = int(budget)
        if self._net is None:
            self._net = ClosureCut(m, ancestor_matrix(m), engine=self.engine)
        self._deadline = deadline
        self._parts = self._sets = self._nodes = 0
        S0 = np.zeros(m.n, bool)
        T = np.ones(m.n, bool)
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 4 * m.n + 1000))
        if self.probe_top is False:  # the whole graph goes to a split at once
            self._cache[(np.packbits(S0).tobytes(), np.packbits(T).tobytes())] = ("probed", None)
        try:
            status, order = self._reach(S0, T, 0)
        except _Stop:
            status, order = "stopped", None
        finally:
            sys.setrecursionlimit(old)
        peak = None
        if status == "found":
            assert order is not None and m.is_topological(order)
            peak = m.peak(order)
            assert peak <= self._B, (peak, self._B)
        return PivotResult(status, order if status == "found" else None, peak, self._parts,
                           self._sets, self._nodes)

    def _reach(self, S0: np.ndarray, T: np.ndarray, depth: int,
               quick: bool = False) -> tuple[str, list[int] | None]:
        """``Reach(S0, T)`` of the module docstring: ``(status, order of T - S0)``, the order in
        the whole graph's operator indices. ``quick``: the budget search probe only (a part it
        cannot decide is ``"stopped"`` without a split)."""
        key = (np.packbits(S0).tobytes(), np.packbits(T).tobytes())
        hit = self._cache.get(key)
        if hit is not None and (quick or hit[0] != "probed"):
            return ("stopped", None) if hit[0] == "probed" else hit
        out = self._solve(S0, T, depth, quick, hit is not None)
        if len(self._cache) < self.max_cache or key in self._cache:
            self._cache[key] = ("probed", None) if quick and out[0] == "stopped" else out
        return out

    def _solve(self, S0: np.ndarray, T: np.ndarray, depth: int, quick: bool,
               probed: bool) -> tuple[str, list[int] | None]:
        if self._deadline is not None and time.perf_counter() > self._deadline:
            raise _Stop
        if self.max_parts is not None and self._parts >= self.max_parts:
            raise _Stop
        self._parts += 1
        if not probed and self._screen(S0, T):
            return "failed", None
        sm = sub_model(self.m, S0, T)
        B = self._B - sm.baseline
        if sm.n == 0:
            return ("found", []) if B >= 0 else ("failed", None)
        if sm.op_lower_bound() > B:
            return "failed", None
        ops = sm.ops
        A = ancestor_matrix(sm)
        bs = BudgetSearch(sm, A, complete_cuts(sm, A), engine=self.engine)
        if not probed:
            r = bs.probe(B, self.probe_nodes + 2 * sm.n if self.probe_nodes else 1, self._deadline)
            self._nodes += r.nodes
            if r.status == "found":
                return "found", [ops[i] for i in r.order if ops[i] >= 0]
            if r.status == "failed":
                if r.root_op is not None and ops[r.root_op] >= 0 and ops[r.root_op] not in self._hot:
                    self._hot.insert(0, ops[r.root_op])  # a candidate for the next screens
                    del self._hot[_HOT:]
                return "failed", None
        if quick:
            return "stopped", None
        if self._deadline is not None and time.perf_counter() > self._deadline:
            raise _Stop
        if depth >= self.max_depth:
            return "stopped", None
        net = bs.net
        # the pivot: among the operators with the largest closure bounds, the first whose sets
        # number at most 64, else 512, else max_sets (fewest sets to split into)
        vals: dict[int, int] = {}  # C(i) of the operators that can be among the _PIVOTS largest
        top: list[int] = []  # min-heap of the _PIVOTS largest C(i) so far
        for i in np.argsort(-net.upper, kind="stable").tolist():  # C(i) <= upper(i)
            if len(top) >= _PIVOTS and net.upper[i] <= top[0]:
                break
            if ops[i] >= 0:
                vals[i] = net.value(i)[0]
                (heapq.heappush if len(top) < _PIVOTS else heapq.heappushpop)(top, vals[i])
        cand = sorted(vals, key=lambda i: (-vals[i], i))
        sets = None
        for cap in (64, 512, self.max_sets):
            for v in cand[:_PIVOTS]:
                sets = self._sets_for(net, A, v, B, cap)
                if sets is not None:
                    break
            if sets is not None:
                break
        if sets is None:
            return "stopped", None
        # each set: the part before the pivot and the part after it, first by probes alone (a
        # set either of whose parts fails is out), then split further
        splits = []
        for _, D in sets:
            Dw = S0.copy()
            Dw[[ops[i] for i in np.flatnonzero(D).tolist() if ops[i] >= 0]] = True
            after = Dw.copy()
            after[ops[v]] = True
            pair = [(S0, Dw), (after, T)]
            res = []
            for a, b in pair:
                res.append(self._reach(a, b, depth + 1, quick=True))
                if res[-1][0] == "failed":
                    break
            if res[-1][0] == "failed":
                continue
            if all(st == "found" for st, _ in res):
                return "found", [*res[0][1], ops[v], *res[1][1]]
            splits.append(pair)
        stopped = False
        for pair in splits:  # the part with fewer operators first: the cheaper to settle
            sizes = [int((b & ~a).sum()) for a, b in pair]
            res = {}
            for k in sorted(range(2), key=lambda k: (sizes[k], k)):
                res[k] = self._reach(*pair[k], depth + 1)
                if res[k][0] != "found":
                    break
            if len(res) == 2 and all(st == "found" for st, _ in res.values()):
                return "found", [*res[0][1], ops[v], *res[1][1]]
            stopped |= any(st == "stopped" for st, _ in res.values())
        return ("stopped" if stopped else "failed"), None

    def _screen(self, S0: np.ndarray, T: np.ndarray) -> bool:
        """Whether ``Reach(S0, T)`` fails by the closure bound of one of its operators ``w``,
        computed on the whole graph (no part built): the least ``live(D) + alloc(w)`` over the
        down-sets ``D`` valid for ``w`` with ``S0 <= D <= T`` (:meth:`.bounds.ClosureCut.value`,
        ``S0`` forced, the operators outside ``T`` banned) is the part's own ``C(w)`` plus its
        baseline, since a part's live bytes are the whole graph's less the baseline (module
        docstring); above ``B``, every order of the part has a step above the budget. Tries
        the operators that failed parts last (most recent first), at most :data:`_SCREEN`
        flows; ``False`` claims nothing."""
        assert self._net is not None
        banned = ~T
        tried = 0
        for k, w in enumerate(self._hot):
            if S0[w] or not T[w]:
                continue
            if self._net.value(w, S0, banned=banned)[0] > self._B:
                self._hot.insert(0, self._hot.pop(k))
                return True
            tried += 1
            if tried >= _SCREEN:
                break
        return False

    def _sets_for(self, net: ClosureCut, A: np.ndarray, v: int, B: int,
                  cap: int) -> list[tuple[int, np.ndarray]] | None:
        """Every down-set ``D`` valid for ``v`` (ancestors in, ``v`` and descendants out) with
        ``live(D) + alloc(v) <= B``, as ``(that value, D)`` sorted by value then mask; ``None``
        when there are more than ``cap``. The compiled engine (``scheduling._budget.Net.sets``)
        runs the same enumeration when ``net`` has it."""
        if net.cnet is not None:
            left = None if self._deadline is None else self._deadline - time.perf_counter()
            st, sets, count = net.cnet.sets(int(v), int(B), int(cap), left)
            self._sets += count
            if st == "stopped":
                raise _Stop
            if st == "over":
                return None
            return [(c, np.frombuffer(D, dtype=bool).copy()) for c, D in sets]
        fin0 = A[v].copy()
        out0 = A[:, v].copy()
        out0[v] = True
        found: list[tuple[int, np.ndarray]] = []
        # each node: operators forced in, kept out, and a least-live set between them with its
        # value; a branch that keeps that set valid inherits it, the other one is solved
        c0, D0 = net.value(v, fin0, banned=out0)
        stack = [(fin0, out0, c0, D0)]
        while stack:
            if self._deadline is not None and time.perf_counter() > self._deadline:
                raise _Stop
            fin, out, c, D = stack.pop()
            if c > B:
                continue
            und = np.flatnonzero(~fin & ~out)
            if und.size == 0:
                found.append((c, D))
                self._sets += 1
                if len(found) > cap:
                    return None
                continue
            u = int(und[0])
            o2 = out | A[:, u]
            o2[u] = True
            f2 = fin | A[u]
            f2[u] = True
            inside = bool(D[u])  # D holds u (and its ancestors) or leaves u (and descendants) out
            if not (fin & o2).any():
                stack.append((fin, o2, *((c, D) if not inside else
                                         net.value(v, fin, banned=o2))))
            if not (f2 & out).any():
                stack.append((f2, out, *((c, D) if inside else net.value(v, f2, banned=out))))
        found.sort(key=lambda cD: (cD[0], np.packbits(cD[1]).tobytes()))
        return found
