"""Lifetimes over a partial order: buffers on concurrent streams (issue #35, section 1).

A runtime that executes independent branches at once (ONNX Runtime's parallel executor, a
multi-core MCU, an NPU overlapping DMA with compute) has no single schedule: each **stream**
(thread, core, queue) runs its own sequence of steps, and **happens-before** edges between
streams (a cross-stream data edge, an event or a barrier) order some of their steps. Interval
lifetimes on one schedule would let two tensors that are live at once on different streams share
addresses; this module plans the partial order itself.

Model
-----
* An **event** is ``(stream, step)``: stream a non-negative int, step a non-negative int (the
  position of an operator in that stream's sequence; schedule steps).
* Happens-before (``e hb f``, strict) is the transitive closure of: ``(s, i) hb (s, j)`` for
  ``i < j`` (a stream is sequential), and the given edges ``(a, i) -> (b, j)`` ("step ``i`` of
  ``a`` completes before step ``j`` of ``b`` begins"). A cycle is refused.
* A buffer (:class:`ConcurrentBuffer`) is written at its **first** event ``(stream, first)`` and
  last used at its **ends**: ``(stream, last)`` (closed range ``[first, last]`` on its home
  stream, as the seeds write lifetimes) and optionally ``reads``, last reads on other streams.
  Every read must happen after the write.
* ``x`` **precedes** ``y`` iff every end of ``x`` happens before the first event of ``y``; then
  ``y`` may reuse ``x``'s addresses. Two non-zero-size buffers **conflict** iff neither precedes
  the other; a plan is valid iff conflicting buffers occupy disjoint address ranges
  ``[offset, offset + size)`` (bytes), every offset is a multiple of the buffer's alignment and,
  with a capacity, every top fits it. "Precedes" is a strict partial order, so the conflict graph
  is its incomparability graph.

With one stream and no ``reads`` this is exactly the interval model of :mod:`planners.model`
(half-open ``[first, last + 1)``): :meth:`ConcurrentProblem.from_problem` and
:meth:`ConcurrentProblem.interval_cover` convert.

Vector clocks
-------------
Happens-before is computed as vector clocks over the *relevant* events (the ``V`` events named by
a buffer or an edge): ``clock[e][b]`` is the first step of stream ``b`` that ``e`` happens before
(``INF`` if none), filled in reverse topological order of the relevant-event DAG (networkx), one
numpy row minimum per DAG arc: ``O((V + H) k)`` for ``H`` edges and ``k`` streams. A buffer's
clock is the element-wise maximum over its ends, so ``x`` precedes ``y`` iff
``clock[x][stream(y)] <= first(y)``; the conflict pairs follow from one vectorised comparison per
block of rows (``O(n^2)`` numpy work, ``O(n)`` rows of memory per block, no Python loop per pair).
The validator (:func:`check_concurrent_plan`) shares none of this code: it builds the full event
DAG and asks networkx for reachability.

Lower bound
-----------
Pairwise-conflicting buffers need pairwise-disjoint addresses, so the largest weight of a clique of
the conflict graph, which is an **antichain** of "precedes", bounds every arena.
:func:`concurrent_lower_bound` computes the maximum-weight antichain exactly by weighted Dilworth
(Ford and Fulkerson 1962; e.g. Schrijver, *Combinatorial Optimization*, Cor. 14.5a): blow each
buffer ``x`` up into ``size(x)`` incomparable copies; a minimum chain cover of that poset is
``W - F`` for ``F`` the maximum flow of the bipartite network ``source -> x_L`` (capacity
``size(x)``), ``x_L -> y_R`` (unbounded) for ``x`` precedes ``y``, ``y_R -> sink`` (capacity
``size(y)``), and by Dilworth it equals the maximum antichain weight. The antichain itself is read
off the minimum cut (``x_L`` on the source side, ``x_R`` not). OR-Tools' ``SimpleMaxFlow``;
``O(n^2)`` arcs. With one stream it is the peak of live bytes,
:func:`planners.bounds.lower_bound` of the interval problem (alignment 1; with alignment the
interval bound also counts padding, this one only sizes).

Planning
--------
:func:`plan_concurrent` plans with any registered planner, by the ``concurrency`` entry of its
capability table (:meth:`planners.base.Planner.kind_capabilities`, shown by ``memplan list``):

* ``native``: the greedy engine (:class:`planners.greedy.GreedyPlanner` and its named orders)
  places the buffers over the **conflict edges** themselves (:func:`greedy_concurrent`, the
  engine's graph path with ``edges=``); ``cpsat`` (and ``conflict_cpsat``, the same model
  outside the registry) solves the exact CP-SAT model over the conflict graph
  (:func:`cpsat_concurrent`, one disjunction per conflict pair), whose proved optimum is the
  problem's;
* ``cover``: every other planner plans the **interval cover**
  (:meth:`ConcurrentProblem.interval_cover`), an interval problem whose interference graph
  contains every conflict of the concurrent problem, so each of its valid plans is valid here
  (proved there). Its own bound is not the concurrent bound: a plan that is optimal for the
  cover is reported ``feasible`` here (the optimum of a restricted model) unless its arena
  equals :func:`concurrent_lower_bound`. A decision planner (``exact_search``) needs the
  problem's capacity, and refuses without one;
* ``refused``: a one-line refusal naming the planner and the feature.

Every returned plan passes :func:`check_concurrent_plan`; the status is ``optimal`` only when the
arena equals the concurrent lower bound.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from .errors import FeatureError, InvalidPlanError, ProblemError, SolverError
from .model import INT64_MAX, Buffer, Problem

__all__ = [
    "ConcurrentBuffer",
    "ConcurrentProblem",
    "ConcurrentPlan",
    "check_concurrent_plan",
    "concurrent_lower_bound",
    "max_weight_antichain",
    "greedy_concurrent",
    "cpsat_concurrent",
    "plan_concurrent",
    "concurrent_planners",
    "concurrent_route",
    "INF_STEP",
]

#: "No step of that stream": the clock entry of a stream an event happens before nothing of.
INF_STEP = np.iinfo(np.int64).max

#: JSON format tag of :meth:`ConcurrentProblem.to_json`.
JSON_FORMAT = "memplan-concurrent"

_LIMIT = 2**62


def _int(value: Any, what: str, item: str, lo: int = 0) -> int:
    """``value`` as an int in ``[lo, 2**62)`` or a :class:`ProblemError` naming ``item``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        else:
            raise ProblemError(f"{item}: {what} must be an integer, got {value!r}")
    v = int(value)
    if not lo <= v < _LIMIT:
        raise ProblemError(f"{item}: {what} must be in [{lo}, 2**62), got {v}")
    return v


