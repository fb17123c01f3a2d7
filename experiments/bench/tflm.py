"""The TFLite Micro arena model against the interpreter: ``make bench-tflm``.

For every bundled ``.tflite`` model (the ``.tflite`` files of ``../shared/cases/`` when present,
the pymicro-wakeword models, the mediapipe ones when installed) and two models with subgraphs
built here (:func:`control_flow_models`: ``IF``, ``CALL_ONCE``) one row of
``results/bench_tflm_arena.csv``:

* ``head``, ``tail``, ``total``: what the ``tflite-micro`` recording allocator reports for a large
  arena (:func:`experiments.runtimes.tflm.oracle.tflm_arena`);
* ``head_model``: :func:`experiments.runtimes.tflm.oracle.tflm_head`, the ``tflm_greedy`` planner (TFLM's
  GreedyMemoryPlanner) on TFLM's own lifetimes of every subgraph's tensors;
* ``tail_model``, ``runtime_arena_model``: :func:`experiments.runtimes.tflm.oracle.tflm_arena_model`
  (empty where a kernel is not modelled; ``reason`` names it);
* ``bisected_min``: the smallest ``arena_size`` the interpreter accepts
  (:func:`experiments.runtimes.tflm.oracle.tflm_min_arena`);
* ``difference``: ``runtime_arena_model - bisected_min`` (empty without a model);
* ``check_low``, ``check_high``, ``check_holds``: the model of the two moments (final arena and
  plan commit) with the measured tail in place of the modelled one, ``max(total, tail at commit
  + planning work)``. It checks the planning-moment part of the model on every model, including
  those whose kernels are not modelled (their scratch requests counted as none). The tail at
  the commit is the measured tail minus the modelled input/output structs allocated after it,
  whose 16-byte padding depends on where the tail stood, unknown without the kernels' model: so
  two values, 8 bytes apart. Both assume a 16-byte aligned arena end; the interpreter's tail
  starts at ``start + arena_size``, which can save up to 8 bytes (``case:dangling``: 2040 against
  a total of 2048), so ``check_low`` is the lower value minus 8; ``check_holds`` says whether
  ``bisected_min`` lies between ``check_low`` and ``check_high``.

Run: ``python -m experiments.bench.tflm --out results/bench_tflm_arena.csv`` (about 5 s per
model: one child process per bisection probe).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.records import write_csv
from experiments.runtimes.tflm.writer import write_tflite

__all__ = ["COLUMNS", "bench_models", "bench_row", "main", "write_tflite", "control_flow_models"]

COLUMNS = ["model", "head", "tail", "total", "head_model", "tail_model", "runtime_arena_model",
           "bisected_min", "difference", "check_low", "check_high", "check_holds", "reason"]


def control_flow_models(folder: str | Path) -> dict[str, Path]:
    """Two small float models with subgraphs, written into ``folder``: ``built:if`` (an ``IF``
    whose branches need 512 and 768 bytes) and ``built:call_once`` (a ``CALL_ONCE`` whose
    initialisation subgraph needs 512 bytes, then an ``ADD``); tensors of ``[1, 64]`` float32."""
    import tflite

    f32, v = tflite.TensorType.FLOAT32, [1, 64]
    a = {"tensors": [("a", v, f32), ("b", v, f32), ("o", v, f32)], "inputs": [0], "outputs": [2],
         "ops": [("ADD", [0, 0], [1], None), ("ADD", [1, 1], [2], None)]}
    b = {"tensors": [("a", v, f32), ("b1", v, f32), ("b2", v, f32), ("o", v, f32)],
         "inputs": [0], "outputs": [3],
         "ops": [("ADD", [0, 0], [1], None), ("ADD", [1, 0], [2], None),
                 ("ADD", [2, 1], [3], None)]}
    if_main = {"tensors": [("c", [1], tflite.TensorType.BOOL), ("x", v, f32), ("y", v, f32)],
               "inputs": [0, 1], "outputs": [2],
               "ops": [("IF", [0, 1], [2], ("IfOptions", {"ThenSubgraphIndex": 1,
                                                           "ElseSubgraphIndex": 2}))]}
    once_main = {"tensors": [("x", v, f32), ("y", v, f32)], "inputs": [0], "outputs": [1],
                 "ops": [("CALL_ONCE", [], [], ("CallOnceOptions", {"InitSubgraphIndex": 1})),
                         ("ADD", [0, 0], [1], None)]}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return {"built:if": write_tflite(folder / "if.tflite", [if_main, a, b]),
            "built:call_once": write_tflite(folder / "call_once.tflite", [once_main, a])}


def bench_models() -> dict[str, Path]:
    """``{name: path}`` of the bundled ``.tflite`` models (the shared case files first, when
    present, as ``case:<stem>``)."""
    from experiments.workloads import tflite_model_files

    out: dict[str, Path] = {}
    cases = Path(__file__).resolve().parents[3] / "shared" / "cases"
    for case in sorted(cases.glob("*.tflite")) if cases.is_dir() else ():
        out[f"case:{case.stem}"] = case
    out.update(tflite_model_files())
    return out


def bench_row(name: str, path: str | Path) -> dict:
    """One row of the benchmark (see the module docstring); raises
    :class:`experiments.runtimes.tflm.oracle.TflmUnavailable` when the interpreter cannot run."""
    from experiments.runtimes.tflm.oracle import tflm_arena, tflm_arena_model, tflm_min_arena

    measured = tflm_arena(path)
    m = tflm_arena_model(path)
    posts = m.post_commit if isinstance(m.post_commit, tuple) else (m.post_commit,)
    checks = [max(measured.total, measured.tail - post + m.planning_work) for post in posts]
    lo = tflm_min_arena(path)
    return {
        "model": name, "head": measured.head, "tail": measured.tail, "total": measured.total,
        "head_model": m.head, "tail_model": m.tail, "runtime_arena_model": m.runtime_arena,
        "check_low": min(checks) - 8, "check_high": max(checks), "bisected_min": lo,
        "difference": None if m.runtime_arena is None else m.runtime_arena - lo,
        "check_holds": min(checks) - 8 <= lo <= max(checks), "reason": m.reason,
    }


def main(argv: list[str] | None = None) -> int:
    """Write the benchmark CSV; returns 0, or 2 when ``tflite-micro`` is unavailable."""
    import pandas as pd

    from experiments.runtimes.tflm.oracle import tflm_available

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench_tflm_arena.csv")
    args = ap.parse_args(argv)
    ok, why = tflm_available()
    if not ok:
        print(f"bench_tflm: {why}", file=sys.stderr)
        return 2
    import tempfile

    rows = []
    tmp = tempfile.mkdtemp(prefix="bench_tflm_")
    for name, path in {**bench_models(), **control_flow_models(tmp)}.items():
        rows.append(bench_row(name, path))
        print(f"{name}: model {rows[-1]['runtime_arena_model']} bisected {rows[-1]['bisected_min']}",
              file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in COLUMNS[1:-2]:
        df[c] = df[c].astype("Int64")
    write_csv(df, out)
    print(f"wrote {out} ({len(df)} models)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
