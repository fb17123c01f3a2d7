"""Timings (issue 27, point 3): workers warmed up per planner, short runs timed 3 times (median
and minimum recorded), and the sweep report fits scaling slopes only over runs measured well."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd

from experiments import harness
from experiments.harness import run_one, warm_up
from experiments.report.sweep_report import scaling_slopes, well_measured
from experiments.sweep.config import expand_runs, parse_config
from experiments.sweep.execute import execute_run
from planners import Problem, get_planner
from planners.random_problems import random_problem


def test_short_runs_are_repeated_and_record_min_and_median():
    p = random_problem(40, seed=5)
    rec, _ = run_one("r", p, "greedy_by_size", repeats=3, warm=True)
    assert rec["timing_runs"] == 3 and 0 < rec["seconds_min"] <= rec["seconds"]
    one, _ = run_one("r", p, "greedy_by_size")
    assert one["timing_runs"] == 1 and one["seconds_min"] == one["seconds"]


def test_long_runs_are_timed_once():
    calls = []

    def slow(problem):
        calls.append(1)
        time.sleep(harness.REPEAT_BELOW + 0.05)
        return np.zeros(problem.n, np.int64)

    p = Problem.from_closed([("a", 0, 1, 8)])
    rec, _ = run_one("r", p, slow, repeats=3)
    assert rec["timing_runs"] == 1 and len(calls) == 1 and rec["seconds"] >= harness.REPEAT_BELOW


def test_warm_up_once_per_process_and_configuration():
    harness._WARMED.clear()
    a = get_planner("first_fit")
    assert warm_up(a) is True and warm_up(get_planner("first_fit")) is False
    assert warm_up(get_planner("first_fit", engine="python")) is True  # other parameters


def test_sweep_records_repeated_timings(tmp_path):
    cfg = parse_config({"name": "t", "out": str(tmp_path / "s"), "workloads": ["seed002_ex5.1"],
                        "planners": {"first_fit": {}}}, base=tmp_path)
    assert cfg.timing_repeats == 3
    (spec,) = expand_runs(cfg)
    rec = execute_run(spec)[0]
    assert rec["timing_runs"] == 3 and rec["seconds_min"] <= rec["seconds"]
    cfg1 = parse_config({"name": "t", "out": str(tmp_path / "s"), "workloads": ["seed002_ex5.1"],
                         "planners": {"first_fit": {}}, "timing_repeats": 1}, base=tmp_path)
    assert execute_run(expand_runs(cfg1)[0])[0]["timing_runs"] == 1


def test_slopes_fit_only_what_was_measured_well():
    rows = []
    for n, t in ((100, 0.02), (1000, 0.2), (10000, 2.0)):  # slope 1, repeated or long
        rows.append({"config": "a", "buffers": n, "seconds": t * 1.5, "seconds_min": t,
                     "timing_runs": 3 if t < 1 else 1, "params": "{}"})
    # one cold single short run and one run stopped by its 5 s limit: both left out
    rows.append({"config": "a", "buffers": 50, "seconds": 0.5, "seconds_min": 0.5,
                 "timing_runs": 1, "params": "{}"})
    rows.append({"config": "a", "buffers": 20000, "seconds": 4.99, "seconds_min": 4.99,
                 "timing_runs": 1, "params": json.dumps({"time_limit": 5.0})})
    df = pd.DataFrame(rows)
    assert well_measured(df, 1e-2).tolist() == [True, True, True, False, False]
    (s,) = scaling_slopes(df, 1e-2).to_dict("records")
    assert s["points"] == 3 and abs(s["slope"] - 1.0) < 1e-9  # fitted on the minima


def test_compare_takes_the_number_of_timed_runs(tmp_path):
    from experiments.cli.app import main

    out = tmp_path / "c"
    assert main(["compare", "--workloads", "seed000", "--planners", "naive", "--timing-repeats",
                 "5", "--no-plots", "--quiet", "--out", str(out)]) == 0
    rec = pd.read_csv(out / "compare.csv").iloc[0]
    assert rec["timing_runs"] == 5 and rec["seconds_min"] <= rec["seconds"]
    assert main(["compare", "--timing-repeats", "0", "--out", str(out)]) == 2
