"""The ``memplan`` command line.

Commands
--------
``memplan compare``  run planners on workloads; write ``compare.csv``, ``compare.md`` and figures.
``memplan plan INPUT --planner NAME``  plan one MiniMalloc CSV, ONNX file or workload name.
``memplan list``  registered planners and workloads.

Errors in the input (malformed CSV/ONNX, unknown names, impossible capacity) print one line
``memplan: error: ...`` on stderr and exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

__all__ = ["main", "build_parser"]


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for v in values:
        out.extend(x for x in v.split(",") if x)
    return out


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"time limit must be > 0 seconds, got {text}")
    return v


def _capacity(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected bytes (an integer), got {text!r}") from None
    if not 0 <= v < 2**62:
        raise argparse.ArgumentTypeError(f"capacity must be in [0, 2**62) bytes, got {text}")
    return v


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("memplan")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``memplan`` (exposed for documentation and tests)."""
    ap = argparse.ArgumentParser(
        prog="memplan",
        description="Static memory planning for neural-network inference: compare offset planners.",
    )
    ap.add_argument("--version", action="version", version=f"memplan {_version()}")
    sub = ap.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compare", help="compare planners on workloads; write tables and figures")
    c.add_argument("--planners", nargs="*", help="planner names (default: all registered)")
    c.add_argument("--workloads", nargs="*",
                   help="workload names, .csv or .onnx paths (default: bundled ONNX models and seed examples)")
    c.add_argument("--override", action="append", metavar="NAME=DIMS",
                   help="ONNX/TFLite workloads named in --workloads: a symbolic dimension (N=1) "
                        "or a tensor's static shape (input=1,3,224,224); repeatable")
    c.add_argument("--minimalloc-dir",
                   help="also run every MiniMalloc CSV in this folder (only the folder where "
                        "minimalloc:NAME workloads are looked up when --workloads names some)")
    c.add_argument("--time-limit", type=_positive_float, default=10.0,
                   help="seconds per run for planners with a time limit (default 10)")
    c.add_argument("--out", default="memplan-results",
                   help="output folder (default memplan-results/; `make run` writes results/)")
    c.add_argument("--no-plots", action="store_true", help="skip the figures")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.add_argument("--schedulers", nargs="*",
                   help="compare operator schedulers (graph workloads only): one row per "
                        "(workload, scheduler, planner) in compare_sched.csv")
    c.add_argument("--pipeline",
                   help="graph passes, e.g. simplify,views,fuse,inplace: record peak and arena "
                        "before and after each pass (graph workloads) in compare_pipeline.csv")
    c.add_argument("--allow-peak-increase", action="store_true",
                   help="with --pipeline: apply fusions that raise the peak (refused by default)")
    c.add_argument("--size-attr", default="cost_ram",
                   help="node-link .json workloads: the node attribute with the output bytes "
                        "(default cost_ram)")
    c.add_argument("--rv64", action="store_true",
                   help="add emulated RV64 cost columns (rv64_instructions, rv64_cycles_u74, "
                        "rv64_cycles_c906) for planners with a C core")
    c.add_argument("--jobs", type=int, default=1,
                   help="worker processes for the (workload, planner) runs (default 1)")
    c.add_argument("--style", choices=("default", "paper"), default="default",
                   help="figure style: default, or paper (3.5 / 7.16 in wide, 8-9 pt, PDF "
                        "with embedded fonts, colour-blind-safe palette)")

    p = sub.add_parser("plan", help="plan one problem (MiniMalloc .csv, .onnx, or workload name)")
    p.add_argument("input", help="MiniMalloc .csv, .onnx or .tflite file, or a workload name "
                                 "(see `memplan list`)")
    p.add_argument("--planner", default="greedy_by_size",
                   help="registered planner (default greedy_by_size; see `memplan list`)")
    p.add_argument("--capacity", type=_capacity, default=None,
                   help="arena capacity in bytes (default: from a NAME.CAPACITY.csv file name)")
    p.add_argument("--time-limit", type=_positive_float, default=None,
                   help="seconds (planners with a time limit)")
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

    r = sub.add_parser("rv64", help="run a planner's allocator core as emulated RV64 machine code")
    r.add_argument("input", help="MiniMalloc .csv, .onnx, or workload name (see `memplan list`)")
    r.add_argument("--planner", default="greedy_in_order",
                   help="one of the planners with a C core (greedy_in_order, first_fit, best_fit, "
                        "greedy_by_size, freelist_bump) or greedy_by_size_tree (greedy_by_size's "
                        "offsets, faster core)")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--override", action="append", metavar="NAME=DIMS",
                   help="ONNX/TFLite: a symbolic dimension (N=1) or a tensor's static shape "
                        "(input=1,3,224,224); repeatable")

    sub.add_parser("list", help="list registered planners and workloads")
    for ext in _extensions():
        ext.add_parsers(sub)
    return ap


