"""Where results live on disk: one home for atomic writes, tables and stored plans and problems.

* :func:`atomic_write` -- write text or bytes through a temporary file and :func:`os.replace`
  (atomic on POSIX): a reader never sees a partial file, a killed writer leaves the old one.
* :func:`write_csv`, :func:`write_parquet` -- a DataFrame as CSV / Parquet, atomically.
* Stored problems and plans (figures are drawn from these, never re-planned):
  :func:`store_problem` / :func:`load_problem_csv` (``OUT/problems/DIGEST.csv``, MiniMalloc
  columns, half-open lifetimes ``[lower, upper)``; third-party benchmark data as a ``.ref``),
  :func:`plan_entry` / :func:`write_plans` / :func:`read_plans` (``compare_plans.json``: offsets in
  bytes, problem order); :func:`write_schedules` / :func:`read_schedules`
  (``compare_sched_orders.json``: each schedule's order and stored problem).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from planners import Plan, Problem, ProblemError, live_profile
from planners.io import atomic_output
from planners.io import atomic_write as _atomic_write

__all__ = ["atomic_write", "write_csv", "write_parquet", "PLANS_FILE", "plan_entry", "pools_entry",
           "write_plans",
           "read_plans", "store_problem", "load_problem_csv", "external_source",
           "write_stored_problem", "problem_csv_text", "SHARED_DIR", "REPO", "SCHED_PLANS_FILE",
           "write_schedules", "read_schedules", "arena_columns"]

#: The side file of ``compare.csv`` with every run's offsets and the stored problems.
PLANS_FILE = "compare_plans.json"

#: The side file of ``compare_sched.csv``: each schedule's order and its stored problem.
SCHED_PLANS_FILE = "compare_sched_orders.json"


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text, UTF-8, or bytes) to ``path`` atomically and durably, creating the
    parent folder: :func:`planners.io.atomic_write` (the one atomic-write helper: temporary file
    beside ``path``, ``fsync``, :func:`os.replace`, the temporary file removed on any error).
    Returns the path. A reader never sees a partial file, a killed or failed writer leaves the
    old one, and concurrent writers never share a temporary file. Raises
    :class:`planners.errors.OutputError` naming the path and the cause (full disk, read-only file
    system, a parent that is not a folder)."""
    return _atomic_write(path, data, make_parents=True)


def write_csv(df, path: str | Path, **kw) -> Path:
    """``df`` (a pandas DataFrame) as CSV without the index, atomically (:func:`atomic_write`);
    ``kw`` go to :meth:`pandas.DataFrame.to_csv` (e.g. ``float_format``)."""
    return atomic_write(path, df.to_csv(index=False, **kw))


def write_parquet(df, path: str | Path, warn: bool = True) -> Path | None:
    """``df`` as Parquet (pyarrow), atomically (:func:`planners.io.atomic_output`; an
    :class:`~planners.errors.OutputError` on a write error); ``None`` when pyarrow is missing (with a warning
    on stderr when ``warn``). Object columns get one Arrow type each: all-bool ``boolean``,
    all-int ``Int64``, all-number numeric, otherwise strings (lists and dicts as sorted JSON)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        if warn:
            print("memplan: warning: pyarrow is not installed; no Parquet file written",
                  file=sys.stderr)
        return None
    import pandas as pd

    t = df.copy()
    for c in t.columns:
        if t[c].dtype != object:
            continue
        vals = t[c].dropna()
        if len(vals) and vals.map(lambda v: isinstance(v, bool)).all():
            t[c] = t[c].astype("boolean")
        elif len(vals) and vals.map(lambda v: isinstance(v, int) and not isinstance(v, bool)).all():
            t[c] = t[c].astype("Int64")
        elif len(vals) and vals.map(lambda v: isinstance(v, (int, float))
                                    and not isinstance(v, bool)).all():
            t[c] = pd.to_numeric(t[c])
        else:
            t[c] = t[c].map(lambda v: v if v is None or isinstance(v, str) or
                            (isinstance(v, float) and math.isnan(v))
                            else json.dumps(v, sort_keys=True, default=str)).astype("string")
    path = Path(path)
    with atomic_output(path, make_parents=True) as tmp:
        t.to_parquet(tmp, index=False, engine="pyarrow")
    return path


# -- stored plans and problems (figures are drawn from these, never re-planned) ---------------


def plan_entry(rec: Mapping[str, Any], offsets: Sequence[int] | None) -> dict[str, Any]:
    """One entry of :data:`PLANS_FILE`: the run's identity, status, arena and offsets (bytes,
    problem order; ``None`` when the run has no valid plan). A run with memory pools also stores
    ``pools``, each buffer's pool index (the record's ``pool_of``,
    :func:`experiments.harness.run_one`; offsets are then relative to the pool's base)."""
    entry = {"workload": rec["workload"], "planner": rec["planner"],
             "params": rec.get("params", ""), "status": rec["status"], "arena": rec.get("arena"),
             "lower_bound": rec.get("lower_bound"), "best_bound": rec.get("best_bound"),
             "offsets": None if offsets is None else [int(o) for o in offsets]}
    if rec.get("pools"):
        pool_of = rec.get("pool_of")
        entry["pools"] = None if offsets is None or pool_of is None else [int(k) for k in pool_of]
    return entry


