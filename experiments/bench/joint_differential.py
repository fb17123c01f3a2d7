"""Differential test of the joint order-and-layout optimiser against an exhaustive oracle (issue #33
item 3).

:func:`generate` builds a small dataflow graph from a seed (2-7 operators; each reads one to
three earlier tensors or the graph input, writes one or two uint8 tensors of 0-16 bytes; some
tensors are graph outputs, some are read by nobody), adds its operators to the
:class:`scheduling.graph.Graph` in a random order about half the time (the ``Graph`` allows any
stored order), and gives it one of the features of :data:`KINDS`: none, an alignment of 2 or 4
bytes, pins (``{tensor: offset}``, bytes, zero-size tensors included), two memory pools (a
capacity-limited fast one, cost 0, and an unbounded slow one, cost 1; each with its own
alignment), or pools and pins together. A quarter of the inputs run the anytime mode
(``exact_max_ops=0``) instead of the exact one.

:func:`oracle` solves the same problem exhaustively and shares no code with the toolkit's
planners, schedulers or lifetime module: every topological order (``networkx.all_topological_sorts``),
the lifetimes of the order computed here from the graph's producers and consumers (an activation
live on the closed steps ``[producer, last consumer]``, a graph output to the last step, an
unread tensor on its producer's step only; graph inputs and weights are not buffers), and for
each order an exact layout: pinned buffers at their pins, the others placed lowest-first in every
order of the buffers (an optimal layout listed by ascending offset is rebuilt by lowest-fit in
that order with each offset at most the optimal one, so the best over all orders of placement is
the optimum), branch and bound on the arena. With pools every assignment of the buffers of
``size > 0`` to the pools is tried (a pinned buffer only in a pool whose grid, ``lcm(alignment,
pool alignment)``, and capacity hold its pin), ranked by the traffic cost ``sum size x cost(pool)
x lifetime steps`` first and the sum of the pools' arenas second. A buffer of size 0 takes no
bytes: it never collides and adds nothing to an arena (its offset, a pin included, still lies on
the grid of a pool, as :func:`planners.validate.check_plan` checks every offset's alignment).

:func:`check_case` runs :func:`scheduling.joint.joint_optimize` and checks its answer against the
oracle; the outcome ``agree`` or the failures of :data:`FAILURES`:

``error``
    ``joint_optimize`` raised on a feasible problem;
``invalid``
    the result's order is not a topological order of every operator, or its layout (checked here
    on the lifetimes of that order) breaks a pin, an alignment, a pool's capacity or has two
    buffers of ``size > 0`` live at a common step over common bytes in the same pool;
``wrong_arena``
    the reported ``arena``, ``arenas`` or ``traffic`` is not that of the returned layout (the
    highest ``offset + size`` over the buffers of ``size > 0`` per pool, summed);
``bound_above``
    the reported ``bound`` is above the oracle's least arena (over every order, layout and, with
    pools, assignment);
``false_optimal``
    status ``optimal`` where the arena is not both the bound and the oracle's optimum (with
    pools: the least traffic and, at it, the least total arena, at the bound);
``status_rule``
    without pools, a status other than ``optimal`` exactly when ``arena == bound``;
``suboptimal``
    the exact mode (the whole CP-SAT model on these tiny graphs) ended above the oracle's
    optimum, ``(traffic, arena)`` ranked as above;
``false_infeasible`` / ``missed_infeasible``
    status ``infeasible`` where the oracle found a plan / a plan (or an error) where the oracle
    proved that pins collide in every order.

``python -m experiments.bench.joint_differential --cases 2000 --seed 0 --out
results/joint_differential.csv`` runs the full set (the ``make soak`` part, about 3 minutes): one CSV row per
input, a line per failing input and a table of outcomes per kind; exit status 1 if any input
fails, 0 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import networkx as nx

__all__ = ["KINDS", "FAILURES", "Case", "OracleResult", "generate", "oracle", "check_case",
           "run", "main"]

#: The feature of each generated input (module docstring).
KINDS = ("plain", "aligned", "pins", "pools", "pools_pins")
#: The outcomes that fail the test (module docstring).
FAILURES = ("error", "invalid", "wrong_arena", "bound_above", "false_optimal", "status_rule",
            "suboptimal", "false_infeasible", "missed_infeasible")


@dataclass
class Case:
    """One generated input: ``graph`` and the keyword arguments of ``joint_optimize`` it is
    solved with (``alignment``, ``pins`` {tensor: bytes}, ``pools``, ``exact_max_ops``)."""

    seed: int
    kind: str
    graph: Any
    shuffled: bool
    alignment: int = 1
    pins: dict = field(default_factory=dict)
    pools: list = field(default_factory=list)
    exact_max_ops: int = 12


@dataclass
class OracleResult:
    """The exhaustive optimum: ``traffic`` and ``arena`` (bytes) of the best (order, layout,
    assignment) ranked by (traffic, total arena); ``min_arena`` (bytes) the least total arena at
    any traffic. ``feasible`` False (the rest ``None``) when no order keeps the pins apart."""

    feasible: bool
    traffic: int | None = None
    arena: int | None = None
    min_arena: int | None = None
    orders: int = 0


# -- the generator ----------------------------------------------------------------------------


def generate(seed: int, kind: str | None = None) -> Case:
    """The generated input of ``seed`` (module docstring).

    Parameters
    ----------
    seed : int
        Any integer; the same seed gives the same graph, stored order and features.
    kind : str or None
        One of :data:`KINDS`; ``None`` draws it from the seed.

    Returns
    -------
    Case
        Tensors are uint8 of 0-16 bytes; pins are multiples of ``alignment`` (bytes), zero-size
        tensors pinned at 0-64 alignments; the fast pool's capacity (bytes) is 30-100 % of the
        least peak of live bytes over a few topological orders.

    Raises
    ------
    ValueError
        ``kind`` not in :data:`KINDS`.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    from planners.model import MemoryPool
    from scheduling.graph import Graph

    rng = random.Random(seed * 7919 + 17)
    kind = kind or rng.choice(KINDS)
    pooled = kind.startswith("pools")
    n = rng.randint(2, 5 if pooled else 7)
    g = Graph(f"jd{seed}")
    g.add_tensor("x", (1,), "uint8", kind="input")
    made: list[str] = []
    ops = []
    for i in range(n):
        src = ["x"] + made
        ins = sorted(set(rng.sample(src, rng.randint(1, min(3, len(src))))))
        outs = []
        for j in range(2 if rng.random() < 0.2 else 1):
            t = f"t{i}_{j}"
            size = 0 if rng.random() < 0.15 else rng.randint(1, 16)
            g.add_tensor(t, (size,), "uint8")
            outs.append(t)
        ops.append((f"op{i}", ins, outs))
        made.extend(outs)
    shuffled = rng.random() < 0.5
    if shuffled:
        rng.shuffle(ops)
    for name, ins, outs in ops:
        g.add_op(name, "Op", ins, outs)
    g.mark_output(made[-1])
    if len(made) > 2 and rng.random() < 0.4:
        g.mark_output(rng.choice(made[:-1]))
    case = Case(seed, kind, g, shuffled)
    if kind == "aligned":
        case.alignment = rng.choice([2, 4])
    if rng.random() < 0.25:
        case.exact_max_ops = 0
    if pooled:
        lives = _peaks(g)
        cap = max(1, int(min(lives) * rng.choice([0.3, 0.5, 0.8, 1.0])))
        a0, a1 = rng.choice([(1, 1), (4, 1), (2, 4)])
        case.pools = [MemoryPool("sram", cap, a0, 0), MemoryPool("psram", None, a1, 1)]
    if kind in ("pins", "pools_pins"):
        zero = [t for t in made if g.tensors[t].nbytes == 0]
        some = [t for t in made if g.tensors[t].nbytes > 0]
        chosen = rng.sample(some, min(len(some), rng.randint(1, 2)))
        if zero and rng.random() < 0.6:
            chosen.append(rng.choice(zero))
        step = case.alignment
        case.pins = {t: step * rng.choice([0, 1, 2, 4, 8] if g.tensors[t].nbytes
                                          else [0, 2, 8, 32, 64]) for t in chosen}
    return case


