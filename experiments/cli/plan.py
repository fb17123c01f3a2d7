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
    note_time_limit,
    params_of,
    parse_pipeline,
    parse_pools,
    refuse_capacity_with_pools,
    report_lower_bound,
    time_limit_of,
)
from experiments.cli.flags import (
    add_capacity_flag,
    add_json_flag,
    add_minimalloc_dir_flag,
    add_override_flag,
    add_scheduler_param_flag,
    add_size_attr_flag,
    time_limit_text,
)

__all__ = ["COMMANDS", "add_parsers", "run", "pipeline_problem", "scheduled_problem",
           "joint_plan", "joint_pipeline_problem", "planner_parameters"]

COMMANDS = ("plan", "rv64", "list")


def add_parsers(sub) -> None:
    """Add the ``plan``, ``rv64`` and ``list`` subcommands to ``sub`` (argparse subparsers)."""
    p = sub.add_parser("plan", help="plan one problem (MiniMalloc .csv, .onnx, or workload name)")
    p.add_argument("input", help="MiniMalloc .csv, .onnx or .tflite file, or a workload name "
                                 "(see `memplan list`)")
    p.add_argument("--planner", default="greedy_by_size",
                   help="registered planner (default greedy_by_size; see `memplan list`), or "
                        "joint with --scheduler joint: the joint optimiser's own offsets")
    add_capacity_flag(p)
    p.add_argument("--scheduler", default=None,
                   help="graph inputs: order the operators with this registered scheduler "
                        "(see `memplan list`) before the lifetimes are derived; default: the "
                        "stored order (the file order)")
    add_scheduler_param_flag(p)
    add_time_limit_flag(p)
    add_param_flag(p)
    add_pipeline_flag(p)
    add_minimalloc_dir_flag(p)
    add_override_flag(p)
    p.add_argument("--unified", action="store_true",
                   help="ONNX: one arena with weights and inputs as residents (seed 000 layout)")
    add_size_attr_flag(p)
    p.add_argument("-o", "--output", help="write the plan as a MiniMalloc CSV with an offset column")
    add_json_flag(p)
    add_pool_flags(p)
    from experiments.cli.symbolic_input import add_at_flag

    add_at_flag(p)  # symbolic sizes (planners.symbolic): plan one point of the dims

    r = sub.add_parser("rv64", help="run a planner's allocator core as emulated RV64 machine code")
    r.add_argument("input", help="MiniMalloc .csv, .onnx, or workload name (see `memplan list`)")
    r.add_argument("--planner", default="greedy_in_order",
                   help="one of the planners with a C core (greedy_in_order, the default, "
                        "first_fit, best_fit, greedy_by_size, freelist_bump) or "
                        "greedy_by_size_tree (greedy_by_size's offsets, faster core)")
    add_json_flag(r)
    r.add_argument("--engine", choices=("auto", "interp", "unicorn"), default="auto",
                   help="what executes the RV64 image: our interpreter (auto, interp) or unicorn, "
                        "the reference; every number is the same with either")
    add_override_flag(r)

    ls = sub.add_parser("list", help="list registered planners and workloads")
    ls.add_argument("--json", action="store_true",
                    help="print one JSON object: the planners' capability table and parameters")


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
                          "kind_capabilities": {n: c.kind_capabilities()
                                                for n, c in PLANNERS.items()},
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
    from experiments.cli.shared import print_kind_table

    print_kind_table(PLANNERS)
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


def _not_a_graph(spec) -> str | None:
    """What input ``spec`` is when it has no dataflow graph (``None`` when it may have one)."""
    s = str(spec)
    if s.endswith(".csv") or s.startswith("minimalloc:"):
        return "a list of buffers"
    if s.endswith(".pte"):
        return "an ExecuTorch program with its own plan"
    return None


