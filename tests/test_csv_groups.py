"""Alias groups, colocation groups and pools survive a plan CSV: ``memplan plan -o`` writes them
(columns ``alias_of``/``alias_delta``, ``colocate``, ``pool``), :func:`read_minimalloc_csv` reads
them back, and ``memplan check`` / ``memplan view`` validate the plan with them.

Lifetimes are half-open ``[lower, upper)`` steps, sizes and offsets bytes.
"""

from __future__ import annotations

import csv

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.cli import main
from experiments.cli.check import check_report, read_offsets
from planners import Buffer, Problem, plan, read_minimalloc_csv, write_minimalloc_csv
from planners.errors import ProblemError
from planners.model import MemoryPool
from planners.validate import plan_violations


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _minimalloc_fromcsv_accepts(path) -> int:
    """MiniMalloc's ``FromCsv`` rules (google/minimalloc ``src/converter.cc``): split on ``\\n``
    and ``,``; every header name maps to a column (no duplicates), the four required ones exist,
    every row has as many fields as the header and integer lower/upper/size/offset. Returns the
    number of buffers it would read."""
    lines = open(path).read().split("\n")
    header = lines[0].split(",")
    assert len(set(header)) == len(header)
    assert {"id", "lower", "upper", "size"} <= set(header)
    n = 0
    for line in lines[1:]:
        if not line:
            break
        fields = line.split(",")
        assert len(fields) == len(header)
        for c in ("lower", "upper", "size", "offset"):
            if c in header:
                int(fields[header.index(c)])
        n += 1
    return n


# -- a real in-place pipeline export ----------------------------------------------------------


def test_inplace_export_keeps_aliases_and_checks_valid(tmp_path, capsys):
    from experiments.cli.plan import pipeline_problem

    out = tmp_path / "plan.csv"
    assert main(["plan", "resnet50", "--pipeline", "inplace", "-o", str(out)]) == 0
    capsys.readouterr()
    expected = pipeline_problem("resnet50", "inplace")
    assert len(expected.aliases) > 0  # the in-place pass did make alias groups
    back = read_minimalloc_csv(out, offsets="ignore")
    assert back.aliases == expected.aliases
    assert back.ids == expected.ids and back.sizes.tolist() == expected.sizes.tolist()
    assert main(["check", str(out)]) == 0
    capsys.readouterr()
    assert main(["view", str(out), "-o", str(tmp_path / "v.html")]) == 0
    capsys.readouterr()
    assert _minimalloc_fromcsv_accepts(out) == expected.n
    # without the alias columns the same offsets are overlaps: the columns carry the groups
    rows = _rows(out)
    plain = tmp_path / "plain.csv"
    with open(plain, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "lower", "upper", "size", "offset"])
        w.writerows([r["id"], r["lower"], r["upper"], r["size"], r["offset"]] for r in rows)
    rep = check_report(plain)
    assert not rep["valid"] and set(rep["counts"]) == {"overlap"}


def test_moved_alias_child_is_reported(tmp_path, capsys):
    p = Problem([Buffer("x", 0, 2, 64), Buffer("y", 1, 3, 64), Buffer("z", 3, 4, 16)],
                aliases={"y": ("x", 0)})
    pl = plan(p, "greedy_by_size")
    f = tmp_path / "p.csv"
    write_minimalloc_csv(p, f, pl)
    assert _rows(f)[1]["alias_of"] == "x" and _rows(f)[1]["alias_delta"] == "0"
    assert check_report(f)["valid"]
    text = f.read_text().splitlines()
    y = text[2].split(",")
    y[4] = str(int(y[4]) + 64)  # the child away from its parent: the alias rule breaks
    text[2] = ",".join(y)
    f.write_text("\n".join(text) + "\n")
    assert main(["check", str(f)]) == 1
    out, _ = capsys.readouterr()
    assert "alias" in out


# -- hypothesis round trip on random problems with alias groups -------------------------------


