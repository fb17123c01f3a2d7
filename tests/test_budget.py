"""Budget techniques: patch-based planning, recomputation, tiers, multi-model arenas, pools."""

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from planners import Problem, check_plan
from planners.errors import InfeasibleError, ProblemError
from planners.pools import BuddyAllocator, FixedBlockPool, PoolError, RingBuffer, replay
from planners.tiers import assign_tiers, multi_model_arenas
from scheduling.graph import Graph
from scheduling.lifetimes import peak_live_bytes
from scheduling.mobilenet import mobilenet_v2
from scheduling.patch import evaluate_patch, layer_peak, plan_patches
from scheduling.recompute import (
    checkpoint_curve,
    cpsat_recompute,
    greedy_recompute,
    remat_problem,
    simulate,
)
from scheduling.tiling import BudgetError

# -- patch-based inference ----------------------------------------------------------------------


def _chain(h=16):
    """input 1x1xhxh int8 -> conv 3x3 s1 (4 ch) -> conv 3x3 s2 (4 ch) -> output."""
    g = Graph("chain")
    g.add_tensor("x", (1, 1, h, h), "int8", kind="input")
    g.add_tensor("w1", (4, 1, 3, 3), "int8", kind="weight")
    g.add_tensor("w2", (4, 4, 3, 3), "int8", kind="weight")
    g.add_tensor("a", (1, 4, h, h), "int8")
    g.add_tensor("b", (1, 4, h // 2, h // 2), "int8")
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    g.add_op("c1", "Conv", ["x", "w1"], ["a"], dict(attrs, strides=[1, 1]), macs=4 * h * h * 9)
    g.add_op("c2", "Conv", ["a", "w2"], ["b"], dict(attrs, strides=[2, 2]),
             macs=4 * (h // 2) ** 2 * 36)
    g.mark_output("b")
    return g


def test_patch_hand_computed_chain():
    g = _chain(16)
    # layer by layer: c1 holds x (256) + a (1024); c2 holds a (1024) + b (256)
    assert layer_peak(g) == 1280
    r = evaluate_patch(g, 2, 2)
    # 2x2 patches of b (4x4 each). c2 (k3 s2 p1): b rows [0,4) <- a rows [-1,8) -> [0,8);
    # b rows [4,8) <- a rows [7,16). c1 (k3 s1 p1): a [0,8) <- x [0,9); a [7,16) <- x [6,16).
    # Worst patch (bottom-right) at step c1: x 10x10 + a 9x9x4 + the full b buffer (256)
    assert r.stage_peak == 100 + 324 + 256
    assert r.peak == 680 and r.rest_peak == 0
    # c1 computes a rows 8 + 9 = 17 (and cols 17) over the patches instead of 16: one halo row
    # and column recomputed; c2 has no overlap
    computed_a = (8 + 9) ** 2
    assert r.extra_macs == 4 * 9 * (computed_a - 256)


def test_mobilenet_v2_patch_matches_mcunetv2_accounting():
    g = mobilenet_v2(1.0, 224, "int8")
    base = layer_peak(g, accounting="layer_io")
    assert base == 200_704 + 1_204_224 == 1372 * 1024  # block 2 expand: in + out
    r = evaluate_patch(g, "b4_project", 4, accounting="layer_io")
    # the rest of the network peaks at block 5's expand: 28x28x32 in + 28x28x192 out
    assert r.rest_peak == 28 * 28 * (32 + 192)
    assert r.stage_peak <= r.rest_peak
    assert abs(base / r.peak - 8.0) / 8.0 < 0.15  # MCUNetV2: about 8x (1372 kB -> 172 kB)
    assert 0 < r.extra_macs_ratio < 0.2


def test_budget_infeasible_names_smallest_peak():
    g = mobilenet_v2(1.0, 96, "int8", blocks=4)
    with pytest.raises(BudgetError, match=r"smallest reachable peak \d+ bytes") as e:
        plan_patches(g, 1000)
    assert isinstance(e.value, InfeasibleError)
    smallest = int(str(e.value).split("smallest reachable peak ")[1].split()[0])
    r = plan_patches(g, smallest)  # exactly that budget is reachable
    assert r.peak == smallest


def test_plan_patches_prefers_less_overhead():
    g = mobilenet_v2(1.0, 96, "int8", blocks=4)
    base = layer_peak(g)
    r = plan_patches(g, base)  # no need to patch
    assert r.extra_macs == 0 and r.peak <= base
    tight = plan_patches(g, base // 2)
    assert tight.peak <= base // 2 and tight.extra_macs > 0

# -- recomputation -------------------------------------------------------------------------------


def _skip_graph():
    g = Graph("skip")
    g.add_tensor("in", (10,), "int8", kind="input")
    for n, s in [("a", 10), ("b", 10), ("c", 50), ("d", 10), ("e", 10)]:
        g.add_tensor(n, (s,), "int8")
    g.add_op("A", "Relu", ["in"], ["a"])
    g.add_op("B", "Relu", ["a"], ["b"])
    g.add_op("C", "Conv", ["b"], ["c"], macs=1000)
    g.add_op("D", "Conv", ["c"], ["d"], macs=1000)
    g.add_op("E", "Add", ["d", "a"], ["e"])
    g.mark_output("e")
    return g


def test_recompute_skip_connection_hand_checked():
    g = _skip_graph()
    # step C: b (10) + c (50) + skip a (10) = 70; recompute A (10 elements) before E: 60
    r = greedy_recompute(g)
    assert r.baseline_peak == 70 and r.peak == 60
    assert r.recomputed == [("A", "E")] and r.extra_cost == 10
    ex = cpsat_recompute(g, 60)
    assert ex.status == "optimal" and ex.peak == 60 and ex.extra_cost == 10
    with pytest.raises(BudgetError, match="smallest reachable peak 60 bytes"):
        greedy_recompute(g, 59)
    with pytest.raises(BudgetError, match="proved infeasible") as e:
        cpsat_recompute(g, 59)
    assert e.value.smallest_peak == 60
    # budget=None: the smallest reachable peak (60, proved), then the least cost at it (A once)
    best = cpsat_recompute(g, None)
    assert best.status == "optimal" and best.peak == 60 and best.extra_cost == 10


def test_stage_model_baseline_equals_lifetime_peak():
    g = mobilenet_v2(1.0, 64, "int8", blocks=5)
    rp = remat_problem(g)
    mem = simulate(rp, [[t] for t in range(rp.T)])
    assert int(mem.max()) == peak_live_bytes(g)


def _random_dag(seed, n):
    rng = np.random.default_rng(seed)
    g = Graph(f"dag{seed}")
    g.add_tensor("in", (4,), "int8", kind="input")
    names = []
    for i in range(n):
        t = f"t{i}"
        g.add_tensor(t, (int(rng.integers(1, 40)),), "int8")
        k = int(rng.integers(1, 3))
        ins = sorted({names[int(j)] for j in rng.integers(0, len(names), k)}) if names else ["in"]
        g.add_op(f"o{i}", "Conv", ins, [t], macs=int(rng.integers(1, 100)))
        names.append(t)
    for t in names:
        if not g.tensors[t].consumers:
            g.mark_output(t)
    return g


@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12))
def test_recomputation_never_increases_peak(seed, n):
    g = _random_dag(seed, n)
    r = greedy_recompute(g)
    assert r.peak <= r.baseline_peak
    assert r.extra_cost >= 0
    ex = cpsat_recompute(g, r.peak, time_limit=5)
    assert ex.peak <= r.peak and ex.extra_cost <= r.extra_cost  # exact <= greedy


def test_checkpoint_curve_exercise_5_5():
    c = checkpoint_curve(100)
    k = int(np.argmin(c["memory"])) + 1
    assert k == c["k_opt"] == 10 and c["memory"][k - 1] == 20.0
    assert c["extra_forward"][k - 1] == 90

# -- tiers and multi-model ------------------------------------------------------------------------


def test_tiers_hand_checked():
    # three buffers: a [0,2) 60 B x 5 accesses, b [1,3) 60 B x 2, c [2,4) 40 B x 3; SRAM 100 B
    p = Problem.from_closed([("a", 0, 1, 60), ("b", 1, 2, 60), ("c", 2, 3, 40)])
    for method in ("greedy", "cpsat"):
        t = assign_tiers(p, 100, [5, 2, 3], method=method)
        # a and b overlap in time and cannot both fit; best: a + c in SRAM, b (120 B) in DRAM
        assert t.in_sram.tolist() == [True, False, True]
        assert t.dram_traffic == 120 and t.total_traffic == 300 + 120 + 120
        assert t.sram_arena <= 100 and t.dram_arena == 60
        check_plan(Problem([p.buffers[0], p.buffers[2]], capacity=100),
                   t.sram_offsets[t.in_sram])
    with pytest.raises(ProblemError, match="accesses"):
        assign_tiers(p, 100, [1, 2])


def test_multi_model_joint_never_worse_than_separate():
    p1 = Problem.from_closed([("x", 0, 1, 100), ("y", 1, 2, 50)], name="m1")
    p2 = Problem.from_closed([("u", 0, 0, 30), ("v", 1, 2, 80)], name="m2")
    seq = multi_model_arenas([p1, p2], mode="sequential")
    assert seq["separate"] == 150 + 80 and seq["joint"] == 150
    inter = multi_model_arenas([p1, p2], mode="interleaved")
    assert inter["joint_lower_bound"] <= inter["joint"] <= inter["separate"]

# -- pools ---------------------------------------------------------------------------------------


def test_buddy_exercise_5_8():
    b = BuddyAllocator(1024)  # MB units
    assert b.alloc("r150", 150) == 0
    assert b.alloc("r200", 200) == 256
    b.free("r150")
    assert b.alloc("r100", 100) == 0      # reuses the lower half of the freed 256 block
    assert b.alloc("r300", 300) == 512
    assert b.allocated == 256 + 128 + 512 == 896
    assert b.used == 600
    assert b.internal_fragmentation == 296
    assert b.fragmentation_ratio == pytest.approx(296 / 896)
    with pytest.raises(PoolError, match="r600"):
        b.alloc("r600", 600)
    for k in ("r100", "r200", "r300"):
        b.free(k)
    assert b.alloc("all", 1024) == 0      # everything coalesced back


def test_fixed_block_and_ring():
    f = FixedBlockPool(400, 100)
    assert [f.alloc(k, s) for k, s in [("a", 70), ("b", 100), ("c", 10)]] == [0, 100, 200]
    assert f.internal_fragmentation == 30 + 0 + 90
    f.free("a")
    assert f.alloc("d", 50) == 0
    with pytest.raises(PoolError, match="exceeds the block size"):
        f.alloc("e", 101)
    r = RingBuffer(100)
    assert r.alloc("f1", 40) == 0 and r.alloc("f2", 40) == 40
    r.free("f1")
    assert r.alloc("f3", 30) == 0      # wraps: 20 bytes left at the end, skipped
    assert r.allocated == 40 + 50
    with pytest.raises(ProblemError, match="FIFO"):
        r.free("f3")
    with pytest.raises(PoolError):
        r.alloc("f4", 30)


def test_replay_buddy_pool_vs_static_lower_bound():
    p = Problem.from_closed([("a", 0, 1, 100), ("b", 1, 2, 300), ("c", 2, 3, 100)])
    out = replay(p, BuddyAllocator(1024))
    assert out["lower_bound"] == 400
    assert out["high_water"] >= out["lower_bound"]
    check_plan(p.with_capacity(None), out["offsets"])
