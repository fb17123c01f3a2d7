"""Arithmetic that never wraps: every planner, bound, validator, exporter and record.

The range rule (planners/model.py, "Arithmetic range"): values below 2**62, and a problem whose
worst-case arena sum(round_up(size, align) + align - 1) exceeds 2**63 - 1 bytes is refused with one
ProblemError. Below it every number must be exact; the checks here recompute them in Python
integers without calling the validator or the bounds module.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import examples, shared_case
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.cli import main as memplan_main
from planners import (
    Buffer,
    InvalidPlanError,
    MemplanError,
    Plan,
    Problem,
    ProblemError,
    check_plan,
    lower_bound,
    naive_arena,
    plan,
    read_minimalloc_csv,
    write_minimalloc_csv,
)
from planners.pools import BuddyAllocator
from planners.registry import PLANNERS

ROOT = Path(__file__).resolve().parents[1]
INT64_MAX = 2**63 - 1
#: Three buffers of 2**62 - 1 bytes live at once (the shared case): the exact arena.
CASE_ARENA = 13835058055282163709

#: Short time limits so that every planner runs in this file in well under a minute.
FAST = {
    "cpsat": {"time_limit": 1.0, "workers": 1},
    "ilp_blocks": {"time_limit": 1.0},
    "milp_offsets": {"time_limit": 1.0},
    "exact_search": {"time_limit": 1.0},
    "minimize": {"time_limit": 1.0},
}


def _params(name: str, **extra) -> dict:
    return {**FAST.get(name, {}), **extra}


# -- independent Python-int reference --------------------------------------------------------------


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def _worst_case(bufs) -> int:
    """sum(round_up(size, align) + align - 1), bufs = [(start, end, size, align)]."""
    return sum(_round_up(z, a) + a - 1 for _, _, z, a in bufs)


def _live_peak(bufs, sizes) -> int:
    steps = {s for s, _, _, _ in bufs}
    return max((sum(z for (s, e, _, _), z in zip(bufs, sizes) if s <= t < e) for t in steps),
               default=0)


def _py_lower_bound(bufs) -> int:
    """Max live bytes, and the padded peak of planners.bounds (both in Python ints)."""
    raw = _live_peak(bufs, [z for _, _, z, _ in bufs])
    live = [a for _, _, z, a in bufs if z > 0]
    if not live:
        return raw
    g = math.gcd(*live)
    rounded = [_round_up(z, g) for _, _, z, _ in bufs]
    padded = _live_peak(bufs, rounded) - max(r - z for r, (_, _, z, _) in zip(rounded, bufs))
    return max(raw, padded)


def _first_fit(bufs, order) -> list[int]:
    """Lowest aligned offset in ``order`` against placed buffers live at the same step."""
    off = [0] * len(bufs)
    placed: list[int] = []
    for i in order:
        s, e, z, a = bufs[i]
        if z:
            x, moved = 0, True
            while moved:
                moved = False
                for j in placed:
                    sj, ej, zj, _ = bufs[j]
                    if s < ej and sj < e and x < off[j] + zj and off[j] < x + z:
                        x, moved = _round_up(off[j] + zj, a), True
            off[i] = x
            placed.append(i)
    return off


def _arena(bufs, off) -> int:
    return max((o + z for o, (_, _, z, _) in zip(off, bufs) if z > 0), default=0)


def _optimum(bufs) -> int:
    """The optimal arena: first fit in the best order (any optimal layout, taken by increasing
    offset, is reproduced at or below itself by first fit), all n! orders in Python ints."""
    return min(_arena(bufs, _first_fit(bufs, order))
               for order in itertools.permutations(range(len(bufs))))


def _assert_valid(bufs, off) -> None:
    """All pairs: aligned, non-negative, disjoint in address when live at the same step."""
    for i, ((s, e, z, a), o) in enumerate(zip(bufs, off)):
        assert o >= 0 and o % a == 0, (i, o, a)
        for j in range(i):
            sj, ej, zj, _ = bufs[j]
            if z and zj and s < ej and sj < e:
                assert o + z <= off[j] or off[j] + zj <= o, (i, j, o, off[j])


# -- the shared case -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PLANNERS))
def test_shared_case_refused_with_one_error_by_every_planner(name):
    path = shared_case("sum_above_int64.csv")
    # The exact arena is 3 * (2**62 - 1) (all three live in step 1), beyond int64: refused.
    assert 3 * (2**62 - 1) == CASE_ARENA > INT64_MAX
    with pytest.raises(ProblemError) as err:
        plan(read_minimalloc_csv(path), name, **_params(name))
    msg = str(err.value)
    assert "sum_above_int64" in msg and f"worst-case arena {CASE_ARENA} bytes" in msg
    assert "2**63 - 1" in msg
    rows = [(r["id"], int(r["lower"]), int(r["upper"]) - 1, int(r["size"]))
            for r in csv.DictReader(path.read_text().splitlines())]
    with pytest.raises(ProblemError, match="exceeds 2\\*\\*63 - 1"):
        Problem.from_closed(rows, name="closed")


@pytest.mark.parametrize("name", list(PLANNERS))
def test_shared_case_cli_one_error_line(name, capsys):
    path = shared_case("sum_above_int64.csv")
    assert memplan_main(["plan", str(path), "--planner", name]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("memplan: error: ") and "sum_above_int64" in err
    assert "Traceback" not in err


def test_shared_case_cli_process_plan_and_compare(tmp_path):
    path = shared_case("sum_above_int64.csv")
    for args in (["plan", str(path), "--planner", "minimize"],
                 ["compare", "--workloads", str(path), "--planners", "naive", "exact_search",
                  "--out", str(tmp_path / "cmp")]):
        r = subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith("memplan: error: ") and r.stderr.count("\n") == 1
        assert "Traceback" not in r.stderr and "13835058055282163709" in r.stderr


# -- the boundary: a worst-case arena of exactly 2**63 - 1 ----------------------------------------


def _boundary(extra: int = 1) -> Problem:
    # 2 * (2**62 - 1) + extra bytes, all live at once, alignment 1.
    return Problem.from_arrays([0, 0, 0], [2, 2, 2], [2**62 - 1, 2**62 - 1, extra],
                               name="boundary")


def test_boundary_admitted_exactly_and_one_byte_more_refused():
    p = _boundary(1)
    assert p.worst_case_arena == INT64_MAX
    assert lower_bound(p) == INT64_MAX and naive_arena(p) == INT64_MAX
    with pytest.raises(ProblemError, match="worst-case arena 9223372036854775808 bytes"):
        _boundary(2)
    # Alignment padding counts: the 1-byte buffer aligned to 2 may take 2 + 1 bytes.
    with pytest.raises(ProblemError, match="'boundary': worst-case arena 9223372036854775809"):
        Problem([Buffer("a", 0, 1, 2**62 - 1), Buffer("b", 0, 1, 2**62 - 1),
                 Buffer("c", 0, 1, 1, 2)], name="boundary")


@pytest.mark.parametrize("name", list(PLANNERS))
def test_boundary_every_planner_exact_or_one_error(name):
    p = _boundary(1)
    kw = _params(name, capacity=INT64_MAX) if name == "exact_search" else _params(name)
    try:
        r = plan(p, name, **kw)
    except InvalidPlanError:
        raise
    except MemplanError as e:
        # Request rounding to 16 bytes puts the bump pointer at 2**63 + 15 > 2**63 - 1; CP-SAT
        # refuses coefficients this large. Both say so in one error.
        assert name in ("freelist_bump", "cpsat"), e
        assert "2**63 - 1" in str(e) or "CP-SAT" in str(e)
        return
    if r.status == "timeout":
        return
    # Everything is live at once, so every valid plan has arena exactly 2**63 - 1.
    assert r.arena_size == INT64_MAX and r.lower_bound == INT64_MAX
    offs = r.offsets.tolist()
    _assert_valid([(0, 2, z, 1) for z in p.sizes.tolist()], offs)
    if name == "naive":
        assert offs == [0, 2**62 - 1, 2**63 - 2]


def test_boundary_cli_json_arena_exact(capsys, tmp_path):
    csv_path = tmp_path / "boundary.csv"
    write_minimalloc_csv(_boundary(1), csv_path)
    assert memplan_main(["plan", str(csv_path), "--planner", "greedy_by_size", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["arena"] == INT64_MAX and obj["lower_bound"] == INT64_MAX


# -- every registered planner on huge random problems ---------------------------------------------


@st.composite
def huge_specs(draw):
    """Up to 4 buffers, sizes log-uniform over 1 .. 2**62 (2**62 itself is out of range),
    alignments powers of two up to 2**20 (or the default)."""
    n = draw(st.integers(1, 4))
    rows = []
    for i in range(n):
        start = draw(st.integers(0, 3))
        end = start + draw(st.integers(1, 3))
        if draw(st.integers(0, 11)) == 0:
            size = draw(st.sampled_from([0, 2**62]))
        else:
            e = draw(st.one_of(st.integers(55, 61), st.integers(0, 61)))
            size = 2**e + draw(st.integers(0, 2**e - 1))
        align = draw(st.one_of(st.none(), st.integers(0, 20).map(lambda k: 2**k)))
        rows.append((f"b{i}", start, end, size, align))
    return rows, 2 ** draw(st.integers(0, 20)), draw(st.booleans())


@pytest.mark.parametrize("name", list(PLANNERS))
@settings(max_examples=examples(12), deadline=None)
@given(spec=huge_specs())
def test_every_planner_exact_or_refused_on_huge_sizes(name, spec):
    rows, default_align, below_optimum = spec
    bufs = [(s, e, z, default_align if a is None else a) for _, s, e, z, a in rows]
    in_range = all(z < 2**62 for _, _, z, _ in bufs)
    w = _worst_case(bufs)
    try:
        p = Problem([Buffer(i, s, e, z, a) for i, s, e, z, a in rows], alignment=default_align,
                    name="huge")
    except ProblemError as err:
        assert not in_range or w > INT64_MAX, err  # refused only by the rules
        return
    assert in_range and w <= INT64_MAX and p.worst_case_arena == w
    lb, opt = _py_lower_bound(bufs), _optimum(bufs)
    assert lb <= opt <= w
    kw = _params(name)
    cap = None
    if name == "exact_search":
        cap = opt - 1 if below_optimum and opt > 0 else opt
        kw["capacity"] = cap
    try:
        r = plan(p, name, **kw)
    except InvalidPlanError:
        raise  # a wrong layout reached the validator: never acceptable
    except MemplanError as err:
        if name == "freelist_bump":  # its 16-byte granule may push the bump pointer past int64
            g = max([16] + [a for _, _, z, a in bufs if z > 0])
            assert sum(_round_up(z, g) for _, _, z, _ in bufs if z > 0) > INT64_MAX, err
        else:  # CP-SAT bounds its integer domains; it must say so, not answer wrongly
            assert name == "cpsat", err
        return
    assert r.lower_bound == lb
    if r.status in ("timeout", "infeasible"):
        assert r.status == "timeout" or (cap is not None and cap < opt), r.status
        return
    off = r.offsets.tolist()
    _assert_valid(bufs, off)
    arena = _arena(bufs, off)
    assert r.arena_size == arena and lb <= opt <= arena <= INT64_MAX
    if name != "freelist_bump":  # the range rule's claim: no correct planner goes above it
        assert arena <= w
    if cap is not None:
        assert arena <= cap
    if name != "cpsat":  # its float objective bound: test_cpsat_bound_exact_above_2_53
        assert r.best_bound is None or r.best_bound <= opt  # a proved bound never exceeds it
    if r.status == "optimal":
        assert arena == opt
        assert name == "cpsat" or r.best_bound == opt


def test_cpsat_bound_exact_above_2_53():
    p = Problem.from_arrays([0], [1], [2**55 + 5], name="one")
    r = plan(p, "cpsat", **FAST["cpsat"], heuristic_first=False)
    assert r.status == "optimal" and r.arena_size == 2**55 + 5
    assert r.best_bound == 2**55 + 5  # today 2**55 + 8: a "proved" bound above the optimum


# -- validator, Plan, pools ------------------------------------------------------------------------


def test_validator_rejects_offsets_that_would_wrap():
    p = Problem.from_arrays([0, 0], [1, 1], [10, 10], name="pair")
    # 2**63 - 5 + 10 wraps to a negative int64 top; it must be named, not accepted.
    with pytest.raises(InvalidPlanError, match="exceeds the representable range"):
        check_plan(p, np.array([0, 2**63 - 5], np.int64))
    with pytest.raises(InvalidPlanError, match="exceeds the representable range"):
        check_plan(p, [0, 2**63 - 10])
    with pytest.raises(InvalidPlanError, match="offset 9223372036854775818 exceeds"):
        check_plan(p, [0, 2**63 + 10])  # a Python int, not rounded through float64
    with pytest.raises(InvalidPlanError, match="exceeds the representable range"):
        check_plan(p, np.array([0, 2**64 - 16], np.uint64))
    with pytest.raises(InvalidPlanError, match="exceeds the representable range"):
        check_plan(p, [0, 2**63 - 10], capacity=2**70)
    check_plan(p, [0, 2**63 - 11])  # ends exactly at 2**63 - 1: representable and disjoint
    with pytest.raises(InvalidPlanError, match="above the capacity 100"):
        check_plan(p, [0, 2**63 - 11], capacity=100)

    def wraps(problem):
        return np.array([2**63 - 5, 0], np.int64)

    with pytest.raises(InvalidPlanError, match="buffer '0'.*representable range"):
        plan(p, wraps)
    with pytest.raises(InvalidPlanError, match="buffer '1': offset 9223372036854775818 exceeds"):
        plan(p, lambda problem: [0, 2**63 + 10])  # Python ints beyond int64: named, no traceback


def test_alias_check_exact_near_int64():
    p = Problem([Buffer("a", 0, 2, 2**62 - 1), Buffer("v", 1, 2, 2**61)],
                aliases={"v": ("a", 2**61 - 1)}, name="views")
    off = [2**62, 2**62 + 2**61 - 1]
    check_plan(p, off)
    with pytest.raises(InvalidPlanError, match="must equal its alias parent"):
        check_plan(p, [2**62, 2**62 + 2**61 - 2])
    with pytest.raises(InvalidPlanError, match="buffer 'v'.*representable range"):
        check_plan(p, [2**62, 2**62 + 2**61])  # would end at 2**63


def test_plan_arena_exact_and_oversized_offsets_named():
    p = Problem.from_arrays([0, 1], [1, 2], [2**62 - 1, 2**62 - 1], name="seq")
    assert Plan(p, [0, 2**63 - 5], "x", "heuristic").arena_size == 2**63 - 5 + 2**62 - 1
    with pytest.raises(InvalidPlanError, match="buffer '1': offset 18446744073709551616"):
        Plan(p, [0, 2**64], "x", "heuristic")


def test_pools_refuse_sizes_beyond_int64():
    with pytest.raises(ProblemError, match="1..2\\*\\*63 - 1"):
        BuddyAllocator(2**63)
    b = BuddyAllocator(2**62)
    assert b.alloc("x", 2**61 + 1) == 0 and b.high_water == 2**62


def test_shared_blocks_exact_with_lcm_alignment_and_refused_beyond_int64():
    # a, b, c never overlap: one block aligned to lcm(3, 5, 7) = 105, at 0; d (alignment 11) is
    # live throughout, so it opens the other block, laid out after the first.
    p = Problem([Buffer("a", 0, 1, 2**61, 3), Buffer("b", 1, 2, 2**61, 5),
                 Buffer("c", 2, 3, 2**61, 7), Buffer("d", 0, 3, 7, 11)], name="lcm")
    r = plan(p, "interval_colouring")
    assert r.offsets.tolist() == [0, 0, 0, _round_up(2**61, 11)]
    # Four sequential buffers aligned to four primes share one block aligned to their product
    # (about 1.8e19 > 2**63 - 1): the layout cannot be represented, and says so.
    primes = [65521, 65519, 65497, 65479]
    assert math.prod(primes) > INT64_MAX
    q = Problem([Buffer("d", 0, 5, 1)] + [Buffer(f"p{k}", k + 1, k + 2, 1, a)
                                          for k, a in enumerate(primes)], name="primes")
    assert q.worst_case_arena < 2**20
    with pytest.raises(ProblemError, match="'primes': the shared-block layout needs"):
        plan(q, "interval_colouring")
    assert plan(q, "greedy_by_size").arena_size == 65521 + 1  # each p at its alignment, above d


# -- exporters: JSON, MiniMalloc CSV, C header ----------------------------------------------------


def _huge_graph():
    from scheduling.graph import Graph

    g = Graph("huge")
    n = 2**59  # float32: 2**61 bytes per tensor
    for t, kind in (("x", "input"), ("a", None), ("b", None), ("c", None)):
        g.add_tensor(t, (1, n), "float32", **({"kind": kind} if kind else {}))
    g.add_op("r1", "Relu", ["x"], ["a"])
    g.add_op("r2", "Relu", ["a"], ["b"])
    g.add_op("add", "Add", ["a", "b"], ["c"])
    g.mark_output("c")
    return g


def test_execution_plan_json_exact_near_2_62():
    from scheduling.transforms import transformed_problem
    from scheduling.transforms.export import execution_plan

    g = _huge_graph()
    p = transformed_problem(g)
    r = plan(p, "greedy_by_size")
    ep = execution_plan(g, r)
    assert ep["arena_size"] == 3 * 2**61  # a, b and c live at the Add
    back = json.loads(json.dumps(ep))
    assert back == ep
    assert {b["tensor"]: b["offset"] for b in back["buffers"]} == r.as_dict()
    assert all(b["length"] == 2**61 for b in back["buffers"])


def test_minimalloc_csv_round_trip_near_2_62(tmp_path):
    p = Problem([Buffer("a", 0, 2, 2**62 - 1), Buffer("b", 1, 3, 2**61 + 12345, 2**20),
                 Buffer("c", 2, 4, 2**60 + 7, 64)], name="near")
    r = plan(p, "greedy_by_size_best_fit")
    f = tmp_path / "near.csv"
    write_minimalloc_csv(p, f, r)
    q = read_minimalloc_csv(f, offsets="ignore")  # a solved file: its offsets are not pins here
    assert q.sizes.tolist() == p.sizes.tolist() and q.alignments.tolist() == p.alignments.tolist()
    assert [(b.start, b.end) for b in q.buffers] == [(b.start, b.end) for b in p.buffers]
    rows = list(csv.DictReader(f.read_text().splitlines()))
    assert [int(x["offset"]) for x in rows] == r.offsets.tolist()
    assert max(int(x["offset"]) + int(x["size"]) for x in rows) == r.arena_size > 2**62


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on PATH")
def test_c_header_above_4_gib_uses_64_bit_fields(tmp_path):
    from scheduling.transforms import transformed_problem
    from scheduling.transforms.export import c_header, execution_plan

    g = _huge_graph()
    p = transformed_problem(g)
    r = plan(p, "greedy_by_size")
    hdr = c_header(execution_plan(g, r))
    assert "typedef uint64_t memplan_size_t;" in hdr
    (tmp_path / "plan.h").write_text(hdr)
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "plan.h"\n'
        "int main(void) {\n"
        '  printf("%llu %d\\n", (unsigned long long)MEMPLAN_ARENA_SIZE,\n'
        "         (int)sizeof(memplan_buffers[0].offset));\n"
        "  for (int i = 0; i < MEMPLAN_NUM_BUFFERS; i++)\n"
        '    printf("%s %llu %llu\\n", memplan_buffers[i].name,\n'
        "           (unsigned long long)memplan_buffers[i].offset,\n"
        "           (unsigned long long)memplan_buffers[i].length);\n"
        "  return 0;\n}\n"
    )
    exe = tmp_path / "a.out"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                    str(tmp_path / "main.c")], check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    arena, width = out[0].split()
    assert int(arena) == r.arena_size == 3 * 2**61 and int(width) == 8
    got = {ln.split()[0]: (int(ln.split()[1]), int(ln.split()[2])) for ln in out[1:1 + p.n]}
    assert got == {b.id: (r.offset_of(b.id), b.size) for b in p.buffers}
    assert max(o for o, _ in got.values()) > 2**32  # the values really need 64 bits


def test_c_header_small_arena_keeps_32_bit_fields():
    from scheduling.transforms.export import c_header

    ep = {"model": "m", "pipeline": "", "planner": "naive", "status": "heuristic",
          "arena_size": 2**32 - 1, "lower_bound": 0, "operators": [], "reuse": [],
          "buffers": [{"tensor": "t", "offset": 0, "length": 2**32 - 1, "first": 0, "last": 0,
                       "kind": "activation", "alias_parent": None, "alias_delta": 0}]}
    assert "typedef uint32_t memplan_size_t;" in c_header(ep)
    ep["arena_size"] = ep["buffers"][0]["length"] = 2**32
    assert "typedef uint64_t memplan_size_t;" in c_header(ep)
    assert "4294967296ull" in c_header(ep)


# -- records and the RV64 cores --------------------------------------------------------------------


def test_comparison_records_keep_exact_integers_next_to_a_failed_run(tmp_path):
    from experiments.harness import compare

    p = Problem.from_arrays([0, 0], [1, 1], [2**62 - 1, 2**62 - 1], name="two")
    df = compare({"two": p}, ["freelist_bump", "greedy_by_size"], progress=False)
    row = df.set_index("planner").loc["greedy_by_size"]
    assert row["arena"] == 2**63 - 2 and row["best_bound"] == 2**63 - 2  # not 9.223372e18
    failed = df.set_index("planner").loc["freelist_bump"]
    assert failed["status"] == "error" and "2**63 - 1" in failed["error"]
    f = tmp_path / "records.csv"
    df.to_csv(f, index=False)
    assert "9223372036854775806" in f.read_text() and "e+18" not in f.read_text()


def test_rv64_freelist_core_declines_values_beyond_int64():
    from experiments import rv64

    p = Problem.from_arrays([0, 0], [1, 1], [2**62 - 1, 2**62 - 1], name="two")
    reason = rv64.core_range_error(p, "freelist_bump", 16)
    assert reason and "9223372036854775808" in reason and "2**63 - 1" in reason
    for core in ("greedy_in_order", "first_fit", "best_fit", "greedy_by_size"):
        assert rv64.core_range_error(p, core) is None  # tops stay within the worst-case arena
    assert rv64.core_range_error(Problem.from_arrays([0], [1], [2**61]), "freelist_bump") is None
    q = Problem([Buffer("a", 0, 1, 2**62 - 1, 2**61 + 1)], name="granule")
    assert "rounds requests up to the granule" in rv64.core_range_error(
        q, "freelist_bump", math.lcm(16, 2**61 + 1))


def test_rv64_cli_declines_in_one_line(tmp_path, capsys):
    from experiments import rv64

    if not rv64.available()[0]:
        pytest.skip(rv64.available()[1])
    f = tmp_path / "two.csv"
    write_minimalloc_csv(Problem.from_arrays([0, 0], [1, 1], [2**62 - 1] * 2), f)
    assert memplan_main(["rv64", str(f), "--planner", "freelist_bump"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memplan: error: rv64 estimate of 'freelist_bump' declined")
    assert err.count("\n") == 1
    assert memplan_main(["rv64", str(f), "--planner", "greedy_by_size", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["arena"] == 2**63 - 2 and rec["offsets_match"] is True


def test_graph_lifetimes_beyond_int64_refused_in_one_error():
    from scheduling.graph import Graph
    from scheduling.lifetimes import lifetime_problem

    g = Graph("wide")
    n = 3 * 2**58  # float32: 3 * 2**60 bytes per tensor (< 2**62); three live at the Add
    g.add_tensor("x", (1, n), "float32", kind="input")
    for t in ("a", "b", "c"):
        g.add_tensor(t, (1, n), "float32")
    g.add_op("r1", "Relu", ["x"], ["a"])
    g.add_op("r2", "Relu", ["a"], ["b"])
    g.add_op("add", "Add", ["a", "b"], ["c"])
    g.mark_output("c")
    with pytest.raises(ProblemError, match="'wide': worst-case arena 10376293541461622784 bytes"):
        lifetime_problem(g)
    assert 3 * 3 * 2**60 == 10376293541461622784 > INT64_MAX


@pytest.mark.parametrize("scheduler", ["file_order", "min_live"])
def test_a_graph_whose_outputs_sum_above_int64_is_one_error_for_every_scheduler(scheduler):
    """Live bytes are int64 in the schedulers' memory model: a graph whose operator outputs sum
    above 2**63 - 1 is refused naming the graph and its largest tensor (a soak input gave an
    OverflowError traceback once every scheduler computed the order bound)."""
    from scheduling.errors import GraphError
    from scheduling.graph import Graph
    from scheduling.schedulers import get_scheduler

    g = Graph("huge")
    g.add_tensor("x", (1,), "uint8", kind="input", nbytes=1)
    g.add_tensor("a", (1,), "uint8", kind="activation", nbytes=2**62 - 1)
    g.add_tensor("b", (1,), "uint8", kind="activation", nbytes=2**62 - 1)
    g.add_tensor("y", (1,), "uint8", kind="activation", nbytes=4)
    g.add_op("p", "Relu", ["x"], ["a"])
    g.add_op("q", "Relu", ["a"], ["b"])
    g.add_op("r", "Relu", ["b"], ["y"])
    g.mark_output("y")
    with pytest.raises(GraphError, match=r"above 2\*\*63 - 1.*largest: tensor 'a'"):
        get_scheduler(scheduler).schedule(g)
