"""Start-up (issue 27, point 11): ``import planners`` and a small ``memplan plan`` load no heavy
library (OR-Tools, pandas, matplotlib, ...); each is imported where it is used. Structural
checks in a fresh interpreter (``sys.modules``), not timings: the timings are
``make bench-startup`` (results/bench_startup.csv)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from experiments.bench.startup import HEAVY, importtime

ROOT = Path(__file__).resolve().parents[1]


def _loaded(code: str) -> list[str]:
    probe = code + f"\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))"
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_planners_loads_no_heavy_library():
    assert _loaded("import planners") == []


def test_registry_and_catalogue_still_bound_without_them():
    code = ("import planners\nfrom planners import catalogue, PLANNERS\n"
            "assert len(PLANNERS) >= 28 and 'cpsat' in PLANNERS\n"
            "assert catalogue.planner_names() == list(PLANNERS)\n"
            "assert catalogue.planner_classes()['cpsat'] is PLANNERS['cpsat']")
    assert _loaded(code) == []


def test_small_memplan_plan_loads_no_heavy_library(tmp_path):
    f = tmp_path / "four.csv"
    f.write_text("id,lower,upper,size\n0,0,2,32\n1,1,3,64\n2,2,4,32\n3,3,5,64\n")
    code = ("import contextlib, io\nfrom experiments.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['plan', {str(f)!r}]) == 0")
    assert _loaded(code) == []


def test_heavy_libraries_load_where_used():
    # planning with CP-SAT imports OR-Tools then, and the result is right
    code = ("from planners import Problem, plan\n"
            "p = Problem.from_closed([('a', 0, 1, 64), ('b', 1, 2, 32), ('c', 2, 3, 64)])\n"
            "r = plan(p, 'cpsat', time_limit=5, heuristic_first=False, warm_start=False)\n"
            "assert (r.arena_size, r.status) == (96, 'optimal')")
    assert "ortools" in _loaded(code)


def test_importtime_parser_reads_cpython_profile():
    cum, heavy = importtime([sys.executable, "-c", "import planners"], cwd=str(ROOT))
    assert cum["planners"] >= cum["planners.registry"] > 0 and heavy == ""
