"""The metrics of a run and of a set of runs: one home for ratio, fit and geometric mean.

Every table and figure (``memplan compare``'s records and Markdown, the sweep report) computes
these through this module, so a new metric is added here once.

* :func:`ratio` -- ``arena / lower_bound`` (bytes / bytes; 1.0 is the lower bound itself).
* :func:`fits` -- whether an arena fits a capacity (bytes).
* :func:`geomean` -- the geometric mean of positive ratios.
* :func:`pareto_front` -- the runs not dominated in (planning time, ratio).
* :func:`planner_summary` -- per planner: runs, geometric-mean and worst ratio, total or median
  seconds (a pandas DataFrame).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = ["ratio", "fits", "geomean", "planner_summary", "pareto_front"]


def ratio(arena: int | None, lower_bound: int) -> float:
    """``arena / lower_bound`` (both bytes) as a float; ``nan`` without an arena or when the lower
    bound is 0 (an empty problem has no meaningful ratio).

    >>> ratio(780, 780), ratio(1024, 512), math.isnan(ratio(None, 5)), math.isnan(ratio(3, 0))
    (1.0, 2.0, True, True)
    """
    if arena is None or not lower_bound:
        return math.nan
    return int(arena) / int(lower_bound)


def fits(arena: int | None, capacity: int | None) -> bool | None:
    """Whether ``arena <= capacity`` (bytes); ``None`` when there is no capacity or no arena.

    >>> fits(100, 100), fits(101, 100), fits(100, None), fits(None, 100)
    (True, False, None, None)
    """
    if arena is None or capacity is None:
        return None
    return int(arena) <= int(capacity)


def geomean(values: Iterable[float]) -> float:
    """Geometric mean of positive values (ratios); ``nan`` for none. Raises ``ValueError`` for a
    value that is not > 0 (a ratio is never 0; a NaN ratio must be filtered out by the caller).

    >>> round(geomean([1.0, 4.0]), 12)
    2.0
    """
    a = np.asarray(list(values), dtype=float)
    if a.size == 0:
        return math.nan
    if not np.all(a > 0):
        raise ValueError(f"geomean: every value must be > 0, got {a[~(a > 0)][:3].tolist()}")
    return float(np.exp(np.log(a).mean()))


def planner_summary(records: pd.DataFrame, by: str = "planner", item: str = "workload",
                    count: str = "workloads", seconds: tuple[str, ...] = ("sum",),
                    sort: bool = False) -> pd.DataFrame:
    """One row per ``by`` (planner, or a configuration label) over valid runs with a finite ratio:
    ``count`` (number of ``item`` rows), ``geomean_ratio`` (:func:`geomean`), ``worst_ratio``, and
    per entry of ``seconds`` ``total_seconds`` (``"sum"``) or ``median_seconds`` (``"median"``) of
    the ``seconds`` column. Rows in first-appearance order, or sorted by ``by`` (``sort=True``);
    ``by`` is the index. Rows of invalid runs (column ``valid`` false, when present) are left out.

    >>> df = pd.DataFrame({"planner": ["a", "a", "b"], "workload": ["x", "y", "x"],
    ...                    "ratio": [1.0, 4.0, 1.5], "seconds": [0.5, 1.5, 2.0]})
    >>> planner_summary(df).reset_index().values.tolist()
    [['a', 2, 2.0, 4.0, 2.0], ['b', 1, 1.5, 1.5, 2.0]]
    """
    ok = records
    if "valid" in ok:
        ok = ok[ok["valid"].astype(bool)]
    ok = ok[np.isfinite(ok["ratio"].astype(float))]
    names = {"sum": "total_seconds", "median": "median_seconds"}
    return (ok.groupby(by, sort=sort)
            .agg(**{count: (item, "count")},
                 geomean_ratio=("ratio", lambda r: geomean(r.astype(float))),
                 worst_ratio=("ratio", "max"),
                 **{names[s]: ("seconds", s) for s in seconds}))


def pareto_front(seconds: Sequence[float], ratio: Sequence[float]) -> np.ndarray:
    """Indices of the points not dominated in (less time, lower ratio), sorted by time.

    ``O(n log n)``: sort by (seconds, ratio), keep each point whose ratio is below every earlier
    one's.

    >>> pareto_front([1.0, 2.0, 0.5, 3.0], [1.2, 1.0, 1.5, 1.1]).tolist()
    [2, 0, 1]
    """
    s = np.asarray(seconds, float)
    r = np.asarray(ratio, float)
    order = np.lexsort((r, s))
    keep, best = [], math.inf
    for i in order.tolist():
        if r[i] < best:
            keep.append(i)
            best = r[i]
    return np.asarray(keep, dtype=np.int64)
