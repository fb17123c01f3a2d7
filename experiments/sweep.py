"""Declarative, resumable sweeps: workloads x schedulers x planners x parameter grids x seeds.

A sweep is described by a TOML file (see ``experiments/configs/default.toml``)::

    name = "default"
    out = "results/sweeps/default"      # relative to the config file's folder
    repetitions = 1                      # timing repetitions of every run
    seeds = [0]                          # given to planners/schedulers with a ``seed`` parameter
    time_limit = 10.0                    # seconds, for planners with a ``time_limit`` parameter
    timeout = 120.0                      # seconds per run (hard stop of Python code, see below)
    rv64 = false                         # add emulated RV64 cost columns (planners with a C core)
    tflm = false                         # add TFLite Micro's own arena for .tflite workloads
    keep_offsets = 20000                 # store offsets in the record up to this many buffers

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
parameters, planner and its parameters, seed, repetition, time limit, code version). The code
version is the package version plus a hash of the Python sources of :mod:`planners`,
:mod:`scheduling` and the harness (``code_version = "..."`` in the config pins it). A record is one
JSON file ``OUT/records/KEY.json`` written to a temporary file and renamed (``os.replace``, atomic
on POSIX), so a sweep killed at any moment loses no finished run and leaves no partial record;
running the sweep again runs only the keys without a record. A run that raises, or exceeds
``timeout``, is recorded with its error (``status = "error"`` / ``"timeout"``) and the sweep goes
on; such runs are not retried by a plain rerun (their record exists), but
``memplan sweep CONFIG --retry-failed`` (``run_sweep(..., retry_failed=True)``) runs every run whose
record has status ``error`` or ``timeout`` again, replaces its record atomically, and keeps the
finished ones. A record's ``params`` is always the requested grid point (the JSON the key hashes,
with the sweep's ``time_limit`` and seed filled in), also for a run whose planner could not be
built, so grid points stay apart; ``resolved_params`` holds the planner's full parameters when it
was built. The problem each run planned is stored once as ``OUT/problems/DIGEST.csv`` (MiniMalloc
columns, half-open lifetimes) so that :mod:`experiments.report` can draw memory-over-time curves and
arena layouts from the records alone.

Provenance columns: ``start_time`` (UTC ISO 8601), ``wall_seconds``, ``cpu_seconds`` (process CPU
time of the run, all threads), ``peak_rss_bytes`` (the run's peak resident set: the kernel's
high-water mark is reset before the run through ``/proc/self/clear_refs``; where that is refused
the process-lifetime ``ru_maxrss`` is recorded and ``peak_rss_scope = "process"``), ``hostname``,
``cpu_model``, ``cpu_cores``, ``python``, ``versions`` (JSON of package versions), ``git_commit``,
``code_version``.

Executors: ``local`` (in-process for ``jobs = 1``, else a ``ProcessPoolExecutor`` of ``jobs``
processes), ``dask`` (an existing scheduler at ``tcp://host:port``) and ``dask-local`` (a
``distributed.LocalCluster`` of ``jobs`` worker processes). Records are written by the submitting
process only. The ``timeout`` uses ``SIGALRM`` and so interrupts Python code in the main thread of a
process (the local executors); native solvers are bounded by their own ``time_limit``.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import functools
import glob
import hashlib
import itertools
import json
import math
import os
import platform
import resource
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from planners.errors import MemplanError

__all__ = [
    "ConfigError",
    "SweepConfig",
    "WorkloadRef",
    "RunSpec",
    "load_config",
    "parse_config",
    "expand_runs",
    "run_key",
    "execute_run",
    "run_sweep",
    "load_records",
    "code_version",
    "machine_info",
    "EXECUTORS",
    "RETRY_STATUSES",
]

#: Executors accepted by :func:`run_sweep`.
EXECUTORS = ("local", "dask", "dask-local")

_TOP_KEYS = {
    "name", "description", "out", "repetitions", "seeds", "time_limit", "timeout", "rv64", "tflm",
    "keep_offsets", "workloads", "schedulers", "planners", "code_version", "alignment",
}
_SEED_PARAMS = ("seed", "random_state")
_CODE_DIRS = ("planners", "scheduling")
_CODE_FILES = ("experiments/harness.py", "experiments/workloads.py", "experiments/sweep.py")
_ROOT = Path(__file__).resolve().parents[1]


class ConfigError(MemplanError, ValueError):
    """A sweep configuration that cannot run: unknown planner, scheduler or workload, a parameter
    the planner does not have, an empty or nested grid, a missing file or a glob matching nothing.
    Raised by :func:`parse_config` before anything runs; the message names the key and the rule."""


# ---------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkloadRef:
    """One resolved workload of a sweep.

    name : label in the records. kind : ``"problem"`` (an interval problem: seed examples,
    MiniMalloc CSV) or a graph kind ``"onnx"``, ``"tflite"``, ``"generator"`` (schedulers apply).
    source : path, registry name or generator name. params : JSON of ONNX/TFLite overrides or
    generator parameters (with its seed). digest : SHA-256 of the content (file bytes; the problem
    arrays; the generator call).
    """

    name: str
    kind: str
    source: str
    params: str = "{}"
    digest: str = ""

    @property
    def is_graph(self) -> bool:
        """Whether schedulers apply (the problem derives from a graph and an operator order)."""
        return self.kind in ("onnx", "tflite", "generator")


@dataclass
class SweepConfig:
    """A parsed and validated sweep configuration (see the module docstring for the TOML keys).

    ``planners`` / ``schedulers`` map a registry name to a list of parameter dicts (the grid,
    expanded); ``out`` is an absolute path.
    """

    name: str
    out: Path
    workloads: list[WorkloadRef]
    planners: dict[str, list[dict[str, Any]]]
    schedulers: dict[str, list[dict[str, Any]]]
    repetitions: int = 1
    seeds: list[int] = field(default_factory=lambda: [0])
    time_limit: float | None = 10.0
    timeout: float | None = None
    rv64: bool = False
    tflm: bool = False
    keep_offsets: int = 20000
    code_version: str = ""
    source: str = ""


def _digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest_obj(obj: Any) -> str:
    return _digest_bytes(json.dumps(obj, sort_keys=True, default=str).encode())


def _expand_grid(kind: str, name: str, table: Any, allowed: list[str]) -> list[dict[str, Any]]:
    where = f"[{kind}] {name}"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: must be a table of parameters (e.g. {name} = {{}}), got {table!r}")
    axes = []
    for k, v in table.items():
        if k not in allowed:
            raise ConfigError(f"{where}: unknown parameter {k!r}; {name} has parameters {allowed}")
        values = v if isinstance(v, list) else [v]
        if not values:
            raise ConfigError(f"{where}: grid of {k!r} is empty; give at least one value")
        for x in values:
            if isinstance(x, (list, dict)):
                raise ConfigError(f"{where}: grid of {k!r} must hold scalars, got {x!r}")
            if k == "time_limit" and (isinstance(x, bool) or not isinstance(x, (int, float))
                                      or not x > 0):
                raise ConfigError(f"{where}: time_limit must be a number > 0 (seconds), got {x!r}")
        axes.append([(k, x) for x in values])
    return [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]


def _registry_workloads() -> dict[str, Any]:
    from experiments.workloads import WORKLOADS, default_workloads, tflite_workloads

    reg = dict(default_workloads())
    reg.update(tflite_workloads())
    reg.update(WORKLOADS)
    return reg


def _ref_from_registry(name: str, w) -> WorkloadRef:
    if w.kind == "onnx":
        return WorkloadRef(name, "onnx", str(w.source), "{}", _digest_bytes(Path(w.source).read_bytes()))
    if w.kind == "tflite":
        return WorkloadRef(name, "tflite", str(w.source), "{}", _digest_bytes(Path(w.source).read_bytes()))
    p = w.problem()
    return WorkloadRef(name, "problem", name, "{}", _problem_digest(p))


def _problem_digest(p) -> str:
    h = hashlib.sha256()
    for a in (p.starts, p.ends, p.sizes, p.alignments, p.resident):
        h.update(a.tobytes())
    h.update(json.dumps([p.ids, p.capacity, p.alignment]).encode())
    return h.hexdigest()


def _ref_from_path(path: Path, overrides: Mapping | None, label: str | None, where: str) -> WorkloadRef:
    suffix = path.suffix.lower()
    params = json.dumps(dict(overrides or {}), sort_keys=True)
    data = path.read_bytes()
    digest = _digest_obj([_digest_bytes(data), params])
    if suffix == ".csv":
        stem = path.name.split(".")[0]
        return WorkloadRef(label or f"minimalloc:{stem}", "problem", str(path), params, digest)
    if suffix == ".onnx":
        return WorkloadRef(label or path.stem, "onnx", str(path), params, digest)
    if suffix == ".tflite":
        return WorkloadRef(label or path.stem, "tflite", str(path), params, digest)
    raise ConfigError(f"{where}: {path} is not a .csv, .onnx or .tflite file")


def _resolve_workloads(items: Any, base: Path) -> list[WorkloadRef]:
    if not isinstance(items, list) or not items:
        raise ConfigError("workloads: must be a non-empty array of names, paths, globs or tables")
    refs: list[WorkloadRef] = []
    registry = None
    for k, item in enumerate(items):
        where = f"workloads[{k}]"
        if isinstance(item, str):
            if item.endswith((".csv", ".onnx", ".tflite")) or "/" in item:
                pattern = item if os.path.isabs(item) else str(base / item)
                files = sorted(glob.glob(pattern))
                if not files:
                    what = "matches no file" if glob.has_magic(item) else "no such file"
                    raise ConfigError(f"{where}: {item!r} {what} (looked in {pattern})")
                refs.extend(_ref_from_path(Path(f), None, None, where) for f in files)
                continue
            registry = registry if registry is not None else _registry_workloads()
            names = [n for n in registry if fnmatch.fnmatchcase(n, item)] if glob.has_magic(item) \
                else ([item] if item in registry else [])
            if not names:
                raise ConfigError(f"{where}: unknown workload {item!r}; known workloads: "
                                  f"{', '.join(registry)} (TFLite ones only when installed)")
            refs.extend(_ref_from_registry(n, registry[n]) for n in names)
        elif isinstance(item, Mapping):
            keys = set(item)
            if "registry" in keys:
                bad = keys - {"registry", "optional"}
                if bad:
                    raise ConfigError(f"{where}: unknown keys {sorted(bad)} in a registry table")
                registry = registry if registry is not None else _registry_workloads()
                pat = str(item["registry"])
                names = [n for n in registry if fnmatch.fnmatchcase(n, pat)]
                if not names and not item.get("optional", False):
                    raise ConfigError(f"{where}: no workload matches {pat!r}; known workloads: "
                                      f"{', '.join(registry)}")
                refs.extend(_ref_from_registry(n, registry[n]) for n in names)
            elif "generator" in keys:
                from scheduling.generators import GENERATORS

                bad = keys - {"generator", "params", "seeds", "name"}
                if bad:
                    raise ConfigError(f"{where}: unknown keys {sorted(bad)} in a generator table")
                gen = item["generator"]
                if gen not in GENERATORS:
                    raise ConfigError(f"{where}: unknown generator {gen!r}; known: {', '.join(GENERATORS)}")
                params = dict(item.get("params", {}))
                import inspect

                allowed = [p for p in inspect.signature(GENERATORS[gen]).parameters if p != "seed"]
                for p in params:
                    if p not in allowed:
                        raise ConfigError(f"{where}: generator {gen!r} has no parameter {p!r}; it has {allowed}")
                seeds = item.get("seeds", [0])
                if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
                    raise ConfigError(f"{where}: seeds must be a non-empty array of integers, got {seeds!r}")
                label = item.get("name") or gen + "".join(f"_{k}{v}" for k, v in sorted(params.items()))
                for s in seeds:
                    full = dict(params, seed=int(s))
                    pj = json.dumps(full, sort_keys=True)
                    refs.append(WorkloadRef(f"{label}_s{s}", "generator", gen, pj, _digest_obj([gen, full])))
            elif "path" in keys:
                bad = keys - {"path", "overrides", "name"}
                if bad:
                    raise ConfigError(f"{where}: unknown keys {sorted(bad)} in a path table")
                raw = str(item["path"])
                pattern = raw if os.path.isabs(raw) else str(base / raw)
                files = sorted(glob.glob(pattern))
                if not files:
                    raise ConfigError(f"{where}: {raw!r} no such file (looked in {pattern})")
                ov = item.get("overrides", {})
                if not isinstance(ov, Mapping):
                    raise ConfigError(f"{where}: overrides must be a table, got {ov!r}")
                for f in files:
                    refs.append(_ref_from_path(Path(f), ov, item.get("name") if len(files) == 1 else None, where))
            else:
                raise ConfigError(f"{where}: a workload table needs 'registry', 'generator' or "
                                  f"'path', got {sorted(keys)}")
        else:
            raise ConfigError(f"{where}: a workload is a string or a table, got {item!r}")
    seen: dict[str, str] = {}
    for r in refs:
        if r.name in seen and seen[r.name] != r.digest:
            raise ConfigError(f"workloads: two different workloads are named {r.name!r}; give one a "
                              "'name' in a table")
        seen[r.name] = r.digest
    return list({(r.name, r.digest): r for r in refs}.values())


def parse_config(raw: Mapping[str, Any], base: str | Path = ".", source: str = "") -> SweepConfig:
    """Validate a configuration mapping (parsed TOML) and resolve every name, path and grid.

    Parameters
    ----------
    raw : mapping of the keys in the module docstring.
    base : folder that relative paths (``out``, workload paths and globs) are relative to.
    source : text of the file, recorded for provenance.

    Raises
    ------
    ConfigError
        Before anything runs: an unknown key, planner, scheduler, workload or parameter; an empty
        or nested grid; a missing file or a glob that matches nothing; bad numbers.

    Notes
    -----
    Reads every workload file once (content digest); loads seed problems (cheap).
    """
    from planners.registry import PLANNERS
    from scheduling.schedulers import SCHEDULERS

    base = Path(base)
    bad = set(raw) - _TOP_KEYS
    if bad:
        raise ConfigError(f"unknown key(s) {sorted(bad)}; known keys: {sorted(_TOP_KEYS)}")
    planners_raw = raw.get("planners")
    if not isinstance(planners_raw, Mapping) or not planners_raw:
        raise ConfigError("[planners]: give at least one planner, e.g. greedy_by_size = {}")
    planners: dict[str, list[dict[str, Any]]] = {}
    for name, table in planners_raw.items():
        if name not in PLANNERS:
            raise ConfigError(f"[planners]: unknown planner {name!r}; registered planners: "
                              f"{', '.join(PLANNERS)}")
        planners[name] = _expand_grid("planners", name, table, PLANNERS[name]._param_names())
    sched_raw = raw.get("schedulers", {"file_order": {}})
    if not isinstance(sched_raw, Mapping) or not sched_raw:
        raise ConfigError("[schedulers]: give at least one scheduler, e.g. file_order = {}")
    schedulers: dict[str, list[dict[str, Any]]] = {}
    for name, table in sched_raw.items():
        if name not in SCHEDULERS:
            raise ConfigError(f"[schedulers]: unknown scheduler {name!r}; registered schedulers: "
                              f"{', '.join(SCHEDULERS)}")
        schedulers[name] = _expand_grid("schedulers", name, table, SCHEDULERS[name]._param_names())

    def number(key, default, kind=float, minimum=0.0, optional=True):
        v = raw.get(key, default)
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and not float(v).is_integer()):
            raise ConfigError(f"{key}: must be a {kind.__name__}, got {v!r}")
        if v < minimum:
            raise ConfigError(f"{key}: must be >= {minimum}, got {v!r}")
        return kind(v)

    seeds = raw.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise ConfigError(f"seeds: must be a non-empty array of integers, got {seeds!r}")
    for key in ("rv64", "tflm"):
        if not isinstance(raw.get(key, False), bool):
            raise ConfigError(f"{key}: must be true or false, got {raw[key]!r}")
    out = raw.get("out")
    if not isinstance(out, str) or not out:
        raise ConfigError("out: give the output folder (relative to the config file)")
    cv = raw.get("code_version", "")
    if not isinstance(cv, str):
        raise ConfigError(f"code_version: must be a string, got {cv!r}")
    return SweepConfig(
        name=str(raw.get("name", Path(out).name)),
        out=(base / out).resolve() if not os.path.isabs(out) else Path(out),
        workloads=_resolve_workloads(raw.get("workloads"), base),
        planners=planners,
        schedulers=schedulers,
        repetitions=number("repetitions", 1, int, 1, optional=False),
        seeds=[int(s) for s in dict.fromkeys(seeds)],
        time_limit=number("time_limit", 10.0, float, 0.0),
        timeout=number("timeout", None, float, 0.0),
        rv64=bool(raw.get("rv64", False)),
        tflm=bool(raw.get("tflm", False)),
        keep_offsets=number("keep_offsets", 20000, int, 0, optional=False),
        code_version=cv or code_version(),
        source=source,
    )


def load_config(path: str | Path, out: str | Path | None = None) -> SweepConfig:
    """Read and validate a TOML sweep file (:func:`parse_config`); ``out`` overrides its ``out``.

    Raises :class:`ConfigError` for a missing file, invalid TOML (with the line) or any rule of
    :func:`parse_config`.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such sweep configuration file")
    text = path.read_text()
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    if out is not None:
        raw["out"] = str(Path(out).resolve())
    try:
        return parse_config(raw, base=path.resolve().parent, source=text)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


