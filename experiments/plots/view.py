"""An interactive plan explorer: plans drawn as rectangles on time x address, in one HTML file.

:func:`plan_explorer` draws plans that someone else computed (it never plans): each buffer is a
rectangle spanning its half-open lifetime ``[start, end)`` (schedule steps, x) and its address
range ``[offset, offset + size)`` (bytes, y). Under each plan, on the same time axis, the live
bytes (:func:`planners.live_profile`, a step function) and the lower bound (max live bytes,
:func:`planners.lower_bound`) are drawn as lines. Two or more plans sit side by side with every
time axis and every address axis linked, so zooming or panning one panel moves the others.
Hovering a rectangle shows the buffer's id, size, lifetime and offset, and for graph workloads
the operator that produces the tensor and the operators that read it.

All rectangles of a plan are one Plotly bar trace (horizontal bars with per-bar ``base``,
length and thickness), so 10^4 buffers are one trace, not 10^4 traces. :func:`write_html` writes
a self-contained file: plotly.js is inlined (``include_plotlyjs=True``, about 4.7 MB), nothing is
fetched, and it opens offline from ``file://``.

Invalid plans (a ``PLAN.csv`` from another tool whose offsets break a rule of
:func:`planners.validate.plan_violations`) are drawn as given, with every buffer named in a
violation outlined in red, the violations listed in its hover text and the count in the panel
title; ``memplan view`` then exits with status 1, as ``memplan check`` does.

Example
-------
>>> from planners import Problem, plan
>>> p = Problem.from_closed([("a", 0, 1, 32), ("b", 1, 2, 16), ("c", 2, 3, 32)])
>>> fig = plan_explorer({"first_fit": plan(p, "first_fit")})
>>> rectangle_count(fig)
3
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from planners.bounds import live_profile, lower_bound
from planners.model import Plan

__all__ = ["plan_explorer", "write_html", "operator_uses", "rectangle_count",
           "RECTANGLES_META", "pool_plans", "pool_panels"]

#: ``trace.meta`` of the rectangle traces (how :func:`rectangle_count` and the browser test find
#: them).
RECTANGLES_META = "memplan-rectangles"

_PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C",
            "#CCB974", "#64B5CD", "#1B9E77")
_INVALID = "#D62728"
_LB = "#D62728"
_CAPACITY = "#E69F00"
#: :data:`_PALETTE` as a stepped colour scale for the values 0 .. len - 1.
_SCALE = [[min(1.0, (i + j) / len(_PALETTE)), c] for i, c in enumerate(_PALETTE) for j in (0, 1)]


def operator_uses(graph) -> dict[str, tuple[str | None, list[str]]]:
    """``{tensor: (producing operator or None, [consuming operators])}`` of a
    :class:`scheduling.graph.Graph`, in the graph's stored operator order. ``O(#operator
    arguments)``."""
    out: dict[str, tuple[str | None, list[str]]] = {}
    for name, op in graph.ops.items():
        for t in op.outputs:
            prod, cons = out.get(t, (None, []))
            out[t] = (name, cons)
        for t in op.inputs:
            prod, cons = out.get(t, (None, []))
            if not cons or cons[-1] != name:
                cons = [*cons, name]
            out[t] = (prod, cons)
    return out


def pool_plans(plan: Plan) -> list[tuple]:
    """The pools of a plan with memory pools (:attr:`planners.Plan.pools`) as one-arena plans:
    ``[(MemoryPool, Plan), ...]`` in the problem's pool order, each plan holding that pool's
    buffers at their offsets (relative to the pool's base; the problem of
    :func:`planners.multipool.pool_subproblem`, no capacity: the pool's is in the
    :class:`~planners.model.MemoryPool`), the plan's status and the pool's own lower bound (max
    live bytes of its buffers). ``[]`` for a plan without pools. O(n log n) per pool."""
    from planners.model import pool_subproblem

    if plan.pools is None or not plan.problem.pools:
        return []
    out = []
    for k, q in enumerate(plan.problem.pools):
        sub, idx = pool_subproblem(plan.problem, plan.pools, k, None)
        out.append((q, Plan(sub, plan.offsets[idx], planner=plan.planner, status=plan.status,
                            lower_bound=lower_bound(sub), info=dict(plan.info))))
    return out


def pool_panels(label: str, plan: Plan, out: dict) -> None:
    """Put ``plan`` into ``out`` under ``label``, or, for a plan with pools, one panel per pool
    (:func:`pool_plans`) labelled ``LABEL: POOL (capacity C B)`` (``unbounded`` without a
    capacity): what ``memplan view`` draws, one address space per pool."""
    per_pool = pool_plans(plan)
    if not per_pool:
        out[label] = plan
        return
    for q, sub in per_pool:
        cap = "unbounded" if q.capacity is None else f"capacity {q.capacity} B"
        out[f"{label}: {q.name} ({cap})"] = sub


def _as_plans(plans) -> dict[str, Plan]:
    if isinstance(plans, Plan):
        return {plans.planner: plans}
    if isinstance(plans, Mapping):
        out = dict(plans)
    else:
        out = {}
        for p in plans:
            key, k = p.planner, 1
            while key in out:
                k += 1
                key = f"{p.planner} ({k})"
            out[key] = p
    if not out:
        raise ValueError("plan_explorer needs at least one plan")
    for k, p in out.items():
        if not isinstance(p, Plan):
            raise TypeError(f"plan {k!r} is a {type(p).__name__}, not a planners.Plan")
        if p.offsets.shape != (p.problem.n,):
            raise ValueError(f"plan {k!r} has no offsets (status {p.status!r}); nothing to draw")
    return out


def _names(items: Sequence[str], limit: int = 6) -> str:
    from experiments.safe import html_text

    if not items:
        return "-"
    head = ", ".join(html_text(x, quote=False) for x in items[:limit])
    return head + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _hover(plan: Plan, uses, flagged: Mapping[str, list[str]]) -> list[str]:
    """Each buffer's hover text (plotly's HTML subset); every name from the input (buffer ids,
    kinds, operators, messages) through :func:`experiments.safe.html_text`."""
    from experiments.safe import html_text

    p = plan.problem
    offs = plan.offsets.tolist()
    texts = []
    for b, o in zip(p.buffers, offs, strict=True):
        lines = [f"<b>{html_text(b.id, quote=False)}</b>", f"size: {b.size} bytes",
                 f"lifetime: [{b.start}, {b.end}) steps",
                 f"offset: {o} (bytes [{o}, {o + b.size}))"]
        if b.kind and b.kind != "activation":
            lines.append(f"kind: {html_text(b.kind, quote=False)}")
        if uses is not None:
            prod, cons = uses.get(b.id, (None, []))
            lines.append(f"producer: {html_text(prod, quote=False) if prod else '-'}")
            lines.append(f"consumers: {_names(cons)}")
        for msg in flagged.get(b.id, [])[:4]:
            lines.append(f"<span style='color:{_INVALID}'>violation: "
                         f"{html_text(msg, quote=False)}</span>")
        texts.append("<br>".join(lines))
    return texts


def _byte_ticks(top: float) -> tuple[list[float], list[str]]:
    """Tick values and binary-unit labels (``"0"``, ``"256 KiB"``, ``"1.25 MiB"``) for a byte axis
    from 0 to ``top`` bytes, as in every matplotlib figure
    (:class:`experiments.plots.ticks.BinaryByteLocator` / ``BinaryByteFormatter``)."""
    from experiments.plots.ticks import BinaryByteFormatter, BinaryByteLocator

    vals = [float(v) for v in BinaryByteLocator(6).tick_values(0.0, max(float(top), 1.0))]
    return vals, BinaryByteFormatter().format_ticks(vals)


def _status_text(pl: Plan, lb: int) -> str:
    """The plan's status by the one rule: an arena equal to the lower bound is optimal (no plan
    is smaller), whatever the planner reported. A plan read from a file (``info["as_read"]``)
    was not planned here: it claims no status."""
    if pl.info.get("as_read"):
        return "as read (nothing planned)"
    if int(pl.arena_size) == int(lb):
        return "optimal (= lower bound)"
    return {"optimal": "optimal (proved)", "heuristic": "heuristic, not proved optimal",
            "feasible": "feasible, not proved optimal"}.get(pl.status, pl.status)


def _panel_title(label: str, pl: Plan, lb: int, bad: int) -> str:
    """Two lines: arena (binary units and bytes), ratio to the lower bound and status; then the
    capacity verdict and the violation count."""
    from experiments.plots.units import format_bytes
    from experiments.safe import html_text

    arena = int(pl.arena_size)
    if pl.info.get("as_read") and label.startswith("given"):  # titled as read: from FILE
        label = f"from {pl.info.get('source')}" + label[len("given"):]
    ratio = f"{arena / lb:.3f} x lower bound" if lb else "lower bound 0"
    exact = f" ({arena:,} B)" if arena >= 1024 else ""
    line1 = (f"<b>{html_text(label, quote=False)}</b>: arena {format_bytes(arena)}{exact}, "
             f"{ratio}, {_status_text(pl, lb)}")
    parts = []
    cap = pl.problem.capacity
    if cap is not None:
        parts.append(f"fits capacity {format_bytes(cap)} ({int(cap):,} B)" if arena <= cap else
                     f"<span style='color:{_INVALID}'>DOES NOT FIT capacity {format_bytes(cap)} "
                     f"({arena:,} B > {int(cap):,} B)</span>")
    if bad:
        parts.append(f"<span style='color:{_INVALID}'>INVALID, {bad} violation(s)</span>")
    return line1 + ("<br>" + "; ".join(parts) if parts else "")


def plan_explorer(plans, graph=None, violations: Mapping[str, Sequence] | None = None,
                  title: str | None = None, height: int | None = 720):
    """An interactive figure of one or more plans (module docstring): rectangles on time x
    address above the live bytes and the lower bound, plans side by side on linked axes.

    Parameters
    ----------
    plans : Plan, sequence of Plan, or mapping label -> Plan
        Plans with offsets (a ``timeout``/``skipped`` plan has none: ``ValueError``). They are
        drawn, never recomputed; usually plans of one problem by several planners.
    graph : scheduling.graph.Graph, optional
        The graph whose tensors the buffer ids name: adds the producing and consuming operators
        to each hover text (:func:`operator_uses`).
    violations : mapping label -> sequence of planners.validate.Violation, optional
        Violations of a plan (:func:`planners.validate.plan_violations`): each buffer named in
        one is outlined in red, its hover text lists the messages, and the first 12 are listed
        on the page under the panels.
    title : str, optional
    height : int or None
        Figure height in pixels (``None``: the page's, see :func:`write_html`).

    Returns
    -------
    plotly.graph_objects.Figure
        Per plan one bar trace of ``problem.n`` rectangles (``meta`` :data:`RECTANGLES_META`), an
        arena line, the lower bound and (when the problem has one) the capacity in the layout
        panel, and a live-bytes step line with the lower bound below. Each panel title gives the
        arena in binary units and bytes, its ratio to the lower bound, its status (an arena at
        the lower bound is optimal), whether it fits the capacity and the violation count. Byte
        axes are labelled in KiB/MiB as every other figure (never SI "M"), step axes as integers.

    Notes
    -----
    ``O(n log n)`` per plan (the live profile) plus ``O(n)`` hover strings. Measured at 10^4
    random buffers (one plan, 2 shared cores): the figure builds in 0.45 s, :func:`write_html`
    takes 0.3 s and writes 6.7 MB (4.8 MB of it plotly.js); a full redraw in headless Chromium
    with software rendering takes about 2.5 s (a single filled-scatter path of the same
    rectangles with hover markers measured 2.2 s, so the bars stay). Colours are numbers on a
    discrete colour scale: plotly validates numeric arrays at once but lists of colour strings
    one by one (8 s at 2 x 10^4 buffers). Requires ``plotly``.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    plans = _as_plans(plans)
    violations = dict(violations or {})
    uses = operator_uses(graph) if graph is not None else None
    k = len(plans)
    titles = []
    for label, pl in plans.items():
        bad = len(violations.get(label) or ())
        titles.append(_panel_title(label, pl, int(lower_bound(pl.problem)), bad))
    fig = make_subplots(rows=2, cols=k, shared_xaxes="all", shared_yaxes="rows",
                        row_heights=[0.74, 0.26], vertical_spacing=0.07,
                        horizontal_spacing=0.04 if k > 1 else 0.02,
                        subplot_titles=titles + [""] * k)
    top = 1
    capacity_shown = False
    listed: list[str] = []
    for c, (label, pl) in enumerate(plans.items(), start=1):
        p = pl.problem
        flagged: dict[str, list[str]] = {}
        for v in violations.get(label) or ():
            listed.append(f"{label}: {v.message}")
            for bid in v.buffers:
                flagged.setdefault(bid, []).append(v.message)
        starts, ends, sizes = p.starts, p.ends, p.sizes
        # numeric colours through discrete colour scales: plotly validates numpy arrays at
        # once, lists of colour strings one by one (seconds at 10^4 buffers)
        bad = np.array([b.id in flagged for b in p.buffers], dtype=np.int8)
        line = (dict(color=bad, colorscale=[[0, "rgba(0,0,0,0.55)"], [1, _INVALID]], cmin=0,
                     cmax=1, width=np.where(bad == 1, 2.5, 0.5)) if bad.any()
                else dict(color="rgba(0,0,0,0.55)", width=0.5))
        fig.add_trace(go.Bar(
            orientation="h", base=starts, x=ends - starts, y=pl.offsets, width=sizes,
            offset=0, marker=dict(color=np.arange(p.n) % len(_PALETTE), colorscale=_SCALE,
                                  cmin=-0.5, cmax=len(_PALETTE) - 0.5, line=line),
            hovertext=_hover(pl, uses, flagged), hoverinfo="text", name=_html_title(label),
            meta=RECTANGLES_META,
            showlegend=False), row=1, col=c)
        arena = int(pl.arena_size)
        lb = int(lower_bound(p))
        cap = p.capacity
        horizon = [int(starts.min()), int(ends.max())] if p.n else [0, 1]
        fig.add_trace(go.Scatter(x=horizon, y=[arena, arena], mode="lines", name="arena",
                                 line=dict(color="black", dash="dot", width=1.5),
                                 hovertemplate=f"arena: {arena:,} bytes<extra></extra>",
                                 showlegend=c == 1, legendgroup="arena"), row=1, col=c)
        fig.add_trace(go.Scatter(x=horizon, y=[lb, lb], mode="lines", name="lower bound",
                                 line=dict(color=_LB, dash="dash", width=1.5),
                                 hovertemplate=f"lower bound: {lb:,} bytes<extra></extra>",
                                 showlegend=c == 1, legendgroup="lb"), row=1, col=c)
        if cap is not None:
            fig.add_trace(go.Scatter(x=horizon, y=[cap, cap], mode="lines", name="capacity",
                                     line=dict(color=_CAPACITY, dash="dashdot", width=2),
                                     hovertemplate=f"capacity: {int(cap):,} bytes<extra></extra>",
                                     showlegend=not capacity_shown, legendgroup="cap"),
                          row=1, col=c)
            capacity_shown = True
        times, live = live_profile(p)
        fig.add_trace(go.Scatter(x=times, y=live, mode="lines", line_shape="hv", name="live bytes",
                                 line=dict(color="#4C72B0", width=1.5), fill="tozeroy",
                                 hovertemplate="step %{x}: %{y:,} bytes live<extra></extra>",
                                 showlegend=c == 1, legendgroup="live"), row=2, col=c)
        fig.add_trace(go.Scatter(x=horizon, y=[lb, lb], mode="lines", name="lower bound",
                                 line=dict(color=_LB, dash="dash", width=1.5),
                                 hovertemplate=f"lower bound: {lb:,} bytes<extra></extra>",
                                 showlegend=False, legendgroup="lb"), row=2, col=c)
        fig.update_xaxes(title_text="schedule step", row=2, col=c)
        top = max(top, arena, lb, int(cap) if cap is not None and cap <= 4 * max(arena, 1)
                  else 0)
    vals, text = _byte_ticks(top * 1.04)
    fig.update_yaxes(tickvals=vals, ticktext=text, range=[0, top * 1.04], row=1)
    live_top = max([int(lower_bound(pl.problem)) for pl in plans.values()] + [1]) * 1.08
    lvals, ltext = _byte_ticks(live_top)
    fig.update_yaxes(tickvals=lvals, ticktext=ltext, range=[0, live_top], row=2)
    span = max((int(pl.problem.horizon or 1) for pl in plans.values()), default=1)
    # integer steps with thousands separators (never SI "1k"); one tick per step on short runs
    fig.update_xaxes(tickformat=",d", **({"dtick": 1} if span <= 20 else {}))
    fig.update_yaxes(title_text="address (offset in the arena)", row=1, col=1)
    fig.update_yaxes(title_text="live bytes", row=2, col=1)
    bottom = 60
    if listed:
        shown = listed[:12]
        more = len(listed) - len(shown)
        from experiments.safe import html_text

        note = "<br>".join(f"violation: {html_text(m, quote=False)}" for m in shown) + (
            f"<br>... and {more} more (memplan check lists them all)" if more else "")
        fig.add_annotation(text=note, xref="paper", yref="paper", x=0, y=0, xanchor="left",
                           yanchor="top", yshift=-45, showarrow=False, align="left",
                           font=dict(color=_INVALID, size=12))
        bottom += 18 * (len(shown) + (1 if more else 0))
    fig.update_layout(barmode="overlay", bargap=0, height=height, hovermode="closest",
                      dragmode="zoom", template="plotly_white",
                      title=None if title is None else _html_title(title),
                      legend=dict(orientation="h", yanchor="bottom", y=1.06, x=1, xanchor="right"),
                      margin=dict(l=80, r=20, t=110, b=bottom))
    return fig


def _html_title(title: str) -> str:
    """The page title as plotly text: escaped (:func:`experiments.safe.html_text`), a
    newline as ``<br>``."""
    from experiments.safe import html_text

    return "<br>".join(html_text(line, quote=False) for line in str(title).splitlines())


def rectangle_count(fig) -> int:
    """Number of buffer rectangles in a :func:`plan_explorer` figure, counted from its data (the
    bars of every trace whose ``meta`` is :data:`RECTANGLES_META`)."""
    return sum(len(t.base) for t in fig.data if getattr(t, "meta", None) == RECTANGLES_META)


def write_html(fig, path: str | Path) -> Path:
    """Write ``fig`` as one self-contained HTML file (plotly.js inlined, no network access when
    opened; scroll zoom on) and return its path. The figure fills the browser window (its fixed
    height is dropped; the plot is the window's height, at least 600 px, and follows resizes).
    Written atomically (:func:`planners.io.atomic_write`; :class:`~planners.errors.OutputError`
    naming the path and the cause on a full disk, a read-only file system or a missing parent
    folder)."""
    import plotly.graph_objects as go

    path = Path(path)
    fig = go.Figure(fig)  # a copy: the caller's figure keeps its height
    fig.update_layout(height=None, autosize=True)
    html = fig.to_html(include_plotlyjs=True, full_html=True, include_mathjax=False,
                       config={"scrollZoom": True, "displaylogo": False, "responsive": True},
                       div_id="memplan-view", default_height="max(600px, 97vh)",
                       default_width="100%")
    from planners.io import atomic_write

    atomic_write(path, html)
    return path

