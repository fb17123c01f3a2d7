"""The compiled sweep engine (``planners._greedy.sweep``, orders non-decreasing in start) against
the Python reference sweep (``engine="python"``) and the compiled interval-tree engine
(``planners._greedy.place``, any order; itself checked against Python in test_greedy_engine.py).

The sweep keeps the gaps between live buffers in blocked sorted arrays (64 pairs a block, split
when full, merged when below a quarter, a group maximum per 64 blocks). The inputs here are chosen
to reach those paths: alignments > 1 that make a gap of the right length fail at its aligned start
(the search must go on in the same order), zero sizes, many equal starts and ends, gaps of one
byte, and several thousand buffers live at once (many blocks and more than one group), with mass
expiries that merge blocks.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planners import Buffer, Problem
from planners.greedy import FITS, greedy_offsets

_greedy = pytest.importorskip("planners._greedy", reason="the C engine planners._greedy is not built")

ALIGNMENTS = (1, 1, 2, 3, 4, 8, 64, 6, 1000)


def _sweep_both(problem, fit):
    """Offsets of the start-order sweep by the Python reference and by the C engine."""
    py = greedy_offsets(problem, "start", fit, method="sweep", engine="python")
    c = greedy_offsets(problem, "start", fit, method="sweep", engine="c")
    return py.tolist(), c.tolist()


def test_hand_checked_alignment_failure_continues_in_order():
    # step 0: a, b, c, d, e stacked at 0, 3, 8, 16, 40 (top 44); at step 1 b and d expire, leaving
    # the gaps [3, 8) (5 bytes) and [16, 40) (24 bytes). f (4 bytes, alignment 8) fits [3, 8) by
    # length but not at round_up(3, 8) = 8, so both rules go on to [16, 40): 16. g (4 bytes) then
    # takes [3, 7) and h (1 byte) the last byte [7, 8) under both rules.
    bufs = [
        Buffer("a", 0, 10, 3), Buffer("b", 0, 1, 5), Buffer("c", 0, 10, 8),
        Buffer("d", 0, 1, 24), Buffer("e", 0, 10, 4),
        Buffer("f", 1, 10, 4, 8), Buffer("g", 1, 10, 4), Buffer("h", 1, 10, 1),
    ]
    p = Problem(bufs, name="hand")
    expected = [0, 3, 8, 16, 40, 16, 3, 7]
    for fit in FITS:
        py, c = _sweep_both(p, fit)
        assert py == c == expected, fit


def test_hand_checked_best_fit_picks_the_shortest_gap():
    # gaps at step 1: [4, 12) (8 bytes) below c and [20, 23) (3 bytes) below e; a 3-byte buffer
    # goes to the lowest gap that holds it under first fit (4) and to the shortest under best
    # fit (20).
    bufs = [
        Buffer("a", 0, 9, 4), Buffer("b", 0, 1, 8), Buffer("c", 0, 9, 8),
        Buffer("d", 0, 1, 3), Buffer("e", 0, 9, 1), Buffer("f", 1, 9, 3),
    ]
    p = Problem(bufs, name="hand-best")
    assert greedy_offsets(p, "start", "first", engine="c").tolist() == [0, 4, 12, 20, 23, 4]
    assert greedy_offsets(p, "start", "best", engine="c").tolist() == [0, 4, 12, 20, 23, 20]
    for fit in FITS:
        py, c = _sweep_both(p, fit)
        assert py == c, fit


@st.composite
def adversarial_problems(draw, max_n: int = 120):
    """Many equal starts (a short horizon), zero sizes, tiny and large sizes, alignments that
    often exceed the gaps (so candidates fail at their aligned start)."""
    n = draw(st.integers(0, max_n))
    horizon = draw(st.integers(1, 8))
    span = draw(st.integers(1, 30))
    tiny = draw(st.booleans())
    bufs = []
    for i in range(n):
        s = draw(st.integers(0, horizon))
        e = s + draw(st.integers(1, span))
        size = draw(st.one_of(st.just(0), st.integers(1, 3 if tiny else 64), st.integers(1, 5000)))
        align = draw(st.sampled_from(ALIGNMENTS))
        bufs.append(Buffer(str(i), s, e, size, align))
    return Problem(bufs, name="adversarial")


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(adversarial_problems())
def test_sweep_matches_python_reference(p):
    for fit in FITS:
        py, c = _sweep_both(p, fit)
        assert py == c, fit


def _columns(rng, n, live_steps):
    """Columns of a problem with thousands of buffers live at once: half start at step 0 (equal
    starts), the rest at steps 1..live_steps, each living 1..live_steps steps; sizes mostly of
    1..3 bytes (gaps of a byte or two) with some large ones, 3% zero; mixed alignments."""
    starts = np.where(rng.random(n) < 0.5, 0, rng.integers(1, live_steps + 1, n))
    ends = starts + rng.integers(1, live_steps + 1, n)
    sizes = np.where(rng.random(n) < 0.8, rng.integers(1, 4, n), rng.integers(1, 100_000, n))
    sizes[rng.random(n) < 0.03] = 0
    aligns = rng.choice(np.array([1, 1, 1, 2, 4, 8, 3, 64]), n)
    return [np.ascontiguousarray(v, np.int64) for v in (starts, ends, sizes, aligns)]


def _c_engines(cols, fit):
    """Offsets of the C sweep and of the C interval-tree engine, for the start order."""
    starts, ends, sizes, aligns = cols
    perm = np.argsort(starts, kind="stable").astype(np.int64)
    out = {}
    for name in ("sweep", "place"):
        o = np.empty(len(starts), np.int64)
        getattr(_greedy, name)(perm=perm, starts=starts, ends=ends, sizes=sizes,
                               alignments=aligns, fit=fit, out=o)
        out[name] = o
    return out["sweep"], out["place"]


@pytest.mark.parametrize("fit", FITS)
@pytest.mark.parametrize("seed", [0, 1])
def test_thousands_live_at_once_match_the_interval_tree_engine(fit, seed):
    rng = np.random.default_rng(seed)
    cols = _columns(rng, 11_000, 16)
    starts, ends = cols[0], cols[1]
    # at step 0 about 7,000 buffers are live (hundreds of blocks, more than one group of 64)
    assert int(np.sum((starts <= 0) & (ends > 0))) >= 5_000
    sweep, place = _c_engines(cols, fit)
    assert sweep.tolist() == place.tolist()


@pytest.mark.parametrize("fit", FITS)
def test_many_live_at_once_match_python_reference(fit):
    rng = np.random.default_rng(7)
    starts, ends, sizes, aligns = _columns(rng, 2_400, 6)
    bufs = [Buffer(str(i), int(s), int(e), int(z), int(a))
            for i, (s, e, z, a) in enumerate(zip(starts, ends, sizes, aligns, strict=True))]
    p = Problem(bufs, name="many-live")
    assert int(np.sum((starts <= 0) & (ends > 0))) >= 1_000
    py, c = _sweep_both(p, fit)
    assert py == c