@dataclass(frozen=True, slots=True)
class ConcurrentBuffer:
    """A buffer of a concurrent problem (module docstring, "Model").

    Parameters
    ----------
    id : str
        Unique name within the problem.
    stream : int
        Home stream (``>= 0``): the stream of the operator that writes it.
    first, last : int
        Closed range ``[first, last]`` of steps on the home stream (``first <= last``): written at
        step ``first``, last used there at step ``last``.
    size : int
        Bytes, ``>= 0``; zero-size buffers take no space.
    alignment : int or None
        Offset alignment in bytes (``>= 1``), ``None`` for the problem's default.
    reads : tuple of (stream, step)
        Last reads on other streams (events that must happen after ``(stream, first)``).
    """

    id: str
    stream: int
    first: int
    last: int
    size: int
    alignment: int | None = None
    reads: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ProblemError(f"buffer id must be a non-empty string, got {self.id!r}")
        item = f"buffer {self.id!r}"
        for name in ("stream", "first", "last", "size"):
            object.__setattr__(self, name, _int(getattr(self, name), name, item))
        if self.last < self.first:
            raise ProblemError(f"{item}: last step {self.last} is before first step {self.first}")
        if self.alignment is not None:
            object.__setattr__(self, "alignment", _int(self.alignment, "alignment", item, lo=1))
        reads = []
        for r in self.reads:
            if len(r) != 2:
                raise ProblemError(f"{item}: a read is a (stream, step) pair, got {r!r}")
            reads.append((_int(r[0], "read stream", item), _int(r[1], "read step", item)))
        object.__setattr__(self, "reads", tuple(sorted(set(reads))))

    @property
    def ends(self) -> tuple[tuple[int, int], ...]:
        """The buffer's last-use events: ``(stream, last)`` and its ``reads``."""
        return ((self.stream, self.last), *self.reads)


def _as_edge(e, where: str) -> tuple[int, int, int, int]:
    try:
        if len(e) == 2:
            (a, i), (b, j) = e
        else:
            a, i, b, j = e
    except (TypeError, ValueError):
        raise ProblemError(f"{where}: an edge is ((stream, step), (stream, step)) or "
                           f"(stream, step, stream, step), got {e!r}") from None
    item = f"{where}: edge {e!r}"
    return (_int(a, "stream", item), _int(i, "step", item), _int(b, "stream", item),
            _int(j, "step", item))


