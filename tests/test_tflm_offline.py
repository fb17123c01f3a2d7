"""Offline plans for TFLite Micro (experiments/runtimes/tflm/offline.py, `memplan export --format
tflm-offline`): the tflite-micro interpreter runs the planned model with the same outputs as the
original, and its non-persistent head equals memplan's arena."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro")

from experiments.cli import main  # noqa: E402
from experiments.runtimes.tflm.generate import REFUSED, model_tags  # noqa: E402
from experiments.runtimes.tflm.offline import (  # noqa: E402
    _rewrite,
    check_offline_plan,
    read_offline_plan,
    run_model,
    tflm_lifetimes,
    tflm_problem,
    write_offline_plan,
)
from experiments.workloads import tflite_model_files  # noqa: E402
from planners import Plan, lower_bound, plan  # noqa: E402

MODELS = tflite_model_files()
WAKEWORD = [n for n in MODELS if n.startswith("wakeword:")]
needs_wakeword = pytest.mark.skipif(not WAKEWORD, reason="pymicro-wakeword models not installed")

_BASE: dict[str, dict] = {}


def _base(name):
    if name not in _BASE:
        _BASE[name] = run_model(MODELS[name])
    return _BASE[name]


@needs_wakeword
@pytest.mark.parametrize("name", WAKEWORD)
def test_greedy_offline_plan_reproduces_tflm(tmp_path, name):
    """greedy_by_size in file order is TFLM's own plan: same head, same outputs."""
    path = MODELS[name]
    p, order = tflm_problem(path)
    pl = plan(p, "greedy_by_size")
    out = tmp_path / "planned.tflite"
    rep = write_offline_plan(path, pl, out, order=order)
    assert rep["violations"] == [] and not rep["reordered"] and rep["online"] == 0
    data = out.read_bytes()
    offs = read_offline_plan(data)
    lives = tflm_lifetimes(data)
    assert len(offs) == sum(len(s) for s in lives)  # nbr_tensors covers every subgraph
    ids = {b.id: o for b, o in zip(p.buffers, pl.offsets.tolist(), strict=True)}
    assert sorted(o for o in offs if o >= 0) == sorted(o for b, o in ids.items()
                                                        if not b.endswith(":effect"))
    base, new = _base(name), run_model(out)
    assert new["outputs"] == base["outputs"]
    assert new["head"] == pl.arena_size == base["head"]
    assert new["tail"] == base["tail"]


@needs_wakeword
@pytest.mark.parametrize("name", WAKEWORD)
def test_better_plan_is_smaller_than_tflm(tmp_path, name):
    """choose_best on file order, then best_of's order (operators reordered): TFLM's head is
    memplan's arena, below TFLM's own, with identical outputs."""
    path = MODELS[name]
    base = _base(name)
    heads = []
    for sched in ("file_order", "best_of"):
        p, order = tflm_problem(path, sched)
        pl = plan(p, "choose_best")
        out = tmp_path / f"{sched}.tflite"
        rep = write_offline_plan(path, pl, out, order=order)
        assert rep["reordered"] == (sched == "best_of")
        new = run_model(out)
        assert new["outputs"] == base["outputs"]
        assert new["head"] == pl.arena_size
        assert pl.arena_size == lower_bound(p)  # both reach the bound of their order
        heads.append(new["head"])
    assert heads[1] <= heads[0] < base["head"]


@needs_wakeword
def test_wakeword_alexa_numbers(tmp_path):
    """Pinned: TFLM plans 3648 bytes; memplan's offline plan 3200 (file order, the lower bound)
    and 2688 (best_of order)."""
    path = MODELS["wakeword:alexa"]
    assert _base("wakeword:alexa")["head"] == 3648
    arenas = []
    for sched in ("file_order", "best_of"):
        p, order = tflm_problem(path, sched)
        pl = plan(p, "choose_best")
        write_offline_plan(path, pl, tmp_path / "m.tflite", order=order)
        arenas.append(run_model(tmp_path / "m.tflite", invocations=2)["head"])
    assert arenas == [3200, 2688]


@needs_wakeword
def test_conflicting_offsets_are_refused_and_would_corrupt(tmp_path):
    name = WAKEWORD[0]
    path = MODELS[name]
    data = Path(path).read_bytes()
    lives = tflm_lifetimes(data)
    # every planned tensor at offset 0: TFLM's lifetimes show the conflicts
    offs = [0 if t.needs_allocating else -1 for t in lives[0]]
    offs += [-1] * sum(len(s) for s in lives[1:])
    bad = _rewrite(data, offs, None)
    rep = check_offline_plan(bad)
    assert rep["violations"] and "overlap in address" in rep["violations"][0]
    p, order = tflm_problem(path)
    with pytest.raises(ValueError, match="conflict under TFLite Micro's lifetimes"):
        write_offline_plan(path, Plan(p, np.zeros(p.n, np.int64), "given", "heuristic"),
                           tmp_path / "x.tflite", order=order)
    assert not (tmp_path / "x.tflite").exists()
    # the run comparison sees such a plan: the interpreter's outputs change
    (tmp_path / "bad.tflite").write_bytes(bad)
    assert run_model(tmp_path / "bad.tflite")["outputs"] != _base(name)["outputs"]


@needs_wakeword
def test_unsafe_order_is_refused(tmp_path):
    path = MODELS[WAKEWORD[0]]
    p, order = tflm_problem(path)
    pl = plan(p, "greedy_by_size")
    with pytest.raises(ValueError, match="not topological"):
        write_offline_plan(path, pl, tmp_path / "x.tflite", order=order[::-1])


