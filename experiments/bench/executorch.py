"""ExecuTorch's planners against memplan's on real exported programs -> CSV and a figure.

``make bench-executorch`` runs :func:`main`. For each model of
:func:`experiments.runtimes.executorch.example_models` (plus ``cnn_residual_inplace``, the CNN
with its relus written into their inputs' storage, :func:`~experiments.runtimes.executorch.
inplace_relu_pass`), each planner, and each order (``file``: the exported order; ``min_live``:
reordered by memplan's ``min_live`` scheduler, :func:`~experiments.runtimes.executorch.
reordering_pass`), the model is exported through ``torch.export`` -> ``to_edge`` ->
``to_executorch``, the ``.pte`` is run in ExecuTorch's runtime on the same seeded inputs and its
outputs compared with those of ExecuTorch's default (greedy, file order), and ExecuTorch's
``Verifier.verify_storage_reuse`` is run on the planned graph.

Planners: ``et_greedy`` (ExecuTorch's default ``greedy``), ``et_suite`` (ExecuTorch's own
algorithms in one ``MemoryPlanningAlgorithmSuite``: ``greedy``, ``greedy`` without overlapping
allocations, ``naive`` where the graph has no storage-backed specs; the smallest kept), and
memplan's :data:`MEMPLAN_PLANNERS` through :class:`~experiments.runtimes.executorch.
MemplanAlgorithm`.

Columns (one row per model, planner, order): ``model, planner, source, order, order_used``
(``file`` or ``min_live``: the reordering pass keeps the exported order when the reordered one
plans more bytes, :func:`~experiments.runtimes.executorch.planning_pass`), ``moved`` (nodes the
kept order moved: 0 when the exported order was kept), ``arena`` (bytes of arena ``mem_id`` 1, ``non_const_buffer_sizes[1]``),
``total_bytes`` (sum over arenas), ``pte_lower_bound`` (max live bytes of the ``.pte``'s planned
tensors in its own instruction order, unaligned ``nbytes``: :func:`planners.lower_bound` of
:func:`~experiments.runtimes.executorch.read_plan`), ``planning_seconds`` (wall seconds inside
the planning algorithm(s), summed over the graph and its submodules, and, for a reordered
row, over the two trial plans that chose the order), ``same_outputs``
(bit-identical to the default's), ``verified`` (``verify_storage_reuse`` passed), ``note``.

Usage::

    python -m experiments.bench.executorch --out results/bench_executorch.csv
"""

from __future__ import annotations

import argparse
import csv
import functools
import sys
import time
from pathlib import Path

__all__ = ["COLUMNS", "MEMPLAN_PLANNERS", "run", "plot", "main"]

COLUMNS = ["model", "planner", "source", "order", "order_used", "moved", "arena", "total_bytes",
           "pte_lower_bound", "planning_seconds", "same_outputs", "verified", "note"]

#: memplan planners run (registry name -> parameters).
MEMPLAN_PLANNERS = {
    "greedy_by_size": {},
    "greedy_by_breadth": {},
    "xla_heap": {},
    "choose_best": {},
    "cpsat": {"time_limit": 5.0},
}


