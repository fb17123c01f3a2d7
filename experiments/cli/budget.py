"""``memplan budget``: fit a model into a memory budget with patches, recomputation or tiers.

``memplan budget MODEL --budget BYTES --technique patch|recompute|tiers|all [--json]`` reports,
for the budget, the peak each technique reaches and what it costs:

* ``patch`` -- MCUNetV2-style patch-based execution of the first stage
  (:func:`scheduling.patch.plan_patches`): peak (bytes), recomputed MACs, extra bytes read;
* ``recompute`` -- rematerialisation (:func:`scheduling.recompute.greedy_recompute`, or the exact
  MOCCASIN-style :func:`~scheduling.recompute.cpsat_recompute` with ``--solver cpsat``): peak of
  the stage model, recomputed MACs;
* ``tiers`` -- the budget is the SRAM capacity; buffer time slices are placed in SRAM or DRAM
  (:func:`planners.tiers.assign_tier_slices` with the uses of
  :func:`scheduling.uses.buffer_uses`): SRAM arena (the peak, always within the budget), DRAM
  arena, DRAM traffic and bytes moved by prefetches and evictions.

``baseline_peak`` follows each technique's accounting: the layer-by-layer peak of
:mod:`scheduling.patch` (unary operators in place), the stage-model peak of
:mod:`scheduling.recompute`, the lifetime peak (max live bytes) for tiers.

A technique that cannot reach the budget raises :class:`scheduling.tiling.BudgetError` (a
:class:`planners.errors.MemplanError`): ``memplan`` prints ``memplan: error: ...`` naming the
smallest reachable peak and exits with status 2. With ``--technique all`` the infeasible
techniques are reported with their smallest peak (``status: infeasible``) and the command fails
only when no technique fits. BYTES accepts a suffix ``k``/``K`` (x 1024) or ``M`` (x 1024^2).

Memory pools (``--pools NAME=BYTES[:ALIGN],...`` in preference order,
:func:`planners.io.parse_pools`): ``--budget`` may then be left out and is the first
pool's capacity (a first pool without one, ``inf``, needs ``--budget``); given, it is the
techniques' target peak as without pools. Each technique that fits then has its buffers placed
into the pools by ``--planner`` (default ``greedy_by_size``: the spill policy, each buffer to the
first pool in preference order where it fits; every placement passes
:func:`planners.validate.check_plan` with its pools), and its record gains ``pools`` (per pool:
``capacity``, ``bytes`` (that pool's arena) and ``fits``), ``fits_pools`` (every pool within its
capacity: the overflow known at plan time), ``pool_planner`` and ``pool_status``. The buffers
placed are the technique's own: for ``recompute`` every computed version of every value
(stage ranges of :func:`scheduling.recompute.simulate`; their max live is the reported peak),
for ``tiers`` its buffer time slices (each slice placed on its own, so a buffer may change pool
between slices as it changes tier). ``patch`` gives the peak of a layer-by-layer model, not
buffer lifetimes: its record says so in ``pools_note`` and has no per-pool bytes (never a number
that was not planned).
"""

from __future__ import annotations

import json

from experiments.cli.common import time_limit_of
from experiments.harness import pools_text

__all__ = ["COMMANDS", "add_parsers", "run", "parse_bytes", "budget_report", "place_in_pools"]

#: Sub-command names handled by :func:`run`.
COMMANDS = ("budget",)

TECHNIQUES = ("patch", "recompute", "tiers")


def parse_bytes(text) -> int:
    """``"262144"``, ``"256k"``, ``"4MiB"``, ``"1.5M"`` -> bytes (int, 1 k = 1024): the one byte-size
    parser of the command line (:func:`experiments.cli.flags.parse_bytes`); an int is returned
    as it is (``--budget`` is parsed by argparse already).

    Raises
    ------
    ProblemError
        Not a byte count in ``[0, 2**62)`` (the message quotes the text).
    """
    import argparse

    from experiments.cli.flags import parse_bytes as parse
    from planners.errors import ProblemError

    if isinstance(text, int):
        return text
    try:
        return parse(text)
    except argparse.ArgumentTypeError as e:
        raise ProblemError(f"--budget: {e}") from None


