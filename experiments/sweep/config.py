"""Sweep configuration: a TOML file parsed into a :class:`SweepConfig` and expanded into keyed
:class:`RunSpec` runs (:func:`expand_runs`, :func:`run_key`). See :mod:`experiments.sweep.run` for the
format and the key."""

from __future__ import annotations

import fnmatch
import functools
import glob
import hashlib
import itertools
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomllib

from experiments.harness import DEFAULT_TIME_LIMIT
from experiments.sweep.common import ConfigError
from experiments.sweep.common import digest_bytes as _digest_bytes
from experiments.sweep.common import digest_obj as _digest_obj
from planners.errors import ParameterError
from planners.params import POSITIVE_SECONDS, check_params

__all__ = [
    "ConfigError",
    "SweepConfig",
    "WorkloadRef",
    "RunSpec",
    "load_config",
    "parse_config",
    "expand_runs",
    "run_key",
    "portable_path",
    "EXECUTORS",
]

#: Executors accepted by :func:`run_sweep`.
EXECUTORS = ("local", "dask", "dask-local")

_TOP_KEYS = {
    "name", "description", "out", "repetitions", "seeds", "time_limit", "timeout", "rv64", "tflm",
    "keep_offsets", "workloads", "schedulers", "planners", "code_version", "alignment",
    "timing_repeats", "pools",
}
_SEED_PARAMS = ("seed", "random_state")


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
    time_limit: float | None = DEFAULT_TIME_LIMIT
    timeout: float | None = None
    rv64: bool = False
    tflm: bool = False
    keep_offsets: int = 20000
    code_version: str = ""
    source: str = ""
    #: Timed runs of each short run (:func:`experiments.harness.run_one`): median and minimum.
    timing_repeats: int = 3
    #: The ``pools`` key: memory-pool sets, each as exact ``--pools`` text
    #: (:func:`planners.io.pools_text`; ``""``: one arena, no pools); a grid axis.
    pools: list[str] = field(default_factory=lambda: [""])


def _parse_pools_key(value: Any) -> list[str]:
    """The ``pools`` key: one ``--pools`` text (``"sram=256k:16,psram=8M"``, preference order) or
    a non-empty array of them, a grid axis of pool sets (``"none"``: one arena without pools);
    each parsed by :func:`planners.io.parse_pools` (the command line's rules) and
    returned as exact text (:func:`planners.io.pools_text`), duplicates collapsed.
    Raises :class:`ConfigError` naming the entry and the rule."""
    from planners.errors import ProblemError
    from planners.io import parse_pools, pools_text

    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError("pools: the grid is empty; give a pool set such as "
                          "\"sram=256k:16,psram=8M\" (or \"none\" for one arena)")
    out: list[str] = []
    for k, item in enumerate(items):
        where = "pools" if not isinstance(value, list) else f"pools[{k}]"
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"{where}: expected --pools text NAME=BYTES[:ALIGN],... (e.g. "
                              f"\"sram=256k:16,psram=8M\") or \"none\", got {item!r}")
        if item.strip().lower() == "none":
            out.append("")
            continue
        try:
            out.append(pools_text(parse_pools(item)))
        except ProblemError as e:
            raise ConfigError(f"{where}: {e}") from None
    return list(dict.fromkeys(out))


def _expand_grid(kind: str, name: str, table: Any, allowed: list[str],
                 rules: Mapping[str, list] | None = None) -> list[dict[str, Any]]:
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
            check_params(where, rules or {}, {k: x})  # the component's declared rules
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
        family = "minimalloc" if in_minimalloc_suite(path) else "csv"
        return WorkloadRef(label or f"{family}:{stem}", "problem", str(path), params, digest)
    if suffix == ".onnx":
        return WorkloadRef(label or path.stem, "onnx", str(path), params, digest)
    if suffix == ".tflite":
        return WorkloadRef(label or path.stem, "tflite", str(path), params, digest)
    raise ConfigError(f"{where}: {path} is not a .csv, .onnx or .tflite file")