# ---------------------------------------------------------------------------------------------
# runs and keys
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``"VERSION+HASH"``: the memplan package version and the first 12 hex digits of a SHA-256 of
    the Python sources of :mod:`planners`, :mod:`scheduling` and the harness (sorted paths)."""
    try:
        from importlib.metadata import version

        v = version("memplan")
    except Exception:  # noqa: BLE001
        v = "0"
    h = hashlib.sha256()
    files = [p for d in _CODE_DIRS for p in sorted((_ROOT / d).rglob("*.py"))]
    files += [_ROOT / f for f in _CODE_FILES]
    for p in files:
        if p.is_file():
            h.update(str(p.relative_to(_ROOT)).encode())
            h.update(p.read_bytes())
    return f"{v}+{h.hexdigest()[:12]}"


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: everything :func:`execute_run` needs (picklable, JSON-serialisable)."""

    key: str
    workload: WorkloadRef
    scheduler: str
    scheduler_params: str
    planner: str
    planner_params: str
    seed: int | None
    rep: int
    time_limit: float | None
    timeout: float | None
    rv64: bool
    tflm: bool
    keep_offsets: int
    code_version: str
    git_commit: str = ""

    def label(self) -> str:
        """A one-line description (``--dry-run``)."""
        sch = "" if self.scheduler == "-" else f" / {self.scheduler}{self.scheduler_params}"
        seed = "" if self.seed is None else f" seed={self.seed}"
        return f"{self.key[:12]}  {self.workload.name}{sch} / {self.planner}{self.planner_params}{seed} rep={self.rep}"