class ConcurrentProblem:
    """Buffers on concurrent streams with happens-before edges (module docstring, "Model").

    Parameters
    ----------
    buffers : iterable of ConcurrentBuffer
    edges : iterable
        Happens-before edges ``((a, i), (b, j))`` or ``(a, i, b, j)``: step ``i`` of stream ``a``
        completes before step ``j`` of stream ``b`` begins.
    alignment : int
        Default offset alignment (bytes, ``>= 1``).
    capacity : int or None
        Arena capacity (bytes), ``None`` to minimise.
    name : str

    Attributes
    ----------
    n, k : number of buffers, number of streams (``1 + max stream``, at least 1).
    sizes, alignments, streams, firsts, lasts : int64 arrays of shape ``(n,)`` (bytes, steps).
    clocks : int64 array ``(n, k)``: ``clocks[x, b]`` is the first step of stream ``b`` that every
        end of ``x`` happens before (:data:`INF_STEP` if none).

    Raises
    ------
    ProblemError
        Duplicate ids, an item that is not a :class:`ConcurrentBuffer`, a bad edge or alignment,
        a happens-before cycle (named), a read that does not happen after its buffer's write, or
        a sum of aligned sizes above ``2**63 - 1`` bytes.

    Notes
    -----
    Construction computes the vector clocks: ``O((V + H) k + n k)`` for ``V`` relevant events,
    ``H`` edges, ``k`` streams (module docstring, "Vector clocks").

    Examples
    --------
    Two streams, ``a`` on stream 0 read on stream 1 after a cross edge; ``b`` on stream 1 is
    concurrent with ``a``, ``c`` comes after ``a``'s last read:

    >>> cp = ConcurrentProblem(
    ...     [ConcurrentBuffer("a", 0, 0, 0, 8, reads=((1, 1),)),
    ...      ConcurrentBuffer("b", 1, 0, 1, 4), ConcurrentBuffer("c", 1, 2, 2, 8)],
    ...     edges=[((0, 0), (1, 1))])
    >>> sorted(cp.conflict_pairs()), concurrent_lower_bound(cp)
    ([('a', 'b')], 12)
    """

    def __init__(self, buffers: Iterable[ConcurrentBuffer], edges: Iterable = (),
                 alignment: int = 1, capacity: int | None = None, name: str = "") -> None:
        self.name = str(name)
        where = f"concurrent problem {self.name!r}"
        bufs = tuple(buffers)
        seen: dict[str, int] = {}
        for i, b in enumerate(bufs):
            if not isinstance(b, ConcurrentBuffer):
                raise ProblemError(f"{where}: item {i} is not a ConcurrentBuffer: {b!r}")
            if b.id in seen:
                raise ProblemError(f"{where}: duplicate buffer id {b.id!r} (items {seen[b.id]} "
                                   f"and {i})")
            seen[b.id] = i
        self.buffers = bufs
        self.index = seen
        self.alignment = _int(alignment, "alignment", where, lo=1)
        self.capacity = None if capacity is None else _int(capacity, "capacity", where)
        self.edges = tuple(sorted(set(_as_edge(e, where) for e in edges)))
        n = len(bufs)
        self.n = n
        self.sizes = np.array([b.size for b in bufs], np.int64)
        self.alignments = np.array([self.alignment if b.alignment is None else b.alignment
                                    for b in bufs], np.int64)
        self.streams = np.array([b.stream for b in bufs], np.int64)
        self.firsts = np.array([b.first for b in bufs], np.int64)
        self.lasts = np.array([b.last for b in bufs], np.int64)
        worst = sum(-(-s // a) * a + a - 1 for s, a in zip(self.sizes.tolist(),
                                                           self.alignments.tolist(), strict=True))
        if worst > INT64_MAX:
            raise ProblemError(f"{where}: worst-case arena {worst} bytes exceeds 2**63 - 1")
        top = [b.stream for b in bufs] + [s for b in bufs for s, _ in b.reads]
        top += [e[0] for e in self.edges] + [e[2] for e in self.edges]
        self.k = 1 + max(top, default=0)
        self._conflicts: tuple[np.ndarray, np.ndarray] | None = None
        self._event_clocks(where)

    # -- vector clocks -------------------------------------------------------------------------
    def _event_clocks(self, where: str) -> None:
        """Fill ``self.clocks`` (module docstring, "Vector clocks")."""
        k = self.k
        events = {(b.stream, b.first) for b in self.buffers}
        for b in self.buffers:
            events.update(b.ends)
        for a, i, b, j in self.edges:
            events.add((a, i))
            events.add((b, j))
        ev = sorted(events)
        idx = {e: t for t, e in enumerate(ev)}
        dag = nx.DiGraph()
        dag.add_nodes_from(range(len(ev)))
        for t in range(len(ev) - 1):  # consecutive relevant steps of one stream
            if ev[t][0] == ev[t + 1][0]:
                dag.add_edge(t, t + 1)
        for a, i, b, j in self.edges:
            if (a, i) == (b, j):
                raise ProblemError(f"{where}: edge ({a}, {i}) -> ({b}, {j}) is a self-loop")
            dag.add_edge(idx[(a, i)], idx[(b, j)])
        try:
            topo = list(nx.topological_sort(dag))
        except nx.NetworkXUnfeasible:
            cyc = [ev[u] for u, _ in nx.find_cycle(dag)]
            raise ProblemError(f"{where}: the happens-before edges form a cycle through events "
                               f"{cyc} ((stream, step))") from None
        clock = np.full((len(ev), k), INF_STEP, np.int64)
        for t in reversed(topo):
            s, step = ev[t]
            row = clock[t]
            row[s] = step + 1
            for u in dag.successors(t):
                np.minimum(row, clock[u], out=row)
                su, stepu = ev[u]
                if stepu < row[su]:
                    row[su] = stepu
        self._events, self._event_index, self._event_clock = ev, idx, clock
        n = self.n
        bclock = np.full((n, k), 0, np.int64)
        for x, b in enumerate(self.buffers):
            rows = [idx[e] for e in b.ends]
            bclock[x] = clock[rows].max(axis=0)
            wclock = clock[idx[(b.stream, b.first)]]
            for rs, rstep in b.reads:
                if wclock[rs] > rstep:
                    raise ProblemError(
                        f"{where}: buffer {b.id!r} is read at (stream {rs}, step {rstep}), which "
                        f"does not happen after its write at (stream {b.stream}, step {b.first})")
        self.clocks = bclock

    def happens_before(self, e, f) -> bool:
        """Whether event ``e = (stream, step)`` happens before ``f`` (strict). ``e`` must be a
        relevant event (a buffer's first or end, or an edge end point; else ``KeyError``);
        ``f`` may be any event. ``O(1)``."""
        c = self._event_clock[self._event_index[tuple(e)]]
        s, step = f
        return bool(s < self.k and c[s] <= step)

    # -- conflicts -----------------------------------------------------------------------------
    def precedes_block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Bool matrix ``[i, j]``: buffer ``rows[i]`` precedes buffer ``cols[j]``."""
        return self.clocks[rows[:, None], self.streams[cols][None, :]] <= self.firsts[cols][None, :]

    def _pairs(self, kind: str, block_cells: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
        live = np.flatnonzero(self.sizes > 0)
        m = live.size
        out_a, out_b = [], []
        step = max(1, block_cells // max(m, 1))
        for r0 in range(0, m, step):
            rows = live[r0:r0 + step]
            p = self.precedes_block(rows, live)
            if kind == "conflict":
                q = self.precedes_block(live, rows).T
                mask = ~(p | q)
                mask &= np.arange(m)[None, :] > np.arange(r0, r0 + rows.size)[:, None]
            else:  # precedes (directed, all pairs)
                mask = p
            i, j = np.nonzero(mask)
            out_a.append(rows[i])
            out_b.append(live[j])
        if not out_a:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(out_a).astype(np.int64), np.concatenate(out_b).astype(np.int64)

    def conflict_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Conflicting pairs of non-zero-size buffers, each once (``a < b``, indices in problem
        order): the input of the greedy engine (:func:`planners.greedy.greedy_offsets`'s
        ``edges=``). ``O(n^2)`` vectorised work in blocks of ``2**22`` cells; cached."""
        if self._conflicts is None:
            self._conflicts = self._pairs("conflict")
        return self._conflicts

    def precedence_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """All pairs ``(x, y)`` of non-zero-size buffers with ``x`` preceding ``y``."""
        return self._pairs("precedes")

    def conflict_pairs(self) -> list[tuple[str, str]]:
        """:meth:`conflict_edges` as id pairs."""
        a, b = self.conflict_edges()
        ids = [x.id for x in self.buffers]
        return [(ids[i], ids[j]) for i, j in zip(a.tolist(), b.tolist(), strict=True)]

    # -- interval problems ---------------------------------------------------------------------
    @classmethod
    def from_problem(cls, problem: Problem) -> ConcurrentProblem:
        """The one-stream problem of a plain interval :class:`~planners.model.Problem`
        (half-open ``[start, end)`` becomes ``first = start``, ``last = end - 1``). Raises
        :class:`ProblemError` for a problem with aliases, colocations or compiler features,
        which this model does not carry."""
        if problem.aliases or problem.colocations or problem.features:
            raise ProblemError(f"problem {problem.name!r}: aliases, colocations and compiler "
                               "features have no concurrent form")
        own = problem._own_align
        bufs = [ConcurrentBuffer(b.id, 0, int(s), int(e) - 1, int(z),
                                 None if own is None or own[i] == 0 else int(own[i]))
                for i, (b, s, e, z) in enumerate(zip(problem.buffers, problem.starts.tolist(),
                                                     problem.ends.tolist(),
                                                     problem.sizes.tolist(), strict=True))]
        return cls(bufs, alignment=problem.alignment, capacity=problem.capacity,
                   name=problem.name)

    def interval_cover(self) -> Problem:
        """An interval problem whose every interference is a conflict here or more (a cover).

        Events are laid out in a linear extension ``L`` of happens-before (networkx
        lexicographic topological sort keyed by ``(step, stream)``); buffer ``x`` gets the
        half-open lifetime ``[pos(first x), 1 + max pos(e))`` over the first events ``e`` of all
        buffers that do **not** happen after every end of ``x`` (its own first among them, so the
        lifetime is non-empty). If two cover lifetimes are disjoint, say ``hi(x) <= lo(y)``, then
        ``first(y)`` is past every such event, so it happens after every end of ``x``: ``x``
        precedes ``y`` and the two do not conflict. Hence every valid plan of the cover is a
        valid plan of this problem; the cover may interfere more (two unsynchronised streams
        look live together until the next happens-before edge), so its lower bound is not
        :func:`concurrent_lower_bound`. With one stream and no reads its interferences are
        exactly those of the interval problem (lifetimes renumbered to event positions). Sizes, alignments and capacity are kept. ``O(V log V + n k log n)``.
        """
        ev = self._events
        dag = nx.DiGraph()
        dag.add_nodes_from(range(len(ev)))
        for t in range(len(ev) - 1):
            if ev[t][0] == ev[t + 1][0]:
                dag.add_edge(t, t + 1)
        idx = self._event_index
        for a, i, b, j in self.edges:
            dag.add_edge(idx[(a, i)], idx[(b, j)])
        order = nx.lexicographical_topological_sort(dag, key=lambda t: (ev[t][1], ev[t][0]))
        pos = np.empty(len(ev), np.int64)
        pos[list(order)] = np.arange(len(ev))
        fpos = np.array([pos[idx[(b.stream, b.first)]] for b in self.buffers], np.int64)
        hi = np.zeros(self.n, np.int64)
        for s in range(self.k):
            on = np.flatnonzero(self.streams == s)
            if on.size == 0:
                continue
            srt = on[np.argsort(self.firsts[on], kind="stable")]
            steps, ps = self.firsts[srt], fpos[srt]  # positions increase with the step
            cut = np.searchsorted(steps, self.clocks[:, s], side="left") - 1
            ok = cut >= 0
            hi[ok] = np.maximum(hi[ok], ps[cut[ok]] + 1)
        own = [b.alignment for b in self.buffers]
        bufs = [Buffer(b.id, int(fpos[x]), int(hi[x]), b.size, own[x])
                for x, b in enumerate(self.buffers)]
        return Problem(bufs, capacity=self.capacity, alignment=self.alignment,
                       name=f"{self.name} (interval cover)")

    # -- files ---------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-ready dict (``format``, ``version``, ``name``, ``alignment``, ``capacity``,
        ``buffers`` with ``id, stream, first, last, size[, alignment][, reads]``, ``edges`` as
        ``[a, i, b, j]``)."""
        bufs = []
        for b in self.buffers:
            d = {"id": b.id, "stream": b.stream, "first": b.first, "last": b.last, "size": b.size}
            if b.alignment is not None:
                d["alignment"] = b.alignment
            if b.reads:
                d["reads"] = [list(r) for r in b.reads]
            bufs.append(d)
        return {"format": JSON_FORMAT, "version": 1, "name": self.name,
                "alignment": self.alignment, "capacity": self.capacity, "buffers": bufs,
                "edges": [list(e) for e in self.edges]}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_dict(cls, d: Mapping) -> ConcurrentProblem:
        """Inverse of :meth:`to_dict`. Raises :class:`ProblemError` on another format tag, a
        missing field or any rule of the constructor."""
        if d.get("format") != JSON_FORMAT:
            raise ProblemError(f"not a {JSON_FORMAT!r} document (format {d.get('format')!r})")
        try:
            bufs = [ConcurrentBuffer(b["id"], b["stream"], b["first"], b["last"], b["size"],
                                     b.get("alignment"), tuple(map(tuple, b.get("reads", ()))))
                    for b in d["buffers"]]
        except KeyError as exc:
            raise ProblemError(f"concurrent problem: a buffer lacks field {exc}") from None
        return cls(bufs, d.get("edges", ()), d.get("alignment", 1), d.get("capacity"),
                   d.get("name", ""))

    @classmethod
    def from_json(cls, text: str) -> ConcurrentProblem:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))

    def to_csv(self) -> tuple[str, str]:
        """Two CSV texts: buffers (``id,stream,first,last,size,alignment,reads``; ``alignment``
        empty for the default, ``reads`` as ``stream:step`` joined by ``;``) and edges
        (``from_stream,from_step,to_stream,to_step``). The problem's name, default alignment
        and capacity are not in them (:meth:`from_csv` takes them as arguments)."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["id", "stream", "first", "last", "size", "alignment", "reads"])
        for b in self.buffers:
            w.writerow([b.id, b.stream, b.first, b.last, b.size,
                        "" if b.alignment is None else b.alignment,
                        ";".join(f"{s}:{t}" for s, t in b.reads)])
        eo = io.StringIO()
        w = csv.writer(eo, lineterminator="\n")
        w.writerow(["from_stream", "from_step", "to_stream", "to_step"])
        w.writerows(self.edges)
        return out.getvalue(), eo.getvalue()

    @classmethod
    def from_csv(cls, buffers_text: str, edges_text: str = "", alignment: int = 1,
                 capacity: int | None = None, name: str = "") -> ConcurrentProblem:
        """Inverse of :meth:`to_csv`. Columns ``alignment`` and ``reads`` are optional. Raises
        :class:`ProblemError` on a missing column or a malformed field (row named)."""
        rows = list(csv.DictReader(io.StringIO(buffers_text)))
        need = {"id", "stream", "first", "last", "size"}
        if rows and not need <= set(rows[0]):
            raise ProblemError(f"concurrent CSV: columns {sorted(need - set(rows[0]))} missing")
        bufs = []
        for r, row in enumerate(rows, start=2):
            try:
                reads = tuple(tuple(p.split(":")) for p in (row.get("reads") or "").split(";") if p)
                if any(len(p) != 2 for p in reads):
                    raise ProblemError(f"reads {row.get('reads')!r} is not stream:step;...")
                al = (row.get("alignment") or "").strip()
                bufs.append(ConcurrentBuffer(row["id"], row["stream"], row["first"],
                                             row["last"], row["size"], al or None, reads))
            except ProblemError as exc:
                raise ProblemError(f"concurrent CSV line {r}: {exc}") from None
        edges = [tuple(row) for row in csv.reader(io.StringIO(edges_text))][1:]
        return cls(bufs, [e for e in edges if e], alignment, capacity, name)

    def write_csv(self, path) -> tuple[Path, Path]:
        """Write :meth:`to_csv` to ``path`` and ``<stem>.edges.csv`` beside it; returns both."""
        path = Path(path)
        epath = path.with_name(path.stem + ".edges.csv")
        bt, et = self.to_csv()
        path.write_text(bt)
        epath.write_text(et)
        return path, epath

    @classmethod
    def read_csv(cls, path, **kw) -> ConcurrentProblem:
        """Read what :meth:`write_csv` wrote (the edges file may be absent: no edges)."""
        path = Path(path)
        epath = path.with_name(path.stem + ".edges.csv")
        return cls.from_csv(path.read_text(), epath.read_text() if epath.exists() else "",
                            name=kw.pop("name", path.stem), **kw)

    def __repr__(self) -> str:
        return (f"ConcurrentProblem({self.name!r}, n={self.n}, streams={self.k}, "
                f"edges={len(self.edges)})")


