"""omnimalloc (PyPI ``omnimalloc``) as a peer: its plans are checked by memplan's validator, and
the two toolkits' known-optimum generators are checked by each other's validators.

Skipped where omnimalloc is not installed (``pip install omnimalloc``), except the refusal
without it.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from experiments.bench import known, peers
from planners import FunctionPlanner, Problem, check_plan, lower_bound

omnimalloc = pytest.importorskip("omnimalloc", reason="omnimalloc is not installed "
                                 "(pip install omnimalloc)")


def _peer(allocator: str, timeout=0.5):
    return FunctionPlanner(peers.omnimalloc_offsets, name=f"omnimalloc_{allocator}",
                           allocator=allocator, timeout=timeout)


@pytest.mark.parametrize("allocator", ["supermalloc", "omni", "telamalloc", "greedy_by_all"])
def test_tiny_problem_plan_validates(allocator):
    # a [0,2) 4 B, b [1,3) 8 B, c [2,4) 4 B: optimum 12 (max live 12 at steps 1 and 2)
    p = Problem.from_arrays([0, 1, 2], [2, 3, 4], [4, 8, 4], ids=["a", "b", "c"])
    pl = _peer(allocator).plan(p)
    check_plan(p, pl.offsets)
    assert pl.arena_size == 12 and pl.status == "optimal"
    assert pl.info["allocator"] == allocator and pl.info["unit"] == 1


def test_supermalloc_records_its_own_verdict():
    p = Problem.from_arrays([0, 1, 2], [2, 3, 4], [4, 8, 4])
    pl = _peer("supermalloc").plan(p)
    assert pl.info["proved_optimal"] is True and pl.info["omnimalloc_lower_bound"] == 12


def test_alignment_and_zero_sizes():
    # alignment 8: sizes 5, 3, 0 B go to omnimalloc as 1, 1, 0 units of 8 B; the zero-size
    # buffer (omnimalloc refuses size 0) stays at 0
    p = Problem.from_arrays([0, 0, 0], [2, 2, 2], [5, 3, 0], alignment=8)
    pl = _peer("supermalloc").plan(p)
    check_plan(p, pl.offsets)
    assert sorted(pl.offsets.tolist()) == [0, 0, 8] and pl.offsets[2] == 0
    assert pl.arena_size == 11 and pl.info["unit"] == 8


def test_mixed_alignments_use_their_lcm():
    from planners import Buffer

    p = Problem([Buffer("a", 0, 2, 6, alignment=4), Buffer("b", 0, 2, 6, alignment=6)])
    pl = _peer("omni").plan(p)
    check_plan(p, pl.offsets)
    assert pl.info["unit"] == 12 and sorted(pl.offsets.tolist()) == [0, 12]


def test_unknown_allocator_and_missing_dependency():
    p = Problem.from_arrays([0], [1], [4])
    with pytest.raises(peers.MemplanError, match="unknown omnimalloc allocator 'nope'"):
        _peer("nope").plan(p)
    with pytest.raises(peers.OmnimallocMissing, match="minimalloc"):
        _peer("minimalloc").plan(p)  # needs Google's minimalloc package


def test_refused_without_omnimalloc(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "omnimalloc", None)  # import omnimalloc -> ImportError
    monkeypatch.setitem(sys.modules, "omnimalloc.allocators", None)
    p = Problem.from_arrays([0, 1], [2, 3], [4, 4], name="tiny")
    with pytest.raises(peers.OmnimallocMissing, match="pip install omnimalloc"):
        _peer("supermalloc").plan(p)
    rows = peers.run(tmp_path / "p.csv", [("tiny", "test", p)], repeats=1,
                     planners=[pl for pl in peers.PEERS if pl[0].startswith("omnimalloc_")])
    assert {r["status"] for r in rows} == {"refused"}
    assert all("not installed" in r["note"] for r in rows)


def test_omnimalloc_on_known_optima():
    """Differential (the full count: ``python -m experiments.bench.known --peer-differential
    N``): omnimalloc's validator accepts memplan's known plans, omnimalloc's plans of them pass
    memplan's check_plan and are never below the optimum, and supermalloc never claims
    ``proved_optimal`` above it; 16 generated problems."""
    ran, failed, messages = known.peer_differential(16, seed=0, timeout=0.3)
    assert ran == 16 and failed == 0, messages


def test_peer_differential_catches_a_false_claim(monkeypatch):
    """The check can fail: a supermalloc that claims optimality for a greedy plan is caught."""
    real = peers.omnimalloc_offsets

    def boastful(problem, allocator="supermalloc", timeout=None):
        res = real(problem, "omni" if allocator == "supermalloc" else allocator, timeout)
        res.info["proved_optimal"] = True
        return res

    monkeypatch.setattr(peers, "omnimalloc_offsets", boastful)
    ran, failed, messages = known.peer_differential(8, seed=0)
    assert ran == 8 and failed >= 1
    assert all("proved_optimal at" in m for m in messages)


@pytest.mark.parametrize("kind", known.OMNIMALLOC_KINDS)
def test_omnimalloc_generators_checked_by_memplan(kind):
    """omnimalloc's own known-optimum instances: its ground truth passes memplan's check_plan at
    its claimed optimum, and memplan's lower bound equals the claim (so it is proved)."""
    for seed in range(4):
        ko = known.omnimalloc_problem(kind, 40, seed)
        check_plan(ko.problem, ko.offsets, capacity=ko.optimum)
        assert lower_bound(ko.problem) == ko.optimum == 1 << 20
        assert ko.problem.n == (41 if kind == "omnimalloc_pinwheel" else 40)
        assert int(np.max(ko.offsets + ko.problem.sizes)) == ko.optimum
