"""Multi-signature TFLite models as one shared arena (scheduling/tflite_signatures.py), checked
against LiteRT (TFLite's interpreter, ai-edge-litert from PyPI): signatures and tensor sizes as
LiteRT reads them, and every plan executed in one arena with LiteRT's outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

tflite = pytest.importorskip("tflite", reason="the optional 'tflite' package is not installed")

from experiments.bench.shared_differential import brute_force_arena, independent_violation  # noqa: E402
from experiments.runtimes.litert import (  # noqa: E402
    arena_run,
    kv_cache_model,
    litert_available,
    litert_run,
    random_signature_model,
)
from planners.errors import FeatureError  # noqa: E402
from planners.registry import PLANNERS, get_planner  # noqa: E402
from planners.shared_arena import SharedPlan, check_shared_plan, plan_shared  # noqa: E402
from scheduling.tflite_import import TfliteImportError  # noqa: E402
from scheduling.tflite_signatures import (  # noqa: E402
    tflite_shared_problem,
    tflite_signatures,
    variable_sizes,
)

needs_litert = pytest.mark.skipif(not litert_available()[0], reason=litert_available()[1])

SEEDS = range(30)


@pytest.fixture(scope="module")
def kv(tmp_path_factory):
    return kv_cache_model(tmp_path_factory.mktemp("kv") / "kv.tflite")


def _calls(path, rng, n=6):
    """A random call sequence in which a signature runs only once every variable it reads has
    been assigned by an earlier call (LiteRT reads an unassigned variable as uninitialised
    memory); integer-valued float32 inputs, so sums and products are exact in both runtimes."""
    from scheduling.tflite_import import _enum_names, operator_type, tensor_names

    m = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    names = _enum_names(tflite.BuiltinOperator)
    info = {}
    for s in tflite_signatures(path):
        sg = m.Subgraphs(s.subgraph)
        tn = tensor_names(sg)
        handle, reads, writes = {}, set(), set()
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            otype = operator_type(m, op, names)
            ins = op.InputsAsNumpy().tolist() if op.InputsLength() else []
            if otype == "VAR_HANDLE":
                o = tflite.VarHandleOptions()
                o.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
                handle[int(op.OutputsAsNumpy()[0])] = o.SharedName().decode()
            elif otype == "READ_VARIABLE":
                reads.add(handle[ins[0]])
            elif otype == "ASSIGN_VARIABLE":
                writes.add(handle[ins[0]])
        shape = {tn[j]: sg.Tensors(j).ShapeAsNumpy().tolist() for j in range(sg.TensorsLength())
                 if sg.Tensors(j).ShapeLength()}
        info[s.key] = (reads, writes, {name: shape[t] for name, t in s.inputs.items()})
    assigned, calls = set(), []
    for _ in range(n):
        ok = [k for k, (reads, _w, _s) in info.items() if reads <= assigned]
        k = ok[int(rng.integers(len(ok)))]
        calls.append((k, {name: rng.integers(-3, 4, size=sh).astype(np.float32)
                          for name, sh in info[k][2].items()}))
        assigned |= info[k][1]
    return calls


# -- hand-checked: the two-signature KV-cache program --------------------------------------------

def test_kv_program_signatures_variables_and_problems(kv):
    sigs = tflite_signatures(kv)
    assert [(s.key, s.subgraph, s.inputs, s.outputs) for s in sigs] == [
        ("prefill", 0, {"x": "x"}, {"z": "z"}), ("decode", 1, {"t": "t"}, {"u": "u"})]
    assert variable_sizes(kv) == {"kv": 128}  # float32 [1, 4, 8]
    sp = tflite_shared_problem(kv)
    assert sp.shared == ("var:kv",)
    got = {p.name: sorted((b.id, b.start, b.end, b.size) for b in p.buffers if b.size)
           for p in sp.problems}
    # file order: prefill = VAR_HANDLE (dropped), ADD y, ASSIGN kv, MUL z; decode = READ kv_value,
    # ADD u, ASSIGN; the variable live over each whole schedule
    assert got == {"prefill": [("var:kv", 0, 3, 128), ("x", 0, 1, 128), ("y", 0, 3, 128),
                               ("z", 2, 3, 128)],
                   "decode": [("kv_value", 0, 2, 128), ("t", 0, 2, 128), ("u", 1, 3, 128),
                              ("var:kv", 0, 3, 128)]}
    # prefill peaks at 384 (x, y, kv), decode at 512 (t, kv_value, u, kv at step 1)
    assert sp.lower_bound() == 512


def test_small_kv_program_optimum_is_the_brute_force_one(tmp_path):
    """float32 [1, 1, 4]: every buffer 16 bytes (one alignment unit), so exhaustive search is
    quick; it and the exact planners agree on 64 bytes (4 buffers at decode's step 1)."""
    sp = tflite_shared_problem(kv_cache_model(tmp_path / "small.tflite", seq=1, dim=4))
    assert brute_force_arena(sp) == 64
    for name in ("exact_search", "cpsat"):
        r = plan_shared(sp, name, time_limit=10)
        assert (r.arena, r.status) == (64, "optimal")


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_every_planner_plans_the_kv_program_and_it_runs_like_litert(kv, name):
    """Every registered planner plans the program (or refuses in one line); the plan passes the
    validator and an independent check, and executing both signatures in the planned arena gives
    LiteRT's outputs (where LiteRT is installed)."""
    sp = tflite_shared_problem(kv)
    kw = {"time_limit": 5} if "time_limit" in get_planner(name).get_params() else {}
    try:
        r = plan_shared(sp, name, **kw)
    except FeatureError as e:
        assert "\n" not in str(e)
        return
    check_shared_plan(sp, r.plans)
    assert independent_violation(sp, r) is None
    assert r.arena >= 512
    if r.status == "optimal":
        assert r.arena == 512
    if litert_available()[0]:
        x = np.arange(32, dtype=np.float32).reshape(1, 4, 8)
        calls = [("prefill", {"x": x}), ("decode", {"t": np.ones_like(x)}),
                 ("decode", {"t": -x})]
        want = litert_run(kv, calls)
        assert np.array_equal(want[0]["z"], (2 * x) ** 2)
        assert np.array_equal(want[2]["u"], 2 * x + 1 - x)  # the state crossed the signatures
        for a, b in zip(want, arena_run(kv, r, calls)):
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@needs_litert
def test_a_plan_that_overlaps_the_variable_changes_the_outputs(kv):
    """The arena execution can fail: with decode's input ``t`` moved onto the variable's bytes the
    outputs differ from LiteRT's (so equality above is evidence, not a tautology)."""
    sp = tflite_shared_problem(kv)
    r = plan_shared(sp, "greedy_by_size")
    dec = r.plans["decode"]
    off = dec.offsets.copy()
    ids = list(dec.problem.ids)
    off[ids.index("t")] = off[ids.index("var:kv")]  # the input overwrites the state
    bad = dict(r.plans, decode=type(dec)(dec.problem, off, dec.planner, dec.status))
    wrong = SharedPlan(sp, bad, r.combined, r.mode, r.status, r.info)
    x = np.arange(32, dtype=np.float32).reshape(1, 4, 8)
    calls = [("prefill", {"x": x}), ("decode", {"t": np.ones_like(x)}), ("decode", {"t": x})]
    assert independent_violation(sp, wrong) is not None
    got, want = arena_run(kv, wrong, calls), litert_run(kv, calls)
    assert not np.array_equal(got[2]["u"], want[2]["u"])


# -- differential against LiteRT over generated programs ----------------------------------------

@needs_litert
@pytest.mark.parametrize("seed", SEEDS)
def test_generated_program_against_litert(tmp_path, seed):
    """A seeded random multi-signature program: LiteRT's signature list equals ours, every
    tensor we plan has LiteRT's byte size, and greedy-by-size's and minimize's (exact search for the
    smallest arena) shared plans, executed in one arena, give LiteRT's outputs on a random call sequence."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    path = random_signature_model(tmp_path / f"r{seed}.tflite", seed)
    sigs = tflite_signatures(path)
    it = Interpreter(model_path=str(path),
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    assert it.get_signature_list() == {
        s.key: {"inputs": list(s.inputs), "outputs": list(s.outputs)} for s in sigs}
    sp = tflite_shared_problem(path)
    by_key = {s.key: s for s in sigs}
    for p in sp.problems:
        k = by_key[p.name].subgraph
        it.get_signature_runner(p.name)  # allocates that subgraph's tensors
        det = [it._get_tensor_details(j, k) for j in range(it._interpreter.NumTensors(k))]
        sizes = {d["name"]: int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
                 for d in det}
        for b in p.buffers:
            if not b.id.startswith("var:") and b.size:
                assert sizes[b.id] == b.size, (p.name, b.id)
    for v, size in variable_sizes(path).items():
        assert f"var:{v}" in sp.shared or size == 0
    rng = np.random.default_rng(seed)
    calls = _calls(path, rng)
    want = litert_run(path, calls)
    for planner, kw in (("greedy_by_size", {}), ("minimize", {"time_limit": 5})):
        r = plan_shared(sp, planner, **kw)
        assert independent_violation(sp, r) is None
        got = arena_run(path, r, calls)
        for a, b in zip(want, got):
            assert all(np.array_equal(a[n], b[n]) for n in a), (planner, seed)
        assert r.arena >= sp.lower_bound()


# -- refusals and the CLI --------------------------------------------------------------------------

def test_refusals_name_the_rule(tmp_path, kv):
    from experiments.runtimes.tflm.writer import write_tflite

    f32 = tflite.TensorType.FLOAT32
    plain = write_tflite(tmp_path / "plain.tflite", [
        {"tensors": [("a", [4], f32), ("b", [4], f32)], "inputs": [0], "outputs": [1],
         "ops": [("ADD", [0, 0], [1], None)]}])
    with pytest.raises(TfliteImportError, match="has no signatures; plan its main subgraph"):
        tflite_shared_problem(plain)
    with pytest.raises(TfliteImportError, match="no signature 'train'"):
        tflite_shared_problem(kv, signatures=["train"])
    # a handle that arrives as a signature input: which variable it names cannot be told
    res = tflite.TensorType.RESOURCE
    passed = write_tflite(tmp_path / "passed.tflite", [
        {"tensors": [("h", [], res), ("v", [4], f32)], "inputs": [0], "outputs": [1],
         "ops": [("READ_VARIABLE", [0], [1], None)]}],
        signatures=[{"key": "read", "subgraph": 0, "inputs": {"h": 0}, "outputs": {"v": 1}}])
    with pytest.raises(TfliteImportError, match="which variable it names cannot be told"):
        tflite_shared_problem(passed)
    sp = tflite_shared_problem(kv, signatures=["decode"])
    assert sp.names == ["decode"] and sp.shared == ("var:kv",)


def test_cli_plan_shared_and_compare_shared_on_a_tflite(tmp_path, kv, capsys):
    from experiments.cli.app import main

    assert main(["plan-shared", str(kv), "--planner", "exact_search", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["arena"], out["status"], out["lower_bound"]) == (512, "optimal", 512)
    assert set(out["problems"]) == {"prefill", "decode"}
    assert main(["compare", "--shared", str(kv), "--planners", "naive", "greedy_by_size",
                 "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert "best arena 512 bytes (greedy_by_size)" in capsys.readouterr().out
    import pandas as pd

    df = pd.read_csv(tmp_path / "o" / "compare_shared.csv")
    assert df.planner.tolist() == ["naive", "greedy_by_size"]
    assert df.arena.tolist() == [896, 512] and set(df.lower_bound) == {512}
    assert json.loads(df.method_arenas[1]) == {"prefill": 384, "decode": 512}
    md = (tmp_path / "o" / "compare_shared.md").read_text()
    assert "| greedy_by_size | colocate | optimal | 512 | 1.0000 |" in md
    # a bad input is one line and exit 2; nothing is written
    assert main(["compare", "--shared", str(tmp_path / "missing.tflite"),
                 "--out", str(tmp_path / "p"), "--quiet"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "p" / "compare_shared.csv").exists()
    assert main(["compare", "--shared", str(kv), "--workloads", "seed000",
                 "--out", str(tmp_path / "q"), "--quiet"]) == 2
