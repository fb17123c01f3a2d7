"""One-line errors with exit status 2 for what users do to sweeps and graphs: a read-only output
folder, an unreachable Dask scheduler, an empty records folder, a graph with a cycle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def memplan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("memplan: error:"), r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


def sweep_config(tmp_path: Path, out: str, extra: str = "") -> Path:
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'out = "{out}"\n{extra}workloads = ["seed002_ex5.1"]\n[planners]\nfirst_fit = {{}}\n')
    return cfg


def _read_only_folder(tmp_path: Path) -> Path:
    """A folder this process cannot write: chmod 555 for a normal user; as root (who ignores
    permissions) a folder under /sys, which the kernel refuses to create files in."""
    if os.geteuid() != 0:
        d = tmp_path / "ro"
        d.mkdir()
        d.chmod(0o555)
        return d / "out"
    d = Path("/sys/memplan-test-out")
    try:
        d.mkdir()
    except OSError:
        return d
    d.rmdir()
    pytest.skip("running as root and /sys is writable: no folder refuses writes here")


def test_read_only_output_folder(tmp_path):
    out = _read_only_folder(tmp_path)
    r = memplan("sweep", str(sweep_config(tmp_path, str(out))), "--quiet")
    one_line_error(r, str(out), "cannot write to the output folder")


def test_unreachable_dask_scheduler_fails_fast(tmp_path):
    pytest.importorskip("distributed")
    cfg = sweep_config(tmp_path, "out")
    r = memplan("sweep", str(cfg), "--quiet", "--executor", "dask",
                "--scheduler-address", "tcp://127.0.0.1:1")
    one_line_error(r, "cannot reach the Dask scheduler at tcp://127.0.0.1:1 within 5 s")
    assert not list((tmp_path / "out" / "records").glob("*.json"))  # nothing recorded


def test_report_of_an_empty_records_folder(tmp_path):
    (tmp_path / "records").mkdir()
    r = memplan("report", str(tmp_path))
    one_line_error(r, str(tmp_path), "records/ holds no record")
    # only corrupt records: named in a warning, then the same error
    (tmp_path / "records" / ("0" * 64 + ".json")).write_text('{"key": "')
    r = memplan("report", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    warning, error = r.stderr.strip().splitlines()
    assert warning.startswith("memplan: warning:") and "0" * 64 + ".json" in warning
    assert error.startswith("memplan: error:") and "records/ holds no record" in error


# -- a graph with a cycle ------------------------------------------------------------------------------
def _cyclic_onnx(path: Path) -> Path:
    from onnx import TensorProto, helper, save

    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "t1", "t2", "y")]
    nodes = [helper.make_node("Add", ["x", "t2"], ["t1"], name="add1"),
             helper.make_node("Relu", ["t1"], ["t2"], name="relu2"),
             helper.make_node("Relu", ["t2"], ["y"], name="relu3")]
    graph = helper.make_graph(nodes, "cyclic", [info[0]], [info[3]], value_info=info[1:3])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


CYCLE = "the graph has a cycle (add1 -> relu2 -> add1)"


def test_cyclic_onnx_through_plan_and_compare(tmp_path):
    model = _cyclic_onnx(tmp_path / "cyclic.onnx")
    one_line_error(memplan("plan", str(model), "--planner", "greedy_by_size"), CYCLE, "acyclic")
    one_line_error(memplan("compare", "--workloads", str(model), "--planners", "greedy_by_size",
                           "--out", str(tmp_path / "cmp")), CYCLE)


def test_cyclic_onnx_in_a_sweep_is_a_failed_run_naming_the_cycle(tmp_path):
    from experiments.sweep import load_config, load_records, run_sweep

    _cyclic_onnx(tmp_path / "cyclic.onnx")
    cfg = tmp_path / "sweep.toml"
    cfg.write_text('out = "out"\nworkloads = ["cyclic.onnx", "seed002_ex5.1"]\n'
                   '[planners]\nfirst_fit = {}\n')
    s = run_sweep(load_config(cfg), progress=False)
    assert (s["ran"], s["errors"]) == (2, 1)
    df = load_records(tmp_path / "out")
    bad = df[df.workload == "cyclic"].iloc[0]
    assert bad["status"] == "error" and "CycleError" in bad["error"] and CYCLE in bad["error"]
    assert df[df.workload == "seed002_ex5.1"]["arena"].tolist() == [880]


def test_onnx_nodes_out_of_order_are_not_called_a_cycle(tmp_path):
    from onnx import TensorProto, helper, save

    from scheduling.errors import CycleError, OnnxImportError
    from scheduling.onnx_import import load_onnx

    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "t", "y")]
    nodes = [helper.make_node("Relu", ["t"], ["y"], name="second"),
             helper.make_node("Relu", ["x"], ["t"], name="first")]
    graph = helper.make_graph(nodes, "unsorted", [info[0]], [info[2]], value_info=[info[1]])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "u.onnx"))
    with pytest.raises(OnnxImportError) as e:
        load_onnx(tmp_path / "u.onnx")
    assert not isinstance(e.value, CycleError)
    assert "node 'second' reads tensor 't' before node 'first' writes it" in str(e.value)


def test_file_order_of_a_cyclic_graph_names_the_cycle():
    from scheduling.errors import CycleError
    from scheduling.graph import Graph
    from scheduling.schedulers import get_scheduler

    g = Graph("g")
    g.add_tensor("x", (4,), "float32", kind="input")
    for t in ("t1", "t2"):
        g.add_tensor(t, (4,), "float32")
    g.add_tensor("y", (4,), "float32", kind="output")
    g.add_op("add1", "Add", ["x", "t2"], ["t1"])
    g.add_op("relu2", "Relu", ["t1"], ["t2"])
    g.add_op("relu3", "Relu", ["t2"], ["y"])
    with pytest.raises(CycleError, match=r"'add1' is on a cycle \(add1 -> relu2 -> add1\)"):
        get_scheduler("file_order").schedule(g)


def test_find_cycle_in_edges():
    from scheduling.graph import find_cycle_in

    assert find_cycle_in([("a", "b"), ("b", "c")]) is None
    assert find_cycle_in([("a", "b"), ("b", "c"), ("c", "b")], "a") == ["b", "c", "b"]
    assert find_cycle_in([("a", "b")], "z") is None
    assert json.dumps(find_cycle_in([("u", "u")])) == '["u", "u"]'


def test_a_reader_that_stops_early_is_not_an_error():
    """``memplan list | head -1``: the reader closes the pipe; memplan stops quietly (exit 0, no
    'Broken pipe' error line). Here the read end is closed before memplan writes at all."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "experiments.cli", "list"], stdout=w,
                           stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(w)
    assert p.returncode == 0 and p.stderr == b""
