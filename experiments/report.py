"""``memplan report RESULTS_DIR``: every figure and table of a sweep, from its records alone.

Input: a sweep folder written by :func:`experiments.sweep.run_sweep` -- ``records/*.json`` (one
run each) and ``problems/DIGEST.csv`` (the planned problems, half-open ``[lower, upper)`` lifetimes
in schedule steps, sizes in bytes). Nothing is re-planned: arena layouts use the offsets stored in
the records.

For each run (workload, scheduler, planner, their parameters, seed, repetition, time limit) only
the records of its newest code version (:func:`newest_records`) are used unless ``all_versions`` /
``--all-versions``: the run key hashes the code the run executes (the planner's and scheduler's
modules and what they import, :func:`experiments.sweep.run_code_version`), so a sweep rerun after a
code change writes new records for the changed runs beside the old ones, and medians must not mix
them. Corrupt record files are left out with a warning naming each (``memplan sweep`` moves them
aside and runs them again). A folder without any record is an error.

Output (``RESULTS_DIR/report/`` by default), deterministic -- the same records give byte-identical
files (fixed metadata dates, ``svg.hashsalt``, sorted rows, no clock in the text):

* ``figures/planner_comparison`` -- arena / lower bound per planner and case, lower bound as the
  reference line; ``figures/ratio_heatmap``.
* ``figures/pareto_quality_time`` -- per workload, arena / lower bound against planning time with
  the Pareto front.
* ``figures/scaling_time_vs_buffers`` -- planning seconds against buffer count, log-log, per
  planner, with the fitted slope.
* ``figures/memory_over_time_*`` and ``figures/layout_*`` -- live bytes over schedule steps (one
  curve per scheduler) and the best plan's arena layout, for each workload.
* ``figures/rv64_cycles`` -- emulated RV64 cycles per planner (when the records have them).
* ``figures/tflm_comparison`` -- our arenas vs TFLite Micro's planned head (when recorded).
* ``tables/*.csv`` and ``report.md``, the summary for design reviews.

Figures are PNG + PDF by default (``formats``; add ``"svg"`` for vector figures for the web, they
are larger) in the paper style of :mod:`experiments.plots`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["build_report", "case_label", "pareto_front", "latest_code_version", "newest_records",
           "RUN_IDENTITY",
           "MAX_PER_WORKLOAD_FIGURES"]

#: At most this many workloads get memory-over-time and layout figures (sorted by name).
MAX_PER_WORKLOAD_FIGURES = 12


def case_label(workload: str, scheduler: str | None) -> str:
    """``"workload"`` for interval problems, ``"workload [scheduler]"`` for graph workloads."""
    return workload if scheduler in (None, "-", "") or pd.isna(scheduler) else f"{workload} [{scheduler}]"


def pareto_front(seconds: Sequence[float], ratio: Sequence[float]) -> np.ndarray:
    """Indices of the points not dominated in (less time, lower ratio), sorted by time.

    ``O(n log n)``: sort by (seconds, ratio), keep each point whose ratio is below every earlier
    one's.
    """
    s = np.asarray(seconds, float)
    r = np.asarray(ratio, float)
    order = np.lexsort((r, s))
    keep, best = [], math.inf
    for i in order.tolist():
        if r[i] < best:
            keep.append(i)
            best = r[i]
    return np.asarray(keep, dtype=np.int64)


def latest_code_version(df: pd.DataFrame) -> str | None:
    """The ``code_version`` of the most recently started record (greatest ``start_time``, UTC ISO
    8601; ties: greatest version text), or ``None`` when no record has one.

    A sweep rerun after a code change gets new run keys (the key hashes the code version), so its
    folder then holds a complete set for the new version beside the old records; the report uses
    the newest set unless asked for all. ``O(n)`` for ``n`` records.
    """
    if "code_version" not in df or df["code_version"].isna().all():
        return None
    t = df[df["code_version"].notna()]
    start = t["start_time"].fillna("").astype(str) if "start_time" in t else pd.Series("", t.index)
    i = max(range(len(t)), key=lambda k: (start.iloc[k], str(t["code_version"].iloc[k])))
    return str(t["code_version"].iloc[i])


#: Columns that identify a run apart from its code version (those present in the records count).
RUN_IDENTITY = ("workload", "workload_digest", "scheduler", "scheduler_params", "planner", "params",
                "seed", "rep", "time_limit")


def newest_records(df: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The records of each run's newest code version, and how many older records were left out.

    Runs are told apart by :data:`RUN_IDENTITY`; a run's newest version is the ``code_version`` of
    its most recently started record (greatest ``start_time``; ties: greatest version text).
    Records without a ``code_version`` are kept. ``O(n)`` for ``n`` records.
    """
    if df.empty or "code_version" not in df or df["code_version"].isna().all():
        return df, 0
    cols = [c for c in RUN_IDENTITY if c in df]
    ident = [json.dumps(row, default=str) for row in df[cols].itertuples(index=False, name=None)]
    start = df["start_time"].fillna("").astype(str).tolist() if "start_time" in df else [""] * len(df)
    cv = df["code_version"].tolist()
    newest: dict[str, tuple[str, str]] = {}
    for i, s, v in zip(ident, start, cv, strict=True):
        if isinstance(v, str) and (s, v) > newest.get(i, ("", "")):
            newest[i] = (s, v)
    keep = [not isinstance(v, str) or v == newest[i][1] for i, v in zip(ident, cv, strict=True)]
    kept = df[keep].reset_index(drop=True)
    return kept, len(df) - len(kept)


