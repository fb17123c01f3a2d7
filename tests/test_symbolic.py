"""Symbolic sizes (planners.symbolic): affine sizes in named dims, one plan for every point.

Hand-checked vectors, hypothesis properties and brute force over small boxes (the envelope plan
passes planners.validate.check_plan at every point), CSV and JSON round trips, the error rules,
the ONNX path (dim_param kept symbolic, compared with imports at each point), the command line,
and every registered planner on the upper-bound problem.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from planners.bounds import lower_bound
from planners.errors import InvalidPlanError, MemplanError, ProblemError
from planners.model import Buffer
from planners.registry import PLANNERS, get_planner
from planners.symbolic import (
    AffineSize,
    SymbolicProblem,
    fit_affine_problem,
    parse_dims,
    parse_size,
    plan_symbolic,
    read_symbolic_csv,
    read_symbolic_json,
    sweep_dim,
    symbolic_csv_text,
    symbolic_json_text,
    write_symbolic_csv,
)
from planners.validate import check_plan


def _check_at(result, point):
    plan = result.plan_at(point)
    check_plan(plan.problem, plan.offsets, pools=plan.pools)
    return plan


def seq_problem() -> SymbolicProblem:
    """a [0, 2) 64*seq + 128, b [1, 3) 4096, c [2, 4) 32*seq; seq in [1, 2048]. At the upper
    bound a = 131200, b = 4096, c = 65536 bytes; a and c never meet (a ends at step 2)."""
    return SymbolicProblem([Buffer("a", 0, 2, 0), Buffer("b", 1, 3, 0), Buffer("c", 2, 4, 0)],
                           ["64*seq + 128", 4096, "32*seq"], {"seq": (1, 2048)}, name="seq")


# -- parsing ----------------------------------------------------------------------------------
def test_parse_size_vectors():
    assert parse_size("64*seq+128") == AffineSize(128, {"seq": 64})
    assert parse_size("4*(seq - 1)*2") == AffineSize(-8, {"seq": 8})
    assert parse_size("seq*2 + 3*batch - seq") == AffineSize(0, {"seq": 1, "batch": 3})
    assert parse_size("-seq + 1000") == AffineSize(1000, {"seq": -1})
    assert parse_size("seq - seq + 7").is_constant and parse_size("seq - seq + 7").const == 7
    assert parse_size(42) == AffineSize(42)
    assert str(AffineSize(-8, {"seq": 8, "b": -1})) == "-b + 8*seq - 8"
    assert str(AffineSize(0)) == "0"


@pytest.mark.parametrize("text, rule", [
    ("seq*seq", "not affine"), ("(seq+1)*(seq-1)", "not affine"), ("64*sq", "unknown dim 'sq'"),
    ("3/seq", "character '/'"), ("2*(seq", "missing ')'"), ("", "empty"), ("seq 3", "unexpected"),
    ("2**seq", "expected an integer"), ("__import__('os')", "character"), ("1.5*seq", "character"),
])
def test_parse_size_refuses(text, rule):
    with pytest.raises(ProblemError, match=None) as e:
        parse_size(text, ["seq"], where="buffer 'x'")
    assert rule in str(e.value) and "buffer 'x'" in str(e.value) and "\n" not in str(e.value)


def test_parse_dims_rules():
    assert parse_dims("seq=1..2048, batch=1..8") == {"seq": (1, 2048), "batch": (1, 8)}
    assert parse_dims("seq=7") == {"seq": (7, 7)}
    for text, rule in [("seq=5..2", "lo 5 > hi 2"), ("seq=-1..4", "lo -1 must be >= 0"),
                       ("seq=1..2 seq=3..4", "given twice"), ("seq:1..2", "NAME=LO..HI")]:
        with pytest.raises(ProblemError, match=rule):
            parse_dims(text, "f.csv:1")


# -- hand-checked vectors ---------------------------------------------------------------------
def test_at_upper_envelope_and_plan_vector():
    sp = seq_problem()
    assert sp.upper().sizes.tolist() == [131200, 4096, 65536]
    assert sp.envelope().sizes.tolist() == [131200, 4096, 65536]  # nonneg: envelope = upper
    assert sp.at({"seq": 128}).sizes.tolist() == [8320, 4096, 4096]
    assert sp.nonneg
    r = plan_symbolic(sp, "greedy_by_size")
    # largest first: a at 0; c (65536) at 0 beside a in time; b (live with both) above a
    assert r.offsets.tolist() == [0, 131200, 0]
    assert r.arena == 135296 == lower_bound(sp.upper())
    assert r.planned_at == "upper" and "valid for every seq in [1, 2048]" in r.statement
    assert r.arena_at({"seq": 1}) == 135296  # b's fixed offset 131200 + 4096 sets the top
    assert r.extent_terms() == [AffineSize(135296)]
    for v in (1, 2, 128, 2047, 2048):
        _check_at(r, {"seq": v})


def test_negative_coefficient_plans_the_maxima_vector():
    """a [0, 2) 64*seq + 128, b [1, 3) 1000 - 4*seq, c [2, 4) 50; seq in [1, 100]: b is
    largest at seq = 1 (996 bytes), so the envelope is (6528, 996, 50), not the upper point's
    (6528, 600, 50)."""
    sp = SymbolicProblem([Buffer("a", 0, 2, 0), Buffer("b", 1, 3, 0), Buffer("c", 2, 4, 0)],
                         ["64*seq+128", "1000-4*seq", 50], {"seq": (1, 100)})
    assert not sp.nonneg
    assert sp.envelope().sizes.tolist() == [6528, 996, 50]
    assert sp.upper().sizes.tolist() == [6528, 600, 50]
    r = plan_symbolic(sp, "greedy_by_size")
    assert r.planned_at == "maxima" and "maximum" in r.statement
    assert r.offsets.tolist() == [0, 6528, 0] and r.arena == 7524
    assert r.arena_at({"seq": 100}) == 7128 and r.arena_at({"seq": 1}) == 7524
    assert [str(t) for t in r.extent_terms()] == ["-4*seq + 7528"]
    for p in sp.points():
        _check_at(r, p)
    rows = sweep_dim(sp, "seq", [1, 50, 100], "greedy_by_size", fixed=r)
    assert [tuple(x) for x in rows] == [(1, 1188, 1188, 7524), (50, 4128, 4128, 7328),
                                        (100, 7128, 7128, 7128)]


def test_upper_plan_alone_breaks_with_a_decreasing_size():
    """Why the maxima: b [0, 2) 150 - seq (seq in [0, 100]) placed first at 0 and a (100 bytes)
    above its upper-bound size 50: at seq = 0, b takes [0, 150) over a's [50, 150)."""
    sp = SymbolicProblem([Buffer("b", 0, 2, 0), Buffer("a", 0, 2, 0)], ["150 - seq", 100],
                         {"seq": (0, 100)})
    up = get_planner("greedy_in_order").plan(sp.upper())
    assert up.offsets.tolist() == [0, 50]
    with pytest.raises(InvalidPlanError, match="overlap"):
        check_plan(sp.at({"seq": 0}), up.offsets)
    r = plan_symbolic(sp, "greedy_in_order")
    assert r.offsets.tolist() == [0, 150]
    for p in sp.points():
        _check_at(r, p)


