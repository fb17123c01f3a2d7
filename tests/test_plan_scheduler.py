"""``memplan plan INPUT --scheduler NAME``: the graph ordered by a scheduler, the order checked,
the lifetimes derived as for the stored order, then planned; ``--scheduler joint --planner joint``
takes the joint optimiser's own offsets. Sizes and offsets in bytes, lifetimes half-open steps."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from experiments.cli import main
from experiments.cli.check import check_report, read_offsets
from planners import plan, read_minimalloc_csv
from planners.errors import FeatureError
from planners.validate import check_plan
from scheduling.generators import generate
from scheduling.lifetimes import lifetime_problem, peak_live_bytes
from scheduling.nodelink import read_nodelink
from scheduling.schedule import check_schedule
from scheduling.schedulers import schedule


def _nodelink_file(g, path) -> str:
    """``g`` as a node-link JSON graph (one node per operator, its output bytes in ``cost_ram``,
    an edge per producer -> consumer), the format Checkmate and MOCCASIN write."""
    G = nx.DiGraph()
    for name, op in g.ops.items():
        G.add_node(name, cost_ram=sum(g.tensors[t].nbytes for t in op.outputs))
    for name, op in g.ops.items():
        for t in op.inputs:
            if g.tensors[t].producer is not None:
                G.add_edge(g.tensors[t].producer, name)
    path.write_text(json.dumps(nx.node_link_data(G, edges="links")))
    return str(path)


@pytest.fixture(scope="module")
def small_graph(tmp_path_factory):
    """A 12-operator MOCCASIN-shaped graph as a node-link file, and the graph read back."""
    f = _nodelink_file(generate("moccasin_layered", seed=0, n_ops=12),
                       tmp_path_factory.mktemp("g") / "m0.json")
    return f, read_nodelink(f)


def _plan_json(capsys, *argv):
    rc = main(["plan", *argv, "--json"])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


def test_min_live_plan_is_valid_and_above_the_order_bound(small_graph, tmp_path, capsys):
    f, g = small_graph
    csv = tmp_path / "p.csv"
    rc, out, _ = _plan_json(capsys, f, "--scheduler", "min_live", "-o", str(csv))
    assert rc == 0 and out["scheduler"] == "min_live" and out["valid"]
    order = schedule(g, "min_live").order
    assert out["order"] == list(order)
    check_schedule(g, out["order"])
    assert out["peak_bytes"] == peak_live_bytes(g, order) == out["lower_bound"]
    assert out["arena"] >= out["order_bound"] > 0
    assert out["arena"] >= out["peak_bytes"] >= out["order_bound"]
    # the written plan is the order's activation problem, and it checks
    want = lifetime_problem(g, order)
    back = read_minimalloc_csv(csv, offsets="ignore")
    assert dict(zip(back.ids, zip(back.starts.tolist(), back.ends.tolist()))) == dict(
        zip(want.ids, zip(want.starts.tolist(), want.ends.tolist())))
    assert check_report(csv)["valid"]
    # the text output names the scheduler too
    assert main(["plan", f, "--scheduler", "min_live"]) == 0
    text = capsys.readouterr().out
    assert "schedule_status" in text and "order_bound" in text and "min_live" in text


def test_file_order_scheduler_equals_the_stored_order_path(capsys, tmp_path):
    """With the stored order as the scheduler, the pipeline path gives the same problem."""
    argv = ["mobilenet_v2", "--pipeline", "simplify,views,fuse,inplace"]
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    rc1, plain, _ = _plan_json(capsys, *argv, "-o", str(a))
    rc2, sched, _ = _plan_json(capsys, *argv, "--scheduler", "file_order", "-o", str(b))
    assert rc1 == rc2 == 0
    for k in ("buffers", "arena", "lower_bound", "status"):
        assert plain[k] == sched[k], k
    # the order's bound and peak are of the graph before the passes, and named so
    assert "order_bound" not in sched and "peak_bytes" not in sched
    assert sched["peak_bytes_before_pipeline"] >= sched["order_bound_before_pipeline"] > 0
    pa, pb = read_minimalloc_csv(a, offsets="ignore"), read_minimalloc_csv(b, offsets="ignore")
    assert pa.aliases == pb.aliases and len(pa.aliases) > 0
    assert check_report(b)["valid"]


def test_joint_planner_takes_the_joint_offsets(small_graph, tmp_path, capsys):
    f, g = small_graph
    csv = tmp_path / "j.csv"
    rc, out, _ = _plan_json(capsys, f, "--scheduler", "joint", "--planner", "joint",
                            "--time-limit", "20", "--scheduler-param", "deterministic_time=2",
                            "--scheduler-param", "planner=greedy_by_size", "-o", str(csv))
    assert rc == 0 and out["planner"] == "joint" and out["valid"]
    order = out["order"]
    check_schedule(g, order)
    prob = lifetime_problem(g, order)
    back = read_minimalloc_csv(csv, offsets="ignore")
    offs = read_offsets(csv, prob.ids)
    assert sorted(back.ids) == sorted(prob.ids)
    check_plan(prob, offs)  # the independent validator on the problem rebuilt from the order
    arena = max(o + s for o, s in zip(offs, prob.sizes.tolist()))
    assert arena == out["arena"]
    assert out["joint_bound"] <= arena <= out["start_arena"]
    assert out["status"] == out["joint_status"] == (
        "optimal" if arena == out["joint_bound"] else "feasible")
    assert out["best_bound"] == out["joint_bound"]
    # the sequential pairs planned by greedy_by_size start above the bound (28080 > 25040
    # bytes on this graph), and the exact joint model (12 operators) closes the gap
    stored = plan(lifetime_problem(g, None), "greedy_by_size").arena_size
    assert out["start_arena"] <= stored
    assert arena < out["start_arena"] and out["status"] == "optimal"


def test_joint_plan_refuses_another_lifetime_policy(small_graph):
    from experiments.cli.plan import joint_plan
    from experiments.cli.schedule import make_scheduler

    _, g = small_graph
    s = make_scheduler("joint", {"deterministic_time": 1.0}, time_limit=10)
    sch = s.schedule(g)
    ok = joint_plan(lifetime_problem(g, sch.order), sch, g)
    assert ok.arena_size == sch.info["arena_bytes"]
    with pytest.raises(FeatureError, match="16"):  # a TFLite-like 16-byte-aligned arena
        joint_plan(lifetime_problem(g, sch.order, alignment=16), sch, g)
    with pytest.raises(ValueError, match="needs --scheduler joint"):
        joint_plan(lifetime_problem(g, sch.order), schedule(g, "min_live"), g)


@pytest.mark.parametrize("extra, words", [
    (["--planner", "joint"], "needs --scheduler joint (got no --scheduler)"),
    (["--scheduler", "min_live", "--planner", "joint"], "got --scheduler min_live"),
    (["--scheduler-param", "seed=1"], "no scheduler was given"),
    (["--scheduler", "joint", "--planner", "joint", "--pipeline", "inplace", "--pools",
      "sram=1k,psram=inf"], "--pipeline with --pools is not supported"),
    (["--scheduler", "joint", "--planner", "joint", "--unified"], "with --unified"),
    (["--scheduler", "joint", "--planner", "joint", "--param", "x=1"], "--scheduler-param"),
    (["--scheduler", "min_lve"], "did you mean 'min_live'"),
    (["--scheduler", "min_live", "--scheduler-param", "foo=1"], "has no parameter 'foo'"),
    (["--scheduler", "joint", "--scheduler-param", "seed=-1"], "'seed' = -1"),
])
def test_bad_combinations_one_line_exit_2(small_graph, capsys, extra, words):
    f, _ = small_graph
    assert main(["plan", f, *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("memplan: error: ") and words in err


@pytest.mark.parametrize("spec, words", [
    ("A.1048576.csv", "is a list of buffers, not a graph"),
    ("seed000", "its own table of lifetimes"),
])
def test_inputs_without_an_order_one_line_exit_2(tmp_path, capsys, spec, words):
    if spec.endswith(".csv"):
        (tmp_path / spec).write_text("id,lower,upper,size\na,0,2,8\n")
        spec = str(tmp_path / spec)
    assert main(["plan", spec, "--scheduler", "min_live"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


def test_tflite_keeps_its_lifetime_policy_under_a_scheduler(capsys):
    """A TFLite model scheduled: the graph input in the arena and 16-byte alignment, as the
    stored-order path plans it (experiments.workloads.KIND_LIFETIME_POLICY["tflite"])."""
    from conftest import shared_case

    from experiments.workloads import activation_problem, load_problem
    from planners import lower_bound
    from scheduling.tflite_import import load_tflite

    f = str(shared_case("add_chain.tflite"))
    rc, out, _ = _plan_json(capsys, f, "--scheduler", "file_order")
    assert rc == 0 and "runtime_order" in out
    stored = load_problem(f)
    assert (out["buffers"], out["lower_bound"]) == (stored.n, lower_bound(stored))
    rc, out, _ = _plan_json(capsys, f, "--scheduler", "min_live")
    g = load_tflite(f).graph
    want = activation_problem("tflite", g, out["order"])
    assert int(want.alignments.min()) == 16 and out["lower_bound"] == lower_bound(want)
    assert out["arena"] >= out["lower_bound"]
