"""TensorFlow Lite Micro as a runtime integration (the shape of :mod:`experiments.runtimes`).

The four parts, each checked against the ``tflite-micro`` interpreter itself (the optional extra
``pip install -e '.[tflite]'``):

* :func:`read_plan` -- TFLite Micro's own online plan of a ``.tflite``: the buffers its
  ``GreedyMemoryPlanner`` places (:func:`.oracle.tflm_head_problem`, TFLM's lifetimes and
  16-byte sizes) and the offsets that planner gives them (:mod:`planners.tflm_greedy`, whose
  arena equals the head the interpreter reports: ``tests/test_tflm_differential.py``).
* :func:`plan_for` -- a memplan plan for TFLite Micro (:func:`.offline.tflm_problem`).
* :func:`write` -- the planned model, its offsets in ``OfflineMemoryAllocation`` metadata
  (:func:`.offline.export_offline`, ``memplan export --format tflm-offline``).
* :func:`run` -- the interpreter's outputs and arena for a model (:func:`.offline.run_model`).

Submodules: :mod:`.oracle` (the arena model and the bisected minimum, ``runtime_arena``),
:mod:`.offline` (TFLM's lifetimes, offline plans), :mod:`.probe` (the persistent bisection
worker), :mod:`.generate` (the seeded model generator), :mod:`.differential` (the differential
test against the interpreter), :mod:`.writer` (the flatbuffer writer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["NAME", "EXTRA", "read_plan", "plan_for", "write", "run"]

NAME = "tflm"
EXTRA = "tflite"


def read_plan(path: str | Path) -> tuple[Any, Any]:
    """TFLite Micro's own online plan of the ``.tflite`` model at ``path``: ``(problem,
    offsets)`` (buffers ``"<subgraph>:<tensor>"``, half-open lifetimes in TFLM's allocation
    scopes, sizes and offsets in bytes).

    Raises
    ------
    planners.errors.ProblemError
        The model carries ``OfflineMemoryAllocation`` metadata: TFLM then takes those offsets,
        which this reader does not map (:func:`.offline.check_offline_plan` checks such a model).
    ValueError
        Not a TFLite flatbuffer.
    """
    import numpy as np

    from planners import plan
    from planners.errors import ProblemError

    from .offline import read_offline_plan
    from .oracle import tflm_head_problem

    if read_offline_plan(Path(path).read_bytes()) is not None:
        raise ProblemError(f"{path}: the model carries an offline plan (OfflineMemoryAllocation); "
                           "read_plan gives TFLite Micro's online plan only")
    problem = tflm_head_problem(path)
    offsets = plan(problem, "tflm_greedy").offsets if problem.n else np.zeros(0, np.int64)
    return problem, offsets


def plan_for(path: str | Path, planner: str = "greedy_by_size", schedule: str = "file_order",
             time_limit: float = 10.0):
    """A memplan plan of the model at ``path`` for TFLite Micro: ``(plan, operator order)``,
    the problem of :func:`.offline.tflm_problem` (TFLM's 16-byte sizes and alignment) planned
    with registered ``planner`` under ``schedule``. Raises ``ValueError`` or
    :class:`planners.MemplanError` on bad input."""
    from planners.registry import planner_for

    from .offline import tflm_problem

    problem, order = tflm_problem(path, schedule)
    return planner_for(planner, time_limit).plan(problem), order


def write(model: str | Path, out: str | Path, planner: str = "greedy_by_size",
          schedule: str = "file_order", time_limit: float = 10.0) -> dict:
    """Write ``model`` planned by ``planner`` to ``out`` (offline-plan metadata; the report of
    :func:`.offline.export_offline`)."""
    from .offline import export_offline

    return export_offline(model, out, planner, schedule, time_limit)


def run(path: str | Path, inputs: Any = None, invocations: int = 3, seed: int = 0) -> dict:
    """Run the ``tflite-micro`` interpreter on ``path`` (:func:`.offline.run_model`: seeded
    inputs; ``inputs`` must be ``None``, the inputs are drawn from ``seed``) and return
    ``{"outputs", "head", "tail", "total"}`` (bytes)."""
    from .offline import run_model

    if inputs is not None:
        raise ValueError("tflm.run draws its inputs from the seed; pass inputs=None")
    return run_model(path, invocations=invocations, seed=seed)