def test_two_dims_and_sweep_holds_other_dims_at_upper():
    sp = SymbolicProblem([Buffer("x", 0, 1, 0), Buffer("y", 0, 1, 0)],
                         ["8*seq*1 + 2*batch", "batch*4"], {"seq": (1, 4), "batch": (1, 3)})
    assert sp.upper().sizes.tolist() == [38, 12]
    rows = sweep_dim(sp, "seq", [1, 4])
    assert [(r.value, r.arena, r.lower_bound) for r in rows] == [(1, 26, 26), (4, 50, 50)]
    rows = sweep_dim(sp, "seq", [2], others={"batch": 1})
    assert (rows[0].arena, rows[0].lower_bound, rows[0].fixed_extent) == (22, 22, None)


def test_aliases_and_pins_carry_over():
    sp = SymbolicProblem([Buffer("p", 0, 3, 0), Buffer("v", 1, 2, 0), Buffer("q", 0, 3, 0)],
                         ["16*seq + 16", "16*seq", 8], {"seq": (1, 9)},
                         aliases={"v": ("p", 16)})
    r = plan_symbolic(sp, "greedy_by_size")
    assert r.offsets[1] == r.offsets[0] + 16
    for p in sp.points():
        _check_at(r, p)
    pinned = SymbolicProblem([Buffer("p", 0, 3, 0), Buffer("q", 0, 3, 0, offset=0)],
                             ["16*seq + 16", 8], {"seq": (1, 9)})
    r = plan_symbolic(pinned, "greedy_by_size")
    assert r.offsets.tolist() == [8, 0]  # q pinned at 0, p above it
    for p in pinned.points():
        _check_at(r, p)
    with pytest.raises(ProblemError, match="outgrows its parent"):
        SymbolicProblem([Buffer("p", 0, 3, 0), Buffer("v", 1, 2, 0)], ["seq + 16", "2*seq"],
                        {"seq": (1, 40)}, aliases={"v": ("p", 0)})


