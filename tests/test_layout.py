"""The layout of ``experiments/`` keeps data flowing one way: figures and reports import no
planner, scheduler or lifetime analysis (checked on the import statements, with ``ast``), the
command modules are thin, and every ``make`` target names a module that exists."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXP = ROOT / "experiments"

#: What a figure or report module may import from the project: data types, bounds of stored
#: problems, stored records and metrics, and other figure/report modules.
ALLOWED_PROJECT_MODULES = {
    "planners": {"Plan", "Problem", "Buffer", "ProblemError", "MemplanError", "live_profile",
                 "lower_bound", "read_minimalloc_csv"},
    "planners.model": None, "planners.bounds": None, "planners.errors": None, "planners.io": None,
    "experiments": {"plots"},
    "experiments.records": None, "experiments.metrics": None, "experiments.safe": None,
    "experiments.sweep.store": None, "experiments.sweep.config": {"ConfigError"},
}


def _imports(source: str, rel: Path):
    """``(module, names)`` of every import statement in ``source``, the text of the module at
    ``rel`` (relative to the repository), at module level and in functions; ``names`` is ``None``
    for ``import module``."""
    tree = ast.parse(source, filename=str(rel))
    pkg = ".".join(rel.with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, None
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([mod] if mod else []))
            yield mod, {a.name for a in node.names}


def _violations(path: Path, source: str | None = None) -> list[str]:
    bad = []
    rel = path.relative_to(ROOT)
    for mod, names in _imports(path.read_text() if source is None else source, rel):
        top = mod.split(".")[0]
        if top not in ("planners", "scheduling", "experiments"):
            continue
        if mod.startswith(("experiments.plots", "experiments.report")):
            continue
        if mod not in ALLOWED_PROJECT_MODULES:
            bad.append(f"{rel} imports {mod}")
            continue
        allowed = ALLOWED_PROJECT_MODULES[mod]
        if allowed is not None and (names is None or not names <= allowed):
            bad.append(f"{rel} imports {sorted((names or {mod}) - (allowed or set()))}"
                       f" from {mod}")
    return bad


FIGURE_MODULES = sorted((EXP / "plots").glob("*.py")) + sorted((EXP / "report").glob("*.py"))


@pytest.mark.parametrize("path", FIGURE_MODULES, ids=lambda p: str(p.relative_to(EXP)))
def test_figures_and_reports_import_no_planner_scheduler_or_lifetime_analysis(path):
    assert _violations(path) == []


def test_the_import_check_catches_a_planner_import():
    """The check above can fail: a figure module importing the registry, a scheduler or the
    lifetime analysis is reported (also a relative import and one inside a function)."""
    f = ROOT / "experiments" / "plots" / "probe.py"  # never written: the text is checked
    found = _violations(f, "from planners.registry import PLANNERS\n"
                           "def g():\n    from scheduling.lifetimes import lifetime_problem\n"
                           "from planners import get_planner, Plan\n"
                           "from ..harness import run_one\n")
    assert len(found) == 4, found
    assert any("planners.registry" in v for v in found)
    assert any("scheduling.lifetimes" in v for v in found)
    assert any("['get_planner'] from planners" in v for v in found)


def test_plots_import_has_no_matplotlib_side_effects():
    """Importing the figure package switches no backend and changes no rcParams."""
    import subprocess
    import sys

    code = ("import matplotlib, json; b = matplotlib.get_backend(); "
            "import matplotlib.pyplot as plt; before = dict(plt.rcParams); "
            "import experiments.plots, experiments.plots.sched, experiments.report; "
            "after = dict(plt.rcParams); "
            "print(json.dumps([b == matplotlib.get_backend(), "
            "sorted(k for k in before if before[k] != after[k])]))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env={"MPLBACKEND": "pdf", "PATH": "/usr/bin:/bin"}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[true, []]"


def test_every_make_target_module_exists():
    """``python -m experiments....`` in the Makefile names a module with a ``main``."""
    text = (ROOT / "Makefile").read_text()
    mods = sorted(set(re.findall(r"-m (experiments(?:\.\w+)+)", text)))
    assert "experiments.bench.planners" in mods and len(mods) >= 10
    for m in mods:
        spec = importlib.util.find_spec(m)
        assert spec is not None and spec.origin, m
        assert "def main(" in Path(spec.origin).read_text(), m


def test_command_modules_are_thin():
    """Every ``memplan`` command lives in one module of ``experiments/cli`` with ``add_parsers``,
    ``COMMANDS`` and ``run``; no command module draws a figure or writes Markdown tables itself."""
    from experiments.cli.app import build_parser, command_modules

    commands = set()
    for mod in command_modules():
        assert callable(mod.add_parsers) and callable(mod.run), mod.__name__
        commands |= set(mod.COMMANDS)
        src = Path(mod.__file__).read_text()
        assert "to_markdown(" not in src and "plt.subplots(" not in src, mod.__name__
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == commands


ALL_MODULES = sorted(p for p in EXP.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_project_import_in_experiments_resolves():
    """Every import of a project module anywhere in ``experiments/`` (module level or inside a
    function, absolute or relative) names a module that exists, and every imported name exists
    in it or is a submodule: a moved file cannot leave a dangling import behind, even in code
    that no test runs."""
    bad = []
    for path in ALL_MODULES:
        rel = path.relative_to(ROOT)
        for mod, names in _imports(path.read_text(), rel):
            if mod.split(".")[0] not in ("planners", "scheduling", "experiments"):
                continue
            spec = importlib.util.find_spec(mod)
            if spec is None:
                bad.append(f"{rel}: no module {mod}")
                continue
            for n in names or ():
                submodule = spec.submodule_search_locations is not None and \
                    importlib.util.find_spec(f"{mod}.{n}") is not None
                if n != "*" and not submodule and not hasattr(importlib.import_module(mod), n):
                    bad.append(f"{rel}: {mod} has no {n}")
    assert bad == []


#: The stages of ``experiments/`` in data-flow order (``experiments/__init__.py``'s stage map): a
#: module may import its own stage and earlier ones, never a later one.
STAGES = [
    ["workloads", "metrics", "records", "safe", "corpus", "rv64", "runtimes"],
    ["harness"],
    ["sched_compare", "transforms_compare", "shared_compare", "enrich"],
    ["sweep"],
    ["plots"],
    ["report"],
    ["cli", "bench"],
]


def test_data_flows_one_way_through_the_stages():
    rank = {name: i for i, stage in enumerate(STAGES) for name in stage}
    tops = {p.stem if p.is_file() else p.name for p in EXP.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert tops == set(rank), "every module or package of experiments/ has a stage"
    back = []
    for path in ALL_MODULES:
        rel = path.relative_to(ROOT)
        parts = rel.with_suffix("").parts
        if len(parts) < 2 or parts[1] == "__init__":
            continue
        for mod, names in _imports(path.read_text(), rel):
            q = mod.split(".")
            if q[0] != "experiments":
                continue
            targets = [q[1]] if len(q) > 1 else sorted(names or ())
            back += [f"{rel} imports experiments.{t}" for t in targets
                     if rank.get(t, -1) > rank[parts[1]]]
    assert back == []
