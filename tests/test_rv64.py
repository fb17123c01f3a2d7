"""RV64 machine-code measurement of the allocator cores (experiments.rv64)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments import rv64
from experiments.rv64.cycles import CORE_MODELS, simulate_reference, simulate_trace
from experiments.rv64.decode import Insn, decode, decode_block
from planners import Buffer, Problem, check_plan

OK, REASON = rv64.available()
needs_rv64 = pytest.mark.skipif(not OK, reason=REASON or "rv64 toolchain available")


# -- seed 000 section 8 -------------------------------------------------------------------------
def seed_000_demo() -> Problem:
    """Seed 000 section 8's graph: residents live the whole schedule, alignment 16."""
    rows = [
        ("input", 0, 0, 4096, 1),
        ("conv_w", 0, 1, 65536, 1),
        ("conv_y", 1, 2, 8192, 0),
        ("skip", 0, 2, 4096, 0),
        ("res", 2, 3, 8192, 0),
        ("gemm_w", 3, 4, 262144, 1),
        ("logits", 4, 5, 1024, 0),
        ("probs", 5, 5, 1024, 0),
    ]
    bufs = [
        Buffer(name, 0, 6, size, kind="resident")
        if res
        else Buffer.from_closed(name, f, last, size)
        for name, f, last, size, res in rows
    ]
    return Problem(bufs, alignment=16, name="seed000")


@needs_rv64
def test_seed_000_demo_through_emulated_greedy_in_order():
    est = rv64.estimate(seed_000_demo(), "greedy_in_order")
    got = dict(zip(seed_000_demo().ids, est.offsets.tolist(), strict=True))
    assert got == {
        "input": 0,
        "conv_w": 4096,
        "conv_y": 335872,
        "skip": 331776,
        "res": 344064,
        "gemm_w": 69632,
        "logits": 331776,
        "probs": 332800,
    }
    assert est.arena == 352256
    assert est.offsets_match
    assert est.instructions == sum(est.instructions_by_class.values()) > 0
    assert est.instructions_by_class["load"] > 0 and est.instructions_by_class["branch"] > 0
    rec = est.as_record()
    for col in ("rv64_instructions", "rv64_cycles_u74", "rv64_cycles_c906"):
        assert isinstance(rec[col], int) and rec[col] > 0
    # an in-order core cannot beat its issue width
    assert rec["rv64_cycles_c906"] >= rec["rv64_instructions"]
    assert rec["rv64_cycles_u74"] >= est.instructions_u74 / 2


# -- emulated offsets == Python offsets -----------------------------------------------------------
@st.composite
def problems(draw):
    n = draw(st.integers(0, 24))
    bufs = []
    for i in range(n):
        s = draw(st.integers(0, 12))
        e = s + draw(st.integers(1, 8))
        # repeated sizes make equal gaps, so tie-breaking rules are exercised
        size = draw(st.one_of(st.just(0), st.sampled_from([16, 32, 48, 64]), st.integers(1, 300)))
        align = draw(st.sampled_from([None, None, 1, 8, 32]))
        kind = draw(st.sampled_from(["activation", "activation", "activation", "resident"]))
        bufs.append(Buffer(f"b{i}", s, e, size, align, kind))
    return Problem(bufs, alignment=draw(st.sampled_from([1, 4, 16])))


@needs_rv64
@pytest.mark.parametrize("core", rv64.CORE_NAMES)
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=problems())
def test_emulated_offsets_equal_python_offsets(core, p):
    est = rv64.estimate(p, core)
    assert est.offsets_match, (est.offsets.tolist(), est.python_offsets.tolist())
    check_plan(p, est.offsets)