def _patch(g, budget: int, args) -> dict:
    from scheduling.patch import plan_patches

    r = plan_patches(g, budget, grids=range(1, args.max_grid + 1), accounting=args.accounting)
    return {"technique": "patch", "status": "fits", "peak": r.peak,
            "baseline_peak": r.layer_peak, "stage_end": r.stage_end,
            "grid": f"{r.grid[0]}x{r.grid[1]}", "extra_macs": r.extra_macs,
            "extra_macs_ratio": r.extra_macs_ratio, "extra_bytes": r.extra_bytes_read,
            "bytes_moved": 0, "dram_traffic": 0}


def _recompute(g, budget: int, args) -> dict:
    from scheduling.recompute import cpsat_recompute, greedy_recompute, remat_problem

    rp = remat_problem(g)
    if args.solver == "cpsat":
        r = cpsat_recompute(rp, budget, time_limit=time_limit_of(args))
    else:
        r = greedy_recompute(rp, budget)
    return {"technique": "recompute", "status": "fits", "solver": r.solver,
            "_problem": lambda: _versions_problem(g, rp, r.comp),
            "solver_status": r.status, "peak": r.peak, "baseline_peak": r.baseline_peak,
            "recomputed": len(r.recomputed), "extra_macs": r.extra_cost,
            "extra_macs_ratio": r.extra_ratio, "extra_bytes": 0, "bytes_moved": 0,
            "dram_traffic": 0}


def _tiers(g, budget: int, args) -> dict:
    from planners.tiers import assign_tier_slices
    from scheduling.lifetimes import lifetime_problem, peak_live_bytes
    from scheduling.uses import buffer_uses

    p = lifetime_problem(g)
    t = assign_tier_slices(p, budget, buffer_uses(g, p), method=args.solver,
                           time_limit=time_limit_of(args))
    return {"technique": "tiers", "status": "fits", "solver": t.method, "_problem": lambda: t.slices,
            "solver_status": t.status, "peak": t.sram_arena, "baseline_peak": peak_live_bytes(g),
            "sram_arena": t.sram_arena, "dram_arena": t.dram_arena, "extra_macs": 0,
            "extra_macs_ratio": 0.0, "extra_bytes": 0, "bytes_moved": t.bytes_moved,
            "bytes_prefetched": t.bytes_prefetched, "bytes_evicted": t.bytes_evicted,
            "dram_access_traffic": t.dram_access_traffic, "dram_traffic": t.dram_traffic,
            "total_traffic": t.total_traffic}


_RUNNERS = {"patch": _patch, "recompute": _recompute, "tiers": _tiers}


def _versions_problem(g, rp, comp):
    """The buffers of a recomputation plan: every computed version of every value
    (``scheduling.recompute._versions``: closed stage ranges ``[computed, last live]``) as a
    :class:`planners.Problem` named ``OP@STAGE`` (bytes: the operator's outputs); its max live
    bytes is the plan's simulated peak."""
    from planners import Problem
    from scheduling.recompute import _versions

    return Problem.from_closed([(f"{rp.names[v]}@{c}", c, last, int(rp.sizes[v]))
                                for v, c, last in _versions(rp, comp)], name=f"{g.name}:recompute")


#: Why a technique's record has no per-pool bytes (see the module docstring).
_NOT_PLACED = {"patch": "not placed into pools: the patch model gives the peak of a "
                        "layer-by-layer schedule, not buffer lifetimes"}