def run_key(workload_digest: str, scheduler: str, scheduler_params: str, planner: str,
            planner_params: str, seed: int | None, rep: int, time_limit: float | None,
            version: str) -> str:
    """The run's identity: SHA-256 (hex, 64 digits) of its JSON-encoded fields, in this order."""
    return _digest_obj([workload_digest, scheduler, scheduler_params, planner, planner_params,
                        seed, rep, time_limit, version])


def _with_seed(params: dict[str, Any], names: list[str], seed: int) -> tuple[dict[str, Any], bool]:
    for s in _SEED_PARAMS:
        if s in names and s not in params:
            return dict(params, **{s: seed}), True
    return params, False


def expand_runs(cfg: SweepConfig, git_commit: str = "") -> list[RunSpec]:
    """Every run of the sweep, in a deterministic order (workload, scheduler, planner, grid, seed,
    repetition). Seeds multiply only runs whose planner or scheduler takes a ``seed`` (or
    ``random_state``) parameter not fixed by the grid; duplicates collapse."""
    from planners.registry import PLANNERS
    from scheduling.schedulers import SCHEDULERS

    runs: dict[str, RunSpec] = {}
    for w in cfg.workloads:
        scheds = [(s, g) for s, grid in cfg.schedulers.items() for g in grid] if w.is_graph else [("-", {})]
        for (sname, sgrid), (pname, pgrid) in itertools.product(
                scheds, [(p, g) for p, grid in cfg.planners.items() for g in grid]):
            for seed in cfg.seeds:
                sp, s_used = (sgrid, False) if sname == "-" else _with_seed(
                    sgrid, SCHEDULERS[sname]._param_names(), seed)
                pp, p_used = _with_seed(pgrid, PLANNERS[pname]._param_names(), seed)
                if pname in PLANNERS and "time_limit" in PLANNERS[pname]._param_names() \
                        and "time_limit" not in pp and cfg.time_limit is not None:
                    pp = dict(pp, time_limit=cfg.time_limit)
                used_seed = seed if (s_used or p_used) else None
                sj = json.dumps(sp, sort_keys=True)
                pj = json.dumps(pp, sort_keys=True)
                for rep in range(cfg.repetitions):
                    key = run_key(w.digest, sname, sj, pname, pj, used_seed, rep, cfg.time_limit,
                                  cfg.code_version)
                    if key not in runs:
                        runs[key] = RunSpec(key, w, sname, sj, pname, pj, used_seed, rep,
                                            cfg.time_limit, cfg.timeout, cfg.rv64, cfg.tflm,
                                            cfg.keep_offsets, cfg.code_version, git_commit)
    return list(runs.values())