@needs_rv64
def test_best_fit_tie_goes_to_the_lowest_gap():
    # A, C, E live over [0, 3); B, D over [0, 1): stacked at 0, 32, 64, 96, 128 (start order).
    # F over [1, 2) sees two 32-byte holes (32 and 96): equal gaps, the lowest wins -> 32.
    p = Problem.from_arrays([0, 0, 0, 0, 0, 1], [3, 1, 3, 1, 3, 2], [32] * 6, alignment=16)
    est = rv64.estimate(p, "best_fit")
    assert est.offsets.tolist() == [0, 32, 64, 96, 128, 32]
    assert est.offsets_match
    # first fit in problem order takes the lowest hole too; greedy by size keeps problem order
    assert rv64.estimate(p, "first_fit").offsets.tolist() == [0, 32, 64, 96, 128, 32]


@needs_rv64
def test_instruction_counts_are_repeatable_and_grow_with_n():
    rng = np.random.default_rng(7)
    counts = []
    for n in (10, 40):
        s = rng.integers(0, n, n)
        p = Problem.from_arrays(s, s + rng.integers(1, 6, n), rng.integers(1, 500, n), alignment=16)
        a, b = rv64.estimate(p, "first_fit"), rv64.estimate(p, "first_fit")
        assert a.instructions_by_class == b.instructions_by_class
        assert a.cycles == b.cycles
        counts.append(a.instructions)
    assert counts[1] > counts[0]


@needs_rv64
def test_unknown_core_is_refused():
    with pytest.raises(ValueError, match="no RV64 core"):
        rv64.estimate(seed_000_demo(), "cpsat")


# -- decoder ----------------------------------------------------------------------------------
def test_decoder_on_encodings_from_llvm_mc():
    # encodings printed by `llvm-mc -triple=riscv64 -mattr=+m,+c -show-encoding`
    assert decode(bytes.fromhex("83350500")) == Insn(4, "load", 11, (10,))  # ld a1, 0(a0)
    assert decode(bytes.fromhex("0c61")) == Insn(2, "load", 11, (10,))  # c.ld a1, 0(a0)
    assert decode(bytes.fromhex("7d15")) == Insn(2, "alu", 10, (10,))  # c.addi a0, -1
    assert decode(bytes.fromhex("7dfd")) == Insn(2, "branch", -1, (10,))  # c.bnez a0
    assert decode(bytes.fromhex("3386e602")) == Insn(4, "mul", 12, (13, 14))  # mul a2,a3,a4
    assert decode(bytes.fromhex("3bc6e602")) == Insn(4, "div", 12, (13, 14), True)  # divw
    assert decode(bytes.fromhex("06e4")) == Insn(2, "store", -1, (2, 1), data=1)  # c.sdsp ra, 8(sp)
    assert decode(bytes.fromhex("2334b500")) == Insn(4, "store", -1, (10, 11), data=1)  # sd a1, 8(a0)
    assert decode(bytes.fromhex("23300500")) == Insn(4, "store", -1, (10,))  # sd zero, 0(a0)
    assert decode(bytes.fromhex("8280")) == Insn(2, "jump", -1, (1,))  # ret (c.jr ra)
    assert decode(bytes.fromhex("2e95")) == Insn(2, "alu", 10, (10, 11))  # c.add a0, a1
    assert decode(bytes.fromhex("6308b500")) == Insn(4, "branch", -1, (10, 11))  # beq a0,a1
    assert decode(bytes.fromhex("ef000004")) == Insn(4, "jump", 1, ())  # jal ra, 64
    assert [i.length for i in decode_block(bytes.fromhex("0c617d157dfd"))] == [2, 2, 2]


# -- the cycle model on hand-made sequences -----------------------------------------------------
LD = Insn(4, "load", 11, (10,))


def _straight(insns):
    return [(ins, 0x100 + 4 * k, False) for k, ins in enumerate(insns)]


def _both(trace_blocks, ids, halt, model):
    """Cycles from the Python reference and from the compiled model (must agree)."""
    from experiments.rv64.cycles import expand_trace

    model = CORE_MODELS[model].without_caches()  # hand-made code: ideal memory
    ref = simulate_reference(expand_trace(ids, trace_blocks, halt), model)
    if OK:
        fast = simulate_trace(np.asarray(ids, np.int32), trace_blocks, halt, model)
        assert fast["cycles"] == ref["cycles"]
        assert fast["mispredicts"] == ref["mispredicts"]
    return ref