def place_in_pools(problem, pools, planner: str = "greedy_by_size",
                   time_limit: float | None = None) -> dict:
    """Place ``problem`` (bytes, half-open steps) into ``pools`` (:class:`planners.model.MemoryPool`,
    preference order) with registered planner ``planner`` (its pool assignment: ``native`` or
    the spill policy, :mod:`planners.multipool`); the plan passes
    :func:`planners.validate.check_plan` with its pools (:meth:`planners.base.Planner.plan`).

    Returns
    -------
    dict
        ``pools`` (per pool name: ``capacity`` bytes or ``None``, ``bytes`` its arena, ``fits``),
        ``fits_pools`` (every pool within its capacity), ``pool_planner``, ``pool_status`` (the
        plan's status, ``over_capacity`` when a pool overflows); without a plan (a solver's
        ``timeout``, ``infeasible``) ``pools`` is ``None`` and ``pools_note`` says why.

    Raises
    ------
    planners.errors.MemplanError
        A problem that cannot take the pools, an unknown planner or one that refuses a feature.
    """
    from experiments.harness import planner_for

    plan = planner_for(planner, time_limit, None).plan(problem.with_pools(pools))
    out = {"pool_planner": planner, "pool_status": plan.status}
    if plan.status in ("infeasible", "timeout", "skipped"):
        return {**out, "pools": None, "fits_pools": None,
                "pools_note": f"{planner} found no placement into the pools (status "
                              f"{plan.status})"}
    arenas = plan.arenas
    per = {q.name: {"capacity": q.capacity, "bytes": int(arenas[q.name]),
                    "fits": q.capacity is None or arenas[q.name] <= q.capacity} for q in pools}
    return {**out, "pools": per, "fits_pools": all(v["fits"] for v in per.values())}


def budget_report(g, budget: int, technique: str, args) -> list[dict]:
    """One record per technique (see the module docstring; bytes, MACs). With
    ``args.pool_list`` (parsed ``--pools``), each technique that fits is placed into the pools
    by ``args.planner`` (:func:`place_in_pools`, or a ``pools_note`` saying why not).

    Raises
    ------
    BudgetError
        A single technique that cannot reach ``budget``, or ``all`` when none can; the message
        names the smallest reachable peak.
    ProblemError
        Negative budget or unknown technique.
    """
    from planners.errors import ProblemError
    from scheduling.tiling import BudgetError

    if budget < 0:
        raise ProblemError(f"--budget must be >= 0 bytes, got {budget}")
    names = TECHNIQUES if technique == "all" else (technique,)
    if any(n not in _RUNNERS for n in names):
        raise ProblemError(f"unknown technique {technique!r}; known: {', '.join(TECHNIQUES)}, all")
    out = []
    pools = getattr(args, "pool_list", None)
    for name in names:
        try:
            rec = _RUNNERS[name](g, budget, args)
            make = rec.pop("_problem", None)
            if pools:
                if make is None:
                    rec.update(pools=None, fits_pools=None, pools_note=_NOT_PLACED[name])
                else:
                    rec.update(place_in_pools(make(), pools, getattr(args, "planner", None)
                                              or "greedy_by_size", time_limit_of(args)))
            out.append(rec)
        except BudgetError as e:
            if technique != "all":
                raise
            out.append({"technique": name, "status": "infeasible",
                        "smallest_peak": e.smallest_peak, "error": str(e)})
    if all(r["status"] == "infeasible" for r in out):
        known = [r["smallest_peak"] for r in out if r["smallest_peak"] is not None]
        best = min(known) if known else None
        raise BudgetError(f"graph {g.name!r}: budget {budget} bytes is below the smallest "
                          f"reachable peak {best} bytes of every technique", smallest_peak=best)
    return out


def add_parsers(subparsers) -> None:
    """Add the ``budget`` sub-command to an argparse ``subparsers`` object."""
    b = subparsers.add_parser(
        "budget", help="fit a model into a memory budget: patches, recomputation, SRAM/DRAM tiers")
    b.add_argument("model", help="ONNX light model name, mobilenet_v2[:alpha:res:dtype], "
                                 "mobilenet_v1[...], seed000 or PATH.onnx")
    from experiments.cli.flags import parse_bytes as byte_size

    b.add_argument("--budget", type=byte_size, metavar="BYTES",
                   help="bytes, e.g. 262144, 256k or 4MiB (k = 1024, M = 1024^2, as --capacity "
                        "and --pools); SRAM capacity for tiers; "
                        "required without --pools, with --pools it defaults to the first "
                        "pool's capacity")
    b.add_argument("--technique", choices=(*TECHNIQUES, "all"), default="all",
                   help="patch (tile the first layers), recompute (rematerialise values), tiers "
                        "(spill to DRAM) or all (default)")
    b.add_argument("--solver", choices=("greedy", "cpsat"), default="greedy",
                   help="recompute / tiers solver (default greedy)")
    from experiments.cli.common import add_time_limit_flag

    add_time_limit_flag(b, "--solver cpsat")
    b.add_argument("--accounting", choices=("lifetime", "layer_io"), default="lifetime",
                   help="patch peak accounting (scheduling.patch)")
    b.add_argument("--max-grid", type=int, default=8, help="patch grids 1x1 .. NxN")
    from experiments.cli.flags import add_json_flag, add_override_flag, add_pools_flag

    add_json_flag(b)
    add_override_flag(b)
    add_pools_flag(b, ": each technique's buffers are placed into them (--planner) and the "
                      "report gives bytes per pool and whether every pool fits; --budget then "
                      "defaults to the first pool's capacity (recompute: its value versions; "
                      "tiers: its time slices; patch: not placed, no buffer lifetimes)")
    b.add_argument("--planner", default="greedy_by_size",
                   help="with --pools: the planner placing each technique's buffers (default "
                        "greedy_by_size: the spill policy, first pool where a buffer fits)")


