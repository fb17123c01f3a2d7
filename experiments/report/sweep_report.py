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

Every record field that reaches a path, ``report.md`` or a figure's text goes through
:mod:`experiments.safe`: a record's ``problem_digest`` must be a SHA-256 hex digest whose
``problems/`` file lies inside the sweep folder (otherwise the report refuses, naming the record,
before it writes anything), a stored problem is read only when its content matches the record
(``problem_sha256``, the SHA-256 of the CSV text; a ``.ref`` by its digest), and every table cell
and name is escaped (:func:`experiments.safe.md_table`, ``plot_text``).

Figures are PNG + PDF by default (``formats``; add ``"svg"`` for vector figures for the web, they
are larger) in the paper style of :mod:`experiments.plots`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.metrics import coverage_note, pareto_front, planner_summary
from experiments.records import atomic_write, write_csv, write_parquet
from experiments.safe import (
    UnsafeInputError,
    check_digest,
    file_stem,
    md_cell,
    md_table,
    md_text,
    plot_frame,
    plot_text,
    stored_problem,
)
from planners.io import output_folder

__all__ = ["build_report", "case_label", "pareto_front", "latest_code_version", "newest_records",
           "RUN_IDENTITY", "pool_table", "check_stored_problems",
           "MAX_PER_WORKLOAD_FIGURES"]

#: At most this many workloads get memory-over-time and layout figures (sorted by name).
MAX_PER_WORKLOAD_FIGURES = 12