def test_dependent_load_chain():
    # ld a1,0(a0); ld a2,0(a1); ld a3,0(a2): each waits for the previous load (load-to-use 3)
    chain = [Insn(4, "load", 11, (10,)), Insn(4, "load", 12, (11,)), Insn(4, "load", 13, (12,))]
    block = [(0x100, 12, chain)]
    for m in ("u74", "c906"):
        assert CORE_MODELS[m].latency["load"] == 3
        # issue at 0, 3, 6 -> 7 cycles
        assert simulate_reference(_straight(chain), m)["cycles"] == 7
        assert _both(block, [0], 0x10C, m)["cycles"] == 7


def test_independent_alu_ops_and_pipes():
    alu = [Insn(4, "alu", r, (5,)) for r in (10, 11, 12, 13)]
    assert simulate_reference(_straight(alu), "u74")["cycles"] == 2  # dual issue: 0,0,1,1
    assert simulate_reference(_straight(alu), "c906")["cycles"] == 4  # single issue
    two_loads = [Insn(4, "load", 10, (5,)), Insn(4, "load", 11, (6,))]
    assert simulate_reference(_straight(two_loads), "u74")["cycles"] == 2  # one pipe A
    load_alu = [Insn(4, "load", 10, (5,)), Insn(4, "alu", 11, (6,))]
    assert simulate_reference(_straight(load_alu), "u74")["cycles"] == 1  # pipe A + pipe B
    dep = [Insn(4, "alu", 10, (5,)), Insn(4, "alu", 11, (10,))]
    assert simulate_reference(_straight(dep), "u74")["cycles"] == 2  # ALU latency 1


def test_loop_with_taken_branch():
    # loop: c.addi a0,-1 ; bnez a0, loop  -- executed 3 times: taken, taken, not taken.
    body = [Insn(2, "alu", 10, (10,)), Insn(4, "branch", -1, (10,))]
    blocks = [(0x100, 6, body)]
    ids = [0, 0, 0]
    # U74 (mispredict 3), BHT counter starts weakly not taken:
    # it1 addi@0 bnez@1 mispredicted -> next at 1+1+3=5; it2 addi@5 bnez@6 predicted taken ->
    # next at 7; it3 addi@7 bnez@8 predicted taken but falls through -> 8+1+3 = 12.
    r = _both(blocks, ids, 0x106, "u74")
    assert (r["cycles"], r["mispredicts"], r["branches"]) == (12, 2, 3)
    # C906 (single issue, mispredict 4): 0,1 -> 6; 6,7 -> 8; 8,9 -> 9+1+4 = 14.
    r = _both(blocks, ids, 0x106, "c906")
    assert (r["cycles"], r["mispredicts"]) == (14, 2)


def test_divider_is_not_pipelined():
    div = [Insn(4, "div", 10, (5, 6)), Insn(4, "div", 11, (7, 8))]
    # the second divide waits until the divider is released (65 cycles on the U74)
    assert simulate_reference(_straight(div), "u74")["cycles"] == 65 + 1


def _replay(run):
    """Blocks, ids and data addresses of a run made with ``record=True``."""
    from experiments.rv64.decode import decode_block

    base, code = run.code
    uniq = sorted(set(run.trace.tolist()))
    index = {a: i for i, a in enumerate(uniq)}
    blocks = [(a, run.block_sizes[a], decode_block(code[a - base : a - base + run.block_sizes[a]]))
              for a in uniq]  # fmt: skip
    return blocks, np.array([index[a] for a in run.trace.tolist()]), run.mem