def run(args) -> int:
    """Run ``memplan budget`` with parsed ``args``; returns 0. Errors raise
    :class:`planners.MemplanError` (``BudgetError`` for an unreachable budget) for the caller
    to report with exit status 2."""
    from experiments.cli.common import parse_pools
    from experiments.workloads import load_graph, parse_overrides
    from planners.errors import ProblemError
    from planners.registry import check_planner_names

    pools = parse_pools(getattr(args, "pools", None))
    if pools:
        check_planner_names([args.planner])
    if args.budget is None:
        if not pools:
            raise ProblemError("--budget: give the memory budget in bytes (e.g. 256k), or "
                               "--pools, whose first pool's capacity is then the budget")
        if pools[0].capacity is None:
            raise ProblemError(f"--budget: the first pool {pools[0].name!r} has no capacity "
                               "(inf); give --budget")
        budget = pools[0].capacity
    else:
        budget = parse_bytes(args.budget)
    args.pool_list = pools
    g = load_graph(args.model, overrides=parse_overrides(args.override))
    recs = budget_report(g, budget, args.technique, args)
    tl = time_limit_of(args) if args.solver == "cpsat" else None  # greedy takes none
    if args.json:
        extra = {"pools": {q.name: {"capacity": q.capacity, "alignment": q.alignment}
                           for q in pools}, "pool_planner": args.planner} if pools else {}
        print(json.dumps({"model": g.name, "budget": budget, "solver": args.solver,
                          "time_limit": tl, **extra, "results": recs}, indent=1))
        return 0
    print(f"model {g.name}, budget {budget} bytes, solver {args.solver}"
          + (f" (time limit {tl:g} s)" if tl is not None else "")
          + (f", pools {pools_text(pools)} placed by {args.planner}" if pools else ""))
    for r in recs:
        if r["status"] == "infeasible":
            print(f"  {r['technique']:9s} infeasible: smallest reachable peak "
                  f"{r['smallest_peak']} bytes")
            continue
        line = (f"  {r['technique']:9s} peak {r['peak']} bytes (baseline {r['baseline_peak']}), "
                f"extra MACs {r['extra_macs']} ({100 * r['extra_macs_ratio']:.2f} %)")
        if r["technique"] == "patch":
            line += f", stage end {r['stage_end']}, grid {r['grid']}, extra bytes read " \
                    f"{r['extra_bytes']}"
        if r["technique"] == "tiers":
            line += (f", DRAM arena {r['dram_arena']} bytes, DRAM traffic {r['dram_traffic']} "
                     f"bytes (of {r['total_traffic']}), moved {r['bytes_moved']} bytes")
        print(line)
        if pools and r.get("pools"):
            per = ", ".join(f"{n} {v['bytes']}" + (f" of {v['capacity']}" if v["capacity"]
                                                    is not None else "")
                            + ("" if v["fits"] else " OVER CAPACITY")
                            for n, v in r["pools"].items())
            verdict = "fits every pool" if r["fits_pools"] else "does not fit every pool"
            print(f"  {'':9s} pools: {per} bytes; {verdict} (status {r['pool_status']})")
        elif pools:
            print(f"  {'':9s} pools: {r.get('pools_note')}")
    return 0
