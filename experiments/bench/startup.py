"""Start-up benchmark (``make bench-startup``): how long ``import planners`` and a small
``memplan plan`` take in a fresh process, and which heavy libraries they load.

Each command runs ``--repeats`` times (default 15) in a new interpreter; a row of
``results/bench_startup.csv`` gives the minimum and the median wall seconds (the minimum is the
start-up cost itself; the median shows the machine's load), the target, whether the minimum
meets it, and the heavy modules (:data:`HEAVY`) the command imported, read from
``python -X importtime`` (CPython's import profiler, ``-X importtime`` in the CPython docs:
one ``import time: self | cumulative | name`` line per module, microseconds). Rows:

* ``python``: ``python -c pass``, the interpreter alone (the floor of every row);
* ``numpy``: ``import numpy``, the one library ``import planners`` keeps;
* ``import planners``: target :data:`TARGETS` (0.1 s); its ``importtime_s`` is the cumulative
  import time of the ``planners`` package from ``-X importtime`` (numpy included; interpreter
  start and exit excluded; the least of the runs), judged against the target in
  ``importtime_meets``;
* ``memplan plan``: ``python -m experiments.cli plan`` (what the ``memplan`` console script
  runs) on a 4-buffer MiniMalloc CSV, target 0.3 s.

``cpu_min_s`` is the least CPU time (user + system) of the runs: the wall time less the time a
process waited for a core. ``load_avg`` is the 1-minute load average before the runs
(``os.getloadavg``): on a busy machine every row grows, the floor row with it; the targets are
judged on the wall minimum.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["HEAVY", "TARGETS", "measure", "importtime", "main"]

#: Libraries that ``import planners`` and ``memplan plan`` must not load (imported where used).
HEAVY = ("ortools", "pandas", "matplotlib", "scipy", "networkx", "pulp", "onnx", "tflite",
         "plotly", "pyarrow")

#: Start-up targets in seconds (issue 27, point 11).
TARGETS = {"import planners": 0.1, "memplan plan": 0.3}

_CSV = "id,lower,upper,size\n0,0,2,32\n1,1,3,64\n2,2,4,32\n3,3,5,64\n"


def _commands(csv_path: str) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "python": [py, "-c", "pass"],
        "numpy": [py, "-c", "import numpy"],
        "import planners": [py, "-c", "import planners"],
        "memplan plan": [py, "-m", "experiments.cli", "plan", csv_path],
    }


def measure(cmd: list[str], repeats: int, cwd: str | None = None) -> tuple[list[float],
                                                                            list[float]]:
    """Wall seconds and CPU seconds (user + system, ``getrusage(RUSAGE_CHILDREN)``) of ``repeats``
    runs of ``cmd`` (each a new process; output discarded). CPU time leaves out the time the
    process waited for a core on a busy machine. Raises ``RuntimeError`` naming the command when
    a run fails."""
    import resource

    wall, cpu = [], []
    for _ in range(repeats):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        wall.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip().splitlines()[-1:]}")
    return wall, cpu


def importtime(cmd: list[str], cwd: str | None = None) -> tuple[dict[str, int], str]:
    """``{module: cumulative microseconds}`` of one ``python -X importtime`` run of ``cmd``
    (``cmd[0]`` the interpreter) and the comma-separated :data:`HEAVY` top-level packages it
    imported."""
    r = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=cwd, capture_output=True,
                       text=True)
    cum: dict[str, int] = {}
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [x.strip() for x in line[len("import time:"):].split("|")]
        if len(parts) == 3 and parts[1].isdigit():
            cum[parts[2]] = int(parts[1])
    heavy = sorted({m.split(".")[0] for m in cum} & set(HEAVY))
    return cum, ",".join(heavy)


def main(argv: list[str] | None = None) -> int:
    """Write ``--out`` (default ``results/bench_startup.csv``); print it; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/bench_startup.csv")
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args(argv)
    root = str(Path(__file__).resolve().parents[2])
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = str(Path(tmp) / "four.csv")
        Path(csv_path).write_text(_CSV)
        for name, cmd in _commands(csv_path).items():
            t, cpu = measure(cmd, args.repeats, cwd=root)
            prof = [importtime(cmd, cwd=root) for _ in range(max(1, args.repeats // 3))]
            cum = min((c for c, _ in prof), key=lambda c: c.get("planners", 0))
            heavy = ",".join(sorted({m for _, h in prof for m in h.split(",") if m}))
            target = TARGETS.get(name)
            rows.append({
                "measure": name, "command": " ".join(Path(c).name if i == 0 else c
                                                     for i, c in enumerate(cmd)).replace(tmp + "/", ""),
                "runs": len(t), "min_s": round(min(t), 4), "median_s": round(statistics.median(t), 4),
                "cpu_min_s": round(min(cpu), 4),
                "importtime_s": round(cum.get("planners", 0) / 1e6, 4) if name == "import planners"
                else "",
                "target_s": target if target is not None else "",
                "meets_target": ("yes" if min(t) <= target else "no") if target is not None else "",
                "importtime_meets": ("yes" if cum.get("planners", 0) / 1e6 <= target else "no")
                if name == "import planners" else "",
                "heavy_modules": heavy or "none", "load_avg": round(load, 2),
            })
    import csv
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    from planners.io import atomic_write

    atomic_write(args.out, buf.getvalue())
    sys.stdout.write(buf.getvalue())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
