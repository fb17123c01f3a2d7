"""Byte counts in binary units, shared by the matplotlib figures (:mod:`experiments.plots.style`)
and the interactive plan viewer (:mod:`experiments.plots.view`).

This module imports neither of them (nor matplotlib), so the viewer reads its labels here without
importing the figure module that draws its pool panels (``tests/test_import_cycles.py``).
:mod:`experiments.plots.style` re-exports every name.
"""

from __future__ import annotations

__all__ = ["BINARY_UNITS", "unit_for", "format_bytes"]

#: Binary byte units (IEC 80000-13), largest first.
BINARY_UNITS = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))


def unit_for(x: float) -> tuple[str, int]:
    """The largest binary unit not above ``|x|``.

    Parameters
    ----------
    x : float
        Bytes.

    Returns
    -------
    (str, int)
        The unit's name and its size in bytes from :data:`BINARY_UNITS`; ``("B", 1)`` for
        ``|x| < 1024``.
    """
    ax = abs(float(x))
    for name, scale in BINARY_UNITS:
        if ax >= scale:
            return name, scale
    return "B", 1


def format_bytes(x: float, _pos=None) -> str:
    """One byte count in binary units with at least three significant digits and no exponent.

    Parameters
    ----------
    x : float
        Bytes.

    Returns
    -------
    str
        ``"N B"`` below 1 KiB (integer), else the largest unit not above ``|x|`` with 2 decimals
        below 10 units, 1 decimal below 100 and none from 100 up (so 1015 KiB stays ``"1015 KiB"``,
        never ``"1.02e+03 KiB"``). Usable as a matplotlib ``FuncFormatter`` (``_pos`` ignored).

    Examples
    --------
    >>> format_bytes(1039360), format_bytes(1536 * 1024), format_bytes(100), format_bytes(0)
    ('1015 KiB', '1.50 MiB', '100 B', '0 B')
    """
    name, scale = unit_for(x)
    if scale == 1:
        return f"{x:.0f} B"
    v = x / scale
    digits = 2 if abs(v) < 10 else (1 if abs(v) < 100 else 0)
    return f"{v:.{digits}f} {name}"