def case_label(workload: str, scheduler: str | None) -> str:
    """``"workload"`` for interval problems, ``"workload [scheduler]"`` for graph workloads."""
    return workload if scheduler in (None, "-", "") or pd.isna(scheduler) else f"{workload} [{scheduler}]"


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
                "seed", "rep", "time_limit", "pools")


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
    if "pools" in df:  # a sweep's pools key: each pool set is a configuration of its own
        df["pools"] = df["pools"].fillna("").astype(str)
        df["config"] = [c + (f" [pools {t}]" if t else "") for c, t in
                        zip(df["config"], df["pools"], strict=True)]
    df["valid"] = df["valid"].fillna(False).astype(bool)
    for c in ("arena", "lower_bound", "ratio", "seconds", "buffers", "wall_seconds"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def _aggregate(ok: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, config): median arena / ratio / seconds over seeds and repetitions."""
    g = ok.groupby(["case", "workload", "scheduler", "config", "planner"], sort=True, dropna=False)
    family = {"family": ("family", "first")} if "family" in ok else {}
    return g.agg(**family, buffers=("buffers", "first"), lower_bound=("lower_bound", "first"),
                 arena=("arena", "median"), ratio=("ratio", "median"), seconds=("seconds", "median"),
                 runs=("key", "count"),
                 status=("status", lambda s: s.iloc[0] if s.nunique() == 1 else "mixed")
                 ).reset_index()


def _record_name(row) -> str:
    """``"record KEY"`` (the record's file name in ``records/``), for messages."""
    return f"record {row.get('key')}" if row.get("key") is not None else "a record"


def _digest_of(row) -> str:
    """A record's ``problem_digest`` as text, ``""`` when it has none (a run whose problem could
    not be built)."""
    d = row.get("problem_digest")
    return "" if d is None or (np.isscalar(d) and not isinstance(d, str) and pd.isna(d)) or \
        d is pd.NA else d


def check_stored_problems(df: pd.DataFrame, results: Path) -> None:
    """Refuse a sweep folder whose records name a stored problem unsafely, before any file is
    written: every non-empty ``problem_digest`` must be a SHA-256 hex digest
    (:func:`experiments.safe.check_digest`) and ``problems/DIGEST.csv`` / ``.ref`` must
    resolve inside ``results`` (no ``problems`` link out of the folder). ``O(records)``.

    Raises
    ------
    experiments.safe.UnsafeInputError
        Naming the first such record (``record KEY: problem digest '../../etc/x' is not ...``).
    """
    if "problem_digest" not in df:
        return
    for _, row in df.iterrows():
        digest = _digest_of(row)
        if digest == "":
            continue
        where = f"{results / 'records'}: {_record_name(row)}"
        check_digest(digest, where)
        stored_problem(results, digest, ".csv", where)


def _problem(results: Path, row, name: str):
    """The stored problem of record ``row`` (``problems/DIGEST.csv`` or ``.ref``) named
    ``name``, or ``None`` when the record has none or its third-party source is absent.

    The CSV is read only when it is the problem the record was planned on: the SHA-256 of its
    text must be the record's ``problem_sha256`` (records written before that field existed: its
    row count must be the record's ``buffers``); a ``.ref`` is checked by its digest
    (:func:`experiments.sweep.store.load_referenced_problem`).

    Raises
    ------
    experiments.safe.UnsafeInputError
        An unsafe digest or a path outside ``results`` (:func:`check_stored_problems`).
    experiments.sweep.store.StoredProblemMismatch
        The stored file is not the record's problem.
    """
    import hashlib

    from experiments.sweep.store import StoredProblemMismatch
    from planners import Problem

    digest = _digest_of(row)
    if not digest:
        return None
    where = f"{results / 'records'}: {_record_name(row)}"
    f = stored_problem(results, digest, ".csv", where)
    ref = stored_problem(results, digest, ".ref", where)
    if not f.is_file() and ref.is_file():  # third-party benchmark stored by reference
        from experiments.sweep.store import load_referenced_problem
        from planners import ProblemError

        try:
            return load_referenced_problem(ref, name)
        except UnsafeInputError:
            raise
        except ProblemError:
            return None  # ../shared absent: the figure is left out, as for a missing file
    if not f.is_file():
        return None
    text = f.read_text()
    want = row.get("problem_sha256")
    if isinstance(want, str) and want:
        if hashlib.sha256(text.encode()).hexdigest() != want:
            raise StoredProblemMismatch(
                f"{where}: {f} is not the problem the record was planned on (the SHA-256 of "
                "its text is not the record's problem_sha256); the report is not drawn from it")
    try:
        t = pd.read_csv(f)
        cols = [t[c].to_numpy() for c in ("lower", "upper", "size")]
        ids = [str(i) for i in t["id"]]
    except (KeyError, ValueError) as e:  # pandas' ParserError is a ValueError
        raise StoredProblemMismatch(f"{where}: {f} is not a stored problem (id, lower, upper, "
                                    f"size columns): {e}") from None
    n = pd.to_numeric(pd.Series([row.get("buffers")]), errors="coerce").iloc[0]
    if not (isinstance(want, str) and want) and pd.notna(n) and int(n) != len(t):
        raise StoredProblemMismatch(
            f"{where}: {f} has {len(t)} buffers, the record {int(n)}; it is not the problem the "
            "record was planned on")
    return Problem.from_arrays(*cols, ids=ids, name=name)


def _workload_figures(results: Path, w: str, sub: pd.DataFrame, figs: Path,
                      formats: Sequence[str], style: str) -> list[Path]:
    """Memory over time (one curve per scheduler; each arena band names the schedule its plan
    belongs to) and the best plan's layout of workload ``w``, from its records ``sub`` and stored
    problems; runs in a worker process of :func:`build_report`."""
    from experiments import plots
    from planners import Plan

    written: list[Path] = []
    pool_best = None  # the best plan with memory pools, when the best plan overall has none
    with plots.style(style):
        scheds = sorted(sub["scheduler"].fillna("-").unique())
        profiles, main_problem, plans = {}, None, []
        for s in scheds:
            ss = sub[sub["scheduler"].fillna("-") == s]
            prob = _problem(results, ss.iloc[0], plot_text(case_label(w, s)))
            if prob is None:
                continue
            if main_problem is None:
                main_problem = prob
                best = ss[ss["offsets"].notna()].sort_values(["arena", "config", "key"]) \
                    if "offsets" in ss else ss.iloc[0:0]
                for _, row in best.drop_duplicates("config").head(2).iterrows():
                    offs = np.asarray(json.loads(row["offsets"]), dtype=np.int64)
                    if len(offs) == prob.n and not str(row.get("pools") or ""):
                        plans.append(Plan(prob, offs, plot_text(row["config"]), str(row["status"]),
                                          lower_bound=int(row["lower_bound"])))
                    elif len(offs) == prob.n and _pool_plan(prob, offs, row) is not None:
                        plans.append(_pool_plan(prob, offs, row))
                pooled = best[best["pools"].fillna("").astype(str) != ""] \
                    if "pools" in best else best.iloc[0:0]
                if len(pooled) and (not plans or plans[0].pools is None):
                    pool_best = _pool_plan(prob, np.asarray(json.loads(
                        pooled.iloc[0]["offsets"]), dtype=np.int64), pooled.iloc[0])
            else:
                profiles[f"live bytes [{plot_text(s)}]"] = prob
        if main_problem is None:
            return written
        label = "live bytes" if len(scheds) == 1 or scheds == ["-"] else \
            f"live bytes [{plot_text(scheds[0])}]"
        where = "" if scheds[0] == "-" else f" on schedule {plot_text(scheds[0])}"
        roles = [f"{'best' if k == 0 else 'next'} plan{where}" for k in range(len(plans))]
        ax = plots.plot_memory_over_time(main_problem, plans,
                                         title=f"Memory over time: {plot_text(w)}",
                                         profiles=profiles, plan_roles=roles)
        if label != "live bytes":
            handles, labels = ax.get_legend_handles_labels()
            labels = [label if lab == "live bytes" else lab for lab in labels]
            ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        written += plots.save(ax, figs / f"memory_over_time_{file_stem(w)}", formats=formats)
        if plans and plans[0].pools is not None:  # one panel per pool, with its capacity
            written += plots.save(
                plots.plot_pool_layouts(plans[0], title=f"Pool layouts: "
                                        f"{main_problem.name}, "
                                        f"{plans[0].planner}"),
                figs / f"layout_{file_stem(w)}", formats=formats)
        elif plans:
            written += plots.save(
                plots.plot_arena_layout(plans[0], title=f"Arena layout: "
                                        f"{main_problem.name}, "
                                        f"{plans[0].planner}"),
                figs / f"layout_{file_stem(w)}", formats=formats)
        if pool_best is not None:  # the pools are drawn too, one panel per pool
            written += plots.save(
                plots.plot_pool_layouts(pool_best, title=f"Pool layouts: "
                                        f"{main_problem.name}, "
                                        f"{pool_best.planner}"),
                figs / f"layout_pools_{file_stem(w)}", formats=formats)
    return written


def _pool_plan(prob, offsets: np.ndarray, row):
    """The stored plan of a record with memory pools: ``prob`` (the stored one-arena problem)
    with the record's pools (``pools`` text, :func:`planners.io.parse_pools`) and each
    buffer's pool (``pool_of``); ``None`` when the record has no ``pool_of`` of the right
    length."""
    from dataclasses import replace

    from planners import Plan
    from planners.io import parse_pools

    raw = row.get("pool_of")
    pool_of = np.asarray(json.loads(raw), dtype=np.int64) if isinstance(raw, str) else None
    if pool_of is None or len(pool_of) != prob.n:
        return None
    pools = [replace(q, name=plot_text(q.name)) for q in parse_pools(str(row["pools"]))]
    return Plan(prob.with_pools(pools), offsets, plot_text(row["config"]),
                str(row["status"]), lower_bound=int(row["lower_bound"]), pools=pool_of)


def well_measured(runs: pd.DataFrame, min_seconds: float) -> pd.Series:
    """True for the runs whose time measures the algorithm: at least ``min_seconds``; timed
    after a warm-up and repeated (``timing_runs >= 2``) unless long enough to be timed once
    (:data:`experiments.metrics.REPEAT_BELOW`); and not stopped by the planner's time limit (a
    run within 5 % of its ``time_limit`` parameter measured the limit). Records written before
    the timing columns existed are judged by ``min_seconds`` alone."""
    from experiments.metrics import REPEAT_BELOW

    t = runs["seconds"].astype(float)
    ok = t >= min_seconds
    if "timing_runs" in runs:
        reps = pd.to_numeric(runs["timing_runs"], errors="coerce").fillna(1)
        ok &= (reps >= 2) | (t >= REPEAT_BELOW)
    if "params" in runs:
        def limit(js):
            try:
                v = json.loads(js).get("time_limit") if isinstance(js, str) and js else None
            except (ValueError, AttributeError):
                v = None
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.inf

        lim = runs["params"].map(limit).astype(float)
        ok &= t < 0.95 * lim
    return ok


def scaling_slopes(runs: pd.DataFrame, min_seconds: float) -> pd.DataFrame:
    """Per ``config`` of ``runs`` (``buffers``, ``seconds``), the log-log slope of planning time
    against buffer count fitted over the runs :func:`well_measured` keeps (at least
    ``min_seconds``, warmed up and repeated, not stopped by a time limit) when they cover at
    least 3 buffer counts; the time is the minimum of the repeated runs (``seconds_min``) where
    recorded, else ``seconds``. Columns ``config``, ``slope``, ``points``, ``min_buffers``,
    ``min_seconds``."""
    rows = []
    good = well_measured(runs, min_seconds)
    col = "seconds_min" if "seconds_min" in runs else "seconds"
    for cfg, sub in sorted(runs.groupby("config"), key=lambda kv: kv[0]):
        x = sub["buffers"].to_numpy(float)
        y = pd.to_numeric(sub[col], errors="coerce").fillna(sub["seconds"]).to_numpy(float)
        big = good.loc[sub.index].to_numpy(bool) & (y > 0)
        if len(np.unique(x[big])) >= 3:
            rows.append({"config": cfg,
                         "slope": float(np.polyfit(np.log10(x[big]), np.log10(y[big]), 1)[0]),
                         "points": int(big.sum()), "min_buffers": int(x[big].min()),
                         "min_seconds": min_seconds})
    return pd.DataFrame(rows, columns=["config", "slope", "points", "min_buffers", "min_seconds"])


def rv64_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per ``config``, over records with RV64 columns: cases, buffers, U74 and C906 cycles and
    instructions summed, and cycles per buffer (empty without RV64 columns)."""
    if "rv64_cycles_u74" not in df.columns:
        return pd.DataFrame()
    rv = df[pd.to_numeric(df["rv64_cycles_u74"], errors="coerce").notna()].copy()
    if rv.empty:
        return pd.DataFrame()
    for c in ("rv64_cycles_u74", "rv64_cycles_c906", "rv64_instructions"):
        rv[c] = pd.to_numeric(rv[c], errors="coerce")
    rvt = rv.groupby("config", sort=True).agg(
        cases=("case", "nunique"), buffers=("buffers", "sum"),
        cycles_u74=("rv64_cycles_u74", "sum"), cycles_c906=("rv64_cycles_c906", "sum"),
        instructions=("rv64_instructions", "sum")).reset_index()
    rvt["cycles_per_buffer_u74"] = rvt["cycles_u74"] / rvt["buffers"]
    rvt["cycles_per_buffer_c906"] = rvt["cycles_c906"] / rvt["buffers"]
    return rvt


def tflm_table(ok: pd.DataFrame) -> pd.DataFrame:
    """Per ``.tflite`` workload of the valid records ``ok`` with TFLite Micro columns: TFLite
    Micro's head, the file order's lower bound, greedy_by_size's and the best arena in the file
    order, the best arena in any order, and the planner's and the scheduler's gain (bytes)."""
    if "tflm_arena_head" not in ok.columns:
        return pd.DataFrame()
    tf = ok[pd.to_numeric(ok["tflm_arena_head"], errors="coerce").notna()].copy()
    if tf.empty:
        return pd.DataFrame()
    tf["tflm_arena_head"] = pd.to_numeric(tf["tflm_arena_head"])
    rows = []
    same = {"file_order", "-", ""}
    for w, sub in sorted(tf.groupby("workload"), key=lambda kv: kv[0]):
        sched = sub["scheduler"].fillna("-").astype(str)
        fo = sub[sched.isin(same)]
        if fo.empty:
            continue
        b_same = fo.sort_values(["arena", "config"]).iloc[0]
        b_any = sub.sort_values(["arena", "config"]).iloc[0]
        gbs = fo[fo["planner"] == "greedy_by_size"]["arena"]
        rows.append({"workload": w, "tflm_head": int(fo["tflm_arena_head"].iloc[0]),
                     "lower_bound_file_order": int(b_same["lower_bound"]),
                     "greedy_by_size_file_order": int(gbs.min()) if len(gbs) else None,
                     "best_arena_file_order": int(b_same["arena"]),
                     "best_planner_file_order": b_same["config"],
                     "best_arena_any_order": int(b_any["arena"]),
                     "best_any_order": f"{b_any['config']} [{b_any['scheduler']}]",
                     "planner_gain_bytes": int(fo["tflm_arena_head"].iloc[0])
                     - int(b_same["arena"]),
                     "scheduler_gain_bytes": int(b_same["arena"]) - int(b_any["arena"])})
    return pd.DataFrame(rows)


def build_report(results_dir: str | Path, out: str | Path | None = None,
                 formats: Sequence[str] = ("png", "pdf"),
                 max_workload_figures: int = MAX_PER_WORKLOAD_FIGURES,
                 all_versions: bool = False, style: str = "default", jobs: int = 2
                 ) -> list[Path]:
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
    style : {"default", "paper"}
        Figure style (:func:`experiments.plots.style`).
    jobs : int
        Processes drawing the per-workload figures (forked workers beside this one; ``1``: all
        here). The files do not depend on it.

    Raises
    ------
    experiments.sweep.ConfigError
        No ``records/`` folder, or no record in it.
    """
    from experiments import plots

    with plots.style(style):
        return _build_report(results_dir, out, formats, max_workload_figures, all_versions,
                             style, jobs)


#: Timings below this many seconds are not plotted as measurements: at microseconds a single
#: run measures Python call overhead and clock resolution, not the algorithm.
MIN_MEASURABLE_SECONDS = 1e-3
#: Scaling slopes are fitted only over runs at least this long (the algorithm dominates).
MIN_FIT_SECONDS = 1e-2


def _build_report(results_dir, out, formats, max_workload_figures, all_versions, style="default",
                  jobs=2) -> list[Path]:
    from experiments import plots
    from experiments.plots.sweep import (
        plot_quality_vs_time,
        plot_rv64_cycles,
        plot_scaling,
        plot_tflm_comparison,
    )
    from experiments.sweep.config import ConfigError
    from experiments.sweep.store import load_records

    results = Path(results_dir)
    df = load_records(results)
    if df.empty:
        raise ConfigError(f"{results}: records/ holds no record (corrupt ones are left out); run "
                          "`memplan sweep CONFIG` first")
    check_stored_problems(df, results)  # before anything is written (a record's digest, a path)
    left_out = 0
    if not all_versions:
        df, left_out = newest_records(df)
    out = Path(out) if out is not None else results / "report"
    figs, tabs = out / "figures", out / "tables"
    output_folder(figs)  # planners.errors.OutputError (one CLI line) when it cannot be made
    output_folder(tabs)
    written: list[Path] = []
    pq = _write_records_parquet(df, out / "records.parquet")
    if pq is not None:
        written.append(pq)
    df = _prepare(df)
    ok = df[df["valid"]]
    agg = _aggregate(ok)

    # per-workload figures (the most numerous) start first, in worker processes
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    tasks = [(results, w, ok[ok["workload"] == w], figs, tuple(formats), style)
             for w in sorted(ok["workload"].unique())[:max_workload_figures]]
    pool = None
    if jobs > 1 and len(tasks) > 1 and "fork" in mp.get_all_start_methods():
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("fork"))
        futures = [pool.submit(_workload_figures, *t) for t in tasks]

    def save(fig, stem):
        written.extend(plots.save(fig, figs / stem, formats=formats))

    # -- planner comparison ------------------------------------------------------------------
    comp = agg.rename(columns={"case": "workload_case"}).assign(
        workload=lambda d: d["workload_case"], planner=lambda d: d["config"], valid=True)
    if not comp.empty:
        comp = plot_frame(comp)
        save(plots.plot_ratio_by_planner(comp, title="Arena / lower bound per planner"),
             "planner_comparison")
        save(plots.plot_ratio_heatmap(comp, title="Arena / lower bound (median)"),
             "ratio_heatmap")

    # -- quality vs solve time per workload: medians with their spread, measurable ones only -----
    # t_n: the timed runs behind a point (each record's timing_runs, repeated short runs
    # included: a record timed 3 times counts 3); t_min the fastest of them (seconds_min)
    timed = ok.assign(
        _runs=pd.to_numeric(ok["timing_runs"], errors="coerce").fillna(1)
        if "timing_runs" in ok else 1,
        _fast=pd.to_numeric(ok["seconds_min"], errors="coerce").fillna(ok["seconds"])
        if "seconds_min" in ok else ok["seconds"])
    spread = (timed.groupby(["case", "config"], sort=True)
              .agg(t_min=("_fast", "min"), t_max=("seconds", "max"), t_n=("_runs", "sum"))
              .reset_index())
    qa = agg.merge(spread, on=["case", "config"], how="left")
    measurable = qa.groupby("case")["seconds"].max() >= MIN_MEASURABLE_SECONDS
    too_fast = sorted(measurable.index[~measurable])
    if len(measurable):
        save(plot_quality_vs_time(plot_frame(qa), MIN_MEASURABLE_SECONDS,
                                  [plot_text(c) for c in too_fast]), "pareto_quality_time")

    # -- scaling: planning time vs buffer count (log-log) --------------------------------------
    sc = ok[(ok["buffers"] > 0) & (ok["seconds"] > 0)]
    if not sc.empty:
        slopes = scaling_slopes(sc, MIN_FIT_SECONDS)
        save(plot_scaling(plot_frame(sc), dict(zip(map(plot_text, slopes["config"]),
                                                     slopes["slope"], strict=True)),
                          MIN_FIT_SECONDS), "scaling_time_vs_buffers")
        written.append(_write_csv(slopes, tabs / "scaling_slopes.csv"))

    # -- memory over time and arena layouts (collected from the workers) ------------------------
    if pool is not None:
        try:
            for f in futures:
                written.extend(f.result())
        finally:
            pool.shutdown()
    else:
        for t in tasks:
            written.extend(_workload_figures(*t))

    # -- RV64 cycles per planner -------------------------------------------------------------------
    rv = rv64_table(df)
    if not rv.empty:
        written.append(_write_csv(rv, tabs / "rv64_cycles.csv"))
        save(plot_rv64_cycles(plot_frame(rv)), "rv64_cycles")

    # -- ours vs TFLite Micro ---------------------------------------------------------------------
    tf = tflm_table(ok)
    if not tf.empty:
        written.append(_write_csv(tf, tabs / "tflm_comparison.csv"))
        save(plot_tflm_comparison(plot_frame(tf)), "tflm_comparison")

    # -- tables and the markdown summary ----------------------------------------------------------
    written.append(_write_csv(agg, tabs / "runs_aggregated.csv"))
    pivot = agg.pivot_table(index="case", columns="config", values="ratio", aggfunc="min")
    written.append(_write_csv(pivot.reset_index(), tabs / "ratio_pivot.csv"))
    per = planner_summary(agg, by="config", item="case", count="cases",
                          seconds=("median", "sum"), sort=True).reset_index()
    best_per_case = agg.loc[agg.groupby("case")["ratio"].transform("min") == agg["ratio"]]
    per["best_on"] = per["config"].map(best_per_case["config"].value_counts()).fillna(0).astype(int)
    written.append(_write_csv(per, tabs / "per_planner.csv"))
    bad = df[~df["valid"]][["case", "config", "status", "error"]].sort_values(["case", "config"])
    written.append(_write_csv(bad, tabs / "failed_runs.csv"))
    md = _markdown(df, agg, pivot, per, bad, tf, rv, figs, out, left_out)
    written.append(atomic_write(out / "report.md", md))
    return written


def _write_records_parquet(df: pd.DataFrame, path: Path) -> Path | None:
    """The sweep records as Parquet sorted by key (:func:`experiments.records.write_parquet`);
    ``None`` without pyarrow."""
    t = df.sort_values("key").reset_index(drop=True) if "key" in df else df
    return write_parquet(t, path, warn=False)


def _write_csv(t: pd.DataFrame, path: Path) -> Path:
    return write_csv(t, path, float_format="%.6g")


def pool_table(df: pd.DataFrame) -> pd.DataFrame:
    """Bytes per memory pool of the valid runs with pools (a sweep's ``pools`` key): one row per
    (case, config) with the median ``arena`` (the sum over the pools) and the median of each
    ``arena_NAME`` column, and ``fits`` (every run within every pool's capacity). Empty without
    pools. ``df`` is :func:`_prepare`'s frame."""
    if "pools" not in df or not (df["pools"].astype(str) != "").any():
        return pd.DataFrame()
    ok = df[df["valid"] & (df["pools"].astype(str) != "")].copy()
    from experiments.records import arena_columns

    per_pool = [c for c in arena_columns([{"pools": t} for t in ok["pools"].dropna().unique()])
                if c in ok.columns]
    for c in ["arena", *per_pool]:
        ok[c] = pd.to_numeric(ok[c], errors="coerce")
    ok["fits"] = ok["fits"].astype("boolean")
    t = ok.groupby(["case", "config"], sort=True).agg(
        pools=("pools", "first"), fits=("fits", "all"), arena=("arena", "median"),
        **{c: (c, "median") for c in per_pool}).reset_index()
    for c in ["arena", *per_pool]:
        t[c] = t[c].round().astype("Int64")
    return t


def _pool_lines(df: pd.DataFrame) -> list[str]:
    t = pool_table(df)
    if t.empty:
        return []
    return ["## Memory pools", "",
            "Runs with the sweep's `pools` (NAME=BYTES[:ALIGN] in preference order; each pool "
            "set is its own configuration, `[pools ...]`): `arena_NAME` is the bytes a pool "
            "needs (median over seeds and repetitions; empty: the pool is not in that set), "
            "`arena` their sum (the ratios above divide it by the max live bytes), `fits` "
            "whether every run fits every pool's capacity.", "",
            md_table(t), ""]


def _scheduler_count(df) -> str:
    """``"1 scheduler"``: the schedulers the sweep ran (``-``, an interval problem's, is none)."""
    s = df["scheduler"].dropna().astype(str) if "scheduler" in df else pd.Series([], dtype=str)
    n = s[~s.isin(["-", ""])].nunique()
    return f"{n} scheduler{'' if n == 1 else 's'}"


def _provenance_note(df, prov) -> str:
    """What the provenance table's versions mean: ``code_version`` is recorded per run (a hash
    of the modules that run executes, :func:`experiments.sweep.provenance.run_code_version`), so
    one checkout gives one version per planner/scheduler code path, and a version changes when
    those files changed between runs; ``+dirty`` on ``git_commit`` is the checkout having
    uncommitted changes to tracked files when the run started."""
    cv = df["code_version"].dropna().astype(str) if "code_version" in df else pd.Series([], dtype=str)
    commits = df["git_commit"].dropna().astype(str) if "git_commit" in df else pd.Series([], dtype=str)
    dirty = sorted({c for c in commits if c.endswith("+dirty")})
    n_planners = df["planner"].nunique() if "planner" in df else 0
    text = (f"{cv.nunique()} code version{'' if cv.nunique() == 1 else 's'} over "
            f"{n_planners} planner{'' if n_planners == 1 else 's'} and {_scheduler_count(df)}, "
            f"on {commits.nunique()} git commit{'' if commits.nunique() == 1 else 's'}. "
            "The code version is recorded per run: a hash of the modules that run executes (its "
            "planner's and scheduler's code and what they import), so runs of different planners "
            "on one checkout have different code versions, and a run's version changes when those "
            "files changed between runs.")
    if dirty:
        text += (f" `+dirty` ({', '.join(map(md_text, dirty))}): the checkout had uncommitted "
                 "changes to tracked files when those runs started, so the commit alone does not "
                 "name the code; the code version does.")
    return text


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
        f"{_scheduler_count(df)} (`-`: an interval problem, no scheduler). "
        "Regenerated from the records by `memplan report`; sizes in bytes, times in seconds "
        "(median over seeds and repetitions); every plan passed the independent validator.",
        "",
    ]
    reps = pd.to_numeric(df["timing_runs"], errors="coerce") if "timing_runs" in df else None
    if reps is not None and reps.notna().any():  # records with the repeated timings
        lines += [f"Timing: each worker plans a tiny problem with each planner first (warm-up); "
                  f"{int((reps >= 2).sum())} runs under 1 s were timed {int(reps.max())} times "
                  "(`seconds` their median, `seconds_min` their minimum); scaling slopes are "
                  "fitted on the minima of runs measured well (at least 10 ms, repeated or "
                  "timed once at 1 s or more, not stopped by a time limit).", ""]
    mixed = _mixed_runs(df)
    if mixed:
        versions = sorted(df["code_version"].dropna().astype(str).unique())
        lines += [f"**Warning:** {mixed} runs have records that come from {len(versions)} code "
                  f"versions ({', '.join(map(md_text, versions))}); medians mix them. Delete the folder and run "
                  "the sweep again for figures of one version.", ""]
    if left_out:
        lines += ["Only the records of each run's newest code version are used; "
                  f"{left_out} records of older code versions were left out "
                  "(`memplan report --all-versions` "
                  "uses them too).", ""]
    lines += [
        "## Workloads",
        "",
        md_table(cases),
        "",
        "## Arena / lower bound (1.000 = lower bound)",
        "",
        md_table(pivot.reset_index(), floatfmt=".3f"),
        "",
        "## Per planner",
        "",
        coverage_note(per.assign(config=per["config"].map(md_cell)).set_index("config"),
                      "cases"),
        "",
        md_table(per, floatfmt=".4g"),
        "",
    ]
    lines += _pool_lines(df)
    if len(tf):
        lines += ["## Ours vs TFLite Micro", "",
                  "TFLite Micro's *head* is the non-persistent arena its greedy planner reports "
                  "(`print_allocations`) for the model's own (file) operator order; ours plans "
                  "the same tensors (graph input included, 16-byte alignment). "
                  "`planner_gain_bytes` compares the same order (planner only); "
                  "`scheduler_gain_bytes` is what a different operator order adds on top.", ""]
        t = pd.read_csv(out / "tables" / "tflm_comparison.csv")
        lines += [md_table(t), ""]
    if len(rv):
        t = pd.read_csv(out / "tables" / "rv64_cycles.csv")
        lines += ["## RV64 planning cost (emulated)", "", md_table(t, floatfmt=".4g"), ""]
    if len(bad):
        lines += ["## Runs without a valid plan", "", md_table(bad), ""]
    if len(prov):
        lines += ["## Provenance", "", _provenance_note(df, prov), "", md_table(prov), ""]
    lines += ["## Figures", ""]
    for f in sorted(figs.glob("*.png")):
        lines.append(f"![{md_cell(f.stem)}](figures/{file_stem(f.stem)}{f.suffix})")
    lines.append("")
    return "\n".join(lines)