@needs_rv64
def test_in_hook_model_equals_reference_on_a_real_trace():
    # the models advanced inside the emulator's hooks (bounded state) give exactly what the
    # reference gives over the stored full trace, with and without caches
    from experiments.rv64 import _measure
    from experiments.rv64.build import build_image
    from experiments.rv64.cycles import expand_trace

    rng = np.random.default_rng(3)
    s = rng.integers(0, 20, 20)
    p = Problem.from_arrays(s, s + rng.integers(1, 6, 20), rng.integers(0, 300, 20), alignment=16)
    for cpu, key in (("sifive_u74", "u74"), ("baseline_rv64", "c906")):
        m = CORE_MODELS[key]
        run, by_class = _measure(build_image(cpu), "best_fit", p, 16, [m, m.without_caches()],
                                 record=True)  # fmt: skip
        blocks, ids, mem = _replay(run)
        ref = simulate_reference(expand_trace(ids, blocks, run.halt, mem), m)
        ideal = simulate_reference(
            [x[:3] for x in expand_trace(ids, blocks, run.halt)], m.without_caches()
        )
        assert ref["instructions"] == sum(by_class.values())
        for k in ("cycles", "mispredicts", "branches", "l1d_accesses", "l1d_misses", "l1i_misses"):
            assert run.sim.pipes[0][k] == ref[k], k
        assert run.sim.pipes[1]["cycles"] == ideal["cycles"]
        assert ref["l1d_accesses"] == by_class["load"] + by_class["store"]
        # the compiled model fed the same trace through its hook entry points agrees too
        fast = simulate_trace(ids, blocks, run.halt, m, mem)
        assert (fast["cycles"], fast["l1d_misses"]) == (ref["cycles"], ref["l1d_misses"])


# -- unavailable toolchain ----------------------------------------------------------------------
@pytest.mark.parametrize("missing", ["unicorn", "ziglang"])
def test_missing_package_gives_clear_message(monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # makes `import missing` raise ImportError
    ok, reason = rv64.available()
    assert not ok
    assert missing in reason and "pip install" in reason
    with pytest.raises(rv64.Rv64Unavailable, match=missing):
        rv64.estimate(seed_000_demo(), "greedy_in_order")


@needs_rv64
def test_block_counters_equal_the_recorded_trace():
    from experiments.rv64.build import build_image
    from experiments.rv64.emulate import run_core

    p = seed_000_demo()
    args = (p.starts, p.ends, p.sizes, p.alignments, p.resident.astype(np.int64))
    img = build_image("baseline_rv64")
    a = run_core(img, "greedy_by_size", *args, models=[CORE_MODELS["c906"]], record=True)
    b = run_core(img, "greedy_by_size", *args, models=[CORE_MODELS["c906"]])
    assert len(a.trace) > 0 and len(b.trace) == 0  # counted in place, nothing stored
    addrs, counts = np.unique(a.trace, return_counts=True)
    assert b.sim.block_counts == {
        int(x): (int(c), a.block_sizes[int(x)]) for x, c in zip(addrs, counts, strict=True)
    }
    assert b.sim.blocks == len(a.trace)
    assert a.sim.pipes == b.sim.pipes
    assert np.array_equal(a.offsets, b.offsets)


@needs_rv64
@pytest.mark.parametrize("case", ["random", "all_overlap", "chain", "zero_sizes"])
def test_greedy_by_size_tree_core_equals_greedy_by_size(case):
    from planners.random_problems import random_problem
    from planners.registry import get_planner

    if case == "random":
        p = random_problem(300, seed=5, alignment=16)
    elif case == "all_overlap":  # every buffer live with every other: k = i
        p = Problem.from_arrays([0] * 40, [10] * 40, [(i * 37) % 200 + 1 for i in range(40)],
                                alignment=8)  # fmt: skip
    elif case == "chain":  # short lifetimes, equal sizes: ties broken by start, then index
        p = Problem.from_arrays(list(range(60)), [i + 2 for i in range(60)], [64] * 60,
                                alignment=16)  # fmt: skip
    else:
        p = random_problem(120, seed=2, alignment=4, zero_fraction=0.2)
    est = rv64.estimate(p, "greedy_by_size_tree")
    want = np.asarray(get_planner("greedy_by_size").plan(p).offsets, np.int64)
    assert np.array_equal(est.offsets, want)
    assert est.offsets_match
    check_plan(p, est.offsets)


@st.composite
def centred_tree_problems(draw):
    """Problems that stress core 5's centred interval tree: many buffers live at one step (one
    node holds them all), nested and identical lifetimes, lifetimes that end where others start,
    zero sizes, and per-buffer alignments 1..64 including non-powers of two (the divide path)."""
    n = draw(st.integers(1, 48))
    shape = draw(st.sampled_from(["one_step", "nested", "identical", "touching", "mixed"]))
    bufs = []
    for i in range(n):
        if shape == "one_step":  # every lifetime holds step 5
            s, e = draw(st.integers(0, 5)), draw(st.integers(6, 12))
        elif shape == "nested":  # [i, 2n - i): each holds the next
            s, e = i % 8, 20 - (i % 8) - draw(st.integers(0, 1))
        elif shape == "identical":
            s, e = 3, 7
        elif shape == "touching":  # half-open: [s, s + 2) and [s + 2, ...) never interfere
            s = 2 * draw(st.integers(0, 6))
            e = s + 2 * draw(st.integers(1, 3))
        else:
            s = draw(st.integers(0, 15))
            e = s + draw(st.integers(1, 16))
        size = draw(st.one_of(st.just(0), st.sampled_from([1, 24, 64, 96]), st.integers(1, 500)))
        align = draw(st.one_of(st.none(), st.integers(1, 64), st.sampled_from([3, 48, 64])))
        bufs.append(Buffer(f"b{i}", s, e, size, align))
    return Problem(bufs, alignment=draw(st.sampled_from([1, 5, 16])))


@needs_rv64
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=centred_tree_problems())
def test_greedy_by_size_tree_core_on_centred_tree_stress_problems(p):
    from planners.registry import get_planner

    est = rv64.estimate(p, "greedy_by_size_tree")
    want = np.asarray(get_planner("greedy_by_size").plan(p).offsets, np.int64)
    assert np.array_equal(est.offsets, want), (est.offsets.tolist(), want.tolist())
    check_plan(p, est.offsets)


