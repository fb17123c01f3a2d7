"""``memplan schedule``: order the operators of a graph workload and report the peak.

``memplan schedule WORKLOAD --scheduler NAME [--json]`` schedules a dataflow graph (a graph
workload name such as ``mobilenet_v2`` or ``gen:randwire``, an ``.onnx`` file, or a node-link
``.json`` graph with ``--size-attr``, see :mod:`scheduling.nodelink`) with a registered scheduler
(:data:`scheduling.schedulers.SCHEDULERS`) and prints the operator order and its peak: the
maximum over steps of the live activation bytes (:func:`scheduling.lifetimes.peak_live_bytes`,
graph inputs not counted, graph outputs kept to the end), the lower bound of any offset plan for
that order.

Errors (unknown scheduler or workload, malformed graph, a cycle) print one line
``memplan: error: ...`` and exit with status 2.
"""

from __future__ import annotations

import json

__all__ = ["COMMANDS", "add_parsers", "run", "schedule_report"]

#: Sub-command names handled by :func:`run`.
COMMANDS = ("schedule",)


def add_parsers(sub) -> None:
    """Add the ``schedule`` sub-command to an argparse sub-parser collection."""
    s = sub.add_parser("schedule", help="order a graph's operators with a scheduler; print the "
                                        "order and its peak live bytes")
    s.add_argument("workload", help="graph workload name, .onnx file or node-link .json graph")
    s.add_argument("--scheduler", default="file_order",
                   help="registered scheduler (default file_order; see `memplan list`)")
    s.add_argument("--size-attr", default="cost_ram",
                   help="node-link .json graphs: the node attribute with the output bytes "
                        "(default cost_ram)")
    s.add_argument("--json", action="store_true", help="print one JSON object")


def schedule_report(workload: str, scheduler: str = "file_order",
                    size_attr: str = "cost_ram") -> dict:
    """Schedule a graph workload and return ``{"input", "scheduler", "status", "operators",
    "peak_bytes", "seconds", "order"}`` (peak in bytes; order: operator names, step ``k`` runs
    ``order[k]``).

    Raises
    ------
    ValueError
        Unknown scheduler name.
    planners.errors.MemplanError
        Unknown workload or a malformed graph (e.g. :class:`scheduling.errors.CycleError`).
    """
    from experiments.workloads import load_graph
    from scheduling.lifetimes import peak_live_bytes
    from scheduling.schedulers import get_scheduler
    from scheduling.schedulers.registry import check_scheduler_names

    check_scheduler_names([scheduler])
    graph = load_graph(workload, size_attr=size_attr)
    sched = get_scheduler(scheduler).schedule(graph)
    return {
        "input": str(workload),
        "scheduler": sched.scheduler,
        "status": sched.status,
        "operators": len(sched.order),
        "peak_bytes": peak_live_bytes(graph, sched.order),
        "seconds": round(sched.seconds, 6),
        "order": list(sched.order),
    }


def run(args) -> int:
    """Run ``memplan schedule``; returns the exit status (0)."""
    rec = schedule_report(args.workload, args.scheduler, args.size_attr)
    if args.json:
        print(json.dumps(rec))
    else:
        for k, v in rec.items():
            if k != "order":
                print(f"{k:12s} {v}")
        print(f"{'order':12s} {' '.join(rec['order'])}")
    return 0
