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
from planners.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli.sweep", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


SMALL = """
name = "small"
out = "out"
code_version = "pinned"  # keys stay put if a source file is edited while the tests run
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
        ('workloads = ["seed000"]\n[planners]\ncpsat = {time_limit = [1.0, -2.0]}',
         "[planners] cpsat: parameter 'time_limit' = -2.0 is not allowed; allowed: a number in "
         "(0, 1000000000] seconds"),
        ('workloads = ["seed000"]\n[planners]\ncpsat = {mode = ["minimize", "fast"]}',
         "[planners] cpsat: parameter 'mode' = 'fast' is not allowed; allowed: one of "
         "{'auto', 'minimize', 'decide'}"),
        ('workloads = ["seed000"]\n[schedulers]\ngenetic = {population = 2}\n[planners]\n'
         'first_fit = {}', "[schedulers] genetic: parameter 'population' = 2 is not allowed"),
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
def test_config_errors_are_reported_before_anything_runs(tmp_path, capsys, body, message):
    from experiments.cli.sweep import main as sweep_main

    cfg = write(tmp_path, 'out = "out"\n' + body)
    # a parameter value its planner's or scheduler's declared rules forbid is a ParameterError
    with pytest.raises((ConfigError, ParameterError), match=None) as e:
        load_config(cfg)
    assert message in str(e.value) and str(cfg) in str(e.value)
    # the command in this process (an exception escaping main would fail the test; the same
    # command as its own process: test_config_error_exits_2_in_its_own_process)
    assert sweep_main(["sweep", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memplan: error:") and message in err
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_config_error_exits_2_in_its_own_process(tmp_path):
    cfg = write(tmp_path, 'out = "out"\nworkloads = ["seed000"]\n[planners]\nno_such = {}')
    r = cli("sweep", str(cfg), "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("memplan: error:") and "unknown planner 'no_such'" in r.stderr
    assert not (tmp_path / "out").exists()


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
    bad = df[df.workload == "csv:bad"]  # a hand-written CSV, not from the MiniMalloc suite
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


def test_per_planner_time_limit_grid_runs_every_point(tmp_path):
    # issue 6: `cpsat = {time_limit = [0.5, 2.0]}` failed every run with "planner_for() got
    # multiple values for argument 'time_limit'"
    from planners import Problem, check_plan

    cfg = load_config(write(tmp_path, 'out = "out"\ntime_limit = 7.0\nworkloads = ["seed002_ex5.1"]\n'
                                      '[planners]\ncpsat = {time_limit = [0.5, 2.0]}\n'
                                      'first_fit = {}\n'))
    s = run_sweep(cfg, progress=False)
    assert (s["ran"], s["errors"]) == (3, 0)
    df = load_records(cfg.out)
    cp = df[df.planner == "cpsat"]
    assert sorted(json.loads(p)["time_limit"] for p in cp["params"]) == [0.5, 2.0]
    assert cp["params"].is_unique and cp["key"].is_unique
    for _, row in cp.iterrows():  # the planner really ran with its own grid point
        assert json.loads(row["resolved_params"])["time_limit"] == json.loads(row["params"])["time_limit"]
        assert row["valid"] and row["status"] == "optimal" and row["error"] == ""
        # seed 002 exercise 5.1: greedy by size reaches the lower bound 780, so the optimum is 780
        assert row["arena"] == 780 == row["lower_bound"]
        t = __import__("pandas").read_csv(cfg.out / "problems" / f"{row['problem_digest']}.csv")
        check_plan(Problem.from_arrays(t["lower"], t["upper"], t["size"]),
                   np.asarray(json.loads(row["offsets"])))
    # a planner without a grid gets the sweep's time limit only when it takes one
    ff = df[df.planner == "first_fit"].iloc[0]
    assert json.loads(ff["params"]) == {} and ff["arena"] == 880


def _failing_greedy_by_size(monkeypatch):
    from planners.greedy import GreedyBySize

    def broken(self, problem):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(GreedyBySize, "_solve", broken)


def test_failed_run_record_keeps_the_requested_params(tmp_path, monkeypatch):
    _failing_greedy_by_size(monkeypatch)
    cfg = load_config(write(tmp_path, 'out = "out"\nworkloads = ["seed002_ex5.1"]\n'
                                      '[planners]\ngreedy_by_size = {fit = ["first", "best"]}\n'))
    s = run_sweep(cfg, progress=False)
    assert (s["ran"], s["errors"]) == (2, 2)
    df = load_records(cfg.out)
    assert (df.status == "error").all() and df["error"].str.contains("injected failure").all()
    # both grid points failed and can still be told apart (the record held params = "" before)
    assert sorted(json.loads(p)["fit"] for p in df["params"]) == ["best", "first"]
    assert [json.loads(p)["fit"] for p in df["resolved_params"]] == \
        [json.loads(p)["fit"] for p in df["params"]]


def test_retry_failed_reruns_error_and_timeout_records_only(tmp_path, monkeypatch, capsys):
    from experiments.cli import sweep as cli_sweep

    cfg_path = write(tmp_path, 'out = "out"\ncode_version = "pinned"\nworkloads = ["seed002_ex5.1"]\n'
                               '[planners]\nfirst_fit = {}\nbest_fit = {}\ngreedy_by_size = {}\n')
    cfg = load_config(cfg_path)
    with monkeypatch.context() as m:
        _failing_greedy_by_size(m)
        s = run_sweep(cfg, progress=False)
    assert (s["ran"], s["errors"]) == (3, 1)
    df = load_records(cfg.out)
    rec_dir = cfg.out / "records"
    gbs_key = df[df.planner == "greedy_by_size"]["key"].iloc[0]
    ff_key = df[df.planner == "first_fit"]["key"].iloc[0]
    bf_key = df[df.planner == "best_fit"]["key"].iloc[0]
    # pretend first_fit's run timed out (e.g. on a loaded machine)
    ff = json.loads((rec_dir / f"{ff_key}.json").read_text())
    ff.update(status="timeout", valid=False, arena=None, error="run exceeded the timeout of 1 s")
    (rec_dir / f"{ff_key}.json").write_text(json.dumps(ff))
    kept = (rec_dir / f"{bf_key}.json").read_bytes()
    # a plain rerun keeps failed records
    assert run_sweep(cfg, progress=False)["ran"] == 0
    # --dry-run --retry-failed lists exactly the two failed runs
    assert cli_sweep.main(["sweep", str(cfg_path), "--dry-run", "--retry-failed"]) == 0
    out = capsys.readouterr().out
    assert "3 runs, 1 already recorded, 2 would run (2 failed ones again)" in out
    assert gbs_key[:12] in out and ff_key[:12] in out and bf_key[:12] not in out
    assert cli_sweep.main(["sweep", str(cfg_path), "--quiet", "--retry-failed", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "3 runs: 1 already recorded, 2 ran (2 failed ones again), 0 with an error" in out
    df = load_records(cfg.out)
    assert len(df) == 3 and df["valid"].all() and (df["status"] != "error").all()
    arenas = dict(zip(df.planner, df.arena))
    assert (arenas["first_fit"], arenas["greedy_by_size"]) == (880, 780)  # seed 002 ex. 5.1
    assert (rec_dir / f"{bf_key}.json").read_bytes() == kept  # the finished run was kept
    assert not list(rec_dir.glob(".*.tmp"))


def test_retry_failed_is_in_the_command_help():
    import argparse

    from experiments.cli import sweep as cli_sweep

    ap = argparse.ArgumentParser(prog="memplan")
    sub = ap.add_subparsers(dest="command")
    cli_sweep.add_parsers(sub)
    text = sub.choices["sweep"].format_help()
    assert "--retry-failed" in text and "status error or timeout" in " ".join(text.split())
    from experiments.sweep import run as sweep

    assert "--retry-failed" in sweep.__doc__


def test_resume_after_kill_no_duplicates_no_losses(tmp_path):
    cfg_path = write(tmp_path, 'out = "out"\ncode_version = "pinned"\nseeds = [0, 1, 2, 3, 4, 5, 6, 7]\n'
                               'workloads = [{generator = "random_layered", params = {n_ops = 60}}]\n'
                               '[schedulers]\nanneal = {iterations = 15000}\n'
                               '[planners]\ngreedy_by_size = {}\n')
    cfg = load_config(cfg_path)
    expected = {r.key for r in expand_runs(cfg)}
    assert len(expected) == 8
    rec_dir = tmp_path / "out" / "records"
    proc = subprocess.Popen([sys.executable, "-m", "experiments.cli.sweep", "sweep", str(cfg_path),
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
    a = build_report(cfg.out, out=tmp_path / "ra", max_workload_figures=2,
                     formats=("png", "pdf", "svg"))
    r = cli("report", str(cfg.out), "--out", str(tmp_path / "rb"), "--max-workload-figures", "2",
            "--formats", "png,pdf,svg")
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


def test_report_default_formats_are_png_and_pdf(tmp_path):
    cfg = load_config(write(tmp_path, 'out = "out"\nworkloads = ["seed002_ex5.1"]\n'
                                      '[planners]\nfirst_fit = {}\n'))
    run_sweep(cfg, progress=False)
    written = build_report(cfg.out, max_workload_figures=0)
    assert {p.suffix for p in written if p.parent.name == "figures"} == {".png", ".pdf"}


# -- notebooks: a failed sweep run must fail `make test`; no stray reprs --------------------------
NOTEBOOKS = ["02_sweeps_and_figures", "03_scheduling", "04_rv64_cost"]


def _code_cells(name: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_cells_leave_no_matplotlib_repr(name):
    """A code cell whose last statement is a bare plotting call (``ax.legend(...)``) shows
    ``<matplotlib.legend.Legend at 0x...>``; such a cell must end with ``;``."""
    import ast

    for src in _code_cells(name):
        body = ast.parse(src).body
        if not body or not isinstance(body[-1], ast.Expr) or not isinstance(body[-1].value, ast.Call):
            continue
        f = body[-1].value.func
        root = f
        while isinstance(root, (ast.Attribute, ast.Call)):
            root = root.value if isinstance(root, ast.Attribute) else root.func
        if isinstance(root, ast.Name) and root.id in ("ax", "axes", "plt", "fig"):
            assert src.rstrip().endswith(";"), f"{name}: cell ends with a bare plot call:\n{src}"


def test_sweep_notebook_asserts_no_failed_runs():
    cells = _code_cells("02_sweeps_and_figures")
    i = next(k for k, c in enumerate(cells) if "run_sweep(cfg" in c)
    checks = "\n".join(cells[i:i + 2])
    assert "assert summary['errors'] == 0" in checks and "assert df['valid'].all()" in "\n".join(cells)


def test_report_uses_only_the_latest_code_version(tmp_path):
    cfg = load_config(write(tmp_path, 'out = "out"\nworkloads = ["seed002_ex5.1"]\n'
                                      '[planners]\nfirst_fit = {}\n'))
    run_sweep(cfg, progress=False)
    rec_dir = cfg.out / "records"
    (new,) = [json.loads(p.read_text()) for p in rec_dir.glob("*.json")]
    # a record of an older code version, with another arena, beside the new one
    old = dict(new, key="0" * 64, code_version="0.0.1+old", start_time="2000-01-01T00:00:00+00:00",
               arena=1000, ratio=1000 / 780)
    (rec_dir / f"{old['key']}.json").write_text(json.dumps(old))
    from experiments.report import latest_code_version

    assert latest_code_version(load_records(cfg.out)) == new["code_version"] != "0.0.1+old"
    build_report(cfg.out, out=tmp_path / "r1", max_workload_figures=0, formats=("png",))
    agg = __import__("pandas").read_csv(tmp_path / "r1" / "tables" / "runs_aggregated.csv")
    assert agg["arena"].tolist() == [880] and agg["runs"].tolist() == [1]
    md = (tmp_path / "r1" / "report.md").read_text()
    assert "1 records of older code versions were left out" in md and "Warning" not in md
    build_report(cfg.out, out=tmp_path / "r2", max_workload_figures=0, formats=("png",),
                 all_versions=True)
    agg = __import__("pandas").read_csv(tmp_path / "r2" / "tables" / "runs_aggregated.csv")
    assert agg["arena"].tolist() == [940] and agg["runs"].tolist() == [2]  # median of 880, 1000
    assert "come from 2 code versions" in (tmp_path / "r2" / "report.md").read_text()


# -- concurrent sweeps, killed sweeps, timeouts of native code -------------------------------------
SLOW = ('out = "out"\ncode_version = "pinned"\nseeds = [0, 1, 2, 3, 4, 5]\n'
        'workloads = [{generator = "random_layered", params = {n_ops = 60}}]\n'
        '[schedulers]\nanneal = {iterations = 15000}\n[planners]\ngreedy_by_size = {}\n')


def _wait_for(cond, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_second_sweep_on_one_folder_waits_or_refuses(tmp_path):
    cfg_path = write(tmp_path, SLOW.replace("iterations = 15000", "iterations = 40000"))
    rec_dir = tmp_path / "out" / "records"
    command = [sys.executable, "-m", "experiments.cli.sweep", "sweep", str(cfg_path), "--quiet"]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    _wait_for(lambda: len(list(rec_dir.glob("*.json"))) >= 1 or first.poll() is not None)
    assert first.poll() is None, "the first sweep must still be running"
    # the default waits, says so, and then finds everything done
    second = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    # --no-wait: one line, exit 2, nothing of the first sweep touched
    r = cli("sweep", str(cfg_path), "--quiet", "--no-wait")
    assert first.poll() is None, "the first sweep must still be running"
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("memplan: error:") and "another sweep is writing" in r.stderr
    out1, err1 = first.communicate(timeout=300)
    out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0, err1
    assert "6 runs: 0 already recorded, 6 ran, 0 with an error" in out1
    assert second.returncode == 0, err2
    assert "waiting for another sweep writing to" in err2
    assert "6 runs: 6 already recorded, 0 ran" in out2
    df = load_records(tmp_path / "out")
    assert len(df) == 6 and df["valid"].all() and df["key"].is_unique
    assert not list(rec_dir.glob(".*.tmp"))


def _alive(pids) -> list[int]:
    import psutil

    left = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            pass
    return left


def test_killed_sweep_leaves_no_worker_processes(tmp_path):
    import psutil

    cfg_path = write(tmp_path, SLOW.replace("iterations = 15000", "iterations = 2000000"))
    proc = subprocess.Popen([sys.executable, "-m", "experiments.cli.sweep", "sweep", str(cfg_path),
                             "--quiet", "--jobs", "2"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    try:
        _wait_for(lambda: len(parent.children(recursive=True)) >= 2)
        kids = [c.pid for c in parent.children(recursive=True)]
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` does
        proc.wait()
        deadline = time.monotonic() + 10
        while _alive(kids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(kids) == [], "worker processes outlived the killed sweep"
    finally:
        for pid in _alive([c.pid for c in psutil.Process().children(recursive=True)]):
            if pid != proc.pid:
                os.kill(pid, signal.SIGKILL)


_NATIVE_TIMEOUT = """
import json, sys
from planners.greedy import GreedyBySize
from experiments.sweep import load_config, load_records, run_sweep

