"""A genetic algorithm over operator orders (seed 002 section 5.4.2, "遗传算法")."""

from __future__ import annotations

import heapq
import time
from numbers import Integral, Real

import numpy as np

from planners.params import OPTIONAL_POSITIVE_SECONDS, SEED, Interval, StrOptions

from ..graph import Graph
from .anneal import min_live_order
from .base import Scheduler, ScheduleResult
from .memsim import MemoryModel

__all__ = ["Genetic", "decode_priorities", "order_crossover", "window_move", "ORDER_MIN_OPS"]

#: With ``encoding="auto"``, graphs of at least this many operators use the order encoding
#: (a random-key decoding is a Python heap loop over every operator, about 25 ms per
#: individual at 5,000 operators; the order encoding's numpy steps about 1 ms).
ORDER_MIN_OPS = 2000


def decode_priorities(m: MemoryModel, keys: np.ndarray) -> list[int]:
    """The topological order that always runs the ready operator with the smallest key
    (random-key encoding: every real vector decodes to a valid schedule). ``O((n + E) log n)``."""
    kl = keys.tolist()
    indeg = [len(p) for p in m.preds]
    heap = [(kl[v], v) for v in range(m.n) if indeg[v] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, v = heapq.heappop(heap)
        out.append(v)
        for s in m.succs[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(heap, (kl[s], s))
    return out


def order_crossover(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` operators of order ``a``, then the others in the order ``b`` runs them.

    Hartmann's one-point crossover of activity lists (S. Hartmann, "A competitive genetic
    algorithm for resource-constrained project scheduling", Naval Research Logistics 45, 1998):
    a prefix of a topological order is a down-set, and ``b`` restricted to the rest lists each
    operator after its predecessors there, so the child of two topological orders is one.

    Parameters
    ----------
    a, b : numpy int64 array ``(n,)``
        Topological orders (operator indices).
    k : int
        Cut, ``0 <= k <= n`` (operators taken from ``a``).

    Returns
    -------
    numpy int64 array ``(n,)``, a topological order. ``O(n)`` numpy work.
    """
    taken = np.zeros(a.size, bool)
    taken[a[:k]] = True
    return np.concatenate([a[:k], b[~taken[b]]])


def window_move(m: MemoryModel, order: np.ndarray, pos: np.ndarray, v: int, u: float) -> int:
    """Move operator ``v`` of ``order`` to the position ``lo + floor(u * (hi - lo + 1))`` of
    its window (``lo`` just after its last predecessor, ``hi`` just before its first
    successor), so the order stays topological (the move of :class:`.anneal.Anneal`).

    Parameters
    ----------
    m : MemoryModel
    order : numpy int64 array ``(n,)``
        A topological order, changed in place.
    pos : numpy int64 array ``(n,)``
        Its inverse (``order[pos[v]] == v``), kept so in place.
    v : int
        The operator moved.
    u : float
        In ``[0, 1)``: where in the window.

    Returns
    -------
    int, the new position of ``v``. ``O(deg(v))`` plus a numpy shift of the positions between
    the old and the new one.
    """
    a = int(pos[v])
    lo = max((int(pos[p]) for p in m.preds[v]), default=-1) + 1
    hi = min((int(pos[s]) for s in m.succs[v]), default=order.size) - 1
    b = lo + int(u * (hi - lo + 1))
    b = min(max(b, lo), hi)
    if b > a:
        order[a:b] = order[a + 1:b + 1].copy()
    elif b < a:
        order[b + 1:a + 1] = order[b:a].copy()
    order[b] = v
    lo_, hi_ = min(a, b), max(a, b)
    pos[order[lo_:hi_ + 1]] = np.arange(lo_, hi_ + 1)
    return b


class Genetic(Scheduler):
    """Random-key genetic algorithm minimising the peak of live bytes.

    An individual is a vector of ``n`` real priorities decoded by :func:`decode_priorities` into a
    topological order; fitness is the order's peak (bytes, :meth:`MemoryModel.peak`). The initial
    population holds the file order and the ``min_live`` order (as position keys) and random
    vectors; each generation keeps ``elite`` best individuals and fills the rest with binary
    tournament selection, uniform crossover and Gaussian mutation of each gene with probability
    ``mutation``. The best order ever seen is returned (never worse than ``min_live`` or the
    topological file order).

    Order encoding (``encoding="order"``; by default from :data:`ORDER_MIN_OPS` operators on):
    an individual is a topological order itself; the initial population is the file order (or
    Kahn's order when the stored one is not topological), the ``min_live`` order and random
    level orders (ASAP level of :meth:`MemoryModel.levels`, ties in random order); a child is :func:`order_crossover` of two tournament
    winners at a uniformly random cut, then ``1 + Binomial(sqrt(n), mutation)`` random
    :func:`window_move` steps; fitness is :meth:`MemoryModel.peak` (numpy). Every step is numpy
    work or a loop over one operator's neighbours, never a Python loop over all operators per
    individual.

    Determinism: the budget is ``generations`` (work), so a seed gives the same order on any
    machine at any load. ``time_limit`` is only an outer stop; when it stops the search,
    ``info["stopped_by"]`` is ``"time_limit"`` (else ``"generations"``) and
    ``info["generations"]`` says how many ran.

    Parameters
    ----------
    generations : int, default 60
        Budget: number of generations.
    population : int, default 30
        Individuals per generation (>= 4).
    mutation : float, default 0.1
        Per-gene mutation probability.
    elite : int, default 2
        Individuals copied unchanged.
    seed : int, default 0
        numpy generator seed (deterministic results).
    time_limit : float or None, default None
        Optional wall-clock budget in seconds (an outer stop, checked once per individual).
    encoding : {"auto", "random_key", "order"}, default "auto"
        Genotype: random keys (below :data:`ORDER_MIN_OPS` operators with ``"auto"``) or
        topological orders (above).

    Raises
    ------
    ParameterError
        (from :meth:`schedule`, a ``ValueError``) ``population < 4``, ``generations < 0``,
        ... (``_parameter_constraints``). ``CycleError`` for a cyclic graph.

    Notes
    -----
    ``O(generations * population * (n + #tensor uses) log n)`` (random keys; the order
    encoding: ``O(generations * population * (n + #tensor uses))`` numpy work plus
    ``O(sqrt(n) * (deg + n))`` per mutation). Status ``"heuristic"``; ``info`` has
    ``peak_bytes``, ``generations`` (run), ``evaluations``, ``encoding`` and ``stopped_by``.
    """

    name = "genetic"
    _parameter_constraints = {
        "generations": [Interval(Integral, 0, None)],
        "population": [Interval(Integral, 4, None)],
        "mutation": [Interval(Real, 0, 1)],
        "elite": [Interval(Integral, 0, None)],
        "seed": [SEED],
        "time_limit": OPTIONAL_POSITIVE_SECONDS,
        "encoding": [StrOptions(("auto", "random_key", "order"))],
    }

    def __init__(
        self,
        generations: int = 60,
        population: int = 30,
        mutation: float = 0.1,
        elite: int = 2,
        seed: int = 0,
        time_limit: float | None = None,
        encoding: str = "auto",
    ) -> None:
        self.generations = generations
        self.population = population
        self.mutation = mutation
        self.elite = elite
        self.seed = seed
        self.time_limit = time_limit
        self.encoding = encoding

    def _schedule(self, graph: Graph) -> ScheduleResult:
        m = MemoryModel.of(graph)
        deadline = None if self.time_limit is None else self._started() + self.time_limit
        enc = self.encoding
        if enc == "auto":
            enc = "order" if m.n >= ORDER_MIN_OPS else "random_key"
        if enc == "order":
            return self._by_orders(m, deadline)
        P = int(self.population)
        n = m.n
        rng = np.random.default_rng(self.seed)
        stopped = "generations"
        evals = 0
        pop = rng.random((P, n))
        pop[0] = np.arange(n) / max(n, 1)
        ml, _ = min_live_order(m)
        keys = np.empty(n)
        keys[np.asarray(ml, dtype=np.int64)] = np.arange(n) / max(n, 1)
        if P > 1:
            pop[1] = keys

        def fitness(ind):
            o = decode_priorities(m, ind)
            return m.peak(o), o

        fits = []
        best_peak, best = None, None
        for ind in pop:
            pk, o = fitness(ind)
            fits.append(pk)
            if best_peak is None or pk < best_peak:
                best_peak, best = pk, o
        fits = np.asarray(fits)
        gens_run = 0
        evals = len(fits)
        for _ in range(int(self.generations)):
            if deadline is not None and time.perf_counter() > deadline:
                stopped = "time_limit"
                break
            gens_run += 1
            rank = np.argsort(fits, kind="stable")
            new = [pop[i].copy() for i in rank[: int(self.elite)]]
            new_fits = [fits[i] for i in rank[: int(self.elite)]]
            while len(new) < P:
                a, b = rng.integers(0, P, 2), rng.integers(0, P, 2)
                pa = pop[a[0]] if fits[a[0]] <= fits[a[1]] else pop[a[1]]
                pb = pop[b[0]] if fits[b[0]] <= fits[b[1]] else pop[b[1]]
                mask = rng.random(n) < 0.5
                child = np.where(mask, pa, pb)
                mut = rng.random(n) < self.mutation
                child = np.where(mut, child + rng.normal(0.0, 0.2, n), child)
                pk, o = fitness(child)
                evals += 1
                if pk < best_peak:
                    best_peak, best = pk, o
                new.append(child)
                new_fits.append(pk)
            pop = np.asarray(new)
            fits = np.asarray(new_fits)
        return ScheduleResult(
            m.to_names(best),
            "heuristic",
            {"peak_bytes": int(best_peak or 0), "generations": gens_run, "evaluations": evals,
             "encoding": "random_key", "stopped_by": stopped},
        )

    def _by_orders(self, m: MemoryModel, deadline: float | None) -> ScheduleResult:
        """The order encoding of the class docstring."""
        P, n = int(self.population), m.n
        rng = np.random.default_rng(self.seed)
        stored = list(range(n))
        first = stored if m.is_topological(stored) else m.topological()
        ml, _ = min_live_order(m)
        pop = [np.asarray(first, np.int64), np.asarray(ml, np.int64)][:P]
        lev = m.levels()
        while len(pop) < P:  # ASAP level first (strictly rising along every edge), random ties
            pop.append(np.lexsort((rng.random(n), lev)).astype(np.int64))
        fits = [m.peak(o) for o in pop]
        evals = len(fits)
        b = int(np.argmin(fits))  # the first of the least: file order before min_live
        best_peak, best = fits[b], pop[b].copy()
        moves = max(1, int(round(np.sqrt(n))))
        stopped, gens_run = "generations", 0
        for _ in range(int(self.generations)):
            if deadline is not None and time.perf_counter() > deadline:
                stopped = "time_limit"
                break
            gens_run += 1
            rank = np.argsort(np.asarray(fits), kind="stable")
            new = [pop[i] for i in rank[: int(self.elite)]]
            new_fits = [fits[i] for i in rank[: int(self.elite)]]
            while len(new) < P:
                if deadline is not None and time.perf_counter() > deadline:
                    stopped = "time_limit"
                    break
                a, c = rng.integers(0, P, 2), rng.integers(0, P, 2)
                pa = pop[a[0]] if fits[a[0]] <= fits[a[1]] else pop[a[1]]
                pb = pop[c[0]] if fits[c[0]] <= fits[c[1]] else pop[c[1]]
                child = order_crossover(pa, pb, int(rng.integers(0, n + 1)))
                k = 1 + int(rng.binomial(moves, self.mutation))
                pos = np.empty(n, np.int64)
                pos[child] = np.arange(n)
                for v, u in zip(rng.integers(0, n, k).tolist(), rng.random(k).tolist(),
                                strict=True):
                    window_move(m, child, pos, v, u)
                pk = m.peak(child)
                evals += 1
                if pk < best_peak:
                    best_peak, best = pk, child.copy()
                new.append(child)
                new_fits.append(pk)
            if stopped == "time_limit":
                break
            pop, fits = new, new_fits
        return ScheduleResult(
            m.to_names(best.tolist()),
            "heuristic",
            {"peak_bytes": int(best_peak), "generations": gens_run, "evaluations": evals,
             "encoding": "order", "stopped_by": stopped},
        )
