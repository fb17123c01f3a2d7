"""Shared test helpers: paths into ``../shared`` that skip with a reason where it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

#: ``../shared`` beside the repository (a user's clone has none; tests that need it skip).
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """Return ``../shared/<parts>``, or skip the calling test with a reason if it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared is not checked out beside the repository)")
    return path


def shared_case(name: str) -> Path:
    """Return ``../shared/cases/<name>`` (a small failing input with its expected value), or skip."""
    return shared_path("cases", name)


def pytest_collection_modifyitems(config, items):
    """Skip, with a reason, the cases parametrized by a planner whose optional package is absent
    (``vela_hillclimb`` needs ``ethos-u-vela``, the extra ``peers``; it refuses in one line
    without it, which the every-planner tests would count as a failure)."""
    from planners.vela_hillclimb import vela_available

    if vela_available():
        return
    skip = pytest.mark.skip(reason="ethos-u-vela is not installed (pip install -e '.[peers]')")
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "vela_hillclimb" in params.values():
            item.add_marker(skip)
