"""Compare planners on multi-method inputs: several problems planned into one shared arena.

Data flow: input (a multi-signature ``.tflite`` or a shared-arena manifest) ->
:class:`planners.shared_arena.SharedArenaProblem` -> :func:`planners.shared_arena.plan_shared`
(every per-method plan checked by :func:`planners.shared_arena.check_shared_plan`, the shared
buffers at one offset in every method) -> one record per (input, planner). A planner that refuses
(one line) or returns no plan is recorded with its status and the message; it never stops the
comparison. ``memplan compare --shared FILE ...`` runs it (:mod:`experiments.cli.compare`) and
writes ``compare_shared.csv`` and ``compare_shared.md`` after every run.

Record columns (:data:`SHARED_COLUMNS`): ``input``, ``methods`` (``+``-joined names), ``buffers``
(over all methods), ``shared`` (shared buffers), ``planner``, ``mode`` (the reduction:
``colocate`` exact, ``hull`` simple), ``status`` (the shared plan's: ``optimal`` = proved,
``feasible``, ``heuristic``; ``refused`` / ``error`` with ``error``), ``arena`` (bytes, the maximum
over methods), ``lower_bound`` (bytes, the maximum over methods of each method's bound),
``ratio`` (arena / lower bound), ``method_arenas`` (JSON ``{method: bytes}``), ``seconds``
(wall time of the call), ``time_limit``, ``error``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

__all__ = ["SHARED_COLUMNS", "compare_shared", "shared_markdown"]

#: Columns of a shared-arena comparison record, in order.
SHARED_COLUMNS = ["input", "methods", "buffers", "shared", "planner", "mode", "status", "arena",
                  "lower_bound", "ratio", "method_arenas", "seconds", "time_limit", "error"]


def compare_shared(inputs: Mapping[str, Any], planners: Iterable[str],
                   time_limit: float | None = None, mode: str | None = None,
                   on_record: Callable[[dict], None] | None = None) -> pd.DataFrame:
    """Plan every input with every planner into one shared arena; one record per pair.

    Parameters
    ----------
    inputs : mapping name -> SharedArenaProblem
    planners : iterable of registered planner names
    time_limit : float or None
        Seconds, given to the planners that take a ``time_limit``.
    mode : {"colocate", "hull"} or None
        The reduction (``None``: each planner's declared one).
    on_record : callable, optional
        Called with each finished record (the CLI writes the tables there).

    Returns
    -------
    pandas.DataFrame with :data:`SHARED_COLUMNS` (bytes, seconds; module docstring).

    Raises
    ------
    ValueError
        An unknown planner name (:func:`planners.registry.get_planner`). A planner's own
        :class:`planners.MemplanError` (refusal, no plan) is recorded in its row, not raised.

    Notes
    -----
    The reduction and its exactness: :mod:`planners.shared_arena` (colocation groups on the
    concatenated timelines).
    """
    from planners import MemplanError
    from planners.errors import FeatureError
    from planners.registry import get_planner
    from planners.shared_arena import plan_shared

    rows = []
    planners = list(planners)
    for name, sp in inputs.items():
        base = {"input": name, "methods": "+".join(sp.names),
                "buffers": int(sum(p.n for p in sp.problems)), "shared": len(sp.shared),
                "lower_bound": int(sp.lower_bound()), "time_limit": time_limit}
        for pname in planners:
            kw = ({"time_limit": time_limit} if time_limit is not None
                  and "time_limit" in get_planner(pname).get_params() else {})
            t0 = time.perf_counter()
            rec = dict(base, planner=pname, mode=mode, status=None, arena=None, ratio=None,
                       method_arenas=None, error="")
            try:
                r = plan_shared(sp, pname, mode=mode, **kw)
            except FeatureError as e:
                rec.update(status="refused", error=str(e))
            except MemplanError as e:
                rec.update(status="error", error=f"{type(e).__name__}: {e}")
            else:
                rec.update(mode=r.mode, status=r.status, arena=int(r.arena),
                           ratio=round(r.arena / rec["lower_bound"], 6) if rec["lower_bound"]
                           else 1.0,
                           method_arenas=json.dumps({n: int(q.arena_size)
                                                     for n, q in r.plans.items()}))
            rec["seconds"] = round(time.perf_counter() - t0, 4)
            rows.append(rec)
            if on_record is not None:
                on_record(rec)
    return pd.DataFrame(rows, columns=SHARED_COLUMNS)


def shared_markdown(df: pd.DataFrame) -> str:
    """The Markdown report of a shared-arena comparison: one table per input (planner, mode,
    status, arena, ratio, per-method arenas, seconds), refusals and errors as ``-`` with the
    message in a footnote."""
    out = ["# Planners on multi-method inputs (one shared arena)", "",
           "Each input's methods are planned into one arena; shared buffers keep one offset in "
           "every method (planners/shared_arena.py). Arena and lower bound in bytes, the maximum "
           "over methods; ratio = arena / lower bound. Written by `memplan compare --shared`.", ""]
    for name, d in df.groupby("input", sort=False):
        r0 = d.iloc[0]
        out += [f"## {name}", "",
                f"methods {r0.methods}; {r0.buffers} buffers, {r0.shared} shared; lower bound "
                f"{r0.lower_bound:,} bytes", "",
                "| planner | mode | status | arena | ratio | method arenas | seconds |",
                "|---|---|---|---:|---:|---|---:|"]
        notes = []
        for r in d.itertuples():
            if r.arena is None or pd.isna(r.arena):
                notes.append(f"{r.planner}: {r.error}")
                out.append(f"| {r.planner} | - | {r.status} [{len(notes)}] | - | - | - | "
                           f"{r.seconds} |")
                continue
            arenas = ", ".join(f"{k} {v:,}" for k, v in json.loads(r.method_arenas).items())
            out.append(f"| {r.planner} | {r.mode} | {r.status} | {int(r.arena):,} | "
                       f"{r.ratio:.4f} | {arenas} | {r.seconds} |")
        out.append("")
        out += [f"[{i}] {n}" for i, n in enumerate(notes, 1)] + ([""] if notes else [])
    return "\n".join(out)