def _extensions():
    """Command modules that add subcommands: each has ``add_parsers(subparsers)``, ``COMMANDS``
    and ``run(args) -> int``."""
    from experiments.cli import budget, check, schedule, sweep, transforms, view

    return [sweep, transforms, budget, schedule, check, view]


def _summary(doc: str | None, width: int = 96) -> str:
    """First paragraph of a docstring on one line, cut to ``width`` characters."""
    para = " ".join((doc or "").strip().split("\n\n")[0].split())
    return para if len(para) <= width else para[: width - 1].rstrip() + "…"


def _cmd_list(args) -> int:
    from experiments.workloads import default_workloads
    from planners.registry import PLANNERS

    print("planners:")
    for name, cls in PLANNERS.items():
        print(f"  {name:26s} {_summary(cls.__doc__)}")
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


def _cmd_plan(args) -> int:
    from experiments.cli.check import note_offsets_ignored
    from experiments.harness import planner_for
    from experiments.workloads import load_problem, parse_overrides
    from planners import write_minimalloc_csv

    note_offsets_ignored(args.input)
    problem = load_problem(args.input, capacity=args.capacity if args.capacity is not None else "auto",
                           unified=args.unified, overrides=parse_overrides(args.override),
                           minimalloc_folder=args.minimalloc_dir, size_attr=args.size_attr)
    planner = planner_for(args.planner, args.time_limit)
    if getattr(planner, "requires_capacity", False) and problem.capacity is None:
        from planners import lower_bound

        problem = problem.with_capacity(lower_bound(problem))
    plan = planner.plan(problem)
    valid = plan.status not in ("infeasible", "timeout", "skipped")
    fits = None if problem.capacity is None or not valid else plan.arena_size <= problem.capacity
    if args.output and valid:
        write_minimalloc_csv(problem, args.output, plan)
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
    }
    if plan.status == "skipped":  # the planner declined to build its model: say why
        out["reason"] = plan.info.get("reason")
    tfl = str(args.input) if str(args.input).endswith(".tflite") else None
    if tfl is None and str(args.input).startswith(("wakeword:", "mediapipe:")):
        from experiments.workloads import tflite_model_files

        tfl = tflite_model_files().get(str(args.input))
    if tfl is not None:  # TFLite Micro: the whole arena its interpreter needs (head + tail)
        from experiments.tflm.oracle import runtime_arena

        out.update(runtime_arena(tfl))
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:12s} {'-' if v is None or v == '' else v}")
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
    from planners.registry import PLANNERS

    if args.planner not in PLANNERS and args.planner not in rv64.CORE_NAMES:
        raise ValueError(f"unknown planner {args.planner!r}; registered planners: {', '.join(PLANNERS)}")
    if args.planner not in rv64.CORE_NAMES:
        raise ValueError(
            f"planner {args.planner!r} has no RV64 core; cores: {', '.join(rv64.CORE_NAMES)}"
        )
    problem = load_problem(args.input, overrides=parse_overrides(args.override))
    est = rv64.estimate(problem, args.planner)
    rec = est.as_record()
    rec = {"input": str(args.input), **rec}
    if args.json:
        print(json.dumps(rec, default=int))
    else:
        for k, v in rec.items():
            print(f"{k:24s} {'-' if v is None else v}")
    return 0 if est.offsets_match else 1


