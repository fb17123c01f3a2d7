"""A run's code version comes from the sources of the modules it executes, found through their
import statements: a module that moves or goes missing is an error or changes the version, never
a silent skip; and it covers the modules the run really imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.sweep import ConfigError
from experiments.sweep import provenance as prov

ROOT = Path(__file__).resolve().parents[1]


def test_a_pipeline_module_that_moved_is_an_error(monkeypatch):
    """A root that names a module no longer there (e.g. after a file was moved) raises."""
    roots = dict(prov._PIPELINE_ROOTS)
    roots["problem"] = (*roots["problem"], "experiments.moved_away")
    monkeypatch.setattr(prov, "_PIPELINE_ROOTS", roots)
    with pytest.raises(ConfigError, match="module 'experiments.moved_away' has no readable source"):
        prov.run_code_version("first_fit")


def test_a_sweep_module_that_moved_is_an_error(monkeypatch):
    monkeypatch.setattr(prov, "_SWEEP_MODULES", (*prov._SWEEP_MODULES, "experiments.sweep.gone"))
    with pytest.raises(ConfigError, match="experiments.sweep.gone"):
        prov.run_code_version("first_fit")


def test_renaming_a_module_changes_the_code_version(monkeypatch):
    """The digest covers each module's name with its code: the same text under another name (a
    moved file) gives another version; editing a docstring gives the same."""
    before = prov.run_code_version("first_fit")
    real = prov._module_source
    text = real("experiments.metrics")
    assert text is not None
    monkeypatch.setattr(prov, "_module_source", lambda m: real(m) if m != "experiments.metrics"
                        else text.replace('"""The metrics', '"""Metrics', 1))
    assert prov.run_code_version("first_fit") == before  # a docstring is not code
    roots = dict(prov._PIPELINE_ROOTS)
    roots["problem"] = tuple(r if r != "experiments.harness" else "experiments.harness_moved"
                             for r in roots["problem"])
    monkeypatch.setattr(prov, "_PIPELINE_ROOTS", roots)
    monkeypatch.setattr(prov, "_module_source", lambda m: real("experiments.harness")
                        if m == "experiments.harness_moved" else real(m))
    assert prov.run_code_version("first_fit") != before


def test_run_modules_cover_what_a_run_imports(tmp_path):
    """Every project module that executing a run imports (in a fresh process) is in the run's
    code version, except the command-line and import-time scaffolding listed here."""
    code = (
        "import sys, json\n"
        "from experiments.sweep import expand_runs, parse_config, execute_run\n"
        "from experiments.sweep.provenance import run_modules\n"
        f"cfg = parse_config({{'out': {str(tmp_path / 'o')!r}, 'workloads': ['seed002_ex5.1'],"
        " 'planners': {'first_fit': {}}})\n"
        "spec = expand_runs(cfg)[0]\n"
        "before = set(sys.modules)\n"
        "rec, _, _ = execute_run(spec)\n"
        "assert rec['valid'], rec\n"
        "used = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('planners', 'scheduling', 'experiments') and m not in before)\n"
        "print(json.dumps([used, run_modules('first_fit')]))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    import json

    used, counted = json.loads(r.stdout.strip().splitlines()[-1])
    packages = {m for m in used if m.count(".") == 0 or m.endswith("__init__")}
    assert used, "the run imported nothing new"
    missing = [m for m in used if m not in counted and m not in packages]
    assert missing == []


def test_a_strategy_that_runs_others_by_name_counts_their_modules():
    """``best_of``, ``exact_dp`` (its initial orders), ``cpsat_schedule`` (through ``exact_dp``)
    and ``joint`` look schedulers up in :mod:`scheduling.schedulers.catalogue`, which imports no
    scheduler, as ``choose_best`` looks planners up in :mod:`planners.catalogue`: the code version
    still covers the module of every registered scheduler (planner), read from the classes, not
    from the sources. ``min_live`` runs no other scheduler and does not count ``genetic``."""
    from planners.registry import PLANNERS
    from scheduling.schedulers import SCHEDULERS

    schedulers = {cls.__module__ for cls in SCHEDULERS.values()}
    for name in ("best_of", "exact_dp", "cpsat_schedule", "joint"):
        counted = set(prov.run_modules("first_fit", name, "graph"))
        assert schedulers - counted == set(), name
    assert {cls.__module__ for cls in PLANNERS.values()} - set(prov.run_modules("choose_best")) == set()
    assert "scheduling.schedulers.genetic" not in prov.run_modules("first_fit", "min_live", "graph")


def test_rv64_c_sources_are_part_of_the_code_version(monkeypatch):
    """An edited RV64 core (cores.c) or cycle model (hostsim.c) changes the code version of the
    runs with RV64 estimates, and of no other run; a missing source is an error."""
    plain, rv = prov.run_code_version("first_fit"), prov.run_code_version("first_fit", rv64=True)
    assert {"experiments.rv64.build", "experiments.rv64.cycles"} <= set(
        prov.run_modules("first_fit", rv64=True))
    real = prov._runtime_sources
    for edited in ("cores.c", "hostsim.c"):
        monkeypatch.setattr(prov, "_runtime_sources", lambda m, e=edited: [
            (f, b + b"/* edited */" if f == e else b) for f, b in real(m)])
        prov._TREE_DIGESTS.clear()
        assert prov.run_code_version("first_fit", rv64=True) != rv, edited
        assert prov.run_code_version("first_fit") == plain
    monkeypatch.setattr(prov, "RUNTIME_SOURCES", {**prov.RUNTIME_SOURCES,
                                                  "experiments.rv64.build": ("gone.c",)})
    monkeypatch.setattr(prov, "_runtime_sources", real)
    with pytest.raises(ConfigError, match="gone.c"):
        prov.run_code_version("first_fit", rv64=True)


def test_c_extension_version_covers_its_local_headers(tmp_path):
    """A compiled module's code is its .c file and the local headers it includes: the shared
    int64_view.h is part of planners._greedy's and planners._telamalloc's source text; an edited
    header changes the text, a missing one is an error."""
    header = (ROOT / "planners" / "_ext" / "int64_view.h").read_text()
    for mod in ("planners._greedy", "planners._telamalloc"):
        assert header in prov._module_source(mod), mod
    (tmp_path / "m.c").write_text('#include <Python.h>\n#include "h.h"\nint x;\n')
    (tmp_path / "h.h").write_text("int y;\n")
    before = prov._c_source_text(tmp_path / "m.c")
    (tmp_path / "h.h").write_text("int y, z;\n")
    assert prov._c_source_text(tmp_path / "m.c") != before
    (tmp_path / "h.h").unlink()
    with pytest.raises(ConfigError, match="h.h"):
        prov._c_source_text(tmp_path / "m.c")
