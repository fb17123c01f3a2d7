"""``memplan check`` and :func:`planners.validate.plan_violations`: every violation of a plan.

Lifetimes are half-open ``[lower, upper)`` steps (MiniMalloc CSV), sizes and offsets bytes.
"""

from __future__ import annotations

import csv
import json

import pytest
from conftest import examples, shared_path
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.cli import main
from planners import Buffer, Problem, lower_bound, plan, read_minimalloc_csv, write_minimalloc_csv
from planners.errors import InvalidPlanError
from planners.validate import check_plan, plan_violations


def _write(path, rows, header=("id", "lower", "upper", "size", "offset")):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return str(path)


def _run(capsys, *argv):
    rc = main(["check", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


# -- valid plans -----------------------------------------------------------------------------------


def test_valid_plan_prints_arena_bound_and_ratio(tmp_path, capsys):
    # a [0,2) 8 B at 0, b [1,3) 4 B at 8, c [2,4) 8 B at 0, d [3,4) 4 B at 12.
    # live bytes: step 0: 8, 1: a+b 12, 2: b+c 12, 3: c+d 12 -> bound 12; arena 12 + 4 = 16
    p = _write(tmp_path / "ok.csv", [("a", 0, 2, 8, 0), ("b", 1, 3, 4, 8), ("c", 2, 4, 8, 0),
                                      ("d", 3, 4, 4, 12)])
    rc, out, err = _run(capsys, p, "--json")
    rep = json.loads(out)
    assert rc == 0 and err == ""
    assert (rep["arena"], rep["lower_bound"], rep["ratio"]) == (16, 12, round(16 / 12, 6))
    assert rep["valid"] is True and rep["violations"] == [] and rep["buffers"] == 4
    rc, out, _ = _run(capsys, p)
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert rc == 0 and lines["arena"] == "16" and lines["lower_bound"] == "12"
    assert lines["ratio"] == "1.333333" and lines["valid"] == "True"


def test_ids_that_differ_only_by_spaces_or_a_newline_keep_their_own_offsets(tmp_path, capsys):
    # "a", " a" and "a\n" (quoted) are three buffers live together: [0,8), [8,16), [16,24).
    # Normalised ids would make them one id (a duplicate) or swap offsets; kept, the plan is valid.
    p = _write(tmp_path / "ids.csv", [("a", 0, 2, 8, 0), (" a", 0, 2, 8, 8),
                                       ("a\n", 0, 2, 8, 16)])
    rc, out, err = _run(capsys, p, "--json")
    rep = json.loads(out)
    assert rc == 0 and err == "" and rep["buffers"] == 3
    assert (rep["arena"], rep["lower_bound"], rep["valid"]) == (24, 24, True)
    # swap the offsets of "a" and "a\n" with a third buffer on top of " a": one overlap, named
    p = _write(tmp_path / "bad.csv", [("a", 0, 2, 8, 8), (" a", 0, 2, 8, 8),
                                       ("a\n", 0, 2, 8, 0)])
    rc, out, _ = _run(capsys, p, "--json")
    rep = json.loads(out)
    assert rc == 1 and rep["counts"] == {"overlap": 1}
    assert sorted(rep["violations"][0]["buffers"]) == [" a", "a"]


# -- invalid plans: every violation ------------------------------------------------------------------


def test_two_overlaps_and_a_misalignment_are_all_listed(tmp_path, capsys):
    # a [0,4) at [0,8); b [1,2) at [4,12): a-b share step 1 and bytes [4,8);
    # c [2,5) at [0,8): a-c share steps 2-3; b-c never live together; d at 20, alignment 8
    rows = [("a", 0, 4, 8, 1, 0), ("b", 1, 2, 8, 1, 4), ("c", 2, 5, 8, 1, 0),
            ("d", 0, 5, 4, 8, 20)]
    p = _write(tmp_path / "bad.csv", rows, ("id", "lower", "upper", "size", "alignment", "offset"))
    rc, out, err = _run(capsys, p, "--json")
    rep = json.loads(out)
    assert rc == 1 and rep["valid"] is False
    assert rep["counts"] == {"alignment": 1, "overlap": 2}
    got = sorted((v["rule"], tuple(sorted(v["buffers"]))) for v in rep["violations"])
    assert got == [("alignment", ("d",)), ("overlap", ("a", "b")), ("overlap", ("a", "c"))]
    assert "3 violation(s)" in err and len(err.splitlines()) == 1
    rc, out, _ = _run(capsys, p)
    assert rc == 1 and "violations   3" in out
    assert "'a' and 'b' are both live in steps [1, 2)" in out
    assert "'a' and 'c' are both live in steps [2, 4)" in out
    assert "offset 20 is not a multiple of its alignment 8" in out


def test_capacity_overflow_from_option_and_file_name(tmp_path, capsys):
    rows = [("a", 0, 2, 8, 0), ("b", 1, 3, 4, 8), ("c", 2, 4, 8, 0), ("z", 0, 4, 0, 100)]
    p = _write(tmp_path / "plan.csv", rows)
    rc, out, _ = _run(capsys, p, "--capacity", "10", "--json")
    rep = json.loads(out)
    # b ends at byte 12 > 10; the zero-size z takes no space wherever it is
    assert rc == 1 and rep["capacity"] == 10 and rep["counts"] == {"capacity": 1}
    assert rep["violations"][0]["buffers"] == ["b"]
    assert "ends at byte 12, above the capacity 10" in rep["violations"][0]["message"]
    assert _run(capsys, p, "--capacity", "12")[0] == 0
    named = _write(tmp_path / "plan.10.csv", rows)
    rc, out, _ = _run(capsys, named, "--json")
    assert rc == 1 and json.loads(out)["capacity"] == 10


@pytest.mark.parametrize("rows,header,needle", [
    ([("a", 0, 2, 8, "x")], None, "column 'offset': not an integer: 'x'"),
    ([("a", 0, 2, 8, "")], None, "column 'offset': missing value"),
    ([("a", 0, 2, 8)], ("id", "lower", "upper", "size"), "has no column 'offset'"),
    ([("a", 2, 2, 8, 0)], None, "a"),  # upper <= lower
    ([("a", 0, 2, "big", 0)], None, "column 'size' must be an integer"),
    ([("a", 0, 2, 8, 0), ("a", 1, 3, 8, 8)], None, "a"),  # duplicate id
])
def test_malformed_csv_exits_2_with_one_line(tmp_path, capsys, rows, header, needle):
    p = _write(tmp_path / "m.csv", rows, header or ("id", "lower", "upper", "size", "offset"))
    rc, out, err = _run(capsys, p)
    assert rc == 2 and out == ""
    assert err.startswith("memplan: error: ") and len(err.splitlines()) == 1 and needle in err


def test_missing_file_exits_2(tmp_path, capsys):
    rc, _, err = _run(capsys, str(tmp_path / "none.csv"))
    assert rc == 2 and err.startswith("memplan: error: ")


def test_plan_on_a_solved_csv_says_it_ignores_the_offsets(tmp_path, capsys):
    p = _write(tmp_path / "solved.csv", [("a", 0, 2, 8, 0), ("b", 1, 3, 8, 0)])  # overlapping
    # MiniMalloc's reading: the offsets are fixed positions, here two colliding pins
    assert main(["plan", p, "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["status"] == "infeasible"
    assert err == (f"memplan: note: 2 of 2 buffers are pinned by the offset column of {p} "
                   "(fixed positions, MiniMalloc's reading); --ignore-offsets re-plans them\n"
                   "memplan: error: planner 'greedy_by_size' proved problem 'solved' infeasible: "
                   "pinned buffers 'a' and 'b' collide\n")
    assert main(["plan", p, "--json", "--ignore-offsets"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["arena"] == 16
    assert len(err.splitlines()) == 1
    assert "ignoring the given offsets" in err and f"memplan check {p}" in err
    plain = _write(tmp_path / "plain.csv", [("a", 0, 2, 8)], ("id", "lower", "upper", "size"))
    assert main(["plan", plain]) == 0
    assert capsys.readouterr().err == ""


# -- MiniMalloc benchmarks: solved by a planner, written with offsets, checked -------------------


def _oracle_pairs(problem, off):
    """Every pair live at a common step whose address ranges intersect, by brute force."""
    b, out = problem.buffers, set()
    for i in range(problem.n):
        for j in range(i + 1, problem.n):
            if b[i].size == 0 or b[j].size == 0:
                continue
            if max(b[i].start, b[j].start) < min(b[i].end, b[j].end) and \
                    max(off[i], off[j]) < min(off[i] + b[i].size, off[j] + b[j].size):
                out.add(frozenset((b[i].id, b[j].id)))
    return out


@pytest.mark.parametrize("name", ["A.1048576.csv", "C.1048576.csv", "F.1048576.csv",
                                  "input.12.csv"])
def test_minimalloc_benchmark_round_trips_through_check(tmp_path, capsys, name):
    src = shared_path("benchmarks", "minimalloc", name)
    problem = read_minimalloc_csv(src, capacity=None)
    pl = plan(problem, "greedy_by_size")
    out = tmp_path / "solved.csv"
    write_minimalloc_csv(problem, out, pl)
    rc, text, err = _run(capsys, str(out), "--json")
    rep = json.loads(text)
    assert rc == 0 and err == ""
    assert rep["arena"] == pl.arena_size and rep["lower_bound"] == lower_bound(problem)
    assert rep["buffers"] == problem.n
    # move the two largest buffers onto the offset of a buffer live with them (a different one
    # each, offset a multiple of the mover's alignment): check lists exactly the oracle's pairs
    off = [int(o) for o in pl.offsets]
    b, al = problem.buffers, problem.alignments.tolist()
    movers = sorted(range(problem.n), key=lambda i: (-b[i].size, i))[:2]
    for k in movers:
        j = next(j for j in range(problem.n) if j not in movers and b[j].size > 0
                 and off[j] != off[k] and off[j] % al[k] == 0
                 and max(b[j].start, b[k].start) < min(b[j].end, b[k].end))
        off[k] = off[j]
    bad = tmp_path / "moved.csv"
    with open(out) as f, open(bad, "w", newline="") as g:
        rows = list(csv.reader(f))
        col = rows[0].index("offset")
        for r, o in zip(rows[1:], off, strict=True):
            r[col] = str(o)
        csv.writer(g).writerows(rows)
    want = _oracle_pairs(problem, off)
    rc, text, _ = _run(capsys, str(bad), "--json")
    rep = json.loads(text)
    assert len(want) >= 2 and rc == 1
    assert {frozenset(v["buffers"]) for v in rep["violations"]} == want
    assert len(rep["violations"]) == len(want)


# -- plan_violations vs check_plan and an all-pairs oracle ----------------------------------------


@st.composite
def _plans(draw):
    n = draw(st.integers(1, 12))
    bufs, offs = [], []
    for i in range(n):
        s = draw(st.integers(0, 8))
        e = draw(st.integers(s + 1, 10))
        size = draw(st.sampled_from([0, 1, 3, 4, 8, 16]))
        align = draw(st.sampled_from([1, 1, 2, 4, 8]))
        bufs.append(Buffer(f"b{i}", s, e, size, align))
        offs.append(draw(st.one_of(st.integers(0, 48), st.integers(-4, -1),
                                   st.integers(0, 6).map(lambda k: 8 * k))))
    cap = draw(st.one_of(st.none(), st.integers(0, 64)))
    return Problem(bufs), offs, cap


@settings(max_examples=examples(400), deadline=None)
@given(_plans())
def test_plan_violations_matches_check_plan_and_the_all_pairs_oracle(case):
    problem, off, cap = case
    found = plan_violations(problem, off, cap)
    try:
        check_plan(problem, off, cap)
        raised = False
    except InvalidPlanError:
        raised = True
    assert bool(found) == raised
    b = problem.buffers
    ok = [o >= 0 for o in off]
    # overlaps: exactly the oracle's pairs among buffers with a valid (non-negative) offset
    pairs = [frozenset(v.buffers) for v in found if v.rule == "overlap"]
    assert len(pairs) == len(set(pairs))
    valid = Problem([b[i] for i in range(problem.n) if ok[i]])
    assert set(pairs) == _oracle_pairs(valid, [o for o in off if o >= 0])
    per_buffer = {(v.rule, v.buffers[0]) for v in found if v.rule != "overlap"}
    want = {("offset", b[i].id) for i in range(problem.n) if not ok[i]}
    want |= {("alignment", b[i].id) for i in range(problem.n) if ok[i] and off[i] % b[i].alignment}
    if cap is not None:
        want |= {("capacity", b[i].id) for i in range(problem.n)
                 if ok[i] and b[i].size > 0 and off[i] + b[i].size > cap}
    assert per_buffer == want


def test_alias_groups_are_checked_as_check_plan_does():
    # c is a view of p (delta 0): one group; q overlaps the group's hull [0, 4) at step 3
    bufs = [Buffer("p", 0, 2, 8), Buffer("c", 2, 4, 8), Buffer("q", 3, 5, 8)]
    problem = Problem(bufs, aliases={"c": ("p", 0)})
    assert plan_violations(problem, [0, 0, 8]) == []
    check_plan(problem, [0, 0, 8])
    found = plan_violations(problem, [0, 4, 4])
    assert [(v.rule, v.buffers) for v in found] == [("alias", ("c",)), ("overlap", ("p", "q"))]
    with pytest.raises(InvalidPlanError):
        check_plan(problem, [0, 4, 4])


def test_wrong_number_of_offsets_raises():
    with pytest.raises(InvalidPlanError, match="2 offsets for 3 buffers"):
        plan_violations(Problem([Buffer(x, 0, 1, 1) for x in "abc"]), [0, 1])
