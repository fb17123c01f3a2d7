"""The memplan command line: JSON output, exit codes, error messages without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def memplan(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "experiments.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture()
def ex51_csv(tmp_path) -> Path:
    # Seed 002 exercise 5.1 as half-open MiniMalloc rows.
    f = tmp_path / "ex51.csv"
    f.write_text(
        "id,lower,upper,size\nT1,0,4,100\nT2,1,5,200\nT3,2,6,150\nT4,3,7,250\nT5,4,8,180\n"
    )
    return f


def test_plan_json(ex51_csv, tmp_path):
    out_csv = tmp_path / "planned.csv"
    r = memplan("plan", str(ex51_csv), "--planner", "first_fit", "--json", "-o", str(out_csv))
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["planner"] == "first_fit"
    assert obj["arena"] == 880 and obj["lower_bound"] == 780
    assert obj["status"] == "heuristic" and obj["valid"] is True
    written = pd.read_csv(out_csv)
    assert list(written.columns) == ["id", "lower", "upper", "size", "offset"]
    assert written["offset"].tolist() == [0, 100, 300, 450, 700]


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "empty file"),
        ("id,lower,upper,size\nT1,0,4,-3\n", "size must be >= 0"),
        ("id,lower,upper,size\nT1,5,4,3\n", "end > start"),
        ("id,lower,upper,size\nT1,0,4,3\nT1,1,2,3\n", "duplicate buffer id 'T1'"),
        ("id,lower,upper,size\nT1,0,four,3\n", "column 'upper' must be an integer"),
        ("id,lower,upper\nT1,0,4\n", "lacks column"),
    ],
)
def test_bad_csv_exits_non_zero_without_traceback(tmp_path, content, message):
    f = tmp_path / "bad.csv"
    f.write_text(content)
    r = memplan("plan", str(f), "--planner", "greedy_by_size")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("memplan: error:") and message in r.stderr


def test_capacity_below_lower_bound(ex51_csv):
    r = memplan("plan", str(ex51_csv), "--planner", "greedy_by_size", "--capacity", "700")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "capacity 700 bytes is below the lower bound 780" in r.stderr


def test_unknown_planner(ex51_csv):
    r = memplan("plan", str(ex51_csv), "--planner", "no_such_planner")
    assert r.returncode == 2 and "unknown planner 'no_such_planner'" in r.stderr


def test_missing_file(tmp_path):
    r = memplan("plan", str(tmp_path / "nothing.csv"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_onnx_unknown_dim_is_named(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    f = tmp_path / "symbolic.onnx"
    onnx.save(helper.make_model(graph), f)
    r = memplan("plan", str(f), "--planner", "greedy_by_size")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "'x'" in r.stderr or "batch" in r.stderr


def test_compare_writes_tables_and_figures(tmp_path):
    out = tmp_path / "res"
    r = memplan(
        "compare", "--workloads", "seed000", "seed002_ex5.1", "--planners", "naive", "greedy_in_order",
        "first_fit", "--out", str(out), "--quiet",
    )
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out / "compare.csv")
    assert len(df) == 6 and df["valid"].all()
    seed = df[(df.workload == "seed000") & (df.planner == "greedy_in_order")].iloc[0]
    assert seed["arena"] == 352256 and seed["lower_bound"] == 352256
    ex = df[(df.workload == "seed002_ex5.1") & (df.planner == "first_fit")].iloc[0]
    assert ex["arena"] == 880 and ex["lower_bound"] == 780
    md = (out / "compare.md").read_text()
    assert "Arena / lower bound" in md and "seed000" in md
    for stem in ("ratio_heatmap", "ratio_by_planner", "memory_over_time_seed000"):
        assert (out / "figures" / f"{stem}.png").stat().st_size > 1000
        assert (out / "figures" / f"{stem}.pdf").exists()


def test_compare_schedulers(tmp_path):
    out = tmp_path / "res"
    r = memplan(
        "compare", "--schedulers", "file_order", "min_live", "best_of", "--planners",
        "greedy_by_size", "--workloads", "seed000", "gen:nas_cell", "--out", str(out), "--quiet",
    )
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out / "compare_sched.csv")
    assert set(df["scheduler"]) == {"file_order", "min_live", "best_of"}
    seed = df[df.workload == "seed000"].set_index("scheduler")
    # The seed 000 graph's file order peaks at 20480 live activation bytes (seed 000 section 8).
    assert seed.loc["file_order", "peak_bytes"] == 20480
    for w, sub in df.groupby("workload"):
        s = sub.set_index("scheduler")
        assert s.loc["best_of", "peak_bytes"] <= s.loc["file_order", "peak_bytes"], w
        assert (sub["arena_bytes"] >= sub["peak_bytes"]).all()
    assert (out / "figures" / "compare_sched_peaks.png").exists()


def test_unknown_scheduler_is_an_error(tmp_path):
    r = memplan("compare", "--schedulers", "no_such", "--workloads", "seed000", "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown scheduler 'no_such'" in r.stderr


def test_rv64_command_json():
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    r = memplan("rv64", "seed000", "--planner", "greedy_in_order", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["offsets_match"] is True and obj["arena"] == 352256
    assert obj["rv64_instructions"] > 0
    assert obj["rv64_cycles_u74"] > 0 and obj["rv64_cycles_c906"] > 0
    classes = ("alu", "load", "store", "branch", "jump", "muldiv", "other")
    assert sum(obj[f"insn_{k}"] for k in classes) == obj["rv64_instructions"]


def test_rv64_command_engines_agree():
    """The interpreter and unicorn give the same estimate, field for field."""
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    out = {}
    for engine in ("interp", "unicorn"):
        r = memplan("rv64", "seed000", "--planner", "first_fit", "--json", "--engine", engine)
        assert r.returncode == 0, r.stderr
        out[engine] = json.loads(r.stdout)
    assert out["interp"] == out["unicorn"]


def test_rv64_planner_without_core(tmp_path):
    r = memplan("rv64", "seed000", "--planner", "cpsat")
    assert r.returncode == 2 and "has no RV64 core" in r.stderr
    assert "greedy_by_size_tree" in r.stderr  # the list names the cores, not all planners
    r = memplan("rv64", "seed000", "--planner", "nosuch")
    assert r.returncode == 2 and "'nosuch' is not a planner; RV64 cores:" in r.stderr
    assert "cpsat" not in r.stderr and "Traceback" not in r.stderr


def test_minimalloc_names_work_in_plan_and_compare(tmp_path):
    folder = tmp_path / "mm"
    folder.mkdir()
    (folder / "ex51.880.csv").write_text(
        "id,lower,upper,size\nT1,0,4,100\nT2,1,5,200\nT3,2,6,150\nT4,3,7,250\nT5,4,8,180\n"
    )
    r = memplan("plan", "minimalloc:ex51", "--minimalloc-dir", str(folder), "--planner",
                "first_fit", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert (obj["arena"], obj["capacity"], obj["fits"]) == (880, 880, True)
    out = tmp_path / "res"
    r = memplan("compare", "--workloads", "minimalloc:ex51", "--minimalloc-dir", str(folder),
                "--planners", "first_fit", "--out", str(out), "--quiet", "--no-plots")
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out / "compare.csv")
    assert df["workload"].tolist() == ["minimalloc:ex51"] and df["arena"].tolist() == [880]
    r = memplan("plan", "minimalloc:nothing", "--minimalloc-dir", str(folder))
    assert r.returncode == 2 and "no nothing.CAPACITY.csv" in r.stderr