@needs_rv64
@pytest.mark.parametrize("k", [20, 40])
def test_greedy_by_size_tree_core_interleaved_runs(k):
    """Two tree nodes whose placed blocks interleave in memory: a_j at 20 j (home step 0),
    b_j at 20 j + 10 (home step 2; the g_j that separate the a_j are not live with c). Lifting c
    through the two runs moves one block per pass, so it takes about k passes, beyond core 5's
    pass limit (16), and the heap merge finishes it."""
    from planners.registry import get_planner

    bufs = []
    for j in range(k):
        bufs += [Buffer(f"a{j}", 0, 2, 10), Buffer(f"g{j}", 0, 1, 10)]
    bufs += [Buffer(f"b{j}", 1, 3, 10) for j in range(k)]
    bufs += [Buffer("c", 1, 10, 5), Buffer("pin", 2, 3, 1)]
    p = Problem(bufs, alignment=1)
    want = np.asarray(get_planner("greedy_by_size").plan(p).offsets, np.int64)
    assert want[p.ids.index("c")] == 20 * k  # the construction: [0, 20 k) is full for c
    est = rv64.estimate(p, "greedy_by_size_tree")
    assert np.array_equal(est.offsets, want), (est.offsets.tolist(), want.tolist())


@needs_rv64
def test_code_size_and_stack_of_one_core_images():
    from experiments.rv64.build import core_text_bytes
    from experiments.rv64.emulate import core_stack_bytes

    for build in ("baseline_rv64", "sifive_u74"):
        full = rv64.estimate(seed_000_demo(), "first_fit").stack_bytes[build]
        alone = core_stack_bytes("first_fit", build)
        assert 0 < alone <= full  # the full image's frame also holds the tree core's stack
        assert core_text_bytes("freelist_bump", build) > 0
    # -mcpu=sifive_u74 unrolls and schedules: a larger .text than the baseline build
    assert core_text_bytes("greedy_by_size", "sifive_u74") > core_text_bytes("greedy_by_size",
                                                                             "baseline_rv64")


