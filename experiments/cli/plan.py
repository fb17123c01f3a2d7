"""``memplan plan``, ``memplan rv64`` and ``memplan list``: one problem planned, one planner's
RV64 cost, and the registered planners, schedulers and workloads."""

from __future__ import annotations

import json
import sys

from experiments.cli.common import (
    DEFAULT_TIME_LIMIT,
    add_param_flag,
    add_pipeline_flag,
    add_pool_flags,
    add_time_limit_flag,
    capacity_bytes,
    note_time_limit,
    params_of,
    parse_pipeline,
    parse_pools,
    time_limit_of,
)

__all__ = ["COMMANDS", "add_parsers", "run"]

COMMANDS = ("plan", "rv64", "list")


def add_parsers(sub) -> None:
    """Add the ``plan``, ``rv64`` and ``list`` subcommands to ``sub`` (argparse subparsers)."""
    p = sub.add_parser("plan", help="plan one problem (MiniMalloc .csv, .onnx, or workload name)")
    p.add_argument("input", help="MiniMalloc .csv, .onnx or .tflite file, or a workload name "
                                 "(see `memplan list`)")
    p.add_argument("--planner", default="greedy_by_size",
                   help="registered planner (default greedy_by_size; see `memplan list`)")
    p.add_argument("--capacity", type=capacity_bytes, default=None,
                   help="arena capacity in bytes (default: from a NAME.CAPACITY.csv file name)")
    add_time_limit_flag(p)
    add_param_flag(p)
    add_pipeline_flag(p)
    p.add_argument("--minimalloc-dir", help="where minimalloc:NAME is looked up (default "
                   "$MEMPLAN_MINIMALLOC_DIR or ../shared/benchmarks/minimalloc)")
    p.add_argument("--override", action="append", metavar="NAME=DIMS",
                   help="ONNX/TFLite: a symbolic dimension (N=1) or a tensor's static shape "
                        "(input=1,3,224,224); repeatable")
    p.add_argument("--unified", action="store_true",
                   help="ONNX: one arena with weights and inputs as residents (seed 000 layout)")
    p.add_argument("--size-attr", default="cost_ram",
                   help="node-link .json graphs: the node attribute with the output bytes "
                        "(default cost_ram, as Checkmate and MOCCASIN write it)")
    p.add_argument("-o", "--output", help="write the plan as a MiniMalloc CSV with an offset column")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_pool_flags(p)

    r = sub.add_parser("rv64", help="run a planner's allocator core as emulated RV64 machine code")
    r.add_argument("input", help="MiniMalloc .csv, .onnx, or workload name (see `memplan list`)")
    r.add_argument("--planner", default="greedy_in_order",
                   help="one of the planners with a C core (greedy_in_order, the default, "
                        "first_fit, best_fit, greedy_by_size, freelist_bump) or "
                        "greedy_by_size_tree (greedy_by_size's offsets, faster core)")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--engine", choices=("auto", "interp", "unicorn"), default="auto",
                   help="what executes the RV64 image: our interpreter (auto, interp) or unicorn, "
                        "the reference; every number is the same with either")
    r.add_argument("--override", action="append", metavar="NAME=DIMS",
                   help="ONNX/TFLite: a symbolic dimension (N=1) or a tensor's static shape "
                        "(input=1,3,224,224); repeatable")

    ls = sub.add_parser("list", help="list registered planners and workloads")
    ls.add_argument("--json", action="store_true",
                    help="print the planners' capability table and parameters as one JSON object")


def run(args) -> int:
    """Run one of :data:`COMMANDS`; returns the exit status."""
    return {"plan": _cmd_plan, "rv64": _cmd_rv64, "list": _cmd_list}[args.command](args)


def _summary(doc: str | None, width: int = 96) -> str:
    """First paragraph of a docstring on one line, cut to ``width`` characters."""
    para = " ".join((doc or "").strip().split("\n\n")[0].split())
    return para if len(para) <= width else para[: width - 1].rstrip() + "…"


def planner_parameters(cls) -> dict[str, dict]:
    """``{name: {"default": value, "allowed": text}}`` for every constructor parameter of a planner
    class: the default from its signature, the allowed values from its declared rules
    (``_parameter_constraints``, :func:`planners.params.describe`; ``"any"`` when it declares
    none)."""
    import inspect

    from planners.params import describe

    rules = getattr(cls, "_parameter_constraints", None) or {}
    sig = inspect.signature(cls.__init__).parameters
    out = {}
    for k in cls._param_names():
        d = sig[k].default
        out[k] = {"default": None if d is inspect.Parameter.empty else d,
                  "allowed": describe(rules[k]) if k in rules else "any"}
    return out


