"""The print rules of every committed figure (issue 27, point 7).

* every PNG under ``results/figures/`` is written at >= :data:`experiments.plots.MIN_DPI` dpi
  (its pHYs metadata) and its pixel width agrees with that dpi and a column width;
* every figure ``make figures`` draws (:func:`experiments.bench.figures.redraw` from a copy of the
  committed records, with :func:`experiments.plots.recording` hooked into ``save``) has no text
  below :data:`experiments.plots.MIN_TEXT_PT` once scaled to the column it is printed in (3.5 in
  single, 7.16 in double; never enlarged), labels every log axis "log", and is at most one double
  column wide;
* no text is cut off at the edge of a file saved at the figure's exact size;
* a hollow marker means "not proved optimal" wherever one is drawn;
* the same figures redrawn in the paper style are exactly 3.5 or 7.16 in wide, same text rule;
* the set of committed figures is exactly what ``make figures`` writes (no stale file).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import shared_path

from experiments import plots

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
FIGURES = RESULTS / "figures"
COLUMNS = (3.5, 7.16)  # inches: IEEE/ACM single and double column


def _committed_pngs() -> list[Path]:
    return sorted(FIGURES.glob("*.png")) if FIGURES.is_dir() else []


def _printed_size(points: float, width_in: float) -> float:
    """Text size once the figure is scaled to its column (a figure is never enlarged)."""
    column = COLUMNS[0] if width_in <= COLUMNS[0] + 1e-6 else COLUMNS[1]
    return points * min(1.0, column / width_in)


def test_every_committed_png_has_print_resolution():
    from PIL import Image

    pngs = _committed_pngs()
    if not pngs:
        pytest.skip("no committed figures under results/figures")
    low = []
    for f in pngs:
        with Image.open(f) as im:
            dpi = im.info.get("dpi", (72, 72))[0]
            width_in = im.size[0] / dpi
        if dpi < plots.MIN_DPI - 0.5 or width_in > COLUMNS[1] + 0.01:
            low.append((f.name, round(dpi), round(width_in, 2)))
    assert not low, f"PNG below {plots.MIN_DPI} dpi or wider than 7.16 in: {low}"


def _need_records() -> None:
    """Skip unless results/ holds the comparison and every benchmark its stored problems
    reference (the MiniMalloc problems are read from ../shared, never copied)."""
    if not (RESULTS / "compare.csv").is_file():
        pytest.skip("results/ lacks compare.csv")
    if any((RESULTS / "problems").glob("*.ref")):
        shared_path("benchmarks", "minimalloc")


def _copy_records(dst: Path) -> None:
    for n in RESULTS.iterdir():
        if n.name in ("figures", "sweeps"):
            continue
        (shutil.copytree if n.is_dir() else shutil.copy)(n, dst / n.name)


@pytest.fixture(scope="module")
def redrawn(tmp_path_factory):
    _need_records()
    from experiments.bench.figures import redraw

    tmp = tmp_path_factory.mktemp("results")
    _copy_records(tmp)
    with plots.recording() as log:
        written = redraw(tmp, sweeps=False, report=lambda line: None)
    return tmp, written, log


def _violations(log: list[dict]) -> list[tuple]:
    bad = []
    for r in log:
        w = r["width_in"]
        if w > COLUMNS[1] + 0.01:
            bad.append((r["path"].name, "wider than 7.16 in", round(w, 2)))
        small = [(t[:24], s) for t, s in r["texts"] if _printed_size(s, w) < plots.MIN_TEXT_PT - 1e-6]
        if small:
            bad.append((r["path"].name, "text below 7 pt", small[:3]))
        unmarked = [(lab, a) for lab, a in r["log_axes"] if "log" not in lab.lower()]
        if unmarked:
            bad.append((r["path"].name, "log axis without 'log' in its label", unmarked))
        if r["cut"]:
            bad.append((r["path"].name, "text cut off at the figure's edge", r["cut"][:3]))
        if r["dpi"] < plots.MIN_DPI:
            bad.append((r["path"].name, "dpi", r["dpi"]))
    return bad


def test_make_figures_draws_every_figure_by_the_print_rules(redrawn):
    tmp, written, log = redrawn
    names = {r["path"].name for r in log}
    # the groups of figures make figures draws (compare and each benchmark's)
    assert {"ratio_heatmap", "ratio_by_planner", "sched_peaks", "budget_vs_overhead",
            "bench_anytime", "bench_scale", "rv64_cycles_vs_buffers"} <= names, sorted(names)
    figures = [p for p in written if p.suffix != ".md"]  # compare.md is rewritten too
    assert len(log) * 2 == len(figures)  # one record per figure, PNG + PDF each
    assert _violations(log) == []


def test_a_hollow_marker_means_not_proved_optimal_in_every_figure(redrawn):
    """One meaning per glyph: a figure that draws hollow markers says in its legend that they
    are results not proved optimal (they meant three things before: not proved, too fast to
    time, ONNX models)."""
    tmp, written, log = redrawn
    hollow = {r["path"].name: r for r in log if r["hollow_markers"]}
    assert "ratio_by_planner" in hollow  # the planners' unproved results
    for name, r in hollow.items():
        assert any("not proved" in t for t, _ in r["texts"]), name


def test_committed_figures_are_exactly_what_make_figures_writes(redrawn):
    """No stale file: ``results/figures`` holds the files ``make figures`` writes and no more
    (``make figures`` was run after the last change to a figure)."""
    tmp, written, log = redrawn
    if not FIGURES.is_dir():
        pytest.skip("no committed figures")
    expected = sorted(p.name for p in written if p.parent == tmp / "figures")
    assert sorted(p.name for p in FIGURES.iterdir()) == expected


def test_paper_style_figures_are_column_wide_with_readable_text(tmp_path):
    _need_records()
    from experiments.report.figures import figures_from_folder

    _copy_records(tmp_path)
    with plots.style("paper"), plots.recording() as log:
        figures_from_folder(tmp_path, tmp_path / "paper")
    assert log and all(any(abs(r["width_in"] - c) < 0.01 for c in COLUMNS) for r in log), \
        [(r["path"].name, r["width_in"]) for r in log]
    assert _violations(log) == []


def test_the_rules_catch_a_small_font_a_wide_figure_and_an_unmarked_log_axis(tmp_path):
    """The checks can fail: a 5 pt label, a 10 in wide figure and a log axis labelled "seconds"
    are each reported."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3))
    ax.plot([1, 10, 100], [1, 2, 3])
    ax.set_xscale("log")
    ax.set_xlabel("seconds")
    ax.text(0.5, 0.5, "tiny", fontsize=5, transform=ax.transAxes)
    with plots.recording() as log:
        plots.save(fig, tmp_path / "bad", formats=("png",))
    kinds = {b[1] for b in _violations(log)}
    assert kinds == {"wider than 7.16 in", "text below 7 pt",
                     "log axis without 'log' in its label"}
    fig, ax = plt.subplots(figsize=(7.16, 3))
    ax.plot([0, 1], [0, 1], label="a series")
    fig.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))  # beyond the right edge
    with plots.recording() as log:
        plots.save(fig, tmp_path / "cut", formats=("png",))
    assert {b[1] for b in _violations(log)} == {"text cut off at the figure's edge"}
