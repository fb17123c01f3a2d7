"""Provenance of a sweep run: its code version computed from the sources of the project modules the
run executes (:func:`run_modules`, an import graph read with :mod:`ast`; a module without readable
source is a :class:`~experiments.sweep.config.ConfigError`, never skipped), the machine and the git
commit."""

from __future__ import annotations

import ast
import functools
import importlib.machinery
import importlib.util
import json
import os
import platform
import re
import socket
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from experiments.sweep.common import ConfigError
from experiments.sweep.common import digest_bytes as _digest_bytes
from experiments.sweep.common import digest_obj as _digest_obj

__all__ = [
    "PROJECT_PACKAGES",
    "run_modules",
    "run_code_version",
    "code_version",
    "machine_info",
    "git_commit",
]

# ---------------------------------------------------------------------------------------------
# runs and keys
# ---------------------------------------------------------------------------------------------
_ROOT = Path(__file__).resolve().parents[2]

#: Top-level packages of this project; only their modules count for a run's code version.
PROJECT_PACKAGES = ("planners", "scheduling", "experiments")

#: Catalogue modules and the registry each is bound to at run time (``planners/__init__.py`` and
#: ``scheduling/schedulers/__init__.py`` call ``bind``): a module that imports a catalogue runs
#: what the registry names, so its closure includes the registry and what that imports.
_BOUND_REGISTRIES = {"planners.catalogue": "planners.registry",
                     "scheduling.schedulers.catalogue": "scheduling.schedulers.registry"}

#: Modules that :func:`execute_run` calls into besides the planner and the scheduler, by workload
#: kind (module names, resolved and read at run time; their imports are followed).
_PIPELINE_ROOTS = {
    "problem": ("experiments.harness", "experiments.records", "experiments.workloads"),
    "onnx": ("experiments.harness", "experiments.records", "experiments.workloads",
             "scheduling.lifetimes", "scheduling.onnx_import"),
    "tflite": ("experiments.harness", "experiments.records", "experiments.workloads",
               "scheduling.lifetimes", "scheduling.tflite_import"),
    "generator": ("experiments.harness", "experiments.records", "experiments.workloads",
                  "scheduling.lifetimes", "scheduling.generators"),
}


#: The sweep's own modules that every run executes (counted themselves; the modules they call
#: into are the roots of :data:`_PIPELINE_ROOTS`).
_SWEEP_MODULES = ("experiments.sweep.execute", "experiments.sweep.config",
                  "experiments.sweep.provenance")


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("memplan")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "0"


def _module_source(name: str) -> str | None:
    """The source text of the project module ``name``, or ``None`` when there is no such module.

    A C extension module (``planners._exact_search``) stands for its C source
    ``<package>/_ext/<module>.c`` (the layout ``setup.py`` builds from) followed by the local
    headers it includes (``#include "name.h"`` in the same folder), built or not, else for the
    bytes of the built library (hex). Tests replace this function to simulate an edited module.
    """
    spec = _find_spec(name)
    if spec is None or isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
        parent = _find_spec(name.rpartition(".")[0]) if "." in name else None
        for folder in (parent.submodule_search_locations or []) if parent else []:
            c_source = Path(folder) / "_ext" / (name.rsplit(".", 1)[-1] + ".c")
            if c_source.is_file():  # built or not: the same code version
                return _c_source_text(c_source)
        if spec is None:
            return None
        return Path(spec.origin).read_bytes().hex() if spec.origin else None
    if spec.origin is None or not os.path.isfile(spec.origin):
        return None
    return spec.loader.get_source(name)


#: Non-Python sources that a project module compiles at run time, relative to the module's folder.
#: They are part of that module's code: editing one changes the code version of every run that
#: imports the module (an edited RV64 core changes the emulated cycles).
RUNTIME_SOURCES: dict[str, tuple[str, ...]] = {
    "experiments.rv64.build": ("cores.c", "link.ld"),
    "experiments.rv64.cycles": ("hostsim.c", "interp.c"),
}


def _runtime_sources(name: str) -> list[tuple[str, bytes]]:
    """``(file name, bytes)`` of the :data:`RUNTIME_SOURCES` of module ``name`` (empty for most).

    Raises :class:`ConfigError` when a listed file is missing (a code version that silently
    left it out could match records made by different code). Tests replace this function."""
    files = RUNTIME_SOURCES.get(name, ())
    if not files:
        return []
    spec = _find_spec(name)
    if spec is None or spec.origin is None:
        raise ConfigError(f"code version: module {name!r} has no readable source")
    folder = Path(spec.origin).parent
    out = []
    for f in files:
        path = folder / f
        if not path.is_file():
            raise ConfigError(f"code version: {name!r} compiles {f!r}, which is missing")
        out.append((f, path.read_bytes()))
    return out


def _c_source_text(c_source: Path) -> str:
    """The text of a C extension's source followed by that of the local headers it includes
    (``#include "name.h"``, looked up beside it, in the order included; a header named but
    missing raises :class:`ConfigError`), so an edited shared header changes the version."""
    text = c_source.read_text()
    parts = [text]
    for name in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', text, flags=re.MULTILINE):
        header = c_source.parent / name
        if not header.is_file():
            raise ConfigError(f"code version: {c_source.name} includes {name!r}, which is missing")
        parts.append(f"/* {name} */\n" + header.read_text())
    return "\n".join(parts)


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
            extra = _runtime_sources(name)
            if extra:  # the C sources it compiles count as its code
                self._digests[name] = _digest_obj(
                    [self._digests[name], *[[f, _digest_bytes(b)] for f, b in extra]]
                )
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
            # a catalogue is bound to its registry at run time (no import statement)
            found.update(reg for cat, reg in _BOUND_REGISTRIES.items() if cat in found)
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
    the scheduler's likewise (graph workloads), and the pipeline (:mod:`experiments.sweep.execute` and what it imports,
    the harness, the workload's loader, the lifetime analysis, :mod:`experiments.rv64` and
    :mod:`experiments.runtimes.tflm.oracle` when asked) up to the registries.

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
    roots += ["experiments.enrich", "experiments.rv64"] if rv64 else []
    roots += ["experiments.enrich", "experiments.runtimes.tflm.oracle"] if tflm and kind == "tflite" else []
    mods |= g.closure(roots, through_registries=False)
    for m in _SWEEP_MODULES:  # execute_run itself; what it calls into is in the roots above
        if g.text(m) is None:
            raise ConfigError(f"code version: module {m!r} has no readable source")
        mods.add(m)
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
    roots += ["experiments.enrich", "experiments.rv64", "experiments.runtimes.tflm.oracle", *_SWEEP_MODULES]
    mods = sorted(g.closure(roots))
    return f"{_package_version()}+{_digest_obj([[m, g.digest(m)] for m in mods])[:12]}"



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
