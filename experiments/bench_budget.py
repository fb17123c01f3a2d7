"""Budget benchmark: patch-based inference, recomputation, memory tiers and pools.

``python -m experiments.bench_budget --out results/bench_budget.csv`` (``make bench-budget``)
writes one row per (model, technique, budget or setting) and the figure
``results/figures/budget_vs_overhead.png/.pdf``:

* MobileNetV2 1.0 224x224 int8 (:func:`scheduling.mobilenet.mobilenet_v2`): layer-by-layer peak,
  4x4 patches at the best stage end (the MCUNetV2 setting), and the plan chosen for budgets
  256 kB and 512 kB (kB = 1024 bytes), each under both accountings of :mod:`scheduling.patch`;
* the nine ONNX light models: the Pareto curve of patch-based peak vs recomputed MACs, the
  smallest peak greedy recomputation reaches, SRAM capacity vs DRAM traffic of the two-level
  assignment, a buddy pool replay vs the static arena, and joint vs separate arenas.

Columns: ``model, technique, setting, accounting, budget, peak, baseline_peak, reduction,
overhead, overhead_kind, extra_macs, extra_bytes, seconds``. ``overhead`` is a ratio:
recomputed MACs / MACs of the model (patch, recompute), DRAM traffic / total traffic (tiers),
pool / static arena - 1 (pools), separate / joint - 1 (multi-model).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from planners import plan as run_plan
from planners.pools import BuddyAllocator, replay
from planners.tiers import assign_tiers, multi_model_arenas
from scheduling.lifetimes import lifetime_problem
from scheduling.mobilenet import mobilenet_v2
from scheduling.patch import layer_peak, patch_candidates, plan_patches
from scheduling.recompute import checkpoint_curve, greedy_recompute
from scheduling.tiling import BudgetError
from scheduling.workloads import ONNX_LIGHT_MODELS, load_light_model

__all__ = ["mobilenet_rows", "onnx_rows", "plot_budget", "main"]

KB = 1024
COLUMNS = ["model", "technique", "setting", "accounting", "budget", "peak", "baseline_peak",
           "reduction", "overhead", "overhead_kind", "extra_macs", "extra_bytes", "seconds"]


def _row(**kw) -> dict:
    return {c: kw.get(c) for c in COLUMNS}


def _pareto(cands):
    """Candidates not dominated in (peak, extra MACs), sorted by peak."""
    out, best = [], None
    for c in sorted(cands, key=lambda c: (c.peak, c.extra_macs)):
        if best is None or c.extra_macs < best:
            out.append(c)
            best = c.extra_macs
    return out


def mobilenet_rows() -> list[dict]:
    """MobileNetV2 1.0 224 int8 rows (module docstring)."""
    g = mobilenet_v2(1.0, 224, "int8")
    rows = []
    for acc in ("lifetime", "layer_io"):
        t0 = time.perf_counter()
        base = layer_peak(g, accounting=acc)
        rows.append(_row(model=g.name, technique="layer_by_layer", setting="", accounting=acc,
                         peak=base, baseline_peak=base, reduction=1.0, overhead=0.0,
                         overhead_kind="extra_macs", extra_macs=0, extra_bytes=0,
                         seconds=time.perf_counter() - t0))
        t0 = time.perf_counter()
        cands = patch_candidates(g, grids=range(1, 9), accounting=acc)
        sec = time.perf_counter() - t0
        p44 = min((c for c in cands if c.grid == (4, 4)), key=lambda c: (c.peak, c.extra_macs))
        rows.append(_row(model=g.name, technique="patch_4x4_best_stage",
                         setting=f"stage_end={p44.stage_end};grid=4x4;stage_peak={p44.stage_peak};"
                                 f"rest_peak={p44.rest_peak}",
                         accounting=acc, peak=p44.peak, baseline_peak=base,
                         reduction=p44.reduction, overhead=p44.extra_macs_ratio,
                         overhead_kind="extra_macs", extra_macs=p44.extra_macs,
                         extra_bytes=p44.extra_bytes_read, seconds=sec))
        for budget in (256 * KB, 512 * KB):
            t0 = time.perf_counter()
            r = plan_patches(g, budget, accounting=acc)
            rows.append(_row(model=g.name, technique="patch_plan",
                             setting=f"stage_end={r.stage_end};grid={r.grid[0]}x{r.grid[1]}",
                             accounting=acc, budget=budget, peak=r.peak, baseline_peak=base,
                             reduction=r.reduction, overhead=r.extra_macs_ratio,
                             overhead_kind="extra_macs", extra_macs=r.extra_macs,
                             extra_bytes=r.extra_bytes_read, seconds=time.perf_counter() - t0))
        for c in _pareto(cands):
            rows.append(_row(model=g.name, technique="patch_pareto",
                             setting=f"stage_end={c.stage_end};grid={c.grid[0]}x{c.grid[1]}",
                             accounting=acc, peak=c.peak, baseline_peak=base,
                             reduction=c.reduction, overhead=c.extra_macs_ratio,
                             overhead_kind="extra_macs", extra_macs=c.extra_macs,
                             extra_bytes=c.extra_bytes_read))
    return rows


def onnx_rows(models=None, tier_fractions=(0.125, 0.25, 0.5, 1.0)) -> list[dict]:
    """Rows for the ONNX light models (module docstring)."""
    rows = []
    problems = []
    for name in models or ONNX_LIGHT_MODELS:
        g = load_light_model(name)
        p = lifetime_problem(g)
        problems.append(p)
        base = layer_peak(g)
        static = run_plan(p, "greedy_by_size").arena_size
        rows.append(_row(model=name, technique="layer_by_layer", accounting="lifetime",
                         peak=base, baseline_peak=base, reduction=1.0, overhead=0.0,
                         overhead_kind="extra_macs", setting=f"static_arena={static}"))
        t0 = time.perf_counter()
        cands = patch_candidates(g, grids=range(1, 9))
        sec = time.perf_counter() - t0
        for c in _pareto(cands):
            rows.append(_row(model=name, technique="patch_pareto", accounting="lifetime",
                             setting=f"stage_end={c.stage_end};grid={c.grid[0]}x{c.grid[1]}",
                             peak=c.peak, baseline_peak=base, reduction=c.reduction,
                             overhead=c.extra_macs_ratio, overhead_kind="extra_macs",
                             extra_macs=c.extra_macs, extra_bytes=c.extra_bytes_read,
                             seconds=sec))
        t0 = time.perf_counter()
        rc = greedy_recompute(g)
        rows.append(_row(model=name, technique="recompute_greedy", accounting="stage",
                         setting=f"recomputed={len(rc.recomputed)}", peak=rc.peak,
                         baseline_peak=rc.baseline_peak,
                         reduction=rc.baseline_peak / rc.peak if rc.peak else None,
                         overhead=rc.extra_ratio, overhead_kind="extra_macs",
                         extra_macs=rc.extra_cost, seconds=time.perf_counter() - t0))
        acc = [1 + len(g.tensors[b.id].consumers) for b in p.buffers]
        for f in tier_fractions:
            cap = int(base * f)
            t0 = time.perf_counter()
            ta = assign_tiers(p, cap, acc)
            rows.append(_row(model=name, technique="tiers_greedy", accounting="lifetime",
                             setting=f"sram_fraction={f};dram_arena={ta.dram_arena}",
                             budget=cap, peak=ta.sram_arena, baseline_peak=base,
                             overhead=ta.dram_traffic / ta.total_traffic,
                             overhead_kind="dram_traffic_share", extra_bytes=ta.dram_traffic,
                             seconds=time.perf_counter() - t0))
        size = 1 << int(np.ceil(np.log2(max(1, int(p.sizes.sum())))))
        t0 = time.perf_counter()
        rb = replay(p, BuddyAllocator(size, 64))
        rows.append(_row(model=name, technique="pool_buddy", accounting="lifetime",
                         setting=f"peak_fragmentation={rb['peak_allocated'] - rb['peak_used']}",
                         peak=rb["high_water"], baseline_peak=static,
                         overhead=rb["high_water"] / static - 1, overhead_kind="pool_over_static",
                         seconds=time.perf_counter() - t0))
    for mode in ("interleaved", "sequential"):
        mm = multi_model_arenas(problems, mode=mode)
        rows.append(_row(model="+".join(models or ONNX_LIGHT_MODELS), technique="multi_model",
                         setting=f"mode={mode};separate={mm['separate']}", peak=mm["joint"],
                         baseline_peak=mm["separate"], reduction=mm["separate"] / mm["joint"],
                         overhead=mm["waste"], overhead_kind="separate_waste"))
    return rows


def plot_budget(df: pd.DataFrame, path: str | Path) -> list[Path]:
    """Budget (peak / layer-by-layer peak) vs overhead: patch-based inference per model (extra
    MACs), the two-level assignment (DRAM traffic share vs SRAM capacity), and seed 002's
    ``sqrt(n)`` checkpointing reference (extra forward share vs memory share)."""
    import matplotlib.pyplot as plt

    from .plots import MARKERS, PALETTE, paper_style, save

    paper_style()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    pp = df[df.technique == "patch_pareto"]
    for k, (m, d) in enumerate(pp.groupby("model", sort=False)):
        if d.accounting.iloc[0] != "lifetime":
            continue
        axes[0].plot(d.peak / d.baseline_peak, 100 * d.overhead, marker=MARKERS[k % len(MARKERS)],
                     color=PALETTE[k % len(PALETTE)], ms=3, lw=1, label=m)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("peak / layer-by-layer peak")
    axes[0].set_ylabel("recomputed MACs (% of model)")
    axes[0].set_title("Patch-based inference (Pareto)")
    axes[0].legend(fontsize=6, ncol=2)
    tt = df[df.technique == "tiers_greedy"]
    for k, (m, d) in enumerate(tt.groupby("model", sort=False)):
        axes[1].plot(d.budget / d.baseline_peak, 100 * d.overhead, marker=MARKERS[k % len(MARKERS)],
                     color=PALETTE[k % len(PALETTE)], ms=3, lw=1, label=m)
    axes[1].set_xlabel("SRAM capacity / layer-by-layer peak")
    axes[1].set_ylabel("DRAM traffic (% of all traffic)")
    axes[1].set_title("Two-level SRAM/DRAM assignment")
    c = checkpoint_curve(100, ks=range(1, 11))  # k beyond sqrt(n) only costs more memory
    axes[2].plot([1.0, *(c["memory"] / 100)], [0.0, *(100 * c["extra_ratio"])],
                 color=PALETTE[0], lw=1, marker="o", ms=2, label="store all, k = 1..10, n = 100")
    axes[2].plot([c["memory"][-1] / 100], [100 * c["extra_ratio"][-1]], "o", color=PALETTE[3],
                 label="k = sqrt(n) = 10")
    axes[2].set_xlabel("memory / (n x layer bytes)")
    axes[2].set_ylabel("recomputed forward (% of a pass)")
    axes[2].set_title("sqrt(n) checkpointing (seed 002)")
    axes[2].legend()
    return save(fig, path)


def main(argv=None) -> int:
    """Entry point: ``--out`` CSV path, ``--models`` subset of the ONNX models, ``--no-plot``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench_budget.csv")
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args(argv)
    rows = mobilenet_rows() + onnx_rows(a.models)
    df = pd.DataFrame(rows, columns=COLUMNS)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    if not a.no_plot:
        plot_budget(df, out.parent / "figures" / "budget_vs_overhead")
    show = df[df.technique.isin(["layer_by_layer", "patch_4x4_best_stage", "patch_plan",
                                 "recompute_greedy", "multi_model"])]
    print(show[["model", "technique", "accounting", "budget", "peak", "reduction",
                "overhead"]].to_string(index=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    try:
        raise SystemExit(main())
    except BudgetError as e:
        raise SystemExit(f"error: {e}") from None
