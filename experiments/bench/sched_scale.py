"""Schedulers at scale: seconds, time-limit overrun and distance from the order bound at 1,000 to
20,000 operators, and a differential check of the bounds and peak evaluations they rely on.

Timing (default): for each size (``--sizes``, default 1,000 / 5,000 / 20,000 operators) and seed,
one ``moccasin_layered`` graph (:func:`scheduling.generators.moccasin_layered`, MOCCASIN's
random layered graphs); each scheduler of ``--schedulers`` (default ``min_live``, ``best_of``,
``genetic``, ``anneal``, ``exact_dp``) schedules it, the time-limited ones (``exact_dp``,
``anneal``, ``genetic``) with ``--time-limit`` seconds. One row per (graph, scheduler) in
``OUT/sched_scale.csv``: ``ops``, ``seed``, ``scheduler``, ``seconds`` (wall clock of the whole
:meth:`Scheduler.schedule` call, graph compilation and order bound included), ``time_limit``,
``overrun`` (``seconds - time_limit``, seconds), ``within_slack`` (``seconds <= time_limit +
max(0.1 * time_limit, 0.5)``), ``status``, ``peak_bytes``, ``bound_bytes`` (the schedule's proved
lower bound), ``gap`` (``peak / bound - 1``), the work counters (``generations``,
``evaluations``, ``states``, ``stopped_by`` or ``reason``) and the machine's 1-minute load
average when the row was measured (``load1``). ``OUT/sched_scale_bounds.csv``: per graph the
seconds of :func:`scheduling.schedulers.bounds.order_bound_details` and the working-set, sampled
closure and final bounds. The exit status is 1 when a time-limited scheduler overran its slack.

Differential (``--differential N``): ``N`` random graphs of 2-8 operators (``random_layered``
and ``moccasin_layered`` with random parameters, seeded by ``--seed``), each checked against an
exhaustive oracle written here (every topological order enumerated, its peak by
:func:`scheduling.lifetimes.peak_live_bytes`, no code shared with the schedulers): the sampled
closure bound at every operator equals :class:`~scheduling.schedulers.bounds.ClosureCut`'s value
and never exceeds the brute-force optimum, the bound of ``order_bound_details`` with the sample
path forced (``cut_max_ops=0``) never exceeds it, ``exact_dp`` reaches it with status
``optimal``, and :meth:`MemoryModel.peak_vector` equals the oracle's peak on every order (and
:meth:`MemoryModel.peak_loop` on every prefix). Rows in ``OUT/sched_scale_differential.csv``;
exit status 1 on any disagreement.

Run: ``python -m experiments.bench.sched_scale --out results`` (timing) and
``python -m experiments.bench.sched_scale --differential 2000 --out results`` (the soak count).
Deterministic except the seconds and load columns.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from scheduling.generators import moccasin_layered, random_layered
from scheduling.graph import Graph
from scheduling.lifetimes import peak_live_bytes
from scheduling.schedulers import schedule
from scheduling.schedulers.bounds import (
    ClosureCut,
    ancestor_matrix,
    order_bound_details,
    sampled_closure_bound,
)
from scheduling.schedulers.memsim import MemoryModel

__all__ = ["SIZES", "SCHEDULERS", "LIMITED", "slack", "time_row", "brute_force_peak",
           "differential_case", "run_timing", "run_differential", "main"]

#: Graph sizes of the timing run (operators).
SIZES = (1000, 5000, 20000)
#: Schedulers timed by default.
SCHEDULERS = ("min_live", "best_of", "genetic", "anneal", "exact_dp")
#: Schedulers that take ``time_limit`` (the overrun is measured for them).
LIMITED = ("exact_dp", "anneal", "genetic")


def slack(limit: float) -> float:
    """The overrun allowed past a time limit (seconds): the larger of 10 % and 0.5 s."""
    return max(0.1 * limit, 0.5)


def _load1() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover - not on every platform
        return float("nan")


def time_row(g: Graph, name: str, time_limit: float, seed: int) -> dict:
    """Schedule ``g`` with ``name`` (``time_limit`` seconds when it takes one) and return the
    row of ``sched_scale.csv`` (module docstring)."""
    kw = {"time_limit": time_limit} if name in LIMITED else {}
    if name in ("anneal", "genetic"):
        kw["seed"] = seed
    t0 = time.perf_counter()
    s = schedule(g, name, **kw)
    secs = time.perf_counter() - t0
    peak = int(s.info["peak_bytes"])
    bound = int(s.bound) if s.bound is not None else None
    limit = kw.get("time_limit")
    row = {
        "ops": len(g.ops), "seed": seed, "scheduler": name, "seconds": round(secs, 3),
        "time_limit": limit, "overrun": None if limit is None else round(secs - limit, 3),
        "within_slack": None if limit is None else bool(secs <= limit + slack(limit)),
        "status": s.status, "peak_bytes": peak, "bound_bytes": bound,
        "gap": None if not bound else round(peak / bound - 1, 5),
        "generations": s.info.get("generations"), "evaluations": s.info.get("evaluations"),
        "states": s.info.get("states"),
        "stopped": s.info.get("stopped_by") or s.info.get("reason"), "load1": _load1(),
    }
    return row


def run_timing(sizes, seeds, schedulers, time_limit: float) -> tuple[list[dict], list[dict]]:
    """The timing rows and the bound rows (module docstring)."""
    rows, brows = [], []
    for n in sizes:
        for seed in seeds:
            g = moccasin_layered(seed=seed, n_ops=n)
            t0 = time.perf_counter()
            d = order_bound_details(MemoryModel(g))
            brows.append({"ops": n, "seed": seed, "seconds": round(time.perf_counter() - t0, 3),
                          "op_bound": d["op"], "closure": d["closure"],
                          "closure_sampled": d.get("closure_sampled"),
                          "sampled_ops": d.get("sampled_ops"), "bound": d["bound"],
                          "load1": _load1()})
            print(f"{n} ops seed {seed}: bound {d['bound']} (working set {d['op']}) "
                  f"in {brows[-1]['seconds']} s", flush=True)
            for name in schedulers:
                r = time_row(g, name, time_limit, seed)
                rows.append(r)
                print(f"  {name}: {r['seconds']} s, {r['status']}, peak {r['peak_bytes']}, "
                      f"gap {r['gap']}, overrun {r['overrun']} (load {r['load1']})", flush=True)
    return rows, brows


# -- differential ---------------------------------------------------------------------------------
def brute_force_peak(g: Graph) -> tuple[int, list[tuple[str, ...]]]:
    """The least peak over every topological order of ``g`` (bytes) and the orders, enumerated
    from the graph's own producer links and scored by :func:`peak_live_bytes` (no scheduler
    code)."""
    names = list(g.ops)
    preds = {n: {g.tensors[t].producer for t in g.ops[n].inputs
                 if g.tensors[t].producer is not None} for n in names}
    orders: list[tuple[str, ...]] = []

    def rec(done: list[str], left: set[str]) -> None:
        if not left:
            orders.append(tuple(done))
            return
        for v in sorted(left):
            if preds[v] <= set(done):
                done.append(v)
                left.remove(v)
                rec(done, left)
                left.add(v)
                done.pop()

    rec([], set(names))
    return min(peak_live_bytes(g, o) for o in orders), orders


def _random_graph(rng: np.random.Generator, seed: int) -> Graph:
    n = int(rng.integers(2, 9))
    if n >= 3 and rng.random() < 0.4:
        return moccasin_layered(seed=seed, n_ops=n, edge_density=float(rng.uniform(0.2, 1)),
                                max_bytes=int(rng.integers(10, 9000)))
    return random_layered(seed=seed, n_ops=n, width=int(rng.integers(1, 5)),
                          max_fan_in=int(rng.integers(1, 4)),
                          p_skip=float(rng.uniform(0, 0.6)),
                          min_bytes=1, max_bytes=int(rng.integers(1, 5000)))


def differential_case(g: Graph) -> list[str]:
    """The disagreements on one graph (empty when every check of the module docstring holds)."""
    bad: list[str] = []
    opt, orders = brute_force_peak(g)
    m = MemoryModel(g)
    for o in orders:
        idx = m.to_indices(o)
        want = peak_live_bytes(g, o)
        if m.peak_vector(idx) != want:
            bad.append(f"peak_vector {m.peak_vector(idx)} != {want} on {o}")
        for k in range(len(idx) + 1):
            if m.peak_vector(idx[:k]) != m.peak_loop(idx[:k]):
                bad.append(f"prefix {o[:k]}: peak_vector {m.peak_vector(idx[:k])} != "
                           f"peak_loop {m.peak_loop(idx[:k])}")
    A = ancestor_matrix(m)
    cc = ClosureCut(m, A, engine="python")
    best, vals = sampled_closure_bound(m, ops=range(m.n))
    for v in range(m.n):
        ref = cc.value(v)[0]
        if vals[v] != ref:
            bad.append(f"operator {m.names[v]}: sampled closure {vals[v]} != ClosureCut {ref}")
    if best > opt:
        bad.append(f"sampled closure bound {best} > optimum {opt}")
    d = order_bound_details(m, cut_max_ops=0)
    if d["bound"] > opt:
        bad.append(f"sampled order bound {d['bound']} > optimum {opt}")
    s = schedule(g, "exact_dp", time_limit=None)
    if s.info["peak_bytes"] != opt or s.status != "optimal":
        bad.append(f"exact_dp {s.info['peak_bytes']} ({s.status}) != optimum {opt}")
    return bad


def run_differential(count: int, seed: int = 0) -> list[dict]:
    """``count`` generated graphs checked by :func:`differential_case`; one row each."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        gseed = int(rng.integers(2**31))
        g = _random_graph(rng, gseed)
        bad = differential_case(g)
        rows.append({"case": i, "graph": g.name, "ops": len(g.ops), "failed": bool(bad),
                     "why": "; ".join(bad[:3])})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring); returns the exit status."""
    import pandas as pd

    from experiments.records import write_csv

    ap = argparse.ArgumentParser(prog="python -m experiments.bench.sched_scale",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("results"))
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--schedulers", nargs="+", default=list(SCHEDULERS))
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--differential", type=int, default=0, metavar="N",
                    help="check N generated small graphs against the brute-force oracle instead")
    ap.add_argument("--seed", type=int, default=0, help="seed of the differential's graphs")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    if a.differential:
        rows = run_differential(a.differential, a.seed)
        write_csv(pd.DataFrame(rows), a.out / "sched_scale_differential.csv")
        failed = sum(r["failed"] for r in rows)
        print(f"{len(rows)} graphs, {failed} failed")
        for r in rows:
            if r["failed"]:
                print(f"  case {r['case']} ({r['graph']}): {r['why']}")
        return 1 if failed else 0
    rows, brows = run_timing(a.sizes, a.seeds, a.schedulers, a.time_limit)
    write_csv(pd.DataFrame(rows), a.out / "sched_scale.csv")
    write_csv(pd.DataFrame(brows), a.out / "sched_scale_bounds.csv")
    over = [r for r in rows if r["within_slack"] is False]
    for r in over:
        print(f"overrun: {r['scheduler']} at {r['ops']} ops: {r['seconds']} s for a limit of "
              f"{r['time_limit']} s")
    return 1 if over else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
