"""Tests of ``experiments.bench.bounds``: one row per problem and bound, hand-checked values on
MiniMalloc's 5-buffer example and on a small file, gaps computed from the arena."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import shared_path

from experiments.bench.bounds import COLUMNS, _record_arena, bench_bounds, load, main

BOUNDS = ["max_live", "windows", "subsets", "cpsat", "cpsat_windows", "best"]


def test_input12_and_a_small_file(tmp_path):
    mm = shared_path("benchmarks", "minimalloc")
    # three buffers live together at step 1: 3072 + 2048 + 1024 B = 6144 B max live; the one
    # live alone at step 0 (4096 B) fits below, so the optimum is 6144 (hand-checked)
    (tmp_path / "T.csv").write_text("id,lower,upper,size\na,0,1,4096\nb,1,2,3072\n"
                                    "c,1,3,2048\nd,1,3,1024\n")
    df = bench_bounds(["input.12", "T"], mm, tmp_path, time_limit=2, arena_time=2, records=None)
    assert list(df.columns) == COLUMNS
    assert df["bound"].tolist() == BOUNDS * 2
    r = df.set_index(["problem", "bound"])
    # input.12: b1, b3, b5 (4 B each) live at steps 0-2: max live 12 = the arena
    assert r.loc[("input.12", "max_live"), "value"] == 12
    assert r.loc[("input.12", "best"), "arena"] == 12
    assert r.loc[("input.12", "best"), "status"] == "closed"
    assert r.loc[("T", "max_live"), "value"] == 6144
    assert r.loc[("T", "best"), "arena"] == 6144
    assert (df["gap_pct"] == 0).all()
    assert (df["value"] <= df["arena"]).all()
    assert r.loc[("T", "best"), "quantum"] == 1024
    assert r.loc[("T", "cpsat"), "status"] == "skipped"  # max live = arena: nothing to prove


def test_a_worse_record_does_not_replace_the_planner_arena(tmp_path):
    # a committed record of 8192 B against minimize's 6144 B (= max live, the optimum)
    (tmp_path / "T.csv").write_text("id,lower,upper,size\nb,1,2,3072\nc,1,3,2048\nd,1,3,1024\n")
    rec = tmp_path / "rec.csv"
    pd.DataFrame({"problem": ["T"], "status": ["feasible"], "arena": [8192]}).to_csv(rec, index=False)
    # minimize finds 6144 < 8192, so the planner's arena is kept
    df = bench_bounds(["T"], tmp_path, tmp_path, time_limit=1, arena_time=1, records=rec)
    assert set(df["arena"]) == {6144} and df["arena_source"].iloc[0].startswith("minimize")


def test_record_arena_takes_the_smallest_valid_row(tmp_path):
    rec = tmp_path / "rec.csv"
    pd.DataFrame({"problem": ["D", "D", "D", "C"],
                  "status": ["feasible", "infeasible", "optimal", "optimal"],
                  "arena": [1048576, 900000, 1014784, 1039360]}).to_csv(rec, index=False)
    assert _record_arena(rec, "D") == 1014784  # the infeasible row's number is not an arena
    assert _record_arena(rec, "E") is None
    assert _record_arena(None, "D") is None


def test_missing_problem_names_the_places(tmp_path):
    with pytest.raises(FileNotFoundError, match="'nope'"):
        load("nope", tmp_path, tmp_path)


def test_main_writes_csv_and_md(tmp_path):
    mm = shared_path("benchmarks", "minimalloc")
    assert main(["--problems", "input.12", "--minimalloc-dir", str(mm), "--time-limit", "1",
                 "--arena-time", "1", "--records", "", "--out", str(tmp_path)]) == 0
    df = pd.read_csv(tmp_path / "bench_bounds.csv")
    assert df["bound"].tolist() == BOUNDS
    md = (tmp_path / "bench_bounds.md").read_text()
    assert "| input.12 | 5 | 12 | 12 (max_live) |" in md and "G-K are not bundled" in md