def pools_entry(pools) -> list[dict[str, Any]]:
    """The memory pools of a comparison (:class:`planners.model.MemoryPool`, preference order) as
    the JSON list :data:`PLANS_FILE` stores under ``pools`` (``write_plans(...,
    extra={"pools": ...})``): ``{"name", "capacity" (bytes or null), "alignment", "cost"}``
    each; :func:`read_plans` gives the stored problems these pools again."""
    return [{"name": q.name, "capacity": q.capacity, "alignment": int(q.alignment),
             "cost": int(q.cost)} for q in pools]


#: ``../shared`` beside the repository. Benchmark problems read from there (MiniMalloc, idealloc)
#: are third-party data that results/ must not copy: they are stored as references.
SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"
#: The repository (the folder holding ``experiments/``).
REPO = Path(__file__).resolve().parents[1]


def external_source(workload: str, source: str | os.PathLike | None = None) -> str | None:
    """The portable reference under which a workload's problem is stored instead of its CSV, or
    ``None`` to store the CSV. ``minimalloc:NAME`` workloads and files under ``../shared`` are
    external (third-party benchmark data): the reference is the workload name, or the file's path
    relative to the repository (``../shared/...``)."""
    if workload.startswith("minimalloc:"):
        return workload
    for cand in (source, workload):
        if not cand:
            continue
        try:
            path = Path(cand).resolve()
        except (OSError, ValueError):
            continue
        if path.is_relative_to(SHARED_DIR.resolve()):
            return os.path.relpath(path, REPO)
    return None


def problem_csv_text(problem: Problem) -> tuple[str, str]:
    """``(csv_text, sha256)`` of ``problem`` in MiniMalloc columns (half-open lifetimes)."""
    import hashlib
    import tempfile

    from planners.io import write_minimalloc_csv

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "p.csv"
        write_minimalloc_csv(problem, f)
        text = f.read_text()
    return text, hashlib.sha256(text.encode()).hexdigest()


def write_stored_problem(out: str | Path, digest: str, text: str, external: str | None) -> None:
    """Write ``OUT/problems/DIGEST.csv`` (atomic, once), or for an external problem
    (:func:`external_source`) ``OUT/problems/DIGEST.ref``: JSON ``{"source", "sha256"}``."""
    base = Path(out) / "problems" / digest
    if external is None:
        if not base.with_suffix(".csv").exists():
            atomic_write(base.with_suffix(".csv"), text)
    elif not base.with_suffix(".ref").exists():
        atomic_write(base.with_suffix(".ref"), json.dumps({"source": external, "sha256": digest}))


def store_problem(out: str | Path, problem: Problem, workload: str = "",
                  source: str | os.PathLike | None = None) -> str:
    """Store ``problem`` once under ``OUT/problems/`` and return ``problems/DIGEST.csv`` (relative
    to ``out``; the digest is the SHA-256 of the MiniMalloc CSV text, so the same problem always
    has the same name). Third-party benchmark problems (:func:`external_source` of ``workload``
    and ``source``) are stored as a reference ``DIGEST.ref`` instead of a copy;
    :func:`load_problem_csv` resolves either."""
    text, digest = problem_csv_text(problem)
    write_stored_problem(out, digest, text, external_source(workload, source))
    return f"problems/{digest}.csv"


