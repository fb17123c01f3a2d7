"""``make bench-transforms``: peak and arena without and with fusion on the benchmark models.

``python -m experiments.bench.transforms --out results/bench_transforms.csv`` -- the nine ONNX
models, seed 003's MobileNet V1 first layer and the full MobileNet V1/V2 (int8): peak and arena
without and with fusion, saved bytes (rows of :func:`experiments.transforms_compare.compare_pipeline`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.records import write_csv
from experiments.transforms_compare import BENCH_MODELS, compare_pipeline
from experiments.workloads import load_graph

__all__ = ["bench_transforms", "main"]


def bench_transforms(
    models: Sequence[str] = BENCH_MODELS,
    planner: str = "greedy_by_size",
    fused_pipeline: str = "simplify,views,fuse,inplace",
    unfused_pipeline: str = "simplify,views",
    *,
    allow_peak_increase: bool = False,
) -> list[dict[str, Any]]:
    """One row per model: peak and arena of the imported graph, without fusion
    (``unfused_pipeline``) and with fusion (``fused_pipeline``), and fusion's saved bytes
    (``2 x size(intermediate) x steps_eliminated`` summed) and refusal counts (``refused``: all
    refusals; ``refused_peak``: those of fusions that would raise the peak, applied instead when
    ``allow_peak_increase``)."""
    from scheduling.transforms import run_pipeline

    params = {"fuse": {"allow_peak_increase": True}} if allow_peak_increase else {}
    rows = []
    for m in models:
        g = load_graph(m)
        base = compare_pipeline(g, [], planner)[0]
        t0 = time.perf_counter()
        g_un, _ = run_pipeline(g, unfused_pipeline)
        g_f, logs = run_pipeline(g, fused_pipeline, params)
        dt = time.perf_counter() - t0
        un = compare_pipeline(g_un, [], planner)[0]
        fu = compare_pipeline(g_f, [], planner)[0]
        fl = next((lg for lg in logs if lg.name == "fuse"), None)
        rows.append({
            "model": m, "ops": len(g.ops), "ops_fused": len(g_f.ops),
            "peak_original": base["peak"], "peak_no_fusion": un["peak"], "peak_fusion": fu["peak"],
            "arena_no_fusion": un["arena"], "arena_fusion": fu["arena"],
            "saved_bytes": int(fl.stats.get("saved_bytes", 0)) if fl else 0,
            "fusions": (fl.count("fuse") + fl.count("fold_bn")) if fl else 0,
            "refused": fl.count("refuse") if fl else 0,
            "refused_peak": sum(c.get("reason") == "raises_peak" for c in fl.changes) if fl else 0,
            "would_be_spills": int(fl.stats.get("would_be_spills", 0)) if fl else 0,
            "alias_links": fu["alias_links"], "planner": planner,
            "pipeline": fused_pipeline, "seconds": round(dt, 4),
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.bench.transforms --out results/bench_transforms.csv``."""
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench_transforms.csv")
    ap.add_argument("--planner", default="greedy_by_size")
    ap.add_argument("--models", nargs="*", default=list(BENCH_MODELS))
    ap.add_argument("--allow-peak-increase", action="store_true",
                    help="apply fusions that raise the peak (refused by default)")
    args = ap.parse_args(argv)
    df = pd.DataFrame(bench_transforms(args.models, args.planner,
                                       allow_peak_increase=args.allow_peak_increase))
    write_csv(df, Path(args.out))
    print(df.to_string(index=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
