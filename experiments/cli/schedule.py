"""``memplan schedule``: order the operators of a graph workload and report the peak.

``memplan schedule WORKLOAD --scheduler NAME [--time-limit S] [--scheduler-param NAME=VALUE ...]
[--json]``
schedules a dataflow graph (a graph workload name such as ``mobilenet_v2`` or ``gen:randwire``,
an ``.onnx`` file, or a node-link ``.json`` graph -- Checkmate's and MOCCASIN's files, the size
attribute detected or named with ``--size-attr``, see :mod:`scheduling.nodelink`) with a
registered scheduler (:data:`scheduling.schedulers.SCHEDULERS`) and prints the operator order and
its peak: the maximum over steps of the live activation bytes
(:func:`scheduling.lifetimes.peak_live_bytes`, graph inputs not counted, graph outputs kept to the
end), the lower bound of any offset plan for that order. Next to it, ``order_bound`` is a proved
lower bound on the peak of every order (:func:`scheduling.schedulers.bounds.order_lower_bound`, or
more when the scheduler proved more) and ``gap`` is ``peak / order_bound - 1``; the
``schedule_status`` is ``optimal`` exactly when the peak equals the bound. The keys are those of
``memplan plan --scheduler`` (``schedule_status``, ``order_bound``, ``peak_bytes``,
``schedule_seconds``, ``scheduler_params``); the text form prints parameters as
``NAME=VALUE`` pairs (JSON values), as ``--scheduler-param`` takes them.

``--time-limit S`` (seconds > 0; default :data:`experiments.cli.common.DEFAULT_TIME_LIMIT`, the
same on every command) is passed to schedulers that take a ``time_limit`` (``exact_dp``,
``cpsat_schedule``, ``anneal``, ``genetic``); ``--scheduler-param NAME=VALUE`` (repeatable;
``--param`` is accepted as the same flag here, where there is no planner) sets any
constructor parameter of the scheduler (``memplan list`` names them in each docstring), the value
read as a JSON literal (``5``, ``0.5``, ``true``, ``null``, ``[\"dfs\"]``) or else as a string; a
``time_limit`` given that way wins over ``--time-limit``. Parameters are checked against
the scheduler's declared rules before any work.

Errors (unknown scheduler or workload, malformed graph, a cycle) print one line
``memplan: error: ...`` and exit with status 2.
"""

from __future__ import annotations

import json
from typing import Any

from experiments.cli.common import note_time_limit, parse_param, time_limit_of
from experiments.cli.flags import (
    add_json_flag,
    add_scheduler_param_flag,
    add_size_attr_flag,
    add_time_limit_flag,
)

__all__ = ["COMMANDS", "add_parsers", "run", "schedule_report", "make_scheduler",
           "scheduler_params_for", "parse_param"]

#: Sub-command names handled by :func:`run`.
COMMANDS = ("schedule",)


def add_parsers(sub) -> None:
    """Add the ``schedule`` sub-command to an argparse sub-parser collection."""
    s = sub.add_parser("schedule", help="order a graph's operators with a scheduler; print the "
                                        "order and its peak live bytes")
    s.add_argument("workload", help="graph workload name, .onnx file or node-link .json graph")
    s.add_argument("--scheduler", default="file_order",
                   help="registered scheduler (default file_order; see `memplan list`)")
    add_size_attr_flag(s)
    add_time_limit_flag(s)
    add_scheduler_param_flag(s, param_alias=True)
    add_json_flag(s)


def make_scheduler(scheduler: str, params: dict[str, Any] | None = None,
                   time_limit: float | None = None):
    """A configured scheduler, its parameters checked before any work: registered name
    ``scheduler``, constructor ``params`` (a ``time_limit`` there wins), ``time_limit`` (seconds)
    the default ``time_limit`` of schedulers that take one.

    Raises
    ------
    ValueError
        Unknown scheduler name (naming the registered ones, "did you mean"); an unknown
        parameter or a value its rules forbid (:class:`planners.errors.ParameterError`).
    """
    from planners.errors import ParameterError
    from planners.params import validate_params
    from scheduling.schedulers import SCHEDULERS, get_scheduler
    from scheduling.schedulers.registry import check_scheduler_names

    check_scheduler_names([scheduler])
    params = dict(params or {})
    known = SCHEDULERS[scheduler]._param_names()
    unknown = [k for k in params if k not in known]
    if unknown:
        raise ParameterError(f"scheduler {scheduler!r} has no parameter {unknown[0]!r}; its "
                             f"parameters: {', '.join(known) or '(none)'}")
    if time_limit is not None and "time_limit" in known:
        params.setdefault("time_limit", time_limit)
    sched_obj = get_scheduler(scheduler, **params)
    validate_params(sched_obj)  # its declared rules, checked before loading or scheduling
    return sched_obj


