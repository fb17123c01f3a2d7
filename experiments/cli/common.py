"""Argument helpers shared by the ``memplan`` command modules (parsing only, no work)."""

from __future__ import annotations

import argparse

__all__ = ["split_list", "positive_seconds", "capacity_bytes", "package_version", "os_error_text",
           "parse_pools", "add_pool_flags"]


def parse_pools(text: str | None):
    """``--pools NAME=BYTES[:ALIGN],...`` in preference order as a tuple of
    :class:`planners.model.MemoryPool` (``None`` when not given). ``BYTES`` is an integer or
    ``inf`` (unbounded) with an optional ``k``/``M``/``G`` suffix (binary: 1k = 1024 bytes);
    ``ALIGN`` bytes (default 1). Raises :class:`planners.errors.ProblemError` naming the item.

    >>> [(q.name, q.capacity, q.alignment) for q in parse_pools("sram=256k:16,psram=8M")]
    [('sram', 262144, 16), ('psram', 8388608, 1)]
    """
    import re

    from planners.errors import ProblemError
    from planners.model import MemoryPool

    if text is None:
        return None
    out = []
    for item in (x.strip() for x in text.split(",")):
        m = re.fullmatch(r"([^=,\s]+)=(inf|\d+)([kKmMgG]?)(?::(\d+))?", item)
        if not m:
            raise ProblemError(f"--pools {item!r}: expected NAME=BYTES[:ALIGN] (e.g. sram=256k:16), "
                               "comma-separated in preference order")
        cap = None if m.group(2) == "inf" else int(m.group(2)) * 1024 ** (
            " kmg".index(m.group(3).lower() or " "))
        out.append(MemoryPool(m.group(1), cap, int(m.group(4) or 1)))
    return tuple(out)


def add_pool_flags(parser, ignore_offsets: bool = True) -> None:
    """Add ``--pools`` (and ``--ignore-offsets``) to a command that plans or checks."""
    parser.add_argument("--pools", metavar="NAME=BYTES[:ALIGN],...",
                        help="named memory pools in preference order, e.g. sram=256k:16,psram=8M "
                             "(a CSV 'pools' column names each buffer's candidates)")
    if ignore_offsets:
        parser.add_argument("--ignore-offsets", action="store_true",
                            help="a CSV 'offset' column is read as fixed positions (MiniMalloc's "
                                 "reading); this flag ignores it and plans every buffer")


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
