"""``memplan view``: write an interactive plan explorer as one self-contained HTML file.

``memplan view WORKLOAD|PLAN.csv [--planner NAME ...] -o plan.html`` plans the workload with each
planner (default ``greedy_by_size``) and draws the plans side by side
(:func:`experiments.plots.view.plan_explorer`): rectangles on time x address, hover details, zoom and
pan, the live bytes and the lower bound below on the same time axis. For graph workloads (ONNX,
TFLite, node-link JSON, MobileNet and ``gen:*`` generators) the hover text names the operator
that produces each tensor and the operators that read it.

A ``PLAN.csv`` with an ``offset`` column (a solved MiniMalloc CSV, e.g. from ``memplan plan -o``
or MiniMalloc) is drawn as given, labelled ``given``, beside any ``--planner`` plans; so is an
ExecuTorch ``PROGRAM.pte``: its own plan of its first method
(:func:`experiments.runtimes.executorch.pte_plan`, one panel per ``mem_id`` arena when it has
several; :func:`experiments.runtimes.executorch.pte_violations`, as ``memplan check``). A given
plan is validated first (:func:`planners.validate.plan_violations`); an invalid plan is still drawn, every
buffer in a violation outlined in red with the violation in its hover text, and the command
exits 1 after writing the file (one ``memplan: invalid plan ...`` line on stderr), as
``memplan check`` does. A malformed file exits 2.

The HTML inlines plotly.js (about 4.7 MB) and opens offline from ``file://``.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["COMMANDS", "add_parsers", "run", "load_view"]

#: Sub-command names handled by :func:`run`.
COMMANDS = ("view",)


def add_parsers(subparsers) -> None:
    """Add the ``view`` sub-command to an argparse ``subparsers`` object."""
    v = subparsers.add_parser(
        "view", help="write an interactive plan explorer (one self-contained HTML file)",
        description="Draw plans as rectangles on time x address with the live bytes and the "
                    "lower bound below; a PLAN.csv with an offset column is drawn as given.")
    v.add_argument("input", help="workload name, .onnx/.tflite/.json/.csv path, or a solved "
                                 "MiniMalloc CSV with an offset column (drawn as given)")
    from experiments.cli.flags import (
        add_minimalloc_dir_flag,
        add_names_flag,
        add_override_flag,
        add_size_attr_flag,
    )

    add_names_flag(v, "--planners", "--planner",
                   help_tail="; here: the planners to draw (--planner is the same flag; default "
                             "greedy_by_size, none for a PLAN.csv with offsets)")
    v.add_argument("-o", "--output", required=True, help="HTML file to write")
    from experiments.cli.common import add_param_flag, add_pipeline_flag, add_time_limit_flag

    add_time_limit_flag(v)
    add_param_flag(v)
    add_pipeline_flag(v)
    add_override_flag(v)
    add_size_attr_flag(v)
    add_minimalloc_dir_flag(v)
    v.add_argument("--title", help="figure title (default: the input; a plan read from a file "
                                   "is titled 'from FILE')")
    from experiments.cli.common import add_pool_flags

    add_pool_flags(v, ignore_offsets=False)


def _graph_for(spec: str, overrides, size_attr: str):
    """The graph whose tensors a workload's buffer ids name, or ``None`` for interval-only
    workloads (CSV, MiniMalloc, the seed interval examples)."""
    from experiments.workloads import graph_workloads, load_graph, tflite_model_files
    from planners import ProblemError

    if spec.endswith(".csv") or spec.startswith("minimalloc:"):
        return None
    tfl = spec if spec.endswith(".tflite") else tflite_model_files().get(spec)
    if tfl is not None:
        from scheduling.tflite_import import load_tflite

        return load_tflite(tfl, overrides=overrides).graph
    if spec.endswith((".onnx", ".json")) or spec in graph_workloads() or \
            spec.split(":")[0] in ("mobilenet_v1", "mobilenet_v2"):
        try:
            return load_graph(spec, size_attr=size_attr, overrides=overrides)
        except ProblemError:
            return None
    return None


def _pool_panels(label: str, plan, out: dict) -> None:
    """One panel per pool of ``plan`` into ``out``: :func:`experiments.plots.view.pool_panels`
    (shared with the figures of ``memplan compare``)."""
    from experiments.plots.view import pool_panels

    pool_panels(label, plan, out)


def load_view(spec: str, planners: list[str] | None, time_limit: float | None = None,
              overrides=None, size_attr: str = "cost_ram", pools=None, params=None,
              pipeline: str | None = None, minimalloc_dir=None):
    """Compute what ``memplan view`` draws: ``(plans, graph, violations)``.

    ``plans`` maps a label (``given`` for the offsets of a solved CSV, else the planner name) to
    a :class:`planners.Plan`; with ``pools`` (:class:`planners.model.MemoryPool`, preference
    order) every plan becomes one panel per pool, labelled with the pool and its capacity; ``violations`` maps ``given`` to the list of
    :class:`planners.validate.Violation` of those offsets (empty when valid). ``time_limit``
    (seconds, default :data:`experiments.cli.common.DEFAULT_TIME_LIMIT`) and ``params`` (a dict,
    ``--param``) configure every planner drawn; ``pipeline``: graph passes applied to a model
    first (:func:`experiments.cli.plan.pipeline_problem`; ``None``: the model as written);
    ``minimalloc_dir``: where ``minimalloc:NAME`` is looked up (``--minimalloc-dir``). A plan read
    from a file is a :class:`planners.Plan` with ``info["source"]`` the file and
    ``info["as_read"]`` true: nothing was planned, so its panel claims no status.

    Raises
    ------
    planners.MemplanError or ValueError
        Malformed input, an unknown planner, or a planner that found no plan.
    """
    from experiments.cli.check import _header, read_offsets, read_pools
    from experiments.cli.common import DEFAULT_TIME_LIMIT
    from experiments.harness import planner_for
    from experiments.workloads import load_problem
    from planners import Plan, lower_bound, read_minimalloc_csv
    from planners.io import capacity_from_name
    from planners.validate import plan_violations

    plans: dict = {}
    violations: dict = {}
    path = Path(spec)
    given = spec.endswith(".csv") and path.is_file() and "offset" in _header(path)
    if given:  # a solved file gives every offset; empty (or -1) ones are free buffers (pins)
        from planners.io import csv_dict_reader

        given = all(str(r.get("offset") or "").strip() not in ("", "-1")
                    for r in csv_dict_reader(path))
    if given:
        problem = read_minimalloc_csv(path, capacity=None, offsets="ignore", pools=pools)
        offsets = read_offsets(path, problem.ids)
        pool_of = read_pools(path, problem) if pools else None
        violations["given"] = plan_violations(
            problem, offsets, None if pools else capacity_from_name(path), pool_of)
        _pool_panels("given", Plan(problem, offsets, planner="given", status="heuristic",
                                   lower_bound=lower_bound(problem), pools=pool_of,
                                   info={"source": str(path), "as_read": True,
                                         "valid": not violations["given"]}),
                     plans)
    if spec.endswith(".pte"):  # ExecuTorch's own plan of the first method, drawn as given
        from experiments.runtimes.executorch import pte_plan, pte_violations

        given = True
        pte = pte_plan(spec)
        violations["given"] = pte_violations(pte)
        _pool_panels("given", pte, plans)
        for label, pl in plans.items():  # each arena's panel outlines its own violations
            if label.startswith("given: "):
                ids = set(pl.problem.ids)
                violations[label] = [v for v in violations["given"] if set(v.buffers) & ids]
    names = planners if planners is not None else ([] if given else ["greedy_by_size"])
    if names:
        if pipeline is not None:
            from experiments.cli.plan import pipeline_problem

            problem = pipeline_problem(spec, pipeline, overrides, size_attr=size_attr)
            if pools:
                problem = problem.with_pools(pools)
        elif spec.endswith(".csv"):  # MiniMalloc's dialect, with a 'pools' column
            problem = read_minimalloc_csv(path, capacity=None if pools else "auto", pools=pools)
            from experiments.cli.check import note_offsets_pinned

            note_offsets_pinned(spec, problem, "view")
        else:
            problem = load_problem(spec, capacity="auto", overrides=overrides,
                                   size_attr=size_attr, minimalloc_folder=minimalloc_dir)
            if pools:
                problem = problem.with_pools(pools)
        for name in names:
            planner = planner_for(name, DEFAULT_TIME_LIMIT if time_limit is None else time_limit,
                                  params)
            p = problem
            if getattr(planner, "requires_capacity", False) and p.capacity is None \
                    and not p.pools:
                p = p.with_capacity(lower_bound(p))
            pl = planner.plan(p)
            if pl.status in ("infeasible", "timeout", "skipped"):
                raise ValueError(f"planner {name!r} found no plan for {spec} (status "
                                 f"{pl.status}); nothing to draw")
            label, k = name, 1
            while label in plans:
                k += 1
                label = f"{name} ({k})"
            _pool_panels(label, pl, plans)
    # a .pte's plan names value indices, no graph's tensors (and the graph workloads import onnx)
    graph = _graph_for(spec, overrides, size_attr) if not spec.endswith((".csv", ".pte")) \
        else None
    return plans, graph, violations


def run(args) -> int:
    """Run ``memplan view`` with parsed ``args``: 0, or 1 for a given plan with violations (the
    file is written in both cases). Bad input raises for the caller to report (exit 2)."""
    from experiments.cli.common import (
        note_time_limit,
        params_of,
        parse_pipeline,
        parse_pools,
        planner_time_limit,
        time_limit_of,
    )
    from experiments.cli.common import split_list as _split
    from experiments.cli.flags import time_limit_text
    from experiments.plots.view import plan_explorer, write_html
    from experiments.workloads import parse_overrides

    pipeline = parse_pipeline(args.pipeline)
    pools = parse_pools(args.pools)
    names = _split(args.planners)
    plans, graph, violations = load_view(
        str(args.input), names, time_limit_of(args),
        parse_overrides(args.override), args.size_attr, pools,
        params_of(args), pipeline, args.minimalloc_dir)
    planned = list(dict.fromkeys(p.planner for p in plans.values() if not p.info.get("as_read")))
    note_time_limit(planned, args.time_limit)
    fig = plan_explorer(plans, graph=graph, violations=violations,
                        title=args.title or str(args.input))
    out = write_html(fig, args.output)
    n = sum(p.problem.n for p in plans.values())
    drawn = f"{len(plans)} plan(s)"
    if pools:  # one panel per pool of each plan (labels "PLAN: POOL (capacity ...)")
        drawn = (f"{len({k.split(': ', 1)[0] for k in plans})} plan(s) in {len(plans)} panels "
                 f"(one per pool)")
    how = [f"from {args.input} as read (nothing planned)"] if len(planned) < len(
        {p.planner for p in plans.values()}) else []
    how += [f"{name}: {time_limit_text(planner_time_limit(name, time_limit_of(args), params_of(args)))}"
            for name in planned]
    if planned:
        how.append(f"pipeline {pipeline or 'none'}")
    print(f"wrote {out}: {drawn}, {n} rectangles ({'; '.join(how)})")
    bad = violations.get("given") or []
    if bad:
        print(f"memplan: invalid plan {args.input}: {len(bad)} violation(s), flagged in red in "
              f"{out}", file=sys.stderr)
        return 1
    return 0
