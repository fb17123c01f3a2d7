"""MiniMalloc's full CSV dialect and the --pools / --ignore-offsets command line (issue 24)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_compiler_features import _random_feature_problem

from experiments.cli import main
from experiments.cli.common import parse_pools
from planners.errors import ProblemError
from planners.io import minimalloc_csv_text, read_minimalloc_csv, write_minimalloc_csv
from planners.model import Gap
from planners.registry import get_planner
from planners.validate import check_plan

POOLS = "sram=256:16,psram=8M"


def _write(path, text: str):
    path.write_text(text)
    return path


def test_minimalloc_dialect_aliases_inclusive_end_hint_gaps_offset(tmp_path):
    """Header aliases of MiniMalloc's FromCsv (src/converter.cc): buffer -> id, start -> lower,
    end -> upper with an inclusive end (+1, also for the gaps' upper ends); hint -1 is none;
    an offset is a fixed position, -1 or empty is not."""
    f = _write(tmp_path / "mm.csv",
               "buffer,start,end,size,alignment,hint,gaps,offset\n"
               "x,0,3,32,16,-1,1-1@0:16,0\n"
               "y,1,2,16,1,48,,-1\n"
               "z,2,4,16,1,-1,,\n")
    p = read_minimalloc_csv(f)
    x, y, z = p.buffers
    assert (x.start, x.end, x.gaps, x.offset, x.hint) == (0, 4, (Gap(1, 2, (0, 16)),), 0, None)
    assert (y.end, y.offset, y.hint) == (3, None, 48)
    assert (z.end, z.offset) == (5, None)
    assert read_minimalloc_csv(f, offsets="ignore").buffers[0].offset is None
    with pytest.raises(ProblemError, match="names column\\(s\\) \\['id'\\] twice"):
        read_minimalloc_csv(_write(tmp_path / "d.csv", "buffer,id,lower,upper,size\na,a,0,1,1\n"))
    with pytest.raises(ProblemError, match="improperly formed gap '1:2'"):
        read_minimalloc_csv(_write(tmp_path / "g.csv", "id,lower,upper,size,gaps\na,0,3,1,1:2\n"))


def test_two_pools_pins_hints_gaps_round_trip_through_csv_and_pools(tmp_path):
    src = _write(tmp_path / "compiler.csv",
                 "id,lower,upper,size,hint,gaps,pools,offset\n"
                 "in,0,2,64,-1,,sram,0\n"
                 "a,1,4,100,64,2-3@0:10,,\n"
                 "b,2,3,50,-1,,,\n"
                 "c,3,6,200,-1,4-5,,\n"
                 "d,4,6,120,-1,,psram,\n")
    pools = parse_pools(POOLS)
    p = read_minimalloc_csv(src, pools=pools)
    assert p.features == {"pins", "hints", "gaps", "pools"} and p.capacity is None
    assert p.candidates == {"in": ("sram",), "d": ("psram",)}
    again = tmp_path / "again.csv"
    write_minimalloc_csv(p, again)
    q = read_minimalloc_csv(again, pools=pools)
    assert q.buffers == p.buffers and q.pools == p.pools
    plan = get_planner("cpsat", time_limit=10.0).plan(p)
    solved = tmp_path / "solved.csv"
    write_minimalloc_csv(p, solved, plan)
    text = solved.read_text().splitlines()
    assert text[0] == "id,lower,upper,size,hint,gaps,pools,offset,pool"
    # the solved file read back: every offset is now fixed, and the plan is still valid
    r = read_minimalloc_csv(solved, pools=pools)
    assert r.pins.tolist() == plan.offsets.tolist()
    check_plan(r, plan.offsets, pools=plan.pools)


def test_cli_plan_and_check_with_pools(tmp_path, capsys):
    src = _write(tmp_path / "c.csv",
                 "id,lower,upper,size,pools,offset\n"
                 "in,0,2,64,sram,0\n"
                 "a,1,3,150,,\n"
                 "b,2,4,300,,\n")
    out = tmp_path / "plan.csv"
    assert main(["plan", str(src), "--planner", "greedy_by_size", "--pools", POOLS, "--json",
                 "-o", str(out)]) == 0
    rec = json.loads(capsys.readouterr().out)
    # b (300 B) fits no sram of 256 B: it spills to psram; a fits above the pinned input
    assert rec["arenas"] == {"sram": 214, "psram": 300} and rec["arena"] == 514
    assert rec["features"] == ["pins", "pools"]
    assert main(["check", str(out), "--pools", POOLS, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True
    # the same plan checked against a smaller sram: a capacity violation in that pool
    assert main(["check", str(out), "--pools", "sram=128:16,psram=8M", "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["counts"] == {"capacity": 1}
    assert main(["plan", str(src), "--pools", "sram=x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memplan: error: --pools 'sram=x'") and len(err.splitlines()) == 1
    # a refusing planner: one line naming the feature
    assert main(["plan", str(src), "--planner", "naive", "--pools", POOLS]) == 2
    err = capsys.readouterr().err.splitlines()
    # the note that the file's offset column pins a buffer, then one error line naming the feature
    assert len(err) == 2 and err[0].startswith("memplan: note: 1 of 3 buffers are pinned")
    assert err[1].startswith("memplan: error:") and "does not handle fixed offsets (pins)" in err[1]
    # --ignore-offsets re-plans the input buffer too
    assert main(["plan", str(src), "--planner", "greedy_by_size", "--pools", POOLS, "--json",
                 "--ignore-offsets"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["features"] == ["pools"] and "ignoring the given offsets" in cap.err


def test_list_shows_the_capability_table(capsys):
    assert main(["list", "--json"]) == 0
    caps = json.loads(capsys.readouterr().out)["capabilities"]
    assert caps["cpsat"]["pins"] == "native" and caps["naive"]["pins"] == "refused"
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("exact_search ")
               and "native" in line)
    assert row.split()[1:] == ["native", "native", "native", "native", "merged"]


def test_pool_text_written_as_minimalloc_writes_hints():
    from planners import Buffer, Problem

    p = Problem([Buffer("a", 0, 2, 8, hint=16), Buffer("b", 1, 3, 8)])
    assert minimalloc_csv_text(p).splitlines() == ["id,lower,upper,size,hint", "a,0,2,8,16",
                                                   "b,1,3,8,-1"]
    assert np.array_equal(p.hints, [16, -1])


def test_view_draws_one_panel_per_pool(tmp_path):
    from experiments.cli.view import load_view

    src = _write(tmp_path / "c.csv", "id,lower,upper,size,pools,offset\n"
                 "in,0,2,64,sram,0\na,1,3,150,,\nb,2,4,300,,\n")
    plans, _, violations = load_view(str(src), ["greedy_by_size"], pools=parse_pools(POOLS))
    assert list(plans) == ["greedy_by_size: sram (capacity 256 B)",
                           "greedy_by_size: psram (capacity 8388608 B)"]
    sram, psram = plans.values()
    assert sram.problem.ids == ["in", "a"] and sram.offsets.tolist() == [0, 64]
    assert psram.problem.ids == ["b"] and psram.arena_size == 300
    # a solved file read back with its pools: the given plan, per pool, valid
    out = tmp_path / "plan.csv"
    assert main(["plan", str(src), "--pools", POOLS, "-o", str(out)]) == 0
    plans, _, violations = load_view(str(out), None, pools=parse_pools(POOLS))
    assert list(plans) == ["given: sram (capacity 256 B)", "given: psram (capacity 8388608 B)"]
    assert violations["given"] == []


def test_random_feature_problems_round_trip(tmp_path):
    """200 seeded random problems with pins, hints, gaps (with and without windows) and
    candidate pools: written and read back, every buffer is equal; a plan written with them
    reads back as pins that the same plan satisfies."""
    rng = np.random.default_rng(2024)
    f = tmp_path / "p.csv"
    pools = parse_pools("sram=512:16,psram=8M")
    for k in range(200):
        p = _random_feature_problem(rng, int(rng.integers(1, 10)), pools=bool(k % 2))
        write_minimalloc_csv(p, f)
        q = read_minimalloc_csv(f, pools=pools if p.pools else None)
        assert q.buffers == p.buffers and q.features == p.features, k
        if k % 10 == 0:
            r = get_planner("greedy_by_size").plan(p)
            if r.status != "infeasible":
                write_minimalloc_csv(p, f, r)
                s = read_minimalloc_csv(f, pools=pools if p.pools else None)
                check_plan(s, r.offsets, pools=r.pools, pool_capacities=False)


def test_csv_hint_minus_one_or_empty_is_none_other_negatives_are_refused(tmp_path):
    """MiniMalloc writes -1 (or nothing) for "no hint": both read as none; -7 is refused in
    one line naming file:line, as a negative offset is."""
    ok = _write(tmp_path / "ok.csv", "id,lower,upper,size,hint\na,0,2,8,-1\nb,0,2,8,\nc,0,2,8,16\n")
    assert [b.hint for b in read_minimalloc_csv(ok).buffers] == [None, None, 16]
    bad = _write(tmp_path / "bad.csv", "id,lower,upper,size,hint\na,0,2,8,4\nb,0,2,8,-7\n")
    with pytest.raises(ProblemError) as e:
        read_minimalloc_csv(bad)
    msg = str(e.value)
    assert msg.startswith(f"{bad}:3: buffer 'b': hint must be >= 0") and "-7" in msg
    assert len(msg.splitlines()) == 1


def test_exact_search_without_capacity_minimises_a_pinned_problem_from_the_cli(tmp_path, capsys):
    """No --capacity: a plain problem is decided at its lower bound, but a problem with pins is
    minimised (a at 20 pinned, b beside it: 120 B optimal), never 'infeasible at 100', a
    capacity the user did not give; compare records the same."""
    import pandas as pd

    src = tmp_path / "inf1.csv"
    src.write_text("id,lower,upper,size,offset\na,0,2,60,20\nb,0,2,40,\n")
    assert main(["plan", str(src), "--planner", "exact_search", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["arena"], out["status"], out["capacity"]) == (120, "optimal", None)
    assert main(["compare", "--workloads", str(src), "--planners", "exact_search",
                 "--out", str(tmp_path / "c"), "--quiet", "--no-plots"]) == 0
    capsys.readouterr()
    rec = pd.read_csv(tmp_path / "c" / "compare.csv").iloc[0]
    assert (rec["arena"], rec["status"]) == (120, "optimal")
