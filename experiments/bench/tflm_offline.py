"""Offline plans in TFLite Micro: ``make bench-tflm-offline``.

For every bundled ``.tflite`` model (the pymicro-wakeword models; the mediapipe ones when
installed and their kernels run in ``tflite-micro``), the two control-flow models built by
:func:`experiments.bench.tflm.control_flow_models` (``IF`` with two branch subgraphs,
``CALL_ONCE`` with an initialisation subgraph) and three plans, one row of
``results/bench_tflm_offline.csv``. Each plan is written into the model's
``OfflineMemoryAllocation`` metadata (:func:`experiments.runtimes.tflm.offline.write_offline_plan`) and
the ``tflite-micro`` interpreter runs the original and the planned model on the same seeded
inputs (:func:`experiments.runtimes.tflm.offline.run_model`, 60 calls, state kept between calls):

* ``file_order`` / ``greedy_by_size``: TFLM's own plan, written out (the head must not change);
* ``file_order`` / ``choose_best``: a better planner on TFLM's operator order;
* ``best_of`` / ``choose_best``: the ``best_of`` scheduler's order (operators reordered in the
  model, only where it is safe) and the better planner.

Columns (bytes): ``lower_bound`` (max live bytes of the order, sizes rounded to 16 as TFLM
rounds them), ``memplan_arena`` (the plan's arena), ``tflm_head`` (the head TFLM plans itself
for the original model), ``planned_head`` (the head the interpreter reports for the planned
model), ``head_equals_arena``, ``head_saved`` (``tflm_head - planned_head``), ``tail``
(persistent, planned model), ``min_arena_size`` and ``min_arena_size_original`` (the smallest
``arena_size`` the interpreter accepts, by bisection, :func:`experiments.runtimes.tflm.oracle.tflm_min_arena`),
``arena_size_saved`` (their difference: what a device saves in the ``arena_size`` it must
reserve; smaller than ``head_saved`` where the plan-commit moment of ``AllocateTensors``, which
holds the planner's working memory above the tail, sets the minimum), ``outputs_identical``,
``offline`` (tensors placed offline), ``reordered``, ``note`` (why TFLM's head may exceed
memplan's arena, when some tensors had to be left to its online planner), ``error`` (why a row
has no numbers).

On the four wake-word models every planned head equals memplan's arena and every output is
identical; the heads shrink by 176-1664 bytes, but the smallest accepted ``arena_size`` by 0
bytes on three models and 320 on ``hey_mycroft``: there the plan commit, not the head, sets it.

On the built ``IF`` and ``CALL_ONCE`` models every tensor of every subgraph is placed offline
(10 and 5), the planned head equals memplan's arena and the outputs are identical.

Run: ``python -m experiments.bench.tflm_offline --out results/bench_tflm_offline.csv`` (about
15 s: the bisections go to one persistent probe process, :mod:`experiments.runtimes.tflm.probe`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from experiments.records import write_csv

__all__ = ["COLUMNS", "PLANS", "bench_model", "main"]

COLUMNS = ["model", "scheduler", "planner", "buffers", "offline", "reordered", "lower_bound",
           "memplan_arena", "tflm_head", "planned_head", "head_equals_arena", "head_saved",
           "tail", "min_arena_size", "min_arena_size_original", "arena_size_saved",
           "outputs_identical", "invocations", "note", "error"]

#: (scheduler, planner) of the rows, per model.
PLANS = (("file_order", "greedy_by_size"), ("file_order", "choose_best"),
         ("best_of", "choose_best"))


def bench_model(name: str, path: str | Path, workdir: str | Path,
                invocations: int = 60, bisect: bool = True) -> list[dict]:
    """The rows of one model (module docstring). An error (a kernel TFLM lacks, an unsafe
    reorder) is recorded in ``error`` rather than raised."""
    from experiments.runtimes.tflm.offline import run_model, tflm_problem, write_offline_plan
    from experiments.runtimes.tflm.oracle import tflm_min_arena
    from planners import MemplanError, lower_bound, plan

    rows = []
    try:
        base = run_model(path, invocations=invocations)
        base_min = tflm_min_arena(path) if bisect else None
    except (MemplanError, ValueError) as e:
        return [{"model": name, "error": str(e)}]
    for sched, planner in PLANS:
        row = {"model": name, "scheduler": sched, "planner": planner, "tflm_head": base["head"],
               "min_arena_size_original": base_min, "invocations": invocations}
        try:
            p, order = tflm_problem(path, sched)
            pl = plan(p, planner)
            out = Path(workdir) / f"{name.replace(':', '_')}.{sched}.{planner}.tflite"
            rep = write_offline_plan(path, pl, out, order=order)
            new = run_model(out, invocations=invocations)
            row.update(buffers=p.n, offline=rep["offline"], reordered=rep["reordered"],
                       lower_bound=lower_bound(p), memplan_arena=pl.arena_size,
                       planned_head=new["head"], head_equals_arena=new["head"] == pl.arena_size,
                       head_saved=base["head"] - new["head"], tail=new["tail"],
                       outputs_identical=new["outputs"] == base["outputs"], note=rep["note"])
            if bisect:
                row["min_arena_size"] = tflm_min_arena(out)
                row["arena_size_saved"] = base_min - row["min_arena_size"]
        except (MemplanError, ValueError) as e:
            row["error"] = str(e)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--out CSV`` (default ``results/bench_tflm_offline.csv``),
    ``--invocations N``, ``--no-bisect``."""
    import pandas as pd

    from experiments.bench.tflm import control_flow_models
    from experiments.runtimes.tflm.oracle import tflm_available
    from experiments.workloads import tflite_model_files

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/bench_tflm_offline.csv")
    ap.add_argument("--invocations", type=int, default=60)
    ap.add_argument("--no-bisect", action="store_true", help="skip the arena_size bisections")
    args = ap.parse_args(argv)
    ok, why = tflm_available()
    if not ok:
        print(f"bench_tflm_offline: {why}", file=sys.stderr)
        return 2
    models = tflite_model_files()
    if not models:
        print("bench_tflm_offline: no .tflite models installed (pip install pymicro-wakeword)",
              file=sys.stderr)
        return 2
    rows: list[dict] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        models = {**models, **control_flow_models(Path(work) / "built")}
        for name, path in models.items():
            rows += bench_model(name, path, work, args.invocations, not args.no_bisect)
            df = pd.DataFrame(rows).reindex(columns=COLUMNS)
            write_csv(df, out)
            print(f"{name}: done", file=sys.stderr)
    print(pd.DataFrame(rows).reindex(columns=COLUMNS).drop(columns=["error"]).to_string(
        index=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
