"""Tick locator and formatter of a byte axis in binary units (matplotlib), shared by the figures
(:func:`experiments.plots.style.byte_axis`) and the interactive plan viewer's axes
(:mod:`experiments.plots.view`, which computes plotly ticks with them).

This module imports neither of them, so the viewer does not import the figure module that draws
its pool panels (``tests/test_import_cycles.py``); :mod:`experiments.plots.style` re-exports both
classes.
"""

from __future__ import annotations

import math

import matplotlib.ticker as mticker
import numpy as np

from experiments.plots.units import BINARY_UNITS, unit_for

__all__ = ["BinaryByteLocator", "BinaryByteFormatter"]

#: Tick steps tried by :class:`BinaryByteLocator`, as multiples of the label unit: binary fractions
#: (multiples of the next smaller unit) and 1-2-5 integer multiples.
_BYTE_STEPS = (0.125, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


class BinaryByteLocator(mticker.Locator):
    """Tick locator for a byte axis: steps are nice multiples of one binary unit.

    The label unit ``u`` is the largest binary unit (B, KiB, MiB, ...) not above the largest
    ``|limit|``; the step is the smallest of ``u`` times 1/8, 1/4, 1/2, 1, 2, 5, 10, 20, 50, ...
    (only integers for ``u = 1 B``) that gives at most ``nbins`` intervals. Every tick is therefore
    an integer multiple of ``u / 8`` -- a multiple of the next smaller binary unit -- e.g. 0, 2, 4,
    6 MiB or 0, 0.25, 0.5, 0.75 MiB, never matplotlib's decimal 977 KiB / 1.91 MiB. When fewer than
    two ticks would fall inside the view, the next smaller unit is tried.

    Parameters
    ----------
    nbins : int
        Maximum number of intervals between ticks (default 6).

    Notes
    -----
    O(len(steps)) per call; the view limits are bytes.
    """

    def __init__(self, nbins: int = 6):
        self.nbins = int(nbins)

    def __call__(self):
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        """Tick locations (bytes) for the view ``[vmin, vmax]`` (bytes)."""
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if not (np.isfinite(vmin) and np.isfinite(vmax)) or vmax - vmin <= 0:
            return np.array([vmin])
        _, unit = unit_for(max(abs(vmin), abs(vmax)))
        while True:
            steps = [s for s in _BYTE_STEPS if unit > 1 or s >= 1]
            ticks = None
            for s in steps:
                step = s * unit
                lo, hi = math.ceil(vmin / step - 1e-12), math.floor(vmax / step + 1e-12)
                if hi - lo <= self.nbins:
                    ticks = np.arange(lo, hi + 1) * step
                    break
            if ticks is None:  # even 1000 units is too fine: take a power of ten above
                step = 10 ** math.ceil(math.log10((vmax - vmin) / self.nbins / unit)) * unit
                lo, hi = math.ceil(vmin / step), math.floor(vmax / step)
                ticks = np.arange(lo, hi + 1) * step
            if len(ticks) >= 2 or unit == 1:
                return ticks
            unit //= 1024


class BinaryByteFormatter(mticker.Formatter):
    """Tick labels of a byte axis in one binary unit per axis, with the decimals the step needs.

    The unit is the largest binary unit not above the largest ``|tick|`` of which every tick is a
    multiple of 1/8 (else the next smaller unit); decimals are the fewest
    (0 to 3) that print every tick exactly (ticks from :class:`BinaryByteLocator` need at most
    3: multiples of 1/8 unit). Zero is printed ``"0"``.

    Examples
    --------
    >>> f = BinaryByteFormatter()
    >>> f.format_ticks([0, 2**19, 2**20, 3 * 2**19])
    ['0', '0.5 MiB', '1.0 MiB', '1.5 MiB']
    """

    def __init__(self):
        self._unit = ("B", 1)
        self._decimals = 0

    def set_locs(self, locs):
        """Choose the unit and decimals for the ticks ``locs`` (bytes): the largest binary unit
        not above the largest ``|tick|`` of which every tick is a multiple of 1/8."""
        self._locs = list(locs)
        big = max((abs(v) for v in self._locs), default=0.0)
        top = unit_for(big)[1]
        self._unit = next(
            (u for u in BINARY_UNITS if u[1] <= top
             and all(int(round(v * 8)) % u[1] == 0 for v in self._locs)),
            ("B", 1),
        )
        scale = self._unit[1]
        self._decimals = 3
        for d in range(4):
            if all(abs(round(v / scale, d) - v / scale) < 1e-6
                   for v in self._locs):
                self._decimals = d
                break

    def __call__(self, x, pos=None):
        if x == 0:
            return "0"
        name, scale = self._unit
        return f"{x / scale:.{self._decimals}f} {name}"
