"""The interactive plan explorer (experiments/plots/view.py, `memplan view`): self-contained HTML, one
rectangle per buffer, hover fields, violations flagged, and a real headless Chromium render."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("plotly")

from experiments.cli import main  # noqa: E402
from experiments.plots.view import RECTANGLES_META, plan_explorer, rectangle_count, write_html  # noqa: E402
from planners import Problem, lower_bound, plan  # noqa: E402


def _ex51():
    return Problem.from_closed([("T1", 0, 3, 100), ("T2", 1, 4, 200), ("T3", 2, 5, 150),
                                ("T4", 3, 6, 250), ("T5", 4, 7, 180)], name="ex5.1")


def _rects(fig):
    return [t for t in fig.data if t.meta == RECTANGLES_META]


def test_one_rectangle_per_buffer_and_geometry():
    p = _ex51()
    plans = {"first_fit": plan(p, "first_fit"), "best_fit": plan(p, "best_fit")}
    fig = plan_explorer(plans)
    assert rectangle_count(fig) == 2 * p.n
    for tr, pl in zip(_rects(fig), plans.values(), strict=True):
        # a rectangle spans [start, end) in x and [offset, offset + size) in y
        assert list(tr.base) == p.starts.tolist()
        assert (np.asarray(tr.base) + np.asarray(tr.x)).tolist() == p.ends.tolist()
        assert list(tr.y) == pl.offsets.tolist() and tr.offset == 0
        assert list(tr.width) == p.sizes.tolist()
    # the exercise's numbers in the panel titles: first fit 880 bytes, lower bound 780
    titles = [a.text for a in fig.layout.annotations]
    # arena, ratio to the lower bound and status (880 / 780 = 1.128; best fit meets the bound)
    assert "<b>first_fit</b>: arena 880 B, 1.128 x lower bound, heuristic, not proved optimal" \
        in titles, titles
    # a heuristic plan at the lower bound is optimal (the one rule), whatever its status says
    from planners import Plan

    exact = plan(p, "cpsat")
    at_bound = Plan(p, exact.offsets, planner="mine", status="heuristic", lower_bound=780)
    t2 = [a.text for a in plan_explorer({"mine": at_bound}).layout.annotations]
    assert "<b>mine</b>: arena 780 B, 1.000 x lower bound, optimal (= lower bound)" in t2, t2
    # live bytes and lower bound under each plan, on the same x axis as its rectangles; the
    # lower bound also in the layout panel above
    live = [t for t in fig.data if t.name == "live bytes"]
    assert len(live) == 2 and max(live[0].y) == lower_bound(p) == 780
    lb = [t for t in fig.data if t.name == "lower bound"]
    assert [list(t.y) for t in lb] == [[780, 780]] * 4
    assert {t.yaxis for t in lb} == {"y", "y2", "y3", "y4"}
    # all four time axes are linked to one (zoom and pan move every panel)
    axes = {k: fig.layout[k] for k in ("xaxis", "xaxis2", "xaxis3", "xaxis4")}
    assert len({ax.matches or k.replace("axis", "") for k, ax in axes.items()}) == 1


def test_hover_carries_fields_and_operators():
    from experiments.plots.view import operator_uses
    from experiments.workloads import load_graph
    from scheduling.lifetimes import problem_from_graph

    g = load_graph("seed000")
    p = problem_from_graph(g, list(g.ops))
    pl = plan(p, "greedy_by_size")
    fig = plan_explorer(pl, graph=g)
    (tr,) = _rects(fig)
    uses = operator_uses(g)
    assert len(tr.hovertext) == p.n
    for b, o, text in zip(p.buffers, pl.offsets.tolist(), tr.hovertext, strict=True):
        assert f"<b>{b.id}</b>" in text
        assert f"size: {b.size} bytes" in text
        assert f"lifetime: [{b.start}, {b.end}) steps" in text
        assert f"offset: {o} (bytes [{o}, {o + b.size}))" in text
        prod, cons = uses[b.id]
        assert f"producer: {prod or '-'}" in text
        assert f"consumers: {', '.join(cons) if cons else '-'}" in text


def test_html_is_self_contained(tmp_path):
    fig = plan_explorer(plan(_ex51(), "first_fit"))
    out = write_html(fig, tmp_path / "v.html")
    html = out.read_text()
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", html, re.I)
    assert not re.search(r"<link[^>]*href\s*=\s*[\"']?https?:", html, re.I)
    assert "Plotly.newPlot" in html and len(html) > 1_000_000  # plotly.js inlined


def test_cli_view_planners_side_by_side(tmp_path, capsys):
    out = tmp_path / "v.html"
    assert main(["view", "seed002_ex5.1", "--planner", "first_fit,cpsat", "-o", str(out)]) == 0
    assert "2 plan(s), 10 rectangles" in capsys.readouterr().out
    html = out.read_text()
    # the titles as the page's JSON holds them (HTML-escaped "<b>" around the name)
    assert re.search(r"first_fit\S{0,24}: arena 880 B", html)
    assert re.search(r"cpsat\S{0,24}: arena 780 B", html)


def test_capacity_line_and_verdict_in_the_title():
    """A plan whose arena exceeds the problem's capacity says so in its panel title and draws
    the capacity as a line (greedy_by_size's 1,352,704 B on a 1 MiB problem never said it)."""
    from planners import Plan

    p = _ex51()
    ff = plan(p, "first_fit")
    tight = Plan(p.with_capacity(800), ff.offsets, planner="first_fit", status="heuristic",
                 lower_bound=780)
    roomy = Plan(p.with_capacity(2**20), ff.offsets, planner="first_fit", status="heuristic",
                 lower_bound=780)
    fig = plan_explorer({"tight": tight, "roomy": roomy})
    titles = [a.text for a in fig.layout.annotations if a.text]
    assert any("DOES NOT FIT capacity 800 B (880 B > 800 B)" in t for t in titles if
               t.startswith("<b>tight</b>")), titles
    assert any("fits capacity 1.00 MiB (1,048,576 B)" in t for t in titles
               if t.startswith("<b>roomy</b>")), titles
    caps = [t for t in fig.data if t.name == "capacity"]
    assert [list(t.y) for t in caps] == [[800, 800], [2**20, 2**20]]
    assert sum(bool(t.showlegend) for t in caps) == 1  # one legend entry


def test_byte_axes_use_binary_units_and_step_axes_integers():
    import re as _re

    rng = np.random.default_rng(3)
    n = 60
    starts = rng.integers(0, 5000, n)
    p = Problem.from_arrays(starts, starts + rng.integers(1, 900, n),
                            rng.integers(2**14, 2**18, n), name="big")
    fig = plan_explorer(plan(p, "greedy_by_size"))
    for ax in (fig.layout.yaxis, fig.layout.yaxis2):
        labels = list(ax.ticktext)
        assert labels and labels[0] == "0"
        assert all(_re.fullmatch(r"\d+(\.\d+)? (B|KiB|MiB|GiB)", t) for t in labels[1:]), labels
    assert fig.layout.xaxis.tickformat == ",d"  # 1,000 steps, never SI "1k"


def test_violations_are_listed_on_the_page(tmp_path):
    from experiments.cli.view import load_view

    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size,offset\nA,0,2,100,0\nB,1,3,50,60\nC,2,4,100,200\n")
    plans, _, violations = load_view(str(bad), None)
    fig = plan_explorer(plans, violations=violations)
    notes = [a.text for a in fig.layout.annotations if a.text.startswith("violation:")]
    assert len(notes) == 1
    assert "given: buffers 'A' and 'B' are both live" in notes[0]


def test_cli_view_given_plan_valid_and_invalid(tmp_path, capsys):
    good = tmp_path / "p.csv"
    good.write_text("id,lower,upper,size,offset\nA,0,2,100,0\nB,1,3,50,100\nC,2,4,100,0\n")
    assert main(["view", str(good), "-o", str(tmp_path / "g.html")]) == 0
    assert "1 plan(s), 3 rectangles" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size,offset\nA,0,2,100,0\nB,1,3,50,60\nC,2,4,100,200\n")
    assert main(["view", str(bad), "-o", str(tmp_path / "b.html")]) == 1
    err = capsys.readouterr().err
    assert "memplan: invalid plan" in err and "1 violation(s)" in err
    html = (tmp_path / "b.html").read_text()
    assert "INVALID, 1 violation(s)" in html
    assert "violation: buffers 'A' and 'B' are both live" in html


def test_given_plan_drawn_as_given(tmp_path):
    from experiments.cli.view import load_view

    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size,offset\nA,0,2,100,0\nB,1,3,50,60\nC,2,4,100,200\n")
    plans, graph, violations = load_view(str(bad), None)
    assert list(plans) == ["given"] and graph is None
    assert plans["given"].offsets.tolist() == [0, 60, 200]
    assert [v.buffers for v in violations["given"]] == [("A", "B")]
    fig = plan_explorer(plans, violations=violations)
    (tr,) = _rects(fig)
    assert list(tr.marker.line.color) == [1, 1, 0]  # A and B outlined in red


def test_cli_view_bad_input(tmp_path, capsys):
    assert main(["view", "no_such_workload", "-o", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err.startswith("memplan: error:")
    assert main(["view", "seed002_ex5.1", "--planner", "nope", "-o",
                 str(tmp_path / "x.html")]) == 2


# -------------------------------------------------------------------------------------------
# A real browser: headless Chromium renders the file from file://
# -------------------------------------------------------------------------------------------

def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def _run_chromium(exe: str, profile: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}",
           "--virtual-time-budget=5000", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


def test_chromium_renders_every_rectangle(tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    rng = np.random.default_rng(7)
    n = 300
    starts = rng.integers(0, 200, n)
    p = Problem.from_arrays(starts, starts + rng.integers(1, 30, n), rng.integers(16, 2048, n),
                            name="random300")
    plans = {"greedy_by_size": plan(p, "greedy_by_size"), "first_fit": plan(p, "first_fit")}
    out = write_html(plan_explorer(plans), tmp_path / "view.html")
    url = out.resolve().as_uri()
    r = _run_chromium(exe, tmp_path / "profile1", url, "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    # plotly draws each bar as <g class="point"><path d=...></g> inside a "trace bars" layer;
    # the line traces draw no points
    assert dom.count('<g class="trace bars"') == 2
    assert dom.count('class="point"') == 2 * n
    png = tmp_path / "shot.png"
    r = _run_chromium(exe, tmp_path / "profile2", url, f"--screenshot={png}",
                      "--window-size=1200,800")
    assert png.is_file(), r.stderr[-2000:]
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    colours = np.unique((img[..., :3] * 255).round().astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50  # the palette, anti-aliased edges, text: not a blank page


def test_chromium_page_shows_capacity_units_violations_and_fills_the_window(tmp_path):
    """What a person sees in the browser: the capacity verdict and binary-unit ticks are on the
    page, the violations are listed as text, and the plot fills the window's height (it left
    40% blank at a fixed 720 px)."""
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    from experiments.cli.view import load_view

    bad = tmp_path / "bad.csv"
    rows = ["id,lower,upper,size,offset"] + [f"b{k},{k},{k + 3},{4096 * (k % 5 + 1)},"
                                             f"{(k % 4) * 8192}" for k in range(40)]
    bad.write_text("\n".join(rows) + "\n")
    plans, _, violations = load_view(str(bad), None)
    assert violations["given"]
    out = write_html(plan_explorer(plans, violations=violations), tmp_path / "v.html")
    probe = tmp_path / "probe.html"
    probe.write_text(out.read_text().replace(
        "</body>",
        "<script>setTimeout(function(){var g=document.getElementById('memplan-view');"
        "document.body.setAttribute('data-probe', g._fullLayout.height + ' ' + "
        "window.innerHeight);}, 1500);</script></body>"))
    r = _run_chromium(exe, tmp_path / "profile3", probe.resolve().as_uri(), "--dump-dom",
                      "--window-size=1400,1100")
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    m = re.search(r'data-probe="([\d.]+) (\d+)"', dom)
    assert m, "probe did not run"
    plot_h, window_h = float(m.group(1)), int(m.group(2))
    assert plot_h >= 0.9 * window_h, (plot_h, window_h)
    assert "KiB" in dom and "violation: given:" in dom and "INVALID" in dom
    assert not re.search(r">\d+(\.\d+)?[kM]<", dom)  # no SI tick labels such as 0.2M
