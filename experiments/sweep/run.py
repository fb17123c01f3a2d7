"""Declarative, resumable sweeps: workloads x schedulers x planners x parameter grids x seeds.

A sweep is described by a TOML file (see ``experiments/configs/default.toml``)::

    name = "default"
    out = "results/sweeps/default"      # relative to the config file's folder
    repetitions = 1                      # timing repetitions of every run
    seeds = [0]                          # given to planners/schedulers with a ``seed`` parameter
    time_limit = 10.0                    # seconds, for planners with a ``time_limit`` parameter
    timeout = 120.0                      # seconds per run (its worker process is killed, see below)
    rv64 = false                         # add emulated RV64 cost columns (planners with a C core)
    tflm = false                         # add TFLite Micro's own arena for .tflite workloads
    keep_offsets = 20000                 # store offsets in the record up to this many buffers
    pools = "sram=256k:16,psram=8M"      # optional: memory pools in preference order (--pools
                                         # text), or an array of them (a grid axis; "none": one
                                         # arena); part of the run key only when given

    workloads = [
        "seed000",                                   # registry name (experiments.workloads)
        "../shared/benchmarks/minimalloc/A.*.csv",   # path or glob (.csv, .onnx, .tflite)
        {generator = "randwire", params = {n = 32}, seeds = [0, 1]},
        {path = "model.onnx", overrides = {batch = 1}},
        "wakeword:*",                                # glob over registry names
        {registry = "mediapipe:*", optional = true}, # no error when nothing matches
    ]

    [schedulers]                 # graph workloads only (ONNX, TFLite, generators)
    file_order = {}
    min_live = {}

    [planners]                   # a list is a grid axis; a scalar a fixed value
    greedy_by_size = {}
    cpsat = {time_limit = [1.0, 5.0]}

Keys and records
----------------
Every run is keyed by :func:`run_key`, a SHA-256 of (workload content digest, scheduler and its
parameters, planner and its parameters, seed, repetition, time limit, code version, and the
canonical ``pools`` text when the run has memory pools). The code
version is the run's own (:func:`run_code_version`): the package version plus a hash of the syntax
trees (comments, docstrings and formatting left out) of the modules the run executes -- its
planner's module, its scheduler's (graph workloads), the harness, the workload's loader and the
lifetime analysis, and every module of :data:`PROJECT_PACKAGES` those import, transitively, read
from their sources with :mod:`ast` (:func:`run_modules`). The harness reaches planners and
schedulers through the registries, by name, so editing one planner changes the keys of that
planner's runs only (and of planners that import it, such as ``choose_best``, which runs others
through the registry); a module without readable source is an error. ``code_version = "..."`` in
the config pins one version for every run. A record is one JSON file ``OUT/records/KEY.json``
written to a temporary file and renamed (``os.replace``, atomic on POSIX), so a sweep killed at
any moment loses no finished run and leaves no partial record; running the sweep again runs only
the keys without a record. A record file that is nonetheless incomplete (bad JSON, a missing field
of :data:`RECORD_FIELDS`, a key other than its name) is named in a :class:`CorruptRecordWarning`,
moved to ``OUT/records/corrupt/`` and its run runs again; :mod:`experiments.report` leaves it out
with the same warning. A run that raises, or exceeds ``timeout``, is recorded with its error
(``status = "error"`` / ``"timeout"``) and the sweep goes on; such runs are not retried by a plain
rerun (their record exists), but ``memplan sweep CONFIG --retry-failed``
(``run_sweep(..., retry_failed=True)``) runs every run whose record has status ``error`` or
``timeout`` again, replaces its record atomically, and keeps the finished ones (also ``skipped``
ones: a planner that declined to run has no offsets and no error). A record's ``params`` is always
the requested grid point (the JSON the key hashes, with the sweep's ``time_limit`` and seed filled
in), also for a run whose planner could not be built, so grid points stay apart;
``resolved_params`` holds the planner's full parameters when it was built. The problem each run
planned is stored once as ``OUT/problems/DIGEST.csv`` (MiniMalloc columns, half-open lifetimes) so
that :mod:`experiments.report` can draw memory-over-time curves and arena layouts from the records
alone.

One sweep at a time per folder: a sweep holds ``OUT/.sweep.lock`` (:mod:`filelock`, an ``flock``
the kernel releases when the process dies) from before it reads the records until it has written
``records.csv``. A second sweep into the same folder waits for it and says so on stderr, or with
``wait=False`` (``--no-wait``) raises :class:`SweepLockedError`. An output folder that cannot be
written is a :class:`ConfigError` before anything runs.

Sweep folders do not depend on the machine they were written on: ``sweep.json`` and the records'
``workload_source`` give workload files relative to the config file's folder, or as
``<site-packages>/...`` for files of installed packages (:func:`portable_path`), so the same sweep
in another clone rewrites its tracked files byte for byte. (Provenance columns name the machine on
purpose; they are written only for runs that ran there.)

Provenance columns: ``start_time`` (UTC ISO 8601), ``wall_seconds``, ``cpu_seconds`` (process CPU
time of the run, all threads), ``peak_rss_bytes`` (the run's peak resident set: the kernel's
high-water mark is reset before the run through ``/proc/self/clear_refs``; where that is refused
the process-lifetime ``ru_maxrss`` is recorded and ``peak_rss_scope = "process"``), ``hostname``,
``cpu_model``, ``cpu_cores``, ``python``, ``versions`` (JSON of package versions), ``git_commit``,
``code_version``. A run stopped from outside (timeout, dead worker) has ``None`` CPU time and peak
RSS.

Executors: ``local`` (a :class:`pebble.ProcessPool` of ``jobs`` worker processes, one for
``jobs = 1``; ``fork`` where available), ``dask`` (an existing scheduler at ``tcp://host:port``;
one that does not answer within :data:`DASK_CONNECT_TIMEOUT` seconds is a :class:`ConfigError`)
and ``dask-local`` (a ``distributed.LocalCluster`` of ``jobs`` worker processes). Records are
written by the submitting process only. Under ``local``, a run over its ``timeout`` has its worker
process killed (``SIGTERM``, then ``SIGKILL``), which stops native solvers (CP-SAT, the C
extensions) too, and gets a ``timeout`` record; a worker that dies (a crash in native code) gives
an ``error`` record. Workers end with the sweep: ``PR_SET_PDEATHSIG`` on Linux and a watchdog on
the parent pid kill a worker whose sweep process died (even by ``kill -9``), and a worker being
stopped first kills its own children (e.g. the CBC process PuLP starts). The Dask executors do not
enforce ``timeout`` (runs are bounded by the planners' ``time_limit`` only).
"""


