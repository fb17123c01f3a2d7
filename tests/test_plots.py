"""Tests of the figure helpers and figures (experiments/plots/style.py, plots/sched.py,
compare_figures.py): byte-axis ticks, byte strings, distinct series styles, deterministic files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from experiments import plots
from experiments.plots.sched import plot_sched_peaks, plot_schedule_curves
from experiments.report.figures import most_different_workload
from planners import Buffer, Plan, Problem, live_profile
from planners.examples import seed000_problem
from scheduling.lifetimes import lifetime_problem

KIB, MIB = 2**10, 2**20


@pytest.mark.parametrize(
    "x, text",
    [(0, "0 B"), (1023, "1023 B"), (1015 * KIB, "1015 KiB"), (1039360, "1015 KiB"),
     (int(0.99 * MIB) // KIB * KIB, "1013 KiB"), (1536 * KIB, "1.50 MiB"),
     (int(19.5 * KIB), "19.5 KiB"), (5 * 2**30, "5.00 GiB")],
)
def test_format_bytes_strings(x, text):
    assert plots.format_bytes(x) == text
    assert "e+" not in plots.format_bytes(x)


def test_byte_locator_examples_from_the_review():
    loc = plots.BinaryByteLocator(nbins=6)
    assert loc.tick_values(0, 6.2 * MIB).tolist() == [k * MIB for k in range(7)]
    # 0..1.6 MiB: quarter-MiB steps (multiples of 256 KiB), never 977 KiB / 1.91 MiB
    assert loc.tick_values(0, 1.6 * MIB).tolist() == [k * 256 * KIB for k in range(7)]
    fmt = plots.BinaryByteFormatter()
    assert fmt.format_ticks(loc.tick_values(0, 1.6 * MIB)) == [
        "0", "0.25 MiB", "0.50 MiB", "0.75 MiB", "1.00 MiB", "1.25 MiB", "1.50 MiB"]
    assert fmt.format_ticks(loc.tick_values(0, 1015 * KIB)) == [
        "0", "200 KiB", "400 KiB", "600 KiB", "800 KiB", "1000 KiB"]


@settings(max_examples=examples(150), deadline=None)
@given(lo=st.integers(0, 2**40), span=st.integers(1, 2**40), nbins=st.integers(3, 9))
@example(lo=251_576_081_153, span=255, nbins=3)  # a short span far from 0: 3 decimals of KiB
@example(lo=1_073_741_817, span=7, nbins=3)  # just below 1 GiB: labelled in bytes, not "1.000 GiB"
@example(lo=0, span=10_737_418_235, nbins=3)  # no tick above the view
def test_byte_ticks_are_multiples_of_a_binary_unit(lo, span, nbins):
    ticks = plots.BinaryByteLocator(nbins).tick_values(lo, lo + span)
    assert len(ticks) >= 1
    assert len(ticks) <= nbins + 1
    assert np.all((ticks >= lo - 1e-6) & (ticks <= lo + span + 1e-6))
    steps = np.diff(ticks)
    if len(steps):
        assert np.allclose(steps, steps[0])  # evenly spaced
        # the step is 1, 2 or 5 x 10^k units or 1/8, 1/4, 1/2 of a binary unit (B, KiB, MiB ...)
        step = float(steps[0])
        ok_ratios = {0.125, 0.25, 0.5} | {m * 10**k for m in (1, 2, 5) for k in range(13)}
        units = [u for _, u in plots.BINARY_UNITS
                 if any(abs(step / u - r) < 1e-9 * r for r in ok_ratios)]
        assert units, step
        unit = max(units)
        # every tick is an integer multiple of 1/8 of that unit
        assert np.allclose(ticks * 8 / unit, np.round(ticks * 8 / unit))
    labels = plots.BinaryByteFormatter().format_ticks(ticks)
    assert all("e" not in s.split()[0] for s in labels)  # no exponent anywhere
    assert len(set(labels)) == len(labels)  # distinct ticks get distinct labels


def test_distinct_styles_for_19_workloads_and_up_to_88():
    styles = plots.distinct_styles(19)
    assert len(set(styles)) == 19
    assert len(set(plots.distinct_styles(88))) == 88
    assert len({c for c, _ in styles[:8]}) == 8  # any 8 consecutive series differ in colour


def test_ratio_by_planner_says_each_planner_s_coverage():
    # a planner with plans on 11 of 19 workloads, all at the bound, is not drawn as all perfect
    rows = [{"workload": f"w{k}", "planner": "greedy_by_size", "ratio": 1.1, "valid": True,
             "status": "heuristic"} for k in range(19)]
    rows += [{"workload": f"w{k}", "planner": "milp_offsets", "ratio": 1.0 if k < 11 else
              float("nan"), "valid": k < 11, "status": "optimal" if k < 11 else "timeout"}
             for k in range(19)]
    ax = plots.plot_ratio_by_planner(pd.DataFrame(rows))
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == [
        "greedy_by_size (19/19)", "milp_offsets (11/19)"]


def test_ratio_by_planner_colours_by_family_and_fills_only_proved_optima():
    from experiments.harness import planner_family

    rows = [{"workload": f"w{k}", "planner": p, "family": planner_family(p),
             "ratio": 1.0 + 0.1 * (k % 3) * (j + 1),
             "valid": True, "status": "optimal" if p == "cpsat" else "heuristic"}
            for k in range(19) for j, p in enumerate(["cpsat", "greedy_by_size", "first_fit"])]
    ax = plots.plot_ratio_by_planner(pd.DataFrame(rows))
    # rows grouped by family: the two greedy planners are adjacent
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["cpsat (19/19)", "first_fit (19/19)", "greedy_by_size (19/19)"]
    colours = {t.get_text().split()[0]: t.get_color() for t in ax.get_yticklabels()}
    assert colours["first_fit"] == colours["greedy_by_size"] != colours["cpsat"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    fams = {planner_family("cpsat"), planner_family("first_fit")}
    assert fams | {"proved optimal", "not proved optimal"} <= set(legend)
    filled = sum(len(c.get_offsets()) for c in ax.collections
                 if len(c.get_facecolor()) and c.get_facecolor()[0][3] > 0)
    # cpsat's 19 are proved; a heuristic at ratio 1.0 (k % 3 == 0: 7 workloads x 2) meets the bound
    assert filled == 19 + 2 * 7
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] <= 1.0
    assert min(ax.get_xticks()) == 1.0


def test_heatmap_says_where_its_colour_scale_is_capped():
    rows = [{"workload": f"w{k}", "planner": "a", "ratio": 1.0 + k / 10, "valid": True,
             "status": "heuristic"} for k in range(40)]
    ax = plots.plot_ratio_heatmap(pd.DataFrame(rows))
    label = ax.figure.axes[-1].get_ylabel()
    assert "capped at" in label and "95th percentile" in label
    ax2 = plots.plot_ratio_heatmap(pd.DataFrame(rows), cap_percentile=None)
    assert "capped" not in ax2.figure.axes[-1].get_ylabel()


def test_plot_functions_draw_into_a_given_axes_and_style_is_local():
    import matplotlib.pyplot as plt

    before = plt.rcParams["font.size"]
    fig, axes = plt.subplots(1, 2)
    plan = _seed_plan()
    with plots.style("paper"):
        a = plots.plot_memory_over_time(seed000_problem(), [plan], ax=axes[0])
        b = plots.plot_arena_layout(plan, ax=axes[1])
        assert plt.rcParams["font.size"] == 8
    assert a is axes[0] and b is axes[1] and len(fig.axes) == 2
    assert plt.rcParams["font.size"] == before  # nothing global changed
    plt.close(fig)
    with pytest.raises(ValueError, match="unknown figure style"):
        with plots.style("poster"):
            pass


def test_paper_style_gives_column_widths_and_embedded_fonts(tmp_path):
    plan = _seed_plan()
    recs = pd.DataFrame([{"workload": "w", "planner": "greedy_by_size", "ratio": 1.0,
                          "valid": True, "status": "heuristic"}])
    sched = pd.DataFrame({"workload": ["g", "g"], "scheduler": ["file_order", "dfs"],
                          "peak_bytes": [100, 80], "status": ["heuristic"] * 2})
    makers = {
        "heatmap": lambda: plots.plot_ratio_heatmap(recs),
        "by_planner": lambda: plots.plot_ratio_by_planner(recs),
        "mot": lambda: plots.plot_memory_over_time(seed000_problem(), [plan]),
        "layout": lambda: plots.plot_arena_layout(plan),
        "peaks": lambda: plot_sched_peaks(sched),
        "curves": lambda: plot_schedule_curves({"a": ([0, 1, 2], [5, 9, 0])}),
    }
    with plots.style("paper"):
        for name, make in makers.items():
            ax = make()
            w, _ = ax.figure.get_size_inches()
            assert w in (3.5, 7.16), (name, w)
            for t in ax.figure.findobj(lambda o: hasattr(o, "get_fontsize")):
                if t.get_visible() and getattr(t, "get_text", lambda: "x")():
                    assert 5 <= t.get_fontsize() <= 9, (name, t.get_text(), t.get_fontsize())
            written = plots.save(ax, tmp_path / name)
            assert [p.suffix for p in written] == [".pdf", ".png"]
            from PIL import Image

            px = Image.open(written[1]).size[0]  # the file itself is one column wide
            assert abs(px - w * plots.STYLES["paper"]["rc"]["savefig.dpi"]) <= 2, (name, px)
            pdf = written[0].read_bytes()
            assert b"/FontFile2" in pdf  # TrueType embedded (pdf.fonttype 42), not Type 3
    with plots.style("default"):
        ax = plots.plot_memory_over_time(seed000_problem(), [plan])
        assert tuple(ax.figure.get_size_inches()) == (7.16, 3.0)  # one double column
        plots.save(ax, tmp_path / "d")


def _seed_plan() -> Plan:
    from planners import plan as run_plan

    return run_plan(seed000_problem(), "greedy_by_size")


def test_memory_over_time_marks_an_arena_equal_to_the_lower_bound_and_no_offset():
    p = seed000_problem()
    plan = _seed_plan()
    assert plan.arena_size == plan.lower_bound  # greedy by size reaches the bound on seed 000
    ax = plots.plot_memory_over_time(p, [plan], plan_roles=["best plan"])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("best plan: greedy_by_size" in s and "= lower bound" in s for s in labels)
    # the arena band is wider than the dashed lower-bound line drawn on top of it
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    band = next(ln for lab, ln in lines.items() if "arena" in lab)
    bound = next(ln for lab, ln in lines.items() if lab.startswith("lower bound"))
    assert band.get_linewidth() > 2 * bound.get_linewidth()
    assert bound.get_zorder() > band.get_zorder()
    # long schedule-step axis: no "1e6" offset
    big = Problem([Buffer("a", 0, 1_000_000, 100), Buffer("b", 999_990, 1_000_050, 40)])
    ax2 = plots.plot_memory_over_time(big)
    ax2.figure.canvas.draw()
    xa = ax2.xaxis
    assert xa.get_offset_text().get_text() == ""
    assert "1,000,000" in [t.get_text() for t in xa.get_ticklabels()]


def test_arena_layout_labels_only_rectangles_that_fit():
    # one big buffer and one thin sliver: only the big one is labelled
    p = Problem([Buffer("big", 0, 10, 1000), Buffer("thin", 0, 1, 5)])
    plan = Plan(p, np.array([0, 1000]), "manual", "heuristic", lower_bound=1005)
    ax = plots.plot_arena_layout(plan)
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["big"]


def _cell_texts(ax) -> dict[tuple[int, int], str]:
    """``{(row, column): text}`` of the annotated cells of a table figure."""
    return {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
            for t in ax.texts}


def test_sched_peaks_gives_each_scheduler_its_own_row_and_the_proved_optimum():
    """13 schedulers on one peak do not pile up: each has its own row; the proved optimum is a
    row of its own, and the cells equal to it are starred."""
    scheds = [f"s{k}" for k in range(11)] + ["exact_dp"]
    rows = [{"workload": "mobilenet_v1_first_layer_and_more", "scheduler": s, "peak_bytes": 100,
             "status": "optimal" if s == "exact_dp" else "heuristic"} for s in scheds]
    rows += [{"workload": "g", "scheduler": s, "peak_bytes": 50 - (k == 3) * 10,
              "status": "optimal" if s == "exact_dp" else "heuristic"}
             for k, s in enumerate(scheds)]
    rows[-1]["peak_bytes"] = 40
    ax = plot_sched_peaks(pd.DataFrame(rows), relative_to="s0")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["proved optimum"] + scheds
    cells = _cell_texts(ax)
    assert cells[(0, 0)] == "1.000" and cells[(0, 1)] == "0.800"  # 40 / 50
    assert cells[(1, 1)] == "1.000" and cells[(4, 1)] == "0.800*"  # s3 reaches the optimum
    assert cells[(12, 1)] == "0.800*"
    assert all(cells[(r, 0)] == "1.000*" for r in range(1, 13))
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert all(max(len(s) for s in lab.split("\n")) <= 24 for lab in ticks)
    assert plots.short_label("mobilenet_v1_first_layer") == "mobilenet_v1_\nfirst_layer"


def test_sched_peaks_never_draws_a_timed_out_exact_scheduler_as_exact():
    df = pd.DataFrame({"workload": ["g", "g", "g", "h", "h", "h"],
                       "scheduler": ["file_order", "best_of", "exact_dp"] * 2,
                       "peak_bytes": [100, 90, 80, 50, 45, 45],
                       "status": ["heuristic", "heuristic", "optimal",
                                  "heuristic", "heuristic", "timeout"]})
    ax = plot_sched_peaks(df)
    cells = _cell_texts(ax)
    # rows: proved optimum, file_order, best_of, exact_dp; columns g, h
    assert cells[(0, 0)] == "0.800" and (0, 1) not in cells  # nothing proved on h
    assert cells[(3, 0)] == "0.800*" and cells[(3, 1)] == "0.900?"
    assert cells[(2, 1)] == "0.900"  # a heuristic needs no proof mark
    label = ax.figure.axes[-1].get_ylabel()
    assert "* = the proved optimum" in label and "not proved" in label


def test_most_different_workload_skips_a_chain_where_orders_agree():
    df = pd.DataFrame({"workload": ["chain", "chain", "branchy", "branchy", "mid", "mid"],
                       "scheduler": ["file_order", "best_of"] * 3,
                       "peak_bytes": [100, 100, 200, 150, 100, 90]})
    assert most_different_workload(df, ["file_order", "best_of"]) == "branchy"
    assert most_different_workload(df, ["file_order", "nope"]) is None


def test_figures_are_byte_identical_when_written_twice(tmp_path):
    from scheduling.graph import Graph

    g = Graph("trap")
    g.add_tensor("x", (1,), "uint8", kind="input")
    for t, b in {"A": 100, "C": 50, "V": 99, "Z": 1}.items():
        g.add_tensor(t, (b,), "uint8")
    for op, ins, out in [("a", ["x"], "A"), ("c", ["x"], "C"), ("v", ["A"], "V"),
                         ("z", ["V", "C"], "Z")]:
        g.add_op(op, "Op", ins, [out])
    g.mark_output("Z")
    plan = _seed_plan()
    makers = {
        "mot": lambda: plots.plot_memory_over_time(seed000_problem(), [plan]),
        "layout": lambda: plots.plot_arena_layout(plan),
        "curves": lambda: plot_schedule_curves(
            {k: live_profile(lifetime_problem(g, o)) for k, o in
             {"file": list("acvz"), "best": list("avcz")}.items()}),
    }
    for name, make in makers.items():
        first = plots.save(make(), tmp_path / "one" / name, formats=("png", "pdf", "svg"))
        second = plots.save(make(), tmp_path / "two" / name, formats=("png", "pdf", "svg"))
        for a, b in zip(first, second, strict=True):
            assert a.read_bytes() == b.read_bytes(), a.name


def test_seed000_layout_has_a_compacted_panel_for_the_buffers_under_the_weights():
    """seed 000: input, conv_w and gemm_w live for the whole schedule (4 + 64 + 256 KiB =
    331,776 of the 352,256-byte arena); the other five buffers get a second panel whose address
    axis drops those bytes: their arena is 352,256 - 331,776 = 20,480 bytes, equal to their own
    max live bytes (8 + 4 + 8 KiB at step 2), and the compacted offsets are a valid plan."""
    from experiments.plots.style import _short_lived
    from planners import check_plan

    plan = _seed_plan()
    rest, cut = _short_lived(plan)
    assert cut == 331_776
    assert sorted(b.id for b in rest.problem.buffers) == ["conv_y", "logits", "probs", "res",
                                                          "skip"]
    assert rest.arena_size == 20_480 == rest.lower_bound
    check_plan(rest.problem, rest.offsets)
    ax = plots.plot_arena_layout(plan)
    assert len(ax.figure.axes) == 2 and "331,776" not in ax.figure.axes[1].get_title()
    assert "324 KiB live for the whole schedule cut out" in ax.figure.axes[1].get_title()
    # a plan whose whole-schedule buffers hold less than half the arena keeps one panel
    small = Problem([Buffer("w", 0, 4, 10), Buffer("a", 0, 2, 40), Buffer("b", 2, 4, 40)])
    pl = Plan(small, np.array([0, 10, 10]), "manual", "heuristic", lower_bound=50)
    assert _short_lived(pl) is None
    assert len(plots.plot_arena_layout(pl).figure.axes) == 1
