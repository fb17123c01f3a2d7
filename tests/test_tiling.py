"""Tiling arithmetic: halo formula, receptive fields, tiled conv == untiled conv, tile choice."""

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduling.errors import GraphError
from scheduling.tiling import (
    BudgetError,
    ConvSpec,
    Window,
    chain_input_interval,
    choose_conv_tile,
    choose_matmul_block,
    conv2d,
    conv_chain,
    conv_chain_tiled,
    halo,
    halo_overhead,
    matmul_block_bytes,
    micro_batch_size,
    receptive_field,
)


def test_halo_hand_computed_k3_k5_stride2():
    # k=3, s=2: a tile of 4 outputs reads rows 2*0-1 .. 2*3-1+2 = [-1, 8): 9 rows = 4*2 + 1
    w3 = Window(3, 2, 1)
    assert w3.input_interval(0, 4) == (-1, 8)
    assert halo(3, stride=2) == 0.5          # (3 - 2 + ... ) 1 extra row shared by 2 sides
    # k=5, s=2: 4 outputs read (4-1)*2 + 5 = 11 rows = 4*2 + 3
    w5 = Window(5, 2, 2)
    lo, hi = w5.input_interval(0, 4)
    assert (lo, hi) == (-2, 9) and hi - lo == 11
    assert halo(5, stride=2) == 1.5
    # stride 1: seed 000's (k - 1) / 2
    assert halo(3) == 1 and halo(5) == 2


def test_halo_overhead_seed_formula():
    # seed 000 section 7: 1 - BH*BW / ((BH + k - 1)(BW + k - 1))
    assert halo_overhead(8, 8, 3) == pytest.approx(1 - 64 / 100)
    assert halo_overhead(16, 4, 5) == pytest.approx(1 - 64 / (20 * 8))
    # stride 2, k = 3, 4x4 tile: input 9x9, non-overlapping share 8x8
    assert halo_overhead(4, 4, 3, stride=2) == pytest.approx(1 - 64 / 81)


def test_receptive_field_and_chain_intervals():
    assert receptive_field([Window(3, 1)] * 3) == (7, 1)
    assert receptive_field([Window(3, 2), Window(3, 2), Window(1, 1)]) == (7, 4)
    assert receptive_field([Window(3, 1, 0, 2)]) == (5, 1)
    # chain: 16 -> (k3 s2 p1) -> 8 -> (k3 s1 p1) -> 8; output rows [2, 4) need
    # layer-1 rows [1, 5) and input rows [1*2-1, 4*2-1+3) = [1, 10)
    iv = chain_input_interval([Window(3, 2, 1), Window(3, 1, 1)], [16, 8, 8], 2, 4)
    assert [tuple(map(int, x)) for x in iv] == [(1, 10), (1, 5), (2, 4)]


def _rand_chain(rng):
    x = rng.integers(-3, 4, (2, 3, 21, 17)).astype(np.float64)
    specs = [
        ConvSpec(rng.integers(-2, 3, (6, 3, 3, 3)).astype(float), (2, 2), (1, 1, 1, 1), relu=True),
        ConvSpec(rng.integers(-2, 3, (6, 1, 5, 5)).astype(float), (1, 1), (2, 2, 2, 2), groups=6),
        ConvSpec(rng.integers(-2, 3, (4, 6, 3, 3)).astype(float), (2, 1), (2, 1, 2, 1), (2, 1)),
    ]
    return x, specs


def test_conv2d_matches_direct_loop():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 2, 6, 5))
    w = rng.normal(size=(3, 2, 3, 3))
    y = conv2d(x, ConvSpec(w, (2, 1), (1, 1, 1, 1)))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 3, 3, 5))
    for o in range(3):
        for i in range(3):
            for j in range(5):
                ref[0, o, i, j] = (xp[0, :, 2 * i:2 * i + 3, j:j + 3] * w[o]).sum()
    np.testing.assert_allclose(y, ref)


@pytest.mark.parametrize("tiles", [(1, 1), (2, 3), (3, 2), (4, 4)])
def test_tiled_conv_chain_equals_untiled(tiles):
    x, specs = _rand_chain(np.random.default_rng(0))
    y = conv_chain(x, specs)
    yt, stats = conv_chain_tiled(x, specs, tiles)
    assert np.array_equal(y, yt)  # integer-valued floats: exact
    if tiles == (1, 1):
        assert stats["input_elements_read"] == 21 * 17
    else:
        assert stats["input_elements_read"] > 21 * 17  # halos are read twice


@settings(max_examples=examples(25), deadline=None)
@given(h=st.integers(5, 14), w=st.integers(5, 14), k=st.sampled_from([1, 3, 5]),
       s=st.integers(1, 2), d=st.integers(1, 2), th=st.integers(1, 4), tw=st.integers(1, 4),
       seed=st.integers(0, 1000))
def test_tiled_conv_property(h, w, k, s, d, th, tw, seed):
    rng = np.random.default_rng(seed)
    pad = (k - 1) * d // 2
    specs = [ConvSpec(rng.integers(-2, 3, (3, 2, k, k)).astype(float), (s, s), (pad,) * 4, (d, d)),
             ConvSpec(rng.integers(-2, 3, (2, 3, 3, 3)).astype(float), (1, 1), (1, 1, 1, 1))]
    x = rng.integers(-3, 4, (1, 2, h, w)).astype(float)
    y = conv_chain(x, specs)
    if th > y.shape[2] or tw > y.shape[3]:
        with pytest.raises(GraphError):
            conv_chain_tiled(x, specs, (th, tw))
        return
    yt, _ = conv_chain_tiled(x, specs, (th, tw))
    assert np.array_equal(y, yt)


def test_choose_conv_tile_fits_and_is_vlen_aligned():
    r = choose_conv_tile(112, 112, 32, 32, 3, 16384, groups=32, itemsize=1, vlen_bits=128)
    assert r["bytes"] <= 16384 and r["tw"] % 16 == 0
    assert r["overhead"] == pytest.approx(halo_overhead(r["th"], r["tw"], 3))
    # more memory never gives more overhead (runtime-adaptive choice)
    r2 = choose_conv_tile(112, 112, 32, 32, 3, 65536, groups=32, itemsize=1, vlen_bits=128)
    assert r2["overhead"] <= r["overhead"]
    with pytest.raises(BudgetError, match="smallest working set"):
        choose_conv_tile(112, 112, 32, 32, 3, 200, groups=32)


def test_matmul_blocking_working_set():
    assert matmul_block_bytes(512, 16) == 2 * 16 * 512 + 256  # bk + kb + b^2
    r = choose_matmul_block(256, 512, 256, 65536)
    assert r["bytes"] <= 65536 and r["b"] % 16 == 0
    assert matmul_block_bytes(512, r["b"] + 16) > 65536  # the next aligned block would not fit
    with pytest.raises(BudgetError):
        choose_matmul_block(256, 512, 256, 1000)


def test_micro_batch():
    assert micro_batch_size(32, 1000, 500, 8600) == 8
    assert micro_batch_size(4, 1000, 0, 10**6) == 4
    with pytest.raises(BudgetError, match="1500 bytes"):
        micro_batch_size(8, 1000, 500, 1200)