@needs_wakeword
def test_cli_export_tflm_offline(tmp_path, capsys):
    out = tmp_path / "planned.tflite"
    assert main(["export", "wakeword:alexa", "--format", "tflm-offline", "--planner",
                 "choose_best", "--scheduler", "best_of", "-o", str(out)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["arena"] == 2688 and rep["reordered"] and rep["online"] == 0
    assert read_offline_plan(out.read_bytes()) is not None
    assert main(["export", "seed000", "--format", "tflm-offline", "-o", str(out)]) == 2
    assert "needs a .tflite file" in capsys.readouterr().err
    assert main(["export", "wakeword:alexa", "--format", "tflm-offline"]) == 2
    assert main(["export", "wakeword:alexa", "--format", "tflm-offline", "--pipeline", "fuse",
                 "-o", str(out)]) == 2


# --- generated models (experiments/runtimes/tflm/generate.py): control flow, unused inputs, variables ---

#: Every twentieth model of the differential set (seeds 0..299) that the interpreter runs (not
#: one the generator builds at a kernel's limit to be refused: nothing to export); the whole set
#: runs in make soak (python -m experiments.runtimes.tflm.differential --models 300 --seed 0
#: --offline).
GENERATED = [s for s in range(0, 300, 20) if not set(model_tags(s)) & set(REFUSED)]


def test_generated_models_export_and_keep_their_outputs(tmp_path):
    """In file order every sampled model is accepted (IF/WHILE/CALL_ONCE, shared and nested
    callees, unused inputs, variables read and written); with best_of a model is accepted or
    refused in one line naming the importer's reason (best_of needs memplan's graph). On every
    accepted one the planned model's outputs equal the original's in the interpreter, and TFLM's
    head equals the plan's arena unless the export's note says why it may not."""
    from experiments.runtimes.tflm.differential import check_offline
    from experiments.runtimes.tflm.generate import generate_model

    accepted, refused, tags = 0, 0, set()
    for seed in GENERATED:
        path = generate_model(seed, tmp_path / f"g{seed:05d}.tflite")
        for r in check_offline(path, tmp_path):
            where = f"seed {seed} {r['scheduler']}/{r['planner']}"
            if not r["accepted"]:
                assert r["scheduler"] != "file_order", f"{where}: {r['refusal']}"
                assert "the importer refuses it" in r["refusal"], f"{where}: {r['refusal']}"
                refused += 1
                continue
            assert r["outputs_identical"], where
            assert r["head_equals_arena"] or r["note"], (where, r)
            accepted += 1
            tags.update(model_tags(seed))
    assert accepted >= len(GENERATED) and accepted + refused == 2 * len(GENERATED)
    assert {"if", "if_shared", "nested", "while", "call_once", "unused_input", "variable",
            "variable_out"} <= tags


def test_variable_in_called_subgraph_keeps_its_memory(tmp_path):
    """TFLM's AllocateVariables reads a variable's entry by its index within its subgraph: an
    offset at that position of subgraph 0 leaves the variable without memory (the interpreter
    segfaults). The export leaves that entry -1 and says so; the naive offsets are refused."""
    from experiments.runtimes.tflm.generate import generate_model
    from experiments.runtimes.tflm.offline import _variables
    from experiments.runtimes.tflm.oracle import TflmUnavailable

    path = generate_model(30, tmp_path / "g30.tflite")  # int8, IF with a variable in a branch
    data = path.read_bytes()
    called = [(s, i) for s, i in _variables(data) if s > 0]
    assert called, "seed 30 no longer has a variable in a called subgraph"
    p, order = tflm_problem(path)
    pl = plan(p, "greedy_by_size")
    ids = {b.id: o for b, o in zip(p.buffers, pl.offsets.tolist(), strict=True)}
    clash = [i for _, i in called if f"0:{i}" in ids]
    assert clash, "no planned main-subgraph tensor shares a variable's index"
    rep = write_offline_plan(path, pl, tmp_path / "planned.tflite", order=order)
    offs = read_offline_plan((tmp_path / "planned.tflite").read_bytes())
    assert all(offs[i] == -1 for i in clash)
    assert rep["note"] and rep["online"] == len(set(clash)) and rep["violations"] == []
    assert run_model(tmp_path / "planned.tflite", invocations=3)["outputs"] == run_model(
        path, invocations=3)["outputs"]
    naive = list(offs)
    for i in clash:
        naive[i] = ids[f"0:{i}"]
    bad = _rewrite(data, naive, None)
    assert any("gets no memory" in v for v in check_offline_plan(bad)["violations"])
    (tmp_path / "naive.tflite").write_bytes(bad)
    with pytest.raises(TflmUnavailable, match="exit -11"):
        run_model(tmp_path / "naive.tflite", invocations=1)


def test_tflm_has_the_runtime_integration_shape(tmp_path):
    """TFLite Micro lives beside ExecuTorch under experiments.runtimes with the same four parts:
    its own plan read back equals its reported head, and a memplan plan written and run keeps
    the outputs."""
    import importlib

    from experiments.runtimes import RUNTIMES, RuntimeIntegration
    from experiments.runtimes.tflm.oracle import tflm_arena, tflm_available

    tflm = importlib.import_module(RUNTIMES["tflm"])
    assert isinstance(tflm, RuntimeIntegration)
    if not tflm_available()[0]:
        pytest.skip("tflite-micro not installed")
    from conftest import shared_case

    from planners import check_plan

    path = shared_case("tflm_rand00.tflite")
    problem, offsets = tflm.read_plan(path)
    assert int((offsets + problem.sizes).max()) == tflm_arena(path).head == 1552
    check_plan(problem, offsets)
    rep = tflm.write(path, tmp_path / "planned.tflite", "choose_best")
    assert tflm.run(tmp_path / "planned.tflite")["outputs"] == tflm.run(path)["outputs"]
    assert rep["arena"] <= 1552
