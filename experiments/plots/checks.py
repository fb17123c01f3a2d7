"""What a reviewer checks in a drawn figure, measured on the rendered artists.

* :func:`text_overlaps` -- pairs of visible texts whose drawn boxes overlap (a rotated text is
  its rotated rectangle, not the axis-aligned box around it, so 45-degree tick labels side by
  side are not reported unless their glyph boxes cross);
* :func:`clipped_artists` -- markers (scatter points, line markers) and data texts that the axes
  frame cuts: a marker whose disc reaches beyond the axes box, or lies outside the view;
* :func:`layout_faults` -- both, as one dict (recorded by :func:`experiments.plots.save` inside
  :func:`experiments.plots.recording`, asserted empty by ``tests/test_figure_style.py``).

Extents are display pixels of the figure's canvas renderer after a draw
(``fig.canvas.get_renderer()``, matplotlib's ``Artist.get_window_extent``). Imports matplotlib
and numpy only.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["text_overlaps", "clipped_artists", "layout_faults", "OVERLAP_PX"]

#: Pixels two text boxes may share (anti-aliasing, the ascent of one line touching the
#: descent of the next) before they count as overlapping.
OVERLAP_PX = 1.0


def _texts(fig):
    """The visible, non-empty texts of ``fig`` that are drawn (a clipped data label outside its
    axes' view is not)."""
    from matplotlib.text import Text

    ticks, drawn = set(), set()  # tick labels: only those of the ticks the axis draws
    for ax in fig.axes:
        for axis in ax._axis_map.values():
            for tk in [*axis.majorTicks, *axis.minorTicks]:
                ticks.update((id(tk.label1), id(tk.label2)))
            if ax.get_visible() and axis.get_visible():
                for tk in axis._update_ticks():
                    drawn.update((id(tk.label1), id(tk.label2)))
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        if id(t) in ticks and id(t) not in drawn:
            continue
        ax = t.axes
        if ax is not None and t.get_clip_on() and t.get_transform() == ax.transData:
            x, y = (ax.transData + ax.transAxes.inverted()).transform(t.get_position())
            if not (-1e-9 <= x <= 1 + 1e-9 and -1e-9 <= y <= 1 + 1e-9):
                continue
        out.append(t)
    return out


def _polygon(t, renderer) -> np.ndarray:
    """The 4 corners (display px) of text ``t``'s box: its unrotated extent turned by its
    rotation about the centre of its drawn (axis-aligned) extent, which is where matplotlib
    puts the rotated box (rotation_mode "default" and "anchor" alike keep it centred there)."""
    ext = t.get_window_extent(renderer)
    angle = t.get_rotation() % 180.0
    if angle in (0.0, 90.0):
        return np.array([[ext.x0, ext.y0], [ext.x1, ext.y0], [ext.x1, ext.y1], [ext.x0, ext.y1]])
    rot = t.get_rotation()
    t.set_rotation(0.0)
    try:
        flat = t.get_window_extent(renderer)
    finally:
        t.set_rotation(rot)
    w, h = flat.width, flat.height
    a = math.radians(angle)
    c, s = math.cos(a), math.sin(a)
    cx, cy = (ext.x0 + ext.x1) / 2, (ext.y0 + ext.y1) / 2
    corners = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    return corners @ np.array([[c, s], [-s, c]]) + [cx, cy]


def _depth(p: np.ndarray, q: np.ndarray) -> float:
    """How deep convex polygons ``p`` and ``q`` overlap (px): the smallest overlap of their
    projections over the edge normals of both (separating axis theorem); <= 0 when apart."""
    best = math.inf
    for poly in (p, q):
        for k in range(len(poly)):
            e = poly[(k + 1) % len(poly)] - poly[k]
            n = np.array([-e[1], e[0]])
            norm = math.hypot(*n)
            if norm == 0:
                continue
            n = n / norm
            a, b = p @ n, q @ n
            best = min(best, min(a.max(), b.max()) - max(a.min(), b.min()))
    return best


def text_overlaps(fig, tol: float = OVERLAP_PX) -> list[tuple[str, str]]:
    """Pairs ``(text a, text b)`` of visible texts of ``fig`` whose boxes overlap by more than
    ``tol`` pixels (display px at the figure's dpi). Draws the figure first. O(n^2) for n texts
    after an O(n log n) sweep on the boxes' x ranges."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    items = []
    for t in _texts(fig):
        poly = _polygon(t, renderer)
        items.append((poly[:, 0].min(), poly[:, 0].max(), poly, t.get_text()))
    items.sort(key=lambda r: r[0])
    out = []
    for i, (_x0, x1, p, a) in enumerate(items):
        for y0, _y1, q, b in items[i + 1:]:
            if y0 > x1 - tol:
                break
            if _depth(p, q) > tol:
                out.append((a, b))
    return out


def _marker_radius_px(size_pt: float, fig) -> float:
    return size_pt / 2 * fig.dpi / 72.0


def clipped_artists(fig, tol: float = 0.5) -> list[str]:
    """What the frame of an axes cuts in ``fig``: for every visible scatter collection and
    marker line of every visible axes, each marker whose disc (radius from its size in points)
    reaches beyond the axes box by more than ``tol`` px or lies outside the view; for data
    texts (``transData``), each one whose box reaches beyond the axes box. One line per
    artist naming the axes title, the label and the count. Draws the figure first."""
    from matplotlib.collections import PathCollection

    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        box = ax.bbox
        where = ax.get_title() or ax.get_ylabel() or "axes"

        def outside(xy: np.ndarray, r: np.ndarray, box=box) -> int:
            bad = ((xy[:, 0] - r < box.x0 - tol) | (xy[:, 0] + r > box.x1 + tol)
                   | (xy[:, 1] - r < box.y0 - tol) | (xy[:, 1] + r > box.y1 + tol)
                   | ~np.isfinite(xy).all(axis=1))
            return int(bad.sum())

        for c in ax.collections:
            if not isinstance(c, PathCollection) or not c.get_visible():
                continue
            offs = np.asarray(c.get_offsets(), dtype=float)
            if not len(offs):
                continue
            fin = np.isfinite(offs).all(axis=1)
            xy = c.get_offset_transform().transform(offs[fin])
            sizes = np.broadcast_to(np.asarray(c.get_sizes(), float) if len(c.get_sizes())
                                    else np.array([36.0]), (len(offs),))[fin]
            n = outside(xy, _marker_radius_px(np.sqrt(sizes), fig))
            if n:
                out.append(f"{where}: {n} of {len(offs)} markers of {c.get_label()!r} cut")
        for ln in ax.lines:
            if (not ln.get_visible() or ln.get_marker() in (None, "", "None", " ")
                    or not len(ln.get_xdata())):
                continue
            xy = np.column_stack([np.asarray(ln.get_xdata(), float),
                                  np.asarray(ln.get_ydata(), float)])
            xy = xy[np.isfinite(xy).all(axis=1)]
            if not len(xy):
                continue
            xy = ln.get_transform().transform(xy)
            n = outside(xy, np.full(len(xy), _marker_radius_px(ln.get_markersize(), fig)))
            if n:
                out.append(f"{where}: {n} of {len(xy)} markers of {ln.get_label()!r} cut")
        for t in ax.texts:
            if not t.get_visible() or not t.get_text().strip() or t.get_transform() != ax.transData:
                continue
            e = t.get_window_extent(renderer)
            if (e.x0 < box.x0 - tol or e.x1 > box.x1 + tol or e.y0 < box.y0 - tol
                    or e.y1 > box.y1 + tol):
                out.append(f"{where}: text {t.get_text()!r} cut by the frame")
    return out


def layout_faults(fig) -> dict[str, list]:
    """``{"overlaps": text_overlaps(fig), "clipped": clipped_artists(fig)}``."""
    return {"overlaps": text_overlaps(fig), "clipped": clipped_artists(fig)}
