"""Sweeps: config validation, keys, resumable records, failing runs, executors, report determinism."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from experiments.report import build_report, pareto_front
from experiments.sweep import (
    ConfigError,
    expand_runs,
    load_config,
    load_records,
    parse_config,
    run_key,
    run_sweep,
)

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli_sweep", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


SMALL = """
name = "small"
out = "out"
workloads = ["seed000", "seed002_ex5.1", {generator = "random_layered", params = {n_ops = 12}, seeds = [3]}]
[schedulers]
file_order = {}
min_live = {}
[planners]
greedy_in_order = {}
first_fit = {}
greedy_by_size = {}
"""


# -- configuration errors, before anything runs ---------------------------------------------------
@pytest.mark.parametrize(
    "body, message",
    [
        ('workloads = ["seed000"]\n[planners]\nno_such = {}', "unknown planner 'no_such'"),
        ('workloads = ["seed000"]\n[planners]\ncpsat = {time_limit = []}', "grid of 'time_limit' is empty"),
        ('workloads = ["seed000"]\n[planners]\ncpsat = {bogus = [1, 2]}', "unknown parameter 'bogus'"),
        ('workloads = ["seed000"]\n[planners]\ncpsat = {time_limit = [[1]]}', "must hold scalars"),
        ('workloads = ["missing/none.csv"]\n[planners]\nfirst_fit = {}', "no such file"),
        ('workloads = ["nothing/*.csv"]\n[planners]\nfirst_fit = {}', "matches no file"),
        ('workloads = ["no_such_workload"]\n[planners]\nfirst_fit = {}', "unknown workload 'no_such_workload'"),
        ('workloads = ["seed000"]\n[schedulers]\nnope = {}\n[planners]\nfirst_fit = {}', "unknown scheduler 'nope'"),
        ('workloads = ["seed000"]\nrepetitions = 0\n[planners]\nfirst_fit = {}', "repetitions: must be >= 1"),
        ('workloads = ["seed000"]\ncolour = 1\n[planners]\nfirst_fit = {}', "unknown key(s) ['colour']"),
        ('workloads = [{generator = "randwire", params = {wires = 3}}]\n[planners]\nfirst_fit = {}',
         "generator 'randwire' has no parameter 'wires'"),
        ('workloads = ["seed000"\n', "invalid TOML"),
    ],
)
def test_config_errors_are_reported_before_anything_runs(tmp_path, body, message):
    cfg = write(tmp_path, 'out = "out"\n' + body)
    with pytest.raises(ConfigError, match=None) as e:
        load_config(cfg)
    assert message in str(e.value) and str(cfg) in str(e.value)
    r = cli("sweep", str(cfg), "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("memplan: error:") and message in r.stderr
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_missing_config_file(tmp_path):
    r = cli("sweep", str(tmp_path / "none.toml"))
    assert r.returncode == 2 and "no such sweep configuration file" in r.stderr


# -- expansion and keys ---------------------------------------------------------------------------
def test_expansion_counts_and_seed_handling(tmp_path):
    cfg = load_config(write(tmp_path, SMALL))
    runs = expand_runs(cfg)
    # seed000 and ex5.1 are interval problems (no scheduler): 2 x 3 planners; the generated graph
    # runs under both schedulers: 2 x 3. Seeds [0] and no seeded planner: nothing more.
    assert len(runs) == 2 * 3 + 2 * 3
    assert {r.scheduler for r in runs if r.workload.kind == "problem"} == {"-"}
    assert len({r.key for r in runs}) == len(runs)
    # seeds multiply only planners that take a seed; a grid multiplies its own planner
    raw = {"out": "o", "workloads": ["seed000"], "seeds": [0, 1],
           "planners": {"first_fit": {}, "cpsat": {"time_limit": [1.0, 2.0]}}}
    runs = expand_runs(parse_config(raw, base=tmp_path))
    by = {}
    for r in runs:
        by.setdefault(r.planner, []).append(json.loads(r.planner_params))
    assert len(by["first_fit"]) == 1
    assert sorted((p["time_limit"], p["seed"]) for p in by["cpsat"]) == [
        (1.0, 0), (1.0, 1), (2.0, 0), (2.0, 1)]


def test_run_key_depends_on_every_field():
    base = ("d" * 64, "file_order", "{}", "first_fit", "{}", None, 0, 10.0, "0.1+abc")
    k = run_key(*base)
    assert k == run_key(*base) and len(k) == 64
    for i, other in enumerate(("e" * 64, "min_live", '{"a": 1}', "best_fit", '{"b": 2}', 1, 1, 5.0, "0.1+abd")):
        changed = list(base)
        changed[i] = other
        assert run_key(*changed) != k


# -- running: values, resume, failures ------------------------------------------------------------
def test_sweep_records_real_values_and_reruns_nothing(tmp_path):
    cfg = load_config(write(tmp_path, SMALL))
    s = run_sweep(cfg, progress=False)
    assert (s["total"], s["ran"], s["errors"]) == (12, 12, 0)
    df = load_records(cfg.out)
    assert len(df) == 12 and df["valid"].all() and df["key"].is_unique
    seed = df[(df.workload == "seed000") & (df.planner == "greedy_in_order")].iloc[0]
    assert seed["arena"] == 352256 and seed["lower_bound"] == 352256  # seed 000 section 8
    ex = df[(df.workload == "seed002_ex5.1") & (df.planner == "first_fit")].iloc[0]
    assert ex["arena"] == 880 and ex["lower_bound"] == 780  # seed 002 exercise 5.1
    # provenance columns
    for c in ("wall_seconds", "cpu_seconds", "peak_rss_bytes", "start_time", "cpu_model",
              "cpu_cores", "versions", "code_version"):
        assert df[c].notna().all(), c
    assert (df["peak_rss_bytes"] > 1 << 20).all()
    assert "numpy" in json.loads(df["versions"].iloc[0])
    # the stored offsets are a valid plan of the stored problem
    import pandas as pd

    from planners import Problem, check_plan

    row = df[(df.workload == "seed002_ex5.1") & (df.planner == "first_fit")].iloc[0]
    t = pd.read_csv(cfg.out / "problems" / f"{row['problem_digest']}.csv")
    prob = Problem.from_arrays(t["lower"], t["upper"], t["size"])
    offs = np.asarray(json.loads(row["offsets"]))
    check_plan(prob, offs)
    assert offs.tolist() == [0, 100, 300, 450, 700]
    # again: nothing left to run
    s2 = run_sweep(cfg, progress=False)
    assert (s2["already_done"], s2["ran"]) == (12, 0)


def test_failing_run_is_recorded_and_the_sweep_finishes(tmp_path):
    (tmp_path / "bad.csv").write_text("id,lower,upper,size\nT1,0,4,-3\n")
    cfg = write(tmp_path, 'out = "out"\nworkloads = ["bad.csv", "seed002_ex5.1"]\n'
                          '[planners]\nfirst_fit = {}\ngreedy_by_size = {}\n')
    r = cli("sweep", str(cfg), "--quiet", "--strict")
    assert r.returncode == 1, r.stderr
    assert "4 runs: 0 already recorded, 4 ran, 2 with an error" in r.stdout
    df = load_records(tmp_path / "out")
    bad = df[df.workload == "minimalloc:bad"]
    assert len(bad) == 2 and (bad.status == "error").all() and not bad.valid.any()
    assert bad["error"].str.contains("size must be >= 0").all()
    good = df[df.workload == "seed002_ex5.1"]
    assert good.valid.all() and sorted(good.arena) == [780, 880]


def test_timeout_is_recorded(tmp_path):
    cfg = write(tmp_path, 'out = "out"\ntimeout = 0.05\n'
                          'workloads = [{generator = "random_layered", params = {n_ops = 60}}]\n'
                          '[schedulers]\nanneal = {iterations = 400000}\n[planners]\nfirst_fit = {}\n')
    s = run_sweep(load_config(cfg), progress=False)
    assert s["errors"] == 1
    rec = load_records(tmp_path / "out").iloc[0]
    assert rec["status"] == "timeout" and "timeout of 0.05 s" in rec["error"]


def test_resume_after_kill_no_duplicates_no_losses(tmp_path):
    cfg_path = write(tmp_path, 'out = "out"\nseeds = [0, 1, 2, 3, 4, 5, 6, 7]\n'
                               'workloads = [{generator = "random_layered", params = {n_ops = 60}}]\n'
                               '[schedulers]\nanneal = {iterations = 15000}\n'
                               '[planners]\ngreedy_by_size = {}\n')
    cfg = load_config(cfg_path)
    expected = {r.key for r in expand_runs(cfg)}
    assert len(expected) == 8
    rec_dir = tmp_path / "out" / "records"
    proc = subprocess.Popen([sys.executable, "-m", "experiments.cli_sweep", "sweep", str(cfg_path),
                             "--quiet"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(rec_dir.glob("*.json"))) < 2:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = {p.stem: p.read_text() for p in rec_dir.glob("*.json")}
    assert 2 <= len(first) < 8, "the sweep must be killed mid-way"
    for text in first.values():  # every record on disk is complete JSON
        assert json.loads(text)["key"] in expected
    s = run_sweep(cfg, progress=False)
    assert s["already_done"] == len(first) and s["ran"] == 8 - len(first)
    after = {p.stem: p.read_text() for p in rec_dir.glob("*.json")}
    assert set(after) == expected  # no losses
    assert all(after[k] == v for k, v in first.items())  # finished runs were not redone
    assert not list(rec_dir.glob(".*.tmp"))
    df = load_records(tmp_path / "out")
    assert len(df) == 8 and df["key"].is_unique and df["valid"].all()


def test_process_pool_and_dask_local_cluster_match_local(tmp_path):
    pytest.importorskip("distributed")
    cfg = load_config(write(tmp_path, SMALL))
    cfg_a = load_config(write(tmp_path, SMALL), out=tmp_path / "a")
    run_sweep(cfg_a, progress=False)
    cfg_b = load_config(write(tmp_path, SMALL), out=tmp_path / "b")
    run_sweep(cfg_b, executor="local", jobs=2, progress=False)
    cfg_c = load_config(write(tmp_path, SMALL), out=tmp_path / "c")
    s = run_sweep(cfg_c, executor="dask-local", jobs=2, progress=False)
    assert s["ran"] == len(expand_runs(cfg)) == 12
    cols = ["key", "workload", "scheduler", "planner", "params", "status", "valid", "arena",
            "lower_bound", "buffers", "offsets", "problem_digest"]
    a, b, c = (load_records(tmp_path / x)[cols] for x in "abc")
    assert a.equals(b) and a.equals(c)


# -- report -----------------------------------------------------------------------------------------
def test_pareto_front_hand_checked():
    secs = [1.0, 2.0, 0.5, 3.0, 2.0]
    ratio = [1.5, 1.2, 2.0, 1.0, 1.3]
    assert pareto_front(secs, ratio).tolist() == [2, 0, 1, 3]


def test_report_is_deterministic_from_the_records(tmp_path):
    cfg = load_config(write(tmp_path, 'out = "out"\nworkloads = ["seed000", "seed002_ex5.1"]\n'
                                      '[planners]\nfirst_fit = {}\ngreedy_by_size = {}\n'))
    run_sweep(cfg, progress=False)
    # two generations, in two processes, from the same records
    a = build_report(cfg.out, out=tmp_path / "ra", max_workload_figures=2)
    r = cli("report", str(cfg.out), "--out", str(tmp_path / "rb"), "--max-workload-figures", "2")
    assert r.returncode == 0, r.stderr
    names_a = sorted(p.relative_to(tmp_path / "ra") for p in a)
    names_b = sorted(p.relative_to(tmp_path / "rb") for p in (tmp_path / "rb").rglob("*") if p.is_file())
    assert names_a == names_b
    for n in names_a:
        assert (tmp_path / "ra" / n).read_bytes() == (tmp_path / "rb" / n).read_bytes(), n
    stems = {p.stem for p in a if p.parent.name == "figures"}
    for s in ("planner_comparison", "pareto_quality_time", "scaling_time_vs_buffers",
              "memory_over_time_seed000", "layout_seed002_ex5_1"):
        assert s in stems, s
    assert {p.suffix for p in a if p.stem == "planner_comparison"} == {".png", ".pdf", ".svg"}
    md = (tmp_path / "ra" / "report.md").read_text()
    assert "| seed000 " in md and "352256" in md


def test_report_without_records(tmp_path):
    r = cli("report", str(tmp_path))
    assert r.returncode == 2 and "no records/ folder" in r.stderr