def _cmd_list(args) -> int:
    from experiments.workloads import default_workloads
    from planners.model import FEATURES
    from planners.registry import PLANNERS

    params = {n: planner_parameters(c) for n, c in PLANNERS.items()}
    if getattr(args, "json", False):
        print(json.dumps({"capabilities": {n: c.capabilities() for n, c in PLANNERS.items()},
                          "parameters": params}, default=repr))
        return 0
    print("planners:")
    for name, cls in PLANNERS.items():
        print(f"  {name:26s} {_summary(cls.__doc__)}")
    print("planner parameters (--param NAME=VALUE on plan, view, export, compare; "
          "NAME=default: allowed values; a command's --time-limit, default "
          f"{DEFAULT_TIME_LIMIT:g} s, replaces the class default of time_limit):")
    for name, ps in params.items():
        print(f"  {name}")
        for k, v in ps.items():
            print(f"      {k}={v['default']!r}: {v['allowed']}")
    print("planner capabilities (compiler features; planners.base.CAPABILITY_MODES):")
    print(f"  {'planner':26s} " + " ".join(f"{f:11s}" for f in FEATURES))
    for name, cls in PLANNERS.items():
        caps = cls.capabilities()
        print(f"  {name:26s} " + " ".join(f"{caps[f]:11s}" for f in FEATURES))
    from scheduling.schedulers import SCHEDULERS

    print("schedulers:")
    for name, cls in SCHEDULERS.items():
        print(f"  {name:26s} {_summary(cls.__doc__)}")
    from experiments.workloads import graph_workloads, tflite_workloads

    print("workloads (problems; `plan`, `compare`):")
    for name, w in default_workloads().items():
        print(f"  {name:26s} {w.kind:10s} {w.source}")
    for name, w in tflite_workloads().items():
        print(f"  {name:26s} {w.kind:10s} {w.source}")
    print("  minimalloc:NAME            minimalloc NAME.CAPACITY.csv of --minimalloc-dir, "
          "$MEMPLAN_MINIMALLOC_DIR or ../shared/benchmarks/minimalloc")
    print("graph workloads (any command; lifetimes from a schedule):")
    for name in graph_workloads():
        print(f"  {name}")
    print("  mobilenet_v1[:alpha:resolution:dtype], mobilenet_v2[...]   e.g. mobilenet_v2:1.0:224:int8")
    return 0


def pipeline_problem(spec, pipeline: str, overrides=None, unified: bool = False,
                     size_attr: str = "cost_ram"):
    """The problem of model ``spec`` (anything :func:`experiments.workloads.load_graph` reads)
    after the graph passes ``pipeline`` (:func:`scheduling.transforms.run_pipeline`, comma-separated
    names; ``overrides`` as :func:`experiments.workloads.parse_overrides` returns), as
    ``export`` builds it (:func:`scheduling.transforms.transformed_problem`); fusions
    that raise the peak are refused and named on stderr. Raises ``ValueError`` for a MiniMalloc
    ``.csv`` (no graph to transform) or an unknown pass."""
    from experiments.cli.transforms import report_peak_refusals
    from experiments.workloads import load_graph
    from scheduling.transforms import run_pipeline, transformed_problem

    if str(spec).endswith(".csv"):
        raise ValueError(f"--pipeline {pipeline}: {spec} is a list of buffers, not a graph; graph "
                         "passes need a model (use --pipeline none)")
    g = load_graph(spec, size_attr=size_attr, overrides=overrides)
    g2, logs = run_pipeline(g, pipeline, None)
    report_peak_refusals(logs)
    return transformed_problem(g2, unified=unified)


