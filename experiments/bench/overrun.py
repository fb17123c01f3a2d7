"""Benchmark of time-limit overruns -> ``results/bench_overrun.csv`` and a summary per planner.

Every registered planner with a ``time_limit`` parameter (:data:`planners.registry.PLANNERS`)
runs on large inputs at short limits, and each call is timed from outside: the whole
:func:`planners.registry.plan` call (``call_seconds``) beside the plan's own ``Plan.seconds``
(``seconds``). The overrun is ``call_seconds - time_limit``; a call is over the stated slack
when ``call_seconds > time_limit + planners.time_limits.slack(time_limit)``
(:func:`planners.time_limits.allowed_seconds`). Inputs (skipped with a message when absent):

* MiniMalloc's A-F (``../shared/benchmarks/minimalloc``, capacity 1,048,576 bytes from the file
  name, for the planners that decide a capacity; the others minimise);
* ``somas_pangu_2.6B`` (18,692 buffers) from ``../shared/benchmarks/idealloc``;
* ``random_1e4`` and ``random_1e5``: :func:`planners.random_problems.random_problem` with
  10^4 and 10^5 buffers (seed 0).

Planners that need a capacity and get a problem without one are given its lower bound (as the
harness does). Each call runs in its own forked process, killed at ``4 x allowed + 10`` seconds
(status ``killed``), so a planner that never returns costs a bounded time. Beside each row is the
machine's 1-minute load average at its start (``os.getloadavg``): these are wall-clock figures
on a shared machine, a record of overruns, not a timed test.

Columns: ``problem, n_buffers, planner, time_limit, allowed, seconds, call_seconds, overrun,
over_slack, status, setup_seconds, solver_time_limit, load, error``.

Usage::

    python -m experiments.bench.overrun --out results/bench_overrun.csv
    python -m experiments.bench.overrun --planners cpsat,exact_search --problems A,random_1e5 \\
        --limits 1

Exit status 1 when any call was over the slack (0 otherwise).
"""

from __future__ import annotations

import argparse
import csv
import math
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

from planners import lower_bound, read_minimalloc_csv
from planners.random_problems import random_problem
from planners.registry import PLANNERS, get_planner
from planners.time_limits import allowed_seconds, slack

__all__ = ["COLUMNS", "LIMITS", "limited_planners", "load_problems", "run_one", "run", "summary",
           "main"]

COLUMNS = ["problem", "n_buffers", "planner", "time_limit", "allowed", "seconds", "call_seconds",
           "overrun", "over_slack", "status", "setup_seconds", "solver_time_limit", "load", "error"]

#: Time limits of the benchmark, seconds.
LIMITS = (1.0, 5.0)

_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MINIMALLOC = _ROOT.parent / "shared" / "benchmarks" / "minimalloc"
DEFAULT_IDEALLOC = _ROOT.parent / "shared" / "benchmarks" / "idealloc"
RANDOM_SIZES = {"random_1e4": 10_000, "random_1e5": 100_000}


def limited_planners() -> list[str]:
    """Registered planners with a ``time_limit`` parameter, in registry order."""
    return [k for k, c in PLANNERS.items() if "time_limit" in c._param_names()]


def load_problems(minimalloc_dir: Path = DEFAULT_MINIMALLOC, idealloc_dir: Path = DEFAULT_IDEALLOC,
                  only: list[str] | None = None):
    """``[(label, problem)]``: the inputs of the module docstring (``only``: their labels)."""
    want = set(only or [])
    out = []
    for letter in "ABCDEF":
        if want and letter not in want:
            continue
        path = Path(minimalloc_dir) / f"{letter}.1048576.csv"
        if path.exists():
            out.append((letter, read_minimalloc_csv(path)))
        else:
            print(f"skipping MiniMalloc {letter}: {path} is absent", file=sys.stderr)
    if not want or "pangu" in want:
        path = Path(idealloc_dir) / "somas_pangu_2.6B.csv"
        if path.exists():
            out.append(("pangu", read_minimalloc_csv(path)))
        else:
            print(f"skipping pangu: {path} is absent", file=sys.stderr)
    for label, n in RANDOM_SIZES.items():
        if not want or label in want:
            out.append((label, random_problem(n, seed=0, name=label)))
    return out


def _child(conn, planner: str, problem, time_limit: float) -> None:
    """Run one call in the forked child and send ``(seconds, call_seconds, status, info, error)``."""
    try:
        p = get_planner(planner, time_limit=time_limit)
        if not p.needs_capacity(problem):
            problem = problem.with_capacity(None)
        elif problem.capacity is None:
            problem = problem.with_capacity(lower_bound(problem))
        t0 = time.perf_counter()
        plan = p.plan(problem)
        call = time.perf_counter() - t0
        info = {k: plan.info.get(k) for k in ("setup_seconds", "solver_time_limit")}
        conn.send((plan.seconds, call, plan.status, info, ""))
    except BaseException as e:  # recorded, not raised: one row per call
        conn.send((math.nan, math.nan, "error", {}, f"{type(e).__name__}: {e}"[:300]))
    finally:
        conn.close()