def load_problem_csv(path: str | Path, name: str, pools=None) -> Problem:
    """A problem stored by :func:`store_problem` (or ``memplan sweep``), named ``name``, with the
    memory ``pools`` it was planned with (:class:`planners.model.MemoryPool`, preference order;
    a stored ``pools`` column, each buffer's candidates, is read against them).

    ``path`` is ``.../problems/DIGEST.csv`` (``DIGEST`` a SHA-256 hex digest: of the CSV text
    for :func:`store_problem`, checked by :func:`read_plans` and :func:`read_schedules`; of the
    problem's arrays for a sweep, checked by ``memplan report``). Where only ``DIGEST.ref`` exists, the referenced workload is loaded (it needs ``../shared``
    or ``$MEMPLAN_MINIMALLOC_DIR``; the reference must name ``minimalloc:NAME`` or a file under
    ``../shared``, :func:`experiments.safe.ref_source`) and its digest checked. Raises
    :class:`planners.ProblemError` when the problem cannot be had or differs (a file whose
    content is not its digest's is never read as the planned problem).
    """
    from experiments.safe import check_digest, ref_source
    from planners.io import read_minimalloc_csv

    path = Path(path)
    check_digest(path.stem, str(path))
    if path.exists():
        return read_minimalloc_csv(path, capacity=None, name=name, pools=pools or None)
    ref = path.with_suffix(".ref")
    if not ref.exists():
        raise ProblemError(f"{path}: stored problem not found")
    body = json.loads(ref.read_text())
    from experiments.workloads import load_problem

    spec = ref_source(body.get("source") if isinstance(body, dict) else None, SHARED_DIR, REPO,
                      str(ref))
    try:
        p = load_problem(spec, capacity=None)
    except ProblemError as exc:
        raise ProblemError(f"{ref}: the referenced benchmark {body['source']!r} cannot be "
                           f"loaded ({exc})") from None
    p = Problem(p.buffers, capacity=None, alignment=p.alignment, name=name, aliases=p.aliases)
    if problem_csv_text(p)[1] != body["sha256"]:
        raise ProblemError(f"{ref}: {body['source']!r} is not the problem that was planned "
                           "(its content changed)")
    return p.with_pools(pools) if pools else p


def _stored_csv(out: Path, rel: Any, where: str) -> Path:
    """``out / rel`` for a problem stored by :func:`store_problem` (``problems/DIGEST.csv``,
    inside ``out``: :func:`experiments.safe.stored_problem_rel`), its text checked
    against ``DIGEST`` (the SHA-256 of the CSV text) when the CSV exists (else its ``.ref`` is
    checked by :func:`load_problem_csv`). Raises :class:`planners.ProblemError` naming
    ``where``."""
    import hashlib

    from experiments.safe import stored_problem_rel

    path = stored_problem_rel(out, rel, where)
    if path.is_file() and hashlib.sha256(path.read_text().encode()).hexdigest() != path.stem:
        raise ProblemError(f"{where}: {rel} is not the problem that was stored under that name "
                           "(the SHA-256 of its text differs); it is not read")
    return path


def write_plans(out: str | Path, problems: Mapping[str, str], entries: Sequence[Mapping[str, Any]],
                name: str = PLANS_FILE, extra: Mapping[str, Any] | None = None) -> Path:
    """Write the plans side file atomically: ``{"problems": {workload: "problems/DIGEST.csv"},
    "plans": [plan_entry, ...]}`` sorted by (workload, planner), plus ``extra`` keys."""
    body = {"problems": dict(sorted(problems.items())),
            "plans": sorted(entries, key=lambda e: (str(e["workload"]), str(e["planner"])))}
    body.update(extra or {})
    path = Path(out) / name
    atomic_write(path, json.dumps(body, sort_keys=True, separators=(",", ":")))
    return path


