"""Node-link JSON graphs (networkx, Checkmate, MOCCASIN) and `memplan plan|compare|schedule` on them."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from experiments.cli import main
from experiments.workloads import load_problem
from planners import lower_bound
from scheduling.errors import CycleError
from scheduling.graph import Graph
from scheduling.lifetimes import peak_live_bytes
from scheduling.nodelink import NodeLinkError, read_nodelink
from scheduling.schedulers import get_scheduler

# A Checkmate-style graph written by hand: one node per operation, cost_ram = bytes of its output.
# a feeds two branches of 50-byte tensors, each reduced to 4 bytes, joined by f.
NODES = [("a", 4), ("b", 50), ("c", 50), ("d", 4), ("e", 4), ("f", 4)]
EDGES = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "e"), ("d", "f"), ("e", "f")]
# Hand-checked peaks. File order a b c d e f: a lives [0,2], b [1,3], c [2,4], d [3,5], e [4,5],
# f [5,5] (the sink is a graph output); at step 2 a+b+c = 104, at step 3 b+c+d = 104.
# Order a b d c e f: a [0,3], b [1,2], d [2,5], c [3,4], e [4,5], f [5]; at most 4+50+4 = 58.
FILE_ORDER_PEAK = 104
BEST_PEAK = 58


def checkmate_json(edges_key="links", **extra) -> dict:
    ids = {n: i for i, (n, _) in enumerate(NODES)}
    return {"directed": True, "multigraph": False, "graph": {"name": "ck"},
            "nodes": [{"id": ids[n], "name": n, "cost_ram": s, "cost_cpu": 1} for n, s in NODES],
            edges_key: [{"source": ids[u], "target": ids[v]} for u, v in EDGES], **extra}


def write(tmp_path, data, name="g.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def test_checkmate_graph_peaks(tmp_path):
    g = read_nodelink(write(tmp_path, checkmate_json()))
    assert list(g.ops) == ["0", "1", "2", "3", "4", "5"]
    assert [g.tensors[str(i)].nbytes for i in range(6)] == [s for _, s in NODES]
    assert g.tensors["5"].kind == "output" and g.tensors["0"].kind == "activation"
    assert g.ops["5"].inputs == ("3", "4")
    assert peak_live_bytes(g) == FILE_ORDER_PEAK
    assert peak_live_bytes(g, ["0", "1", "3", "2", "4", "5"]) == BEST_PEAK
    best = get_scheduler("exact_dp").schedule(g)
    assert peak_live_bytes(g, best.order) == BEST_PEAK
    assert lower_bound(load_problem(str(tmp_path / "g.json"))) == FILE_ORDER_PEAK


@pytest.mark.parametrize("key", ["links", "edges"])
def test_both_edge_keys(tmp_path, key):
    g = read_nodelink(write(tmp_path, checkmate_json(edges_key=key)))
    assert len(g.ops) == 6 and peak_live_bytes(g) == FILE_ORDER_PEAK


def test_old_format_integer_endpoints_index_the_nodes_list(tmp_path):
    # no "directed"/"multigraph"/"graph" keys; string ids, but links give positions in "nodes"
    data = {"nodes": [{"id": n, "cost_ram": s} for n, s in NODES],
            "links": [{"source": [n for n, _ in NODES].index(u),
                       "target": [n for n, _ in NODES].index(v)} for u, v in EDGES]}
    g = read_nodelink(write(tmp_path, data))
    assert list(g.ops) == ["a", "b", "c", "d", "e", "f"]
    assert g.ops["f"].inputs == ("d", "e") and g.ops["b"].inputs == ("a",)
    assert peak_live_bytes(g) == FILE_ORDER_PEAK
    # nodes without "id": the id is the position
    data = {"nodes": [{"cost_ram": s} for _, s in NODES], "links": data["links"]}
    g = read_nodelink(write(tmp_path, data, "noid.json"))
    assert list(g.ops) == ["0", "1", "2", "3", "4", "5"] and peak_live_bytes(g) == FILE_ORDER_PEAK


def test_nodes_listed_out_of_order_are_stored_topologically(tmp_path):
    data = checkmate_json()
    data["nodes"] = data["nodes"][::-1]
    g = read_nodelink(write(tmp_path, data))
    assert g.is_topological() and set(g.ops) == {str(i) for i in range(6)}


def test_from_networkx_attribute_or_callable():
    G = nx.DiGraph(EDGES)
    nx.set_node_attributes(G, dict(NODES), "mem")
    g = Graph.from_networkx(G, size="mem", name="ck")
    assert g.name == "ck" and peak_live_bytes(g) == FILE_ORDER_PEAK
    g2 = Graph.from_networkx(G, size=lambda n, d: 2 * d["mem"])
    assert peak_live_bytes(g2) == 2 * FILE_ORDER_PEAK
    # a networkx round trip through node_link_data
    data = nx.node_link_data(G, edges="links")
    assert peak_live_bytes(Graph.from_networkx(nx.node_link_graph(data, edges="links"),
                                               size="mem")) == FILE_ORDER_PEAK


def test_errors_name_the_item(tmp_path):
    G = nx.DiGraph(EDGES)
    nx.set_node_attributes(G, dict(NODES), "cost_ram")
    del G.nodes["d"]["cost_ram"]
    with pytest.raises(NodeLinkError, match=r"node 'd' has no size attribute 'cost_ram'"):
        Graph.from_networkx(G)
    G.nodes["d"]["cost_ram"] = 4.5
    with pytest.raises(NodeLinkError, match=r"node 'd'.*integer"):
        Graph.from_networkx(G)
    G.nodes["d"]["cost_ram"] = -4
    with pytest.raises(NodeLinkError, match=r"node 'd'.*>= 0"):
        Graph.from_networkx(G)
    G.nodes["d"]["cost_ram"] = "4"
    with pytest.raises(NodeLinkError, match=r"node 'd'.*integer"):
        Graph.from_networkx(G)
    G.nodes["d"]["cost_ram"] = 4.0  # an integral float is the integer 4
    assert peak_live_bytes(Graph.from_networkx(G)) == FILE_ORDER_PEAK
    G.add_edge("f", "b")
    with pytest.raises(CycleError, match=r"'b' -> 'd' -> 'f' -> 'b'|'d' -> 'f' -> 'b' -> 'd'"
                                         r"|'f' -> 'b' -> 'd' -> 'f'"):
        Graph.from_networkx(G)
    with pytest.raises(NodeLinkError, match="undirected"):
        read_nodelink(write(tmp_path, checkmate_json(directed=False)))
    bad = checkmate_json()
    bad["links"].append({"source": 0, "target": 99})
    with pytest.raises(NodeLinkError, match=r"endpoint 99"):
        read_nodelink(write(tmp_path, bad))
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(NodeLinkError, match="not valid JSON"):
        read_nodelink(tmp_path / "broken.json")


def test_cli_plan_compare_schedule(tmp_path, capsys):
    path = str(write(tmp_path, checkmate_json()))
    assert main(["plan", path, "--size-attr", "cost_ram", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["buffers"] == 6 and rec["lower_bound"] == FILE_ORDER_PEAK
    assert rec["arena"] >= FILE_ORDER_PEAK and rec["valid"]

    assert main(["schedule", path, "--scheduler", "exact_dp", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["peak_bytes"] == BEST_PEAK and rec["operators"] == 6
    assert main(["schedule", path, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["peak_bytes"] == FILE_ORDER_PEAK and rec["order"] == ["0", "1", "2", "3", "4", "5"]

    out = tmp_path / "out"
    assert main(["compare", "--workloads", path, "--planners", "greedy_by_size", "--no-plots",
                 "--quiet", "--out", str(out)]) == 0
    import pandas as pd

    df = pd.read_csv(out / "compare.csv")
    assert df["workload"].tolist() == ["g"] and int(df["lower_bound"][0]) == FILE_ORDER_PEAK
    assert main(["compare", "--workloads", path, "--schedulers", "file_order", "exact_dp",
                 "--no-plots", "--quiet", "--out", str(out)]) == 0
    sched = pd.read_csv(out / "compare_sched.csv").set_index("scheduler")["peak_bytes"]
    assert sched.to_dict() == {"file_order": FILE_ORDER_PEAK, "exact_dp": BEST_PEAK}
    capsys.readouterr()

    assert main(["plan", path, "--size-attr", "ram"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memplan: error:") and "node 0 has no size attribute 'ram'" in err
    assert len(err.splitlines()) == 1


# -- MOCCASIN's random layered graphs, in the format of its published data/random_layered_n*.json:
# node_link_data written with source="0", target="1", nodes without "id" (the id is the position,
# equal to "name"), sizes in "out_cost", the size attribute named in graph["node_output_cost_tag"],
# a topological "order" and the sink listed second (node 1), as in those files.
# Same topology as NODES/EDGES: a=0, f=1 (sink), b=2, c=3, d=4, e=5.
MOC_SIZES = {0: 4, 1: 4, 2: 50, 3: 50, 4: 4, 5: 4}
MOC_LINKS = [(0, 2), (0, 3), (2, 4), (3, 5), (4, 1), (5, 1)]


def moccasin_json(order=(0, 2, 4, 3, 5, 1), tag=True) -> dict:
    graph = {"name": "random_layered_n6_w0.5_nlv0.75_ed0.2_scd0.14",
             "pos": {"0": [0, 0], "2": [-1, -1], "3": [0, -1], "4": [-1, -2], "5": [0, -2],
                     "1": [0, -3]},
             "source_node": 0, "target_node": 1, "node_param_cost_tag": "param_cost",
             "node_duration_tag": "duration", "max_cost": 1, "inset_state": []}
    if tag:
        graph["node_output_cost_tag"] = "out_cost"
    if order is not None:
        graph["order"] = list(order)
    return {"directed": True, "multigraph": False, "graph": graph,
            "nodes": [{"out_cost": MOC_SIZES[i], "param_cost": 0, "duration": 7 * i, "name": i}
                      for i in range(6)],
            "links": [{"0": u, "1": v} for u, v in MOC_LINKS]}


def test_moccasin_random_layered_file_as_published(tmp_path):
    g = read_nodelink(write(tmp_path, moccasin_json()))
    assert list(g.ops) == ["0", "2", "4", "3", "5", "1"]  # the file's declared order
    assert {int(t): g.tensors[t].nbytes for t in g.ops} == MOC_SIZES
    assert g.outputs == ["1"] and g.ops["1"].inputs == ("4", "5")
    assert peak_live_bytes(g) == BEST_PEAK  # a b d c e f
    for size in ("out_cost", "auto"):
        assert peak_live_bytes(read_nodelink(write(tmp_path, moccasin_json()), size=size)) == 58
    # without the declared order: node positions, a b c d e f as in the Checkmate file
    g = read_nodelink(write(tmp_path, moccasin_json(order=None)))
    assert list(g.ops) == ["0", "2", "3", "4", "5", "1"] and peak_live_bytes(g) == 104
    # an "order" that is not topological is ignored, not trusted
    g = read_nodelink(write(tmp_path, moccasin_json(order=(1, 0, 2, 3, 4, 5))))
    assert list(g.ops) == ["0", "2", "3", "4", "5", "1"]
    # no node_output_cost_tag: out_cost is still found when no node has cost_ram
    g = read_nodelink(write(tmp_path, moccasin_json(tag=False)))
    assert g.tensors["2"].nbytes == 50


def test_moccasin_file_errors(tmp_path):
    data = moccasin_json(tag=False)
    for nd in data["nodes"]:
        nd["bytes"] = nd.pop("out_cost")
    with pytest.raises(NodeLinkError, match=r"no size attribute found on every node \(tried "
                                             r"'cost_ram', 'out_cost'\)"):
        read_nodelink(write(tmp_path, data), size="auto")
    with pytest.raises(NodeLinkError, match="node 0 has no size attribute 'cost_ram'"):
        read_nodelink(write(tmp_path, data))
    assert read_nodelink(write(tmp_path, data), size="bytes").tensors["3"].nbytes == 50
    bad = moccasin_json()
    bad["links"].append({"0": 2})
    with pytest.raises(NodeLinkError, match=r"edge #6 lacks 'source'/'target' \(or MOCCASIN's "
                                            r"'0'/'1'\)"):
        read_nodelink(write(tmp_path, bad))


def test_cli_schedule_moccasin_file_with_time_limit_and_params(tmp_path, capsys):
    path = str(write(tmp_path, moccasin_json(order=None)))
    assert main(["schedule", path, "--scheduler", "exact_dp", "--time-limit", "5",
                 "--param", "max_states=1000", "--param", "decompose=false", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["peak_bytes"] == BEST_PEAK == rec["order_bound"] and rec["schedule_status"] == "optimal"
    assert rec["gap"] == 0.0
    assert rec["scheduler_params"]["time_limit"] == 5.0 and rec["scheduler_params"]["max_states"] == 1000
    assert rec["scheduler_params"]["decompose"] is False
    # a --param time_limit wins over --time-limit
    assert main(["schedule", path, "--scheduler", "genetic", "--time-limit", "5",
                 "--param", "time_limit=0.5", "--param", "generations=3", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["scheduler_params"]["time_limit"] == 0.5 and rec["scheduler_params"]["generations"] == 3
    assert rec["order_bound"] <= rec["peak_bytes"]
    assert main(["schedule", path, "--json"]) == 0  # file order a b c d e f: not proved optimal
    rec = json.loads(capsys.readouterr().out)
    assert rec["peak_bytes"] == FILE_ORDER_PEAK and rec["schedule_status"] == "heuristic"
    assert rec["order_bound"] <= BEST_PEAK
    for argv, msg in (
        (["--param", "nope=1"], "scheduler 'file_order' has no parameter 'nope'"),
        (["--scheduler", "exact_dp", "--param", "max_states=0"],
         "exact_dp: parameter 'max_states' = 0 is not allowed"),
    ):
        assert main(["schedule", path, *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("memplan: error:") and msg in err and len(err.splitlines()) == 1
    with pytest.raises(SystemExit):
        main(["schedule", path, "--param", "nope"])
    assert "expected NAME=VALUE, got 'nope'" in capsys.readouterr().err