def stuck(self, problem):
    return sum(range(10 ** 15))  # one C call that never checks for signals nor releases the GIL

GreedyBySize._solve = stuck
cfg = load_config(sys.argv[1])
s = run_sweep(cfg, jobs=int(sys.argv[2]), progress=False)
print(json.dumps([s, load_records(cfg.out)[["planner", "status", "error", "valid"]].to_dict("records")]))
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_timeout_stops_code_that_never_returns_to_python(tmp_path, jobs):
    cfg = write(tmp_path, 'out = "out"\ntimeout = 1.0\nworkloads = ["seed002_ex5.1"]\n'
                          '[planners]\ngreedy_by_size = {}\nfirst_fit = {}\n')
    script = write(tmp_path, _NATIVE_TIMEOUT, "stuck.py")
    r = subprocess.run([sys.executable, str(script), str(cfg), str(jobs)], cwd=ROOT,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    summary, recs = json.loads(r.stdout.strip().splitlines()[-1])
    assert (summary["ran"], summary["errors"]) == (2, 1)
    by = {x["planner"]: x for x in recs}
    assert by["greedy_by_size"]["status"] == "timeout" and not by["greedy_by_size"]["valid"]
    assert "timeout of 1.0 s (its worker process was killed)" in by["greedy_by_size"]["error"]
    assert by["first_fit"]["status"] == "heuristic" and by["first_fit"]["valid"]  # the pool went on


# -- corrupt records -------------------------------------------------------------------------------
def test_corrupt_records_are_moved_aside_and_run_again(tmp_path):
    from experiments.sweep import CorruptRecordWarning

    cfg = load_config(write(tmp_path, 'out = "out"\ncode_version = "pinned"\n'
                                      'workloads = ["seed002_ex5.1"]\n[planners]\nfirst_fit = {}\n'
                                      'best_fit = {}\ngreedy_by_size = {}\n'))
    run_sweep(cfg, progress=False)
    rec_dir = cfg.out / "records"
    df = load_records(cfg.out)
    k_ff = df[df.planner == "first_fit"]["key"].iloc[0]
    k_bf = df[df.planner == "best_fit"]["key"].iloc[0]
    truncated = rec_dir / f"{k_ff}.json"
    truncated.write_text(truncated.read_text()[:40])
    partial = rec_dir / f"{k_bf}.json"
    rec = json.loads(partial.read_text())
    del rec["status"]
    partial.write_text(json.dumps(rec))
    # the report leaves them out with a warning naming each file, and still works
    with pytest.warns(CorruptRecordWarning) as w:
        build_report(cfg.out, out=tmp_path / "r", max_workload_figures=0, formats=("png",))
    texts = sorted(str(x.message) for x in w)
    assert any(str(truncated) in t and "not valid JSON" in t for t in texts)
    assert any(str(partial) in t and "missing field(s) status" in t for t in texts)
    assert "1 runs (1 valid plans" in (tmp_path / "r" / "report.md").read_text()
    # the CLI names them in one warning line each and exits 0
    r = cli("report", str(cfg.out), "--out", str(tmp_path / "r2"), "--max-workload-figures", "0",
            "--formats", "png")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and all(x.startswith("memplan: warning:") for x in lines)
    # the sweep moves them to records/corrupt/ and runs them again
    with pytest.warns(CorruptRecordWarning, match="moved to"):
        s = run_sweep(cfg, progress=False)
    assert (s["already_done"], s["ran"], s["errors"]) == (1, 2, 0)
    assert sorted(p.name for p in (rec_dir / "corrupt").iterdir()) == sorted([truncated.name, partial.name])
    df = load_records(cfg.out)
    assert len(df) == 3 and df["valid"].all()
    assert dict(zip(df.planner, df.arena)) == {"first_fit": 880, "best_fit": 880, "greedy_by_size": 780}


# -- keys follow the code each run executes --------------------------------------------------------
def test_editing_one_planner_changes_only_its_keys(tmp_path, monkeypatch):
    from experiments.sweep import provenance as sweep

    cfg = load_config(write(tmp_path, 'out = "out"\nworkloads = ["seed002_ex5.1", '
                                      '{generator = "random_layered", params = {n_ops = 12}}]\n'
                                      '[schedulers]\nfile_order = {}\nmin_live = {}\n'
                                      '[planners]\nnaive = {}\nfirst_fit = {}\ngreedy_by_size = {}\n'))
    original, cache = sweep._module_source, {}

    def real(mod):  # the sources as they are now, whatever is edited on disk meanwhile
        if mod not in cache:
            cache[mod] = original(mod)
        return cache[mod]

    monkeypatch.setattr(sweep, "_module_source", real)
    before = {(r.workload.name, r.scheduler, r.planner): r.key for r in expand_runs(cfg)}

    def edited(name, text):
        def source(mod):
            src = real(mod)
            return src + text if mod == name else src
        return source

    # a comment or a docstring is not code
    monkeypatch.setattr(sweep, "_module_source", edited("planners.naive", "\n# a comment\n"))
    assert {(r.workload.name, r.scheduler, r.planner): r.key for r in expand_runs(cfg)} == before
    # a code change in planners/naive.py changes exactly the naive runs' keys
    monkeypatch.setattr(sweep, "_module_source", edited("planners.naive", "\n_EDITED = 1\n"))
    after = {(r.workload.name, r.scheduler, r.planner): r.key for r in expand_runs(cfg)}
    changed = sorted(k for k in before if before[k] != after[k])
    assert changed == sorted(k for k in before if k[2] == "naive") and len(changed) == 3
    # a scheduler's module changes the keys of the graph runs under that scheduler only
    monkeypatch.setattr(sweep, "_module_source", edited("scheduling.schedulers.min_live", "\nX = 2\n"))
    after = {(r.workload.name, r.scheduler, r.planner): r.key for r in expand_runs(cfg)}
    changed = sorted(k for k in before if before[k] != after[k])
    assert changed == sorted(k for k in before if k[1] == "min_live") and len(changed) == 3


def test_run_modules_follow_imports_not_the_whole_tree():
    from experiments.sweep import run_modules

    mods = run_modules("first_fit")
    assert {"planners.greedy", "planners.base", "planners.validate", "experiments.harness",
            "experiments.sweep.execute", "planners.registry"} <= set(mods)
    # the registry is reached by name: other planners' modules are not in first_fit's code
    assert not {"planners.cpsat", "planners.naive", "planners.exact_search"} & set(mods)
    # choose_best runs planners through the registry, so every registered planner counts for it
    assert {"planners.cpsat", "planners.naive", "planners.greedy"} <= set(run_modules("choose_best"))
    graph = run_modules("first_fit", "min_live", "onnx")
    assert {"scheduling.schedulers.min_live", "scheduling.onnx_import", "scheduling.lifetimes"} <= set(graph)
    assert "scheduling.schedulers.anneal" not in graph


def test_missing_module_source_is_an_error(monkeypatch):
    from experiments.sweep import provenance as sweep

    real = sweep._module_source
    monkeypatch.setattr(sweep, "_module_source", lambda m: None if m == "planners.greedy" else real(m))
    with pytest.raises(ConfigError, match="module 'planners.greedy' has no readable source"):
        sweep.run_code_version("first_fit")


# -- a sweep folder does not depend on the machine ----------------------------------------------------
def test_sweep_folder_has_no_machine_paths_and_is_stable_when_moved(tmp_path):
    import shutil

    a = tmp_path / "a"
    (a / "data").mkdir(parents=True)
    (a / "data" / "tiny.csv").write_text("id,lower,upper,size\nT1,0,2,64\nT2,1,3,32\n")
    write(a, 'out = "results"\ncode_version = "pinned"\nworkloads = ["data/tiny.csv", "squeezenet"]\n'
             '[planners]\nfirst_fit = {}\n')
    assert run_sweep(load_config(a / "sweep.toml"), progress=False)["ran"] == 2
    for p in sorted(p for p in (a / "results").rglob("*") if p.is_file()):
        text = p.read_text()
        assert str(tmp_path) not in text and "/site-packages/" not in text.replace("<site-packages>/", ""), p
    meta = json.loads((a / "results" / "sweep.json").read_text())
    assert [w["source"] for w in meta["workloads"]] == [
        "data/tiny.csv", "<site-packages>/onnx/backend/test/data/light/light_squeezenet.onnx"]
    # the same folder elsewhere (a fresh clone): rerunning changes no file
    b = tmp_path / "elsewhere" / "b"
    shutil.copytree(a, b)
    before = {p.relative_to(b): p.read_bytes() for p in b.rglob("*") if p.is_file()}
    assert run_sweep(load_config(b / "sweep.toml"), progress=False)["ran"] == 0
    after = {p.relative_to(b): p.read_bytes() for p in b.rglob("*") if p.is_file()}
    assert after == before


def test_skipped_run_is_recorded_without_offsets_and_not_retried(tmp_path, monkeypatch):
    from planners.base import SolveResult
    from planners.greedy import GreedyBySize

    monkeypatch.setattr(GreedyBySize, "_solve", lambda self, p: SolveResult(
        None, status="skipped", info={"reason": "model estimate above the time limit"}))
    cfg = load_config(write(tmp_path, 'out = "out"\ncode_version = "pinned"\n'
                                      'workloads = ["seed002_ex5.1"]\n[planners]\n'
                                      'greedy_by_size = {}\nfirst_fit = {}\n'))
    s = run_sweep(cfg, progress=False)
    assert (s["ran"], s["errors"]) == (2, 0)  # declining to run is not a failure
    df = load_records(cfg.out)
    sk = df[df.planner == "greedy_by_size"].iloc[0]
    assert sk["status"] == "skipped" and not sk["valid"] and pd_isna(sk["arena"])
    assert pd_isna(sk["offsets"]) and sk["error"] == ""
    assert run_sweep(cfg, progress=False, retry_failed=True)["ran"] == 0


def pd_isna(x) -> bool:
    import pandas as pd

    return bool(pd.isna(x))


def test_worker_that_dies_gives_an_error_record_and_the_sweep_goes_on(tmp_path, monkeypatch):
    from planners.greedy import GreedyBySize

    monkeypatch.setattr(GreedyBySize, "_solve", lambda self, p: os._exit(3))  # e.g. a crash in C
    cfg = load_config(write(tmp_path, 'out = "out"\ncode_version = "pinned"\n'
                                      'workloads = ["seed002_ex5.1"]\n[planners]\n'
                                      'greedy_by_size = {}\nfirst_fit = {}\nbest_fit = {}\n'))
    s = run_sweep(cfg, progress=False)
    assert (s["ran"], s["errors"]) == (3, 1)
    df = load_records(cfg.out)
    dead = df[df.planner == "greedy_by_size"].iloc[0]
    assert dead["status"] == "error" and "worker process died (exit code 3)" in dead["error"]
    assert dead["workload_source"] == "seed002_ex5.1" and dead["code_version"] == "pinned"
    assert sorted(df[df.valid]["arena"].tolist()) == [880, 880]


def test_c_extension_counts_by_its_c_source(monkeypatch):
    from experiments.sweep import provenance as sweep

    original, cache = sweep._module_source, {}

    def frozen(mod):
        if mod not in cache:
            cache[mod] = original(mod)
        return cache[mod]

    monkeypatch.setattr(sweep, "_module_source", frozen)
    assert "planners._exact_search" in sweep.run_modules("exact_search")
    assert "static" in frozen("planners._exact_search")  # the C text, not the built library
    before = {p: sweep.run_code_version(p) for p in ("exact_search", "first_fit")}
    monkeypatch.setattr(sweep, "_module_source", lambda m: frozen(m) + "\nstatic int edited = 1;\n"
                        if m == "planners._exact_search" else frozen(m))
    after = {p: sweep.run_code_version(p) for p in ("exact_search", "first_fit")}
    assert after["exact_search"] != before["exact_search"]
    assert after["first_fit"] == before["first_fit"]


def test_sweep_records_the_order_bound_and_the_joint_optimisers_own_arena(tmp_path):
    """A graph workload's record carries the scheduler's proved order bound; the ``joint``
    scheduler's also its own checked layout (arena, bound, status), beside the planner that
    re-plans its order: the joint arena never below its bound, the status optimal only at it."""
    from experiments.cli import main as cli_main
    from experiments.sweep.store import read_records

    cfg = tmp_path / "j.toml"
    cfg.write_text('name = "j"\nout = "out"\ntime_limit = 5.0\n'
                   'workloads = [{generator = "randwire", params = {n_nodes = 10}, seeds = [0]}]\n'
                   '[schedulers]\nmin_live = {}\njoint = {deterministic_time = 1.0, time_limit = 20.0}\n'
                   '[planners]\ngreedy_by_size = {}\n')
    assert cli_main(["sweep", str(cfg), "--jobs", "1", "--quiet"]) == 0
    recs = {r["scheduler"]: r for r in read_records(tmp_path / "out")}
    assert set(recs) == {"min_live", "joint"} and all(r["valid"] for r in recs.values())
    for r in recs.values():
        assert 0 < r["order_bound"] <= r["lower_bound"]  # the order's max live >= every order's
    j = recs["joint"]
    assert j["joint_bound"] <= j["joint_arena"]
    assert j["joint_status"] == ("optimal" if j["joint_arena"] == j["joint_bound"] else "feasible")
    assert "joint_arena" not in recs["min_live"]
