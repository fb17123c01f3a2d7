"""The planner catalogue: registry names to planner classes, for the modules that choose planners
by name (:mod:`planners.choose_best`, :mod:`planners.minimize`, :mod:`planners.warmstart`,
:mod:`planners.tiers`, and the capability gate of :mod:`planners.base`).

:mod:`planners.registry` imports every planner module, so a planner module that imported the
registry to look a name up would close an import cycle. Instead the registry is **bound** here at
run time: ``planners/__init__.py`` imports the registry and calls :func:`bind` with it, before any
planner runs (importing any ``planners.X`` runs the package's ``__init__`` first). This module
imports no other module of the package, so the package's import graph has no cycle
(``tests/test_import_cycles.py`` checks it).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["bind", "planner_classes", "planner_names", "get_planner", "plan"]

_registry: ModuleType | None = None


def bind(registry: ModuleType) -> None:
    """Bind the registry module (``planners.registry``): its ``PLANNERS``, ``get_planner`` and
    ``plan`` answer every call below. Called once by ``planners/__init__.py``."""
    global _registry
    _registry = registry


def _bound() -> ModuleType:
    if _registry is None:  # pragma: no cover - planners/__init__ binds it on import
        raise RuntimeError("planners.catalogue is not bound; import the planners package")
    return _registry


def planner_classes() -> dict[str, Any]:
    """The registry's ``{name: planner class}`` (the live dict, in registry order)."""
    return _bound().PLANNERS


def planner_names() -> list[str]:
    """Registered planner names, in registry order (read at call time)."""
    return list(_bound().PLANNERS)


def get_planner(planner: Any, **params: Any):
    """:func:`planners.registry.get_planner` (a name, instance, class or function)."""
    return _bound().get_planner(planner, **params)


def plan(problem, planner: Any = "greedy_by_size", **params: Any):
    """:func:`planners.registry.plan`."""
    return _bound().plan(problem, planner, **params)