# ---------------------------------------------------------------------------------------------
# executing one run (in a worker process)
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def machine_info() -> dict[str, Any]:
    """``hostname``, ``cpu_model`` (``/proc/cpuinfo`` "model name", else ``platform.processor``),
    ``cpu_cores`` (``os.cpu_count``), ``python`` and ``versions`` (JSON of the versions of the
    packages a run depends on)."""
    from importlib.metadata import PackageNotFoundError, version

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    vers = {}
    for pkg in ("memplan", "numpy", "pandas", "networkx", "ortools", "pulp", "onnx", "tflite",
                "tflite-micro", "dask", "distributed"):
        try:
            vers[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return {
        "hostname": socket.gethostname(),
        "cpu_model": model,
        "cpu_cores": os.cpu_count(),
        "python": platform.python_version(),
        "versions": json.dumps(vers, sort_keys=True),
    }


def git_commit(root: str | Path = _ROOT) -> str:
    """``git rev-parse HEAD`` of ``root`` with ``+dirty`` when tracked files differ (read-only git
    commands); ``""`` outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        if not head:
            return ""
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=30).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return ""


class _RunTimeout(Exception):
    pass


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_bytes(scoped: bool) -> int:
    if scoped:
        try:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


@functools.lru_cache(maxsize=32)
def _graph_of(kind: str, source: str, params: str):
    p = json.loads(params)
    if kind == "onnx":
        from scheduling.onnx_import import load_onnx

        return load_onnx(source, overrides=p or None), {}
    if kind == "tflite":
        from scheduling.tflite_import import load_tflite

        m = load_tflite(source, overrides=p or None)
        return m.graph, {"persistent_bytes": m.persistent_bytes}
    if kind == "generator":
        from scheduling.generators import generate

        return generate(source, **p), {}
    raise ValueError(f"workload kind {kind!r} has no graph")


def _problem_for(spec: RunSpec):
    w = spec.workload
    extra: dict[str, Any] = {}
    if not w.is_graph:
        from experiments.workloads import load_problem

        p = load_problem(w.source)
        from planners import Problem

        return Problem(p.buffers, capacity=p.capacity, alignment=p.alignment, name=w.name), extra
    from scheduling.lifetimes import lifetime_problem
    from scheduling.schedulers import get_scheduler

    graph, extra = _graph_of(w.kind, w.source, w.params)
    sched = get_scheduler(spec.scheduler, **json.loads(spec.scheduler_params)).schedule(graph)
    extra = dict(extra, schedule_seconds=sched.seconds, schedule_status=sched.status,
                 operators=len(sched.order))
    tfl = w.kind == "tflite"
    return lifetime_problem(graph, sched.order, include_inputs=tfl, alignment=16 if tfl else 1,
                            name=w.name), extra


def _problem_csv(p) -> str:
    lines = ["id,lower,upper,size"]
    lines += [f"{i},{s},{e},{z}" for i, s, e, z in zip(range(p.n), p.starts.tolist(),
                                                         p.ends.tolist(), p.sizes.tolist(), strict=False)]
    return "\n".join(lines) + "\n"


def execute_run(spec: RunSpec) -> tuple[dict[str, Any], str | None, str]:
    """Run one :class:`RunSpec` and return ``(record, problem_csv, problem_digest)``.

    Never raises for a failing run: scheduling, loading and planning errors are recorded in
    ``error`` with ``status = "error"``; exceeding ``spec.timeout`` gives ``status = "timeout"``.
    ``problem_csv`` is the planned problem as MiniMalloc CSV text (ids are problem indices), or
    ``None`` when the problem could not be built.
    """
    from experiments.harness import run_one

    start = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    scoped = _reset_peak_rss()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    rec: dict[str, Any] = {"key": spec.key, "workload": spec.workload.name}
    problem_csv, pdigest = None, ""
    alarm = spec.timeout is not None and threading.current_thread() is threading.main_thread() \
        and hasattr(signal, "SIGALRM")
    old = None
    if alarm:
        def _on_alarm(signum, frame):
            raise _RunTimeout()
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(spec.timeout))
    base = {
        "workload": spec.workload.name, "planner": spec.planner, "params": spec.planner_params,
        "status": "error", "valid": False, "error": "",
    }
    try:
        try:
            problem, extra = _problem_for(spec)
            pdigest = _problem_digest(problem)
            problem_csv = _problem_csv(problem)
            r, plan = run_one(spec.workload.name, problem, spec.planner, time_limit=spec.time_limit,
                              params=json.loads(spec.planner_params), keep_plan=True)
            tb = r.pop("traceback", None)
            if tb and spec.planner:
                r["error"] = r["error"] + " | " + tb.strip().splitlines()[-1]
            # ``params`` is always the requested grid point (what the key hashes), also when the
            # planner could not be built; the planner's full parameters go to ``resolved_params``.
            r["resolved_params"] = r.pop("params", "") or None
            rec.update(r)
            rec["params"] = spec.planner_params
            rec.update(extra)
            if plan is not None and rec.get("valid") and problem.n <= spec.keep_offsets:
                rec["offsets"] = json.dumps(plan.offsets.tolist())
            if spec.rv64:
                rec.update(_rv64_columns(problem, spec.planner))
            if spec.tflm and spec.workload.kind == "tflite":
                rec.update(_tflm_columns(spec.workload.source))
        except _RunTimeout:
            rec.update(base)
            rec.update(status="timeout", error=f"run exceeded the timeout of {spec.timeout} s")
        except Exception as e:  # noqa: BLE001 - a failing run is a record, not a crash
            rec.update(base)
            rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    rec.update(
        scheduler=spec.scheduler,
        scheduler_params=spec.scheduler_params,
        seed=spec.seed,
        rep=spec.rep,
        workload_kind=spec.workload.kind,
        workload_source=spec.workload.source,
        workload_digest=spec.workload.digest,
        problem_digest=pdigest,
        time_limit=spec.time_limit,
        start_time=start,
        wall_seconds=time.perf_counter() - wall0,
        cpu_seconds=time.process_time() - cpu0,
        peak_rss_bytes=_peak_rss_bytes(scoped),
        peak_rss_scope="run" if scoped else "process",
        git_commit=spec.git_commit,
        code_version=spec.code_version,
    )
    rec.update(machine_info())
    return _jsonable(rec), problem_csv, pdigest


def _jsonable(rec: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in rec.items():
        if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[k] = v
    return out


def _rv64_columns(problem, planner: str) -> dict[str, Any]:
    from experiments import rv64

    if planner not in rv64.CORE_NAMES:
        return {}
    ok, reason = rv64.available()
    if not ok:
        return {"rv64_error": reason}
    try:
        est = rv64.estimate(problem.with_capacity(None), planner)
    except Exception as e:  # noqa: BLE001
        return {"rv64_error": f"{type(e).__name__}: {e}"}
    return {"rv64_instructions": est.rv64_instructions, "rv64_cycles_u74": est.rv64_cycles_u74,
            "rv64_cycles_c906": est.rv64_cycles_c906, "rv64_offsets_match": est.offsets_match}


def _tflm_columns(path: str) -> dict[str, Any]:
    from experiments.tflm_oracle import tflm_arena

    try:
        a = tflm_arena(path)
    except Exception as e:  # noqa: BLE001
        return {"tflm_error": str(e)[-300:]}
    return {"tflm_arena_head": a.head, "tflm_arena_tail": a.tail, "tflm_arena_total": a.total}


# ---------------------------------------------------------------------------------------------
# the store and the sweep
# ---------------------------------------------------------------------------------------------
def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


#: Record statuses that ``retry_failed`` (``memplan sweep --retry-failed``) runs again.
RETRY_STATUSES = ("error", "timeout")


def _done_keys(out: Path, retry_failed: bool = False) -> set[str]:
    """Keys with a record in ``out/records``; with ``retry_failed``, only those whose record's
    ``status`` is not in :data:`RETRY_STATUSES` (an unreadable record counts as failed)."""
    d = out / "records"
    if not d.is_dir():
        return set()
    if not retry_failed:
        return {p.stem for p in d.glob("*.json")}
    done = set()
    for p in d.glob("*.json"):
        try:
            status = json.loads(p.read_text()).get("status")
        except (OSError, ValueError):
            continue
        if status not in RETRY_STATUSES:
            done.add(p.stem)
    return done


def _store(out: Path, rec: dict[str, Any], problem_csv: str | None, pdigest: str) -> None:
    if problem_csv is not None and pdigest:
        pf = out / "problems" / f"{pdigest}.csv"
        if not pf.exists():
            _atomic_write(pf, problem_csv)
    _atomic_write(out / "records" / f"{rec['key']}.json", json.dumps(rec, sort_keys=True, indent=0))


#: Column order of the records table (others follow alphabetically).
SWEEP_COLUMNS = [
    "key", "workload", "workload_kind", "scheduler", "scheduler_params", "planner", "params",
    "seed", "rep", "buffers", "capacity", "lower_bound", "naive", "arena", "ratio", "best_bound",
    "seconds", "status", "valid", "fits", "error", "wall_seconds", "cpu_seconds",
    "peak_rss_bytes", "start_time",
]


def load_records(out: str | Path):
    """All records of a sweep folder as a pandas DataFrame, one row per run.

    Rows are sorted by (workload, scheduler, scheduler_params, planner, params, seed, rep, key),
    columns :data:`SWEEP_COLUMNS` first; half-written temporary files are ignored. Raises
    :class:`ConfigError` when the folder has no ``records/``.
    """
    import pandas as pd

    d = Path(out) / "records"
    if not d.is_dir():
        raise ConfigError(f"{out}: no records/ folder (run `memplan sweep` first)")
    recs = [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))]
    df = pd.DataFrame.from_records(recs)
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


def run_sweep(
    cfg: SweepConfig,
    executor: str = "local",
    jobs: int = 1,
    scheduler_address: str | None = None,
    dry_run: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
    retry_failed: bool = False,
) -> dict[str, Any]:
    """Run every missing run of ``cfg`` and write its records under ``cfg.out``.

    Parameters
    ----------
    cfg : SweepConfig
    executor : one of :data:`EXECUTORS`.
    jobs : worker processes (``local``: ``1`` runs in this process; ``dask-local``: workers).
    scheduler_address : ``tcp://host:port`` of a Dask scheduler (``executor="dask"``).
    dry_run : list the runs that would run (via ``echo``) and return without running.
    progress : tqdm bar with runs done / total and the ETA.
    retry_failed : also run again the runs whose record has ``status`` ``"error"`` or
        ``"timeout"`` (:data:`RETRY_STATUSES`); their new record replaces the old one atomically.
        Finished runs (any other status) are kept.

    Returns
    -------
    dict
        ``total``, ``already_done`` (runs kept), ``retried`` (failed records run again),
        ``ran``, ``errors`` (runs recorded with an error or timeout in this call) and ``out``.

    Notes
    -----
    ``retry_failed`` reads every record of ``out/records`` once (``O(records)`` small files).

    Raises
    ------
    ConfigError
        Unknown executor, ``jobs < 1``, ``dask`` without an address, Dask not installed.
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
    done = _done_keys(out, retry_failed=retry_failed)
    todo = [r for r in runs if r.key not in done]
    retried = len(_done_keys(out) & {r.key for r in todo}) if retry_failed else 0
    summary = {"total": len(runs), "already_done": len(runs) - len(todo), "retried": retried,
               "ran": 0, "errors": 0, "out": str(out)}
    if dry_run:
        again = f" ({retried} failed ones again)" if retry_failed else ""
        echo(f"{len(runs)} runs, {len(runs) - len(todo)} already recorded, {len(todo)} would "
             f"run{again}:")
        for r in todo:
            echo("  " + r.label())
        return summary
    (out / "records").mkdir(parents=True, exist_ok=True)
    (out / "problems").mkdir(parents=True, exist_ok=True)
    _cleanup_tmp(out)
    meta = {"name": cfg.name, "config": cfg.source, "code_version": cfg.code_version,
            "workloads": [asdict(w) for w in cfg.workloads]}
    _atomic_write(out / "sweep.json", json.dumps(meta, indent=1, sort_keys=True))
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
        if executor == "local" and jobs == 1:
            for r in todo:
                finish(execute_run(r))
        elif executor == "local":
            from concurrent.futures import ProcessPoolExecutor, as_completed

            with ProcessPoolExecutor(max_workers=jobs) as ex:
                futs = [ex.submit(execute_run, r) for r in todo]
                try:
                    for f in as_completed(futs):
                        finish(f.result())
                except BaseException:
                    for f in futs:
                        f.cancel()
                    raise
        else:
            _run_dask(todo, finish, executor, jobs, scheduler_address)
    finally:
        if bar is not None:
            bar.close()
    df = load_records(out)
    _atomic_write(out / "records.csv", df.to_csv(index=False))
    return summary


def _run_dask(todo: Iterable[RunSpec], finish, executor: str, jobs: int, address: str | None) -> None:
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if executor == "dask-local":
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        futs = [client.submit(execute_run, r, key=f"memplan-run-{r.key}", pure=False) for r in todo]
        for f in as_completed(futs):
            finish(f.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
