"""Depth-first search for an operator order within a byte budget, pruned by the closure bound of
the operators already run (the decision version of the order problem, used by ``exact_dp``).

The question ``is there a topological order whose peak is at most B bytes?`` is answered by a
depth-first search over down-sets ``S`` (the operators run so far, a bit mask), the iterative
form of Serenity's adaptive soft budgeting (Ahn et al., MLSys 2020, section 3.3) with the
conditional closure bound of :mod:`.bounds` (bound 4, ``C_S(v)``) as the pruning test.

Soundness
---------
Write ``live(S)`` for the bytes live once exactly ``S`` has run (a function of ``S`` alone,
:mod:`.memsim`'s convention). The search prunes a move ``S -> S + u`` when

* ``live(S) + alloc(u) > B`` (the live bytes at ``u``'s step), or
* ``C_{S+u}(v) > B`` for some operator ``v`` not in ``S + u``: every order that runs ``S + u``
  before ``v`` has at least ``C_{S+u}(v)`` bytes live at ``v``'s step (bound 4 of
  :mod:`.bounds` with ``S + u`` forced to run first).

Each pruned move comes with a value, a lower bound on the peak of every order that makes it. A
state's **floor** ``m(S)`` is the least such value over its moves (for a move into an already
failed state: the larger of the move's own step and that state's floor). By induction on the
states below ``S``, every order that has run exactly ``S`` and continues from it has a step with
at least ``m(S)`` bytes live -- a fact that does not depend on ``B``, so floors are kept in one
memo for every later search on the same graph (a state whose floor is above the budget is
pruned at once). When the search from the empty set fails, ``m({})`` is a lower bound on the
peak of every order: the proved bound rises to it, and it is above ``B``. When a state that is a
complete cut (:func:`.bounds.complete_cuts`: every order runs exactly those operators first)
fails, every order passes through it, so the search stops at once and its floor is a lower
bound on every order's peak. A search stopped by its node or time budget claims nothing.

The test ``C_{S+u}(v) > B`` needs a max-flow only when ``u`` leaves ``v``'s **witness**, a
down-set ``D_v`` valid for ``v`` with ``S`` forced (holding ``S`` and ``v``'s ancestors, not
``v`` nor a descendant) whose value ``live(D_v) + alloc(v)`` is at most ``B``; at the start it is
``v``'s ancestors when their value (:attr:`.bounds.ClosureCut.upper`) is at most ``B``, else the
largest least-live set (:meth:`.bounds.ClosureCut.value`, one flow per such operator and graph). While ``S + u`` is inside
``D_v``, ``C_{S+u}(v) <= value(D_v) <= B``: nothing to do. Otherwise ``D_v + u`` is again valid
(a union of down-sets; ``u`` is neither ``v`` nor its descendant, being ready before it), and
its live bytes are those of ``D_v`` plus ``u``'s read or kept outputs (their readers, successors
of ``u``, are outside ``D_v``) less ``u``'s inputs whose other readers are all in ``D_v`` (graph
outputs stay): when that value is still at most ``B`` it becomes the witness, without a flow.
Otherwise the last few sets the flows found for ``v`` (:data:`_POOL`, kept across probes) are
tried: one that holds ``S + u`` and whose value is at most ``B`` is a witness too. Only when
none fits is ``C_{S+u}(v)`` solved, and the largest least-live set becomes the witness (or the
move is pruned). Witnesses only decide when to solve, never what is proved.

Dominated moves (``reduce=True``)
--------------------------------
``live`` is submodular along down-sets: for down-sets ``S' <= X`` and a set ``W`` disjoint from
``X`` with ``X + W`` and ``S' + W`` down-sets, ``live(X + W) - live(X) <= live(S' + W) -
live(S')`` (``W``'s outputs read outside ``X + W`` are among those read outside ``S' + W``, and
every input that ``W`` frees after ``S'`` it frees after ``X`` too). Hence, from a state ``S``,
a **chain** ``u_1 -> u_2 -> ... -> u_k`` (each ``u_{j+1}`` a successor of ``u_j`` made ready by
it, so every order runs the chain's operators in this order) whose steps from ``S`` are within
``B`` and whose end ``live(S + U)`` is at most ``live`` at ``S`` and after each shorter prefix
dominates: moving ``U`` to the front of any order from ``S`` within ``B`` changes the live bytes
before each other step by ``live(X + U) - live(X) <= 0``, and leaves the steps after the chain's
last operator unchanged. So only ``u_1`` is tried (``k = 1``: a move that does not raise the
live bytes; chains of up to ``chain`` operators are looked for when there is none). Its floor
stays a bound for the state: the best order starting with ``u_1`` has peak at most the larger of
the chain's steps (``<= B``) and the state's best peak, so a failed ``u_1`` with floor above
``B`` bounds every order from ``S``. On ``moccasin_layered`` seed 0 (250 operators) the probe
at 195,559 bytes expanded 62,782 states in 20 s with single moves forced, against 29,911
without (measured side by side); on ``randwire`` of 101 operators at 1,313,013 bytes, 81,978
states in 30 s with chains, against 29,979.

Moves are tried by increasing look-ahead value: the larger of the move's step and the largest
witness value after it, as far as the repairs above tell without a flow (with
``lookahead=False``: by live bytes after the move, the greedy ``min_live`` rule), then by live
bytes after the move and operator index, so the search is deterministic for given budgets. The
look-ahead finds orders within tight budgets in fewer states (``moccasin_layered`` seed 2, 250
operators, budget 266,000 bytes: 627 states instead of 12,514).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from .bounds import ClosureCut
from .memsim import MemoryModel

__all__ = ["BudgetSearch", "Probe"]

#: Sets remembered per operator (the witness pool of the module docstring), fewer when the
#: pools of ``n`` operators would hold more than ``2**24`` bytes (``n * n`` per set each).
_POOL = 8


class _Stop(Exception):
    """The node or time budget of one probe ran out."""


class _CutFailed(Exception):
    """A complete cut failed: ``floor`` bounds every order's peak."""

    def __init__(self, floor: int) -> None:
        super().__init__(floor)
        self.floor = floor


