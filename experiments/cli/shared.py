"""``memplan plan-shared MANIFEST.json``: plan several problems into one arena with shared buffers.

The manifest (:func:`planners.shared_arena.read_shared`) names one MiniMalloc CSV per problem
(a method of a program, a model of a pool) and the ids of the shared buffers, which keep one
offset in every problem; the arena is the maximum over problems (bytes). ``--mode colocate``
(default) is the exact reduction, ``--mode hull`` the simple one
(:mod:`planners.shared_arena`); ``--refine`` then re-plans each problem with the shared
buffers pinned (:func:`planners.shared_arena.refine_pinned`). ``-o OUT.json`` writes the plan as a manifest with one CSV per
problem (offset column); ``--json`` prints one JSON object.

``memplan plan FILE.json`` routes here too (:func:`plan_json_problem`): a concurrent problem
(:class:`planners.concurrent.ConcurrentProblem` JSON, format ``memplan-concurrent``) is planned by
:func:`planners.concurrent.plan_concurrent` and printed as ``plan`` prints a plan, its
``lower_bound`` the maximum-weight antichain (:func:`planners.concurrent.concurrent_lower_bound`);
a shared-arena manifest is planned as ``plan-shared`` plans it. :func:`print_kind_table` is the
problem-kind half of ``memplan list``'s capability table.
"""

from __future__ import annotations

import json
import sys

from experiments.cli.common import add_param_flag, add_time_limit_flag, params_of, time_limit_of

__all__ = ["COMMANDS", "add_parsers", "run", "plan_json_problem", "print_kind_table",
           "read_shared_input"]

COMMANDS = ("plan-shared",)


def add_parsers(sub) -> None:
    """Add the ``plan-shared`` subcommand to ``sub`` (argparse subparsers)."""
    p = sub.add_parser("plan-shared", help="plan several problems into one arena with shared "
                                           "buffers (a JSON manifest of MiniMalloc CSVs)")
    p.add_argument("input", help="shared-arena manifest .json (format memplan-shared-arena), or "
                                 "a .tflite model with several signatures (one problem per "
                                 "signature, resource variables shared)")
    p.add_argument("--planner", default="greedy_by_size",
                   help="registered planner (default greedy_by_size; see `memplan list`)")
    p.add_argument("--mode", choices=("colocate", "hull"), default=None,
                   help="colocate: exact reduction (shared buffers as colocation groups); hull: "
                        "a shared buffer live from its first to its last use (default: the "
                        "planner's shared_buffers capability, `memplan list`; colocate)")
    p.add_argument("--refine", action="store_true",
                   help="then re-plan each problem alone with the shared buffers pinned where "
                        "the plan put them, keeping the better plan per problem (planners "
                        "that handle pins)")
    add_time_limit_flag(p)
    add_param_flag(p)
    p.add_argument("-o", "--output", help="write the plan as a manifest .json with one CSV per "
                                          "problem (offset column) beside it")
    from experiments.cli.flags import add_json_flag

    add_json_flag(p)


def run(args) -> int:
    """Run ``plan-shared``; returns the exit status (0)."""
    from planners.registry import planner_for
    from planners.shared_arena import plan_shared, refine_pinned, write_shared

    sp = read_shared_input(args.input)
    planner = planner_for(args.planner, time_limit_of(args), params_of(args))
    r = plan_shared(sp, planner, mode=args.mode)
    if args.refine:
        r = refine_pinned(r, planner)
    written = None
    if args.output:
        written = str(write_shared(sp, args.output, r)[-1])
    out = {
        "input": str(args.input), "planner": r.info["planner"], "mode": r.mode,
        "arena": r.arena, "lower_bound": r.info["lower_bound"], "status": r.status,
        "problems": {n: {"arena": q.arena_size, "lower_bound": q.lower_bound}
                     for n, q in r.plans.items()},
        "shared_offsets": r.shared_offsets(), "output": written,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{len(sp.problems)} problems, {len(sp.shared)} shared buffers, planner "
              f"{out['planner']} ({r.mode}): arena {r.arena} bytes (max over problems; lower "
              f"bound {out['lower_bound']}), status {r.status}")
        for n, q in out["problems"].items():
            print(f"  {n}: arena {q['arena']} bytes, lower bound {q['lower_bound']}")
        for sid, off in out["shared_offsets"].items():
            print(f"  shared {sid}: offset {off}")
        if written:
            print(f"wrote {written}")
    return 0


def read_shared_input(path):
    """The :class:`planners.shared_arena.SharedArenaProblem` of ``path``: a ``.tflite`` model's
    signatures (:func:`scheduling.tflite_signatures.tflite_shared_problem`; resource variables
    shared, 16-byte alignment, inputs in the arena) or a shared-arena manifest
    (:func:`planners.shared_arena.read_shared`). Raises what those raise (one line each)."""
    if str(path).endswith(".tflite"):
        from scheduling.tflite_signatures import tflite_shared_problem

        return tflite_shared_problem(path)
    from planners.shared_arena import read_shared

    return read_shared(path)


