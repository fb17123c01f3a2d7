"""Sweep executors: ``local`` (a :class:`pebble.ProcessPool` that kills a run over its timeout),
``dask`` and ``dask-local``. Each calls ``finish(result)`` in the submitting process for every run."""

from __future__ import annotations

import datetime as _dt
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

from experiments.sweep.config import ConfigError, RunSpec
from experiments.sweep.execute import execute_run, stopped_record
from experiments.sweep.provenance import machine_info

__all__ = [
    "DASK_CONNECT_TIMEOUT",
]

# ---------------------------------------------------------------------------------------------
# executors
# ---------------------------------------------------------------------------------------------
#: Seconds to wait for a Dask scheduler to answer before the sweep is a :class:`ConfigError`.
DASK_CONNECT_TIMEOUT = 5.0


def _kill_children() -> None:
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            child.kill()
        except psutil.Error:
            pass


def _on_sigterm(signum, frame) -> None:  # pragma: no cover - runs in a worker being stopped
    _kill_children()
    os._exit(1)


def _watch_parent(parent: int) -> None:  # pragma: no cover - runs in a worker
    while True:
        time.sleep(0.25)
        if os.getppid() != parent:
            _kill_children()
            os._exit(1)


def _worker_init(parent: int) -> None:
    """Set up a pool worker to end with the sweep: ``PR_SET_PDEATHSIG`` (Linux; the kernel kills
    the worker when its parent dies, even inside native code) and a watchdog thread that notices
    a new parent pid; on either signal, or on the pool's ``SIGTERM`` at a timeout, the worker
    first kills its own children (e.g. a CBC process started by PuLP)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)
    signal.signal(signal.SIGTERM, _on_sigterm)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="memplan-parent-watch").start()


def _run_pool(todo: list[RunSpec], finish, jobs: int) -> None:
    """Run ``todo`` in a ``pebble.ProcessPool`` of ``jobs`` workers (``fork`` where available, so
    workers see the parent's registries); a run over its ``timeout`` has its worker killed and
    gets a ``timeout`` record; a worker that dies gets an ``error`` record."""
    import multiprocessing
    from concurrent.futures import TimeoutError as FutureTimeout
    from concurrent.futures import as_completed

    from pebble import ProcessExpired, ProcessPool

    if not todo:
        return
    # Workers are forked from a process with threads: run every subprocess of the parent (here
    # ``uname`` behind platform.processor) before the pool exists, or a worker forked meanwhile
    # inherits the pipe and the parent waits for its EOF forever. The result is cached.
    machine_info()
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() \
        else multiprocessing.get_context()
    pool = ProcessPool(max_workers=jobs, initializer=_worker_init, initargs=(os.getpid(),),
                       context=ctx)
    try:
        futures = {pool.schedule(execute_run, args=(r,), timeout=r.timeout): r for r in todo}
        for f in as_completed(futures):
            r = futures[f]
            try:
                result = f.result()
            except FutureTimeout:
                result = (_stopped(r, "timeout", f"run exceeded the timeout of {r.timeout} s "
                                                 "(its worker process was killed)", r.timeout), None, "")
            except ProcessExpired as e:
                result = (_stopped(r, "error", f"the worker process died (exit code {e.exitcode}) "
                                               "during the run", None), None, "")
            finish(result)
    except BaseException:
        pool.stop()
        pool.join()
        raise
    pool.close()
    pool.join()


def _stopped(spec: RunSpec, status: str, error: str, wall: float | None) -> dict[str, Any]:
    now = _dt.datetime.now(_dt.timezone.utc)
    start = now - _dt.timedelta(seconds=wall or 0.0)
    return stopped_record(spec, status, error, start.isoformat(timespec="seconds"), wall)


def _run_dask(todo: Iterable[RunSpec], finish, executor: str, jobs: int, address: str | None) -> None:
    from distributed import Client, LocalCluster, as_completed

    todo = list(todo)
    if not todo:
        return
    cluster = None
    if executor == "dask-local":
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=DASK_CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as e:
            raise ConfigError(f"cannot reach the Dask scheduler at {address} within "
                              f"{DASK_CONNECT_TIMEOUT:g} s ({type(e).__name__}: {e}); start one "
                              "(`dask scheduler`) or use --executor dask-local") from None
    try:
        futs = [client.submit(execute_run, r, key=f"memplan-run-{r.key}", pure=False) for r in todo]
        for f in as_completed(futs):
            finish(f.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