# ---------------------------------------------------------------------------------------------
# Validator (own code: the full event DAG and networkx reachability, no clocks)
# ---------------------------------------------------------------------------------------------
def check_concurrent_plan(problem: ConcurrentProblem, offsets, check_capacity: bool = True) -> int:
    """Check a plan of ``problem``; return its arena (bytes, highest ``offset + size`` of the
    non-zero-size buffers, 0 if none).

    Rules: one integer offset ``>= 0`` per buffer (bytes, problem order), a multiple of the
    buffer's alignment; the top within the capacity if any; any two non-zero-size buffers whose
    address ranges ``[offset, offset + size)`` intersect are ordered by happens-before (every end
    of one happens before the first event of the other). Happens-before is recomputed here from
    the buffers and edges alone: every step ``0 .. max`` of every stream is a node of a networkx
    DAG (stream chains plus the edges), and reachability is ``nx.descendants``; none of the
    problem's clocks is read.

    Raises
    ------
    InvalidPlanError
        Naming the first offending buffer or pair (pairs in order of lower offset).

    Notes
    -----
    The address-overlapping pairs come from a sweep over offsets: ``O(n log n + A)`` for ``A``
    such pairs, plus one reachability search per distinct end event met (``O(V + H)`` each).
    """
    bufs = problem.buffers
    n = problem.n
    try:
        off = [int(o) for o in np.asarray(offsets).tolist()]
    except (TypeError, ValueError):
        raise InvalidPlanError("offsets must be integers") from None
    if len(off) != n:
        raise InvalidPlanError(f"{len(off)} offsets for {n} buffers")
    align = problem.alignment
    for b, o in zip(bufs, off, strict=True):
        a = align if b.alignment is None else b.alignment
        if o < 0:
            raise InvalidPlanError(f"buffer {b.id!r}: negative offset {o}")
        if o % a:
            raise InvalidPlanError(f"buffer {b.id!r}: offset {o} is not a multiple of its "
                                   f"alignment {a}")
        if o + b.size > INT64_MAX:
            raise InvalidPlanError(f"buffer {b.id!r}: offset + size exceeds the representable "
                                   "range")
    live = [x for x in range(n) if bufs[x].size > 0]
    arena = max((off[x] + bufs[x].size for x in live), default=0)
    if check_capacity and problem.capacity is not None and arena > problem.capacity:
        raise InvalidPlanError(f"arena {arena} bytes exceeds the capacity {problem.capacity}")
    dag = nx.DiGraph()
    last_step: dict[int, int] = {}

    def note(s, t):
        last_step[s] = max(last_step.get(s, 0), t)

    for b in bufs:
        note(b.stream, b.last)
        for s, t in b.reads:
            note(s, t)
    for a, i, b2, j in problem.edges:
        note(a, i)
        note(b2, j)
    for s, top in last_step.items():
        dag.add_node((s, 0))
        dag.add_edges_from(((s, t), (s, t + 1)) for t in range(top))
    dag.add_edges_from(((a, i), (b2, j)) for a, i, b2, j in problem.edges)
    after: dict[tuple[int, int], set] = {}

    def before(x: int, y: int) -> bool:
        f = (bufs[y].stream, bufs[y].first)
        for e in ((bufs[x].stream, bufs[x].last), *bufs[x].reads):
            if e not in after:
                after[e] = nx.descendants(dag, e)
            if f not in after[e]:
                return False
        return True

    live.sort(key=lambda x: off[x])
    active: list[int] = []  # buffers whose range may still reach the current offset
    for y in live:
        oy = off[y]
        active = [x for x in active if off[x] + bufs[x].size > oy]
        for x in active:
            if not (before(x, y) or before(y, x)):
                bx, by = bufs[x], bufs[y]
                raise InvalidPlanError(
                    f"buffers {bx.id!r} [{off[x]}, {off[x] + bx.size}) and {by.id!r} "
                    f"[{oy}, {oy + by.size}) overlap in address and neither happens before the "
                    f"other (streams {bx.stream} and {by.stream})")
        active.append(y)
    return arena


