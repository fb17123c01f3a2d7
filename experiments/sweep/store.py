"""The sweep record store: one JSON record per run in ``OUT/records/KEY.json`` (atomic writes,
:func:`experiments.records.atomic_write`), the stored problems in ``OUT/problems/``, corrupt-record
quarantine, the folder lock, and :func:`load_records` (the records as a DataFrame)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.records import atomic_write
from experiments.sweep.config import ConfigError, _problem_digest
from planners.errors import MemplanError
from planners.io import output_error

__all__ = [
    "read_records",
    "load_referenced_problem",
    "StoredProblemMismatch",
    "load_records",
    "CorruptRecordWarning",
    "SweepLockedError",
    "RECORD_FIELDS",
    "SWEEP_COLUMNS",
    "LOCK_NAME",
    "RETRY_STATUSES",
]

# ---------------------------------------------------------------------------------------------
# the store and the sweep
# ---------------------------------------------------------------------------------------------
#: Record statuses that ``retry_failed`` (``memplan sweep --retry-failed``) runs again.
RETRY_STATUSES = ("error", "timeout")

#: Fields every record has; a record file without one of them is corrupt.
RECORD_FIELDS = ("key", "workload", "planner", "params", "status", "valid", "code_version")

#: The lock file of a sweep folder, held by the sweep writing to it (``filelock``, ``flock``).
LOCK_NAME = ".sweep.lock"



class CorruptRecordWarning(UserWarning):
    """A record file that is not a complete record: not JSON, not an object, a missing field of
    :data:`RECORD_FIELDS`, or a ``key`` other than its file name. The message names the file, the
    rule and what happened to the file."""


class SweepLockedError(MemplanError, RuntimeError):
    """Another sweep holds the output folder's lock and the caller asked not to wait
    (``memplan sweep --no-wait``, ``run_sweep(..., wait=False)``)."""


def _check_record(path: Path) -> tuple[dict[str, Any] | None, str]:
    """``(record, "")`` for a complete record file, else ``(None, what is wrong)``."""
    try:
        rec = json.loads(path.read_text())
    except OSError as e:
        return None, f"unreadable ({e.strerror or e})"
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        return None, f"not valid JSON ({e})"
    if not isinstance(rec, dict):
        return None, f"not a JSON object but {type(rec).__name__}"
    missing = [f for f in RECORD_FIELDS if f not in rec]
    if missing:
        return None, f"missing field(s) {', '.join(missing)}"
    if rec["key"] != path.stem:
        return None, f"its key {str(rec['key'])[:16]!r}... is not its file name"
    return rec, ""


def read_records(out: str | Path, quarantine: bool = False) -> list[dict[str, Any]]:
    """Every complete record of ``out/records/*.json``, in file-name order.

    A corrupt file (:class:`CorruptRecordWarning` says which and why) is left out; with
    ``quarantine`` it is also moved to ``out/records/corrupt/`` (replacing an older file of that
    name there), so that its run has no record and a sweep runs it again. ``O(records)`` reads.
    """
    d = Path(out) / "records"
    recs = []
    for p in sorted(d.glob("*.json")):
        rec, why = _check_record(p)
        if rec is not None:
            recs.append(rec)
            continue
        if quarantine:
            dest = d / "corrupt" / p.name
            try:
                dest.parent.mkdir(exist_ok=True)
                os.replace(p, dest)
            except OSError as e:
                raise output_error(dest, e) from None
            fate = f"moved to {dest}; its run runs again"
        else:
            fate = "left out"
        warnings.warn(f"{p}: corrupt record, {why}; {fate}", CorruptRecordWarning, stacklevel=2)
    return recs


def _done_keys(out: Path, retry_failed: bool = False, quarantine: bool = False) -> set[str]:
    """Keys with a complete record in ``out/records``; with ``retry_failed``, only those whose
    record's ``status`` is not in :data:`RETRY_STATUSES`. Corrupt records count as missing
    (:func:`read_records`)."""
    if not (out / "records").is_dir():
        return set()
    return {r["key"] for r in read_records(out, quarantine=quarantine)
            if not (retry_failed and r["status"] in RETRY_STATUSES)}


def _store(out: Path, rec: dict[str, Any], problem_csv: str | None, pdigest: str) -> None:
    if problem_csv is not None and pdigest:
        if rec.get("problem_ref"):  # OUT/problems/DIGEST.ref (experiments.records.external_source)
            pf = out / "problems" / f"{pdigest}.ref"
            if not pf.exists():
                atomic_write(pf, json.dumps({"source": rec["problem_ref"], "digest": pdigest}))
        else:
            pf = out / "problems" / f"{pdigest}.csv"
            if not pf.exists():
                atomic_write(pf, problem_csv)
    atomic_write(out / "records" / f"{rec['key']}.json", json.dumps(rec, sort_keys=True, indent=0))


#: Column order of the records table (others follow alphabetically).
SWEEP_COLUMNS = [
    "key", "workload", "workload_kind", "scheduler", "scheduler_params", "planner", "params",
    "seed", "rep", "buffers", "capacity", "lower_bound", "naive", "arena", "ratio", "best_bound",
    "seconds", "seconds_min", "timing_runs", "status", "proved", "valid", "fits", "error", "reason", "wall_seconds", "cpu_seconds",
    "peak_rss_bytes", "start_time",
]


def load_referenced_problem(ref_file: str | Path, name: str):
    """The problem of an ``OUT/problems/DIGEST.ref`` file (a third-party benchmark stored by
    reference): loaded again from its source (``minimalloc:NAME`` or a path relative to the
    repository, which must resolve under ``../shared``:
    :func:`experiments.safe.ref_source`) and checked against the digest.

    Raises
    ------
    planners.ProblemError
        It cannot be had (``../shared`` absent, the file unreadable).
    StoredProblemMismatch
        It is not the problem that was planned (its digest differs from the file's name).
    experiments.safe.UnsafeInputError
        The reference names a source outside ``../shared`` (it is not opened).
    """
    from experiments.records import REPO, SHARED_DIR
    from experiments.safe import check_digest, ref_source
    from experiments.workloads import load_problem
    from planners import Problem, ProblemError

    ref_file = Path(ref_file)
    try:
        body = json.loads(ref_file.read_text())
    except (OSError, ValueError) as e:
        raise ProblemError(f"{ref_file}: unreadable reference ({e})") from None
    if not isinstance(body, dict):
        raise ProblemError(f"{ref_file}: not a reference (a JSON object with source, digest)")
    spec = ref_source(body.get("source"), SHARED_DIR, REPO, str(ref_file))
    digest = check_digest(body.get("digest"), str(ref_file))
    p = load_problem(spec)
    p = Problem(p.buffers, capacity=p.capacity, alignment=p.alignment, name=name)
    if _problem_digest(p) != digest or digest != ref_file.stem:
        raise StoredProblemMismatch(f"{ref_file}: {body['source']!r} is not the problem that "
                                    "was planned (its digest differs)")
    return p


class StoredProblemMismatch(MemplanError, ValueError):
    """A stored problem (``problems/DIGEST.csv`` or ``.ref``) whose content is not the problem its
    record was planned on: a report refuses it rather than draw another problem's figures."""


def load_records(out: str | Path):
    """All complete records of a sweep folder as a pandas DataFrame, one row per run.

    Rows are sorted by (workload, scheduler, scheduler_params, planner, params, seed, rep, key),
    columns :data:`SWEEP_COLUMNS` first; half-written temporary files are ignored, corrupt record
    files are left out with a :class:`CorruptRecordWarning` naming each. Raises
    :class:`ConfigError` when the folder has no ``records/``.
    """
    import pandas as pd

    d = Path(out) / "records"
    if not d.is_dir():
        raise ConfigError(f"{out}: no records/ folder (run `memplan sweep` first)")
    df = pd.DataFrame.from_records(read_records(out))
    if df.empty:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    for c in SWEEP_COLUMNS:
        if c not in df.columns:
            df[c] = None
    cols = SWEEP_COLUMNS + sorted(c for c in df.columns if c not in SWEEP_COLUMNS)
    df = df[cols]
    order = ["workload", "scheduler", "scheduler_params", "planner", "params", "seed", "rep", "key"]
    df = df.sort_values(order, kind="mergesort", na_position="first").reset_index(drop=True)
    return df


def _cleanup_tmp(out: Path) -> None:
    for sub in ("records", "problems"):
        for p in (out / sub).glob(".*.tmp"):
            try:
                p.unlink()
            except OSError:
                pass


def _prepare_out(out: Path) -> None:
    """Create ``out/records`` and ``out/problems`` and check that files can be written there."""
    try:
        for sub in ("records", "problems"):
            (out / sub).mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=out / sub, prefix=".probe.", suffix=".tmp"):
                pass
    except OSError as e:
        raise ConfigError(f"{out}: cannot write to the output folder ({e.strerror or e}); give a "
                          "writable folder with --out") from None


def _lock(out: Path, wait: bool, notify: Callable[[str], None]):
    """Hold ``out/.sweep.lock`` (an ``flock`` through :mod:`filelock`, released by the kernel when
    the process dies). Returns the held lock."""
    from filelock import FileLock, Timeout

    path = out / LOCK_NAME
    lock = FileLock(path, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if not wait:
            raise SweepLockedError(
                f"{out}: another sweep is writing to this folder (it holds {path}); wait for it "
                "to finish (without --no-wait) or give another --out") from None
        notify(f"memplan: waiting for another sweep writing to {out} to finish (it holds {path})")
        lock.acquire()
    except OSError as e:
        raise ConfigError(f"{out}: cannot create the lock file {path} ({e.strerror or e})") from None
    return lock


def _notify(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