def run_one(planner: str, label: str, problem, time_limit: float) -> dict:
    """One row of the benchmark: ``planner`` on ``problem`` at ``time_limit`` seconds, in a
    forked process (killed at ``4 x allowed + 10`` s, status ``killed``)."""
    allowed = allowed_seconds(time_limit)
    kill = 4 * allowed + 10
    load = os.getloadavg()[0]
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_child, args=(send, planner, problem, time_limit))
    proc.start()
    send.close()
    got = recv.poll(kill)
    outer = time.perf_counter() - t0
    if got:
        try:
            seconds, call, status, info, error = recv.recv()
        except EOFError:
            seconds, call, status, info, error = math.nan, outer, "error", {}, "child died"
        proc.join(5)
    else:
        seconds, call, status, info, error = math.nan, outer, "killed", {}, f"killed at {kill:.0f} s"
    if proc.is_alive():
        proc.kill()
        proc.join()
    if status == "error" and error == "child died":
        error = f"child died (exit code {proc.exitcode})"
    overrun = call - time_limit if not math.isnan(call) else math.nan
    return {
        "problem": label, "n_buffers": problem.n, "planner": planner, "time_limit": time_limit,
        "allowed": round(allowed, 3), "seconds": round(seconds, 3),
        "call_seconds": round(call, 3), "overrun": round(overrun, 3),
        "over_slack": bool(status == "killed" or (not math.isnan(call) and call > allowed)),
        "status": status, "setup_seconds": info.get("setup_seconds"),
        "solver_time_limit": info.get("solver_time_limit"), "load": round(load, 2),
        "error": error,
    }


def run(out: Path, problems, planners: list[str], limits=LIMITS, echo=print) -> list[dict]:
    """Every planner x problem x limit, rows written to ``out`` (CSV) as they finish."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for label, problem in problems:
            for limit in limits:
                for name in planners:
                    row = run_one(name, label, problem, float(limit))
                    rows.append(row)
                    w.writerow(row)
                    fh.flush()
                    if echo:
                        echo(f"{label:>10} {name:>15} limit {limit:g} s: call "
                             f"{row['call_seconds']} s, {row['status']}"
                             f"{' OVER' if row['over_slack'] else ''} (load {row['load']})"
                             f"{' ' + row['error'] if row['error'] else ''}")
    return rows


def summary(rows: list[dict]) -> list[str]:
    """One line per planner: its worst overrun (seconds and limit) against the stated slack."""
    lines = []
    for name in dict.fromkeys(r["planner"] for r in rows):
        mine = [r for r in rows if r["planner"] == name]
        worst = max(mine, key=lambda r: (-math.inf if math.isnan(r["overrun"]) else
                                         r["overrun"] - slack(r["time_limit"])))
        over = sum(r["over_slack"] for r in mine)
        lines.append(
            f"{name}: worst overrun {worst['overrun']:+.3f} s at limit {worst['time_limit']:g} s "
            f"on {worst['problem']} (slack {slack(worst['time_limit']):.2f} s, status "
            f"{worst['status']}, load {worst['load']}); {over} of {len(mine)} calls over the slack"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench.overrun --help``); 1 when any call was
    over the slack."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench_overrun.csv"))
    ap.add_argument("--minimalloc-dir", type=Path, default=DEFAULT_MINIMALLOC)
    ap.add_argument("--idealloc-dir", type=Path, default=DEFAULT_IDEALLOC)
    ap.add_argument("--problems", default="",
                    help="comma list of A..F, pangu, random_1e4, random_1e5 (default: all)")
    ap.add_argument("--planners", default="", help="comma list (default: every limited planner)")
    ap.add_argument("--limits", default=",".join(f"{x:g}" for x in LIMITS),
                    help="comma list of time limits in seconds")
    a = ap.parse_args(argv)
    names = [s for s in a.planners.split(",") if s] or limited_planners()
    bad = [s for s in names if s not in limited_planners()]
    if bad:
        ap.error(f"not a registered planner with a time_limit: {', '.join(bad)}")
    limits = [float(s) for s in a.limits.split(",") if s]
    probs = load_problems(a.minimalloc_dir, a.idealloc_dir,
                          [s for s in a.problems.split(",") if s])
    rows = run(a.out, probs, names, limits)
    for line in summary(rows):
        print(line)
    return 1 if any(r["over_slack"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
