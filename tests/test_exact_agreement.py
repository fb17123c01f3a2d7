"""All exact planners agree on the optimum of random small problems (up to 12 buffers).

CP-SAT (both formulations), the big-M MILP and ``minimize`` around the compiled ``exact_search``
are independent methods; on every problem they must report the same optimal arena, never below
the lower bound, and every plan must pass the validator.
"""

from __future__ import annotations

from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planners import Buffer, Problem, check_plan, lower_bound, plan


@st.composite
def problems(draw, max_n=12):
    n = draw(st.integers(1, max_n))
    align = draw(st.sampled_from([1, 1, 2, 4]))
    bufs = []
    for i in range(n):
        s = draw(st.integers(0, 9))
        bufs.append(Buffer(f"b{i}", s, s + draw(st.integers(1, 5)), draw(st.integers(0, 16))))
    return Problem(bufs, alignment=align)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_exact_planners_agree_up_to_12_buffers(p):
    runs = {
        "cpsat_nooverlap2d": plan(p, "cpsat", formulation="nooverlap2d", time_limit=20, workers=1),
        "cpsat_pairwise": plan(p, "cpsat", formulation="pairwise", time_limit=20, workers=1),
        "minimize": plan(p, "minimize", time_limit=20),
        "milp_offsets": plan(p, "milp_offsets", time_limit=20),
    }
    arenas = {k: r.arena_size for k, r in runs.items()}
    for k, r in runs.items():
        assert r.status == "optimal", (k, r.status)
        check_plan(p, r.offsets)
    assert len(set(arenas.values())) == 1, arenas
    assert arenas["minimize"] >= lower_bound(p)
    # the decision solver at the optimum finds a plan, one byte below it proves infeasibility
    opt = arenas["minimize"]
    if opt > lower_bound(p):
        below = plan(p.with_capacity(opt - 1), "exact_search", time_limit=20)
        assert below.status == "infeasible"
