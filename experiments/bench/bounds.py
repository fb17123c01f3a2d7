"""Benchmark of the proved lower bounds of :mod:`planners.lower_bounds` against the best arena.

For each problem (MiniMalloc's A-F and ``input.12`` from ``--minimalloc-dir``, idealloc's
``somas_resnet50`` and ``somas_pangu_2.6B`` from ``--idealloc-dir``) it computes every bound
on its own, each from max live bytes with its own time limit (``--time-limit`` seconds, or
``--hard-time-limit`` for the problems in ``--hard``, default D; per probe: 2 s for ``windows``,
a quarter of it for ``subsets`` and ``cpsat_windows``, all of it for ``cpsat``, one CP-SAT
worker), after the best arena known: a
:class:`planners.minimize.Minimize` run of ``--arena-time`` seconds in this script, or the
smallest arena of a committed record (``--records``, default ``results/bench_exact_search.csv``)
when that is smaller; ``arena_source`` names which. The arena is the probes' ceiling (no bound
probes at or above it). One row per problem and bound, columns :data:`COLUMNS`:

``value``
    The proved bound (bytes; ``best`` is the largest, rounded up to the arena quantum).
``status``
    ``proved`` (max live), ``raised`` (above max live, proved), ``closed`` (equal to the arena:
    the optimum is proved), ``no_gain`` (every probe decided, none infeasible), ``timeout`` (no
    gain and some probe stopped at its time limit: nothing proved by it), ``skipped`` (not
    run, ``detail`` says why), or CP-SAT's solver status for ``cpsat``.
``window``
    ``k:w`` (sections ``[k, k + w)``) of the window that gave a raised bound; the subset share
    for ``subsets``.
``gap_pct``
    ``100 * (arena - value) / arena``.
``detail``
    JSON: probe statuses by count (``windows``, ``subsets``, ``cpsat_windows``; for the last also
    the probe log), or CP-SAT's info.

Time-limited proof search is load-dependent: a probe that would finish on an idle machine may
time out on a loaded one; ``status`` and ``detail`` record that as it happened. With one CP-SAT
worker and fixed seeds every solver is deterministic up to its time limit.

Usage::

    python -m experiments.bench.bounds --out results
    python -m experiments.bench.bounds --problems D --hard-time-limit 300 --out /tmp/b
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

from planners import Problem, lower_bound, read_minimalloc_csv
from planners.bounds import arena_quantum
from planners.lower_bounds import cpsat_bound, cpsat_window_bound, subset_bound, window_bound
from planners.minimize import Minimize

__all__ = ["COLUMNS", "DEFAULT_PROBLEMS", "bench_bounds", "load", "main"]

#: Columns of ``bench_bounds.csv``, in order.
COLUMNS = ["problem", "buffers", "quantum", "bound", "value", "seconds", "status", "window",
           "probes", "time_limit", "arena", "arena_source", "gap_pct", "detail"]

#: Problems run by default (``input.12`` is MiniMalloc's 5-buffer example input).
DEFAULT_PROBLEMS = ("A", "B", "C", "D", "E", "F", "input.12", "somas_resnet50", "somas_pangu_2.6B")

#: Problems above this many buffers get no ``cpsat`` bound (its model is built whole).
CPSAT_MAX_BUFFERS = 2000


def load(name: str, minimalloc_dir: Path, idealloc_dir: Path) -> Problem:
    """The problem ``name``: ``NAME.1048576.csv`` or ``NAME.csv`` in ``minimalloc_dir``, else
    ``NAME.csv`` in ``idealloc_dir``. Raises :class:`FileNotFoundError` naming the places looked."""
    for f in (minimalloc_dir / f"{name}.1048576.csv", minimalloc_dir / f"{name}.csv",
              idealloc_dir / f"{name}.csv"):
        if f.is_file():
            return read_minimalloc_csv(f)
    raise FileNotFoundError(f"problem {name!r}: no {name}.1048576.csv or {name}.csv in "
                            f"{minimalloc_dir} or {idealloc_dir}")


def _record_arena(records: Path | None, name: str) -> int | None:
    """The smallest arena (bytes) of problem ``name`` in a committed records CSV with columns
    ``problem, status, arena`` (rows with status optimal or feasible), or None."""
    if records is None or not records.is_file():
        return None
    df = pd.read_csv(records)
    df = df[(df["problem"].astype(str) == name) & df["status"].isin(["optimal", "feasible"])]
    df = df[df["arena"].notna()]
    return int(df["arena"].min()) if len(df) else None


def _probe_status(value: int, floor: int, arena: int, info: dict) -> str:
    """Row status of a probing bound (module docstring)."""
    if value >= arena:
        return "closed"
    if value > floor:
        return "raised"
    return "timeout" if info.get("statuses", {}).get("timeout") else "no_gain"


def bench_bounds(
    problems: list[str],
    minimalloc_dir: str | Path,
    idealloc_dir: str | Path,
    time_limit: float = 30.0,
    hard: tuple[str, ...] = ("D",),
    hard_time_limit: float = 120.0,
    arena_time: float = 30.0,
    records: str | Path | None = "results/bench_exact_search.csv",
) -> pd.DataFrame:
    """Run the benchmark (module docstring); one row per problem and bound."""
    minimalloc_dir, idealloc_dir = Path(minimalloc_dir), Path(idealloc_dir)
    rows = []
    for name in problems:
        p = load(name, minimalloc_dir, idealloc_dir).with_capacity(None)
        g = arena_quantum(p)
        T = hard_time_limit if name in hard else time_limit
        m = Minimize(time_limit=arena_time).plan(p)
        arena, src = int(m.arena_size), f"minimize {arena_time:g} s ({m.status})"
        rec = _record_arena(Path(records) if records else None, name)
        if rec is not None and rec < arena:
            arena, src = rec, f"record {Path(records).name}"
        base = {"problem": name, "buffers": p.n, "quantum": g, "arena": arena,
                "arena_source": src}

        def row(bound, value, seconds, status, window=None, probes=None, tl=None, detail=None,
                base=base, arena=arena, name=name):
            rows.append({**base, "bound": bound, "value": int(value), "seconds": round(seconds, 3),
                         "status": status, "window": window, "probes": probes, "time_limit": tl,
                         "gap_pct": round(100.0 * (arena - value) / arena, 3) if arena else 0.0,
                         "detail": json.dumps(detail) if detail is not None else None})
            print(f"{name} {bound}: {rows[-1]['value']} {status} {rows[-1]['seconds']} s "
                  f"(arena {arena}, gap {rows[-1]['gap_pct']} %)", file=sys.stderr, flush=True)

        t0 = time.perf_counter()
        ml = int(lower_bound(p))
        row("max_live", ml, time.perf_counter() - t0, "closed" if ml >= arena else "proved")
        floor = -(-ml // g) * g
        values = [floor]
        # windows: many small probes (2 s each, the default); subsets: one probe per share
        # (4 shares) and the last is the whole problem, so each probe gets a quarter of T
        for bname, fn, probe in (("windows", window_bound, 2.0),
                                 ("subsets", subset_bound, max(2.0, T / 4))):
            v, info = fn(p, floor=ml, ceiling=arena, time_limit=T, probe_time_limit=probe)
            key = "window" if bname == "windows" else "subset"
            w = info.get(key)
            w = f"{w[0]}:{w[1]}" if bname == "windows" and w else w
            row(bname, v, info["seconds"], _probe_status(v, floor, arena, info), w,
                info["probes"], T, info.get("statuses", {}))
            values.append(v)
        if p.n > CPSAT_MAX_BUFFERS:
            row("cpsat", ml, 0.0, "skipped", tl=T,
                detail={"reason": f"{p.n} buffers > {CPSAT_MAX_BUFFERS}"})
        elif floor >= arena:
            row("cpsat", ml, 0.0, "skipped", tl=T, detail={"reason": "max live = arena"})
        else:
            v, info = cpsat_bound(p, time_limit=T, workers=1)
            row("cpsat", v, info["seconds"], str(info["solver_status"]), tl=T, detail=info)
            values.append(v)
        if p.n > CPSAT_MAX_BUFFERS:
            row("cpsat_windows", ml, 0.0, "skipped", tl=T,
                detail={"reason": f"{p.n} buffers > {CPSAT_MAX_BUFFERS}"})
        else:
            v, info = cpsat_window_bound(p, floor=ml, ceiling=arena, time_limit=T,
                                         probe_time_limit=max(T / 4, 1.0), workers=1)
            w = info.get("window")
            row("cpsat_windows", v, info["seconds"], _probe_status(v, floor, arena, info),
                f"{w[0]}:{w[1]}" if w else None, info["probes"], T,
                {"statuses": info["statuses"], "log": info["log"]})
            values.append(v)
        best = -(-max(values) // g) * g
        row("best", best, time.perf_counter() - t0,
            "closed" if best >= arena else ("raised" if best > floor else "no_gain"))
    return pd.DataFrame(rows, columns=COLUMNS)


def _markdown(df: pd.DataFrame, argv_line: str) -> str:
    """The short report ``bench_bounds.md``: the best bound per problem and each bound's status."""
    lines = ["# Proved lower bounds vs best arena", "",
             f"Run: `{argv_line}`. Gap = 100 x (arena - bound) / arena. Every bound is proved "
             "(planners/lower_bounds.py); `timeout` = a probe stopped at its time limit and "
             "proved nothing. MiniMalloc G-K are not bundled in /work/shared and were not run.", "",
             "| problem | buffers | max live | best bound (source) | arena (source) | gap % | "
             "windows | subsets | cpsat | cpsat_windows |",
             "|---|---:|---:|---|---|---:|---|---|---|---|"]
    for name, d in df.groupby("problem", sort=False):
        r = {b: x for b, x in zip(d["bound"], d.to_dict("records"))}
        best = r["best"]
        src = max((b for b in ("max_live", "windows", "subsets", "cpsat", "cpsat_windows")
                   if b in r), key=lambda b: (r[b]["value"], b == "max_live"))
        cell = lambda b, r=r: f"{r[b]['value']:,} {r[b]['status']} {r[b]['seconds']:g} s"  # noqa: E731
        lines.append(f"| {name} | {best['buffers']} | {r['max_live']['value']:,} | "
                     f"{best['value']:,} ({src}) | {best['arena']:,} ({best['arena_source']}) | "
                     f"{best['gap_pct']:g} | " + " | ".join(cell(b) for b in
                     ("windows", "subsets", "cpsat", "cpsat_windows")) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench.bounds --help``); returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minimalloc-dir", default="../shared/benchmarks/minimalloc")
    ap.add_argument("--idealloc-dir", default="../shared/benchmarks/idealloc")
    ap.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS),
                    help="comma-separated problem names")
    ap.add_argument("--time-limit", type=float, default=20.0, help="seconds per bound")
    ap.add_argument("--hard", default="D", help="problems given --hard-time-limit per bound")
    ap.add_argument("--hard-time-limit", type=float, default=120.0)
    ap.add_argument("--arena-time", type=float, default=30.0, help="seconds of minimize")
    ap.add_argument("--records", default="results/bench_exact_search.csv",
                    help="committed records for the best arena ('' for none)")
    ap.add_argument("--out", default="results", help="folder for bench_bounds.csv and .md")
    a = ap.parse_args(argv)
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    df = bench_bounds(split(a.problems), a.minimalloc_dir, a.idealloc_dir, a.time_limit,
                      tuple(split(a.hard)), a.hard_time_limit, a.arena_time, a.records or None)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "bench_bounds.csv", index=False)
    line = "python -m experiments.bench.bounds " + " ".join(argv if argv is not None else sys.argv[1:])
    (out / "bench_bounds.md").write_text(_markdown(df, line.strip()))
    print(df.drop(columns=["detail"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