# -- errors -----------------------------------------------------------------------------------
def test_point_and_problem_errors_name_the_dim_and_buffer():
    sp = seq_problem()
    for point, rule in [({"seq": 0}, "dim 'seq' = 0 is out of its range [1, 2048]"),
                        ({"seq": 2049}, "out of its range"), ({}, "no value for dim 'seq'"),
                        ({"seq": 4, "n": 1}, "unknown dim 'n'"), ({"seq": 1.5}, "not an integer")]:
        with pytest.raises(ProblemError, match=rule.replace("[", r"\[").replace("]", r"\]")):
            sp.at(point)
    with pytest.raises(ProblemError, match=r"buffer 'b': size -seq \+ 100 is negative \(-28 bytes\) "
                                           r"at seq=128"):
        SymbolicProblem([Buffer("b", 0, 1, 0)], ["100 - seq"], {"seq": (1, 128)})
    with pytest.raises(ProblemError, match="unknown dim 'batch'"):
        SymbolicProblem([Buffer("b", 0, 1, 0)], [AffineSize(0, {"batch": 2})], {"seq": (1, 2)})
    with pytest.raises(ProblemError, match="lo 3 > hi 2"):
        SymbolicProblem([Buffer("b", 0, 1, 0)], ["seq"], {"seq": (3, 2)})
    with pytest.raises(ProblemError, match="lo -1 must be >= 0"):
        SymbolicProblem([Buffer("b", 0, 1, 0)], ["seq"], {"seq": (-1, 2)})
    with pytest.raises(ProblemError, match="2 sizes for 1 buffers"):
        SymbolicProblem([Buffer("b", 0, 1, 0)], ["seq", 1], {"seq": (1, 2)})


@pytest.mark.parametrize("body, rule", [
    ("# dims: seq=1..4\nid,lower,upper,size\na,0,1,4*sq\n", r":3: buffer 'a'.*unknown dim 'sq'"),
    ("# dims: seq=1..4\nid,lower,upper,size\na,0,1,4\nb,0,1,seq*seq\n", r":4: buffer 'b'.*not affine"),
    ("# dims: seq=4..1\nid,lower,upper,size\na,0,1,4\n", r":1: dim 'seq': bad range lo 4 > hi 1"),
    ("# dims: seq=-2..1\nid,lower,upper,size\na,0,1,4\n", r":1: dim 'seq': lo -2 must be >= 0"),
    ("# dims: seq=1..4\nid,lower,upper,size\na,0,1,2-seq\n", r":3: buffer 'a': size -seq \+ 2 is "
                                                            r"negative \(-2 bytes\) at seq=4"),
    ("# dims: seq=1..4\nid,lower,upper,size\na,1,1,seq\n", r":3: buffer 'a'.*end > start"),
    ("# dims: seq=1..4\nid,lower,upper,size,gaps\na,0,1,seq,\n", r"column 'gaps' is not read"),
    ("id,lower,upper,size\na,0,1,seq\n", r"no '# dims:"),
])
def test_csv_errors_name_line_and_rule(tmp_path, body, rule):
    f = tmp_path / "p.csv"
    f.write_text(body)
    with pytest.raises(ProblemError, match=rule) as e:
        read_symbolic_csv(f)
    assert str(f) in str(e.value) and "\n" not in str(e.value)