def print_kind_table(planners) -> None:
    """Print each planner's problem-kind capabilities (``{name: class}``,
    :meth:`planners.base.Planner.kind_capabilities`), one row per planner."""
    from planners.base import KIND_MODES, PROBLEM_KINDS

    modes = "; ".join(f"{k}: {'/'.join(m)}" for k, m in KIND_MODES.items())
    print(f"planner problem kinds (planners.base.KIND_MODES: {modes}):")
    print((f"  {'planner':26s} " + " ".join(f"{k:15s}" for k in PROBLEM_KINDS)).rstrip())
    for name, cls in planners.items():
        caps = cls.kind_capabilities()
        print((f"  {name:26s} " + " ".join(f"{caps[k]:15s}" for k in PROBLEM_KINDS)).rstrip())


def _json_format(path: str) -> str | None:
    """The ``format`` tag of JSON object file ``path`` (``None``: not ``.json``, not a file, not
    a JSON object, or no tag: e.g. a node-link graph, read as a model)."""
    from pathlib import Path

    if not path.endswith(".json") or not Path(path).is_file():
        return None
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return doc.get("format") if isinstance(doc, dict) else None


def _refuse_flags(args, what: str, allowed: tuple) -> None:
    """``ValueError`` naming the first ``plan`` flag given that ``what`` does not take."""
    flags = {"--scheduler": args.scheduler is not None, "--scheduler-param": bool(
        args.scheduler_param), "--pipeline": str(args.pipeline) not in ("none", "None"),
        "--pools": bool(args.pools), "--unified": args.unified, "--override": bool(
            args.override), "--ignore-offsets": args.ignore_offsets,
        "--capacity": args.capacity is not None, "-o": bool(args.output)}
    bad = [f for f, on in flags.items() if on and f not in allowed]
    if bad:
        raise ValueError(f"{args.input} is {what}; {bad[0]} does not apply to it")


def plan_json_problem(args) -> int | None:
    """``memplan plan`` of a JSON problem file: the exit status, or ``None`` when
    ``args.input`` is not a concurrent problem or a shared-arena manifest (module docstring).

    A concurrent problem takes ``--planner``, ``--param``, ``--time-limit``, ``--capacity``
    (bytes) and ``--json``; it prints ``plan``'s keys (``lower_bound``: the max-weight antichain,
    bytes) plus ``streams``, ``edges`` and ``route``. A refusal (route ``refused``, status
    ``skipped``) raises :class:`planners.errors.FeatureError` (one line naming the planner and
    the feature); with a capacity, no plan within it returns 1. A manifest runs ``plan-shared``
    (mode from the planner's table, no refinement; ``-o`` writes its manifest).

    Raises
    ------
    ValueError
        A flag the problem kind does not take (named), an unknown planner or parameter.
    planners.errors.ProblemError
        A malformed concurrent problem (naming the rule).
    """
    from pathlib import Path

    if not str(args.input).endswith(".json"):  # nothing imported for other inputs (start-up)
        return None
    from planners.concurrent import JSON_FORMAT, ConcurrentProblem, plan_concurrent
    from planners.errors import FeatureError
    from planners.shared_arena import FORMAT

    fmt = _json_format(str(args.input))
    if fmt == FORMAT:
        _refuse_flags(args, "a shared-arena manifest (memplan plan-shared)", ("-o",))
        args.mode, args.refine = None, False
        return run(args)
    if fmt != JSON_FORMAT:
        return None
    _refuse_flags(args, "a concurrent problem (planners.concurrent)", ("--capacity",))
    cp = ConcurrentProblem.from_json(Path(args.input).read_text(encoding="utf-8"))
    if args.capacity is not None:
        cp = ConcurrentProblem(cp.buffers, cp.edges, cp.alignment, args.capacity, cp.name)
    r = plan_concurrent(cp, args.planner, time_limit_of(args), params_of(args))
    if r.route == "refused" and r.status == "skipped":
        raise FeatureError(r.info["reason"])
    valid = r.offsets is not None
    fits = None if cp.capacity is None or not valid else r.arena <= cp.capacity
    out = {"input": str(args.input), "planner": r.planner, "buffers": cp.n, "streams": cp.k,
           "edges": len(cp.edges), "arena": r.arena, "lower_bound": r.lower_bound,
           "capacity": cp.capacity, "status": r.status, "valid": valid, "fits": fits,
           "seconds": round(r.seconds, 6), "route": r.route}
    if not valid:
        out["reason"] = r.info.get("reason")
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:12s} {'-' if v is None or v == '' else v}")
    if cp.capacity is not None and not fits:
        print(f"memplan: error: planner {r.planner!r} found no plan within the capacity "
              f"{cp.capacity} bytes (status {r.status})", file=sys.stderr)
        return 1
    return 0
