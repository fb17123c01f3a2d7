"""A genetic algorithm over operator orders (seed 002 section 5.4.2, "遗传算法")."""

from __future__ import annotations

import heapq
import time
from numbers import Integral, Real

import numpy as np

from planners.params import OPTIONAL_POSITIVE_SECONDS, SEED, Interval

from ..graph import Graph
from .anneal import min_live_order
from .base import Scheduler, ScheduleResult
from .memsim import MemoryModel

__all__ = ["Genetic", "decode_priorities"]


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


class Genetic(Scheduler):
    """Random-key genetic algorithm minimising the peak of live bytes.

    An individual is a vector of ``n`` real priorities decoded by :func:`decode_priorities` into a
    topological order; fitness is the order's peak (bytes, :meth:`MemoryModel.peak`). The initial
    population holds the file order and the ``min_live`` order (as position keys) and random
    vectors; each generation keeps ``elite`` best individuals and fills the rest with binary
    tournament selection, uniform crossover and Gaussian mutation of each gene with probability
    ``mutation``. The best order ever seen is returned (never worse than ``min_live`` or the
    topological file order).

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
        Optional wall-clock budget in seconds.

    Raises
    ------
    ParameterError
        (from :meth:`schedule`, a ``ValueError``) ``population < 4``, ``generations < 0``,
        ... (``_parameter_constraints``). ``CycleError`` for a cyclic graph.

    Notes
    -----
    ``O(generations * population * (n + #tensor uses) log n)``. Status ``"heuristic"``.
    """

    name = "genetic"
    _parameter_constraints = {
        "generations": [Interval(Integral, 0, None)],
        "population": [Interval(Integral, 4, None)],
        "mutation": [Interval(Real, 0, 1)],
        "elite": [Interval(Integral, 0, None)],
        "seed": [SEED],
        "time_limit": OPTIONAL_POSITIVE_SECONDS,
    }

    def __init__(
        self,
        generations: int = 60,
        population: int = 30,
        mutation: float = 0.1,
        elite: int = 2,
        seed: int = 0,
        time_limit: float | None = None,
    ) -> None:
        self.generations = generations
        self.population = population
        self.mutation = mutation
        self.elite = elite
        self.seed = seed
        self.time_limit = time_limit

    def _schedule(self, graph: Graph) -> ScheduleResult:
        P = int(self.population)
        m = MemoryModel(graph)
        n = m.n
        rng = np.random.default_rng(self.seed)
        deadline = None if self.time_limit is None else time.perf_counter() + self.time_limit
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
        for _ in range(int(self.generations)):
            if deadline is not None and time.perf_counter() > deadline:
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
                if pk < best_peak:
                    best_peak, best = pk, o
                new.append(child)
                new_fits.append(pk)
            pop = np.asarray(new)
            fits = np.asarray(new_fits)
        return ScheduleResult(
            m.to_names(best),
            "heuristic",
            {"peak_bytes": int(best_peak or 0), "generations": gens_run},
        )
