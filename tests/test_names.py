"""One name resolver (issue 27, point 9): ``minimalloc:NAME`` works in a sweep config as on
``memplan plan``; an unknown name lists every family and says "did you mean"."""

from __future__ import annotations

import subprocess
import sys

import pytest

from experiments.sweep.config import ConfigError, expand_runs, parse_config
from experiments.workloads import minimalloc_dir
from planners import get_planner


def _cfg(tmp_path, workloads, planners=None):
    return parse_config({"name": "t", "out": str(tmp_path / "sweep"), "workloads": workloads,
                         "planners": planners or {"greedy_by_size": {}}}, base=tmp_path)


def test_sweep_config_takes_minimalloc_names(tmp_path):
    if not any(minimalloc_dir().glob("A.*csv")):
        pytest.skip(f"no MiniMalloc A.*.csv in {minimalloc_dir()} (../shared absent)")
    (spec,) = expand_runs(_cfg(tmp_path, ["minimalloc:A"]))
    assert spec.workload.name == "minimalloc:A" and spec.workload.kind == "problem"
    from experiments.sweep.execute import execute_run

    rec = execute_run(spec)[0]
    assert rec["valid"] and rec["workload"] == "minimalloc:A" and rec["buffers"] > 0
    # the same problem as `memplan plan minimalloc:A`
    from experiments.workloads import load_problem

    assert rec["buffers"] == load_problem("minimalloc:A").n


def test_unknown_workload_lists_families_and_suggests(tmp_path):
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, ["mobilenet_v3"])
    msg = str(e.value)
    assert "did you mean 'mobilenet_v2'?" in msg
    for family in ("minimalloc:NAME", "wakeword:NAME", "gen:NAME", "mobilenet_v1[:alpha"):
        assert family in msg


def test_unknown_planner_suggests_everywhere(tmp_path):
    with pytest.raises(ValueError, match=r"did you mean 'greedy_by_size'\?"):
        get_planner("greedy_by_sise")
    with pytest.raises(ConfigError, match=r"did you mean 'greedy_by_size'\?"):
        _cfg(tmp_path, ["seed000"], {"greedy_by_sise": {}})
    r = subprocess.run([sys.executable, "-m", "experiments.cli", "plan", "mobilenet_v3"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "did you mean 'mobilenet_v2'?" in r.stderr and "wakeword:NAME" in r.stderr


def test_graph_commands_suggest_too():
    r = subprocess.run([sys.executable, "-m", "experiments.cli", "schedule", "mobilenet_v3"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "did you mean 'mobilenet_v2'?" in r.stderr and "minimalloc:NAME" in r.stderr


# -- a listed CSV is labelled by what it is -------------------------------------------------------
CSV = "id,lower,upper,size\nT1,0,3,100\nT2,1,4,200\n"


def test_a_hand_written_csv_is_csv_not_minimalloc(tmp_path, monkeypatch):
    from experiments.records import external_source

    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "S.1024.csv").write_text(CSV.replace("200", "300"))
    (tmp_path / "mine.csv").write_text(CSV)
    monkeypatch.setenv("MEMPLAN_MINIMALLOC_DIR", str(suite))
    specs = expand_runs(_cfg(tmp_path, ["mine.csv", "suite/S.1024.csv"]))
    assert [s.workload.name for s in specs] == ["csv:mine", "minimalloc:S"]
    (spec,) = expand_runs(_cfg(tmp_path, ["minimalloc:S"]))  # the same label by its name
    assert spec.workload.name == "minimalloc:S" and spec.workload.source == specs[1].workload.source
    # a hand-written CSV is stored with the records (no external reference to resolve); a
    # MiniMalloc workload by its name
    assert external_source("csv:mine", str(tmp_path / "mine.csv")) is None
    assert external_source("minimalloc:S", str(suite / "S.1024.csv")) == "minimalloc:S"
    from experiments.sweep.execute import execute_run

    rec = execute_run(specs[0])[0]
    assert rec["valid"] and rec["workload"] == "csv:mine" and rec["arena"] == 300


def test_a_csv_elsewhere_named_like_a_suite_file_is_csv(tmp_path, monkeypatch):
    from experiments.sweep.config import in_minimalloc_suite

    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "A.1048576.csv").write_text(CSV)
    (tmp_path / "A.1048576.csv").write_text(CSV)
    monkeypatch.setenv("MEMPLAN_MINIMALLOC_DIR", str(suite))
    assert in_minimalloc_suite(suite / "A.1048576.csv")
    assert not in_minimalloc_suite(tmp_path / "A.1048576.csv")
    (spec,) = expand_runs(_cfg(tmp_path, ["A.1048576.csv"]))
    assert spec.workload.name == "csv:A"
