"""The metrics of a run and of a set of runs: one home for ratio, fit and geometric mean.

Every table and figure (``memplan compare``'s records and Markdown, the sweep report) computes
these through this module, so a new metric is added here once.

* :func:`ratio` -- ``arena / lower_bound`` (bytes / bytes; 1.0 is the lower bound itself).
* :func:`fits` -- whether an arena fits a capacity (bytes).
* :func:`geomean` -- the geometric mean of positive ratios.
* :func:`pareto_front` -- the runs not dominated in (planning time, ratio).
* :func:`planner_summary` -- per planner: coverage (n of N), geometric-mean ratio over its own
  and over the common workloads, worst ratio, total or median seconds (a pandas DataFrame);
  :func:`coverage_note` says it in one line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where a table is built: `memplan plan` starts fast
    import pandas as pd

__all__ = ["ratio", "fits", "geomean", "planner_summary", "coverage_note", "pareto_front",
           "REPEAT_BELOW"]

#: Runs at least this long (seconds) are timed once (:func:`experiments.harness.run_one`): a cold
#: start of milliseconds is negligible there, and a time-limited solver would only spend its
#: limit again; shorter runs are repeated and count as measured well only when they were.
REPEAT_BELOW = 1.0


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
    """One row per ``by`` (planner, or a configuration label), with its coverage, so that no
    summary hides missing runs:

    * ``count``: the ``item`` rows (workloads) it solved (valid runs with a finite ratio), and
      ``of``: the distinct ``item`` values in ``records`` (n of N);
    * ``geomean_ratio`` (:func:`geomean`) and ``worst_ratio`` over the items it solved;
    * ``geomean_common``: the geometric mean over the items that **every** ``by`` in
      ``records`` solved (``common`` of them), the one column that compares rows on the same
      workloads (``nan`` when no item is common);
    * per entry of ``seconds`` ``total_seconds`` (``"sum"``) or ``median_seconds``
      (``"median"``) of the ``seconds`` column over its solved items.

    A ``by`` with no valid run keeps its row (``count`` 0, the ratios ``nan``). Rows in
    first-appearance order, or sorted by ``by`` (``sort=True``); ``by`` is the index. Rows of
    invalid runs (column ``valid`` false, when present) count as not solved.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"planner": ["a", "a", "b"], "workload": ["x", "y", "x"],
    ...                    "ratio": [1.0, 4.0, 1.5], "seconds": [0.5, 1.5, 2.0]})
    >>> planner_summary(df).reset_index().values.tolist()
    [['a', 2, 2, 2.0, 1.0, 1, 4.0, 2.0], ['b', 1, 2, 1.5, 1.5, 1, 1.5, 2.0]]
    """
    ok = records
    if "valid" in ok:
        ok = ok[ok["valid"].astype(bool)]
    ok = ok[np.isfinite(ok["ratio"].astype(float))]
    groups = list(dict.fromkeys(records[by]))
    if sort:
        groups = sorted(groups)
    solved = {g: set(s) for g, s in ok.groupby(by, sort=False)[item]}
    common = set.intersection(*(solved.get(g, set()) for g in groups)) if groups else set()
    names = {"sum": "total_seconds", "median": "median_seconds"}
    out = (ok.groupby(by, sort=sort)
           .agg(**{count: (item, "count")},
                geomean_ratio=("ratio", lambda r: geomean(r.astype(float))),
                worst_ratio=("ratio", "max"),
                **{names[s]: ("seconds", s) for s in seconds}))
    out = out.reindex(groups)
    out[count] = out[count].fillna(0).astype(int)
    out.insert(1, "of", int(records[item].nunique()))
    sub = ok[ok[item].isin(common)]
    gc = sub.groupby(by, sort=False)["ratio"].apply(lambda r: geomean(r.astype(float)))
    out.insert(3, "geomean_common", gc.reindex(groups).to_numpy(float) if len(groups) else [])
    out.insert(4, "common", len(common))
    out.index.name = by
    return out


def coverage_note(summary: pd.DataFrame, count: str = "workloads") -> str:
    """One line saying what a :func:`planner_summary` table compares: how many items every row
    solved and which rows miss some (``"n of N"``).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"planner": ["a", "a", "b"], "workload": ["x", "y", "x"],
    ...                    "ratio": [1.0, 4.0, 1.5], "seconds": [0.5, 1.5, 2.0]})
    >>> coverage_note(planner_summary(df))
    '`of`: workloads in the records; `geomean_common` compares every row on the 1 workloads all of them solved; b solved 1 of 2.'
    """
    if summary.empty:
        return ""
    n_all, common = int(summary["of"].iloc[0]), int(summary["common"].iloc[0])
    short = [f"{k} solved {int(r[count])} of {n_all}" for k, r in summary.iterrows()
             if int(r[count]) < n_all]
    return (f"`of`: {count} in the records; `geomean_common` compares every row on the {common} "
            f"{count} all of them solved" + ("; " + ", ".join(short) if short else
                                              "; every row solved all of them") + ".")


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