def _graph_and_kind(spec, overrides=None, size_attr: str = "cost_ram"):
    """``(graph, kind)`` of a model input as :func:`experiments.workloads.load_problem` reads it:
    ``kind`` names its lifetime policy (:data:`experiments.workloads.KIND_LIFETIME_POLICY`:
    ``tflite`` for a ``.tflite`` file or a TFLite workload name, ``onnx`` for an ``.onnx`` file
    or one of the light models, else ``graph``). Raises :class:`planners.errors.ProblemError`
    naming the input when it has no graph, or when ``plan`` reads it as a table of lifetimes
    (a seed workload such as ``seed000``), which no order derives."""
    from pathlib import Path

    from experiments.workloads import (
        KIND_LIFETIME_POLICY,
        WORKLOADS,
        load_graph,
        onnx_workloads,
        tflite_model_files,
    )
    from planners.errors import ProblemError

    s = str(spec)
    if s in WORKLOADS and WORKLOADS[s].kind not in KIND_LIFETIME_POLICY:  # e.g. seed000's table
        raise ProblemError(f"{s!r} is planned from its own table of lifetimes ({WORKLOADS[s].source}),"
                           " not from an operator order, so a scheduler cannot reorder it (its "
                           f"graph, where there is one: `memplan schedule {s}`)")
    tfl = s if s.endswith(".tflite") else tflite_model_files().get(s)
    if tfl is not None:
        from scheduling.tflite_import import load_tflite

        if not Path(tfl).exists():
            raise ProblemError(f"{tfl}: no such file")
        return load_tflite(tfl, overrides=overrides or None).graph, "tflite"
    kind = "onnx" if s.endswith(".onnx") or s in onnx_workloads() else "graph"
    return load_graph(s, size_attr=size_attr, overrides=overrides), kind


def scheduled_problem(spec, scheduler, pipeline: str | None = None, overrides=None,
                      unified: bool = False, size_attr: str = "cost_ram"):
    """The problem of model ``spec`` under the operator order that ``scheduler`` chooses.

    Data flow: the graph (what :func:`experiments.workloads.load_graph` reads, or a ``.tflite``
    model's) -> ``scheduler.schedule`` -> the order checked again by
    :func:`scheduling.schedule.check_schedule` -> without ``pipeline``, the activation problem
    with the lifetime policy of the input's kind (:func:`experiments.workloads.activation_problem`,
    as ``memplan plan`` derives it from the stored order); with ``pipeline``, the graph rebuilt in
    the scheduled order (:func:`scheduling.transforms.base.rebuild`), then the passes
    (:func:`scheduling.transforms.run_pipeline`, fusions that raise the peak refused and named
    on stderr), then :func:`scheduling.transforms.transformed_problem` of that order, as
    :func:`pipeline_problem` builds it. The passes run after the scheduler because they decide
    by the stored order (an in-place result may take its input's memory only when nothing reads
    that input later): passes first and a new order afterwards could make such a decision wrong.

    Parameters
    ----------
    spec : str or path
        ``.onnx``, ``.tflite``, node-link ``.json``, or a graph workload name.
    scheduler : scheduling.schedulers.base.Scheduler
        A configured scheduler (:func:`experiments.cli.schedule.make_scheduler`).
    pipeline, overrides, unified, size_attr
        As for :func:`pipeline_problem` and :func:`experiments.workloads.load_problem`.

    Returns
    -------
    (planners.Problem, scheduling.schedule.Schedule, scheduling.graph.Graph)
        Half-open ``[start, end)`` lifetimes in schedule steps, sizes in bytes; the checked
        schedule (``bound``: bytes, a proved lower bound on every order's peak of the graph as
        scheduled, before any pass); the graph it ordered.

    Raises
    ------
    ValueError
        ``spec`` is a MiniMalloc ``.csv`` or an ExecuTorch ``.pte`` (no graph to schedule), or an
        unknown pass.
    planners.errors.MemplanError
        An unknown or malformed model (naming it), a cycle, an invalid order.
    """
    from experiments.cli.transforms import report_peak_refusals
    from experiments.workloads import activation_problem, workload_key
    from scheduling.schedule import check_schedule

    what = _not_a_graph(spec)
    if what:
        raise ValueError(f"--scheduler {getattr(scheduler, 'name', scheduler)}: {spec} is {what}, "
                         "not a graph; schedulers need a model (.onnx, .tflite, node-link .json "
                         "or a graph workload name)")
    graph, kind = _graph_and_kind(spec, overrides, size_attr)
    sched = scheduler.schedule(graph)
    check_schedule(graph, sched.order)
    if pipeline is None:
        problem = activation_problem(kind, graph, sched.order, name=workload_key(str(spec)),
                                     unified=unified)
        return problem, sched, graph
    from scheduling.transforms import run_pipeline, transformed_problem
    from scheduling.transforms.base import rebuild

    ordered = rebuild(graph, [graph.ops[n] for n in sched.order])
    g2, logs = run_pipeline(ordered, pipeline, None)
    report_peak_refusals(logs)
    return transformed_problem(g2, unified=unified), sched, graph