def _peaks(g) -> list[int]:
    """Peak of live bytes (bytes) of a few topological orders of ``g`` (the generator's scale)."""
    out = []
    for k, order in enumerate(nx.all_topological_sorts(_op_dag(g))):
        if k >= 20:
            break
        out.append(_peak(_lifetimes(g, order)))
    return out


# -- the oracle (independent of the toolkit's planners, schedulers and lifetimes) --------------


def _op_dag(g) -> nx.DiGraph:
    """Operators and their producer -> consumer edges, read from the graph's tensors here."""
    d = nx.DiGraph()
    d.add_nodes_from(g.ops)
    for name, op in g.ops.items():
        for t in op.inputs:
            p = g.tensors[t].producer
            if p is not None:
                d.add_edge(p, name)
    return d


def _lifetimes(g, order) -> dict[str, tuple[int, int, int]]:
    """``{tensor: (first, last, size)}``: closed steps of every produced tensor under ``order``
    (module docstring), bytes."""
    step = {name: k for k, name in enumerate(order)}
    T = len(order)
    out = {}
    for name, t in g.tensors.items():
        if t.producer is None:  # graph inputs and weights are outside the arena
            continue
        f = step[t.producer]
        readers = [step[c] for c in t.consumers if c in step]
        if t.kind == "output":
            e = T - 1
        elif readers:
            e = max(readers)
        else:
            e = f
        out[name] = (f, max(e, f), int(t.nbytes))
    return out


