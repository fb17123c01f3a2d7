"""Slice-level SRAM/DRAM assignment (prefetch / eviction between uses) and graph use steps."""

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from planners import Buffer, Problem, check_plan
from planners.errors import ProblemError
from planners.tiers import assign_tier_slices, assign_tiers, tier_slices
from scheduling.examples import seed000_graph
from scheduling.graph import Graph
from scheduling.lifetimes import lifetime_problem
from scheduling.uses import buffer_uses


def _gap_problem():
    # A [0, 8) 60 B, used at 0, 1 (write, read) and 6, 7 (two late reads): idle in [2, 6).
    # B [2, 6) 60 B, used at every step 2..5. SRAM 100 B: A and B cannot both stay whole.
    p = Problem([Buffer("A", 0, 8, 60), Buffer("B", 2, 6, 60)], name="gap")
    return p, [[0, 1, 6, 7], [2, 3, 4, 5]]


def test_slices_cut_at_uses():
    p, uses = _gap_problem()
    sp, owner, acc = tier_slices(p, uses)
    assert sp.ids[:5] == ["A@0", "A@1", "A@2", "A@3", "A@4"]
    assert [(b.start, b.end) for b in sp.buffers[:5]] == [(0, 1), (1, 2), (2, 6), (6, 7), (7, 8)]
    assert acc.tolist() == [1, 1, 0, 1, 1, 1, 1, 1, 1] and owner.tolist() == [0] * 5 + [1] * 4
    # default uses: start and end - 1 (one write, one read), a repeated step counts twice
    sp2, _, acc2 = tier_slices(Problem([Buffer("x", 3, 4, 8), Buffer("y", 0, 5, 8)]))
    assert [(b.start, b.end) for b in sp2.buffers] == [(3, 4), (0, 1), (1, 4), (4, 5)]
    assert acc2.tolist() == [2, 1, 0, 1]
    with pytest.raises(ProblemError, match=r"buffer 'B': use step 7 lies outside its lifetime"):
        tier_slices(p, [[0], [7]])
    with pytest.raises(ProblemError, match="one list of use steps per buffer"):
        tier_slices(p, [[0]])


@pytest.mark.parametrize("method", ["greedy", "cpsat"])
def test_slicing_strictly_beats_whole_buffers(method):
    p, uses = _gap_problem()
    whole = assign_tiers(p, 100, [len(u) for u in uses], method=method)
    # whole buffers: one of A, B (4 accesses x 60 B each) must live in DRAM: 240 B of traffic
    assert whole.dram_traffic == 240 and whole.total_traffic == 480
    s = assign_tier_slices(p, 100, uses, method=method)
    # slices: A is evicted after its read at step 1 (60 B) and prefetched before step 6 (60 B);
    # B stays in SRAM: 120 B of DRAM traffic, no access served by DRAM
    assert s.dram_access_traffic == 0
    assert s.bytes_evicted == 60 and s.bytes_prefetched == 60 and s.dram_traffic == 120
    assert s.in_sram.tolist() == [True, True, False, True, True, True, True, True, True]
    assert s.sram_arena <= 100 and s.dram_arena == 60 and s.total_traffic == 480
    sram, off = s.sram_problem()
    check_plan(sram.with_capacity(100), off)
    # A's two SRAM runs both overlap B in nothing: B [2, 6) vs A's runs [0, 2) and [6, 8)
    assert method != "cpsat" or s.status == "optimal"


def test_slicing_does_not_move_when_sram_is_large():
    p, uses = _gap_problem()
    s = assign_tier_slices(p, 120, uses, method="cpsat")
    assert s.dram_traffic == 0 and s.bytes_moved == 0 and s.in_sram.all()


def _random_problem(seed, n):
    rng = np.random.default_rng(seed)
    bufs, uses = [], []
    for i in range(n):
        s = int(rng.integers(0, 8))
        e = s + int(rng.integers(1, 7))
        bufs.append(Buffer(f"b{i}", s, e, int(rng.integers(1, 50))))
        k = int(rng.integers(1, 4))
        uses.append(sorted({s, *rng.integers(s, e, k).tolist()}))
    return Problem(bufs, name=f"r{seed}"), uses


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 6), cap=st.integers(0, 120))
def test_slices_never_worse_than_whole_buffers(seed, n, cap):
    p, uses = _random_problem(seed, n)
    acc = [len(u) for u in uses]
    gw, gs = assign_tiers(p, cap, acc), assign_tier_slices(p, cap, uses)
    assert gs.dram_traffic <= gw.dram_traffic  # greedy: whole buffers first, then runs
    assert gs.total_traffic == gw.total_traffic
    sram, off = gs.sram_problem()
    check_plan(sram.with_capacity(cap), off)
    cw = assign_tiers(p, cap, acc, method="cpsat", time_limit=5)
    cs = assign_tier_slices(p, cap, uses, method="cpsat", time_limit=5)
    assert cs.dram_traffic <= gs.dram_traffic
    if cw.status == "optimal" and cs.status == "optimal":
        assert cs.dram_traffic <= cw.dram_traffic


def test_buffer_uses_from_graph():
    g = seed000_graph()
    p = lifetime_problem(g)
    uses = dict(zip(p.ids, buffer_uses(g, p)))
    # skip: written at step 0, read by the conv (1) and the residual add (2); the graph output
    # probs is written at 5 and read by the caller at the last step (5)
    assert uses["skip"] == [0, 1, 2] and uses["probs"] == [5, 5]
    s = assign_tier_slices(p, 0, buffer_uses(g, p))
    assert s.dram_traffic == s.total_traffic == sum(
        g.tensors[b.id].nbytes * len(uses[b.id]) for b in p.buffers)
    h = Graph("h")
    h.add_tensor("x", (4,), "int8", kind="input")
    with pytest.raises(ProblemError, match="'nope'"):
        buffer_uses(h, Problem([Buffer("nope", 0, 1, 4)]))
