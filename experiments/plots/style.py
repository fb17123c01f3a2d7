"""Figures for papers and design reviews (matplotlib, one consistent style).

Every figure has labelled axes with units, a legend outside the data area, a colour-blind-safe
palette (Okabe & Ito 2008, "Color Universal Design"), and is written as PNG and PDF by :func:`save`
with fixed metadata, so the same data give byte-identical files. Functions take records (pandas
DataFrames with :data:`experiments.harness.RECORD_COLUMNS`) or a problem and a plan, never globals.

Shared helpers, also used by the benchmark scripts:

* :func:`format_bytes` -- one byte count as ``"1015 KiB"`` / ``"1.53 MiB"`` (binary units, at least
  three significant digits, never an exponent);
* :class:`BinaryByteLocator` and :class:`BinaryByteFormatter`, installed by :func:`byte_axis` -- tick
  steps that are nice multiples of a binary unit (0, 2, 4, 6 MiB; 0, 0.25, 0.5 MiB) labelled in one
  unit per axis;
* :func:`step_axis` -- an integer schedule-step axis without matplotlib's ``1e6`` offset;
* :func:`distinct_styles` -- one distinct (colour, marker) pair per series;
* :func:`short_label` -- long workload names wrapped at an underscore for tick labels.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import PatchCollection
from matplotlib.colors import to_rgb
from matplotlib.patches import Rectangle

from experiments.plots.ticks import BinaryByteFormatter, BinaryByteLocator
from experiments.plots.units import BINARY_UNITS, format_bytes
from planners import Plan, Problem, live_profile, lower_bound

__all__ = [
    "PALETTE",
    "MARKERS",
    "LINESTYLES",
    "BINARY_UNITS",
    "STYLES",
    "style",
    "current_style",
    "figsize",
    "styled",
    "save",
    "recording",
    "figure_facts",
    "MIN_TEXT_PT",
    "MIN_DPI",
    "format_bytes",
    "BinaryByteLocator",
    "BinaryByteFormatter",
    "byte_axis",
    "step_axis",
    "distinct_styles",
    "short_label",
    "ratio_ticks",
    "PROVED",
    "plot_ratio_heatmap",
    "heatmap_cell_text",
    "plot_ratio_by_planner",
    "plot_memory_over_time",
    "plot_arena_layout",
    "plot_pool_layouts",
]

#: Okabe-Ito colour-blind-safe palette, ordered by contrast on white (the pale yellow last).
PALETTE = [
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
]
#: Marker shapes; with :data:`PALETTE` they give ``8 * 11 = 88`` distinct (colour, marker) pairs.
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h"]
#: Line styles that stay distinguishable where curves overlap (solid, dashed, dotted, dash-dot).
LINESTYLES = ["-", (0, (5, 2)), (0, (1.2, 1.2)), (0, (6, 2, 1.2, 2)), (0, (3, 1, 1, 1, 1, 1))]


_BASE_RC = {
    "figure.dpi": 110,
    "savefig.dpi": 200,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "axes.formatter.useoffset": False,
    "pdf.fonttype": 3,  # fast to write; the paper style embeds TrueType (42)
    "svg.hashsalt": "memplan",
    "path.simplify": False,
}

#: Named figure styles for :func:`style`: rcParams plus the widths figures take in it.
#: ``"default"`` is the look of ``make run`` (screen, design reviews, the committed figures): every
#: figure is one double column wide (7.16 in, legends fitted inside), so its 8-10 pt text stays
#: above :data:`MIN_TEXT_PT` when printed; ``"paper"`` is for
#: two-column papers: 3.5 in single-column and 7.16 in double-column widths (IEEE / ACM), 8 pt
#: text and 9 pt titles, TrueType fonts embedded in the PDF (``pdf.fonttype`` 42), the Okabe-Ito
#: colour-blind-safe palette, PDF first.
STYLES: dict[str, dict] = {
    "default": {"rc": dict(_BASE_RC), "single": None, "double": 7.16,
                "formats": ("png", "pdf")},
    "paper": {
        "rc": {**_BASE_RC, "figure.dpi": 150, "savefig.dpi": 300, "font.size": 8,
               "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 8,
               "xtick.labelsize": 8, "ytick.labelsize": 8, "legend.title_fontsize": 8,
               "lines.linewidth": 1.0, "lines.markersize": 4, "axes.linewidth": 0.6,
               "grid.linewidth": 0.4, "font.family": "sans-serif", "pdf.fonttype": 42,
               "ps.fonttype": 42},
        "single": 3.5, "double": 7.16, "formats": ("pdf", "png"),
    },
}

_CURRENT = contextvars.ContextVar("memplan_plot_style", default="default")
_RECORDING: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "memplan_plot_recording", default=None)
_RECORD_WRITES: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "memplan_plot_record_writes", default=True)

#: The print rules every saved figure follows (checked by ``tests/test_figure_style.py``):
#: no text below this many points once the figure is scaled to the column it is printed in
#: (3.5 in single, 7.16 in double column; a figure is never enlarged), ...
MIN_TEXT_PT = 7.0
#: ... and PNG files written at no less than this resolution (dots per inch).
MIN_DPI = 200


@contextlib.contextmanager
def _rc(params: dict) -> Iterator[None]:
    """Set ``params`` in rcParams for the block and restore exactly those keys afterwards.

    Unlike ``matplotlib.rc_context``, rcParams that something else sets inside the block stay
    set: IPython switches on ``interactive`` when the first figure picks the inline backend, and
    restoring it would stop every later notebook figure from showing."""
    old = {k: plt.rcParams[k] for k in params}
    plt.rcParams.update(params)
    try:
        yield
    finally:
        plt.rcParams.update(old)


def current_style() -> str:
    """Name of the style of the innermost active :func:`style` block (``"default"`` outside)."""
    return _CURRENT.get()


@contextlib.contextmanager
def style(name: str = "default") -> Iterator[dict]:
    """Context manager: draw and save figures in the named style (:data:`STYLES`).

    Only the block sees the style's rcParams (the keys it sets are restored on exit); nothing
    else is changed, so a notebook keeps its own settings outside the block.

    Parameters
    ----------
    name : {"default", "paper"}

    Yields
    ------
    dict
        The style's entry of :data:`STYLES`.

    Raises
    ------
    ValueError
        An unknown style name.

    Examples
    --------
    >>> with style("paper"):
    ...     figsize("double", 3.0)
    (7.16, 3.0)
    """
    if name not in STYLES:
        raise ValueError(f"unknown figure style {name!r}; styles: {', '.join(STYLES)}")
    token = _CURRENT.set(name)
    try:
        with _rc(STYLES[name]["rc"]):
            yield STYLES[name]
    finally:
        _CURRENT.reset(token)


def figsize(column: str, height: float, default_width: float | None = None) -> tuple[float, float]:
    """Figure size (inches) of a figure meant for one ``column`` (``"single"``/``"double"``).

    In the paper style the width is the column's (3.5 or 7.16 in) and the height is scaled by
    ``width / default_width`` for a single column (keeping the default look's aspect), and is
    never below 2 in; otherwise ``(default_width, height)``.
    """
    spec = STYLES[current_style()]
    width = spec.get(column)
    if width is None:
        return (float(default_width if default_width is not None else 6.5), float(height))
    if default_width and column == "single":
        height = height * width / default_width
    return (float(width), float(max(2.0, height)))


def _new_axes(ax, size: tuple[float, float]):
    """``(fig, ax)``: the given axes and its figure, or a new figure of ``size`` in the current
    style's rcParams (the rcParams of the active :func:`style` block, default style outside)."""
    if ax is not None:
        return ax.figure, ax
    paper = bool(STYLES[current_style()].get("double"))
    with _rc(STYLES[current_style()]["rc"]):
        fig, ax = plt.subplots(figsize=size, layout="constrained" if paper else None)
    return fig, ax


def styled(name: str = "default"):
    """Decorator: run a figure-writing function inside :func:`style` ``(name)``.

    For scripts (the benchmarks) that draw and save their own figures: the style's rcParams hold
    only while the function runs, never globally. Raises ``ValueError`` for an unknown style name
    (when the function is called).
    """

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with style(name):
                return fn(*args, **kwargs)

        return run

    return wrap


def save(fig, path: str | Path, formats: Sequence[str] | None = None) -> list[Path]:
    """Save ``fig`` as ``path`` with each suffix in ``formats`` and close it.

    Parameters
    ----------
    fig : matplotlib Figure or Axes
        An Axes saves its figure.
    path : str or Path
        File stem; any suffix is replaced by each format's.
    formats : sequence of {"png", "pdf", "svg"}, optional
        Default: the current style's (:data:`STYLES`; PNG and PDF).

    Returns
    -------
    list of Path
        The written files, in ``formats`` order.

    Notes
    -----
    In a style with column widths (``"paper"``) the file keeps the figure's exact size (a
    constrained layout fits outside legends into it); otherwise the figure is cropped to its
    drawn extent. Dates and the software tag are left out of the metadata (PNG ``Software``, PDF
    ``CreationDate``, SVG ``Date``) and SVG ids are salted (``svg.hashsalt``), so the same
    figure gives byte-identical files on every run (checked by ``tests/test_plots.py``).
    """
    if isinstance(fig, Axes):
        fig = fig.figure
    if formats is None:
        formats = STYLES[current_style()]["formats"]
    from planners.io import atomic_output, output_folder

    path = Path(path)
    output_folder(path.parent)
    written = []
    bbox = "tight"
    get_renderer = getattr(fig.canvas, "get_renderer", None)
    if STYLES[current_style()].get("double"):  # paper: the file is exactly the column width,
        try:                                    # outside legends fitted inside it
            if fig.get_layout_engine() is None:
                fig.set_layout_engine("constrained")
            fig.draw_without_rendering()
            bbox = None
        except (RuntimeError, ZeroDivisionError, ValueError):  # too small to lay out: crop
            fig.set_layout_engine("none")
    if bbox == "tight" and get_renderer is not None and len(formats) > 1:
        # one tight-box layout pass for all formats
        fig.draw_without_rendering()
        bbox = fig.get_tightbbox(get_renderer()).padded(plt.rcParams["savefig.pad_inches"])
    # never below MIN_DPI, whatever style (or none) the caller drew in
    dpi = max(float(STYLES[current_style()]["rc"]["savefig.dpi"]), float(MIN_DPI))
    log = _RECORDING.get()
    if log is not None:
        if bbox == "tight":
            fig.draw_without_rendering()
            ext = fig.get_tightbbox(fig.canvas.get_renderer()).padded(
                plt.rcParams["savefig.pad_inches"])
        else:
            ext = bbox
        size = ((ext.width, ext.height) if ext is not None
                else tuple(fig.get_size_inches()))
        from experiments.plots.checks import layout_faults

        log.append({"path": path, **figure_facts(fig), **layout_faults(fig),
                    "width_in": float(size[0]),
                    "height_in": float(size[1]), "dpi": dpi,
                    "cut": _cut_texts(fig) if ext is None else []})
    for fmt in formats:
        out = path.with_suffix("." + fmt)
        if log is not None and not _RECORD_WRITES.get():  # recording(write=False): facts only
            written.append(out)
            continue
        meta = {"png": {"Software": None}, "pdf": {"CreationDate": None, "ModDate": None},
                "svg": {"Date": None}}.get(fmt, {})
        with _rc({"svg.hashsalt": "memplan",
                  "pdf.fonttype": STYLES[current_style()]["rc"]["pdf.fonttype"]}):
            with atomic_output(out) as tmp:
                fig.savefig(tmp, format=fmt, bbox_inches=bbox, metadata=meta, dpi=dpi)
        written.append(out)
    plt.close(fig)
    return written


@contextlib.contextmanager
def recording(write: bool = True) -> Iterator[list[dict]]:
    """Context manager: every :func:`save` inside the block appends one dict to the yielded list,
    before the figure is closed: ``path`` (the stem), the :func:`figure_facts` of the figure,
    ``width_in``/``height_in`` (inches of the written file: the cropped extent, or the figure
    size in the paper style), ``dpi`` (of the PNG) and the :func:`experiments.plots.checks.layout_faults`
    (``overlaps``: overlapping texts, ``clipped``: markers and data texts cut by a frame). For tests of the print rules
    (:data:`MIN_TEXT_PT`, :data:`MIN_DPI`); outside the block :func:`save` records nothing.
    With ``write=False`` :func:`save` records and returns the paths it would write without
    rendering the files (the facts need only the drawn figure; a test of every figure's layout
    then skips the 300-dpi PNG and PDF output)."""
    log: list[dict] = []
    token = _RECORDING.set(log)
    wtoken = _RECORD_WRITES.set(bool(write))
    try:
        yield log
    finally:
        _RECORD_WRITES.reset(wtoken)
        _RECORDING.reset(token)


def figure_facts(fig) -> dict:
    """What the print rules look at in a drawn figure: ``texts``, a list of ``(text, points)``
    of every visible, non-empty text (titles, labels, tick labels, legend entries, annotations;
    clipped-out annotations excluded), and ``log_axes``, a list of ``(axis label, "x"|"y")`` of
    every visible log-scaled axis (its label should say "log"), and ``hollow_markers``, the
    number of drawn hollow markers (:func:`_hollow_markers`). O(artists)."""
    from matplotlib.text import Text

    fig.draw_without_rendering()  # tick labels exist only once drawn
    texts = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        ax = t.axes
        if ax is not None and t.get_clip_on() and t.get_transform() == ax.transData:
            x, y = (ax.transData + ax.transAxes.inverted()).transform(t.get_position())
            if not (-1e-9 <= x <= 1 + 1e-9 and -1e-9 <= y <= 1 + 1e-9):
                continue  # a data label outside the view is not drawn
        texts.append((t.get_text(), float(t.get_fontsize())))
    logs = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if axis.get_scale() == "log" and axis.get_visible() and \
                    any(t.get_visible() and t.get_text() for t in axis.get_ticklabels()):
                logs.append((axis.get_label_text(), name))
    return {"texts": texts, "log_axes": logs, "hollow_markers": _hollow_markers(fig)}


def _cut_texts(fig) -> list[str]:
    """Titles, axis labels and legend entries (the figure's and the axes') that reach beyond the
    figure's edges by more than one pixel: cut off in a file saved at the figure's exact size
    (the paper and default styles). O(texts)."""
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts = list(fig.texts)
    if fig._suptitle is not None:
        texts.append(fig._suptitle)
    for leg in fig.legends:
        texts += [*leg.get_texts(), leg.get_title()]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        leg = ax.get_legend()
        if leg is not None:
            texts += [*leg.get_texts(), leg.get_title()]
    out = []
    for t in texts:
        if not t.get_visible() or not t.get_text().strip():
            continue
        e = t.get_window_extent(renderer)
        if e.x0 < box.x0 - 1 or e.y0 < box.y0 - 1 or e.x1 > box.x1 + 1 or e.y1 > box.y1 + 1:
            out.append(t.get_text())
    return out


def _hollow_markers(fig) -> int:
    """How many drawn markers are hollow (no face, a visible edge): scatter points and line
    markers. Hollow means one thing in every figure, "not proved optimal"
    (``tests/test_figure_style.py``)."""
    from matplotlib.collections import PathCollection
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D

    n = 0
    for c in fig.findobj(PathCollection):
        if not c.get_visible() or not len(c.get_offsets()):
            continue
        face, edge = c.get_facecolors(), c.get_edgecolors()
        if len(edge) and (not len(face) or float(np.max(face[:, 3])) == 0.0) \
                and float(np.max(edge[:, 3])) > 0:
            n += len(c.get_offsets())
    for ln in fig.findobj(Line2D):
        if (not ln.get_visible() or ln.get_marker() in (None, "", "None", " ")
                or not len(ln.get_xdata())):
            continue
        if to_rgba(ln.get_markerfacecolor())[3] == 0.0:
            n += len(ln.get_xdata())
    return n


# -- bytes ----------------------------------------------------------------------------------------


#: Former private name of :func:`format_bytes` (kept for callers such as ``report.py``).
_human_bytes = format_bytes

def byte_axis(axis, nbins: int = 6) -> None:
    """Install :class:`BinaryByteLocator` and :class:`BinaryByteFormatter` on a matplotlib axis
    (``ax.yaxis`` or ``ax.xaxis``) whose data are bytes."""
    axis.set_major_locator(BinaryByteLocator(nbins))
    axis.set_major_formatter(BinaryByteFormatter())
    axis.set_minor_locator(mticker.NullLocator())


class _StepLocator(mticker.MaxNLocator):
    """Integer ticks, at most 7, and fewer where the axis is too short for their labels side by
    side (x axis: the widest label at about 0.62 em per character plus 8 pt; y axis: 1.6 em per
    label), measured on the axis' current size when the ticks are drawn."""

    def tick_values(self, vmin, vmax):
        axis = self.axis
        if axis is not None and axis.axes is not None:
            box = axis.axes.bbox
            fig = axis.axes.figure
            size = plt.rcParams["xtick.labelsize" if axis.axis_name == "x" else "ytick.labelsize"]
            fs = matplotlib.font_manager.FontProperties(size=size).get_size_in_points()
            pt = (box.width if axis.axis_name == "x" else box.height) * 72.0 / fig.dpi
            widest = len(f"{max(abs(vmin), abs(vmax)):,.0f}") + 1
            need = 0.62 * fs * widest + 8.0 if axis.axis_name == "x" else 1.6 * fs
            self.set_params(nbins=int(max(1, min(7, pt // max(need, 1.0)))))
        return super().tick_values(vmin, vmax)


def step_axis(axis) -> None:
    """Integer ticks without an offset or scientific notation for a schedule-step axis (steps are
    plain integers with thousands separators such as 1,000,000, never ``1e6``); at most 7, fewer
    where the axis is too short for the labels side by side (:class:`_StepLocator`)."""
    axis.set_major_locator(_StepLocator(nbins=7, integer=True, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(mticker.StrMethodFormatter("{x:,.0f}"))


# -- series styles and labels ---------------------------------------------------------------------


def distinct_styles(n: int) -> list[tuple[str, str]]:
    """``n`` (colour, marker) pairs, all distinct for ``n <= len(PALETTE) * len(MARKERS)`` (88).

    Series ``k`` gets colour ``k mod 8`` and marker ``k mod 11``; as 8 and 11 are coprime, the pair
    repeats only after 88 series (Chinese remainder theorem), and any 8 consecutive series have
    different colours. O(n).
    """
    return [(PALETTE[k % len(PALETTE)], MARKERS[k % len(MARKERS)]) for k in range(n)]


def short_label(name: str, width: int = 14) -> str:
    """A tick label for ``name``: unchanged up to ``width`` characters, else wrapped onto two
    lines at the underscore nearest the middle (``"mobilenet_v1_\\nfirst_layer"``); a name without
    an underscore is cut to ``width - 1`` characters and an ellipsis.

    Examples
    --------
    >>> short_label("mobilenet_v1_first_layer")
    'mobilenet_v1_\\nfirst_layer'
    >>> short_label("unet_d5")
    'unet_d5'
    """
    name = str(name)
    if len(name) <= width:
        return name
    cuts = [i for i, ch in enumerate(name) if ch in "_-:." and 0 < i < len(name) - 1]
    if not cuts:
        return name[: width - 1] + "\u2026"
    i = min(cuts, key=lambda c: abs(c + 1 - len(name) / 2))
    return name[: i + 1] + "\n" + name[i + 1 :]


#: Candidate ticks of a ratio axis (arena / lower bound), log scale.
_RATIO_TICKS = (1, 1.01, 1.02, 1.05, 1.1, 1.2, 1.5, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)


def ratio_ticks(rmax: float, max_ticks: int = 10) -> list[float]:
    """Ticks for a log axis of ``arena / lower bound`` from 1 to ``rmax``: 1 and the largest of
    1.01, 1.02, 1.05, 1.1, 1.2, 1.5, 2, 3, 5, 10, ... below ``rmax``, keeping only ticks at least
    ``log(rmax) / max_ticks`` apart on the log axis (so labels do not collide).

    Examples
    --------
    >>> ratio_ticks(1.3)
    [1, 1.05, 1.1, 1.2]
    >>> ratio_ticks(300)
    [1, 2, 5, 10, 20, 50, 100, 200]
    """
    rmax = max(float(rmax), 1.0 + 1e-6)
    gap = math.log(rmax) / max_ticks
    cand = [t for t in _RATIO_TICKS if t <= rmax * (1 + 1e-9)]
    kept: list[float] = []
    for t in reversed(cand):  # from the top, so the informative large ratios survive
        if t == 1 or not kept or math.log(kept[-1] / t) >= gap:
            kept.append(t)
    kept = sorted(set(kept))
    if len(kept) > 1 and math.log(kept[1]) < gap:  # too close to 1
        kept.pop(1)
    return kept


def _text_colour(face: str) -> str:
    r, g, b = to_rgb(face)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _legend_right(ax, **kw):
    kw.setdefault("loc", "upper left")
    kw.setdefault("bbox_to_anchor", (1.01, 1.0))
    kw.setdefault("frameon", False)
    return ax.legend(**kw)


# -- planner comparison ---------------------------------------------------------------------------

#: Statuses that prove the arena minimal (the arena equals the best proved bound).
PROVED = ("optimal",)


def _proved(records: pd.DataFrame) -> pd.Series:
    """True where a record's arena is proved optimal by the one rule
    (:func:`planners.model.is_proved_optimal`): the records' ``proved`` column when they have
    one; else (records written before it) a ``status`` in :data:`PROVED`, or an arena equal to
    its lower bound (``ratio == 1``: no plan can be smaller)."""
    if "proved" in records:
        return records["proved"].astype("boolean").fillna(False).astype(bool)
    met = records["ratio"].astype(float) == 1.0 if "ratio" in records else False
    if "status" not in records:
        return pd.Series(met, index=records.index).astype(bool)
    return (records["status"].astype(str).isin(PROVED) | met).astype(bool)


def heatmap_cell_text(ratio: float, proved: bool = False) -> str:
    """The text of one heatmap cell for ``ratio = arena / lower bound``: the percentage above the
    lower bound, rounded (``"0"``, ``"24"``, ``"99"``) below 2x the bound, else the ratio with an
    ``x`` (``"2.1x"``, ``"38x"``: at most 4 characters, so 24 cells fit one 7.16 in row in 7 pt
    text), with ``"*"`` appended for a proved optimum.

    Examples
    --------
    >>> heatmap_cell_text(1.0, True), heatmap_cell_text(1.238), heatmap_cell_text(38.019)
    ('0*', '24', '38x')
    >>> heatmap_cell_text(3.143)
    '3.1x'
    """
    v = float(ratio)
    if v < 2.0:
        text = f"{max(0.0, 100 * (v - 1)):.0f}"
        text = "99" if text == "100" else text  # 1.996 stays below 2x
    elif v < 9.95:
        text = f"{v:.1f}x"
    else:
        text = f"{v:.0f}x"
    return text + ("*" if proved else "")


def plot_ratio_heatmap(records: pd.DataFrame, title: str = "Arena / lower bound",
                       cap_percentile: float | None = 95.0, ax=None):
    """Heatmap of ``arena / lower_bound``: rows the planners and columns the workloads, or the
    other way round when there are more workloads than planners (the longer list down the page).

    Parameters
    ----------
    records : DataFrame
        Comparison records (columns ``workload``, ``planner``, ``ratio``, ``valid``, optionally
        ``status``/``proved``); failed or timed-out runs are blank cells; duplicate cells take the
        minimum. A cell whose run is proved optimal is marked ``*`` (said in the colour bar's
        label): a ratio above 1 can be optimal, a ratio of 1.00 from a heuristic is optimal too
        (it meets the lower bound), anything else is not proved.
    title : str
    cap_percentile : float or None
        The colour scale ends at this percentile of the ratios (so one outlier does not wash out
        the rest); cells above it take the top colour, still print their value, and the colour
        bar says ``"capped at <value> (<p>th percentile)"`` with an arrow. ``None``: no cap.
    ax : matplotlib Axes, optional
        Draw into it (default: a new figure, one double column wide).

    Returns
    -------
    matplotlib Axes (one annotated cell per run, colour bar from 1.0 = lower bound). A cell's
    text is :func:`heatmap_cell_text` (percent above the bound, or ``Nx`` from 2x on), in a
    font that fits the cell's width (never below :data:`MIN_TEXT_PT`); planner names are
    horizontal row labels and workload names vertical column labels, so no two labels overlap
    (checked by :func:`experiments.plots.checks.text_overlaps` in the tests).
    """
    ok = records[records["valid"].astype(bool)].copy()
    ok["_proved"] = _proved(ok)
    table = ok.pivot_table(index="planner", columns="workload", values="ratio", aggfunc="min")
    proved = ok.pivot_table(index="planner", columns="workload", values="_proved", aggfunc="max")
    planners = [p for p in dict.fromkeys(records["planner"]) if p in table.index]
    workloads = [w for w in dict.fromkeys(records["workload"]) if w in table.columns]
    table = table.reindex(index=planners, columns=workloads)
    proved = proved.reindex(index=planners, columns=workloads).fillna(False).astype(bool)
    # the longer list runs down the page (rows have room, a 7.16 in row has not)
    rows_are = "planner" if len(planners) >= len(workloads) else "workload"
    if rows_are == "workload":
        table, proved = table.T, proved.T
    rows, cols = list(table.index), list(table.columns)
    cols_are = "workload" if rows_are == "planner" else "planner"
    row_labels = [short_label(r, 34) for r in rows]
    # vertical column labels on one line (two lines need twice the column width)
    col_labels = [str(c) if len(str(c)) <= 30 else str(c)[:29] + "\u2026" for c in cols]
    two_line = any("\n" in lab for lab in row_labels)
    row_h = 0.34 if two_line else 0.2
    label_in = 0.075 * max((len(lab) for lab in col_labels), default=0)  # 9 pt vertical text
    fig, ax = _new_axes(ax, figsize("double", 1.3 + row_h * max(len(rows), 1) + label_in,
                                    7.16))
    data = table.to_numpy(dtype=float)
    finite = data[np.isfinite(data)]
    top = float(finite.max()) if finite.size else 2.0
    vmax = max(1.05, top)
    capped = False
    if cap_percentile is not None and finite.size:
        cap = max(1.05, float(np.nanpercentile(finite, cap_percentile)))
        if cap < top:
            vmax, capped = cap, True
    im = ax.imshow(data, cmap="viridis_r", vmin=1.0, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(cols)), col_labels, rotation=90, ha="center", va="top")
    ax.set_yticks(range(len(rows)), row_labels, fontsize=MIN_TEXT_PT + 1)
    ax.tick_params(length=2, pad=2)
    ax.grid(False)
    pv = proved.to_numpy(dtype=bool)
    texts = {(r, c): heatmap_cell_text(v, bool(pv[r, c]))
             for (r, c), v in np.ndenumerate(data) if np.isfinite(v)}
    cb = fig.colorbar(im, ax=ax, fraction=0.02, pad=0.01, extend="max" if capped else "neither")
    label = "arena / lower bound"
    if capped:
        label += f"\ncolour capped at {vmax:.2f} ({cap_percentile:g}th percentile)"
    cb.set_label(label)
    notes = ["cell: % above the lower bound, Nx = N times it (from 2x)"]
    if pv.any():
        notes.append("* proved optimal")
    if np.isnan(data).any():
        notes.append("blank: no valid plan")
    ax.set_xlabel(cols_are + "\n" + "; ".join(notes))
    ax.set_ylabel(rows_are)
    ax.set_title(title)
    # the cell text's size: the largest (8 pt at most) whose widest text fits a cell; none
    # when even MIN_TEXT_PT does not fit (the values are in the tables beside the figure)
    fig.draw_without_rendering()
    cell_pt = ax.bbox.width / max(len(cols), 1) * 72.0 / fig.dpi
    widest = max((sum(0.4 if ch in ".*" else 0.68 for ch in t) for t in texts.values()),
                 default=1.0)  # em per text (DejaVu Sans digits 0.636 em, rendered wider)
    size = float(min(8.0, (cell_pt - 1.5) / widest))
    if size < MIN_TEXT_PT:
        texts = {}
        ax.set_xlabel(cols_are + "\ncells too narrow for their values (see the tables)")
    for (r, c), t in texts.items():
        v = data[r, c]
        ax.text(c, r, t, ha="center", va="center", fontsize=size,
                color="white" if v > 1 + 0.6 * (vmax - 1) else "black")
    return ax


def plot_ratio_by_planner(records: pd.DataFrame, title: str = "Arena / lower bound per planner",
                          ax=None):
    """Strip plot: one row per planner, grouped by planner family, ``arena / lower_bound`` of
    every workload on a log x axis from 1 (the lower bound, a reference line).

    Rows are ordered by family (the records' ``family`` column, written by the harness from
    :attr:`planners.base.Planner.family`; ``"other"`` where it is missing; bracketed and labelled at
    the left), then by name; each family has one colour (:data:`PALETTE`), so a planner is found
    by its family's colour and its row. Within a row the workloads sit at fixed vertical slots
    (workload ``k`` always at the same height), so runs that reach the lower bound do not hide
    each other. A filled marker is a proved optimum (``status`` ``"optimal"``, or an arena equal
    to the lower bound); an open marker a plan without that proof (heuristic, feasible, stopped
    by a time limit).

    Parameters
    ----------
    records : DataFrame
        Comparison records (``workload``, ``planner``, ``ratio``, ``valid``, optionally
        ``status`` and ``family``); invalid runs are left out, the row of a planner without any
        valid run stays empty.
    title : str
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes.
    """
    fam = (dict(zip(records["planner"], records["family"], strict=False))
           if "family" in records else {})
    planners = list(dict.fromkeys(records["planner"]))
    families = {p: fam.get(p) or "other" for p in planners}
    fam_order = list(dict.fromkeys(families[p] for p in planners))
    planners = sorted(planners, key=lambda p: (fam_order.index(families[p]), p))
    fam_colour = {f: PALETTE[k % (len(PALETTE) - 1)] for k, f in enumerate(fam_order)}  # no yellow
    ok = records[records["valid"].astype(bool) & np.isfinite(records["ratio"].astype(float))].copy()
    ok["_proved"] = _proved(ok)
    workloads = list(dict.fromkeys(ok["workload"]))
    nw = max(len(workloads), 1)
    row_h = max(0.22, 0.012 * nw)
    fig, ax = _new_axes(ax, figsize("double", 1.1 + row_h * max(len(planners), 1), 7.16))
    slot = 0.8 / nw
    row = {p: i for i, p in enumerate(planners)}
    wslot = {w: (k - (nw - 1) / 2) * slot for k, w in enumerate(workloads)}
    for f in fam_order:
        sub = ok[ok["planner"].map(families) == f]
        if sub.empty:
            continue
        ys = sub["planner"].map(row).to_numpy(float) + sub["workload"].map(wslot).to_numpy(float)
        pr = sub["_proved"].to_numpy(bool)
        x = sub["ratio"].astype(float).to_numpy()
        c = fam_colour[f]
        ax.scatter(x[pr], ys[pr], s=14, marker="o", facecolor=c, edgecolor=c, linewidth=0.6,
                   zorder=3)
        ax.scatter(x[~pr], ys[~pr], s=14, marker="o", facecolor="none", edgecolor=c,
                   linewidth=0.8, zorder=3)
    rmax = float(ok["ratio"].max()) if len(ok) else 1.1
    rmin = min(1.0, float(ok["ratio"].min())) if len(ok) else 1.0
    ax.set_xscale("log")
    # 4 % of the log range beyond the extreme ratios on either side, so no marker (the naive
    # 38x, the runs at 1.0) touches the frame; the region below the bound is shaded and its
    # edge is a thin line under the markers (a dashed line through them hid those at 1.0)
    span = max(math.log10(max(rmax, 1.01) / rmin), 0.02)
    lo, hi = rmin / 10 ** (0.04 * span), max(rmax, 1.01) * 10 ** (0.04 * span)
    ax.axvspan(lo, 1.0, color="0.92", lw=0, zorder=0)
    ax.axvline(1.0, color="0.35", lw=0.6, zorder=1)
    ax.set_xlim(lo, hi)
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    # coverage beside each name (valid plans of all workloads), so a row with few plans does
    # not pass for a perfect one (experiments.metrics.planner_summary says the same in tables)
    n_all = records["workload"].nunique()
    solved = ok.groupby("planner")["workload"].nunique()
    ax.set_yticks(range(len(planners)),
                  [f"{p} ({int(solved.get(p, 0))}/{n_all})" for p in planners])
    for p, lab in zip(planners, ax.get_yticklabels(), strict=True):
        lab.set_color(fam_colour[families[p]])
    ax.set_ylim(len(planners) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
    for i in range(1, len(planners)):
        same = families[planners[i]] == families[planners[i - 1]]
        ax.axhline(i - 0.5, color="0.88" if same else "0.45", lw=0.5 if same else 0.8, zorder=1)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], ls="", marker="s", color=fam_colour[f], label=f) for f in fam_order]
    handles += [Line2D([], [], ls="", marker="o", color="0.3", label="proved optimal"),
                Line2D([], [], ls="", marker="o", markerfacecolor="none", color="0.3",
                       label="not proved optimal"),
                Line2D([], [], ls="-", lw=0.6, color="0.35",
                       label="lower bound (1.0; shaded: below it)")]
    ax.set_xlabel("arena / lower bound (log scale; 1 = lower bound)")
    ax.set_ylabel("planner")
    ax.set_title(title + (f"\n({nw} workloads; one slot per workload in each row)"
                          if nw > 1 else ""))
    _legend_right(ax, handles=handles, title="planner family")
    # ratio ticks as many as the laid-out axis has room for (about 28 pt per label: "1.2"
    # "1.5" touched on a narrow axis)
    fig.draw_without_rendering()
    width_pt = ax.bbox.width * 72.0 / fig.dpi
    room = width_pt * math.log(hi) / math.log(hi / lo) / 28.0
    ticks = ratio_ticks(hi, max_ticks=max(1, int(room)))
    ax.xaxis.set_major_locator(mticker.FixedLocator(ticks))
    ax.xaxis.set_major_formatter(mticker.FixedFormatter([f"{t:g}" for t in ticks]))
    return ax


def plot_memory_over_time(
    problem: Problem,
    plans: Sequence[Plan] = (),
    title: str | None = None,
    profiles: dict[str, Problem] | None = None,
    plan_roles: Sequence[str] | None = None,
    ax=None,
):
    """Live bytes over schedule steps (step curves), the lower bound, and each plan's arena.

    Parameters
    ----------
    problem : Problem
        Half-open lifetimes ``[start, end)`` in schedule steps, sizes in bytes; its live-bytes
        curve is labelled ``"live bytes"`` and its lower bound (:func:`planners.lower_bound`) is
        the dashed black line.
    plans : sequence of Plan
        Each plan's arena (bytes) is a horizontal band, wider and paler for earlier plans, drawn
        under the lower-bound line: an arena equal to the lower bound stays visible around the
        dashed line and its legend entry says ``"= lower bound"``, otherwise ``"+x.x %"``.
    title : str, optional
    profiles : dict label -> Problem, optional
        More live-bytes curves (e.g. another schedule of the same graph), each with its own
        colour and line style.
    plan_roles : sequence of str, optional
        Words prefixed to each plan's legend entry, e.g. ``("best plan", "reference")``, so the
        legend says why each plan is drawn (e.g. the schedule it belongs to).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes. O(n log n) for n buffers (:func:`planners.live_profile`); a plan that is
    not proved optimal is labelled with its status.
    """
    fig, ax = _new_axes(ax, figsize("double", 3.0, 6.5))
    curves = {"live bytes": problem}
    curves.update(profiles or {})
    for k, (label, prob) in enumerate(curves.items()):
        t, live = live_profile(prob)
        if len(t):
            ax.step(t, live, where="post", color=PALETTE[k % len(PALETTE)], lw=1.3,
                    ls=LINESTYLES[k % len(LINESTYLES)], label=label, zorder=4)
    lb = int(lower_bound(problem)) if problem.n else 0
    ax.axhline(lb, color="black", ls=(0, (4, 2)), lw=0.9, zorder=5,
               label=f"lower bound {format_bytes(lb)}")
    roles = list(plan_roles or [])
    for k, p in enumerate(plans):
        colour = PALETTE[(k + len(curves)) % len(PALETTE)]
        a = int(p.arena_size)
        rel = "= lower bound" if a == lb else (f"{100 * (a / lb - 1):+.1f} % vs lower bound"
                                                if lb else "")
        role = f"{roles[k]}: " if k < len(roles) and roles[k] else ""
        if p.status != "optimal" and a != lb:  # an arena at the lower bound is optimal anyway
            rel += f"; {p.status}, not proved optimal" if p.status != "heuristic" else "; heuristic"
        ax.axhline(a, color=colour, lw=max(5.0 - 2.0 * k, 1.5), alpha=0.55, solid_capstyle="butt",
                   zorder=3 + 0.1 * k,  # narrower bands on top: all stay visible
                   label=f"{role}{p.planner} arena\n{format_bytes(a)} ({rel})")
    byte_axis(ax.yaxis)
    step_axis(ax.xaxis)
    ax.set_xlabel("schedule step")
    ax.set_ylabel("live bytes")
    ax.set_ylim(bottom=0)
    ax.set_title(title or f"Memory over time: {problem.name}")
    _legend_right(ax)
    return ax


def plot_arena_layout(plan: Plan, title: str | None = None, max_labels: int = 40,
                      label_fontsize: float = MIN_TEXT_PT, ax=None, capacity: int | None = None):
    """The arena layout of one plan: one rectangle per buffer ``[start, end) x [offset,
    offset + size)`` (schedule steps x bytes), the lower bound and arena as lines.

    Parameters
    ----------
    plan : Plan
        A one-arena plan (a plan with memory pools is drawn by :func:`plot_pool_layouts`).
    title : str, optional
    max_labels : int
        At most this many buffer ids are written, largest rectangles first, and only inside
        rectangles big enough for the text (estimated at 0.62 em per character plus padding),
        not crossed by the lower-bound line and not overlapping a label already written.
    label_fontsize : float
        Points.
    ax : matplotlib Axes, optional
    capacity : int, optional
        Bytes: drawn as a dash-dotted line labelled with the capacity and whether the arena
        fits it (the address axis reaches it when it is at most twice the arena; a capacity
        further above is named in the legend as off the axis).

    Returns
    -------
    matplotlib Axes (the upper one of two, see below). O(n log n) for n buffers. The arena's
    legend entry names the plan's status when it is not a proved optimum. In a new figure, when
    buffers live for the whole schedule and hold at least half the arena (seed 000's weights),
    a second panel below draws the other buffers with those bytes cut out of the address axis
    (:func:`_short_lived`), so they are not slivers above the weights.
    """
    if plan.pools is not None and plan.problem.pools:
        raise ValueError("plot_arena_layout draws one address space; a plan with memory pools "
                         "is drawn by plot_pool_layouts (one panel per pool)")
    split = _short_lived(plan) if ax is None else None
    if split is not None:  # whole-schedule buffers fill the arena: a second, compacted panel
        rest, cut = split
        paper = bool(STYLES[current_style()].get("double"))
        with _rc(STYLES[current_style()]["rc"]):
            fig, (top_ax, low_ax) = plt.subplots(
                2, 1, figsize=figsize("double", 6.4, 7.16), sharex=True,
                layout="constrained" if paper else None)
        plot_arena_layout(plan, title, max_labels, label_fontsize, ax=top_ax, capacity=capacity)
        plot_arena_layout(rest, f"The other buffers ({format_bytes(cut)} live for the whole "
                          "schedule cut out)", max_labels, label_fontsize, ax=low_ax)
        low_ax.set_ylabel("offset, compacted")
        low_ax.title.set_fontsize(MIN_TEXT_PT + 1)
        top_ax.set_xlabel("")
        return top_ax
    p = plan.problem
    fig, ax = _new_axes(ax, figsize("double", 3.6, 6.5))
    keep = p.sizes > 0
    starts, ends = p.starts[keep], p.ends[keep]
    offs, sizes = plan.offsets[keep], p.sizes[keep]
    ids = [b.id for b, k in zip(p.buffers, keep.tolist()) if k]
    idx = np.flatnonzero(keep)
    colours = [PALETTE[i % (len(PALETTE) - 2)] for i in idx.tolist()]  # no black, no yellow
    rects = [Rectangle((s, o), e - s, z)
             for s, e, o, z in zip(starts.tolist(), ends.tolist(), offs.tolist(), sizes.tolist())]
    ax.add_collection(
        PatchCollection(rects, facecolor=colours, edgecolor="white", linewidth=0.4, alpha=0.9)
    )
    lb, arena = int(plan.lower_bound), int(plan.arena_size)
    same = arena == lb
    ax.axhline(arena, color=PALETTE[3], lw=3.0 if same else 1.4, alpha=0.6 if same else 1.0,
               label=f"arena {format_bytes(arena)}"
               + (" (= lower bound: optimal)" if same else "")  # no plan is smaller
               + ("" if plan.status == "optimal" or same
                  else f"\n({plan.status}, not proved optimal)"))
    ax.axhline(lb, color="black", ls=(0, (4, 2)), lw=0.9, label=f"lower bound {format_bytes(lb)}")
    top = max(arena, lb, 1)
    if capacity is not None:
        verdict = "fits" if arena <= capacity else "DOES NOT FIT"
        shown = capacity <= 2 * top
        ax.axhline(capacity if shown else top, color="black", ls="-.", lw=1.6,
                   visible=shown, label=f"capacity {format_bytes(capacity)} ({verdict})"
                   + ("" if shown else ", above the axis"))
        top = max(top, capacity) if shown else top
    ax.set_xlim(int(p.starts.min()) if p.n else 0, p.horizon or 1)
    ax.set_ylim(0, top * 1.05)
    byte_axis(ax.yaxis)
    step_axis(ax.xaxis)
    ax.set_xlabel("schedule step")
    ax.set_ylabel("offset in the arena (address)")
    ax.set_title(title or f"Arena layout: {p.name}, {plan.planner}")
    _legend_right(ax)
    if len(ids) and max_labels > 0:
        # rectangle extents in points, measured once the layout (constrained, with the legend
        # outside) has fixed the axes' size: measured before it, the axes were 1.7x too wide
        # and neighbouring labels overlapped
        fig.draw_without_rendering()
        x0, y0 = ax.transData.transform(np.c_[starts, offs]).T
        x1, y1 = ax.transData.transform(np.c_[ends, offs + sizes]).T
        to_pt = 72.0 / fig.dpi
        w, h = (x1 - x0) * to_pt, (y1 - y0) * to_pt
        lens = np.array([len(i) for i in ids])
        need_w = 0.62 * label_fontsize * lens + 3.0
        need_h = 1.25 * label_fontsize + 2.0
        mid = offs + sizes / 2
        half = need_h / 2 / np.maximum(h, 1e-9) * sizes  # half the text height, in bytes
        crossed = np.abs(mid - lb) < half
        fits = (w >= need_w) & (h >= need_h) & ~crossed
        order = np.flatnonzero(fits)
        order = order[np.lexsort((order, -(w * h)[order]))]
        # largest rectangles first; a label whose text box would overlap one already placed is
        # left out (thin neighbouring rectangles: "r109" over "r119" in resnet50's layout)
        cx, cy = (x0 + x1) / 2 * to_pt, (y0 + y1) / 2 * to_pt
        placed: list[int] = []
        for j in order.tolist():
            if len(placed) >= max_labels:
                break
            if all(abs(cx[j] - cx[i]) * 2 >= need_w[j] + need_w[i]
                   or abs(cy[j] - cy[i]) >= need_h for i in placed):
                placed.append(j)
        for j in sorted(placed):
            ax.text((starts[j] + ends[j]) / 2, mid[j], ids[j], ha="center", va="center",
                    fontsize=label_fontsize, color=_text_colour(colours[j]), clip_on=True)
    return ax


def _short_lived(plan: Plan, share: float = 0.5):
    """``(plan of the other buffers, bytes cut)`` when the buffers live for the whole schedule
    (``[first start, horizon)``: weights, graph inputs) hold at least ``share`` of the arena and
    others exist, else ``None``. The other buffers keep their lifetimes and sizes; each offset
    drops the whole-schedule bytes placed below it (those address ranges are never shared, as
    their buffers are always live), so their relative layout is the plan's. Its lower bound is
    the other buffers' max live bytes."""
    p = plan.problem
    if not p.n:
        return None
    whole = (p.starts <= int(p.starts.min())) & (p.ends >= int(p.horizon)) & (p.sizes > 0)
    cut = int(p.sizes[whole].sum())
    arena = int(plan.arena_size)
    if arena <= 0 or cut < share * arena or whole.all() or not (p.sizes[~whole] > 0).any():
        return None
    lo = plan.offsets[whole].astype(np.int64)
    hi = lo + p.sizes[whole].astype(np.int64)
    keep = np.flatnonzero(~whole)
    offs = plan.offsets[keep].astype(np.int64)
    below = np.array([int(np.clip(o - lo, 0, hi - lo).sum()) for o in offs.tolist()],
                     dtype=np.int64)
    bufs = [p.buffers[i] for i in keep.tolist()]
    rest = Problem([type(b)(b.id, b.start, b.end, b.size) for b in bufs], name=p.name)
    return (Plan(rest, offs - below, plan.planner, plan.status,
                 lower_bound=int(lower_bound(rest))), cut)


def plot_pool_layouts(plan: Plan, title: str | None = None, max_labels: int = 40,
                      label_fontsize: float = MIN_TEXT_PT):
    """The layout of a plan with memory pools (:attr:`planners.Plan.pools`): one panel per pool
    (preference order, top to bottom), each an address space of its own from 0 drawn by
    :func:`plot_arena_layout` with that pool's buffers, its arena, its own lower bound (max live
    bytes of its buffers) and its capacity line (none for an unbounded pool); pools are never
    drawn in one address space. The panels share the time axis. The per-pool plans come from
    :func:`experiments.plots.view.pool_plans` (the same split as ``memplan view --pools``).

    Parameters
    ----------
    plan : Plan
        A plan of a problem with pools (``ValueError`` otherwise).
    title : str, optional
        The figure's title (default: the problem and planner).
    max_labels, label_fontsize : as :func:`plot_arena_layout`, per panel.

    Returns
    -------
    matplotlib Figure with one Axes per pool. O(n log n) for n buffers.
    """
    from experiments.plots.view import pool_plans

    per_pool = pool_plans(plan)
    if not per_pool:
        raise ValueError("plot_pool_layouts needs a plan with memory pools; draw a one-arena "
                         "plan with plot_arena_layout")
    paper = bool(STYLES[current_style()].get("double"))
    w, h = figsize("double", 3.0, 6.5)
    with _rc(STYLES[current_style()]["rc"]):
        fig, axes = plt.subplots(len(per_pool), 1, figsize=(w, h * len(per_pool)), sharex=True,
                                 squeeze=False, layout="constrained" if paper else None)
    for ax, (q, sub) in zip(axes[:, 0], per_pool, strict=True):
        cap = "unbounded" if q.capacity is None else f"capacity {format_bytes(q.capacity)}"
        plot_arena_layout(sub, title=f"pool {q.name} ({cap}, alignment {q.alignment} B): "
                                     f"{sub.problem.n} buffer{'' if sub.problem.n == 1 else 's'}",
                          max_labels=max_labels, label_fontsize=label_fontsize, ax=ax,
                          capacity=q.capacity)
        ax.set_ylabel(f"offset in {q.name}")
    for ax in axes[:-1, 0]:
        ax.set_xlabel("")
    fig.suptitle(title or f"Pool layouts: {plan.problem.name}, {plan.planner}")
    return fig
