"""The TFLite Micro arena model against the interpreter: ``make bench-tflm``.

For every bundled ``.tflite`` model (``../shared/cases/add_chain.tflite`` when present, the
pymicro-wakeword models, the mediapipe ones when installed) one row of
``results/bench_tflm_arena.csv``:

* ``head``, ``tail``, ``total``: what the ``tflite-micro`` recording allocator reports for a large
  arena (:func:`experiments.tflm_oracle.tflm_arena`);
* ``head_model``: ``greedy_by_size`` on our activation problem (TFLM's GreedyMemoryPlanner);
* ``tail_model``, ``runtime_arena_model``: :func:`experiments.tflm_oracle.tflm_arena_model`
  (empty where a kernel is not modelled; ``reason`` names it);
* ``runtime_arena_check``: the same model of the two moments (final arena and plan commit) with
  the measured tail in place of the modelled one, ``max(total, tail at commit + planning
  work)``: it checks the planning-moment part of the model on every model, including those whose
  kernels are not modelled (their scratch requests counted as none; the tail bytes allocated
  after the commit are the modelled ones, whose 16-byte padding depends on the tail position:
  within 8 bytes where the position is not modelled);
* ``bisected_min``: the smallest ``arena_size`` the interpreter accepts
  (:func:`experiments.tflm_oracle.tflm_min_arena`);
* ``difference``: ``runtime_arena_model - bisected_min`` (empty without a model);
  ``check_difference``: ``runtime_arena_check - bisected_min``.

Run: ``python -m experiments.bench_tflm --out results/bench_tflm_arena.csv`` (about 5 s per
model: one child process per bisection probe).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["COLUMNS", "bench_models", "bench_row", "main"]

COLUMNS = ["model", "head", "tail", "total", "head_model", "tail_model", "runtime_arena_model",
           "runtime_arena_check", "bisected_min", "difference", "check_difference", "reason"]


def bench_models() -> dict[str, Path]:
    """``{name: path}`` of the bundled ``.tflite`` models (case file first when present)."""
    from experiments.workloads import tflite_model_files

    out: dict[str, Path] = {}
    case = Path(__file__).resolve().parents[2] / "shared" / "cases" / "add_chain.tflite"
    if case.is_file():
        out["case:add_chain"] = case
    out.update(tflite_model_files())
    return out


def bench_row(name: str, path: str | Path) -> dict:
    """One row of the benchmark (see the module docstring); raises
    :class:`experiments.tflm_oracle.TflmUnavailable` when the interpreter cannot run."""
    from experiments.tflm_oracle import tflm_arena, tflm_arena_model, tflm_min_arena

    measured = tflm_arena(path)
    m = tflm_arena_model(path)
    check = max(measured.total, measured.tail - m.post_commit + m.planning_work)
    lo = tflm_min_arena(path)
    return {
        "model": name, "head": measured.head, "tail": measured.tail, "total": measured.total,
        "head_model": m.head, "tail_model": m.tail, "runtime_arena_model": m.runtime_arena,
        "runtime_arena_check": check, "bisected_min": lo,
        "difference": None if m.runtime_arena is None else m.runtime_arena - lo,
        "check_difference": check - lo, "reason": m.reason,
    }


def main(argv: list[str] | None = None) -> int:
    """Write the benchmark CSV; returns 0, or 2 when ``tflite-micro`` is unavailable."""
    import pandas as pd

    from experiments.tflm_oracle import tflm_available

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench_tflm_arena.csv")
    args = ap.parse_args(argv)
    ok, why = tflm_available()
    if not ok:
        print(f"bench_tflm: {why}", file=sys.stderr)
        return 2
    rows = []
    for name, path in bench_models().items():
        rows.append(bench_row(name, path))
        print(f"{name}: model {rows[-1]['runtime_arena_model']} bisected {rows[-1]['bisected_min']}",
              file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in COLUMNS[1:-1]:
        df[c] = df[c].astype("Int64")
    tmp = out.with_name(out.name + ".tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(out)
    print(f"wrote {out} ({len(df)} models)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