def scheduler_params_for(schedulers, params: dict[str, Any] | None,
                         time_limit: float | None = None) -> dict[str, dict[str, Any]]:
    """``--scheduler-param`` pairs given to a comparison of several schedulers, split per
    scheduler: each gets the parameters it takes (as ``--planner-param`` goes to every planner
    that has it, :func:`experiments.harness.params_for`), checked by :func:`make_scheduler`
    (its declared rules) before any work. Returns ``{name: {param: value}}`` for the schedulers
    that take at least one of them.

    Raises
    ------
    planners.errors.ParameterError
        A parameter that none of ``schedulers`` takes (naming it and each scheduler's
        parameters, "did you mean"), or a value a scheduler's rules forbid.
    ValueError
        An unknown scheduler name.
    """
    from planners.errors import ParameterError
    from planners.params import did_you_mean
    from scheduling.schedulers import SCHEDULERS
    from scheduling.schedulers.registry import check_scheduler_names

    names = check_scheduler_names(list(schedulers))
    params = dict(params or {})
    known = {n: SCHEDULERS[n]._param_names() for n in names}
    every = {k for ks in known.values() for k in ks}
    for k in params:
        if k not in every:
            have = "; ".join(f"{n}: {', '.join(ks) or '(none)'}" for n, ks in known.items())
            raise ParameterError(f"no scheduler of {', '.join(names)} has a parameter {k!r}"
                                 f"{did_you_mean(k, every)} ({have})")
    out = {}
    for n in names:
        mine = {k: v for k, v in params.items() if k in known[n]}
        if mine:
            make_scheduler(n, mine, time_limit)  # the value rules, before any graph is loaded
            out[n] = mine
    return out


def schedule_report(workload: str, scheduler: str = "file_order", size_attr: str = "cost_ram",
                    time_limit: float | None = None,
                    params: dict[str, Any] | None = None) -> dict:
    """Schedule a graph workload and return ``{"input", "scheduler", "schedule_status",
    "operators", "peak_bytes", "order_bound", "gap", "schedule_seconds", "scheduler_params",
    "order"}`` (peak and bound in bytes, seconds of wall time; gap ``peak / order_bound - 1``,
    ``None`` when the bound is 0; order: operator names, step ``k`` runs
    ``order[k]``) plus ``reason`` when the scheduler said why it stopped early.

    ``time_limit`` (seconds) is the default ``time_limit`` of schedulers that take one; ``params``
    are the scheduler's constructor parameters (a ``time_limit`` there wins).

    Raises
    ------
    ValueError
        Unknown scheduler name; an unknown parameter or a value its rules forbid
        (:class:`planners.errors.ParameterError`, a ``ValueError``), naming it.
    planners.errors.MemplanError
        Unknown workload or a malformed graph (e.g. :class:`scheduling.errors.CycleError`).
    """
    from experiments.workloads import load_graph
    from scheduling.lifetimes import peak_live_bytes

    sched_obj = make_scheduler(scheduler, params, time_limit)
    graph = load_graph(workload, size_attr=size_attr)
    sched = sched_obj.schedule(graph)
    peak = peak_live_bytes(graph, sched.order)
    rec = {
        "input": str(workload),
        "scheduler": sched.scheduler,
        "schedule_status": sched.status,
        "operators": len(sched.order),
        "peak_bytes": peak,
        "order_bound": sched.bound,
        "gap": round(peak / sched.bound - 1, 6) if sched.bound else None,
        "schedule_seconds": round(sched.seconds, 6),
        "scheduler_params": sched.params,
    }
    if sched.info.get("reason"):
        rec["reason"] = sched.info["reason"]
    rec["order"] = list(sched.order)
    return rec


def run(args) -> int:
    """Run ``memplan schedule``; returns the exit status (0)."""
    rec = schedule_report(args.workload, args.scheduler, args.size_attr, time_limit_of(args),
                          dict(args.scheduler_param))
    note_time_limit([args.scheduler], args.time_limit, kind="scheduler")
    if args.json:
        print(json.dumps(rec))
    else:
        w = max(map(len, rec))
        for k, v in rec.items():
            if k == "scheduler_params":  # NAME=VALUE pairs as --scheduler-param takes them
                v = " ".join(f"{n}={json.dumps(x)}" for n, x in v.items())
            elif k == "order":
                v = " ".join(v)
            print(f"{k:{w}s} {'-' if v is None or v == '' else v}")
    return 0