def _mixed_runs(df: pd.DataFrame) -> int:
    """How many runs have records of more than one code version."""
    if df.empty or "code_version" not in df:
        return 0
    cols = [c for c in RUN_IDENTITY if c in df]
    per = df.dropna(subset=["code_version"]).groupby(cols, dropna=False)["code_version"].nunique()
    return int((per > 1).sum())


def _config_label(planner: str, params: str, default_params: dict[str, str]) -> str:
    """Planner name plus the parameters that differ from the planner's first configuration."""
    try:
        p = json.loads(params or "{}")
    except (TypeError, ValueError):
        p = {}
    base = json.loads(default_params.get(planner, "{}") or "{}")
    diff = {k: v for k, v in p.items() if base.get(k) != v and k not in ("seed",)}
    return planner + ("" if not diff else " " + ",".join(f"{k}={v}" for k, v in sorted(diff.items())))


def _prepare(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["case"] = [case_label(w, s) for w, s in zip(df["workload"], df["scheduler"], strict=False)]
    firsts = {}
    for p, prm in zip(df["planner"], df["params"].fillna("{}"), strict=False):
        firsts.setdefault(p, prm)
    # the simplest configuration of each planner is the one with the smallest params text
    for p in firsts:
        firsts[p] = min(df.loc[df["planner"] == p, "params"].fillna("{}"), key=lambda x: (len(x), x))
    df["config"] = [_config_label(p, prm, firsts) for p, prm in zip(df["planner"], df["params"].fillna("{}"), strict=False)]
    df["valid"] = df["valid"].fillna(False).astype(bool)
    for c in ("arena", "lower_bound", "ratio", "seconds", "buffers", "wall_seconds"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def _aggregate(ok: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, config): median arena / ratio / seconds over seeds and repetitions."""
    g = ok.groupby(["case", "workload", "scheduler", "config", "planner"], sort=True, dropna=False)
    return g.agg(buffers=("buffers", "first"), lower_bound=("lower_bound", "first"),
                 arena=("arena", "median"), ratio=("ratio", "median"), seconds=("seconds", "median"),
                 runs=("key", "count")).reset_index()


def _problem(results: Path, digest: str, name: str):
    from planners import Problem

    f = results / "problems" / f"{digest}.csv"
    if not digest or not f.is_file():
        return None
    t = pd.read_csv(f)
    return Problem.from_arrays(t["lower"].to_numpy(), t["upper"].to_numpy(), t["size"].to_numpy(),
                               ids=[str(i) for i in t["id"]], name=name)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def build_report(results_dir: str | Path, out: str | Path | None = None,
                 formats: Sequence[str] = ("png", "pdf"),
                 max_workload_figures: int = MAX_PER_WORKLOAD_FIGURES,
                 all_versions: bool = False) -> list[Path]:
    """Write the figures, tables and ``report.md`` of a sweep folder; return the written paths.

    Parameters
    ----------
    results_dir : a sweep output folder (``records/``, ``problems/``).
    out : report folder (default ``results_dir/report``).
    formats : figure formats (``"png"``, ``"pdf"``, ``"svg"``).
    max_workload_figures : memory-over-time and layout figures for at most this many workloads
        (the first by sorted name).
    all_versions : use the records of every code version; by default only each run's newest
        (:func:`newest_records`; ``report.md`` says how many records were left out), so that
        medians never mix code versions.

    Raises
    ------
    experiments.sweep.ConfigError
        No ``records/`` folder, or no record in it.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments import plots
    from experiments.sweep import ConfigError, load_records

    results = Path(results_dir)
    df = load_records(results)
    if df.empty:
        raise ConfigError(f"{results}: records/ holds no record (corrupt ones are left out); run "
                          "`memplan sweep CONFIG` first")
    left_out = 0
    if not all_versions:
        df, left_out = newest_records(df)
    out = Path(out) if out is not None else results / "report"
    figs, tabs = out / "figures", out / "tables"
    figs.mkdir(parents=True, exist_ok=True)
    tabs.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    df = _prepare(df)
    ok = df[df["valid"]]
    agg = _aggregate(ok)

    def save(fig, stem):
        written.extend(plots.save(fig, figs / stem, formats=formats))

    # -- planner comparison ------------------------------------------------------------------
    comp = agg.rename(columns={"case": "workload_case"}).assign(
        workload=lambda d: d["workload_case"], planner=lambda d: d["config"], valid=True)
    if not comp.empty:
        save(plots.plot_ratio_by_planner(comp, title="Arena / lower bound per planner"),
             "planner_comparison")
        save(plots.plot_ratio_heatmap(comp), "ratio_heatmap")

    # -- Pareto: quality vs solve time per workload ------------------------------------------
    cases = sorted(agg["case"].unique())
    if cases:
        ncol = min(3, len(cases))
        nrow = math.ceil(len(cases) / ncol)
        plots.paper_style()
        fig, axes = plt.subplots(nrow, ncol, figsize=(2.6 * ncol + 1.6, 2.2 * nrow), squeeze=False)
        configs = sorted(agg["config"].unique())
        colour = {c: plots.PALETTE[i % len(plots.PALETTE)] for i, c in enumerate(configs)}
        marker = {c: plots.MARKERS[i % len(plots.MARKERS)] for i, c in enumerate(configs)}
        for ax, case in zip(axes.flat, cases, strict=False):
            sub = agg[agg["case"] == case].reset_index(drop=True)
            secs = np.maximum(sub["seconds"].to_numpy(float), 1e-6)
            for i, row in sub.iterrows():
                ax.scatter(secs[i], row["ratio"], color=colour[row["config"]],
                           marker=marker[row["config"]], s=22, label=row["config"], zorder=3)
            front = pareto_front(secs, sub["ratio"].to_numpy(float))
            ax.step(secs[front], sub["ratio"].to_numpy(float)[front], where="post", color="0.4",
                    lw=0.9, zorder=2)
            ax.axhline(1.0, color="black", ls="--", lw=0.8)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_title(case, fontsize=8)
            ax.set_xlabel("planning time (s)")
            ax.set_ylabel("arena / lower bound")
        for ax in list(axes.flat)[len(cases):]:
            ax.set_visible(False)
        handles = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=False):
                handles.setdefault(lab, h)
        fig.legend(list(handles.values()), list(handles.keys()), loc="center left",
                   bbox_to_anchor=(1.0, 0.5), frameon=False)
        fig.tight_layout()
        fig.suptitle("Quality vs planning time (dashed: lower bound; grey: Pareto front)", y=1.01)
        save(fig, "pareto_quality_time")

    # -- scaling: planning time vs buffer count (log-log) --------------------------------------
    sc = ok[(ok["buffers"] > 0) & (ok["seconds"] > 0)]
    if not sc.empty:
        plots.paper_style()
        fig, ax = plt.subplots(figsize=(6.0, 3.6))
        slopes = []
        for i, (cfg, sub) in enumerate(sorted(sc.groupby("config"), key=lambda kv: kv[0])):
            x, y = sub["buffers"].to_numpy(float), sub["seconds"].to_numpy(float)
            label = cfg
            if len(np.unique(x)) >= 2:
                slope = float(np.polyfit(np.log10(x), np.log10(y), 1)[0])
                slopes.append({"config": cfg, "slope": slope, "points": len(x)})
                label = f"{cfg} (slope {slope:.2f})"
            ax.scatter(x, y, s=12, color=plots.PALETTE[i % len(plots.PALETTE)],
                       marker=plots.MARKERS[i % len(plots.MARKERS)], label=label, alpha=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("buffers")
        ax.set_ylabel("planning time (s)")
        ax.set_title("Scaling of planning time with buffer count")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        save(fig, "scaling_time_vs_buffers")
        if slopes:
            written.append(_write_csv(pd.DataFrame(slopes), tabs / "scaling_slopes.csv"))

    # -- memory over time and arena layouts ------------------------------------------------------
    from planners import Plan

    for w in sorted(ok["workload"].unique())[:max_workload_figures]:
        sub = ok[ok["workload"] == w]
        scheds = sorted(sub["scheduler"].fillna("-").unique())
        profiles, main_problem, plans = {}, None, []
        for s in scheds:
            ss = sub[sub["scheduler"].fillna("-") == s]
            prob = _problem(results, str(ss.iloc[0]["problem_digest"] or ""), case_label(w, s))
            if prob is None:
                continue
            if main_problem is None:
                main_problem = prob
                best = ss[ss["offsets"].notna()].sort_values(["arena", "config", "key"]) \
                    if "offsets" in ss else ss.iloc[0:0]
                for _, row in best.drop_duplicates("config").head(2).iterrows():
                    offs = np.asarray(json.loads(row["offsets"]), dtype=np.int64)
                    if len(offs) == prob.n:
                        plans.append(Plan(prob, offs, row["config"], str(row["status"]),
                                          lower_bound=int(row["lower_bound"])))
            else:
                profiles[f"live bytes [{s}]"] = prob
        if main_problem is None:
            continue
        label = "live bytes" if len(scheds) == 1 or scheds == ["-"] else f"live bytes [{scheds[0]}]"
        fig = plots.plot_memory_over_time(main_problem, plans, title=f"Memory over time: {w}",
                                          profiles=profiles)
        if label != "live bytes":
            ax = fig.axes[0]
            handles, labels = ax.get_legend_handles_labels()
            labels = [label if lab == "live bytes" else lab for lab in labels]
            ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        save(fig, f"memory_over_time_{_safe(w)}")
        if plans:
            save(plots.plot_arena_layout(plans[0], title=f"Arena layout: {main_problem.name}, "
                                                        f"{plans[0].planner}"),
                 f"layout_{_safe(w)}")

    # -- RV64 cycles per planner -------------------------------------------------------------------
    rv = pd.DataFrame()
    if "rv64_cycles_u74" in df.columns:
        rv = df[pd.to_numeric(df["rv64_cycles_u74"], errors="coerce").notna()].copy()
    if not rv.empty:
        for c in ("rv64_cycles_u74", "rv64_cycles_c906", "rv64_instructions"):
            rv[c] = pd.to_numeric(rv[c], errors="coerce")
        rvt = rv.groupby("config", sort=True).agg(
            cases=("case", "nunique"), buffers=("buffers", "sum"),
            cycles_u74=("rv64_cycles_u74", "sum"), cycles_c906=("rv64_cycles_c906", "sum"),
            instructions=("rv64_instructions", "sum")).reset_index()
        rvt["cycles_per_buffer_u74"] = rvt["cycles_u74"] / rvt["buffers"]
        rvt["cycles_per_buffer_c906"] = rvt["cycles_c906"] / rvt["buffers"]
        written.append(_write_csv(rvt, tabs / "rv64_cycles.csv"))
        plots.paper_style()
        fig, ax = plt.subplots(figsize=(6.0, 3.0))
        xs = np.arange(len(rvt))
        ax.bar(xs - 0.2, rvt["cycles_per_buffer_u74"], 0.4, label="SiFive U74 (model)",
               color=plots.PALETTE[0])
        ax.bar(xs + 0.2, rvt["cycles_per_buffer_c906"], 0.4, label="T-Head C906 (model)",
               color=plots.PALETTE[1])
        ax.set_xticks(xs, rvt["config"], rotation=30, ha="right")
        ax.set_ylabel("cycles per buffer (emulated RV64)")
        ax.set_xlabel("planner")
        ax.set_title("Planning cost on RV64 cores")
        ax.legend(frameon=False)
        save(fig, "rv64_cycles")

    # -- ours vs TFLite Micro ---------------------------------------------------------------------
    tf = pd.DataFrame()
    if "tflm_arena_head" in df.columns:
        tf = ok[pd.to_numeric(ok["tflm_arena_head"], errors="coerce").notna()].copy()
    if not tf.empty:
        tf["tflm_arena_head"] = pd.to_numeric(tf["tflm_arena_head"])
        rows = []
        for case, sub in sorted(tf.groupby("case"), key=lambda kv: kv[0]):
            best = sub.sort_values(["arena", "config"]).iloc[0]
            gbs = sub[sub["planner"] == "greedy_by_size"]["arena"]
            rows.append({"case": case, "lower_bound": int(best["lower_bound"]),
                         "best_arena": int(best["arena"]), "best_planner": best["config"],
                         "greedy_by_size": int(gbs.min()) if len(gbs) else None,
                         "tflm_head": int(sub["tflm_arena_head"].iloc[0])})
        tft = pd.DataFrame(rows)
        written.append(_write_csv(tft, tabs / "tflm_comparison.csv"))
        plots.paper_style()
        fig, ax = plt.subplots(figsize=(6.5, 0.6 + 0.45 * len(tft)))
        ys = np.arange(len(tft))
        ax.barh(ys - 0.27, tft["tflm_head"], 0.27, label="TFLite Micro head", color=plots.PALETTE[3])
        ax.barh(ys, tft["best_arena"], 0.27, label="ours (best planner)", color=plots.PALETTE[0])
        ax.barh(ys + 0.27, tft["lower_bound"], 0.27, label="lower bound", color=plots.PALETTE[2])
        ax.set_yticks(ys, tft["case"])
        ax.invert_yaxis()
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plots._human_bytes))
        ax.set_xlabel("activation arena (bytes)")
        ax.set_title("Ours vs TFLite Micro's planner")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        save(fig, "tflm_comparison")

    # -- tables and the markdown summary ----------------------------------------------------------
    written.append(_write_csv(agg, tabs / "runs_aggregated.csv"))
    pivot = agg.pivot_table(index="case", columns="config", values="ratio", aggfunc="min")
    written.append(_write_csv(pivot.reset_index(), tabs / "ratio_pivot.csv"))
    per = (agg.groupby("config", sort=True)
           .agg(cases=("case", "count"),
                geomean_ratio=("ratio", lambda r: float(np.exp(np.log(r.to_numpy(float)).mean()))),
                worst_ratio=("ratio", "max"), median_seconds=("seconds", "median"),
                total_seconds=("seconds", "sum")).reset_index())
    best_per_case = agg.loc[agg.groupby("case")["ratio"].transform("min") == agg["ratio"]]
    per["best_on"] = per["config"].map(best_per_case["config"].value_counts()).fillna(0).astype(int)
    written.append(_write_csv(per, tabs / "per_planner.csv"))
    bad = df[~df["valid"]][["case", "config", "status", "error"]].sort_values(["case", "config"])
    written.append(_write_csv(bad, tabs / "failed_runs.csv"))
    md = _markdown(df, agg, pivot, per, bad, tf, rv, figs, out, left_out)
    path = out / "report.md"
    path.write_text(md)
    written.append(path)
    return written