def joint_pipeline_problem(spec, scheduler, pipeline, overrides=None,
                           size_attr: str = "cost_ram"):
    """``--scheduler joint --planner joint --pipeline P``: the graph passes run first (stored
    order), then the joint search orders the transformed graph, keeping its in-place decisions
    valid (:mod:`scheduling.joint`). Returns ``(problem, schedule, transformed graph)``: the
    problem is :func:`scheduling.transforms.transformed_problem` of the order (alias groups),
    half-open ``[start, end)`` steps, bytes. Raises as :func:`scheduled_problem`."""
    from experiments.cli.transforms import report_peak_refusals
    from scheduling.schedule import check_schedule
    from scheduling.transforms import run_pipeline, transformed_problem

    what = _not_a_graph(spec)
    if what:
        raise ValueError(f"--scheduler joint: {spec} is {what}, not a graph")
    graph, _ = _graph_and_kind(spec, overrides, size_attr)
    g2, logs = run_pipeline(graph, pipeline, None)
    report_peak_refusals(logs)
    sched = scheduler.schedule(g2)
    check_schedule(g2, sched.order)
    return transformed_problem(g2, sched.order), sched, g2


def joint_plan(problem, schedule, graph):
    """The joint optimiser's own offsets (:mod:`scheduling.joint`, scheduler ``joint``) as a
    :class:`planners.Plan` of ``problem``, validated by :func:`planners.validate.check_plan`.

    ``problem`` must be the lifetime problem the offsets were found for: the activations of
    ``schedule.order`` (:func:`scheduling.lifetimes.lifetime_problem`: graph inputs not in the
    arena, no residents, the joint scheduler's ``alignment``), with the alias groups of
    ``graph`` when it carries them (graph passes, :func:`joint_pipeline_problem`) and the
    joint scheduler's pools when it had some (each buffer in the pool it chose); a capacity is
    allowed without pools. The status follows the joint rule: without pools ``optimal`` exactly
    when the arena (bytes) equals ``joint_bound``, a proved lower bound on the arena of every
    (order, layout) pair (kept as the plan's ``best_bound``), else ``feasible``
    (``over_capacity`` above a capacity); with pools the joint search's own status (``optimal``
    when CP-SAT proved the traffic-then-total-arena optimum, or zero traffic at the bound).
    ``lower_bound`` is ``problem``'s own (max live bytes of this order); ``seconds`` is 0 (the
    search time is the schedule's).

    Raises
    ------
    ValueError
        ``schedule`` is not the joint scheduler's.
    planners.errors.FeatureError
        ``problem`` is not the problem of those offsets (another lifetime policy: a TFLite
        model's 16-byte arena holding its input, ``--unified``, graph passes, pools), naming
        the first difference.
    planners.errors.InvalidPlanError
        The offsets break a rule of the problem (a bug, never silenced).
    """
    import numpy as np

    from planners import Plan, lower_bound
    from planners.errors import FeatureError
    from planners.model import arena_top
    from planners.validate import check_plan

    info = schedule.info
    if "joint_status" not in info or "offsets" not in info:
        raise ValueError(f"--planner joint takes the joint optimiser's own offsets: it needs "
                         f"--scheduler joint (got --scheduler {schedule.scheduler})")
    why = None
    jpools = schedule.params.get("pools") or None
    own_pools = tuple(jpools or ())
    if tuple(problem.pools) != own_pools:
        why = (f"its pools {[q.name for q in problem.pools]} are not the joint search's "
               f"{[q.name for q in own_pools]}")
    elif problem.features - {"pools"}:
        why = f"it uses {', '.join(sorted(problem.features - {'pools'}))}"
    else:
        from scheduling.transforms import transformed_problem

        own = transformed_problem(graph, schedule.order,
                                  alignment=int(schedule.params.get("alignment", 1)))
        if own.aliases != problem.aliases:
            why = "its alias groups differ from those of the graph the joint search ordered"
        theirs = dict(zip(problem.ids, zip(problem.starts.tolist(), problem.ends.tolist(),
                                           problem.sizes.tolist(), problem.alignments.tolist())))
        mine = dict(zip(own.ids, zip(own.starts.tolist(), own.ends.tolist(),
                                     own.sizes.tolist(), own.alignments.tolist())))
        if why is None and theirs != mine:
            diff = sorted(set(theirs) ^ set(mine)) or sorted(
                k for k in theirs if theirs[k] != mine[k])
            why = (f"buffer {diff[0]!r} differs (lifetime policy of the input: e.g. a TFLite "
                   "arena holding the graph input with 16-byte alignment, or --unified)")
    if why:
        raise FeatureError(
            f"--planner joint: the joint optimiser placed the activations of its order "
            f"(graph inputs outside the arena, alignment {schedule.params.get('alignment', 1)} "
            f"bytes, no aliases or pools), but problem {problem.name!r} is another one: {why}; "
            "plan the joint order with a registered planner instead (e.g. --planner telamalloc)")
    offs = np.array([int(info["offsets"][i]) for i in problem.ids], dtype=np.int64)
    pools = None
    if problem.pools:
        names = [q.name for q in problem.pools]
        pools = np.array([names.index(info["pools"][i]) for i in problem.ids], dtype=np.int64)
    check_plan(problem, offs, pools=pools)
    if pools is not None:
        arena = sum(arena_top(offs[pools == k], problem.sizes[pools == k])
                    for k in range(len(names)))
    else:
        arena = arena_top(offs, problem.sizes)
    jb = int(info["joint_bound"])
    if arena < jb or arena != int(info["arena_bytes"]):
        raise RuntimeError(f"joint optimiser: arena {arena} bytes against its bound {jb} and "
                           f"reported arena {info['arena_bytes']} (a bug)")
    status = "optimal" if arena == jb else "feasible"
    if pools is not None:
        # the planners' rule with pools: an arena at the bound does not prove the traffic least;
        # optimal needs the joint optimiser's own proof (CP-SAT's, traffic then total arena)
        status = "optimal" if info["joint_status"] == "optimal" else "feasible"
    if status != info["joint_status"]:
        raise RuntimeError(f"joint optimiser: status {info['joint_status']!r} but arena {arena} "
                           f"and bound {jb} bytes give {status!r} (a bug)")
    if problem.capacity is not None and arena > problem.capacity:
        status = "over_capacity"
    return Plan(problem, offs, planner="joint", status=status, seconds=0.0,
                lower_bound=lower_bound(problem), best_bound=jb, pools=pools,
                params={k: v for k, v in schedule.params.items() if k != "pools"},
                info={k: info[k] for k in ("joint_bound", "start_scheduler", "start_arena",
                                           "mode", "iterations") if k in info})