def test_plain_reader_refuses_a_symbolic_csv_with_a_pointer(tmp_path):
    from planners.io import read_minimalloc_csv

    f = tmp_path / "p.csv"
    f.write_text("# dims: seq=1..4\nid,lower,upper,size\na,0,1,seq\n")
    with pytest.raises(ProblemError, match="planners.symbolic.read_symbolic_csv"):
        read_minimalloc_csv(f)


def test_json_errors():
    doc = {"format": "memplan-symbolic", "dims": {"seq": [1, 4]},
           "buffers": [{"id": "a", "lower": 0, "upper": 1, "size": "seq*seq"}]}
    with pytest.raises(ProblemError, match="buffer 0 'a'.*not affine"):
        read_symbolic_json(json.dumps(doc))
    doc["buffers"][0] = {"id": "a", "lower": 0, "upper": 1, "size": "seq", "colour": 1}
    with pytest.raises(ProblemError, match="unknown key 'colour'"):
        read_symbolic_json(json.dumps(doc))
    doc["dims"] = {"seq": [5, 4]}
    with pytest.raises(ProblemError, match="lo 5 > hi 4"):
        read_symbolic_json(json.dumps(doc))
    with pytest.raises(ProblemError, match="not a symbolic problem"):
        read_symbolic_json(json.dumps({"format": "x"}))


# -- round trips ------------------------------------------------------------------------------
def _mixed() -> SymbolicProblem:
    return SymbolicProblem(
        [Buffer("a", 0, 2, 0, alignment=16), Buffer('b,"x"', 1, 3, 0, offset=0),
         Buffer(" c ", 2, 4, 0, hint=64), Buffer("w", 0, 4, 0, kind="resident")],
        ["64*seq+128*batch", "1000-4*seq", 50, "2*batch"],
        {"seq": (1, 100), "batch": (1, 2)}, name="mixed")


def _same(a: SymbolicProblem, b: SymbolicProblem) -> None:
    assert a.dims == b.dims and a.sizes == b.sizes and a.ids == b.ids
    assert a.envelope().buffers == b.envelope().buffers


def test_csv_round_trip(tmp_path):
    sp = _mixed()
    f = tmp_path / "mixed.csv"
    write_symbolic_csv(sp, f)
    text = f.read_text()
    assert text.splitlines()[:2] == ["# dims: seq=1..100, batch=1..2",
                                    "id,lower,upper,size,alignment,kind,offset,hint"]
    assert "a,0,2,128*batch+64*seq,16,,," in text
    back = read_symbolic_csv(f)
    _same(sp, back)
    assert symbolic_csv_text(back) == text


def test_json_round_trip(tmp_path):
    sp = _mixed()
    text = symbolic_json_text(sp)
    doc = json.loads(text)
    assert doc["dims"] == {"seq": [1, 100], "batch": [1, 2]} and doc["buffers"][2]["size"] == 50
    _same(sp, read_symbolic_json(text))
    f = tmp_path / "mixed.json"
    f.write_text(text)
    _same(sp, read_symbolic_json(f))


# -- properties and brute force ---------------------------------------------------------------
@st.composite
def problems(draw, negative: bool):
    ndims = draw(st.integers(1, 2))
    dims = {}
    for d in ("seq", "batch")[:ndims]:
        lo = draw(st.integers(0, 3))
        dims[d] = (lo, lo + draw(st.integers(0, 3)))
    n = draw(st.integers(1, 6))
    bufs, sizes = [], []
    for i in range(n):
        s = draw(st.integers(0, 6))
        bufs.append(Buffer(f"t{i}", s, s + draw(st.integers(1, 4)), 0,
                           alignment=draw(st.sampled_from([None, None, 4]))))
        lo_c = -5 if negative else 0
        coeffs = {d: draw(st.integers(lo_c, 5)) for d in dims}
        lin = AffineSize(0, coeffs)
        const = draw(st.integers(0, 40)) - lin.min_over(dims)  # size >= 0 over the box
        sizes.append(AffineSize(const, coeffs))
    return SymbolicProblem(bufs, sizes, dims)


