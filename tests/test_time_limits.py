"""Time limits that hold for the exact and solver planners (issue #34, section 2).

What is checked are the planners' own records of their count-down (``info["time_limit"]``,
``info["setup_seconds"]``, ``info["solver_reserve"]``, ``info["solver_time_limit"]``, see
:class:`planners.time_limits.Deadline`) and the statuses they give when the limit bites, not
wall-clock durations: a set-up that eats the limit is forced (a heuristic that sleeps past it),
or the input is so large that the estimate decides, so every assertion holds on a loaded machine.
The measured overruns are in ``python -m experiments.bench.overrun``.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from planners import Problem
from planners.model import Buffer
from planners.random_problems import random_problem
from planners.time_limits import (
    MIN_SOLVER_SECONDS,
    SLACK_FRACTION,
    SLACK_SECONDS,
    Deadline,
    allowed_seconds,
    slack,
)

# ------------------------------------------------------------------------------------------------
# the stated slack and the count-down
# ------------------------------------------------------------------------------------------------


def test_slack_is_the_larger_of_ten_percent_and_half_a_second():
    assert (SLACK_FRACTION, SLACK_SECONDS) == (0.10, 0.5)
    assert [slack(x) for x in (0.1, 1.0, 5.0, 6.0, 60.0)] == [0.5, 0.5, 0.5, 0.6000000000000001, 6.0]
    assert allowed_seconds(60.0) == 66.0 and allowed_seconds(1.0) == 1.5


def test_deadline_gives_the_solver_what_the_set_up_left():
    d = Deadline(10.0, start=time.perf_counter() - 3.0)  # 3 s of set-up already spent
    given = d.solver_seconds(reserve=1.0)
    info = d.record({})
    assert 5.9 < given < 6.0
    assert info["time_limit"] == 10.0 and info["solver_reserve"] == 1.0
    assert info["solver_time_limit"] == pytest.approx(
        info["time_limit"] - info["setup_seconds"] - info["solver_reserve"], abs=2e-6)
    late = Deadline(1.0, start=time.perf_counter() - 1.0 + MIN_SOLVER_SECONDS / 2)
    assert late.solver_seconds() is None and late.record({})["solver_time_limit"] is None
    assert Deadline(1.0, start=time.perf_counter() - 2.0).left() < -0.99


def _count_down_holds(info: dict, time_limit: float) -> None:
    """The solver was given ``time_limit - setup - reserve``, the set-up counted."""
    assert info["time_limit"] == time_limit
    assert info["setup_seconds"] > 0
    assert info["solver_time_limit"] == pytest.approx(
        time_limit - info["setup_seconds"] - info["solver_reserve"], abs=2e-6)


def _sleeping_heuristic(seconds: float):
    """A stand-in for :func:`planners.warmstart.best_heuristic` whose set-up eats ``seconds``
    (then the real heuristics' plan)."""
    from planners.warmstart import best_heuristic

    def slow(problem, *args, **kwargs):
        time.sleep(seconds)
        kwargs.pop("deadline", None)
        return best_heuristic(problem, *args, **kwargs)

    return slow


@pytest.fixture(scope="module")
def medium():
    # OR-Tools imported before any planner runs: its first import (about a second) is set-up the
    # planners count, and would leave a short limit no time for the solver
    pytest.importorskip("ortools.sat.python.cp_model")
    return random_problem(600, seed=1, name="medium")


# ------------------------------------------------------------------------------------------------
# cpsat (and the feature model)
# ------------------------------------------------------------------------------------------------


def test_cpsat_solver_gets_the_limit_less_heuristics_and_model(medium):
    from planners.cpsat import CPSat

    plan = CPSat(time_limit=1.0, workers=1).plan(medium)
    _count_down_holds(plan.info, 1.0)
    # what was kept back for CP-SAT's loading is the model's measured build time
    assert 0 < plan.info["solver_reserve"] <= plan.info["setup_seconds"]
    assert plan.status in ("optimal", "feasible")


def test_cpsat_does_not_start_when_the_set_up_ate_the_limit(monkeypatch, medium):
    import planners.cpsat as mod

    monkeypatch.setattr(mod, "best_heuristic", _sleeping_heuristic(0.4))
    plan = mod.CPSat(time_limit=0.3, model_budget=None).plan(medium)
    assert plan.info["stopped_by"] == "time_limit"
    assert plan.info["solver_time_limit"] is None and plan.info["setup_seconds"] >= 0.4
    # the best plan it has: the warm start, a valid plan, not proved optimal
    assert plan.status in ("feasible", "optimal") and plan.info["source"] == "warm_start"
    assert "solver_status" not in plan.info


def test_feature_model_counts_its_set_up_and_answers_timeout_when_it_bit():
    from planners.feature_cpsat import solve_features

    pytest.importorskip("ortools.sat.python.cp_model")  # a cold import is set-up it counts
    p = Problem([Buffer(str(i), i % 7, i % 7 + 3, 8, offset=0 if i == 0 else None)
                 for i in range(40)])
    assert p.features == {"pins"}
    res = solve_features(p, None, "minimize", 2.0, workers=1)
    _count_down_holds(res.info, 2.0)
    assert res.status == "optimal"
    gone = solve_features(p, None, "minimize", MIN_SOLVER_SECONDS / 1000, workers=1)
    assert gone.status == "timeout" and gone.info["stopped_by"] == "time_limit"
    assert gone.info["solver_time_limit"] is None and gone.offsets is None


# ------------------------------------------------------------------------------------------------
# exact_search and its compiled core
# ------------------------------------------------------------------------------------------------


def test_exact_search_core_counts_its_own_set_up():
    """2,000 buffers live together (1,999,000 interfering pairs): the core's set-up alone takes
    longer than 10 microseconds, so it stops there (0 nodes). Before, its deadline started after
    the set-up and the clock was first read at node 256: 256 nodes, or a plan."""
    from planners.exact_search import _core

    n = 2000
    sizes = [1 + (i * 7919) % 64 for i in range(n)]
    out = _core().search(sizes=sizes, aligns=[1] * n, slo=[0] * n, shi=[1] * n, widths=[1] * n,
                         n_sections=1, capacity=sum(sizes), preorderings=["WAT"],
                         time_limit=1e-5)
    status, offsets, nodes = out[0], out[1], out[2]
    assert (status, offsets, nodes) == ("timeout", None, 0)
    # with time, the same call finds a plan: every buffer placed, the stack packed exactly
    found = _core().search(sizes=sizes, aligns=[1] * n, slo=[0] * n, shi=[1] * n,
                           widths=[1] * n, n_sections=1, capacity=sum(sizes),
                           preorderings=["WAT"], time_limit=60.0)
    assert found[0] == "found"
    spans = sorted(zip(found[1], sizes, strict=True))
    assert spans[0][0] == 0 and all(o1 + s1 == o2 for (o1, s1), (o2, _) in
                                    zip(spans, spans[1:], strict=False))


def test_exact_search_records_what_the_core_was_given(medium):
    from planners.bounds import lower_bound
    from planners.exact_search import ExactSearch

    lb = lower_bound(medium)
    plan = ExactSearch(capacity=lb, time_limit=0.3, heuristic_first=False).plan(
        medium.with_capacity(lb))
    _count_down_holds(plan.info, 0.3)
    assert plan.info["solver_reserve"] == 0.0
    assert plan.status in ("optimal", "timeout")
    if plan.status == "timeout":
        assert plan.info["stopped_by"] == "time_limit"


def test_exact_search_does_not_start_the_core_when_heuristics_ate_the_limit(monkeypatch, medium):
    import planners.exact_search as mod
    from planners.bounds import lower_bound

    def slow_naive(problem, stop_at=None, deadline=None):
        # 0.3 s of heuristics that find only the stack (above the capacity: no answer)
        time.sleep(0.3)
        off = np.concatenate([[0], np.cumsum(problem.aligned_sizes)[:-1]]).astype(np.int64)
        arena = int(problem.aligned_sizes.sum())
        return off, arena, {"warm_start": "naive", "warm_start_arena": arena,
                            "heuristic_arenas": {"naive": arena}, "heuristic_seconds": 0.3}

    monkeypatch.setattr(mod, "best_heuristic", slow_naive)
    lb = lower_bound(medium)
    plan = mod.ExactSearch(capacity=lb, time_limit=0.2).plan(medium.with_capacity(lb))
    assert plan.status == "timeout" and plan.info["stopped_by"] == "time_limit"
    assert plan.info["solver_time_limit"] is None and plan.info["nodes"] == 0


# ------------------------------------------------------------------------------------------------
# milp_offsets, ilp_blocks and the PuLP/CBC back end
# ------------------------------------------------------------------------------------------------


def test_milp_offsets_and_ilp_blocks_record_their_count_down():
    from planners.ilp_blocks import ILPBlocks
    from planners.milp_offsets import MILPOffsets

    pytest.importorskip("ortools.linear_solver.pywraplp")  # a cold import is set-up it counts
    p = random_problem(30, seed=2)
    for planner in (MILPOffsets(time_limit=3.0), ILPBlocks(time_limit=3.0)):
        plan = planner.plan(p)
        _count_down_holds(plan.info, 3.0)
        assert plan.status in ("optimal", "feasible")


def test_milp_offsets_keeps_its_warm_start_when_the_set_up_ate_the_limit(monkeypatch):
    import planners.milp_offsets as mod

    p = random_problem(30, seed=2)
    monkeypatch.setattr(mod, "best_heuristic", _sleeping_heuristic(0.3))
    plan = mod.MILPOffsets(time_limit=0.2, model_budget=None).plan(p)
    assert plan.info["stopped_by"] == "time_limit" and plan.info["solver_time_limit"] is None
    assert plan.info["source"] == "warm_start" and plan.status in ("feasible", "optimal")


@pytest.mark.parametrize("crash_seconds, expect", [(0.3, "retried"), (1.2, "timeout")])
def test_cbc_retry_gets_only_what_is_left(monkeypatch, crash_seconds, expect):
    """CBC crashing on the MIP start is solved again without it; that solve gets what is left of
    the limit, not a second full limit (which let one call take twice its limit)."""
    pulp = pytest.importorskip("pulp")
    import planners.lp_backends as lp

    if lp.pulp_backend_name() != "CBC":
        pytest.skip("HiGHS is the back end here; the retry is CBC's")
    limits = []

    class Crashing(pulp.LpProblem):
        def solve(self, solver=None, **kw):
            limits.append(solver.timeLimit)
            if len(limits) == 1:
                time.sleep(crash_seconds)
                raise pulp.PulpSolverError("crash reading the MIP start")
            return super().solve(solver, **kw)

    prob = Crashing("t", pulp.LpMinimize)
    x = pulp.LpVariable("x", 0, 10, cat="Integer")
    prob += x
    prob += x >= 3
    x.setInitialValue(5)
    status, bound, info = lp.solve_pulp(prob, 1.0, warm_start=True)
    assert limits[0] == 1.0
    if expect == "retried":
        assert len(limits) == 2 and limits[1] <= 1.0 - crash_seconds
        assert info["retry_time_limit"] == pytest.approx(limits[1], abs=1e-5)
        assert status == "optimal" and bound == 3
    else:
        assert len(limits) == 1 and status == "timeout" and info["stopped_by"] == "time_limit"


# ------------------------------------------------------------------------------------------------
# warm starts, tvm_hill_climb
# ------------------------------------------------------------------------------------------------


def test_warm_start_does_not_start_a_heuristic_estimated_past_its_deadline():
    """chaitin on 10^4 random buffers (484,440 pairs: estimated 7.75 s; it took 3.9 s) is not
    started with 0.5 s to the deadline; it used to run whenever the deadline had not passed."""
    from planners.colouring import Chaitin
    from planners.warmstart import best_heuristic

    p = random_problem(10_000, seed=0)
    assert Chaitin.estimated_seconds(p) == pytest.approx(484_440 * Chaitin.SECONDS_PER_PAIR)
    _, _, info = best_heuristic(p, ("greedy_by_size", "chaitin"),
                                deadline=time.perf_counter() + 0.5)
    assert info["heuristics_skipped"] == {"chaitin": round(484_440 * 1.6e-5, 3)}
    assert "chaitin" not in info["heuristic_arenas"]
    small = random_problem(50, seed=0)
    _, _, info = best_heuristic(small, ("greedy_by_size", "chaitin"),
                                deadline=time.perf_counter() + 60)
    assert "chaitin" in info["heuristic_arenas"] and "heuristics_skipped" not in info


def test_tvm_hill_climb_does_not_build_a_graph_that_cannot_fit():
    """10^4 random buffers, 484,440 pairs: the graph is estimated 1.2 s, above a 0.3 s limit, so
    the climb stops after TVM's greedy (it used to build the graph and then stop)."""
    from planners.tvm_usmp import CSR_SECONDS_PER_PAIR, TvmHillClimb

    p = random_problem(10_000, seed=0)
    plan = TvmHillClimb(time_limit=0.3).plan(p)
    assert plan.info["attempts"] == 1 and plan.info["stopped"] == "time_limit"
    assert plan.info["interference_pairs"] == 484_440
    assert f"{484_440 * CSR_SECONDS_PER_PAIR:.1f} s" in plan.info["stopped_because"]
    assert plan.status in ("heuristic", "optimal")


# ------------------------------------------------------------------------------------------------
# the benchmark's rows
# ------------------------------------------------------------------------------------------------


def test_overrun_benchmark_row_and_summary(tmp_path):
    from experiments.bench.overrun import COLUMNS, limited_planners, run, summary

    names = limited_planners()
    for name in ("cpsat", "exact_search", "milp_offsets", "ilp_blocks", "minimize",
                 "tvm_hill_climb"):
        assert name in names
    assert "greedy_by_size" not in names
    rows = run(tmp_path / "o.csv", [("tiny", random_problem(20, seed=0))], ["exact_search"],
               limits=[2.0], echo=None)
    (row,) = rows
    assert set(row) == set(COLUMNS)
    assert row["allowed"] == 2.5 and row["status"] == "optimal" and not row["over_slack"]
    assert row["overrun"] == pytest.approx(row["call_seconds"] - 2.0, abs=2e-3)
    (line,) = summary(rows)
    assert line.startswith("exact_search: worst overrun") and "0 of 1 calls over" in line
    assert (tmp_path / "o.csv").read_text().splitlines()[0] == ",".join(COLUMNS)


# ------------------------------------------------------------------------------------------------
# pools through the spill policy: one limit for the whole call, shared by the pools
# ------------------------------------------------------------------------------------------------


def test_spilled_pools_share_one_time_limit(monkeypatch):
    """Three pools planned one after the other by a planner with a time limit: each gets an
    equal share of what is left (it used to get the whole limit, so three pools took up to three
    times it), and a pool left no time keeps the spill's offsets."""
    from planners.model import MemoryPool
    from planners.tvm_usmp import TvmHillClimb

    pools = [MemoryPool("a", 1 << 20), MemoryPool("b", 1 << 20), MemoryPool("c", 1 << 20)]
    bufs = [Buffer(f"{q.name}{i}", i % 5, i % 5 + 2, 16 + i, pools=(q.name,))
            for q in pools for i in range(12)]
    p = Problem(bufs, pools=pools)
    plan = TvmHillClimb(time_limit=1.5).plan(p)
    got = [plan.info["pools"][q.name]["time_limit"] for q in pools]
    assert got[0] == pytest.approx(0.5, abs=0.05)  # a third of 1.5 s, less the spill
    assert got[1] <= 1.5 / 2 and got[2] <= 1.5  # half, then all, of what is left
    # each pool's planner saw its share, not the limit: a slow pool eats the others' time
    import planners.tvm_usmp as mod

    real = mod.usmp_hill_climb_offsets
    seen = []

    def slow(problem, memory_pressure=None, attempts=500, time_limit=None, start=None):
        seen.append(time_limit)
        time.sleep(0.6)
        return real(problem, memory_pressure, attempts, time_limit, start)

    monkeypatch.setattr(mod, "usmp_hill_climb_offsets", slow)
    plan = TvmHillClimb(time_limit=1.0).plan(p)
    assert seen[0] == pytest.approx(1.0 / 3, abs=0.05) and len(seen) == 2
    assert seen[1] <= (1.0 - 0.6) / 2
    assert plan.info["pools"]["c"]["kept_spill"] == "no time left of time_limit 1 s"
    assert plan.status == "heuristic"


def test_import_within_waits_at_most_the_time_left(tmp_path, monkeypatch):
    """A module whose import takes 0.6 s is not waited for 0.05 s; the import goes on in the
    background and a later call gets the module. A broken module raises its ImportError."""
    from planners.time_limits import import_within

    (tmp_path / "slow_mod_for_limits.py").write_text("import time\ntime.sleep(0.6)\nVALUE = 7\n")
    (tmp_path / "broken_mod_for_limits.py").write_text("raise ImportError('no such solver')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_within("slow_mod_for_limits", 0.05) is None
    assert import_within("slow_mod_for_limits", 30.0).VALUE == 7
    assert import_within("slow_mod_for_limits", 0.0).VALUE == 7  # imported: at once
    assert import_within("json", 0.0).dumps([1]) == "[1]"
    with pytest.raises(ImportError, match="no such solver"):
        import_within("broken_mod_for_limits", 30.0)