def _cmd_plan(args) -> int:
    from experiments.cli.shared import plan_json_problem

    routed = plan_json_problem(args)  # a concurrent or shared-arena JSON problem, or None
    if routed is not None:
        return routed
    from experiments import metrics
    from experiments.cli.check import note_offsets_ignored, note_offsets_pinned
    from experiments.harness import planner_for
    from experiments.workloads import load_problem, parse_overrides
    from planners import write_minimalloc_csv

    pools = parse_pools(args.pools)
    refuse_capacity_with_pools(args.capacity, pools)
    if args.ignore_offsets:
        note_offsets_ignored(args.input)
    cap = args.capacity if args.capacity is not None else "auto"
    pipeline = parse_pipeline(args.pipeline)
    sched = graph = None
    from experiments.cli.symbolic_input import symbolic_cli_problem

    symbolic, valid_for = symbolic_cli_problem(args, cap)  # sizes in named dims, or (None, None)
    joint = args.planner == "joint"  # the joint optimiser's own offsets (not a registered planner)
    if joint and args.scheduler != "joint":
        got = "no --scheduler" if args.scheduler is None else f"--scheduler {args.scheduler}"
        raise ValueError("--planner joint takes the joint optimiser's own offsets: it needs "
                         f"--scheduler joint (got {got})")
    if args.scheduler_param and args.scheduler is None:
        raise ValueError("--scheduler-param sets a parameter of --scheduler NAME, and no "
                         "scheduler was given")
    if joint and args.param:
        raise ValueError("--planner joint has no planner parameters (--param); the joint "
                         "optimiser's are set with --scheduler-param NAME=VALUE")
    tflite = str(args.input).endswith(".tflite") or str(args.input).startswith(
        ("wakeword:", "mediapipe:"))
    other = [flag for flag, on in (("--unified", args.unified),
                                   ("a TFLite model (its arena holds the graph input, 16-byte "
                                    "aligned)", tflite)) if on]
    if joint and other:
        raise ValueError("--planner joint: the joint optimiser places the activations of the "
                         f"graph (inputs outside the arena); with {other[0]} plan its "
                         "order with a registered planner (e.g. --planner telamalloc)")
    if joint and pipeline is not None and pools:
        raise ValueError("--planner joint: --pipeline with --pools is not supported (the "
                         "interval model refuses alias groups with pools); drop one of them")
    if symbolic is not None:
        problem = symbolic
    elif args.scheduler is not None:  # graph -> scheduler -> checked order -> lifetimes
        from experiments.cli.schedule import make_scheduler

        what = _not_a_graph(args.input)
        if what:
            raise ValueError(f"--scheduler {args.scheduler}: {args.input} is {what}, not a graph;"
                             " schedulers need a model (.onnx, .tflite, node-link .json or a "
                             "graph workload name)")
        scheduler = make_scheduler(args.scheduler, dict(args.scheduler_param), time_limit_of(args))
        note_time_limit([args.scheduler], args.time_limit, kind="scheduler")
        if joint and pools:  # the joint search assigns the pools itself
            scheduler.set_params(pools=list(pools))
        if joint and pipeline is not None:  # passes first, then the joint search keeps them valid
            problem, sched, graph = joint_pipeline_problem(args.input, scheduler, pipeline,
                                                           parse_overrides(args.override),
                                                           args.size_attr)
        else:
            problem, sched, graph = scheduled_problem(args.input, scheduler, pipeline,
                                                      parse_overrides(args.override),
                                                      args.unified, args.size_attr)
        if cap != "auto":
            problem = problem.with_capacity(cap)
        if pools:
            problem = problem.with_pools(pools)
    elif pipeline is not None:  # graph passes: the model's graph, transformed, then planned
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
        if not args.ignore_offsets:
            note_offsets_pinned(args.input, problem)
    else:
        problem = load_problem(args.input, capacity=cap, unified=args.unified,
                               overrides=parse_overrides(args.override),
                               minimalloc_folder=args.minimalloc_dir, size_attr=args.size_attr)
        if pools:
            problem = problem.with_pools(pools)
    if joint:
        plan = joint_plan(problem, sched, graph)
    else:
        planner = planner_for(args.planner, time_limit_of(args), params_of(args))
        note_time_limit([args.planner], args.time_limit, params_of(args))
        if planner.needs_capacity(problem) and problem.capacity is None and not problem.pools:
            from planners import lower_bound

            problem = problem.with_capacity(lower_bound(problem))
        plan = planner.plan(problem)
    valid = plan.status not in ("infeasible", "timeout", "skipped")
    fits = metrics.fits(plan.arena_size if valid else None, problem.capacity)
    if problem.pools and valid:  # every pool within its capacity, as compare's records say
        from experiments.harness import pools_fit

        fits = pools_fit(plan.arenas, problem.pools)
    written = None
    if args.output and valid:
        write_minimalloc_csv(problem, args.output, plan)
        written = str(args.output)
    out = {
        "input": str(args.input),
        "planner": plan.planner,
        "buffers": problem.n,
        "arena": plan.arena_size if valid else None,
        "lower_bound": report_lower_bound(problem),  # the one bound of plan and check
        **({"pinned_bound": plan.lower_bound} if "pins" in problem.features else {}),
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
    if valid_for is not None and valid:  # symbolic sizes: the dim values these offsets serve
        out["valid_for"] = valid_for
    if sched is not None:  # the order: its scheduler, status, proved bound and peak (bytes)
        from scheduling.lifetimes import peak_live_bytes

        out["scheduler"] = sched.scheduler
        out["schedule_status"] = sched.status
        # with --pipeline both describe the scheduled graph before the passes, which may lower
        # the live bytes (fusion, in-place): the keys say so rather than sit above the arena
        tail = "" if pipeline is None else "_before_pipeline"
        if joint and pipeline is not None:  # the joint search ordered the transformed graph
            tail = "_without_aliases"
        out["order_bound" + tail] = sched.bound
        # two statuses side by side read as a contradiction (status optimal, arena above the
        # order bound) unless each says what it is about: one line after status, one field
        if joint:
            scope = ("status: the joint plan's arena vs best_bound (joint_bound), a bound over "
                     "every (order, layout) pair")
        else:
            scope = (f"status: the plan of this order's lifetimes (arena vs best_bound); "
                     f"schedule_status, order_bound{tail}: this order's peak vs every order's "
                     "(another order may plan smaller)")
        keys = list(out)
        at = keys.index("status") + 1
        out = {**{k: out[k] for k in keys[:at]}, "status_scope": scope,
               **{k: out[k] for k in keys[at:]}}
        out["peak_bytes" + tail] = peak_live_bytes(graph, sched.order)
        out["schedule_seconds"] = round(sched.seconds, 6)
        if args.scheduler_param:
            out["scheduler_params"] = dict(args.scheduler_param)
        if "joint_status" in sched.info:  # the joint search: its bound and its starting pair
            out["joint_bound"] = sched.info["joint_bound"]
            out["joint_status"] = sched.info["joint_status"]
            out["start_scheduler"] = sched.info["start_scheduler"]
            out["start_arena"] = sched.info["start_arena"]
        if args.json:  # the order itself (operator names, step k runs order[k]), as `schedule`
            out["order"] = list(sched.order)
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
        from scheduling.tflite_signatures import tflite_signatures

        sigs = tflite_signatures(tfl)
        if len(sigs) > 1:  # this plan is one method's; say so, and what plans them all
            main = [s.key for s in sigs if s.subgraph == 0]
            out["signatures"] = (f"{len(sigs)} ({', '.join(s.key for s in sigs)}): this plan is "
                                 f"the main subgraph's{' (' + main[0] + ')' if main else ''} "
                                 f"alone; `memplan plan-shared {tfl}` plans every signature in "
                                 "one arena")
        if sched is not None:  # TFLite Micro runs the operators as the file stores them
            out["runtime_order"] = ("file order (as TFLite Micro runs the model; tflm_head and "
                                    "runtime_arena are not for the --scheduler order)")
    if args.json:
        print(json.dumps(out))
    else:
        w = 12 if sched is None else max(12, *map(len, out))  # schedule keys are longer
        for k, v in out.items():
            if k == "time_limit":  # as view and export say it: "10 s", or "no time limit"
                v = time_limit_text(v).removeprefix("time limit ")
            print(f"{k:{w}s} {'-' if v is None or v == '' else v}")
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