def _write_csv(t: pd.DataFrame, path: Path) -> Path:
    t.to_csv(path, index=False, float_format="%.6g")
    return path


def _markdown(df, agg, pivot, per, bad, tf, rv, figs: Path, out: Path, left_out: int = 0) -> str:
    prov = df.groupby(["code_version", "git_commit", "cpu_model", "cpu_cores"], dropna=False) \
        .size().reset_index(name="runs") if "code_version" in df else pd.DataFrame()
    cases = agg.groupby("case", sort=True).agg(buffers=("buffers", "first"),
                                                lower_bound=("lower_bound", "first"),
                                                best_arena=("arena", "min")).reset_index()
    cases["best_arena"] = cases["best_arena"].round().astype("Int64")
    lines = [
        "# Sweep report",
        "",
        f"{len(df)} runs ({int(df['valid'].sum())} valid plans, {len(bad)} without one) on "
        f"{df['workload'].nunique()} workloads, {df['planner'].nunique()} planners, "
        f"{df['scheduler'].nunique()} schedulers (`-`: an interval problem, no scheduler). "
        "Regenerated from the records by `memplan report`; sizes in bytes, times in seconds "
        "(median over seeds and repetitions); every plan passed the independent validator.",
        "",
    ]
    mixed = _mixed_runs(df)
    if mixed:
        versions = sorted(df["code_version"].dropna().astype(str).unique())
        lines += [f"**Warning:** {mixed} runs have records that come from {len(versions)} code "
                  f"versions ({', '.join(versions)}); medians mix them. Delete the folder and run "
                  "the sweep again for figures of one version.", ""]
    if left_out:
        lines += ["Only the records of each run's newest code version are used; "
                  f"{left_out} records of older code versions were left out "
                  "(`memplan report --all-versions` "
                  "uses them too).", ""]
    lines += [
        "## Workloads",
        "",
        cases.to_markdown(index=False),
        "",
        "## Arena / lower bound (1.000 = lower bound)",
        "",
        pivot.reset_index().to_markdown(index=False, floatfmt=".3f"),
        "",
        "## Per planner",
        "",
        per.to_markdown(index=False, floatfmt=".4g"),
        "",
    ]
    if len(tf):
        lines += ["## Ours vs TFLite Micro", "",
                  "TFLite Micro's *head* is the non-persistent arena its greedy planner reports "
                  "(`print_allocations`); ours plans the same tensors (graph input included, "
                  "16-byte alignment).", ""]
        t = pd.read_csv(out / "tables" / "tflm_comparison.csv")
        lines += [t.to_markdown(index=False), ""]
    if len(rv):
        t = pd.read_csv(out / "tables" / "rv64_cycles.csv")
        lines += ["## RV64 planning cost (emulated)", "", t.to_markdown(index=False, floatfmt=".4g"), ""]
    if len(bad):
        lines += ["## Runs without a valid plan", "", bad.to_markdown(index=False), ""]
    if len(prov):
        lines += ["## Provenance", "", prov.to_markdown(index=False), ""]
    lines += ["## Figures", ""]
    for f in sorted(figs.glob("*.png")):
        lines.append(f"![{f.stem}](figures/{f.name})")
    lines.append("")
    return "\n".join(lines)