from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from experiments.records import atomic_write
from experiments.sweep.config import EXECUTORS, ConfigError, SweepConfig, expand_runs
from experiments.sweep.executors import _run_dask, _run_pool
from experiments.sweep.provenance import git_commit
from experiments.sweep.store import (
    _cleanup_tmp,
    _done_keys,
    _lock,
    _notify,
    _prepare_out,
    _store,
    load_records,
)

__all__ = [
    "run_sweep",
]

def run_sweep(
    cfg: SweepConfig,
    executor: str = "local",
    jobs: int = 1,
    scheduler_address: str | None = None,
    dry_run: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
    retry_failed: bool = False,
    wait: bool = True,
    notify: Callable[[str], None] = _notify,
) -> dict[str, Any]:
    """Run every missing run of ``cfg`` and write its records under ``cfg.out``.

    Parameters
    ----------
    cfg : SweepConfig
    executor : one of :data:`EXECUTORS`.
    jobs : worker processes (``local``: a ``pebble.ProcessPool`` of ``jobs`` workers, also for
        ``1``; ``dask-local``: workers).
    scheduler_address : ``tcp://host:port`` of a Dask scheduler (``executor="dask"``).
    dry_run : list the runs that would run (via ``echo``) and return without running or writing.
    progress : tqdm bar with runs done / total and the ETA.
    retry_failed : also run again the runs whose record has ``status`` ``"error"`` or
        ``"timeout"`` (:data:`RETRY_STATUSES`); their new record replaces the old one atomically.
        Finished runs (any other status) are kept.
    wait : when another sweep holds the folder's lock, wait for it (saying so through ``notify``)
        instead of raising :class:`SweepLockedError`.
    notify : where the waiting message and similar notes go (default: stderr).

    Returns
    -------
    dict
        ``total``, ``already_done`` (runs kept), ``retried`` (failed records run again),
        ``ran``, ``errors`` (runs recorded with an error or timeout in this call) and ``out``.

    Raises
    ------
    ConfigError
        Unknown executor, ``jobs < 1``, ``dask`` without an address or with a scheduler that
        does not answer within :data:`DASK_CONNECT_TIMEOUT` seconds, Dask not installed, an
        output folder that cannot be written.
    SweepLockedError
        ``wait=False`` and another sweep writes to ``cfg.out``.

    Notes
    -----
    Reads every record of ``out/records`` once (``O(records)`` small files); corrupt ones are
    moved to ``out/records/corrupt/`` with a :class:`CorruptRecordWarning` and run again.
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; use one of {EXECUTORS}")
    if jobs < 1:
        raise ConfigError(f"--jobs must be >= 1, got {jobs}")
    if executor == "dask" and not scheduler_address:
        raise ConfigError("--executor dask needs --scheduler-address tcp://host:port")
    if executor.startswith("dask"):
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ConfigError("the dask executors need dask[distributed]: pip install "
                              "'dask[distributed]'") from None
    out = cfg.out
    runs = expand_runs(cfg, git_commit="" if dry_run else git_commit())
    if dry_run:
        done = _done_keys(out, retry_failed=retry_failed)
        todo = [r for r in runs if r.key not in done]
        retried = len(_done_keys(out) & {r.key for r in todo}) if retry_failed else 0
        again = f" ({retried} failed ones again)" if retry_failed else ""
        echo(f"{len(runs)} runs, {len(runs) - len(todo)} already recorded, {len(todo)} would "
             f"run{again}:")
        for r in todo:
            echo("  " + r.label())
        return {"total": len(runs), "already_done": len(runs) - len(todo), "retried": retried,
                "ran": 0, "errors": 0, "out": str(out)}
    _prepare_out(out)
    lock = _lock(out, wait, notify)
    try:
        return _run_locked(cfg, runs, executor, jobs, scheduler_address, progress, retry_failed)
    finally:
        lock.release()


def _run_locked(cfg, runs, executor, jobs, scheduler_address, progress, retry_failed):
    out = cfg.out
    _cleanup_tmp(out)  # only this process writes here now: any temporary file is a dead one's
    records = _done_keys(out, quarantine=True)
    done = records if not retry_failed else _done_keys(out, retry_failed=True)
    todo = [r for r in runs if r.key not in done]
    retried = len(records & {r.key for r in todo}) if retry_failed else 0
    summary = {"total": len(runs), "already_done": len(runs) - len(todo), "retried": retried,
               "ran": 0, "errors": 0, "out": str(out)}
    meta = {"name": cfg.name, "config": cfg.source,
            "workloads": [{"name": w.name, "kind": w.kind, "source": w.portable_source,
                           "params": w.params, "digest": w.digest} for w in cfg.workloads]}
    atomic_write(out / "sweep.json", json.dumps(meta, indent=1, sort_keys=True) + "\n")
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(runs), initial=len(runs) - len(todo), unit="run", desc=cfg.name,
                   dynamic_ncols=True)

    def finish(result):
        rec, pcsv, pdig = result
        _store(out, rec, pcsv, pdig)
        summary["ran"] += 1
        if rec.get("status") in ("error", "timeout") or rec.get("error"):
            summary["errors"] += 1
        if bar is not None:
            bar.set_postfix_str(f"{rec['workload']} / {rec.get('planner')}", refresh=False)
            bar.update(1)

    try:
        if executor == "local":
            _run_pool(todo, finish, jobs)
        else:
            _run_dask(todo, finish, executor, jobs, scheduler_address)
    finally:
        if bar is not None:
            bar.close()
    df = load_records(out)
    atomic_write(out / "records.csv", df.to_csv(index=False))
    return summary
