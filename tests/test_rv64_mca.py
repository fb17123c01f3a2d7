"""The U74 pipeline model against llvm-mca -mcpu=sifive-u74 (experiments.rv64.mca)."""

from __future__ import annotations

import pytest

from experiments import rv64
from experiments.rv64 import mca
from experiments.rv64.cycles import block_cycles, block_cycles_reference
from experiments.rv64.decode import decode_block

LLVM, WHY = mca.find_llvm()
OK, REASON = rv64.available()
needs_llvm = pytest.mark.skipif(LLVM is None, reason=f"llvm-mca cross-check skipped: {WHY}")
needs_rv64 = pytest.mark.skipif(not OK, reason=REASON or "rv64 toolchain available")

# Steady-state cycles per iteration of the hand-made sequences as llvm-mca 19 reports them
# (-mcpu=sifive-u74, (C(200) - C(100)) / 100); our model must give the same numbers.
EXPECTED = {
    "alu_chain": 3.0,  # ALU -> ALU 1 cycle (latency 3, ReadAdvance 2)
    "load_to_alu": 2.5,  # load -> ALU 1 cycle
    "load_to_branch": 1.0,  # load -> branch 1 cycle
    "alu_to_load_address": 4.0,  # ALU -> load address 3 cycles (ReadMemBase: no advance)
    "pointer_chase": 6.0,  # load -> load address 3 cycles
    "load_alu_load": 7.0,  # 1 + 3 + 3
    "mul_chain": 6.0,  # multiply -> multiply operand 3 cycles
    "mul_to_alu": 4.0,  # ALU -> multiply 3 cycles, multiply -> ALU 1 cycle
    "div_then_alu": 65.0,  # divider busy 65 cycles
    "divw_chain": 34.0,  # 32-bit divide latency 34
    "load_store": 3.0,  # in-order write-back: the store waits for the load's write-back
    "alu_store": 2.0,
    "load_to_store_data": 3.0,  # ReadStoreData bypass: the store waits only for write-back order
    "load_to_store_address": 4.0,  # ReadMemBase: full load latency
    "alu_to_store_data": 2.0,
    "compare_loop": 5.0,
    "mixed_pipes": 2.0,
}


def test_expected_table_covers_the_sequences():
    assert set(EXPECTED) == set(mca.HAND_SEQUENCES)


@needs_rv64
@needs_llvm
def test_hand_sequences_equal_llvm_mca():
    rows = mca.hand_rows(LLVM)
    assert len(rows) >= 10
    for r in rows:
        assert r.mca == EXPECTED[r.block], (r.block, r.mca)
        assert abs(r.ratio - 1) <= 0.05, (r.block, r.ours, r.mca)
        assert r.ours == EXPECTED[r.block]


@needs_rv64
@needs_llvm
def test_hottest_core_blocks_within_5_percent_of_llvm_mca():
    from planners.random_problems import random_problem

    rows = mca.core_rows(LLVM, random_problem(64, seed=0, alignment=16), rv64.CORE_NAMES, 3)
    assert len(rows) >= 10
    for r in rows:
        assert abs(r.ratio - 1) <= 0.05, (r.block, r.ours, r.mca, r.asm)


@needs_rv64
def test_compiled_block_model_equals_reference():
    # same semantics in C (hostsim.c) and Python; encodings printed by llvm-mc (RV64IM)
    code = bytes.fromhex(
        "03b50500"  # ld a0, 0(a1)
        "3306d500"  # add a2, a0, a3
        "23b0c500"  # sd a2, 0(a1)  (store after ALU)
        "93850500"  # addi a1, a1, 0 (mv a1, a1)
        "3305b502"  # mul a0, a0, a1
    )
    insns = decode_block(code)
    assert [i.kind for i in insns] == ["load", "alu", "store", "alu", "mul"]
    for it in (1, 7, 100):
        for m in ("u74", "c906"):
            assert block_cycles(insns, m, it) == block_cycles_reference(insns, m, it)