# ---------------------------------------------------------------------------------------------
# Lower bound
# ---------------------------------------------------------------------------------------------
def max_weight_antichain(problem: ConcurrentProblem, weights=None) -> tuple[int, list[int]]:
    """The maximum-weight antichain of "precedes" (pairwise-conflicting buffers) and its weight.

    Weighted Dilworth by maximum flow (module docstring, "Lower bound"; OR-Tools
    ``SimpleMaxFlow``), weights = sizes in bytes (or ``weights``, an int array of shape
    ``(n,)``), zero-size buffers excluded.

    Returns
    -------
    weight : int
        Bytes; 0 for a problem without non-zero-size buffers.
    members : list of int
        Buffer indices (problem order, ascending) of one maximum antichain, whose sizes sum to
        ``weight``.

    Raises
    ------
    RuntimeError
        The flow solver reports anything but an optimal flow (not expected).

    Notes
    -----
    ``O(n^2)`` arcs (all precedence pairs) and one max-flow solve (push-relabel).
    """
    from ortools.graph.python import max_flow

    live = np.flatnonzero(problem.sizes > 0)
    if live.size == 0:
        return 0, []
    w = problem.sizes if weights is None else np.asarray(weights, np.int64)
    total = int(w[live].sum())
    pa, pb = problem.precedence_pairs()
    n = problem.n
    src, snk = 2 * n, 2 * n + 1
    smf = max_flow.SimpleMaxFlow()
    smf.add_arcs_with_capacity(np.full(live.size, src, np.int64), live, w[live])
    smf.add_arcs_with_capacity(n + live, np.full(live.size, snk, np.int64), w[live])
    if pa.size:
        smf.add_arcs_with_capacity(pa, n + pb, np.full(pa.size, total, np.int64))
    status = smf.solve(src, snk)
    if status != smf.OPTIMAL:
        raise RuntimeError(f"max flow status {status}")
    flow = int(smf.optimal_flow())
    side = set(smf.get_source_side_min_cut())
    members = [int(x) for x in live.tolist() if x in side and n + x not in side]
    weight = total - flow
    got = int(w[members].sum()) if members else 0
    if got != weight:  # the cut argument guarantees equality; refuse a wrong number
        raise RuntimeError(f"antichain read off the cut weighs {got}, the flow says {weight}")
    return weight, members


