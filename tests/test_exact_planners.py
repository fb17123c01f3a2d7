"""Tests of the exact planners (cpsat, ilp_blocks, milp_offsets) and the colouring planners
(chaitin, interval_colouring): hand-checked optima, infeasibility, time limits, validity and
agreement on random small problems."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planners import (
    PLANNERS,
    Buffer,
    CapacityError,
    ParameterError,
    Problem,
    ProblemError,
    check_plan,
    is_valid,
    lower_bound,
    plan,
)
from planners.colouring import (
    interference_edges,
    interval_colouring_blocks,
    layout_blocks,
    max_live_count,
)
from planners.examples import exercise_5_1_problem
from planners.ilp_blocks import maximal_cliques

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "benchmarks" / "minimalloc"

EXACT_KW = dict(time_limit=20, warm_start=True)


def seed_exercise_5_1() -> Problem:
    """Seed 002 exercise 5.1 (closed lifetimes, sizes in MB used as bytes)."""
    return exercise_5_1_problem()


def greedy_trap() -> Problem:
    """A problem where greedy by size (largest first, lowest fitting offset) is not optimal.

    Half-open lifetimes: a [0,2) 3, b [2,4) 1, c [0,3) 1, d [3,4) 3. Live bytes: t0 a+c=4, t1 4,
    t2 b+c=2, t3 b+d=4, so the lower bound is 4.
    Greedy by size (a, d, b, c): a->0; d does not meet a in time -> 0; b meets d -> 3; c meets a
    ([0,3)) and b ([3,4)) -> 4: arena 5.
    Optimum 4: a=0, c=3, d=1, b=0 (b meets c at t2: [0,1) vs [3,4); b meets d at t3: [0,1) vs
    [1,4); a/b, a/d, c/d never live together).
    """
    return Problem.from_arrays([0, 2, 0, 3], [2, 4, 3, 4], [3, 1, 1, 3], ids=list("abcd"))


def gap_problem() -> Problem:
    """Optimum 6 > lower bound 5 (found by a search, checked by hand).

    Half-open: A [0,1) 3, B [0,2) 2, C [1,3) 2, D [2,3) 1, E [1,4) 1, F [2,4) 1, G [3,5) 3,
    H [4,5) 2. Live bytes are 5 at every step (t0 A+B, t1 B+C+E, t2 C+D+E+F, t3 E+F+G, t4 G+H).
    Why 5 bytes cannot work: the layout mirrored (x -> 5 - x - size) is valid too, so let B = 0
    (t0 leaves B at 0 or 3). t1: C, E fill [2, 5): C = 2, E = 4 or C = 3, E = 2. t3: G (3 bytes)
    at 0 or 2 leaves E, F in {3, 4} or {0, 1}, so E = 4, hence C = 2, G = 0, F = 3; but at t2 F at 3
    overlaps C's [2, 4). Six bytes suffice, e.g. A0 B3 C0 D2 E5 F3 G0 H3.
    """
    return Problem.from_arrays(
        [0, 0, 1, 2, 1, 2, 3, 4],
        [1, 2, 3, 3, 4, 4, 5, 5],
        [3, 2, 2, 1, 1, 1, 3, 2],
        ids=list("ABCDEFGH"),
    )


def path_problem() -> Problem:
    """Closed a[0,1] 10, b[1,2] 1, c[2,3] 1, d[3,4] 10: interference graph is the path a-b-c-d."""
    return Problem.from_closed([("a", 0, 1, 10), ("b", 1, 2, 1), ("c", 2, 3, 1), ("d", 3, 4, 10)])


def _greedy_by_size_reference(p: Problem) -> int:
    order = sorted(range(p.n), key=lambda i: (-int(p.sizes[i]), i))
    off: dict[int, int] = {}
    for i in order:
        occ = sorted(
            (off[j], off[j] + int(p.sizes[j]))
            for j in off
            if p.starts[i] < p.ends[j] and p.starts[j] < p.ends[i]
        )
        o = 0
        for a, b in occ:
            if o + p.sizes[i] <= a:
                break
            o = max(o, b)
        off[i] = o
    return max(off[i] + int(p.sizes[i]) for i in off)


# -- hand-checked optima ---------------------------------------------------------------------------


@pytest.mark.parametrize("formulation", ["nooverlap2d", "pairwise"])
def test_cpsat_seed_exercise_5_1(formulation):
    # T1 [0,3] and T5 [4,7] are the only pair never live together; T2, T3, T4 meet everyone. So
    # T2, T3, T4 and the shared range of T1/T5 (max(100, 180) = 180) are disjoint:
    # 200 + 150 + 250 + 180 = 780, which is also the live bytes at step 4 (T2..T5): optimum 780.
    p = seed_exercise_5_1()
    assert lower_bound(p) == 780
    r = plan(p, "cpsat", formulation=formulation, **EXACT_KW)
    assert r.status == "optimal"
    assert r.arena_size == 780
    assert r.best_bound == 780
    # the five buffers take 880 bytes without reuse, so reuse really happened
    assert plan(p, "naive").arena_size == 880


@pytest.mark.parametrize("name", ["cpsat", "milp_offsets"])
def test_exact_beats_greedy_by_size(name):
    p = greedy_trap()
    assert _greedy_by_size_reference(p) == 5
    if "greedy_by_size" in PLANNERS:
        assert plan(p, "greedy_by_size").arena_size >= 4
    r = plan(p, name, time_limit=20, warm_start=False)
    assert (r.status, r.arena_size) == ("optimal", 4)
    check_plan(p, r.offsets)


def test_ilp_blocks_path_more_blocks_help():
    p = path_problem()
    assert max_live_count(p) == 2
    for backend in ("ortools", "pulp"):
        two = plan(p, "ilp_blocks", backend=backend, time_limit=20)
        # optimal among shared-block layouts ({a, c}, {b, d}) but above the lower bound: "feasible"
        assert (two.status, two.arena_size) == ("feasible", 20)
        assert two.info["solver_claim"] == "optimal"
        three = plan(p, "ilp_blocks", backend=backend, blocks=3, time_limit=20)
        assert (three.status, three.arena_size) == ("feasible", 12)  # {a, d}, {b}, {c}
    assert plan(p, "cpsat").arena_size == 11  # offsets: a and d share [0, 10), b, c at 10
    assert plan(p, "interval_colouring").arena_size == 20
    assert plan(p, "chaitin").arena_size == 20


def test_ilp_blocks_other_solvers_and_edge_constraints():
    p = seed_exercise_5_1()
    for kw in (
        {"solver": "CBC"},
        {"solver": "CP_SAT"},
        {"conflicts": "edge"},
        {"symmetry_breaking": False, "warm_start": False},
    ):
        r = plan(p, "ilp_blocks", time_limit=20, **kw)
        assert (r.status, r.arena_size) == ("optimal", 780), kw


# -- infeasible, timeouts, errors ------------------------------------------------------------------


def test_capacity_below_lower_bound_is_refused():
    p = path_problem().with_capacity(10)  # live bytes 11 at step 1 (a + b)
    with pytest.raises(CapacityError, match="below the lower bound"):
        plan(p, "cpsat")


@pytest.mark.parametrize(
    "name,kw",
    [
        ("cpsat", {"mode": "decide"}),
        ("cpsat", {"mode": "minimize"}),
        ("cpsat", {"mode": "minimize", "formulation": "pairwise"}),
        ("milp_offsets", {}),
    ],
)
def test_infeasible_above_lower_bound(name, kw):
    p = gap_problem()
    lb = lower_bound(p)
    r = plan(p.with_capacity(lb), name, time_limit=20, **kw)
    assert r.status == "infeasible"
    assert r.best_bound is None or r.best_bound >= lb
    opt = plan(p, "cpsat", time_limit=20)
    assert opt.status == "optimal" and opt.arena_size == 6 == lb + 1
    assert is_valid(p, [0, 3, 0, 2, 5, 3, 0, 3], capacity=6)  # the layout in the docstring


def test_cpsat_capacity_constrains_minimisation():
    # A capacity (e.g. from NAME.CAPACITY.csv) no longer turns cpsat into a decision solver: the
    # default mode minimises subject to arena <= capacity; "decide" only when asked; "auto" is
    # the earlier behaviour. info["mode"] says which ran.
    p = Problem.from_arrays([1, 1, 0, 0], [3, 2, 1, 2], [3, 3, 4, 4], capacity=100)
    r = plan(p, "cpsat", time_limit=20, heuristic_first=False, warm_start=False, workers=1)
    assert r.info["mode"] == "minimize" and r.info["mode_requested"] == "minimize"
    assert r.arena_size == 10 and r.status == "optimal" and r.best_bound == 10
    d = plan(p, "cpsat", mode="auto", time_limit=20, heuristic_first=False, workers=1)
    assert d.info["mode"] == "decide" and d.info["mode_requested"] == "auto"
    assert d.arena_size <= 100
    # 2 B buffers aligned to 4 and 1 B buffers, four each, at one step: optimum 14 (one aligned
    # buffer starts at >= 12). Capacity 13: proved infeasible, so the arena is >= 14.
    bufs = [Buffer(f"w{i}", 0, 1, 2, alignment=4) for i in range(4)]
    bufs += [Buffer(f"u{i}", 0, 1, 1) for i in range(4)]
    q = Problem(bufs, capacity=13)
    r = plan(q, "cpsat", time_limit=20, workers=1)
    assert r.status == "infeasible" and r.best_bound == 14 and r.info["mode"] == "minimize"


def test_cpsat_time_limit_still_returns_valid_plan_and_bound():
    rng = np.random.default_rng(0)
    n = 120
    s = rng.integers(0, 60, n)
    p = Problem.from_arrays(s, s + rng.integers(1, 25, n), rng.integers(1, 1000, n))
    # deterministic_time makes the stop reproducible on any machine
    r = plan(p, "cpsat", time_limit=30, deterministic_time=1e-3, warm_start=True)
    assert r.status == "feasible"
    check_plan(p, r.offsets)
    assert lower_bound(p) <= r.best_bound <= r.arena_size
    assert r.arena_size <= r.info["warm_start_arena"]
    # without a warm start and in decide mode at a generous capacity, nothing may be found in time
    d = plan(
        p.with_capacity(10**9), "cpsat", mode="decide", deterministic_time=1e-3, warm_start=False
    )
    assert d.status in ("optimal", "feasible", "timeout")
    if d.status == "timeout":
        assert d.info["solver_status"] == "UNKNOWN"


def test_milp_time_limit_returns_valid_plan():
    rng = np.random.default_rng(1)
    n = 40
    s = rng.integers(0, 30, n)
    p = Problem.from_arrays(s, s + rng.integers(1, 12, n), rng.integers(1, 100, n))
    r = plan(p, "milp_offsets", time_limit=1)
    assert r.status in ("feasible", "optimal")
    check_plan(p, r.offsets)
    assert lower_bound(p) <= r.best_bound <= r.arena_size


@pytest.mark.parametrize(
    "name,kw,error,match",
    [
        ("cpsat", {"formulation": "boxes"}, ParameterError, "'formulation' = 'boxes'"),
        ("cpsat", {"mode": "fast"}, ParameterError, "'mode' = 'fast'"),
        ("cpsat", {"mode": "decide"}, ProblemError, "needs a capacity"),
        ("ilp_blocks", {"backend": "gurobi"}, ParameterError, "'backend' = 'gurobi'"),
        ("ilp_blocks", {"solver": "HIGHS"}, ParameterError, "'solver' = 'HIGHS'"),
        ("ilp_blocks", {"blocks": 1}, ProblemError, "below the clique number"),
        ("ilp_blocks", {"conflicts": "pairs"}, ParameterError, "'conflicts' = 'pairs'"),
        ("chaitin", {"k": 0}, ParameterError, "'k' = 0"),
        ("chaitin", {"spill_rule": "random"}, ParameterError, "'spill_rule' = 'random'"),
    ],
)
def test_bad_parameters_raise_parameter_error_bad_problems_problem_error(name, kw, error, match):
    # a value a parameter's rules forbid is a ParameterError, whatever the problem; a rule that
    # depends on the problem (its capacity, its clique number) stays a ProblemError
    with pytest.raises(error, match=match) as e:
        plan(seed_exercise_5_1(), name, **kw)
    assert type(e.value) is error


# -- colouring planners ----------------------------------------------------------------------------


def test_interval_colouring_reuses_largest_free_block():
    # closed x[0,0] 100, y[0,0] 10, z[1,1] 50: at z both blocks are free; seed 001 reuses the largest
    # (x's, 100 bytes) -> blocks {x, z} 100 and {y} 10: arena 110 (reusing y's would give 150).
    p = Problem.from_closed([("x", 0, 0, 100), ("y", 0, 0, 10), ("z", 1, 1, 50)])
    assert interval_colouring_blocks(p).tolist() == [0, 1, 0]
    r = plan(p, "interval_colouring")
    assert r.arena_size == 110
    assert r.as_dict() == {"x": 0, "y": 100, "z": 0}


def test_interval_colouring_touching_lifetimes_share():
    # closed [0,1] and [1,2] meet at step 1 (not shareable); [2,3] can reuse [0,1]'s block
    p = Problem.from_closed([("a", 0, 1, 8), ("b", 1, 2, 4), ("c", 2, 3, 8)])
    assert interval_colouring_blocks(p).tolist() == [0, 1, 0]
    assert plan(p, "interval_colouring").arena_size == 12


def test_chaitin_spills_when_k_too_small():
    # three buffers live together, sizes 1, 2, 3, k=1: all degrees 2 >= 1 -> spill least
    # size/degree (size 1: 1/2), then degrees 1: spill size 2 (2/1 < 3/1); size 3 simplifies.
    p = Problem.from_arrays([0, 0, 0], [2, 2, 2], [1, 2, 3])
    r = plan(p, "chaitin", k=1)
    assert r.info["spilled"] == 2 and r.info["blocks"] == 3
    assert r.arena_size == 6
    assert r.as_dict() == {"2": 0, "0": 3, "1": 4}
    # with the default k (= 3 live buffers) no spill is needed and the arena is the same 6
    d = plan(p, "chaitin")
    assert d.info["spilled"] == 0 and d.info["k"] == 3 and d.arena_size == 6


def test_colouring_zero_size_and_alignment():
    p = Problem(
        [
            *Problem.from_closed(
                [("a", 0, 1, 5), ("b", 1, 2, 3), ("z", 0, 2, 0), ("c", 2, 3, 7)]
            ).buffers
        ],
        alignment=4,
    )
    for name in ("chaitin", "interval_colouring", "cpsat", "milp_offsets", "ilp_blocks"):
        r = plan(p, name)
        check_plan(p, r.offsets)
        assert r.offset_of("z") == 0
        assert all(o % 4 == 0 for o in r.offsets.tolist())
    # blocks {a, c} (7 bytes) then {b} at the next multiple of 4: offset 8, arena 11
    assert plan(p, "interval_colouring").arena_size == 11
    assert plan(p, "cpsat").arena_size == 11


def test_layout_blocks_lcm_alignment():
    from planners import Buffer

    p = Problem(
        [
            Buffer("a", 0, 1, 3, alignment=2),
            Buffer("b", 0, 1, 5, alignment=3),
            Buffer("c", 1, 2, 1, alignment=4),
        ]
    )
    off, sizes = layout_blocks(p, np.array([0, 1, 1]))
    # block 0 = {a} 3 bytes at 0; block 1 = {b, c} at lcm(3, 4) = 12 -> offset 12
    assert off.tolist() == [0, 12, 12] and sizes.tolist() == [3, 5]


# -- random agreement (hypothesis) -----------------------------------------------------------------


@st.composite
def small_problems(draw, max_n=8, max_time=8, max_size=12):
    n = draw(st.integers(1, max_n))
    starts = draw(st.lists(st.integers(0, max_time - 1), min_size=n, max_size=n))
    lens = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    sizes = draw(st.lists(st.integers(0, max_size), min_size=n, max_size=n))
    return Problem.from_arrays(starts, [s + d for s, d in zip(starts, lens, strict=True)], sizes)


def _best_blocks_exhaustive(p: Problem, m: int) -> int:
    """Smallest sum of block sizes over every assignment of buffers to at most ``m`` blocks."""
    live = [i for i in range(p.n) if p.sizes[i] > 0]
    conflict = {(int(a), int(b)) for a, b in interference_edges(p).tolist()}
    best = [sum(int(p.sizes[i]) for i in live)]
    blocks: list[list[int]] = []

    def rec(k: int) -> None:
        if k == len(live):
            best[0] = min(best[0], sum(max(int(p.sizes[j]) for j in b) for b in blocks))
            return
        i = live[k]
        for b in blocks:
            if all((min(i, j), max(i, j)) not in conflict for j in b):
                b.append(i)
                rec(k + 1)
                b.pop()
        if len(blocks) < m:
            blocks.append([i])
            rec(k + 1)
            blocks.pop()

    rec(0)
    return best[0]


SETTINGS = settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(small_problems())
def test_exact_offset_planners_agree(p):
    a = plan(p, "cpsat", formulation="nooverlap2d", **EXACT_KW)
    b = plan(p, "cpsat", formulation="pairwise", **EXACT_KW)
    c = plan(p, "milp_offsets", time_limit=20)
    for r in (a, b, c):
        assert r.status == "optimal"
        check_plan(p, r.offsets)
    assert a.arena_size == b.arena_size == c.arena_size >= lower_bound(p)
    assert a.best_bound == a.arena_size
    for name in ("chaitin", "interval_colouring", "naive"):
        h = plan(p, name)
        check_plan(p, h.offsets)
        assert h.arena_size >= a.arena_size
    # the colouring planners are shared-block layouts: never below the exact block optimum
    blk = plan(p, "ilp_blocks", time_limit=20)
    assert blk.arena_size >= a.arena_size
    assert plan(p, "interval_colouring").arena_size >= blk.arena_size
    assert plan(p, "chaitin").arena_size >= blk.arena_size


@SETTINGS
@given(small_problems(max_n=6))
def test_ilp_blocks_matches_exhaustive_search(p):
    m = max_live_count(p)
    want = _best_blocks_exhaustive(p, m)
    for backend in ("ortools", "pulp"):
        r = plan(p, "ilp_blocks", backend=backend, time_limit=20)
        assert r.info.get("solver_claim", r.status) == "optimal"
        assert r.status == ("optimal" if r.arena_size == r.best_bound else "feasible")
        check_plan(p, r.offsets)
        assert r.arena_size == want, backend
    more = plan(p, "ilp_blocks", blocks=m + 1, time_limit=20)
    assert more.arena_size == _best_blocks_exhaustive(p, m + 1) <= want


@settings(max_examples=examples(40), deadline=None)
@given(small_problems(max_n=15, max_time=12))
def test_graph_helpers_match_brute_force(p):
    n = p.n
    live = [i for i in range(n) if p.sizes[i] > 0]
    want = [
        [i, j]
        for i in live
        for j in live
        if i < j and p.starts[i] < p.ends[j] and p.starts[j] < p.ends[i]
    ]
    assert interference_edges(p).tolist() == want
    counts = [sum(1 for i in live if p.starts[i] <= t < p.ends[i]) for t in range(p.horizon + 1)]
    assert max_live_count(p) == max(counts, default=0)
    cl = maximal_cliques(p)
    edges = {tuple(e) for e in want}
    for c in cl:  # cliques, and maximal: no live buffer outside meets all members
        assert all((a, b) in edges for a in c for b in c if a < b)
        assert not any(all((min(x, y), max(x, y)) in edges for y in c) for x in live if x not in c)
    assert {tuple(e) for e in want} <= {(a, b) for c in cl for a in c for b in c if a < b}


# -- real benchmarks (need ../shared) --------------------------------------------------------------


def test_minimalloc_input12_and_colouring_on_A():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (../shared is not checked out beside the repository)")
    from planners import read_minimalloc_csv

    p = read_minimalloc_csv(SHARED / "input.12.csv")  # 5 buffers, all size 4, capacity 12
    # live: b1, b3, b5 on [0,3); b2, b3, b5 on [3,9); b4, b5 on [9,21): lower bound 12 = capacity
    assert lower_bound(p) == 12
    r = plan(p, "cpsat", mode="decide")
    assert r.status == "optimal" and r.arena_size == 12
    a = read_minimalloc_csv(SHARED / "A.1048576.csv").with_capacity(None)
    for name in ("chaitin", "interval_colouring"):
        r = plan(a, name)
        check_plan(a, r.offsets)
        assert r.arena_size >= lower_bound(a)