def _rv64_task(problem, planner: str):
    """One RV64 estimate (worker side of :func:`add_rv64_columns`): the four values, or the
    error text."""
    from experiments import rv64

    try:
        est = rv64.estimate(problem.with_capacity(None), planner)
    except Exception as e:  # noqa: BLE001 - one failing estimate must not lose the others
        return None, str(e)
    return (est.rv64_instructions, est.rv64_cycles_u74, est.rv64_cycles_c906,
            est.offsets_match), ""


def add_rv64_columns(df, problems: dict, progress: bool = False, jobs: int = 1):
    """Add ``rv64_instructions``, ``rv64_cycles_u74``, ``rv64_cycles_c906`` and
    ``rv64_offsets_match`` to comparison records, for planners with an RV64 core (others: empty).

    ``jobs > 1`` runs the estimates in that many processes (same values: the emulation is
    deterministic). Returns ``(df, message)``; when ziglang/unicorn are missing the columns are
    absent and the message says why.
    """
    from experiments import rv64

    ok, reason = rv64.available()
    if not ok:
        return df, f"RV64 columns omitted: {reason}"
    df = df.copy()
    cols = ["rv64_instructions", "rv64_cycles_u74", "rv64_cycles_c906", "rv64_offsets_match"]
    for c in cols:
        df[c] = None
    todo = [(i, row["workload"], row["planner"]) for i, row in df.iterrows()
            if row["planner"] in rv64.CORE_NAMES and row["workload"] in problems]
    if jobs > 1 and len(todo) > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as ex:
            results = list(ex.map(_rv64_task, [problems[w] for _, w, _ in todo],
                                  [p for _, _, p in todo]))
    else:
        results = [_rv64_task(problems[w], p) for _, w, p in todo]
    for (i, _, _), (vals, err) in zip(todo, results, strict=True):
        if vals is None:
            df.at[i, "error"] = (str(df.at[i, "error"]) + f" rv64: {err}").strip()
            continue
        for c, v in zip(cols, vals, strict=True):
            df.at[i, c] = v
    return df, ""


