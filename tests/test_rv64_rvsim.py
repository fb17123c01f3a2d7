"""The optional rvsim cross-check of the RV64 allocator cores (experiments.rv64.rvsim_check)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments import rv64
from experiments.rv64 import rvsim_check
from experiments.rv64.build import load_elf
from planners import Buffer, Problem, check_plan
from planners.examples import seed000_problem

OK, REASON = rvsim_check.available()
needs_rvsim = pytest.mark.skipif(
    not OK, reason=f"rvsim cross-check unavailable: {REASON}" if REASON else "available"
)


def seed_000_demo() -> Problem:
    """Seed 000 section 8's graph: residents live the whole schedule, alignment 16."""
    return seed000_problem()


# -- no rvsim needed -------------------------------------------------------------------------------
def test_job_elf_round_trips_through_the_elf_loader(tmp_path):
    code = bytes(range(40))
    job = b"\x01" * 24
    blob = rvsim_check.job_elf([(0x10000, code)], (0x1000000, job), entry=0x10004)
    f = tmp_path / "job.elf"
    f.write_bytes(blob)
    segments, symbols = load_elf(f)
    assert segments == [(0x10000, code), (0x1000000, job)]
    assert symbols == {}
    assert int.from_bytes(blob[24:32], "little") == 0x10004  # e_entry


def test_job_bytes_layout_matches_the_header():
    job, p_off = rvsim_check.job_bytes(1, [0, 1], [2, 3], [16, 32], [16, 16], [0, 0], 16, 0x1000)
    n = 2
    assert len(job) == 128 + 8 * (6 * n + 13 * n + 64)  # inputs, offsets, scratch 13 n + 64
    head = np.frombuffer(job[: 13 * 8], "<i8")
    assert head[:3].tolist() == [1, n, 16]
    assert head[4] == 0x1000 + 128  # start array right after the 128-byte header
    assert p_off == 0x1000 + 128 + 5 * 8 * n == head[9]
    sizes = np.frombuffer(job[128 + 2 * 8 * n : 128 + 3 * 8 * n], "<i8")
    assert sizes.tolist() == [16, 32]


def test_missing_rvsim_gives_clear_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "rvsim", None)  # `import rvsim` raises ImportError
    ok, reason = rvsim_check.available()
    assert not ok
    if rv64.available()[0]:  # else the reason names ziglang/unicorn first
        assert "rvsim" in reason and "pip install" in reason
    with pytest.raises(rvsim_check.RvsimUnavailable):
        rvsim_check.run_rvsim(seed_000_demo(), "greedy_in_order")


# -- with rvsim -----------------------------------------------------------------------------------
@needs_rvsim
@pytest.mark.parametrize("core", list(rvsim_check.RVSIM_CORES))
def test_seed_000_demo_in_rvsim(core):
    p = seed_000_demo()
    r = rvsim_check.run_rvsim(p, "greedy_in_order", core)
    got = dict(zip(p.ids, r.offsets.tolist(), strict=True))
    # the seed's own output (seed 000 section 8)
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
    assert r.arena == 352256
    assert r.offsets_match is True
    est = rv64.estimate(p, "greedy_in_order")
    ours = est.instructions_u74 if core == "u74" else est.instructions
    assert r.instructions == ours  # rvsim retires exactly the range our block trace counts
    width = rvsim_check.RVSIM_CORES[core]["width"]
    assert r.cycles >= r.instructions / width  # an in-order core cannot beat its issue width


@st.composite
def problems(draw):
    n = draw(st.integers(1, 14))
    bufs = []
    for i in range(n):
        s = draw(st.integers(0, 8))
        e = s + draw(st.integers(1, 6))
        size = draw(st.one_of(st.just(0), st.sampled_from([16, 32, 48]), st.integers(1, 300)))
        align = draw(st.sampled_from([None, 1, 8, 32]))
        kind = draw(st.sampled_from(["activation", "activation", "resident"]))
        bufs.append(Buffer(f"b{i}", s, e, size, align, kind))
    return Problem(bufs, alignment=draw(st.sampled_from([1, 16])))


@needs_rvsim
@pytest.mark.parametrize("planner", rv64.CORE_NAMES)
@settings(max_examples=examples(4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=problems())
def test_rvsim_offsets_and_instructions_equal_ours(planner, p):
    est = rv64.estimate(p, planner, check=False)
    for core, ours in (("u74", est.instructions_u74), ("c906", est.instructions)):
        r = rvsim_check.run_rvsim(p, planner, core)
        assert r.offsets_match, (r.offsets.tolist(), r.python_offsets.tolist())
        check_plan(p, r.offsets)
        assert r.instructions == ours
        assert r.cycles >= r.instructions / rvsim_check.RVSIM_CORES[core]["width"]


@needs_rvsim
def test_rvsim_is_deterministic():
    p = Problem.from_arrays([0, 0, 1, 2, 2], [2, 1, 3, 4, 3], [64, 32, 96, 16, 48], alignment=16)
    a = rvsim_check.run_rvsim(p, "best_fit", "u74")
    b = rvsim_check.run_rvsim(p, "best_fit", "u74")
    assert (a.cycles, a.instructions, a.stats) == (b.cycles, b.instructions, b.stats)


@needs_rvsim
def test_bad_names_raise():
    p = seed_000_demo()
    with pytest.raises(ValueError, match="no RV64 core"):
        rvsim_check.run_rvsim(p, "exact_cpsat")
    with pytest.raises(ValueError, match="unknown rvsim core"):
        rvsim_check.run_rvsim(p, "first_fit", core="c910")