@st.composite
def alias_problems(draw):
    n = draw(st.integers(1, 12))
    bufs, al = [], {}
    for i in range(n):
        s = draw(st.integers(0, 8))
        e = s + draw(st.integers(1, 5))
        bufs.append(Buffer(f"b{i}" + draw(st.sampled_from(["", " ", ",q", '"'])), s, e,
                           draw(st.integers(0, 64))))
    for i in range(1, n):
        if draw(st.booleans()):
            j = draw(st.integers(0, i - 1))
            if bufs[i].size <= bufs[j].size:
                al[bufs[i].id] = (bufs[j].id, draw(st.integers(0, bufs[j].size - bufs[i].size)))
    return Problem(bufs, aliases=al)


@settings(max_examples=examples(80), deadline=None)
@given(alias_problems(), st.sampled_from(["greedy_by_size", "first_fit", "naive"]))
def test_alias_round_trip(tmp_path_factory, p, name):
    pl = plan(p, name)
    f = tmp_path_factory.mktemp("rt") / "p.csv"
    write_minimalloc_csv(p, f, pl)
    back = read_minimalloc_csv(f, offsets="ignore")
    assert back.ids == p.ids and back.aliases == p.aliases
    assert back.starts.tolist() == p.starts.tolist() and back.ends.tolist() == p.ends.tolist()
    offs = read_offsets(f, back.ids)
    assert offs == pl.offsets.tolist()
    assert plan_violations(back, offs) == []
    assert check_report(f)["valid"]


# -- colocations and pools ----------------------------------------------------------------------


def _coloc_pool_problem():
    sram, psram = MemoryPool("sram", 96, 16), MemoryPool("psram", 1 << 20)
    return Problem([
        Buffer("a", 0, 2, 64), Buffer("b", 1, 3, 48), Buffer("c", 2, 4, 32),
        Buffer("d", 3, 5, 64, pools=("psram",)), Buffer("e", 4, 6, 16),
    ], pools=[sram, psram], colocations=[("a", "e"), ("b", "d")], name="cp")


def test_colocations_and_pools_round_trip(tmp_path, capsys):
    p = _coloc_pool_problem()
    pl = plan(p, "greedy_by_size")
    f = tmp_path / "cp.csv"
    write_minimalloc_csv(p, f, pl)
    rows = {r["id"]: r for r in _rows(f)}
    assert [rows[k]["colocate"] for k in "abcde"] == ["a", "b", "", "b", "a"]
    assert rows["d"]["pool"] == "psram" == rows["b"]["pool"]
    pools = "sram=96:16,psram=1M"
    assert main(["check", str(f), "--pools", pools]) == 0
    capsys.readouterr()
    back = read_minimalloc_csv(f, offsets="ignore", pools=p.pools)
    assert {frozenset(g) for g in back.colocations} == {frozenset(g) for g in p.colocations}
    assert back.candidates == p.candidates
    # a colocated member moved off its group's offset is caught
    text = f.read_text().replace(f"e,4,6,16,,{rows['e']['offset']},",
                                 f"e,4,6,16,,{int(rows['e']['offset']) + 16},")
    assert text != f.read_text()
    f.write_text(text)
    assert main(["check", str(f), "--pools", pools]) == 1
    capsys.readouterr()
    assert main(["view", str(f), "--pools", pools, "-o", str(tmp_path / "v.html")]) == 1
    capsys.readouterr()


def test_group_column_errors(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("id,lower,upper,size,alias_of\na,0,2,8,\nb,1,3,8,nope\n")
    with pytest.raises(ProblemError, match="nope"):
        read_minimalloc_csv(f)
    f.write_text("id,lower,upper,size,colocate\na,0,1,8,b\nb,2,3,8,\n")
    with pytest.raises(ProblemError, match=r"bad.csv:2: column 'colocate' names 'b'"):
        read_minimalloc_csv(f)
    f.write_text("id,lower,upper,size,alias_delta\na,0,1,8,4\n")
    with pytest.raises(ProblemError, match="alias_delta but no alias_of"):
        read_minimalloc_csv(f)
    f.write_text("id,lower,upper,size,offset,alias_of,alias_delta\na,0,2,8,0,,\nb,1,2,8,0,a,0\n")
    with pytest.raises(ProblemError, match="alias groups"):
        read_minimalloc_csv(f)  # MiniMalloc's reading: offsets fixed
    assert read_minimalloc_csv(f, offsets="ignore").aliases == {"b": ("a", 0)}