def concurrent_lower_bound(problem: ConcurrentProblem) -> int:
    """Lower bound (bytes) on the arena of every valid plan.

    The larger of two valid bounds: the weight of a maximum-weight set of pairwise-conflicting
    buffers (:func:`max_weight_antichain`; the maximum clique of the conflict graph, exact for
    it), and its padded form. Every offset is a multiple of ``g``, the gcd of the alignments of
    the non-zero-size buffers, so in a stack of pairwise-conflicting buffers every buffer but the
    topmost takes its size rounded up to ``g``: the maximum antichain weight of the rounded
    sizes, less the largest rounding of any buffer, is also a bound (the same argument as
    :func:`planners.bounds.lower_bound`). With one stream it equals
    :func:`planners.bounds.lower_bound` of the interval problem. Two max-flow solves at most.
    """
    plain = max_weight_antichain(problem)[0]
    live = problem.sizes > 0
    if not live.any():
        return 0
    g = int(np.gcd.reduce(problem.alignments[live]))
    rounded = -(-problem.sizes // g) * g
    slack = rounded - problem.sizes
    if not slack.any():
        return plain
    padded = max_weight_antichain(problem, rounded)[0] - int(slack.max())
    return max(plain, padded)


# ---------------------------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------------------------
@dataclass
class ConcurrentPlan:
    """A plan of a :class:`ConcurrentProblem`.

    Attributes
    ----------
    problem : ConcurrentProblem
    offsets : int64 array ``(n,)`` (bytes, problem order) or None when the planner refused.
    planner : str
    status : str
        A :data:`planners.model.STATUSES` value: ``optimal`` only when ``arena == lower_bound``.
    arena : int or None
        Bytes (:func:`check_concurrent_plan`).
    lower_bound : int
        :func:`concurrent_lower_bound`, bytes.
    route : str
        ``"conflict graph"`` (greedy engine, ``conflict_cpsat``), ``"interval cover"`` or
        ``"refused"``.
    seconds : float
    info : dict
        ``reason`` for a refusal; the cover plan's own status and bound for the cover route.
    """

    problem: ConcurrentProblem
    offsets: np.ndarray | None
    planner: str
    status: str
    arena: int | None
    lower_bound: int
    route: str
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


def greedy_concurrent(problem: ConcurrentProblem, order="size", fit: str = "first") -> np.ndarray:
    """Offsets (bytes) of the greedy engine over the conflict edges of ``problem``.

    ``order`` is a name of :data:`planners.greedy.ORDERS`, a callable or a permutation; a named
    or callable order is evaluated on the :meth:`~ConcurrentProblem.interval_cover` (its
    start times are positions in a linear extension), except ``"conflicts"``, which uses the
    degrees of the real conflict graph. The placement is the engine's graph path
    (``planners.greedy._place_graph``) with the conflict edges, so every placed buffer avoids
    exactly its placed conflicting neighbours. ``O(n^2)`` for the edges plus the engine's
    ``O(n log n + E log k)``. Raises what :func:`planners.greedy.greedy_offsets` raises.
    """
    from .greedy import FITS, _place_graph, _resolve_order

    if fit not in FITS:
        raise ValueError(f"unknown fit {fit!r}; choose from {FITS}")
    cover = problem.interval_cover()
    edges = problem.conflict_edges()
    if isinstance(order, str) and order == "conflicts":
        deg = np.bincount(np.concatenate(edges), minlength=problem.n)
        perm = np.lexsort((np.arange(problem.n), -problem.sizes, -deg)).astype(np.int64)
    else:
        perm = _resolve_order(cover, order)
    if problem.n == 0:
        return np.zeros(0, np.int64)
    return _place_graph(cover, perm, fit, edges=edges)


def cpsat_concurrent(problem: ConcurrentProblem, time_limit: float = 10.0,
                     workers: int = 1, seed: int = 0) -> tuple[np.ndarray | None, str, dict]:
    """Exact CP-SAT model over the conflict graph: offsets ``x_i = alignment_i * q_i``, one
    disjunction ``x_i + s_i <= x_j  or  x_j + s_j <= x_i`` per conflict pair, ``x_i + s_i <=
    arena``, minimise ``arena``; greedy-by-size's arena as the upper bound and hint.

    Returns ``(offsets or None, solver status name, info)`` where info holds the solver's proved
    ``objective_bound`` (bytes). Deterministic for fixed ``workers`` and ``seed`` when the time
    limit does not stop it. ``O(n + E)`` model size."""
    from ortools.sat.python import cp_model

    start = greedy_concurrent(problem, "size", "first")
    ub = max((int(o) + int(s) for o, s in zip(start.tolist(), problem.sizes.tolist(),
                                              strict=True) if s > 0), default=0)
    m = cp_model.CpModel()
    arena = m.new_int_var(0, ub, "arena")
    xs = []
    for i, (s, a) in enumerate(zip(problem.sizes.tolist(), problem.alignments.tolist(),
                                   strict=True)):
        if s == 0:
            xs.append(None)
            continue
        q = m.new_int_var(0, max(0, (ub - s) // a), f"q{i}")
        x = m.new_int_var(0, ub, f"x{i}")
        m.add(x == a * q)
        m.add(x + s <= arena)
        m.add_hint(x, int(start[i]))
        xs.append(x)
    ea, eb = problem.conflict_edges()
    for i, j in zip(ea.tolist(), eb.tolist(), strict=True):
        lt = m.new_bool_var(f"o{i}_{j}")
        m.add(xs[i] + int(problem.sizes[i]) <= xs[j]).only_enforce_if(lt)
        m.add(xs[j] + int(problem.sizes[j]) <= xs[i]).only_enforce_if(~lt)
    m.minimize(arena)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    st = solver.solve(m)
    name = solver.status_name(st)
    info = {"solver_status": name, "objective_bound": int(math.ceil(solver.best_objective_bound))
            if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None}
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, name, info
    off = np.array([0 if x is None else solver.value(x) for x in xs], np.int64)
    return off, name, info


def concurrent_planners() -> list[str]:
    """Names :func:`plan_concurrent` accepts: ``conflict_cpsat`` and every registered planner."""
    from .registry import available_planners

    return ["conflict_cpsat", *available_planners()]


def concurrent_route(planner) -> str:
    """How :func:`plan_concurrent` plans with ``planner`` (a registered name, ``conflict_cpsat``,
    a :class:`planners.base.Planner` instance or class): its declared ``concurrency`` capability
    (:meth:`planners.base.Planner.kind_capabilities`, :data:`planners.base.KIND_MODES`), one of
    ``"native"`` (the conflict graph itself), ``"cover"`` (the interval cover) or
    ``"refused"``. A class declaring ``native`` without a conflict-graph solver here (not the
    greedy engine's :class:`planners.greedy.GreedyPlanner` ``_solve``, not
    :class:`planners.cpsat.CPSat`) plans the cover: ``"cover"``. Raises ``ValueError`` for an
    unknown name."""
    if planner == "conflict_cpsat":
        return "native"
    from .registry import PLANNERS, check_planner_names

    cls = planner if isinstance(planner, type) else (
        PLANNERS.get(planner) if isinstance(planner, str) else type(planner))
    if cls is None:
        check_planner_names([planner])
    mode = cls.kind_capabilities()["concurrency"]
    if mode == "native" and _native_solver(cls) is None:
        return "cover"
    return mode


def _native_solver(cls):
    """The conflict-graph solver of planner class ``cls`` (``"greedy"``, ``"cpsat"``) or None."""
    from .cpsat import CPSat
    from .greedy import GreedyPlanner

    if issubclass(cls, GreedyPlanner) and cls._solve is GreedyPlanner._solve:
        return "greedy"
    if issubclass(cls, CPSat) and cls._solve is CPSat._solve:
        return "cpsat"
    return None


def plan_concurrent(problem: ConcurrentProblem, planner: str = "greedy_by_size",
                    time_limit: float = 10.0, params: Mapping[str, Any] | None = None,
                    ) -> ConcurrentPlan:
    """Plan ``problem`` with ``planner`` (a name of :func:`concurrent_planners`).

    Routes, by the planner's declared ``concurrency`` capability (:func:`concurrent_route`;
    ``memplan list`` shows the table): ``native``: the greedy engine's planners
    (:class:`planners.greedy.GreedyPlanner` and its named subclasses) run
    :func:`greedy_concurrent` with their ``order`` and ``fit``; ``cpsat`` and ``conflict_cpsat``
    run the exact conflict-graph model :func:`cpsat_concurrent` (``cpsat``'s ``time_limit``,
    ``workers`` and ``seed``; its other parameters, e.g. ``formulation``, are those of its
    interval models and are recorded, not used, in ``info["unused_params"]``); ``cover``: the
    planner plans the interval cover (a planner that needs a capacity, ``exact_search``, needs
    the problem's: without one it refuses); ``refused``: a refusal. Every refusal
    (``route="refused"``, ``offsets=None``) carries one line ``info["reason"]`` naming the planner
    and the feature (:func:`planners.base.kind_refusal`), also when the planner declines at run
    time (a missing solver, no plan of the cover within the time limit).

    Parameters
    ----------
    problem : ConcurrentProblem
    planner : str
    time_limit : float
        Seconds, for planners that take one (the registry's default rule).
    params : dict or None
        The planner's parameters.

    Returns
    -------
    ConcurrentPlan
        Every plan returned with offsets passed :func:`check_concurrent_plan`. Status:
        ``over_capacity`` when the arena exceeds the capacity; else ``optimal`` when ``arena ==
        lower_bound`` or CP-SAT proved the conflict-graph model (an exact model) optimal; else
        ``heuristic`` for a heuristic, ``feasible`` for an exact method's plan (CP-SAT's
        without a proof, or a cover planner's optimum, which is optimal for the cover only).

    Raises
    ------
    ValueError
        Unknown planner or parameter (from :func:`planners.registry.planner_for`).
    """
    from .base import kind_refusal
    from .registry import planner_for

    params = dict(params or {})
    lb = concurrent_lower_bound(problem)
    t0 = time.perf_counter()
    info: dict[str, Any] = {}

    def refused(status: str, why: str, extra=None) -> ConcurrentPlan:
        reason = kind_refusal(planner, "concurrency", why.splitlines()[0] if why else "")
        return ConcurrentPlan(problem, None, planner, status, None, lb, "refused",
                              time.perf_counter() - t0, {**(extra or {}), "reason": reason})

    route = concurrent_route(planner)
    proved = False
    if planner == "conflict_cpsat":
        solver, p = "cpsat", None
    else:
        p = planner_for(planner, time_limit=time_limit, params=params)
        solver = _native_solver(type(p)) if route == "native" else None
    if route == "refused":
        return refused("skipped", "its capability table refuses it (planners.base.KIND_MODES)")
    if solver == "cpsat":
        kw = ({"time_limit": time_limit, **params} if p is None else
              {"time_limit": p.time_limit, "workers": p.workers, "seed": p.seed})
        off, sname, info = cpsat_concurrent(problem, **kw)
        if p is not None:
            info["unused_params"] = {k: v for k, v in p.get_params().items() if k not in kw}
        route, kind = "conflict graph", "feasible"
        proved = sname == "OPTIMAL"
        if off is None:
            return refused("timeout", f"CP-SAT found no plan of the conflict graph ({sname})",
                           info)
    elif solver == "greedy":
        off = greedy_concurrent(problem, p.order, p.fit)
        route, kind = "conflict graph", "heuristic"
        info = {"order": p.order if isinstance(p.order, str) else "custom", "fit": p.fit}
    else:
        cover = problem.interval_cover()
        if p.needs_capacity(cover) and cover.capacity is None:
            return refused("skipped", "it decides whether a problem fits a capacity, and the "
                           "problem has none (give it a capacity, or use 'minimize')")
        try:
            plan = p.plan(cover)
        except (ProblemError, FeatureError, SolverError, ImportError) as exc:
            # the planner's own one-line refusal (an InvalidPlanError is not caught)
            return refused("skipped", f"on the interval cover: {exc}")
        if plan.offsets is None or plan.status in ("skipped", "timeout", "infeasible"):
            reason = str(plan.info.get("reason") or f"the interval cover gave status "
                                                    f"{plan.status!r}")
            if plan.status == "infeasible":  # the cover's proof is not one for this problem
                reason = ("the interval cover does not fit the capacity (no proof for the "
                          "concurrent problem)")
            status = "timeout" if plan.status == "timeout" else "skipped"
            return refused(status, reason)
        off = plan.offsets
        route = "interval cover"
        kind = "feasible" if plan.status in ("optimal", "feasible") else "heuristic"
        info = {"cover_status": plan.status, "cover_lower_bound": int(plan.lower_bound)}
    seconds = time.perf_counter() - t0
    cap = problem.capacity
    arena = check_concurrent_plan(problem, off, check_capacity=False)
    if cap is not None and arena > cap:
        status = "over_capacity"
    elif arena == lb or proved:
        status = "optimal"
    else:
        status = kind
    return ConcurrentPlan(problem, np.asarray(off, np.int64), planner, status, arena, lb, route,
                          seconds, info)
