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