def _cmd_plan(args) -> int:
    from experiments import metrics
    from experiments.cli.check import note_offsets_ignored
    from experiments.harness import planner_for
    from experiments.workloads import load_problem, parse_overrides
    from planners import write_minimalloc_csv

    pools = parse_pools(args.pools)
    if args.ignore_offsets:
        note_offsets_ignored(args.input)
    cap = args.capacity if args.capacity is not None else "auto"
    pipeline = parse_pipeline(args.pipeline)
    if pipeline is not None:  # graph passes: the model's graph, transformed, then planned
        problem = pipeline_problem(args.input, pipeline, parse_overrides(args.override),
                                   args.unified, args.size_attr)
        if cap != "auto":
            problem = problem.with_capacity(cap)
        if pools:
            problem = problem.with_pools(pools)
    elif str(args.input).endswith(".csv"):  # MiniMalloc's dialect: offsets fixed unless ignored
        from planners.io import read_minimalloc_csv

        problem = read_minimalloc_csv(args.input, capacity=None if pools else cap, pools=pools,
                                      offsets="ignore" if args.ignore_offsets else "fixed")
    else:
        problem = load_problem(args.input, capacity=cap, unified=args.unified,
                               overrides=parse_overrides(args.override),
                               minimalloc_folder=args.minimalloc_dir, size_attr=args.size_attr)
        if pools:
            problem = problem.with_pools(pools)
    planner = planner_for(args.planner, time_limit_of(args), params_of(args))
    note_time_limit([args.planner], args.time_limit, params_of(args))
    if getattr(planner, "requires_capacity", False) and problem.capacity is None \
            and not problem.pools:
        from planners import lower_bound

        problem = problem.with_capacity(lower_bound(problem))
    plan = planner.plan(problem)
    valid = plan.status not in ("infeasible", "timeout", "skipped")
    fits = metrics.fits(plan.arena_size if valid else None, problem.capacity)
    written = None
    if args.output and valid:
        write_minimalloc_csv(problem, args.output, plan)
        written = str(args.output)
    out = {
        "input": str(args.input),
        "planner": plan.planner,
        "buffers": problem.n,
        "arena": plan.arena_size if valid else None,
        "lower_bound": plan.lower_bound,
        "best_bound": plan.best_bound,
        "capacity": problem.capacity,
        "status": plan.status,
        "valid": valid,
        "fits": fits,
        "seconds": round(plan.seconds, 6),
        # the settings that made these numbers (one set of defaults on every command)
        "time_limit": plan.params.get("time_limit"),
        "pipeline": pipeline or "none",
    }
    if args.param:
        out["params"] = params_of(args)
    if written:  # what -o wrote, as `view` says it
        out["written"] = f"{written} ({problem.n} buffers with offsets, MiniMalloc CSV)"
    if problem.pools and valid:  # bytes per pool, and each buffer's pool
        out["arenas"] = plan.arenas
        out["pools"] = {q.name: q.capacity for q in problem.pools}
    if problem.features:
        out["features"] = sorted(problem.features)
    if plan.status == "skipped":  # the planner declined to build its model: say why
        out["reason"] = plan.info.get("reason")
    tfl = str(args.input) if str(args.input).endswith(".tflite") else None
    if tfl is None and str(args.input).startswith(("wakeword:", "mediapipe:")):
        from experiments.workloads import tflite_model_files

        tfl = tflite_model_files().get(str(args.input))
    if tfl is not None:  # TFLite Micro: the whole arena its interpreter needs (head + tail)
        from experiments.runtimes.tflm.oracle import runtime_arena

        out.update(runtime_arena(tfl))
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:12s} {'-' if v is None or v == '' else v}")
    if plan.status == "infeasible" and plan.info.get("proof"):  # e.g. two colliding pins
        print(f"memplan: error: planner {plan.planner!r} proved problem {problem.name!r} "
              f"infeasible: {plan.info['proof']}", file=sys.stderr)
        return 1
    if problem.pools and (not valid or plan.status == "over_capacity"):
        over = [f"{q.name} {plan.arenas[q.name]} > {q.capacity}" for q in problem.pools
                if valid and q.capacity is not None and plan.arenas[q.name] > q.capacity]
        print(f"memplan: error: planner {plan.planner!r} found no plan within the pools' "
              f"capacities (status {plan.status}{'; ' + ', '.join(over) if over else ''})",
              file=sys.stderr)
        return 1
    if problem.capacity is not None and (not valid or not fits):
        print(f"memplan: error: planner {plan.planner!r} found no plan within the capacity "
              f"{problem.capacity} bytes (status {plan.status})", file=sys.stderr)
        return 1
    return 0


def _cmd_rv64(args) -> int:
    from experiments import rv64
    from experiments.workloads import load_problem, parse_overrides

    ok, reason = rv64.available()
    if not ok:
        raise rv64.Rv64Unavailable(reason)
    from planners.registry import available_planners

    if args.planner not in rv64.CORE_NAMES:
        what = "has no RV64 core" if args.planner in available_planners() else "is not a planner"
        raise ValueError(
            f"planner {args.planner!r} {what}; RV64 cores: {', '.join(rv64.CORE_NAMES)}"
        )
    problem = load_problem(args.input, overrides=parse_overrides(args.override))
    est = rv64.estimate(problem, args.planner, engine=args.engine)
    rec = est.as_record()
    rec = {"input": str(args.input), **rec}
    if args.json:
        print(json.dumps(rec, default=int))
    else:
        for k, v in rec.items():
            print(f"{k:24s} {'-' if v is None else v}")
    return 0 if est.offsets_match else 1