HEURISTICS = ["greedy_by_size", "greedy_in_order", "first_fit", "best_fit", "greedy_by_breadth"]


@settings(max_examples=examples(60), deadline=None)
@given(problems(negative=False), st.sampled_from(HEURISTICS), st.data())
def test_property_nonneg_upper_plan_valid_at_random_points(sp, planner, data):
    r = plan_symbolic(sp, planner)
    assert r.planned_at == "upper"
    assert r.plan.problem.sizes.tolist() == sp.upper().sizes.tolist()
    for _ in range(5):
        point = {d: data.draw(st.integers(lo, hi)) for d, (lo, hi) in sp.dims.items()}
        plan = _check_at(r, point)
        assert plan.arena_size <= r.arena
        extent = max([0] + [t.at(point) for t in r.extent_terms()])
        if min(plan.problem.sizes.tolist(), default=1) > 0:
            assert plan.arena_size == extent
        else:  # a size-0 buffer touches no byte: its term (its offset) may exceed the extent
            assert plan.arena_size <= extent


@settings(max_examples=examples(60), deadline=None)
@given(problems(negative=True), st.sampled_from(HEURISTICS), st.data())
def test_property_negative_coeffs_maxima_plan_valid_at_random_points(sp, planner, data):
    r = plan_symbolic(sp, planner)
    env = sp.envelope().sizes.tolist()
    assert env == [max(s.at(p) for p in sp.points()) for s in sp.sizes]  # corner rule
    for _ in range(5):
        point = {d: data.draw(st.integers(lo, hi)) for d, (lo, hi) in sp.dims.items()}
        assert _check_at(r, point).arena_size <= r.arena


@settings(max_examples=examples(25), deadline=None)
@given(problems(negative=True))
def test_brute_force_every_point_of_small_boxes(sp):
    r = plan_symbolic(sp, "greedy_by_size")
    npoints = 0
    for point in sp.points():
        _check_at(r, point)
        npoints += 1
    assert npoints == int(np.prod([hi - lo + 1 for lo, hi in sp.dims.values()]))


# -- fitting from evaluations and ONNX --------------------------------------------------------
def test_fit_affine_problem_recovers_and_refuses():
    def at(point, square=False):
        s = point["seq"]
        return SymbolicProblem([Buffer("x", 0, 2, 0), Buffer("y", 1, 3, 0)],
                               [12 * s + 4, s * s if square else 7], {"seq": (s, s)}).at(point)

    sp = fit_affine_problem(at, {"seq": (1, 10)})
    assert sp.sizes == (AffineSize(4, {"seq": 12}), AffineSize(7))
    with pytest.raises(ProblemError, match="'y': size is not affine"):
        fit_affine_problem(lambda p: at(p, square=True), {"seq": (1, 10)})


