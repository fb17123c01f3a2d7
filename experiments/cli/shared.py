"""``memplan plan-shared MANIFEST.json``: plan several problems into one arena with shared buffers.

The manifest (:func:`planners.shared_arena.read_shared`) names one MiniMalloc CSV per problem
(a method of a program, a model of a pool) and the ids of the shared buffers, which keep one
offset in every problem; the arena is the maximum over problems (bytes). ``--mode colocate``
(default) is the exact reduction, ``--mode hull`` the simple one
(:mod:`planners.shared_arena`); ``--refine`` then re-plans each problem with the shared
buffers pinned (:func:`planners.shared_arena.refine_pinned`). ``-o OUT.json`` writes the plan as a manifest with one CSV per
problem (offset column); ``--json`` prints one JSON object.
"""

from __future__ import annotations

import json

from experiments.cli.common import add_param_flag, add_time_limit_flag, params_of, time_limit_of

__all__ = ["COMMANDS", "add_parsers", "run"]

COMMANDS = ("plan-shared",)


def add_parsers(sub) -> None:
    """Add the ``plan-shared`` subcommand to ``sub`` (argparse subparsers)."""
    p = sub.add_parser("plan-shared", help="plan several problems into one arena with shared "
                                           "buffers (a JSON manifest of MiniMalloc CSVs)")
    p.add_argument("input", help="shared-arena manifest .json (format memplan-shared-arena)")
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
    from planners.shared_arena import plan_shared, read_shared, refine_pinned, write_shared

    sp = read_shared(args.input)
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