@needs_rv64
@pytest.mark.parametrize("aligns", [(1, 8, 16, 64), (3, 16, 24, 48)])
def test_greedy_by_size_tree_core_dense_mixed_alignments(aligns):
    """Dense random lifetimes (about 40 buffers live at a step, so every query has runs of all
    three kinds: left path, right path, contained nodes) with per-buffer alignments: powers of
    two (the mask lift and its select after the first raise, where a placed block's aligned top
    may hide the next blocks of the run) and non-powers of two (the dividing lift)."""
    from planners.registry import get_planner

    rng = np.random.default_rng(7)
    n = 300
    starts = rng.integers(0, 300, n)
    lengths = rng.geometric(1 / 40, n)
    sizes = np.clip(np.round(rng.lognormal(6.0, 1.2, n)), 1, 1 << 16).astype(int)
    al = rng.choice(aligns, n)
    bufs = [Buffer(f"b{i}", int(starts[i]), int(starts[i] + lengths[i]), int(sizes[i]),
                   int(al[i])) for i in range(n)]  # fmt: skip
    p = Problem(bufs, alignment=1)
    want = np.asarray(get_planner("greedy_by_size").plan(p).offsets, np.int64)
    est = rv64.estimate(p, "greedy_by_size_tree")
    assert np.array_equal(est.offsets, want), (est.offsets.tolist(), want.tolist())
    check_plan(p, est.offsets)


@needs_rv64
def test_greedy_by_size_tree_core_tops_inside_alignment_padding():
    """Blocks of 10 bytes at 0, 10, ..., 90 (alignment 1, one node) and a later 5-byte buffer
    aligned to 64: the first raise goes to 64, the blocks up to [50, 60) end below it (their
    aligned tops equal 64, x stays), [60, 70) raises to 128. Offsets as greedy_by_size."""
    from planners.registry import get_planner

    bufs = [Buffer(f"a{j}", 0, 10, 10, 1) for j in range(10)]
    bufs += [Buffer("c", 2, 12, 5, 64), Buffer("d", 5, 20, 3, 32)]
    p = Problem(bufs, alignment=1)
    want = np.asarray(get_planner("greedy_by_size").plan(p).offsets, np.int64)
    assert want[p.ids.index("c")] == 128
    est = rv64.estimate(p, "greedy_by_size_tree")
    assert np.array_equal(est.offsets, want), (est.offsets.tolist(), want.tolist())


@needs_rv64
def test_greedy_by_size_tree_core_exact_fit_after_raise():
    """a0..a7 fill [0, 128) and a8 sits at [144, 160) (g, not live with c, holds [128, 144));
    c (16 bytes, alignment 64) is raised to 64 by a0, then to 128 by the blocks it passes, and
    a8 starts exactly at 128 + 16: c fits at 128, the lift must stop at a8 (a block starting at
    x + size does not overlap)."""
    from planners.registry import get_planner

    bufs = [Buffer(f"a{j}", 0, 10, 16, 1) for j in range(8)]
    bufs += [Buffer("g", 0, 3, 16, 1), Buffer("a8", 0, 10, 16, 1), Buffer("c", 5, 12, 16, 64)]
    p = Problem(bufs, alignment=1)
    want = np.asarray(get_planner("greedy_by_size").plan(p).offsets, np.int64)
    assert want[p.ids.index("a8")] == 144 and want[p.ids.index("c")] == 128
    est = rv64.estimate(p, "greedy_by_size_tree")
    assert np.array_equal(est.offsets, want), (est.offsets.tolist(), want.tolist())