def _peak(life) -> int:
    """Most bytes live at one step."""
    if not life:
        return 0
    T = 1 + max(e for _, e, _ in life.values())
    return max(sum(s for f, e, s in life.values() if f <= k <= e) for k in range(T))


def _meet(a, b) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


@lru_cache(maxsize=200_000)
def _layout(bufs: tuple, grid: int, cap: int | None) -> int | None:
    """Least arena (bytes) of one memory holding ``bufs`` (``(first, last, size, pin)``, ``size
    > 0``, ``pin`` -1 for none), offsets multiples of ``grid`` (pins as given), every top at most
    ``cap``; ``None`` if none fits. Exhaustive lowest-fit over every placement order, branch and
    bound on the arena, stopped at the lower bound (at each step the live buffers stacked on the
    grid: every one but the top takes its size rounded up to ``grid``; the highest pinned top)."""
    fixed = [b for b in bufs if b[3] >= 0]
    free = [b for b in bufs if b[3] < 0]
    for i, a in enumerate(fixed):
        if cap is not None and a[3] + a[2] > cap:
            return None
        for b in fixed[:i]:
            if _meet(a, b) and a[3] < b[3] + b[2] and b[3] < a[3] + a[2]:
                return None
    steps = sorted({k for f, e, _, _ in bufs for k in (f, e)})

    def stacked(k: int) -> int:  # the buffers live at step k, one above the other on the grid:
        up = [-(-b[2] // grid) * grid for b in bufs if b[0] <= k <= b[1]]  # each but the top
        waste = max((u - b[2] for u, b in zip(up, [b for b in bufs if b[0] <= k <= b[1]])),
                    default=0)  # one takes its rounded-up size, so the top is at least
        return sum(up) - waste  # sum(rounded) - the largest rounding

    lb = max([stacked(k) for k in steps] + [b[3] + b[2] for b in fixed] + [0])
    if cap is not None and lb > cap:
        return None
    best = [cap + 1 if cap is not None else None]
    seen: set = set()

    def fit(b, placed) -> int:
        cands = [0] + [-(-(o + s) // grid) * grid for (f, e, s, _), o in placed
                       if _meet(b, (f, e))]
        for o in sorted(set(cands)):
            if all(not _meet(b, (f, e)) or o + b[2] <= po or po + s <= o
                   for (f, e, s, _), po in placed):
                return o
        raise AssertionError("unreachable: the highest candidate is above every buffer")

    def dfs(placed, rest, top) -> bool:
        key = tuple(sorted(placed))
        if key in seen:
            return False
        seen.add(key)
        if best[0] is not None and top >= best[0]:
            return False
        if not rest:
            best[0] = top
            return top <= lb  # stop: the lower bound is met
        for i, b in enumerate(rest):
            o = fit(b, placed)
            nt = max(top, o + b[2])
            if cap is not None and nt > cap:
                continue
            if dfs(placed + ((b, o),), rest[:i] + rest[i + 1:], nt):
                return True
        return False

    placed0 = tuple((b, b[3]) for b in fixed)
    top0 = max([b[3] + b[2] for b in fixed] + [0])
    dfs(placed0, tuple(sorted(free, key=lambda b: (-b[2], b))), top0)
    if best[0] is None or (cap is not None and best[0] > cap):
        return None
    return best[0]


def oracle(case: Case) -> OracleResult:
    """The exhaustive optimum of ``case`` (module docstring), written independently of the
    toolkit's planners, schedulers and lifetime module.

    Every topological order (``networkx.all_topological_sorts`` of the producer -> consumer
    edges); per order the closed lifetimes ``[first, last]`` (steps) of the produced tensors;
    with pools every assignment of the buffers of ``size > 0`` (a pinned one only to a pool
    whose grid and capacity hold its pin); per pool the exact layout of :func:`_layout`.

    Parameters
    ----------
    case : Case

    Returns
    -------
    OracleResult
        ``traffic`` (bytes x steps x cost), ``arena`` and ``min_arena`` (bytes), or
        ``feasible=False`` when no order keeps the pins apart (or a zero-size pin lies on no
        pool's grid).

    Notes
    -----
    Exponential in the operators and buffers: well under a second on the generator's graphs
    (at most 7 operators, 5 with pools).
    """
    g = case.graph
    pools = case.pools
    costs = [q.cost for q in pools]
    if pools and not any(costs):
        costs = list(range(len(pools)))
    grids = [math.lcm(case.alignment, q.alignment) for q in pools] or [case.alignment]
    caps = [q.capacity for q in pools] or [None]
    best: tuple[int, int] | None = None
    min_arena: int | None = None
    orders = 0
    for t, o in case.pins.items():  # a zero-size buffer takes no bytes, but its offset is still
        if g.tensors[t].nbytes == 0 and not any(o % k == 0 for k in grids):  # on its pool's grid
            return OracleResult(False, orders=0)
    for order in nx.all_topological_sorts(_op_dag(g)):
        orders += 1
        life = _lifetimes(g, order)
        bufs = [(f, e, s, int(case.pins.get(t, -1))) for t, (f, e, s) in sorted(life.items())
                if s > 0]  # a zero-size buffer takes no bytes anywhere
        live = _peak({i: b[:3] for i, b in enumerate(bufs)})
        if not pools:
            if min_arena is not None and live >= min_arena:
                continue
            a = _layout(tuple(sorted(bufs)), grids[0], None)
            if a is not None and (min_arena is None or a < min_arena):
                min_arena = a
            continue
        options = []
        for b in bufs:
            ks = [k for k in range(len(pools))
                  if b[3] < 0 or (b[3] % grids[k] == 0
                                  and (caps[k] is None or b[3] + b[2] <= caps[k]))]
            options.append(ks)
        for assign in _product(options):
            traffic = sum(b[2] * costs[k] * (b[1] + 1 - b[0]) for b, k in zip(bufs, assign))
            lb = 0
            parts = []
            for k in range(len(pools)):
                mine = tuple(sorted(b for b, kk in zip(bufs, assign) if kk == k))
                parts.append(mine)
                lb += _peak({i: b[:3] for i, b in enumerate(mine)})
            lb = max(lb, live)
            want_lex = best is None or traffic < best[0] or (traffic == best[0] and lb < best[1])
            want_min = min_arena is None or lb < min_arena
            if not (want_lex or want_min):
                continue
            total = 0
            for k, mine in enumerate(parts):
                a = _layout(mine, grids[k], caps[k])
                if a is None:
                    total = None
                    break
                total += a
            if total is None:
                continue
            if best is None or (traffic, total) < best:
                best = (traffic, total)
            if min_arena is None or total < min_arena:
                min_arena = total
    if min_arena is None:
        return OracleResult(False, orders=orders)
    if not pools:
        best = (0, min_arena)
    return OracleResult(True, best[0], best[1], min_arena, orders)


def _product(options):
    if not options:
        yield ()
        return
    for k in options[0]:
        for rest in _product(options[1:]):
            yield (k,) + rest


# -- the check ---------------------------------------------------------------------------------


def _validate(case: Case, r) -> tuple[list[str], int, int, dict]:
    """The failures ``invalid`` / ``wrong_arena`` of result ``r`` (checked here on the lifetimes of
    its order) and its real ``(traffic, total arena, arenas by pool)``."""
    g = case.graph
    bad: list[str] = []
    order = list(r.order)
    pos = {n: k for k, n in enumerate(order)}
    if sorted(order) != sorted(g.ops) or any(pos[u] >= pos[v] for u, v in _op_dag(g).edges):
        return [f"invalid: order {order} is not a topological order of every operator"], 0, 0, {}
    life = _lifetimes(g, order)
    offs = r.offsets_by_id()
    pool_of = r.pools_by_id() if case.pools else {}
    names = [q.name for q in case.pools] or ["arena"]
    grids = {q.name: math.lcm(case.alignment, q.alignment) for q in case.pools} or {
        "arena": case.alignment}
    caps = {q.name: q.capacity for q in case.pools}
    costs = [q.cost for q in case.pools]
    if case.pools and not any(costs):
        costs = list(range(len(case.pools)))
    if set(offs) != set(life):
        return [f"invalid: buffers {sorted(offs)} are not the tensors {sorted(life)}"], 0, 0, {}
    tops = dict.fromkeys(names, 0)
    traffic = 0
    for t, (f, e, s) in life.items():
        o = offs[t]
        k = pool_of.get(t, "arena")
        if t in case.pins and o != case.pins[t]:
            bad.append(f"invalid: pinned {t!r} at {o}, not {case.pins[t]}")
        if s == 0:
            continue
        if o < 0 or o % grids[k]:
            bad.append(f"invalid: {t!r} at {o} off the {grids[k]}-byte grid of {k}")
        if caps.get(k) is not None and o + s > caps[k]:
            bad.append(f"invalid: {t!r} [{o}, {o + s}) above {k}'s capacity {caps[k]}")
        tops[k] = max(tops[k], o + s)
        if case.pools:
            traffic += s * costs[names.index(k)] * (e + 1 - f)
    items = [(t, v) for t, v in life.items() if v[2] > 0]
    for i, (a, (fa, ea, sa)) in enumerate(items):
        for b, (fb, eb, sb) in items[:i]:
            if pool_of.get(a) == pool_of.get(b) and fa <= eb and fb <= ea \
                    and offs[a] < offs[b] + sb and offs[b] < offs[a] + sa:
                bad.append(f"invalid: {a!r} and {b!r} meet in time and bytes")
    arena = sum(tops.values())
    if r.arena != arena:
        bad.append(f"wrong_arena: reported {r.arena}, the layout's is {arena}")
    if case.pools and (dict(r.arenas) != tops or r.traffic != traffic):
        bad.append(f"wrong_arena: reported arenas {dict(r.arenas)} traffic {r.traffic}, the "
                   f"layout's {tops} traffic {traffic}")
    return bad, traffic, arena, tops


def check_case(case: Case, orc: OracleResult | None = None, *, time_limit: float | None = None,
               deterministic_time: float | None = None) -> dict:
    """Run :func:`scheduling.joint.joint_optimize` on ``case`` and compare with the oracle.

    Parameters
    ----------
    case : Case
    orc : OracleResult or None
        :func:`oracle` of ``case`` (computed when ``None``).
    time_limit : float or None
        Wall-clock seconds of the call (default 30).
    deterministic_time : float or None
        CP-SAT deterministic-time units (default 10 in exact mode; 0.5 in anytime mode, which
        stops an anytime search whose bound is out of reach after 25 sub-solves). Only the
        exact mode's result is compared with the optimum (``suboptimal``).

    Returns
    -------
    dict
        One row (:data:`COLUMNS`): the input, the result (``arena``, ``bound`` in bytes,
        ``traffic``, ``status``, ``mode``, ``seconds``), the oracle's numbers, ``outcome``
        (``agree`` or the first failure of :data:`FAILURES`) and ``detail`` (every failure).
        Never raises for what ``joint_optimize`` does: an exception is the outcome ``error``
        (or ``missed_infeasible`` where the oracle proved the pins infeasible).
    """
    from scheduling.joint import joint_optimize

    exact = case.exact_max_ops >= len(case.graph.ops)
    if time_limit is None:
        time_limit = 30.0
    if deterministic_time is None:
        deterministic_time = 10.0 if exact else 0.5
    orc = oracle(case) if orc is None else orc
    row: dict[str, Any] = {
        "seed": case.seed, "kind": case.kind, "ops": len(case.graph.ops),
        "shuffled": case.shuffled, "alignment": case.alignment,
        "pins": ";".join(f"{t}={o}" for t, o in case.pins.items()),
        "pools": ";".join(f"{q.name}={q.capacity}/{q.alignment}" for q in case.pools),
        "exact_max_ops": case.exact_max_ops, "orders": orc.orders,
        "oracle_feasible": orc.feasible, "oracle_traffic": orc.traffic,
        "oracle_arena": orc.arena, "oracle_min_arena": orc.min_arena}
    t0 = time.perf_counter()
    fails: list[str] = []
    try:
        r = joint_optimize(case.graph, time_limit=time_limit,
                           deterministic_time=deterministic_time,
                           schedulers=["file_order", "min_live", "dfs"], workers=1, seed=0,
                           alignment=case.alignment, pins=case.pins or None,
                           pools=case.pools or None, exact_max_ops=case.exact_max_ops)
    except Exception as exc:  # noqa: BLE001 - every exception is an outcome here
        row.update(seconds=round(time.perf_counter() - t0, 3), mode="", status="raised",
                   arena="", bound="", traffic="")
        kind = "error" if orc.feasible else "missed_infeasible"
        msg = f"{kind}: {type(exc).__name__}: {exc}".replace("\n", " ")
        row.update(outcome=kind, detail=msg[:400])
        return row
    row.update(seconds=round(time.perf_counter() - t0, 3), mode=r.info.get("mode", ""),
               status=r.status, arena=r.arena, bound=r.bound, traffic=r.traffic)
    if r.status == "infeasible":
        if orc.feasible:
            fails.append(f"false_infeasible: oracle arena {orc.arena} ({r.info.get('reason')})")
    elif not orc.feasible:
        fails.append(f"missed_infeasible: status {r.status} arena {r.arena}")
    else:
        bad, traffic, arena, _ = _validate(case, r)
        fails += bad
        if r.bound > orc.min_arena:
            fails.append(f"bound_above: bound {r.bound} > the least arena {orc.min_arena}")
        if r.status == "optimal" and not (
                r.arena == r.bound == orc.min_arena and (traffic, arena) == (orc.traffic,
                                                                            orc.arena)):
            fails.append(f"false_optimal: arena {r.arena} bound {r.bound} traffic {r.traffic}; "
                         f"oracle (traffic, arena) ({orc.traffic}, {orc.arena}), least arena "
                         f"{orc.min_arena}")
        if not case.pools and r.status != ("optimal" if r.arena == r.bound else "feasible"):
            fails.append(f"status_rule: {r.status} at arena {r.arena} bound {r.bound}")
        if r.info.get("mode") == "exact" and (traffic, arena) != (orc.traffic, orc.arena):
            fails.append(f"suboptimal: exact mode (traffic, arena) ({traffic}, {arena}), oracle "
                         f"({orc.traffic}, {orc.arena})")
    order = {k: i for i, k in enumerate(FAILURES)}
    fails.sort(key=lambda m: order[m.split(":")[0]])
    row.update(outcome=fails[0].split(":")[0] if fails else "agree",
               detail=" | ".join(fails)[:400])
    return row


# -- the command line --------------------------------------------------------------------------

COLUMNS = ("seed", "kind", "ops", "shuffled", "alignment", "pins", "pools", "exact_max_ops",
           "orders", "mode", "status", "arena", "bound", "traffic", "oracle_feasible",
           "oracle_traffic", "oracle_arena", "oracle_min_arena", "seconds", "outcome", "detail")


def run(cases: int, seed: int = 0, *, out: str | None = None, verbose: bool = True) -> list[dict]:
    """Check generated inputs against the oracle.

    Parameters
    ----------
    cases : int
        How many inputs: seeds ``seed .. seed + cases - 1`` of :func:`generate`.
    seed : int
        The first seed.
    out : str or None
        A CSV file to write, one row per input (columns :data:`COLUMNS`).
    verbose : bool
        Print one line per failing input.

    Returns
    -------
    list of dict
        The rows of :func:`check_case`.
    """
    rows = []
    for s in range(seed, seed + cases):
        row = check_case(generate(s))
        rows.append(row)
        if verbose and row["outcome"] != "agree":
            print(f"seed {s} ({row['kind']}): {row['detail']}", flush=True)
    if out:
        with open(out, "w", newline="") as fh:
            w = csv.DictWriter(fh, COLUMNS)
            w.writeheader()
            w.writerows(rows)
    return rows


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring): ``--cases N --seed S --out FILE.csv``.

    Returns
    -------
    int
        The exit status: 1 if any input fails, 0 otherwise.
    """
    ap = argparse.ArgumentParser(prog="python -m experiments.bench.joint_differential",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000, help="generated inputs (default 2000)")
    ap.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--out", default=None, help="CSV file, one row per input")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(args.cases, args.seed, out=args.out)
    by = Counter((r["kind"], r["outcome"]) for r in rows)
    kinds = sorted({k for k, _ in by})
    outs = sorted({o for _, o in by}, key=lambda o: (o != "agree", o))
    print(f"{'kind':<12}" + "".join(f"{o:>18}" for o in outs))
    for k in kinds:
        print(f"{k:<12}" + "".join(f"{by[(k, o)]:>18}" for o in outs))
    failed = sum(r["outcome"] != "agree" for r in rows)
    print(f"{len(rows)} inputs, {failed} failed ({time.perf_counter() - t0:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
