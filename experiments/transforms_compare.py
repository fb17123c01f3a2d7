"""Peak and arena before and after each graph pass (the pipeline comparison).

* models are named as :func:`experiments.workloads.load_graph` accepts them: one of the nine ONNX
  light models, ``mobilenet_v1`` / ``mobilenet_v2`` (optionally ``:ALPHA:RESOLUTION:DTYPE``),
  ``mobilenet_v1_first_layer`` (seed 003's case), ``seed000``, or a path to an ``.onnx`` file.
* :func:`compare_pipeline` -- run a pipeline of passes and record, after the input graph and after
  each pass, the operator and buffer counts, the peak (max live bytes with alias groups collapsed:
  the lower bound) and the arena of a planner, plus the pass's saved bytes; ``memplan compare
  --pipeline simplify,views,fuse,inplace`` runs it.

The ``make bench-transforms`` benchmark over these rows is :mod:`experiments.bench.transforms`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.harness import planner_for
from experiments.workloads import load_graph
from planners.bounds import lower_bound
from scheduling.graph import Graph
from scheduling.transforms import parse_pipeline, transformed_problem

__all__ = ["compare_pipeline", "BENCH_MODELS"]

#: Models of ``make bench-transforms``.
BENCH_MODELS: tuple[str, ...] = (
    "alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
    "squeezenet", "vgg19", "zfnet512", "mobilenet_v1_first_layer", "mobilenet_v1", "mobilenet_v2",
)


def compare_pipeline(
    model: str | Path | Graph,
    pipeline: str | Sequence[str] = "simplify,views,fuse,inplace",
    planner: str = "greedy_by_size",
    params: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    unified: bool = False,
    alignment: int = 1,
    time_limit: float | None = 10.0,
    on_plan: Any = None,
) -> list[dict[str, Any]]:
    """Peak and arena before and after each pass of ``pipeline``.

    Parameters
    ----------
    model : str, path or Graph
        See :func:`experiments.workloads.load_graph`.
    pipeline : str or sequence
        Pass names, ``"simplify,views,fuse,inplace"`` (see :data:`scheduling.transforms.PASSES`).
    planner : str
        Registry name of the offset planner measuring the arena.
    params : mapping, optional
        Per-pass keyword parameters, ``{"fuse": {"vlen": 64}}``; ``{"fuse":
        {"allow_peak_increase": True}}`` applies fusions that raise the peak (refused by
        default, :func:`scheduling.transforms.fuse`).
    unified, alignment :
        Passed to :func:`scheduling.transforms.transformed_problem` (stored operator order).
    time_limit : float or None
        Seconds, for planners that take a time limit.
    on_plan : callable, optional
        Called as ``on_plan(record, problem, plan, order)`` after each stage is planned (the
        stage's operator order, its problem and plan), e.g. to store them for figures.

    Returns
    -------
    list of dict
        One record per stage (``stage`` 0 is the input graph, pass ``"-"``), with keys
        ``model, stage, pass, ops, buffers, alias_links, peak, arena, planner, status,
        saved_bytes, changes, refused_peak, pass_seconds``; ``peak`` and ``arena`` in bytes;
        ``refused_peak`` counts the fusions the pass refused because they raise the peak.
        Planning runs on the transformed problem, so every planner honours the alias groups.
    """
    g = load_graph(model)
    params = dict(params or {})
    plnr = planner_for(planner, time_limit)

    def record(stage: int, name: str, graph: Graph, log=None, seconds: float = 0.0):
        p = transformed_problem(graph, unified=unified, alignment=alignment)
        if getattr(plnr, "requires_capacity", False) and p.capacity is None:
            p = p.with_capacity(lower_bound(p))
        pl = plnr.plan(p)
        rec = {
            "model": g.name, "stage": stage, "pass": name, "ops": len(graph.ops),
            "buffers": p.n, "alias_links": len(p.aliases), "peak": lower_bound(p),
            "arena": pl.arena_size if pl.status not in ("infeasible", "timeout", "skipped") else None,
            "planner": pl.planner, "status": pl.status,
            "saved_bytes": int(log.stats.get("saved_bytes", 0)) if log else 0,
            "changes": len(log.changes) if log else 0,
            "refused_peak": sum(c.get("reason") == "raises_peak" for c in log.changes) if log else 0,
            "pass_seconds": round(seconds, 4),
        }
        if on_plan is not None:
            on_plan(rec, p, pl, [str(n) for n in graph.ops])
        return rec

    out = [record(0, "-", g)]
    for k, (name, f) in enumerate(parse_pipeline(pipeline), start=1):
        t0 = time.perf_counter()
        g2, log = f(g, **dict(params.get(name, {})))
        dt = time.perf_counter() - t0
        g2.validate()
        out.append(record(k, name, g2, log, dt))
        g = g2
    return out