def read_plans(out: str | Path, name: str = PLANS_FILE) -> tuple[dict[str, Problem],
                                                                 dict[tuple[str, str], Plan]]:
    """The stored problems (by workload) and plans (by (workload, planner)) of a comparison
    folder, for figures. Plans keep their recorded status; nothing is re-planned or re-checked
    here (each was validated before it was stored). A stored problem's name must be
    ``problems/DIGEST.csv`` inside ``out`` and its content must match the digest
    (:func:`experiments.safe.stored_problem_rel`, :func:`load_problem_csv`); otherwise
    :class:`planners.ProblemError` names the file and the workload. A comparison with memory pools (a ``pools``
    list, :func:`pools_entry`) gives problems with those pools and plans with each buffer's
    pool (:attr:`planners.Plan.pools`); a plan entry without its pools is left out."""
    out = Path(out)
    body = json.loads((out / name).read_text())
    pools = None
    if body.get("pools"):
        from planners.model import MemoryPool

        pools = [MemoryPool(q["name"], q["capacity"], q["alignment"], q.get("cost", 0))
                 for q in body["pools"]]
    problems = {w: load_problem_csv(_stored_csv(out, rel, f"{out / name}: workload {w!r}"),
                                    w, pools) for w, rel in body["problems"].items()}
    plans: dict[tuple[str, str], Plan] = {}
    for e in body["plans"]:
        p = problems.get(e["workload"])
        if p is None or e.get("offsets") is None or len(e["offsets"]) != p.n:
            continue
        pool_of = e.get("pools")
        if p.pools and (pool_of is None or len(pool_of) != p.n):
            continue
        plans[(e["workload"], e["planner"])] = Plan(
            p, np.asarray(e["offsets"], dtype=np.int64), e["planner"], e["status"],
            lower_bound=int(e["lower_bound"]) if e.get("lower_bound") is not None else 0,
            best_bound=e.get("best_bound"),
            pools=np.asarray(pool_of, dtype=np.int64) if p.pools else None)
    return problems, plans


def write_schedules(out, entries, name: str = SCHED_PLANS_FILE):
    """Store schedules for figures: each entry ``(record, order, problem)`` (as passed to
    ``on_schedule``) becomes ``{workload, scheduler, status, peak_bytes, order, problem}`` with
    the activation problem written once as ``OUT/problems/DIGEST.csv``; the JSON file is written
    atomically. Returns its path."""
    rows = []
    for rec, order, problem in entries:
        rows.append({"workload": rec["workload"], "scheduler": rec["scheduler"],
                     "status": rec["status"], "peak_bytes": rec["peak_bytes"],
                     "order": [str(o) for o in order], "problem": store_problem(out, problem)})
    rows.sort(key=lambda r: (str(r["workload"]), str(r["scheduler"])))
    path = Path(out) / name
    atomic_write(path, json.dumps({"schedules": rows}, sort_keys=True, separators=(",", ":")))
    return path


def read_schedules(out, name: str = SCHED_PLANS_FILE) -> dict[str, dict[str, tuple]]:
    """Live profiles ``workload -> scheduler -> (steps, live bytes)`` of the stored schedules
    (their stored activation problems through :func:`planners.live_profile`); no scheduling or
    lifetime analysis. O(n log n) per schedule."""
    out = Path(out)
    body = json.loads((out / name).read_text())
    prof: dict[str, dict[str, tuple]] = {}
    for r in body["schedules"]:
        where = f"{out / name}: workload {r['workload']!r}, scheduler {r['scheduler']!r}"
        p = load_problem_csv(_stored_csv(out, r["problem"], where),
                             f"{r['workload']} ({r['scheduler']})")
        prof.setdefault(r["workload"], {})[r["scheduler"]] = live_profile(p)
    return prof


def arena_columns(records: Sequence[dict[str, Any]]) -> list[str]:
    """The ``arena_NAME`` columns of ``records`` (one per pool named in any record's ``pools``
    text, in order of first appearance); ``[]`` when no record has pools."""
    names: dict[str, None] = {}
    for r in records:
        for item in str(r.get("pools") or "").split(","):
            if item:
                names.setdefault("arena_" + item.split("=", 1)[0], None)
    return list(names)
