"""The scheduler catalogue: registry names to scheduler classes, for the modules that choose
schedulers by name (:mod:`scheduling.schedulers.best_of`, the initial orders of
:mod:`scheduling.schedulers.exact_dp`, and :mod:`scheduling.joint`).

:mod:`scheduling.schedulers.registry` imports every scheduler module, so a scheduler module that
imported the registry to look a name up would close an import cycle. Instead the registry is
**bound** here at run time: ``scheduling/schedulers/__init__.py`` imports the registry and calls
:func:`bind` with it, before any scheduler runs (importing any ``scheduling.schedulers.X`` runs the
package's ``__init__`` first). This module imports no other module of the package, so the
package's import graph has no cycle (``tests/test_import_cycles.py`` checks it). It is the
counterpart of :mod:`planners.catalogue`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

__all__ = ["bind", "SCHEDULERS", "scheduler_names", "get_scheduler"]

_registry: ModuleType | None = None


def bind(registry: ModuleType) -> None:
    """Bind the registry module (``scheduling.schedulers.registry``): its ``SCHEDULERS`` and
    ``get_scheduler`` answer every call below. Called once by ``scheduling/schedulers/__init__.py``.

    Parameters
    ----------
    registry : module
        A module with ``SCHEDULERS`` (``{name: scheduler class}``) and ``get_scheduler``.
    """
    global _registry
    _registry = registry


def _bound() -> ModuleType:
    if _registry is None:  # pragma: no cover - scheduling/schedulers/__init__ binds it on import
        raise RuntimeError("scheduling.schedulers.catalogue is not bound; import the "
                           "scheduling.schedulers package")
    return _registry


class _LiveSchedulers(Mapping):
    """A read-only view of the bound registry's ``SCHEDULERS`` (in registry order), read at each
    access, so ``from ...catalogue import SCHEDULERS`` at import time sees the registry's dict."""

    def __getitem__(self, name: str) -> Any:
        return _bound().SCHEDULERS[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_bound().SCHEDULERS)

    def __len__(self) -> int:
        return len(_bound().SCHEDULERS)

    def __repr__(self) -> str:
        return f"SCHEDULERS view of {dict(_bound().SCHEDULERS)!r}"


#: The registry's ``{name: scheduler class}`` (a live read-only view, in registry order).
SCHEDULERS: Mapping[str, Any] = _LiveSchedulers()


def scheduler_names() -> list[str]:
    """Registered scheduler names, in registry order (read at call time).

    Returns
    -------
    list of str
    """
    return list(_bound().SCHEDULERS)


def get_scheduler(scheduler: Any, **params: Any):
    """:func:`scheduling.schedulers.registry.get_scheduler` (a name, instance, class or function).

    Raises
    ------
    ParameterError
        As the registry's (an unknown name, a parameter the scheduler does not take).
    """
    return _bound().get_scheduler(scheduler, **params)