def in_minimalloc_suite(path: str | Path) -> bool:
    """Whether the CSV ``path`` is a file of the MiniMalloc suite: it lies in the MiniMalloc
    folder (:func:`experiments.workloads.minimalloc_dir`: ``$MEMPLAN_MINIMALLOC_DIR``, else
    ``../shared/benchmarks/minimalloc``) or in ``../shared/benchmarks/minimalloc`` itself.

    A listed CSV is labelled ``minimalloc:NAME`` only then (the records store such a workload
    by that reference, :func:`experiments.records.external_source`); any other CSV, e.g. one
    written by hand, is ``csv:NAME`` (``NAME`` the file name before its first dot), its CSV
    stored with the records.
    """
    from experiments.workloads import DEFAULT_MINIMALLOC_DIR, minimalloc_dir

    try:
        parent = Path(path).resolve().parent
    except (OSError, ValueError):
        return False
    for folder in (minimalloc_dir(), DEFAULT_MINIMALLOC_DIR):
        try:
            if folder.is_dir() and parent == folder.resolve():
                return True
        except (OSError, ValueError):
            continue
    return False


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


def _minimalloc_ref(name: str, where: str) -> WorkloadRef:
    """``minimalloc:NAME`` resolved as every command resolves it
    (:func:`experiments.workloads.load_problem`: ``NAME.CAPACITY.csv`` of
    :func:`~experiments.workloads.minimalloc_dir`), stored by path like a listed CSV."""
    from experiments.workloads import minimalloc_dir

    stem = name.split(":", 1)[1]
    folder = minimalloc_dir()
    files = [f for f in sorted(folder.glob(f"{stem}.*csv")) if f.name.split(".")[0] == stem] \
        if folder.is_dir() else []
    if not files:
        raise ConfigError(f"{where}: {name!r}: no {stem}.CAPACITY.csv in {folder} (set "
                          "MEMPLAN_MINIMALLOC_DIR)")
    return _ref_from_path(files[0], None, name, where)


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
            if item.startswith("minimalloc:") and not glob.has_magic(item):
                refs.append(_minimalloc_ref(item, where))  # as `memplan plan minimalloc:A`
                continue
            registry = registry if registry is not None else _registry_workloads()
            names = [n for n in registry if fnmatch.fnmatchcase(n, item)] if glob.has_magic(item) \
                else ([item] if item in registry else [])
            if not names:
                from experiments.workloads import unknown_workload_message

                raise ConfigError(f"{where}: {unknown_workload_message(item, registry)}")
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


