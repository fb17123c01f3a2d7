"""``memplan compare``: run planners (or schedulers, or graph passes) on workloads and write the
records, the stored plans, the Markdown report and the figures drawn from the records.

* planners (default): ``compare.csv`` / ``.parquet`` (:func:`experiments.harness.compare`),
  ``compare_plans.json`` (offsets), ``compare.md`` (:mod:`experiments.report.compare`), figures
  (:func:`experiments.report.figures.compare_figures`). With ``--pools NAME=BYTES[:ALIGN],...``
  every workload's problem gets those memory pools (preference order): the records gain
  ``pools``, ``arenas`` and ``arena_NAME`` per pool (:data:`experiments.harness.POOL_COLUMNS`;
  ``arena`` is their sum), the stored plans each buffer's pool, and the layout figures one panel
  per pool with its capacity.
* ``--schedulers``: ``compare_sched.csv`` / ``.parquet`` / ``.md`` and the stored schedules
  (:mod:`experiments.sched_compare`); ``--scheduler-param NAME=VALUE`` goes to every scheduler
  that has the parameter (:func:`experiments.cli.schedule.scheduler_params_for`; the ``params``
  column records what each ran with).
* ``--pipeline``: ``compare_pipeline.csv`` / ``.md`` and ``compare_pipeline_plans.json``
  (:mod:`experiments.transforms_compare`).
* ``--shared FILE ...``: multi-method inputs (a ``.tflite`` with several signatures, a
  shared-arena manifest ``.json``), each planned into one shared arena by every planner:
  ``compare_shared.csv`` / ``.md`` (:mod:`experiments.shared_compare`).

Every finished run is on disk (atomically, :mod:`experiments.records`) before the next starts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from experiments.cli.common import (
    add_param_flag,
    add_pool_flags,
    add_time_limit_flag,
    note_time_limit,
    params_of,
    parse_pipeline,
    split_list,
    time_limit_of,
)
from experiments.cli.flags import (
    add_minimalloc_dir_flag,
    add_names_flag,
    add_override_flag,
    add_pipeline_flag,
    add_scheduler_param_flag,
    add_size_attr_flag,
)

__all__ = ["COMMANDS", "add_parsers", "run"]

COMMANDS = ("compare",)


def add_parsers(sub) -> None:
    """Add the ``compare`` subcommand to ``sub`` (argparse subparsers)."""
    c = sub.add_parser("compare", help="compare planners on workloads; write tables and figures")
    add_names_flag(c, "--planners")
    add_names_flag(c, "--workloads")
    add_override_flag(c)
    add_minimalloc_dir_flag(c, "; unless --workloads names minimalloc:NAME workloads, every "
                               "MiniMalloc CSV in the folder is also run")
    add_time_limit_flag(c)
    c.add_argument("--timing-repeats", type=int, default=3, metavar="N",
                   help="runs under 1 s are planned N times after a warm-up of the worker; "
                        "seconds is their median, seconds_min their minimum (default 3)")
    add_param_flag(c)  # given to every planner that has the parameter
    c.add_argument("--out", default="memplan-results",
                   help="output folder (default memplan-results/; `make run` writes results/)")
    c.add_argument("--no-plots", action="store_true", help="skip the figures")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    add_names_flag(c, "--schedulers")
    add_scheduler_param_flag(c, help_tail="; here: given to every --schedulers scheduler that "
                                          "has the parameter (one none of them has is refused)")
    add_pipeline_flag(c, "; here: record peak and arena before and after each pass (graph "
                         "workloads) in compare_pipeline.csv, no pass: the planner comparison")
    c.add_argument("--allow-peak-increase", action="store_true",
                   help="with --pipeline: apply fusions that raise the peak (refused by default)")
    add_size_attr_flag(c)
    c.add_argument("--rv64", action="store_true",
                   help="add emulated RV64 cost columns (rv64_instructions, rv64_cycles_u74, "
                        "rv64_cycles_c906) for planners with a C core")
    c.add_argument("--jobs", type=int, default=1,
                   help="worker processes for the (workload, planner) runs (default 1)")
    c.add_argument("--style", choices=("default", "paper"), default="default",
                   help="figure style: default, or paper (3.5 / 7.16 in wide, 8-9 pt, PDF "
                        "with embedded fonts, colour-blind-safe palette)")
    c.add_argument("--shared", nargs="+", metavar="FILE", default=None,
                   help="multi-method inputs instead of workloads: .tflite models with several "
                        "signatures (resource variables shared) or shared-arena manifests "
                        "(.json); each is planned into one arena by every --planners planner "
                        "(compare_shared.csv / .md)")
    add_pool_flags(c, ignore_offsets=False)  # planner comparison only (not with --schedulers
    # or --pipeline): columns pools, arenas, arena_NAME; arena is the sum over the pools


def run(args) -> int:
    """Run ``memplan compare`` (planners, ``--schedulers`` or ``--pipeline``); the exit status.
    ``--pools`` text is checked first (:func:`planners.io.parse_pools`:
    :class:`planners.errors.ProblemError`, one line, exit 2); it applies to the planner
    comparison only, and with ``--schedulers``, ``--pipeline`` or ``--rv64`` it is refused the
    same way (those compare one arena)."""
    from experiments.cli.common import parse_pools
    from planners.errors import ProblemError

    pools = parse_pools(getattr(args, "pools", None))
    if pools:
        other = [flag for flag, on in (("--schedulers", args.schedulers is not None),
                                       ("--pipeline", parse_pipeline(args.pipeline) is not None),
                                       ("--rv64", args.rv64)) if on]
        if other:
            raise ProblemError(f"--pools applies to the planner comparison only, not with "
                               f"{other[0]} (which measures one arena)")
    if getattr(args, "shared", None):
        other = [flag for flag, on in (("--schedulers", args.schedulers is not None),
                                       ("--workloads", args.workloads is not None),
                                       ("--pipeline", parse_pipeline(args.pipeline) is not None),
                                       ("--rv64", args.rv64)) if on]
        if other:
            raise ValueError(f"--shared compares planners on multi-method inputs; {other[0]} "
                             "does not apply to it")
        return compare_shared_inputs(args)
    if args.schedulers is not None:
        return compare_schedulers(args)
    if args.scheduler_param:
        raise ValueError("--scheduler-param sets a parameter of the --schedulers comparison, "
                         "and no --schedulers was given")
    if parse_pipeline(args.pipeline) is not None:
        return compare_pipeline(args)
    return compare_planners(args)


def compare_shared_inputs(args) -> int:
    """``--shared``: every planner on every multi-method input, one shared arena each; writes
    ``compare_shared.csv`` and ``.md`` after every run; returns 0."""
    import pandas as pd

    from experiments.cli.shared import read_shared_input
    from experiments.harness import default_planners
    from experiments.records import atomic_write, write_csv
    from experiments.shared_compare import SHARED_COLUMNS, compare_shared, shared_markdown
    from planners.io import output_folder
    from planners.registry import check_planner_names

    planners = check_planner_names(split_list(args.planners) or default_planners())
    inputs = {}
    for f in args.shared:  # every input read (and its errors raised) before anything runs
        name = Path(f).name
        if name in inputs:
            raise ValueError(f"--shared: two inputs named {name!r}")
        inputs[name] = read_shared_input(f)
    out = Path(args.out)
    output_folder(out)
    records: list[dict] = []
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=len(inputs) * len(planners), desc="shared", file=sys.stderr)

    def keep(rec):  # every finished run is on disk before the next starts
        records.append(rec)
        df = pd.DataFrame(records, columns=SHARED_COLUMNS)
        write_csv(df, out / "compare_shared.csv")
        atomic_write(out / "compare_shared.md", shared_markdown(df))
        if bar is not None:
            bar.update()

    df = compare_shared(inputs, planners, time_limit=time_limit_of(args), on_record=keep)
    if bar is not None:
        bar.close()
    for name, d in df.groupby("input", sort=False):
        ok = d[d.arena.notna()]
        best = ok.loc[ok.arena.idxmin()] if len(ok) else None
        print(f"{name}: {len(d)} planners, {len(ok)} planned"
              + (f"; best arena {int(best.arena)} bytes ({best.planner}), lower bound "
                 f"{int(best.lower_bound)}" if best is not None else ""))
    print(f"wrote {out / 'compare_shared.csv'} and {out / 'compare_shared.md'}")
    return 0


def compare_planners(args) -> int:
    """Planners on workloads: records, stored plans, Markdown and figures; returns 0."""
    from experiments.cli.common import parse_pools
    from experiments.harness import compare, default_planners, pools_text, records_frame
    from experiments.records import (
        PLANS_FILE,
        atomic_write,
        plan_entry,
        pools_entry,
        read_plans,
        store_problem,
        write_csv,
        write_parquet,
        write_plans,
    )
    from experiments.report.compare import compare_markdown
    from experiments.workloads import resolve_problems
    from planners.registry import check_planner_names

    planners = check_planner_names(split_list(args.planners) or default_planners())
    if args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    if args.timing_repeats < 1:
        raise ValueError(f"--timing-repeats must be >= 1, got {args.timing_repeats}")
    pools = parse_pools(getattr(args, "pools", None))
    problems = resolve_problems(split_list(args.workloads), minimalloc_dir=args.minimalloc_dir,
                                size_attr=args.size_attr, overrides=args.override,
                                pools=pools)  # a CSV's own 'pools' column is read with them
    from experiments.cli.check import note_offsets_pinned
    from experiments.workloads import workload_key

    for spec in split_list(args.workloads) or []:  # a CSV's offset column: pins (MiniMalloc's)
        note_offsets_pinned(spec, problems.get(workload_key(spec)), "compare")
    if pools:  # every problem must take the pools: an error before anything runs or is written
        from planners.errors import ProblemError

        for w, p in problems.items():
            try:
                p.with_pools(pools)
            except ProblemError as e:
                raise ProblemError(f"workload {w!r} cannot take --pools: {e}") from None
    out = Path(args.out)
    from planners.io import output_folder  # OutputError: one line naming the folder

    output_folder(out)
    csv_path = out / "compare.csv"
    records: list[dict] = []
    entries: list[dict] = []
    stored = {w: store_problem(out, p, workload=w) for w, p in problems.items()}  # once each

    def keep(rec):  # every finished run is on disk before the next starts
        records.append(rec)
        write_csv(records_frame(records), csv_path)

    extra = {"pools": pools_entry(pools)} if pools else None  # problems stored without pools

    def keep_plan(rec, offsets):  # the offsets (and pools) beside the record, for the figures
        entries.append(plan_entry(rec, offsets))
        write_plans(out, stored, entries, extra=extra)

    if split_list(args.planners):  # the default set mixes solvers and heuristics on purpose
        note_time_limit(planners, args.time_limit)
    df = compare(problems, planners, time_limit=time_limit_of(args), progress=not args.quiet,
                 on_record=keep, jobs=args.jobs, on_plan=keep_plan, params=params_of(args),
                 repeats=args.timing_repeats, pools=pools)
    if args.rv64:
        from experiments.enrich import add_rv64_columns

        df, msg = add_rv64_columns(df, problems, jobs=args.jobs)
        if msg:
            print(f"memplan: {msg}", file=sys.stderr)
    write_csv(df, csv_path)
    parquet = write_parquet(df, out / "compare.parquet")
    figures: list[Path] = []
    if not args.no_plots:
        from experiments import plots
        from experiments.report.figures import compare_figures

        stored_problems, stored_plans = read_plans(out)  # figures from the records alone
        with plots.style(args.style):
            figures = compare_figures(df, stored_problems, stored_plans, out / "figures")
    command = "memplan " + " ".join(sys.argv[1:]) if sys.argv[1:] else "memplan compare"
    atomic_write(out / "compare.md", compare_markdown(df, out, figures, command,
                                                      time_limit=time_limit_of(args)))
    ok = int(df["valid"].sum())
    wrote = [str(csv_path), str(out / PLANS_FILE)] + ([str(parquet)] if parquet else []) + \
        [str(out / "compare.md")] + ([f"{out / 'figures'}/"] if figures else [])
    from experiments.metrics import coverage_note, planner_summary

    summary = planner_summary(df)  # the table compare.md holds, with each planner's coverage
    where = f", pools {pools_text(pools)}" if pools else ""
    print(f"per planner (time limit {time_limit_of(args):g} s, pipeline none{where}):")
    print(summary.reset_index().to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(coverage_note(summary))
    print(f"{len(df)} runs, {ok} valid plans; wrote {', '.join(wrote)}")
    return 0


def compare_schedulers(args) -> int:
    """Schedulers on graph workloads: rows, stored schedules, Markdown and figures; returns 0."""
    import pandas as pd

    from experiments.records import (
        atomic_write,
        read_schedules,
        write_csv,
        write_parquet,
        write_schedules,
    )
    from experiments.report.compare import sched_markdown
    from experiments.sched_compare import SCHED_COLUMNS, compare_schedules
    from experiments.workloads import resolve_graphs
    from scheduling.schedulers.registry import check_scheduler_names

    schedulers = check_scheduler_names(
        split_list(args.schedulers) or ["file_order", "dfs", "min_live", "earliest_free",
                                        "list_xla", "lpmf", "critical_path", "best_of"])
    planners = split_list(args.planners) or ["greedy_by_size"]
    if split_list(args.schedulers):  # named ones, as compare_planners notes named planners
        note_time_limit(schedulers, args.time_limit, kind="scheduler")
    if split_list(args.planners):
        note_time_limit(planners, args.time_limit)
    from experiments.cli.schedule import scheduler_params_for  # checked before any graph loads

    sched_params = scheduler_params_for(schedulers, dict(args.scheduler_param),
                                        time_limit_of(args))
    graphs = resolve_graphs(split_list(args.workloads), size_attr=args.size_attr,
                            overrides=args.override)
    out = Path(args.out)
    from planners.io import output_folder  # OutputError: one line naming the folder

    output_folder(out)
    frames = []
    found: list = []
    for name, g in graphs.items():  # one workload at a time, each on disk before the next
        frames.append(compare_schedules({name: g}, schedulers, planners,
                                        time_limit=time_limit_of(args),
                                        scheduler_params=sched_params,
                                        on_schedule=lambda r, o, p: found.append((r, o, p))))
        write_csv(pd.concat(frames, ignore_index=True)[SCHED_COLUMNS], out / "compare_sched.csv")
        if not args.quiet:
            print(f"scheduled {name}", file=sys.stderr)
    df = pd.concat(frames, ignore_index=True)
    write_schedules(out, found)
    write_parquet(df[SCHED_COLUMNS], out / "compare_sched.parquet")
    if not args.no_plots:
        from experiments import plots
        from experiments.report.figures import sched_figures

        with plots.style(args.style):  # from the stored schedules alone
            sched_figures(df, read_schedules(out), schedulers, out / "figures")
    atomic_write(out / "compare_sched.md", sched_markdown(df))
    print(f"{len(df)} rows; wrote {out / 'compare_sched.csv'}, {out / 'compare_sched.md'}")
    return 0


def compare_pipeline(args) -> int:
    """Graph passes on models: per-stage rows, stored stages and Markdown; returns 0."""
    import pandas as pd

    from experiments.cli.transforms import pipeline_params
    from experiments.records import atomic_write, store_problem, write_csv
    from experiments.report.compare import pipeline_markdown
    from experiments.transforms_compare import BENCH_MODELS
    from experiments.transforms_compare import compare_pipeline as run_pipeline
    from experiments.workloads import load_graph, parse_overrides
    from planners import MemplanError
    from planners.registry import check_planner_names
    from scheduling.transforms import parse_pipeline

    parse_pipeline(args.pipeline)  # unknown pass names: an error before anything runs
    planners = check_planner_names(split_list(args.planners) or ["greedy_by_size"])
    models = split_list(args.workloads) or list(BENCH_MODELS)
    out = Path(args.out)
    from planners.io import output_folder  # OutputError: one line naming the folder

    output_folder(out)
    rows: list[dict] = []
    stages: list[dict] = []

    def keep_stage(rec, problem, plan, order):  # offsets and order of every stage, for figures
        ok = plan.status not in ("infeasible", "timeout", "skipped")
        stages.append({"model": rec["model"], "stage": rec["stage"], "pass": rec["pass"],
                       "planner": rec["planner"], "status": plan.status,
                       "arena": rec["arena"], "order": order,
                       "offsets": plan.offsets.tolist() if ok else None,
                       "problem": store_problem(out, problem)})
        atomic_write(out / "compare_pipeline_plans.json",
                     json.dumps({"stages": stages}, sort_keys=True, separators=(",", ":")))

    for m in models:  # each model's records are on disk before the next starts
        for p in planners:
            try:
                model = load_graph(m, overrides=parse_overrides(args.override)) \
                    if args.override else m
                rows += run_pipeline(model, args.pipeline, p, pipeline_params(args),
                                     time_limit=time_limit_of(args), on_plan=keep_stage)
            except (MemplanError, ValueError) as e:  # a failing model must not lose the others
                rows.append({"model": m, "planner": p, "status": "error", "error": str(e)})
            write_csv(pd.DataFrame(rows), out / "compare_pipeline.csv")
        if not args.quiet:
            print(f"transformed {m}", file=sys.stderr)
    df = pd.DataFrame(rows)
    atomic_write(out / "compare_pipeline.md", pipeline_markdown(df, args.pipeline))
    print(f"{len(df)} rows; wrote {out / 'compare_pipeline.csv'}, {out / 'compare_pipeline.md'}")
    return 0
