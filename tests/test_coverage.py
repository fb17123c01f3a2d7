"""Summaries show coverage (issue 27, point 2): n of N per planner and a geometric mean over the
workloads every planner solved, so a planner with a plan on few workloads does not rank first."""

from __future__ import annotations

import math

import pandas as pd

from experiments.metrics import coverage_note, planner_summary


def _records():
    # 'partial' has a plan on the one easy workload only (ratio 1.0), as milp_offsets on 11 of 19
    rows = [("full", w, r) for w, r in (("x", 1.0), ("y", 1.2), ("z", 1.5))]
    rows += [("partial", "x", 1.0)]
    rows += [("partial", w, math.nan) for w in ("y", "z")]
    rows += [("none", w, math.nan) for w in ("x", "y", "z")]
    df = pd.DataFrame(rows, columns=["planner", "workload", "ratio"])
    df["valid"] = df["ratio"].notna()
    df["seconds"] = 1.0
    return df


def test_summary_counts_n_of_n_and_keeps_planners_without_plans():
    s = planner_summary(_records())
    assert list(s.index) == ["full", "partial", "none"]
    assert s["workloads"].tolist() == [3, 1, 0] and s["of"].tolist() == [3, 3, 3]
    assert round(s.loc["full", "geomean_ratio"], 6) == round((1.0 * 1.2 * 1.5) ** (1 / 3), 6)
    assert s.loc["partial", "geomean_ratio"] == 1.0  # its own mean looks perfect ...
    assert math.isnan(s.loc["none", "geomean_ratio"])
    # ... no workload is common to all three rows, so nothing is compared on a common subset
    assert s["common"].tolist() == [0, 0, 0] and s["geomean_common"].isna().all()


def test_common_subset_compares_like_with_like():
    df = _records()
    df = df[df["planner"] != "none"]
    s = planner_summary(df)
    assert s["common"].tolist() == [1, 1]
    assert s["geomean_common"].tolist() == [1.0, 1.0]  # both on workload x only
    assert coverage_note(s) == ("`of`: workloads in the records; `geomean_common` compares every "
                                "row on the 1 workloads all of them solved; partial solved 1 of 3.")