def _onnx_model(attention: bool = False):
    """X [seq, 16] float -> MatMul W [16, 32] -> Y [seq, 32] -> Relu R -> Concat(R, X) Z
    [seq, 48]; with ``attention`` also S = Z @ Z^T [seq, seq] (not affine in seq)."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["seq", 16])
    out = helper.make_tensor_value_info("S" if attention else "Z", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((16, 32), np.float32), "W")
    nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"]), helper.make_node("Relu", ["Y"], ["R"]),
             helper.make_node("Concat", ["R", "X"], ["Z"], axis=1)]
    if attention:
        nodes += [helper.make_node("Transpose", ["Z"], ["ZT"]),
                  helper.make_node("MatMul", ["Z", "ZT"], ["S"])]
    g = helper.make_graph(nodes, "g", [x], [out], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_dim_param_kept_symbolic_matches_overrides_at_each_point():
    from scheduling.lifetimes import lifetime_problem
    from scheduling.onnx_import import load_onnx, onnx_symbolic_problem

    model = _onnx_model()
    sp = onnx_symbolic_problem(model, {"seq": (1, 12)}, name="m")
    # float32: Y and R are seq*32*4 bytes, Z is seq*48*4
    assert dict(zip(sp.ids, map(str, sp.sizes))) == {"Y": "128*seq", "R": "128*seq",
                                                     "Z": "192*seq"}
    r = plan_symbolic(sp, "greedy_by_size")
    for v in range(1, 13):
        direct = lifetime_problem(load_onnx(model, overrides={"seq": v}), None, name="m")
        assert sp.at({"seq": v}).buffers == direct.buffers
        check_plan(direct, r.offsets)  # the one plan serves the model imported at this point


def test_onnx_attention_refused_in_one_line():
    from scheduling.onnx_import import onnx_symbolic_problem

    with pytest.raises(ProblemError, match="tensor 'S': size is not affine") as e:
        onnx_symbolic_problem(_onnx_model(attention=True), {"seq": (1, 64)}, name="a")
    assert "\n" not in str(e.value)


# -- every registered planner -----------------------------------------------------------------
@pytest.mark.parametrize("name", list(PLANNERS))
def test_every_planner_plans_the_upper_problem_or_refuses_in_one_line(name):
    sp = SymbolicProblem([Buffer("a", 0, 2, 0), Buffer("b", 1, 3, 0), Buffer("c", 2, 4, 0),
                          Buffer("d", 0, 4, 0)],
                         ["8*seq + 8", 24, "4*seq", "16 - 2*seq"], {"seq": (1, 4)})
    cls = PLANNERS[name]
    params = {k: v for k, v in (("time_limit", 1), ("workers", 1)) if k in cls._param_names()}
    try:
        r = plan_symbolic(sp, name, **params)
    except MemplanError as e:
        assert "\n" not in str(e).strip()
        return
    if r.plan.status in ("infeasible", "timeout", "skipped"):
        assert "no plan" in r.statement
        return
    for p in sp.points():
        _check_at(r, p)


# -- command line -----------------------------------------------------------------------------
def test_cli_plans_upper_bounds_and_at_a_point(tmp_path, capsys):
    from experiments.cli.app import main

    f = tmp_path / "seq.csv"
    write_symbolic_csv(seq_problem(), f)
    assert main(["plan", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arena"] == 135296 and out["valid_for"].startswith("every seq in [1, 2048]")
    assert main(["plan", str(f), "--at", "seq=128", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arena"] == 12416 and out["lower_bound"] == 12416
    assert out["valid_for"].startswith("seq=128 only")
    g = tmp_path / "seq.json"
    g.write_text(symbolic_json_text(seq_problem()))
    assert main(["plan", str(g)]) == 0
    assert "valid_for" in capsys.readouterr().out
    assert main(["plan", str(f), "--at", "seq=4096"]) == 2
    assert "out of its range [1, 2048]" in capsys.readouterr().err
    plain = tmp_path / "plain.csv"
    plain.write_text("id,lower,upper,size\na,0,1,8\n")
    assert main(["plan", str(plain), "--at", "seq=4"]) == 2
    assert "--at sets the dims" in capsys.readouterr().err


def test_cli_onnx_dims_kept_symbolic(tmp_path, capsys):
    """seq in [1, 12]: Y, R 128*seq and Z 192*seq bytes; R and Z are live together at step 2,
    so the arena is 320*seq: 3840 bytes at seq = 12, 1600 at seq = 5 (as --override seq=5)."""
    onnx = pytest.importorskip("onnx")
    from experiments.cli.app import main

    f = tmp_path / "m.onnx"
    onnx.save(_onnx_model(), f)
    assert main(["plan", str(f), "--dims", "seq=1..12", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arena"] == 3840 and out["valid_for"].startswith("every seq in [1, 12]")
    assert main(["plan", str(f), "--dims", "seq=1..12", "--at", "seq=5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["arena"] == 1600
    assert main(["plan", str(f), "--override", "seq=5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["arena"] == 1600
    a = tmp_path / "a.onnx"
    onnx.save(_onnx_model(attention=True), a)
    assert main(["plan", str(a), "--dims", "seq=1..64"]) == 2
    err = capsys.readouterr().err
    assert "tensor 'S': size is not affine" in err and err.count("\n") == 1
    assert main(["plan", str(f), "--at", "seq=5"]) == 2
    assert "--dims DIM=LO..HI" in capsys.readouterr().err
