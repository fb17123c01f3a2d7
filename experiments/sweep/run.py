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

import ast
import datetime as _dt
import fnmatch
import functools
import glob
import hashlib
import importlib.machinery
import importlib.util
import itertools
import json
import math
import os
import platform
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
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
    "run_code_version",
    "run_modules",
    "portable_path",
    "read_records",
    "stopped_record",
    "machine_info",
    "CorruptRecordWarning",
    "SweepLockedError",
    "RECORD_FIELDS",
    "LOCK_NAME",
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
_ROOT = Path(__file__).resolve().parents[2]


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
    arrays; the generator call). origin : ``source`` without machine paths (:func:`portable_path`),
    the text records and ``sweep.json`` store, so that a sweep folder is the same on every machine.
    """

    name: str
    kind: str
    source: str
    params: str = "{}"
    digest: str = ""
    origin: str = ""

    @property
    def portable_source(self) -> str:
        """``origin`` when set, else ``source``: what records and ``sweep.json`` store."""
        return self.origin or self.source

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
    """SHA-256 of a problem's arrays, ids, capacity and default alignment (the record's
    ``problem_digest``; ``OUT/problems/DIGEST.csv`` or ``.ref``)."""
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


def portable_path(source: str, base: str | Path) -> str:
    """``source`` as text that does not depend on the machine: a file of an installed package as
    ``<site-packages>/PACKAGE/...``, any other absolute path relative to ``base`` (POSIX
    separators), registry and generator names unchanged."""
    if not os.path.isabs(source):
        return source
    src = os.path.realpath(source)
    for sp in _site_dirs():
        if src.startswith(sp + os.sep):
            return "<site-packages>/" + Path(os.path.relpath(src, sp)).as_posix()
    return Path(os.path.relpath(src, os.path.realpath(base))).as_posix()


@functools.lru_cache(maxsize=1)
def _site_dirs() -> tuple[str, ...]:
    import site
    import sysconfig

    dirs = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    dirs.update(getattr(site, "getsitepackages", list)())
    return tuple(sorted({os.path.realpath(d) for d in dirs}, key=len, reverse=True))


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
    refs = [replace(r, origin=portable_path(r.source, base)) for r in refs]
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
        code_version=cv,
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
#: Top-level packages of this project; only their modules count for a run's code version.
PROJECT_PACKAGES = ("planners", "scheduling", "experiments")

#: Modules that :func:`execute_run` calls into besides the planner and the scheduler, by workload
#: kind (module names, resolved and read at run time; their imports are followed).
_PIPELINE_ROOTS = {
    "problem": ("experiments.harness", "experiments.workloads"),
    "onnx": ("experiments.harness", "scheduling.lifetimes", "scheduling.onnx_import"),
    "tflite": ("experiments.harness", "scheduling.lifetimes", "scheduling.tflite_import"),
    "generator": ("experiments.harness", "scheduling.lifetimes", "scheduling.generators"),
}


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("memplan")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "0"


def _module_source(name: str) -> str | None:
    """The source text of the project module ``name``, or ``None`` when there is no such module.

    A C extension module (``planners._exact_search``) stands for its C source
    ``<package>/_ext/<module>.c`` (the layout ``setup.py`` builds from), built or not, else for the
    bytes of the built library (hex). Tests replace this function to simulate an edited module.
    """
    spec = _find_spec(name)
    if spec is None or isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
        parent = _find_spec(name.rpartition(".")[0]) if "." in name else None
        for folder in (parent.submodule_search_locations or []) if parent else []:
            c_source = Path(folder) / "_ext" / (name.rsplit(".", 1)[-1] + ".c")
            if c_source.is_file():  # built or not: the same code version
                return c_source.read_text()
        if spec is None:
            return None
        return Path(spec.origin).read_bytes().hex() if spec.origin else None
    if spec.origin is None or not os.path.isfile(spec.origin):
        return None
    return spec.loader.get_source(name)


def _find_spec(name: str):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


#: SHA-256 of a module's text -> SHA-256 of its syntax tree without docstrings (a pure function).
_TREE_DIGESTS: dict[str, str] = {}
#: SHA-256 of a module's text -> its import statements (:meth:`_ModuleGraph.imports`).
_IMPORTS: dict[str, tuple[tuple, ...]] = {}


class _ModuleGraph:
    """Import graph of the project's modules, read from their sources (one parse per module).

    ``digest(name)`` hashes the module's syntax tree without docstrings (``ast.dump``), so comments,
    docstrings and formatting do not count. ``deps(name)`` are the project modules its ``import``
    statements name (module level and inside functions). ``from pkg import x`` depends on the
    submodule ``pkg.x`` if there is one; otherwise, when ``pkg`` is a package that re-exports
    ``x`` (``from .mod import x`` in its ``__init__``), on the module that defines ``x``; otherwise
    on ``pkg`` itself.
    """

    def __init__(self, source: Callable[[str], str | None]):
        self._source = source
        self._texts: dict[str, str | None] = {}
        self._deps: dict[str, tuple[str, ...]] = {}
        self._digests: dict[str, str] = {}
        self._specs: dict[str, Any] = {}

    def spec(self, name: str):
        """The import spec of module ``name`` (cached; ``None`` if not found)."""
        if name not in self._specs:
            self._specs[name] = _find_spec(name)
        return self._specs[name]

    def text(self, name: str) -> str | None:
        """Source text of a project module (cached); ``None`` outside the project."""
        if name not in self._texts:
            inside = name.split(".")[0] in PROJECT_PACKAGES
            self._texts[name] = self._source(name) if inside else None
        return self._texts[name]

    def _is_python(self, name: str) -> bool:
        spec = self.spec(name)
        return spec is not None and not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)

    def is_package(self, name: str) -> bool:
        """Whether module ``name`` is a package."""
        spec = self.spec(name)
        return spec is not None and spec.submodule_search_locations is not None

    def digest(self, name: str) -> str:
        """SHA-256 of the module's code (comments and docstrings left out), cached."""
        if name not in self._digests:
            text = self.text(name)
            if text is None:
                raise ConfigError(f"code version: module {name!r} has no readable source")
            if not self._is_python(name):
                self._digests[name] = _digest_bytes(text.encode())
            else:  # the syntax tree's digest depends on the text alone: memoised per process
                raw = _digest_bytes(text.encode())
                if raw not in _TREE_DIGESTS:
                    tree = _strip_docstrings(ast.parse(text))
                    _TREE_DIGESTS[raw] = _digest_bytes(ast.dump(tree).encode())
                self._digests[name] = _TREE_DIGESTS[raw]
        return self._digests[name]

    def _absolute(self, name: str, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        base = name if self.is_package(name) else name.rpartition(".")[0]
        for _ in range(level - 1):
            base = base.rpartition(".")[0]
        return f"{base}.{module}" if module else base

    def _resolve(self, package: str, symbol: str, depth: int = 0) -> str:
        """The module that defines ``package.symbol`` (following re-exports of ``__init__``)."""
        sub = f"{package}.{symbol}"
        if self.text(sub) is not None:
            return sub
        if depth < 8 and self.text(package) is not None and self.is_package(package):
            for imp in self.imports(package):
                if imp[0] == "from" and imp[4]:
                    for a, alias in imp[3]:
                        if (alias or a) == symbol:
                            return self._resolve(self._absolute(package, imp[1], imp[2]), a,
                                                 depth + 1)
        return package

    def imports(self, name: str) -> tuple[tuple, ...]:
        """The module's import statements, anywhere in it: ``("import", module)`` and
        ``("from", module, level, names, top_level)`` (memoised per text: a pure function)."""
        text = self.text(name)
        if text is None or not self._is_python(name):
            return ()
        raw = _digest_bytes(text.encode())
        if raw not in _IMPORTS:
            tree = ast.parse(text, filename=name)
            top = {id(n) for n in tree.body}
            found: list[tuple] = []
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found += [("import", a.name) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    found.append(("from", node.module, node.level,
                                  tuple((a.name, a.asname) for a in node.names), id(node) in top))
            _IMPORTS[raw] = tuple(found)
        return _IMPORTS[raw]

    def deps(self, name: str) -> tuple[str, ...]:
        """Project modules that module ``name`` imports directly (cached)."""
        if name not in self._deps:
            found: set[str] = set()
            for imp in self.imports(name):
                if imp[0] == "import":
                    found.add(imp[1])
                    continue
                mod = self._absolute(name, imp[1], imp[2])
                if mod.split(".")[0] not in PROJECT_PACKAGES:
                    continue
                if any(a == "*" for a, _ in imp[3]):
                    found.add(mod)
                else:
                    found.update(self._resolve(mod, a) for a, _ in imp[3])
            self._deps[name] = tuple(sorted(
                m for m in found if m.split(".")[0] in PROJECT_PACKAGES and self.text(m) is not None))
        return self._deps[name]

    def closure(self, roots: Iterable[str], through_registries: bool = True) -> set[str]:
        """``roots`` and every project module they import, transitively. With
        ``through_registries=False`` a registry module (``*.registry``) counts but its imports are
        not followed: the harness reaches planners and schedulers only through the registries, by
        the name of the run's planner and scheduler, whose own closures are added separately."""
        seen: set[str] = set()
        stack = list(roots)
        while stack:
            m = stack.pop()
            if m in seen:
                continue
            if self.text(m) is None:
                raise ConfigError(f"code version: module {m!r} has no readable source")
            seen.add(m)
            if through_registries or m.rsplit(".", 1)[-1] != "registry":
                stack.extend(self.deps(m))
        return seen


def run_modules(planner: str, scheduler: str = "-", kind: str = "problem", rv64: bool = False,
                tflm: bool = False, graph: _ModuleGraph | None = None) -> list[str]:
    """The project modules a run executes, sorted: the planner's module and everything it imports,
    the scheduler's likewise (graph workloads), and the pipeline (:mod:`experiments.sweep` itself,
    the harness, the workload's loader, the lifetime analysis, :mod:`experiments.rv64` and
    :mod:`experiments.tflm.oracle` when asked) up to the registries.

    Imports are read from the module sources (``ast``), transitively, within
    :data:`PROJECT_PACKAGES`. Raises :class:`ConfigError` for a module without readable source.
    """
    from planners.registry import PLANNERS
    from scheduling.schedulers import SCHEDULERS

    g = graph or _ModuleGraph(_module_source)
    mods = g.closure([PLANNERS[planner].__module__]) if planner in PLANNERS else set()
    if scheduler in SCHEDULERS and kind != "problem":
        mods |= g.closure([SCHEDULERS[scheduler].__module__])
    roots = list(_PIPELINE_ROOTS.get(kind, _PIPELINE_ROOTS["problem"]))
    roots += ["experiments.rv64"] if rv64 else []
    roots += ["experiments.tflm.oracle"] if tflm and kind == "tflite" else []
    mods |= g.closure(roots, through_registries=False)
    mods.add(__name__)  # execute_run itself; what this module imports is in the roots above
    return sorted(mods)


def run_code_version(planner: str, scheduler: str = "-", kind: str = "problem", rv64: bool = False,
                     tflm: bool = False, graph: _ModuleGraph | None = None) -> str:
    """``"VERSION+HASH"``: the memplan package version and the first 12 hex digits of a SHA-256 of
    the syntax trees (without comments and docstrings) of :func:`run_modules`. Changing one
    planner's code changes the code version, and so the keys, of that planner's runs only (and of
    the planners that import it, e.g. ``choose_best`` through the registry)."""
    g = graph or _ModuleGraph(_module_source)
    mods = run_modules(planner, scheduler, kind, rv64, tflm, graph=g)
    h = _digest_obj([[m, g.digest(m)] for m in mods])
    return f"{_package_version()}+{h[:12]}"


def code_version() -> str:
    """``"VERSION+HASH"`` over every module of :data:`PROJECT_PACKAGES` that the registered planners
    and schedulers and the sweep pipeline reach (see :func:`run_code_version` for one run's)."""
    from planners.registry import PLANNERS
    from scheduling.schedulers import SCHEDULERS

    g = _ModuleGraph(_module_source)
    roots = [c.__module__ for c in (*PLANNERS.values(), *SCHEDULERS.values())]
    roots += [m for ms in _PIPELINE_ROOTS.values() for m in ms]
    roots += ["experiments.rv64", "experiments.tflm.oracle", __name__]
    mods = sorted(g.closure(roots))
    return f"{_package_version()}+{_digest_obj([[m, g.digest(m)] for m in mods])[:12]}"


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
    graph = _ModuleGraph(_module_source)
    versions: dict[tuple, str] = {}

    def version_of(planner: str, scheduler: str, kind: str) -> str:
        if cfg.code_version:
            return cfg.code_version
        k = (planner, scheduler, kind)
        if k not in versions:
            versions[k] = run_code_version(planner, scheduler, kind, cfg.rv64, cfg.tflm, graph=graph)
        return versions[k]

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
                version = version_of(pname, sname, w.kind)
                for rep in range(cfg.repetitions):
                    key = run_key(w.digest, sname, sj, pname, pj, used_seed, rep, cfg.time_limit,
                                  version)
                    if key not in runs:
                        runs[key] = RunSpec(key, w, sname, sj, pname, pj, used_seed, rep,
                                            cfg.time_limit, cfg.timeout, cfg.rv64, cfg.tflm,
                                            cfg.keep_offsets, version, git_commit)
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


def load_referenced_problem(ref_file: str | Path, name: str):
    """The problem of an ``OUT/problems/DIGEST.ref`` file (a third-party benchmark stored by
    reference): loaded again from its source (``minimalloc:NAME`` or a path relative to the
    repository) and checked against the digest. Raises :class:`planners.ProblemError` when it
    cannot be had (``../shared`` absent) or differs."""
    from experiments.harness import _REPO
    from experiments.workloads import load_problem
    from planners import Problem, ProblemError

    body = json.loads(Path(ref_file).read_text())
    spec = body["source"]
    if not spec.startswith("minimalloc:"):
        spec = str((_REPO / spec).resolve())
    p = load_problem(spec)
    p = Problem(p.buffers, capacity=p.capacity, alignment=p.alignment, name=name)
    if _problem_digest(p) != body["digest"]:
        raise ProblemError(f"{ref_file}: {body['source']!r} is not the problem that was planned")
    return p


def _problem_csv(p) -> str:
    lines = ["id,lower,upper,size"]
    lines += [f"{i},{s},{e},{z}" for i, s, e, z in zip(range(p.n), p.starts.tolist(),
                                                         p.ends.tolist(), p.sizes.tolist(), strict=False)]
    return "\n".join(lines) + "\n"


def execute_run(spec: RunSpec) -> tuple[dict[str, Any], str | None, str]:
    """Run one :class:`RunSpec` and return ``(record, problem_csv, problem_digest)``.

    Never raises for a failing run: scheduling, loading and planning errors are recorded in
    ``error`` with ``status = "error"``. ``spec.timeout`` is not enforced here: the local
    executor runs this in a worker process that it kills at the timeout (:func:`run_sweep`) and
    records :func:`stopped_record` instead.
    ``problem_csv`` is the planned problem as MiniMalloc CSV text (ids are problem indices), or
    ``None`` when the problem could not be built.
    """
    from experiments.harness import run_one

    start = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    scoped = _reset_peak_rss()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    rec: dict[str, Any] = {"key": spec.key, "workload": spec.workload.name}
    problem_csv, pdigest = None, ""
    try:
        problem, extra = _problem_for(spec)
        pdigest = _problem_digest(problem)
        problem_csv = _problem_csv(problem)
        if not spec.workload.is_graph:
            from experiments.harness import external_source

            # third-party benchmark data (../shared) is stored as a reference, never copied
            ref = external_source(spec.workload.name, spec.workload.source)
            if ref is not None:
                rec["problem_ref"] = ref
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
    except Exception as e:  # noqa: BLE001 - a failing run is a record, not a crash
        rec.update(_failure_fields(spec, "error", f"{type(e).__name__}: {e}"))
    rec.update(_run_fields(spec, start, time.perf_counter() - wall0, time.process_time() - cpu0,
                           _peak_rss_bytes(scoped), "run" if scoped else "process"))
    rec["problem_digest"] = pdigest
    return _jsonable(rec), problem_csv, pdigest


def _failure_fields(spec: RunSpec, status: str, error: str) -> dict[str, Any]:
    return {"workload": spec.workload.name, "planner": spec.planner, "params": spec.planner_params,
            "status": status, "valid": False, "error": error}


def _run_fields(spec: RunSpec, start: str, wall: float, cpu: float | None, rss: int | None,
                rss_scope: str | None) -> dict[str, Any]:
    """The run's identity and provenance columns (the same for finished and failed runs)."""
    return dict(
        scheduler=spec.scheduler,
        scheduler_params=spec.scheduler_params,
        seed=spec.seed,
        rep=spec.rep,
        workload_kind=spec.workload.kind,
        workload_source=spec.workload.portable_source,
        workload_digest=spec.workload.digest,
        problem_digest="",
        time_limit=spec.time_limit,
        start_time=start,
        wall_seconds=wall,
        cpu_seconds=cpu,
        peak_rss_bytes=rss,
        peak_rss_scope=rss_scope,
        git_commit=spec.git_commit,
        code_version=spec.code_version,
        **machine_info(),
    )


def stopped_record(spec: RunSpec, status: str, error: str, start: str, wall: float) -> dict[str, Any]:
    """The record of a run whose worker was stopped from outside (``status="timeout"``: killed at
    ``spec.timeout``; ``"error"``: the worker process died, e.g. a crash in native code). It has
    every identity and provenance column; ``cpu_seconds`` and ``peak_rss_bytes`` are ``None``
    (the process that could have measured them is gone)."""
    rec = {"key": spec.key, **_failure_fields(spec, status, error)}
    rec.update(_run_fields(spec, start, wall, None, None, None))
    return _jsonable(rec)


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
    from experiments.tflm.oracle import tflm_arena

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

#: Fields every record has; a record file without one of them is corrupt.
RECORD_FIELDS = ("key", "workload", "planner", "params", "status", "valid", "code_version")

#: The lock file of a sweep folder, held by the sweep writing to it (``filelock``, ``flock``).
LOCK_NAME = ".sweep.lock"

#: Seconds to wait for a Dask scheduler to answer (``executor="dask"``).
DASK_CONNECT_TIMEOUT = 5.0


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
            dest.parent.mkdir(exist_ok=True)
            os.replace(p, dest)
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
        if rec.get("problem_ref"):  # OUT/problems/DIGEST.ref (experiments.harness.external_source)
            pf = out / "problems" / f"{pdigest}.ref"
            if not pf.exists():
                _atomic_write(pf, json.dumps({"source": rec["problem_ref"], "digest": pdigest}))
        else:
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
    _atomic_write(out / "sweep.json", json.dumps(meta, indent=1, sort_keys=True) + "\n")
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
    _atomic_write(out / "records.csv", df.to_csv(index=False))
    return summary


# ---------------------------------------------------------------------------------------------
# executors
# ---------------------------------------------------------------------------------------------
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