def _timed(fn, clock: list, name: str):
    """``fn`` wrapped to add its wall seconds to ``clock[0]``, keeping ``__name__ = name``."""
    @functools.wraps(fn)
    def inner(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            clock[0] += time.perf_counter() - t0
    inner.__name__ = name
    return inner


def _configs(inplace: bool):
    """``(planner, source, make_algos)``: ``make_algos()`` -> ``(algo_list, clock getter)``."""
    from executorch.exir.memory_planning import greedy, naive

    from experiments.runtimes.executorch import MemplanAlgorithm

    def et(names):
        def make():
            clock = [0.0]
            algos = [_timed(greedy, clock, "greedy")]
            if "greedy_no_overlap" in names:
                algos.append(_timed(functools.partial(greedy, allow_overlapping_allocations=False),
                                    clock, "greedy_no_overlap"))
            if "naive" in names and not inplace:  # naive refuses storage-backed specs
                algos.append(_timed(naive, clock, "naive"))
            return algos, lambda: clock[0]
        return make

    out = [("et_greedy", "executorch", et({"greedy"})),
           ("et_suite", "executorch", et({"greedy", "greedy_no_overlap", "naive"}))]
    for name, params in MEMPLAN_PLANNERS.items():
        def make(name=name, params=params):
            algo = MemplanAlgorithm(name, **params)
            return [algo], lambda: algo.seconds
        out.append((name, "memplan", make))
    return out


def run(out: Path, orders=("file", "min_live"), models: list[str] | None = None) -> list[dict]:
    """Run the benchmark (module docstring) and write the rows to ``out``; returns the rows."""
    import torch
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite

    from experiments.runtimes import executorch as et
    from planners import lower_bound

    zoo = et.example_models(seed=0)
    zoo["cnn_residual_inplace"] = zoo["cnn_residual"]
    rows = []
    for model_name, (model, inputs) in zoo.items():
        if models and model_name not in models:
            continue
        inplace = model_name.endswith("_inplace")
        base_pass = et.inplace_relu_pass() if inplace else None
        reference = et.run(et.write(model, inputs, base_pass).buffer, list(inputs))
        for planner, source, make in _configs(inplace):
            for order in orders:
                algos, seconds = make()
                suite = MemoryPlanningAlgorithmSuite(algo_list=algos)
                mp = et.planning_pass(suite, scheduler=None if order == "file" else order,
                                      inplace_relu=inplace)
                note = ""
                try:
                    manager = et.write(model, inputs, mp)
                    outs = et.run(manager.buffer, list(inputs))
                    same = len(outs) == len(reference) and all(
                        torch.equal(a, b) for a, b in zip(outs, reference, strict=True))
                    try:
                        et.verify_storage_reuse(manager)
                        verified = True
                    except Exception as e:  # ExecuTorch's InternalError
                        verified, note = False, f"verify_storage_reuse: {e}"[:200]
                    sizes = et.planned_bytes(manager)
                    problem, _ = et.read_plan(manager.buffer)
                    row = {"arena": sizes[1], "total_bytes": sum(sizes),
                           "pte_lower_bound": lower_bound(problem), "same_outputs": same,
                           "verified": verified}
                except Exception as e:
                    row = {"arena": "", "total_bytes": "", "pte_lower_bound": "",
                           "same_outputs": "", "verified": ""}
                    note = f"{type(e).__name__}: {e}".splitlines()[0][:200]
                summary = (getattr(mp, "reorders", None) or [{}])[-1]
                used = order if summary.get("order", "reordered") == "reordered" else "file"
                if used != order:
                    note = (note + "; " if note else "") + (
                        f"exported order kept: {order} plans {summary['reordered_bytes']} B > "
                        f"{summary['exported_bytes']} B")
                rows.append({"model": model_name, "planner": planner, "source": source,
                             "order": order, "order_used": used,
                             "moved": summary.get("moved", 0) if used != "file" else 0,
                             **row, "planning_seconds": f"{seconds():.6f}", "note": note})
                print(f"{model_name:22s} {planner:18s} {order:9s} arena={row['arena']!s:>7} "
                      f"same={row['same_outputs']} verified={row['verified']} "
                      f"s={seconds():.4f} {note}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return rows


def plot(csv_path: Path, figure: Path) -> list[Path]:
    """Arena bytes (mem_id 1) and planning seconds per model, one marker per planner, plain for
    the exported order and black-edged for memplan's ``min_live`` order, from the CSV alone."""
    import matplotlib.pyplot as plt

    from experiments.plots import distinct_styles, save
    from experiments.plots.style import byte_axis

    with csv_path.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["arena"]]
    models = list(dict.fromkeys(r["model"] for r in rows))
    planners = list(dict.fromkeys(r["planner"] for r in rows))
    styles = dict(zip(planners, distinct_styles(len(planners))))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.16, 6.0), sharex=True, layout="constrained")
    x = {m: k for k, m in enumerate(models)}
    width = 0.8 / max(len(planners), 1)
    for j, name in enumerate(planners):
        colour, marker = styles[name]
        # min_live: black-edged (hollow markers mean "not proved optimal" in every figure)
        for order, edge in (("file", colour), ("min_live", "black")):
            mine = [r for r in rows if r["planner"] == name and r["order"] == order]
            xs = [x[r["model"]] - 0.4 + (j + 0.5) * width for r in mine]
            label = name if order == "file" else None
            ax1.scatter(xs, [int(r["arena"]) for r in mine], facecolors=colour, edgecolors=edge,
                        linewidths=1.0, marker=marker, s=22, label=label)
            ax2.scatter(xs, [max(float(r["planning_seconds"]), 1e-5) for r in mine],
                        facecolors=colour, edgecolors=edge, linewidths=1.0, marker=marker, s=22)
    byte_axis(ax1.yaxis)
    ax1.set_ylabel("planned arena (mem_id 1)")
    ax2.set_yscale("log")
    ax2.set_ylabel("planning seconds (log scale)")
    ax2.set_xticks(range(len(models)))
    ax2.set_xticklabels(models, rotation=20, ha="right", fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(True, axis="y", linewidth=0.3)
    fig.legend(*ax1.get_legend_handles_labels(), loc="outside upper center", ncol=4,
               frameon=False, title="exported order; black edge: memplan min_live order")
    return save(fig, figure)


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring). Exit 2 with one line when the extra is missing."""
    ap = argparse.ArgumentParser(prog="python -m experiments.bench.executorch",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench_executorch.csv"))
    ap.add_argument("--figure", type=Path, default=Path("results/figures/bench_executorch"))
    ap.add_argument("--models", help="comma-separated subset of the models")
    a = ap.parse_args(argv)
    from experiments.runtimes import RuntimeMissing, require

    try:
        require("torch", "executorch.exir", "executorch.runtime", extra="executorch")
    except RuntimeMissing as e:
        print(f"bench_executorch: error: {e}", file=sys.stderr)
        return 2
    run(a.out, models=a.models.split(",") if a.models else None)
    for p in plot(a.out, a.figure):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
