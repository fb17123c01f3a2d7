"""The block memo of the in-hook core models (experiments/rv64/hostsim.c) changes nothing.

The memo costs a basic block from its entry state (ready times relative to the issue cycle,
issue group, branch outcome, cache outcomes); these tests run every core with the memo on and
off and require identical results in every counter, with the memo actually used.
"""

from __future__ import annotations

import numpy as np
import pytest

from experiments import rv64
from planners import Problem

OK, REASON = rv64.available()
needs_rv64 = pytest.mark.skipif(not OK, reason=REASON or "rv64 toolchain available")


def _pipes(core, p, cpu, key, memo):
    from experiments.rv64 import _measure
    from experiments.rv64.build import build_image
    from experiments.rv64.cycles import CORE_MODELS, host_library

    lib = host_library()
    old = lib.memplan_set_memo(memo)
    try:
        m = CORE_MODELS[key]
        run, by_class = _measure(build_image(cpu), core, p, 16, [m, m.without_caches()])
    finally:
        lib.memplan_set_memo(old)
    return run.sim.pipes, by_class, run.offsets


@needs_rv64
@pytest.mark.parametrize("cpu,key", [("sifive_u74", "u74"), ("baseline_rv64", "c906")])
def test_memo_on_and_off_give_identical_counts(cpu, key):
    rng = np.random.default_rng(11)
    n = 150
    s = rng.integers(0, 60, n)
    p = Problem.from_arrays(s, s + rng.integers(1, 25, n), rng.integers(0, 5000, n),
                            alignment=8)  # fmt: skip
    for core in rv64.CORE_NAMES:
        on, by_on, off_on = _pipes(core, p, cpu, key, 1)
        off, by_off, off_off = _pipes(core, p, cpu, key, 0)
        assert by_on == by_off and np.array_equal(off_on, off_off), core
        for a, b in zip(on, off, strict=True):
            assert b["memo_hits"] == 0 and b["memo_misses"] == 0
            assert a["memo_hits"] > 0, core  # the memo was used ...
            strip = {k: v for k, v in a.items() if not k.startswith("memo")}
            assert strip == {k: v for k, v in b.items() if not k.startswith("memo")}, core