def _check_name(table: str, check, name: str) -> None:
    """The registry's name check (``check``), its error as a :class:`ConfigError` of ``[table]``."""
    try:
        check([name])
    except ValueError as e:
        raise ConfigError(f"[{table}]: {e}") from None


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
    from planners.registry import PLANNERS, check_planner_names
    from scheduling.schedulers.registry import SCHEDULERS, check_scheduler_names

    base = Path(base)
    bad = set(raw) - _TOP_KEYS
    if bad:
        raise ConfigError(f"unknown key(s) {sorted(bad)}; known keys: {sorted(_TOP_KEYS)}")
    planners_raw = raw.get("planners")
    if not isinstance(planners_raw, Mapping) or not planners_raw:
        raise ConfigError("[planners]: give at least one planner, e.g. greedy_by_size = {}")
    planners: dict[str, list[dict[str, Any]]] = {}
    for name, table in planners_raw.items():
        _check_name("planners", check_planner_names, name)
        planners[name] = _expand_grid("planners", name, table, PLANNERS[name]._param_names(),
                                      PLANNERS[name]._parameter_constraints)
    sched_raw = raw.get("schedulers", {"file_order": {}})
    if not isinstance(sched_raw, Mapping) or not sched_raw:
        raise ConfigError("[schedulers]: give at least one scheduler, e.g. file_order = {}")
    schedulers: dict[str, list[dict[str, Any]]] = {}
    for name, table in sched_raw.items():
        _check_name("schedulers", check_scheduler_names, name)
        schedulers[name] = _expand_grid("schedulers", name, table, SCHEDULERS[name]._param_names(),
                                        SCHEDULERS[name]._parameter_constraints)

    def number(key, default, kind=float, minimum=0.0, optional=True, rule=None):
        v = raw.get(key, default)
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (
                isinstance(v, float) and not math.isfinite(v)) or (
                kind is int and not float(v).is_integer()):
            # TOML reads inf, nan (and 1e400 as inf): a number of a sweep is finite
            raise ConfigError(f"{key}: must be a finite {kind.__name__}, got {v!r}")
        if rule is not None and not rule.allows(v):
            raise ConfigError(f"{key}: must be {rule}, got {v!r}")
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
    if raw.get("rv64", False) and any(_parse_pools_key(raw.get("pools", "none"))):
        raise ConfigError("pools: not with rv64 = true (the RV64 estimate measures a planner's "
                          "core on one arena)")
    return SweepConfig(
        name=str(raw.get("name", Path(out).name)),
        out=(base / out).resolve() if not os.path.isabs(out) else Path(out),
        workloads=_resolve_workloads(raw.get("workloads"), base),
        planners=planners,
        schedulers=schedulers,
        repetitions=number("repetitions", 1, int, 1, optional=False),
        seeds=[int(s) for s in dict.fromkeys(seeds)],
        # the one default of every command (experiments.harness.DEFAULT_TIME_LIMIT)
        time_limit=number("time_limit", DEFAULT_TIME_LIMIT, float, 0.0, rule=POSITIVE_SECONDS),
        timeout=number("timeout", None, float, 0.0, rule=POSITIVE_SECONDS),
        rv64=bool(raw.get("rv64", False)),
        tflm=bool(raw.get("tflm", False)),
        keep_offsets=number("keep_offsets", 20000, int, 0, optional=False),
        code_version=cv,
        source=source,
        timing_repeats=number("timing_repeats", 3, int, 1, optional=False),
        pools=_parse_pools_key(raw["pools"]) if "pools" in raw else [""],
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
    except (ConfigError, ParameterError) as e:
        raise type(e)(f"{path}: {e}") from None



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
    #: Timed runs of a short run (median in ``seconds``, minimum in ``seconds_min``); each worker
    #: is warmed up per planner first (:func:`experiments.harness.warm_up`).
    timing_repeats: int = 3
    #: Memory pools of the run's problem as exact ``--pools`` text (``""``: one arena).
    pools: str = ""

    def label(self) -> str:
        """A one-line description (``--dry-run``)."""
        sch = "" if self.scheduler == "-" else f" / {self.scheduler}{self.scheduler_params}"
        seed = "" if self.seed is None else f" seed={self.seed}"
        pools = f" pools={self.pools}" if self.pools else ""
        return f"{self.key[:12]}  {self.workload.name}{sch} / {self.planner}{self.planner_params}{seed}{pools} rep={self.rep}"


def run_key(workload_digest: str, scheduler: str, scheduler_params: str, planner: str,
            planner_params: str, seed: int | None, rep: int, time_limit: float | None,
            version: str, pools: str = "") -> str:
    """The run's identity: SHA-256 (hex, 64 digits) of its JSON-encoded fields, in this order;
    ``pools`` (exact ``--pools`` text) is appended only when given, so runs without pools keep
    the keys they always had and runs with different pools are different runs."""
    fields = [workload_digest, scheduler, scheduler_params, planner, planner_params, seed, rep,
              time_limit, version]
    return _digest_obj(fields + [pools] if pools else fields)


def _with_seed(params: dict[str, Any], names: list[str], seed: int) -> tuple[dict[str, Any], bool]:
    for s in _SEED_PARAMS:
        if s in names and s not in params:
            return dict(params, **{s: seed}), True
    return params, False


def expand_runs(cfg: SweepConfig, git_commit: str = "") -> list[RunSpec]:
    """Every run of the sweep, in a deterministic order (workload, scheduler, planner, grid, seed,
    pools, repetition). Seeds multiply only runs whose planner or scheduler takes a ``seed`` (or
    ``random_state``) parameter not fixed by the grid; duplicates collapse."""
    from experiments.sweep.provenance import _module_source, _ModuleGraph, run_code_version
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
                for pools, rep in itertools.product(cfg.pools, range(cfg.repetitions)):
                    key = run_key(w.digest, sname, sj, pname, pj, used_seed, rep, cfg.time_limit,
                                  version, pools)
                    if key not in runs:
                        runs[key] = RunSpec(key, w, sname, sj, pname, pj, used_seed, rep,
                                            cfg.time_limit, cfg.timeout, cfg.rv64, cfg.tflm,
                                            cfg.keep_offsets, version, git_commit,
                                            timing_repeats=cfg.timing_repeats, pools=pools)
    return list(runs.values())
