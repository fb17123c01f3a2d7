"""The soak harness (experiments/bench/soak.py): its independent checks, and a tiny soak run."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.bench import soak
from planners import Buffer, Plan, Problem, lower_bound, plan
from planners.errors import MemplanError, ProblemError
from planners.examples import exercise_5_1_problem as _ex51


def test_tiny_soak_has_no_failures(tmp_path):
    counts, failures, _, busy = soak.soak(problems=200, files=60, seed=3, jobs=2, chunk=25,
                                    failures_dir=tmp_path / "failures", progress=False)
    planners = {t for (k, t) in counts if k == "planner"}
    importers = {t for (k, t) in counts if k == "importer"}
    from planners.registry import PLANNERS

    assert planners == set(PLANNERS)
    assert importers == {"csv", "onnx", "tflite"}
    assert sum(sum(c.values()) for c in counts.values()) == 260
    assert set(busy) == set(counts)
    summary = [(f["target"], f["outcome"], f["index"], str(f.get("detail"))[-200:])
               for f in failures]
    assert summary == []
    # the clean outcomes really happen: valid plans, and refused malformed files
    assert sum(c["ok"] for (k, _), c in counts.items() if k == "planner") > 150
    assert sum(c["refused"] for (k, _), c in counts.items() if k == "importer") > 20


def test_results_files(tmp_path):
    out = tmp_path / "soak.csv"
    assert soak.main(["--problems", "30", "--files", "6", "--seed", "5", "--jobs", "0",
                      "--out", str(out)]) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == "kind,target,runs,ok,refused,invalid,wrong_bound,traceback,hang,seed"
    assert sum(int(r.split(",")[2]) for r in rows[1:]) == 36
    assert all(r.endswith(",5") for r in rows[1:])
    assert "seed 5" in (tmp_path / "soak.md").read_text()


def test_items_are_deterministic():
    a = soak.soak_problem(11, 42)
    b = soak.soak_problem(11, 42)
    assert [x.__repr__() for x in a[0].buffers] == [x.__repr__() for x in b[0].buffers]
    assert a[2] == b[2]
    for kind in ("csv", "onnx"):
        assert soak.mutated_file(11, kind, 7) == soak.mutated_file(11, kind, 7)
    assert soak.mutated_file(11, "csv", 7) != soak.mutated_file(12, "csv", 7)


def test_lower_bound_ints_matches_hand_values():
    assert soak.lower_bound_ints(_ex51()) == 780
    # alignment 8, sizes 5 and 3 live together: 5 rounds to 8 below the other, 8 + 3 = 11
    p = Problem([Buffer("a", 0, 2, 5), Buffer("b", 1, 3, 3)], alignment=8)
    assert soak.lower_bound_ints(p) == lower_bound(p) == 11
    # an alias group is one buffer: the child's lifetime extends its root's
    q = Problem([Buffer("r", 0, 1, 10), Buffer("c", 1, 3, 4), Buffer("x", 2, 3, 7)],
                aliases={"c": ("r", 6)})
    assert soak.lower_bound_ints(q) == lower_bound(q) == 17


def test_check_plan_ints_names_each_rule():
    p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4, alignment=4), Buffer("z", 0, 3, 0)])
    assert soak.check_plan_ints(p, [0, 4, 0]) is None
    assert "overlap" in soak.check_plan_ints(p, [0, 0, 0])
    assert "not a multiple of 4" in soak.check_plan_ints(p, [0, 6, 0])
    assert "negative" in soak.check_plan_ints(p, [0, 4, -1])
    # zero-size buffers never collide; lifetimes [0, 2) and [2, 3) do not meet
    q = Problem([Buffer("a", 0, 2, 4), Buffer("b", 2, 3, 4)])
    assert soak.check_plan_ints(q, [0, 0]) is None
    r = Problem([Buffer("r", 0, 1, 10), Buffer("c", 1, 2, 4), Buffer("x", 1, 2, 4)],
                aliases={"c": ("r", 6)})
    assert "alias" in soak.check_plan_ints(r, [0, 4, 10])
    assert "overlap" in soak.check_plan_ints(r, [0, 6, 8])  # x inside r's reserved range
    assert soak.check_plan_ints(r, [0, 6, 10]) is None


def test_check_refutes_wrong_claims():
    p = _ex51()
    good = plan(p, "first_fit")
    assert good.arena_size == 880
    assert soak._check(p, good, brute=True) == ("ok", "")

    def claim(**kw):
        fields = dict(problem=p, offsets=good.offsets, planner="x", status="heuristic",
                      lower_bound=780, best_bound=780)
        fields.update(kw)
        return soak._check(p, Plan(**fields), brute=True)[0]

    assert claim(status="optimal") == "wrong_bound"  # 880 claimed optimal, bound 780
    assert claim(lower_bound=779) == "wrong_bound"
    assert claim(best_bound=881) == "wrong_bound"  # bound above the arena
    assert claim(status="infeasible") == "wrong_bound"  # no capacity
    assert claim(offsets=np.zeros(p.n, np.int64)) == "invalid"


def test_brute_force_optimum_agrees_with_cpsat():
    assert soak.brute_force_optimum(_ex51()) == 780
    checked = 0
    for i in range(40):
        try:
            p = soak.soak_problem(7, i, exact=True)[0]
        except ProblemError:
            continue
        opt = soak.brute_force_optimum(p)
        if opt is None:
            continue
        try:
            r = plan(p, "cpsat", time_limit=5.0, workers=1)
        except MemplanError:
            continue
        if r.status == "optimal":
            assert r.arena_size == opt, i
            checked += 1
    assert checked >= 15


def test_csv_field_over_the_csv_limit_is_a_problem_error(tmp_path):
    from planners.io import read_minimalloc_csv

    f = tmp_path / "long.csv"
    f.write_text("id,lower,upper,size\na,0,1," + "9" * 200_000 + "\n")
    with pytest.raises(ProblemError, match=r"long\.csv:2: malformed CSV row"):
        read_minimalloc_csv(f)
    f.write_text("id,lower,upper,size\n\nb,0,1,x\n")
    with pytest.raises(ProblemError, match=r"long\.csv:3: column 'size'"):
        read_minimalloc_csv(f)


def test_onnx_name_not_utf8_is_an_import_error(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    from scheduling.errors import OnnxImportError
    from scheduling.onnx_import import load_onnx

    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["yy"], name="r")], "g",
                          [vi("x", TensorProto.FLOAT, [2])], [vi("yy", TensorProto.FLOAT, [2])])
    data = helper.make_model(g).SerializeToString()
    f = tmp_path / "bad.onnx"
    f.write_bytes(data.replace(b"yy", b"y\xff"))
    with pytest.raises(OnnxImportError, match=r"bad\.onnx: name b'y\\xff' is not valid UTF-8"):
        load_onnx(f)
    assert onnx  # the protobuf parses: only the name is malformed


def test_onnx_if_without_branches_is_an_import_error(tmp_path):
    from onnx import TensorProto, helper

    from scheduling.errors import OnnxImportError
    from scheduling.onnx_import import load_onnx

    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="branchy")], "g",
                          [vi("c", TensorProto.BOOL, [])], [vi("y", TensorProto.FLOAT, [2])])
    f = tmp_path / "if.onnx"
    f.write_bytes(helper.make_model(g).SerializeToString())
    with pytest.raises(OnnxImportError, match=r"node 'branchy' \(If\) has no graph attribute "
                                              r"'then_branch'"):
        load_onnx(f)


def test_pool_reruns_overrun_chunks_and_kills_hung_runs():
    # every chunk overruns its (tiny) limit: its items are rerun one per task and still pass
    counts, failures, _, _ = soak.soak(problems=12, files=0, seed=4, jobs=2, chunk=6,
                                       progress=False, chunk_slack=1e-3)
    assert sum(sum(c.values()) for c in counts.values()) == 12
    assert failures == []
    # a single run over its wall limit is a hang: killed by the pool, or timed when it returned
    counts, failures, _, _ = soak.soak(problems=0, files=3, seed=4, jobs=1, chunk=3,
                                       progress=False, hang_limit=1e-9, chunk_slack=1e-3,
                                       kill_slack=1e-3)
    assert {t: c["hang"] for (_, t), c in counts.items()} == {"csv": 1, "onnx": 1, "tflite": 1}
    assert all("killed after" in f["detail"] or "> limit" in f["detail"] for f in failures)


def test_csv_mutations_never_fail_on_rows_an_earlier_mutation_shortened():
    # seed 1 item 2171 drops a row's last field, then sets that row's size column
    data, _, desc = soak.mutated_file(1, "csv", 2171)
    assert desc.endswith("negative_size(not applicable)")
    assert soak.run_item(1, "csv", 2171)["outcome"] == "refused"


def test_pinned_problems_are_rechecked_with_their_pins():
    """A mutated CSV with an offset column is a pinned problem: colliding pins make
    ``infeasible`` without a capacity the right answer, a plan must honour every pin, and the
    bound must reach the highest pinned top (each checked here independently of the planners)."""
    from experiments.bench.soak import _check, _pin_conflict

    free = Problem([Buffer("a", 0, 2, 8, offset=16), Buffer("b", 1, 3, 8)])
    assert _pin_conflict(free) is None
    good = plan(free, "greedy_by_size")
    assert _check(free, good, brute=False) == ("ok", "")
    moved = Plan(free, np.array([0, 8]), "fake", "heuristic", lower_bound=good.lower_bound,
                 best_bound=good.lower_bound)
    assert _check(free, moved, brute=False)[0] == "invalid"
    clash = Problem([Buffer("a", 0, 2, 8, offset=0), Buffer("b", 1, 3, 8, offset=4)])
    assert "overlap" in _pin_conflict(clash)
    assert _check(clash, plan(clash, "cpsat"), brute=False) == ("ok", "")