@dataclass
class Probe:
    """Outcome of one :meth:`BudgetSearch.probe`.

    ``status`` is ``"found"`` (``order``, operator indices, has peak ``peak`` <= the budget),
    ``"failed"`` (no order has peak <= the budget; ``bound``, bytes, is a lower bound on every
    order's peak, above the budget) or ``"stopped"`` (budget of nodes or time spent; nothing
    claimed, ``bound`` is ``None``). ``nodes``: states expanded; ``flows``: max-flows solved.
    ``root_op``: when the failure was proved before any state was expanded, the operator whose
    closure bound ``C(v)`` exceeds the budget (else ``None``).
    """

    status: str
    order: list[int] | None
    peak: int | None
    bound: int | None
    nodes: int
    flows: int
    root_op: int | None = None


class BudgetSearch:
    """Depth-first decision search ``peak <= B?`` with closure pruning (module docstring).

    Parameters
    ----------
    model : MemoryModel
    ancestors : numpy bool array ``(n, n)``
        :func:`.bounds.ancestor_matrix` of ``model``.
    cuts : sequence of int, optional
        Complete cuts as prefix lengths of ``model.topological()``
        (:func:`.bounds.complete_cuts`).
    max_memo : int, default 500_000
        Most failed states whose floors are remembered (beyond it new ones are not stored,
        which costs time, never soundness).
    lookahead : bool, default True
        Order the moves by their look-ahead value (module docstring).
    reduce : bool, default True
        Try only a dominating move where there is one (module docstring).
    chain : int, default 4
        Longest chain looked for by ``reduce`` (1: single moves only).
    engine : {"auto", "compiled", "python"}, default "auto"
        ``"compiled"``: the probes and flows run in ``scheduling._budget``
        (``scheduling/_ext/_budget.c``), which expands the same states in the same order with the
        same floors, witnesses, pools and memo as the Python reference (``"python"``;
        ``tests/test_budget_engine.py`` compares them probe by probe); ``"auto"``: compiled when
        built.

    Raises
    ------
    ValueError
        Sizes too large for the flow capacities (:class:`.bounds.ClosureCut`), or an unknown
        ``engine``.
    ImportError
        ``engine="compiled"`` but ``scheduling._budget`` is not built.
    """

    def __init__(self, model: MemoryModel, ancestors: np.ndarray, cuts=(),
                 max_memo: int = 500_000, lookahead: bool = True, reduce: bool = True,
                 chain: int = 4, engine: str = "auto") -> None:
        self.m = model
        self.n = model.n
        self.A = ancestors
        self.net = ClosureCut(model, ancestors, engine=engine)
        self.engine = self.net.engine
        self.memo: dict[int, int] = {}
        self.max_memo = int(max_memo)
        topo = model.topological()
        self.cut_masks = set()
        for k in cuts:
            self.cut_masks.add(sum(1 << v for v in topo[:k]))
        # root witnesses: anc(v) (value upper(v)) until a probe's budget is below upper(v);
        # then the flow's C(v) and largest least-live set, computed once
        self._root: dict[int, tuple[int, np.ndarray]] = {}
        # per operator, the last few sets the flows found for it (each valid for any forced set
        # inside it, with its value): reused instead of a flow when one still fits
        self._pool: list[list[tuple[np.ndarray, int]]] = [[] for _ in range(self.n)]
        self._pool_max = max(1, min(_POOL, 2**24 // max(self.n * self.n, 1)))  # <= 16 MiB
        keep = model.keep
        # per operator: bytes its read or kept outputs add, and its inputs that it can free
        # (size, the other readers) -- the witness repair of the module docstring
        self._gain = (model.alloc - model.dead).tolist()
        self._frees = []
        for u in range(self.n):
            fr = []
            for t in model.ins[u]:
                if not keep[t]:
                    others = np.asarray([c for c in model.consumers[t] if c != u], np.int64)
                    fr.append((int(model.size[t]), others))
            self._frees.append(fr)
        self.nodes = 0
        self.flows = 0
        self.lookahead = bool(lookahead)
        self.reduce = bool(reduce)
        self.chain = int(chain) if reduce else 0
        self._search = None
        if self.engine == "compiled":
            self._search = self._compiled(cuts_masks=[topo[:k] for k in cuts])

    def _compiled(self, cuts_masks: list[list[int]]):
        """The compiled search of this graph (``scheduling._budget.Search``): the model as flat
        int64 arrays (CSR lists per operator), the frees of the witness repair, the cuts as
        masks."""
        from .bounds import compiled_module

        m, n = self.m, self.n

        def flat(lists):
            ptr = np.zeros(len(lists) + 1, np.int64)
            ptr[1:] = np.cumsum([len(x) for x in lists])
            idx = np.fromiter((i for x in lists for i in x), np.int64, int(ptr[-1]))
            return ptr, idx

        ins_ptr, ins = flat(m.ins)
        succ_ptr, succ = flat(m.succs)
        fr = [f for u in range(n) for f in self._frees[u]]
        fr_ptr = np.zeros(n + 1, np.int64)
        fr_ptr[1:] = np.cumsum([len(f) for f in self._frees])
        fr_size = np.asarray([sz for sz, _ in fr], np.int64)
        oth_ptr, oth = flat([o.tolist() for _, o in fr])
        masks = []
        for ops in cuts_masks:
            mk = np.zeros(n, bool)
            mk[ops] = True
            masks.append(mk)
        return compiled_module().Search(
            self.net.cnet, np.ascontiguousarray(m.alloc, np.int64),
            np.ascontiguousarray(m.dead, np.int64), np.ascontiguousarray(m.size, np.int64),
            np.ascontiguousarray(m.keep, bool), np.ascontiguousarray(m.n_consumers, np.int64),
            np.asarray([len(p) for p in m.preds], np.int64),
            np.ascontiguousarray(self.net.upper, np.int64), ins_ptr, ins, succ_ptr, succ,
            fr_ptr, fr_size, oth_ptr, oth, masks, self.max_memo, self.lookahead, self.reduce,
            self.chain, self._pool_max)

    def probe(self, budget: int, max_nodes: int, deadline: float | None = None) -> Probe:
        """Search for an order with peak ``<= budget`` bytes, expanding at most ``max_nodes``
        states (and stopping at ``deadline``, a :func:`time.perf_counter` value). Returns a
        :class:`Probe`; counts add to ``self.nodes`` / ``self.flows``."""
        m, n = self.m, self.n
        B = int(budget)
        nodes0, flows0 = self.nodes, self.flows
        if n == 0:
            return Probe("found", [], 0, None, 0, 0)
        if self._search is not None:
            left = None if deadline is None else deadline - time.perf_counter()
            st, order, bound, nodes, flows, root_op = self._search.probe(B, int(max_nodes), left)
            self.nodes += nodes
            self.flows += flows
            return Probe(st, order, None if order is None else m.peak(order), bound, nodes,
                         flows, root_op)
        upper = self.net.upper
        over = np.flatnonzero(upper > B)
        for v in over[np.argsort(-upper[over], kind="stable")].tolist():
            if v not in self._root:
                self.flows += 1
                self._root[v] = self.net.value(v, largest=True)
                if self._root[v][0] > B:  # no order within B: no need for the other C(v)
                    break
        worst, root_op = max(((c, v) for v, (c, _) in self._root.items()), default=(-1, None))
        if worst > B:  # a flow's C(v) > B: every order peaks at C(v) or more
            return Probe("failed", None, None, worst, 0, self.flows - flows0, root_op)
        # every operator whose upper value is above B has its C(v) (<= B) in _root
        Wd = self.A.copy()  # anc(v): a valid set for v with nothing run, of value upper(v)
        Wv = upper.copy()
        for v, (c, D) in self._root.items():
            Wd[v], Wv[v] = D, c
        self._B = B
        self._limit = self.nodes + int(max_nodes)
        self._deadline = deadline
        self._Wd, self._Wv = Wd, Wv
        self._Sb = np.zeros(n, bool)
        self._alloc = m.alloc.tolist()
        self._dead = m.dead.tolist()
        self._size = m.size.tolist()
        self._keep = m.keep.tolist()
        self._rem = m.n_consumers.tolist()
        self._indeg = [len(p) for p in m.preds]
        self._order: list[int] = []
        ready = {v for v in range(n) if not self._indeg[v]}
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, n + 1000))  # one frame per operator of the order
        try:
            found, floor = self._dfs(0, 0, 0, ready)
        except _Stop:
            return Probe("stopped", None, None, None, self.nodes - nodes0, self.flows - flows0)
        except _CutFailed as e:
            found, floor = False, e.floor
        finally:
            sys.setrecursionlimit(old_limit)
        if found:
            order = list(self._order)
            return Probe("found", order, m.peak(order), None, self.nodes - nodes0,
                         self.flows - flows0)
        return Probe("failed", None, None, int(floor), self.nodes - nodes0, self.flows - flows0)

    def _freed(self, u: int) -> int:
        """Bytes freed by running ``u`` now: its unread outputs and the inputs it reads last."""
        rem, keep, size = self._rem, self._keep, self._size
        fr = self._dead[u]
        for t in self.m.ins[u]:
            if rem[t] == 1 and not keep[t]:
                fr += size[t]
        return fr

    def _chain(self, u: int, after: int, low: int, depth: int) -> bool:
        """Whether running ``u`` (live bytes ``after`` once it ran; ``low``: the least live bytes
        before it along the chain) then a chain of at most ``depth`` successors, each made ready
        by the one before, within the budget, ends at or below ``low`` (module docstring)."""
        m, B = self.m, self._B
        alloc, rem, indeg = self._alloc, self._rem, self._indeg
        for t in m.ins[u]:
            rem[t] -= 1
        for s in m.succs[u]:
            indeg[s] -= 1
        low2 = low if low < after else after
        ok = False
        for w in m.succs[u]:
            if indeg[w] or after + alloc[w] > B:
                continue
            aw = after + alloc[w] - self._freed(w)
            if aw <= low2 or (depth > 1 and self._chain(w, aw, low2, depth - 1)):
                ok = True
                break
        for s in m.succs[u]:
            indeg[s] += 1
        for t in m.ins[u]:
            rem[t] += 1
        return ok

    def _dfs(self, S: int, live: int, pk: int, ready: set[int]) -> tuple[bool, int]:
        """Extend the order from state ``S`` (``live`` bytes live, peak ``pk`` so far): ``(True,
        0)`` when a complete order within the budget was reached (left in ``self._order``), else
        ``(False, floor)`` (module docstring)."""
        if len(self._order) == self.n:
            return True, 0
        self.nodes += 1
        if self.nodes > self._limit or (
                self._deadline is not None and time.perf_counter() > self._deadline):
            raise _Stop
        m, B, memo = self.m, self._B, self.memo
        alloc, rem = self._alloc, self._rem
        floor = None
        moves = []
        for u in ready:
            at = live + alloc[u]
            if at > B:
                floor = at if floor is None or at < floor else floor
                continue
            moves.append((at - self._freed(u), u, at))
        Sb, Wd = self._Sb, self._Wd
        if self.reduce:
            free = [mv for mv in moves if mv[0] <= live]
            if not free and self.chain > 1:
                for mv in sorted(moves):
                    if self._chain(mv[1], mv[0], live, self.chain - 1):
                        free = [mv]
                        break
            if free:  # a move that does not raise the live bytes dominates (docstring)
                moves = [min(free)]
                floor = None
        if self.lookahead and len(moves) > 1:
            look = []
            for after, u, at in moves:
                Sb[u] = True
                broken = np.flatnonzero(~Wd[:, u] & ~Sb)
                h = 0
                if broken.size:
                    val = self._Wv[broken] + self._gain[u]
                    for sz, others in self._frees[u]:
                        if others.size:
                            val -= sz * Wd[np.ix_(broken, others)].all(axis=1)
                        else:
                            val -= sz
                    h = int(val.max())
                Sb[u] = False
                look.append((max(h, at), after, u, at))
            look.sort()
            moves = [(a, u, t) for _, a, u, t in look]
        else:
            moves.sort()
        for after, u, at in moves:
            S2 = S | (1 << u)
            known = memo.get(S2)
            if known is not None and known > B:
                if S2 in self.cut_masks:
                    raise _CutFailed(known)
                val = known if known > at else at
                floor = val if floor is None or val < floor else floor
                continue
            Sb[u] = True
            saved = []
            cut = None
            Wv = self._Wv
            broken = np.flatnonzero(~Wd[:, u] & ~Sb)
            if broken.size:
                val = Wv[broken] + self._gain[u]
                for sz, others in self._frees[u]:
                    if others.size:
                        val -= sz * Wd[np.ix_(broken, others)].all(axis=1)
                    else:
                        val -= sz
                fine = val <= B
                rep = broken[fine]
                saved.append((rep, Wv[rep].copy(), None))
                Wd[rep, u] = True
                Wv[rep] = val[fine]
                for v in broken[~fine].tolist():
                    pool = self._pool[v]
                    for D, c in pool:  # a set found for v before, still valid and within B
                        if c <= B and not (Sb & ~D).any():
                            break
                    else:
                        self.flows += 1
                        c, D = self.net.value(v, Sb, largest=True)
                        if c > B:
                            cut = c
                            break
                        pool.append((D, c))
                        if len(pool) > self._pool_max:
                            pool.pop(0)
                    saved.append((v, Wv[v], Wd[v].copy()))
                    Wd[v] = D
                    Wv[v] = c
            if cut is None:
                for t in m.ins[u]:
                    rem[t] -= 1
                nready = set(ready)
                nready.discard(u)
                for s in m.succs[u]:
                    self._indeg[s] -= 1
                    if not self._indeg[s]:
                        nready.add(s)
                self._order.append(u)
                ok, sub = self._dfs(S2, after, pk if pk >= at else at, nready)
                if ok:
                    return True, 0
                self._order.pop()
                for s in m.succs[u]:
                    self._indeg[s] += 1
                for t in m.ins[u]:
                    rem[t] += 1
            else:
                sub = cut
                if len(memo) < self.max_memo:
                    memo[S2] = max(memo.get(S2, 0), cut)
            for v, old, row in reversed(saved):
                Wv[v] = old
                if row is None:
                    Wd[v, u] = False
                else:
                    Wd[v] = row
            Sb[u] = False
            if S2 in self.cut_masks:  # every order runs exactly S2 first, then peaks >= sub
                raise _CutFailed(sub)
            val = sub if sub > at else at
            floor = val if floor is None or val < floor else floor
        assert floor is not None  # a state with no operator left returned above
        if len(memo) < self.max_memo:
            memo[S] = max(memo.get(S, 0), floor)
        return False, floor