def _write_parquet(df, path: Path) -> Path | None:
    """Write ``df`` as Parquet (typed columns; pyarrow) through a temporary file; ``None`` and a
    warning when pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("memplan: warning: pyarrow is not installed; no Parquet file written",
              file=sys.stderr)
        return None
    df = df.copy()
    for c in df.columns:  # object columns of mixed None/bool/int: one arrow type each
        if df[c].dtype == object:
            vals = [v for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))]
            if vals and all(isinstance(v, bool) for v in vals):
                df[c] = df[c].astype("boolean")
            elif vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
                df[c] = df[c].astype("Int64")
            elif c not in ("fits", "valid"):
                df[c] = df[c].astype("string")
    tmp = path.with_name(path.name + ".tmp")
    df.to_parquet(tmp, index=False, engine="pyarrow")
    tmp.replace(path)
    return path


def _markdown(records, out: Path, figures: list[Path] = (), command: str = "memplan compare",
              time_limit: float | None = None) -> str:
    import pandas as pd

    ok = records[records["valid"].astype(bool)]
    pivot = ok.pivot_table(index="workload", columns="planner", values="ratio", aggfunc="min")
    pivot = pivot.reindex(
        index=[w for w in dict.fromkeys(records["workload"]) if w in pivot.index],
        columns=[p for p in dict.fromkeys(records["planner"]) if p in pivot.columns],
    )
    info = records.groupby("workload", sort=False)[["buffers", "lower_bound", "naive"]].first()
    best = ok.groupby("workload", sort=False)["arena"].min().rename("best_arena")
    head = info.join(best)
    head["best_arena"] = head["best_arena"].round().astype("Int64")
    lines = [
        "# Planner comparison",
        "",
        f"Generated by `{command}`. Lifetimes of the ONNX models come from the file order; every",
        "plan was checked by the independent validator. Sizes in bytes; `ratio` = arena / lower",
        "bound (max live bytes), so 1.000 is the lower bound itself (an instance whose optimum lies",
        "above its lower bound cannot reach 1.000).",
        "",
        (f"Time limit: {time_limit:g} s per run for the planners that take one (exact and anytime "
         "solvers); a solver stopped by it reports `feasible` (a plan without a proof of "
         "optimality) or `timeout` (no plan), so their ratios depend on this limit and on the "
         "machine's load." if time_limit is not None else ""),
        "",
        "## Workloads",
        "",
        head.reset_index().to_markdown(index=False),
        "",
        "## Arena / lower bound (1.000 = the lower bound)",
        "",
        pivot.reset_index().to_markdown(index=False, floatfmt=".3f"),
        "",
    ]
    bad = records[~records["valid"].astype(bool)]
    if len(bad):
        lines += ["## Runs without a valid plan", "",
                  bad[["workload", "planner", "status", "seconds", "error"]].to_markdown(index=False), ""]
    summary = (
        ok.groupby("planner", sort=False)
        .agg(workloads=("workload", "count"),
             geomean_ratio=("ratio", lambda r: float(pd.Series(r).apply(math.log).mean())),
             worst_ratio=("ratio", "max"), total_seconds=("seconds", "sum"))
    )
    summary["geomean_ratio"] = summary["geomean_ratio"].apply(math.exp)
    lines += ["## Per planner", "", summary.reset_index().to_markdown(index=False, floatfmt=".4g"), "",
              "## Figures", ""]
    for f in figures:
        if f.suffix == ".png":
            lines.append(f"![{f.stem}]({f.relative_to(out).as_posix()})")
    lines.append("")
    return "\n".join(lines)


def _cmd_compare(args) -> int:
    from experiments.harness import compare, default_planners, records_frame
    from experiments.report.figures import compare_figures
    from experiments.workloads import (
        default_workloads,
        load_problem,
        minimalloc_workloads,
        parse_overrides,
    )
    from planners.registry import PLANNERS

    if args.schedulers is not None:
        return _cmd_compare_schedules(args)
    if args.pipeline is not None:
        return _cmd_compare_pipeline(args)
    planners = _split(args.planners) or default_planners()
    unknown = [p for p in planners if p not in PLANNERS]
    if unknown:
        raise ValueError(f"unknown planner(s) {unknown}; registered planners: {', '.join(PLANNERS)}")
    names = _split(args.workloads)
    if args.override and not names:
        raise ValueError("--override needs --workloads naming the ONNX/TFLite models it applies to")
    problems = {}
    if names:
        for n in names:
            key = Path(n).stem if n.endswith((".csv", ".onnx", ".tflite", ".json")) else n
            problems[key] = load_problem(n, minimalloc_folder=args.minimalloc_dir,
                                         size_attr=args.size_attr,
                                         overrides=parse_overrides(args.override))
    else:
        for n, w in default_workloads().items():
            problems[n] = w.problem()
    named_minimalloc = any(n.startswith("minimalloc:") for n in names or [])
    if args.minimalloc_dir and not named_minimalloc:
        for n, w in minimalloc_workloads(args.minimalloc_dir).items():
            problems[n] = w.problem()
    if args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    from experiments.harness import PLANS_FILE, plan_entry, read_plans, store_problem, write_plans

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "compare.csv"
    records: list[dict] = []
    entries: list[dict] = []
    stored = {w: store_problem(out, p, workload=w) for w, p in problems.items()}  # once each

    def keep(rec):  # every finished run is on disk before the next starts
        records.append(rec)
        _atomic_write_text(csv_path, records_frame(records).to_csv(index=False))

    def keep_plan(rec, offsets):  # the offsets beside the record, for the figures
        entries.append(plan_entry(rec, offsets))
        write_plans(out, stored, entries)

    df = compare(problems, planners, time_limit=args.time_limit, progress=not args.quiet,
                 on_record=keep, jobs=args.jobs, on_plan=keep_plan)
    if args.rv64:
        df, msg = add_rv64_columns(df, problems, jobs=args.jobs)
        if msg:
            print(f"memplan: {msg}", file=sys.stderr)
    _atomic_write_text(csv_path, df.to_csv(index=False))
    parquet = _write_parquet(df, out / "compare.parquet")
    figures: list[Path] = []
    if not args.no_plots:
        from experiments import plots

        stored_problems, stored_plans = read_plans(out)  # figures from the records alone
        with plots.style(args.style):
            figures = compare_figures(df, stored_problems, stored_plans, out / "figures")
    command = "memplan " + " ".join(sys.argv[1:]) if sys.argv[1:] else "memplan compare"
    _atomic_write_text(out / "compare.md", _markdown(df, out, figures, command,
                                                     time_limit=args.time_limit))
    ok = int(df["valid"].sum())
    wrote = [str(csv_path), str(out / PLANS_FILE)] + ([str(parquet)] if parquet else []) + \
        [str(out / "compare.md")] + ([f"{out / 'figures'}/"] if figures else [])
    print(f"{len(df)} runs, {ok} valid plans; wrote {', '.join(wrote)}")
    return 0


def _cmd_compare_schedules(args) -> int:
    import pandas as pd

    from experiments.report.figures import sched_figures
    from experiments.sched_compare import (
        SCHED_COLUMNS,
        compare_schedules,
        read_schedules,
        write_schedules,
    )
    from experiments.workloads import graph_workloads, load_graph, parse_overrides
    from scheduling.schedulers import SCHEDULERS

    schedulers = _split(args.schedulers) or ["file_order", "dfs", "min_live", "earliest_free",
                                              "list_xla", "lpmf", "critical_path", "best_of"]
    unknown = [s for s in schedulers if s not in SCHEDULERS]
    if unknown:
        raise ValueError(f"unknown scheduler(s) {unknown}; registered: {', '.join(SCHEDULERS)}")
    planners = _split(args.planners) or ["greedy_by_size"]
    names = _split(args.workloads) or list(graph_workloads())
    graphs = {Path(n).stem if n.endswith((".onnx", ".json")) else n:
              load_graph(n, size_attr=args.size_attr, overrides=parse_overrides(args.override))
              for n in names}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frames = []
    found: list = []
    for name, g in graphs.items():  # one workload at a time, each on disk before the next
        frames.append(compare_schedules({name: g}, schedulers, planners, time_limit=args.time_limit,
                                        on_schedule=lambda r, o, p: found.append((r, o, p))))
        _atomic_write_text(out / "compare_sched.csv",
                           pd.concat(frames, ignore_index=True)[SCHED_COLUMNS].to_csv(index=False))
        if not args.quiet:
            print(f"scheduled {name}", file=sys.stderr)
    df = pd.concat(frames, ignore_index=True)
    write_schedules(out, found)
    _write_parquet(df[SCHED_COLUMNS], out / "compare_sched.parquet")
    if not args.no_plots:
        from experiments import plots

        with plots.style(args.style):  # from the stored schedules alone
            sched_figures(df, read_schedules(out), schedulers, out / "figures")
    base = df[df["scheduler"] == "file_order"].groupby("workload")["peak_bytes"].first()
    peak = df.pivot_table(index="workload", columns="scheduler", values="peak_bytes", aggfunc="first")
    rel = (1 - peak.div(base, axis=0)) * 100
    md = ["# Scheduler comparison", "", "Peak live activation bytes per schedule (the lower bound "
          "of any plan for that order), and its reduction against the file order.", "",
          "## Peak bytes", "", peak.reset_index().to_markdown(index=False), "",
          "## Peak reduction vs file order (%)", "",
          rel.reset_index().to_markdown(index=False, floatfmt=".1f"), ""]
    _atomic_write_text(out / "compare_sched.md", "\n".join(md))
    print(f"{len(df)} rows; wrote {out / 'compare_sched.csv'}, {out / 'compare_sched.md'}")
    return 0


def _cmd_compare_pipeline(args) -> int:
    import pandas as pd

    from experiments.cli.transforms import pipeline_params
    from experiments.transforms_compare import BENCH_MODELS, compare_pipeline
    from experiments.workloads import load_graph, parse_overrides
    from planners.registry import PLANNERS
    from scheduling.transforms import parse_pipeline

    parse_pipeline(args.pipeline)  # unknown pass names: an error before anything runs
    planners = _split(args.planners) or ["greedy_by_size"]
    unknown = [p for p in planners if p not in PLANNERS]
    if unknown:
        raise ValueError(f"unknown planner(s) {unknown}; registered planners: {', '.join(PLANNERS)}")
    models = _split(args.workloads) or list(BENCH_MODELS)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    from experiments.harness import _atomic_write, store_problem

    stages: list[dict] = []

    def keep_stage(rec, problem, plan, order):  # offsets and order of every stage, for figures
        ok = plan.status not in ("infeasible", "timeout", "skipped")
        stages.append({"model": rec["model"], "stage": rec["stage"], "pass": rec["pass"],
                       "planner": rec["planner"], "status": plan.status,
                       "arena": rec["arena"], "order": order,
                       "offsets": plan.offsets.tolist() if ok else None,
                       "problem": store_problem(out, problem)})
        _atomic_write(out / "compare_pipeline_plans.json",
                      json.dumps({"stages": stages}, sort_keys=True, separators=(",", ":")))

    for m in models:  # each model's records are on disk before the next starts
        for p in planners:
            try:
                model = load_graph(m, overrides=parse_overrides(args.override)) \
                    if args.override else m
                rows += compare_pipeline(model, args.pipeline, p, pipeline_params(args),
                                         time_limit=args.time_limit, on_plan=keep_stage)
            except Exception as e:  # noqa: BLE001 - a failing model must not lose the others
                from planners import MemplanError

                if isinstance(e, MemplanError | ValueError):
                    rows.append({"model": m, "planner": p, "status": "error", "error": str(e)})
                else:
                    raise
            _atomic_write_text(out / "compare_pipeline.csv", pd.DataFrame(rows).to_csv(index=False))
        if not args.quiet:
            print(f"transformed {m}", file=sys.stderr)
    df = pd.DataFrame(rows)
    ok = df[df.get("status", "") != "error"] if "status" in df else df
    first = ok[ok["stage"] == 0].set_index(["model", "planner"])
    last = ok.sort_values("stage").groupby(["model", "planner"]).last()
    summary = pd.DataFrame({
        "peak_before": first["peak"], "peak_after": last["peak"],
        "arena_before": first["arena"], "arena_after": last["arena"],
        "saved_bytes": ok.groupby(["model", "planner"])["saved_bytes"].sum(),
    })
    summary["peak_reduction_%"] = (1 - summary["peak_after"] / summary["peak_before"]) * 100
    md = ["# Graph passes", "", f"Pipeline `{args.pipeline}`: peak live bytes (lower bound) and "
          "planned arena before the first and after the last pass; per-pass rows in "
          "`compare_pipeline.csv`. `saved_bytes` is memory traffic, not arena: the bytes of "
          "intermediate tensors no longer written and read back, `2 x size x steps eliminated` "
          "summed over the fusions (seed 000 section 4).", "",
          summary.reset_index().to_markdown(index=False, floatfmt=".1f"), ""]
    _atomic_write_text(out / "compare_pipeline.md", "\n".join(md))
    print(f"{len(df)} rows; wrote {out / 'compare_pipeline.csv'}, {out / 'compare_pipeline.md'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memplan`` console script; returns the exit status."""
    from planners import MemplanError

    args = build_parser().parse_args(argv)
    import os

    if not os.environ.get("MPLBACKEND"):  # the CLI renders off-screen; notebooks stay inline
        import matplotlib

        matplotlib.use("Agg")
    try:
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "plan":
            return _cmd_plan(args)
        if args.command == "compare":
            return _cmd_compare(args)
        if args.command == "rv64":
            return _cmd_rv64(args)
        for ext in _extensions():
            if args.command in ext.COMMANDS:
                return ext.run(args)
    except (MemplanError, ValueError, FileNotFoundError) as e:
        print(f"memplan: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memplan: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
