"""memplan as ExecuTorch's memory planner, checked by running the program (issue 26).

Each model is exported twice (ExecuTorch's default planner, memplan's), both ``.pte`` run in
ExecuTorch's own runtime on the same inputs: outputs identical, ExecuTorch's
``Verifier.verify_storage_reuse`` passes, memplan's planned bytes <= the default's. Needs the
extra ``pip install -e '.[executorch]'`` (skipped with a reason without it; ``.ci/run``
installs it). The first tests need neither torch nor executorch.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from planners import ProblemError, check_plan

# -- the mapping of ExecuTorch specs to memplan problems (no torch needed) ----------------------


class _Spec(SimpleNamespace):
    """Stand-in for ExecuTorch's TensorSpec: nbytes, lifetime [first, last], mem_id, base."""

    def realign(self, a):
        self.alignment = a
        return self.allocated_memory

    @property
    def allocated_memory(self):
        return -(-self.nbytes // self.alignment) * self.alignment

    __hash__ = object.__hash__
    __eq__ = object.__eq__


def _spec(nbytes, first, last, mem_id=None, base=None, base_off=0):
    return _Spec(nbytes=nbytes, lifetime=[first, last], mem_id=mem_id, storage_base=base,
                 storage_base_offset=base_off, alignment=1)


def test_specs_problems_maps_lifetimes_sizes_arenas_and_bases():
    from experiments.runtimes.executorch import specs_problems

    a = _spec(100, 0, 2)
    b = _spec(40, 2, 4)
    c = _spec(32, 1, 3, base=a, base_off=16)  # inside a, from byte 16
    d = _spec(8, 0, 0, mem_id=2)
    got = specs_problems([a, b, c, d], alignment=16)
    assert sorted(got) == [1, 2]
    p1, group1 = got[1]
    assert group1 == [a, b, c]
    assert [(x.start, x.end, x.size, x.alignment) for x in p1.buffers] == \
        [(0, 3, 112, 16), (2, 5, 48, 16), (1, 4, 32, 16)]  # inclusive [f, l] -> [f, l + 1)
    assert p1.aliases == {"t2": ("t0", 16)}
    assert [(x.size, x.start, x.end) for x in got[2][0].buffers] == [(16, 0, 1)]


def test_specs_problems_refuses_a_base_outside_the_arena():
    from experiments.runtimes.executorch import specs_problems

    a = _spec(64, 0, 2, mem_id=2)
    c = _spec(16, 1, 2, base=a)
    with pytest.raises(ProblemError, match="storage_base is not a planned spec of arena 1"):
        specs_problems([a, c], alignment=16)
    with pytest.raises(ProblemError, match="multiple of"):  # offset 8 breaks 16-byte alignment
        b = _spec(64, 0, 2)
        specs_problems([b, _spec(16, 1, 2, base=b, base_off=8)], alignment=16)


def test_obj_ids_join_exactly_the_overlapping_address_ranges():
    from experiments.runtimes.executorch import _obj_ids

    #        [0,64) [32,96) [96,128) [0,0) [200,216)
    ids = _obj_ids([0, 32, 96, 0, 200], [64, 64, 32, 0, 16])
    assert ids[0] == ids[1]
    assert len({ids[1], ids[2], ids[3], ids[4]}) == 4


# -- exported, planned and run in ExecuTorch -------------------------------------------------------

from experiments.runtimes import executorch as et  # noqa: E402  (imports no torch itself)

try:
    import executorch.exir  # noqa: F401
    import executorch.runtime  # noqa: F401
    import torch
except ImportError:
    torch = None

#: The tests below need the extra; the three above run without it.
needs_extra = pytest.mark.skipif(torch is None,
                                 reason="needs the extra: pip install -e '.[executorch]'")

#: The memplan planner the round trip uses (a fast heuristic; the bench runs the others).
PLANNER = "greedy_by_size"


@pytest.fixture(scope="module")
def models():
    return et.example_models(seed=0)


def _round_trip(model, inputs, memplan_pass, default_pass=None):
    default = et.write(model, inputs, default_pass)
    ours = et.write(model, inputs, memplan_pass)
    out_default = et.run(default.buffer, list(inputs))
    out_ours = et.run(ours.buffer, list(inputs))
    return default, ours, out_default, out_ours


@needs_extra
@pytest.mark.parametrize("name", ["cnn_residual", "transformer_block", "mutable_buffer", "cond"])
def test_memplan_plan_runs_identically_and_uses_no_more_bytes(models, name):
    model, inputs = models[name]
    eager = copy.deepcopy(model)(*inputs)  # a copy: mutable_buffer updates its buffer
    mp_pass, algo = et.plan_for(PLANNER)
    default, ours, out_d, out_m = _round_trip(model, inputs, mp_pass)
    assert len(out_d) == len(out_m) == 1
    assert torch.equal(out_d[0], out_m[0])  # the same kernels on the same inputs: bit-identical
    assert torch.allclose(out_m[0], eager.detach(), atol=1e-5)  # and what PyTorch computes
    assert et.verify_storage_reuse(default) >= 0
    assert et.verify_storage_reuse(ours) >= 0
    bytes_d, bytes_m = et.planned_bytes(default), et.planned_bytes(ours)
    assert bytes_m[0] == 0 and len(bytes_m) == len(bytes_d)
    assert sum(bytes_m) <= sum(bytes_d), (bytes_m, bytes_d)
    # every arena memplan planned is valid, and the .pte holds exactly those arenas
    assert algo.plans and all(p.status in ("optimal", "heuristic", "feasible")
                              for call in algo.plans for p in call.values())
    top = algo.plans[-1][1]
    assert bytes_m[1] >= top.arena_size
    # the .pte's own plan, read back: valid under memplan's checker, within the arena
    problem, offsets = et.read_plan(ours.buffer)
    check_plan(problem, offsets)
    assert int((offsets + problem.sizes).max()) <= bytes_m[1]
    if name == "cond":  # both branches are planned as submodules, then the parent above them
        assert len(algo.plans) == 3
        sub = max(call[1].arena_size for call in algo.plans[:2])
        parent_specs = algo.plans[2][1]
        assert bytes_m[1] >= sub + parent_specs.arena_size


@needs_extra
def test_inplace_results_sit_at_their_base_offset(models):
    """ExecuTorch's storage-backed specs (``_share_alloc_with_arg_idx``) become memplan alias
    groups: each relu's result at its input's offset, the program still runs identically."""
    model, inputs = models["cnn_residual"]
    algo = et.MemplanAlgorithm(PLANNER)
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite

    ours_pass = et.inplace_relu_pass(MemoryPlanningAlgorithmSuite(algo_list=[algo]))
    default_pass = et.inplace_relu_pass()
    default, ours, out_d, out_m = _round_trip(model, inputs, ours_pass, default_pass)
    assert ours_pass.marked == default_pass.marked == 3
    assert torch.equal(out_d[0], out_m[0])
    et.verify_storage_reuse(default)
    et.verify_storage_reuse(ours)
    plan = algo.plans[-1][1]
    assert len(plan.problem.aliases) == 3
    for child, (parent, delta) in plan.problem.aliases.items():
        assert plan.offset_of(child) == plan.offset_of(parent) + delta
    assert sum(et.planned_bytes(ours)) <= sum(et.planned_bytes(default))
    problem, offsets = et.read_plan(ours.buffer)  # the reader finds the three in-place pairs
    assert len(problem.aliases) == 3
    check_plan(problem, offsets)


@needs_extra
def test_suite_with_greedy_keeps_the_smaller(models):
    model, inputs = models["cnn_residual"]
    alone = et.planned_bytes(et.write(model, inputs))
    mp_pass, _ = et.plan_for("naive", with_greedy=True)  # naive: no reuse, so greedy wins
    both = et.planned_bytes(et.write(model, inputs, mp_pass))
    naive_pass, _ = et.plan_for("naive")
    naive = et.planned_bytes(et.write(model, inputs, naive_pass))
    assert sum(naive) > sum(alone)
    assert both == alone


@needs_extra
def test_unknown_planner_fails_before_export():
    with pytest.raises(ValueError, match="unknown planner 'nope'"):
        et.plan_for("nope")


@needs_extra
def test_pte_loader_check_and_cli(models, tmp_path):
    """A ``.pte`` is a workload (``load_problem``), its plan a solved CSV ``memplan check``
    accepts; the CLI plans it too."""
    from experiments.workloads import load_problem

    model, inputs = models["transformer_block"]
    pte = tmp_path / "block.pte"
    pte.write_bytes(et.write(model, inputs).buffer)
    problem = load_problem(str(pte))
    assert problem.n == len(et.pte_tensors(pte)) > 20
    csv = tmp_path / "block_plan.csv"
    r = subprocess.run([sys.executable, "-m", "experiments.runtimes.executorch", str(pte), "-o",
                        str(csv)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    from experiments.cli import main

    assert main(["check", str(csv)]) == 0
    assert main(["check", str(pte)]) == 0  # the .pte itself, ExecuTorch's own plan
    assert main(["view", str(pte), "--planner", PLANNER, "-o", str(tmp_path / "v.html")]) == 0
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"not a program")
    with pytest.raises(ProblemError, match="not a readable ExecuTorch program"):
        load_problem(str(bad))
    # memplan's plan of the .pte's problem is no larger than ExecuTorch's own
    from planners import plan

    _, offsets = et.read_plan(pte)
    assert plan(problem, PLANNER).arena_size <= int(np.max(offsets + problem.sizes))


@needs_extra
@pytest.mark.parametrize("name", ["transformer_block", "mutable_buffer"])
def test_reordered_program_runs_identically(models, name):
    """memplan's ``bfs`` scheduler moves the most nodes of these graphs (a mutated buffer
    among them); the reordered program still runs identically and passes ExecuTorch's
    verifier."""
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite

    model, inputs = models[name]
    algo = et.MemplanAlgorithm(PLANNER)
    reorder = et.reordering_pass("bfs", MemoryPlanningAlgorithmSuite(algo_list=[algo]))
    default, ours, out_d, out_m = _round_trip(model, inputs, reorder)
    assert reorder.reorders[-1]["moved"] > 0
    assert torch.equal(out_d[0], out_m[0])
    et.verify_storage_reuse(ours)
    problem, offsets = et.read_plan(ours.buffer)
    check_plan(problem, offsets)
    with pytest.raises(ValueError, match="nope"):
        et.reordering_pass("nope")


def test_read_plan_takes_an_alias_only_from_one_instruction(monkeypatch):
    """A tensor inside another's storage is its alias only when one instruction names both (an
    in-place result or a view); two unrelated live tensors overlapping that way are an overlap
    that ``memplan check`` reports, never an alias that hides it."""
    from planners.validate import plan_violations

    def fake(steps_v1):
        ts = [et.PteTensor(0, 1, 0, 64, 0, 2, frozenset({0, 1, 2})),
              et.PteTensor(1, 1, 16, 32, 1, 2, frozenset(steps_v1))]
        monkeypatch.setattr(et, "pte_tensors", lambda src, plan_index=0: ts)
        problem, offsets = et.read_plan("x.pte")
        return problem, plan_violations(problem, offsets.tolist(), None)

    problem, violations = fake({1, 2})  # named by instructions 1 and 2 together with v0
    assert problem.aliases == {"v1": ("v0", 16)} and violations == []
    problem, violations = fake({3})  # live together, never in one instruction: an overlap
    assert not problem.aliases and [v.rule for v in violations] == ["overlap"]
