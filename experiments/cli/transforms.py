"""``memplan export``: the execution plan of a model after a pipeline of graph passes.

``memplan export MODEL --pipeline simplify,views,fuse,inplace --planner greedy_by_size
-o plan.json`` (the pipeline defaults to ``none``, the model as written, as on every command:
:data:`experiments.cli.common.DEFAULT_PIPELINE`) writes the operator sequence, the buffer layout table, the reuse table and the
arena size (:func:`scheduling.transforms.export.execution_plan`); ``--format c-header`` writes a C99
header instead (:func:`scheduling.transforms.export.c_header`), ``--format chrome-trace`` a Chrome /
Perfetto trace (:func:`scheduling.transforms.export.chrome_trace`: one track per buffer, sorted by
offset, one complete event per buffer over its steps, ``args`` offset and size), and
``--format tflm-offline -o planned.tflite`` (MODEL a ``.tflite`` file or ``wakeword:NAME``; no
passes; ``--scheduler`` reorders the operators when safe, ``--scheduler-param`` sets its
parameters) writes the model with the plan in its
``OfflineMemoryAllocation`` metadata for TFLite Micro (:mod:`experiments.runtimes.tflm.offline`). MODEL
is anything
:func:`experiments.workloads.load_graph` accepts. A fusion that raises the peak of live bytes is
refused (one line on stderr names each, with the peak before and after, in bytes) unless
``--allow-peak-increase`` is given (:func:`scheduling.transforms.fuse`). ``--pools
sram=256k:16,psram=8M`` plans into memory pools as ``memplan plan --pools`` does
(:meth:`planners.Problem.with_pools`, validated by :func:`planners.validate.check_plan` with the
pools): the json gains ``pools``, ``arenas`` and each buffer's ``pool``, the C header one
``<PREFIX>_ARENA_<POOL>_BYTES`` per pool and ``<prefix>_buffer_pool[]``, the trace one process
per pool; ``tflm-offline`` (one TFLite Micro arena) refuses it, and a plan over a pool's
capacity is an error (exit 1), as on ``plan``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["COMMANDS", "add_parsers", "run", "pipeline_params", "report_peak_refusals"]

#: Sub-command names handled by :func:`run`.
COMMANDS = ("export",)


def add_parsers(subparsers) -> None:
    """Add the ``export`` sub-command to an argparse ``subparsers`` object."""
    e = subparsers.add_parser(
        "export", help="export the execution plan (operators, buffer layout, reuse, arena)"
    )
    e.add_argument("model", help="ONNX light model name, mobilenet_v1[:alpha:res:dtype], "
                                 "mobilenet_v2[...], mobilenet_v1_first_layer, seed000 or PATH.onnx")
    from experiments.cli.common import add_param_flag, add_pipeline_flag, add_time_limit_flag

    add_pipeline_flag(e)  # tflm-offline plans the model as written and takes none
    e.add_argument("--allow-peak-increase", action="store_true",
                   help="apply fusions that raise the peak of live bytes (refused by default)")
    e.add_argument("--planner", default="greedy_by_size",
                   help="registered planner (default greedy_by_size; see `memplan list`)")
    e.add_argument("--alignment", type=int, default=1, help="offset alignment in bytes")
    e.add_argument("--unified", action="store_true",
                   help="one arena with weights and inputs as residents (seed 000 layout)")
    add_time_limit_flag(e)
    add_param_flag(e)
    from experiments.cli.flags import add_override_flag, add_pools_flag

    add_pools_flag(e, ": each buffer gets a pool and each pool its own arena (json: pool, "
                      "arenas; c-header: one arena macro per pool; chrome-trace: one track "
                      "group per pool; not tflm-offline, one TFLite Micro arena)")
    e.add_argument("--format", choices=("json", "c-header", "chrome-trace", "tflm-offline"),
                   default="json",
                   help="json (execution plan), c-header (C99 header), chrome-trace (Trace "
                        "Event Format JSON for ui.perfetto.dev / chrome://tracing: one track per "
                        "buffer sorted by offset, steps as microseconds) or tflm-offline (MODEL "
                        "a .tflite: write the model with the plan in its OfflineMemoryAllocation "
                        "metadata to -o)")
    e.add_argument("--scheduler", default=None,
                   help="tflm-offline: operator order to plan and write (default file_order; "
                        "another order reorders the model's operators when that is safe)")
    from experiments.cli.flags import add_scheduler_param_flag

    add_scheduler_param_flag(e, help_tail="; tflm-offline only, for --scheduler")
    e.add_argument("--prefix", default="memplan", help="C identifier prefix (c-header)")
    e.add_argument("-o", "--output", help="output file (default: stdout)")
    add_override_flag(e)


def pipeline_params(args) -> dict[str, dict[str, bool]]:
    """Per-pass keyword parameters from the options every pipeline command shares:
    ``--allow-peak-increase`` -> ``{"fuse": {"allow_peak_increase": True}}``."""
    if getattr(args, "allow_peak_increase", False):
        return {"fuse": {"allow_peak_increase": True}}
    return {}


def report_peak_refusals(logs, file=None) -> None:
    """One line on ``file`` (default stderr) naming the fusions refused because they raise the
    peak (``refuse`` records with ``reason="raises_peak"`` in the pass logs), if any."""
    refused = [c for lg in logs for c in lg.changes
               if c.get("action") == "refuse" and c.get("reason") == "raises_peak"]
    if not refused:
        return
    items = ", ".join(f"{c['fusion']} {'+'.join(map(str, c['group']))} ({c['peak_before']} -> "
                      f"{c['peak_after']} bytes)" for c in refused)
    print(f"memplan: refused {len(refused)} fusion(s) that raise the peak: {items}; "
          "--allow-peak-increase applies them", file=file or sys.stderr)


def run(args) -> int:
    """Run ``memplan export`` with parsed ``args``; returns the exit status (0 on success).
    Errors (unknown model/pass/planner, bad input) raise :class:`planners.MemplanError` or
    ``ValueError`` for the caller to report."""
    from experiments.cli.common import parse_pools
    from experiments.harness import planner_for
    from experiments.workloads import load_graph, parse_overrides
    from planners.bounds import lower_bound
    from scheduling.transforms import run_pipeline, transformed_problem
    from scheduling.transforms.export import c_header, chrome_trace, execution_plan

    pools = parse_pools(getattr(args, "pools", None))  # ProblemError: one line naming the item
    if args.format == "tflm-offline":
        if pools:
            raise ValueError("--format tflm-offline writes one TFLite Micro arena, so --pools "
                             "has nothing to apply to; drop --pools or use --format json, "
                             "c-header or chrome-trace")
        return _run_tflm_offline(args)
    if getattr(args, "scheduler", None) is not None or getattr(args, "scheduler_param", None):
        flag = "--scheduler" if getattr(args, "scheduler", None) is not None else \
            "--scheduler-param"
        raise ValueError(f"{flag} applies to --format tflm-offline only")
    from experiments.cli.common import (
        note_time_limit,
        params_of,
        parse_pipeline,
        planner_time_limit,
        time_limit_of,
    )
    from experiments.cli.flags import time_limit_text

    # one default on every command (experiments.cli.common.DEFAULT_PIPELINE: the model as
    # written); passes are asked for by name, e.g. --pipeline simplify,views,fuse,inplace
    pipeline = parse_pipeline(args.pipeline)
    g = load_graph(args.model, overrides=parse_overrides(getattr(args, "override", None)))
    g2, logs = run_pipeline(g, pipeline or None, pipeline_params(args))
    report_peak_refusals(logs)
    p = transformed_problem(g2, unified=args.unified, alignment=args.alignment)
    if pools:  # as `memplan plan --pools`: each pool its own capacity and arena
        p = p.with_pools(pools)
    planner = planner_for(args.planner, time_limit_of(args), params_of(args))
    note_time_limit([args.planner], args.time_limit)
    if not pools and getattr(planner, "requires_capacity", False) and p.capacity is None:
        p = p.with_capacity(lower_bound(p))
    plan = planner.plan(p)  # a planner that refuses pools raises (one line)
    if plan.status in ("infeasible", "timeout", "skipped"):
        print(f"memplan: error: planner {args.planner!r} found no plan (status {plan.status})",
              file=sys.stderr)
        return 1
    if pools:
        from planners.validate import check_plan

        check_plan(p, plan.offsets, pools=plan.pools, pool_capacities=False)
        over = [f"{q.name} {plan.arenas[q.name]} > {q.capacity}" for q in p.pools
                if q.capacity is not None and plan.arenas[q.name] > q.capacity]
        if over:
            print(f"memplan: error: planner {args.planner!r} found no plan within the pools' "
                  f"capacities (status {plan.status}; {', '.join(over)} bytes)", file=sys.stderr)
            return 1
    ep = execution_plan(g2, plan, pipeline=pipeline or "")  # c_header writes "" as 'none'
    if args.format == "c-header":
        text = c_header(ep, args.prefix)
    elif args.format == "chrome-trace":
        text = json.dumps(chrome_trace(ep), separators=(",", ":"))
    else:
        text = json.dumps(ep, indent=1)
    if args.output:
        from planners.io import atomic_write  # OutputError: one line naming path and cause

        atomic_write(Path(args.output), text)
        # what was written, as `view` says it (stdout holds nothing else with -o)
        arenas = ("" if not pools else " = " + " + ".join(f"{k} {v}"
                                                         for k, v in plan.arenas.items()))
        print(f"wrote {args.output}: {args.format}, {p.n} buffers, arena {plan.arena_size} bytes"
              f"{arenas} ({plan.planner}, {plan.status}; "
              f"{time_limit_text(planner_time_limit(args.planner, time_limit_of(args), params_of(args)))}"
              f", pipeline {pipeline or 'none'})")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _run_tflm_offline(args) -> int:
    """``memplan export MODEL.tflite --format tflm-offline -o planned.tflite``."""
    from experiments.runtimes.tflm.offline import export_offline

    if not args.output:
        raise ValueError("--format tflm-offline writes a .tflite model: give -o PATH")
    from experiments.cli.common import parse_pipeline, time_limit_of

    if parse_pipeline(args.pipeline):
        raise ValueError("--format tflm-offline plans the model as written: graph passes "
                         f"({args.pipeline}) would change tensors the model does not have")
    if getattr(args, "override", None) or args.unified or args.alignment not in (1, 16):
        raise ValueError("--format tflm-offline takes no --override/--unified, and its "
                         "alignment is TFLite Micro's 16 bytes")
    if getattr(args, "param", None):  # export_offline builds the planner from its name only
        raise ValueError("--format tflm-offline plans with the planner's defaults: "
                         "--planner-param/--param would be ignored; drop it")
    name = getattr(args, "scheduler", None) or "file_order"
    params = dict(getattr(args, "scheduler_param", None) or [])
    if params:  # checked (names and rules) before the model is read, as on `plan --scheduler`
        from experiments.cli.schedule import make_scheduler

        make_scheduler(name, params, time_limit_of(args))
    rep = export_offline(args.model, args.output, args.planner, name, time_limit_of(args),
                         scheduler_params=params)
    print(json.dumps(rep))
    return 0
