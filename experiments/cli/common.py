"""Argument helpers shared by the ``memplan`` command modules (parsing only, no work)."""

from __future__ import annotations

import argparse

__all__ = ["split_list", "positive_seconds", "capacity_bytes", "package_version", "os_error_text"]


def split_list(values: list[str] | None) -> list[str] | None:
    """Command-line names given as repeated and/or comma-separated values, in order; ``None``
    when none were given.

    >>> split_list(["a,b", "c"]), split_list(None)
    (['a', 'b', 'c'], None)
    """
    if not values:
        return None
    out: list[str] = []
    for v in values:
        out.extend(x for x in v.split(",") if x)
    return out


def positive_seconds(text: str) -> float:
    """An argparse type: seconds > 0 (a time limit); ``ArgumentTypeError`` otherwise."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    from planners.params import POSITIVE_SECONDS  # the planners' time_limit rule

    if not POSITIVE_SECONDS.allows(v):
        raise argparse.ArgumentTypeError(f"time limit must be {POSITIVE_SECONDS}, got {text}")
    return v


def capacity_bytes(text: str) -> int:
    """An argparse type: a capacity in bytes, an integer in ``[0, 2**62)``."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected bytes (an integer), got {text!r}") from None
    if not 0 <= v < 2**62:
        raise argparse.ArgumentTypeError(f"capacity must be in [0, 2**62) bytes, got {text}")
    return v


def os_error_text(e: OSError) -> str:
    """An ``OSError`` as one line naming the file and the cause (``PATH: No space left on
    device``), for the CLI's ``memplan: error:`` line."""
    where = f"{e.filename}: " if getattr(e, "filename", None) else ""
    return f"{where}{e.strerror or e}"


def package_version() -> str:
    """The installed ``memplan`` distribution's version, or ``"unknown"``."""
    try:
        from importlib.metadata import version

        return version("memplan")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "unknown"
