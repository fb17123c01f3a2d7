"""The capability table of the problem kinds of issue #35 (``concurrency``, ``shared_buffers``,
``scratch``; :data:`planners.base.KIND_MODES`) and its done-when: a two-stream problem and a
two-method problem with a shared KV-cache buffer each round-trip through CSV and JSON, plan
with every registered planner or refuse in one line naming the planner and the feature, pass
the validators, and meet brute force on small cases (every offset enumerated).

The brute force here shares no code with the planners or the validators: happens-before is the
transitive closure of the stream chains and edges (Floyd-Warshall on all events), intervals
overlap by their definition, and every aligned offset below an upper bound is tried.
"""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import examples, package_missing
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from experiments.cli.app import main
from planners.base import DEFAULT_KIND_CAPABILITIES, KIND_MODES, PROBLEM_KINDS
from planners.bounds import lower_bound
from planners.concurrent import (
    ConcurrentBuffer,
    ConcurrentProblem,
    check_concurrent_plan,
    concurrent_lower_bound,
    concurrent_planners,
    concurrent_route,
    plan_concurrent,
)
from planners.errors import FeatureError, ProblemError, SolverError
from planners.greedy import GreedyPlanner
from planners.io import read_minimalloc_csv, write_minimalloc_csv
from planners.model import FEATURES, Buffer, MemoryPool, Problem
from planners.naive import Naive
from planners.registry import PLANNERS, get_planner
from planners.scratch import scratch_buffer, scratch_ids, with_scratch
from planners.shared_arena import (
    SharedArenaProblem,
    check_shared_plan,
    plan_shared,
    read_shared,
    write_shared,
)

B = ConcurrentBuffer

#: Registered planners whose declared concurrency is "native" (the conflict graph itself).
NATIVE = {"greedy_in_order", "first_fit", "best_fit", "greedy_by_size", "greedy_by_size_best_fit",
          "greedy_by_breadth", "greedy_by_conflicts", "lifetime_aware", "greedy", "cpsat"}

#: Planners that prove optimality of the concurrent problem itself (the conflict-graph model).
EXACT = ("conflict_cpsat", "cpsat")


def _kw(name):
    return {"time_limit": 5} if "time_limit" in get_planner(name).get_params() else {}


# -- brute force ------------------------------------------------------------------------------
def _hb_closure(problem: ConcurrentProblem):
    """``reach[(s, i)]``: the set of events ``(s', j)`` that ``(s, i)`` happens before (strict),
    by Floyd-Warshall over every step 0..max of every stream."""
    top: dict[int, int] = {}
    for b in problem.buffers:
        for s, t in ((b.stream, b.first), (b.stream, b.last), *b.reads):
            top[s] = max(top.get(s, 0), t)
    for a, i, c, j in problem.edges:
        top[a], top[c] = max(top.get(a, 0), i), max(top.get(c, 0), j)
    ev = [(s, t) for s in sorted(top) for t in range(top[s] + 1)]
    succ = {e: set() for e in ev}
    for s, t in ev:
        if (s, t + 1) in succ:
            succ[(s, t)].add((s, t + 1))
    for a, i, c, j in problem.edges:
        succ[(a, i)].add((c, j))
    for k in ev:  # transitive closure
        for i in ev:
            if k in succ[i]:
                succ[i] |= succ[k]
    return succ


def brute_concurrent(problem: ConcurrentProblem) -> int:
    """The least arena (bytes) over every aligned offset assignment, by enumeration."""
    reach = _hb_closure(problem)
    bufs = problem.buffers

    def precedes(x, y):
        f = (bufs[y].stream, bufs[y].first)
        return all(f in reach[e] for e in bufs[x].ends)

    live = [x for x in range(problem.n) if bufs[x].size > 0]
    conflict = {(x, y) for x in live for y in live if x != y
                and not precedes(x, y) and not precedes(y, x)}
    align = [problem.alignment if b.alignment is None else b.alignment for b in bufs]
    sizes = {x: bufs[x].size for x in live}
    return _enumerate(live, sizes, {x: align[x] for x in live}, conflict)


def _enumerate(keys, size, align, pairs) -> int:
    """The least top (bytes) over every assignment of aligned offsets to ``keys`` in which the
    two members of each pair of ``pairs`` are disjoint, every offset below the trivial bound
    (sum of sizes plus alignment slack). Depth-first over the keys; a partial assignment whose
    top already reaches the best found is cut (every completion has a top at least as high), so
    no assignment below the best is skipped."""
    ub = sum(size[k] + align[k] - 1 for k in keys)
    nbr = {k: [] for k in keys}
    for a, b in pairs:
        nbr[a].append(b)
        nbr[b].append(a)
    at: dict = {}
    best = [ub]

    def go(i, top):
        if top >= best[0]:
            return
        if i == len(keys):
            best[0] = top
            return
        k = keys[i]
        for o in range(0, best[0] - size[k], align[k]):
            if all(o + size[k] <= at[j] or at[j] + size[j] <= o for j in nbr[k] if j in at):
                at[k] = o
                go(i + 1, max(top, o + size[k]))
                del at[k]

    go(0, 0)
    return best[0] if keys else 0


def brute_shared(sp: SharedArenaProblem) -> int:
    """The least shared arena (bytes, max over problems) by enumerating every aligned offset of
    every variable (a private buffer of one problem, or a shared buffer once)."""
    var: dict[tuple, tuple[int, int]] = {}  # (problem or None, id) -> (size, alignment)
    for k, p in enumerate(sp.problems):
        for i, bid in enumerate(p.ids):
            key = (None, bid) if bid in sp.shared else (k, bid)
            var[key] = (int(p.sizes[i]), int(p.alignments[i]))
    keys = [k for k in var if var[k][0] > 0]
    pairs = []  # (key a, key b) of buffers of one problem live at a common step
    for k, p in enumerate(sp.problems):
        for i, j in itertools.combinations(range(p.n), 2):
            if p.starts[i] < p.ends[j] and p.starts[j] < p.ends[i] and p.sizes[i] and p.sizes[j]:
                ka = (None, p.ids[i]) if p.ids[i] in sp.shared else (k, p.ids[i])
                kb = (None, p.ids[j]) if p.ids[j] in sp.shared else (k, p.ids[j])
                pairs.append((ka, kb))
    return _enumerate(keys, {k: var[k][0] for k in keys}, {k: var[k][1] for k in keys}, pairs)


# -- the two problems of the done-when --------------------------------------------------------
def two_stream() -> ConcurrentProblem:
    """Two streams, sizes in bytes, closed step ranges; edges (0,0)->(1,1) and (1,2)->(0,3).
    ``a`` (stream 0, [0, 1], 3 bytes) is read on stream 1 at step 1; ``b`` (1, [0, 1], 2),
    ``c`` (1, [2, 3], 2, alignment 2), ``d`` (0, [2, 4], 1), ``e`` (0, [1, 2], 2).
    Hand check: a conflicts with b, c (c's first (1,2) is not after a's end (0,1)), d, e
    (same stream, overlapping ranges); b precedes c; b with d and e: (1,1) reaches (0,3) only,
    d and e start at (0,2), (0,1): conflicts. c with d, e: (1,3) reaches nothing on stream 0
    that d or e starts at, and d, e end at (0,4), (0,2), which never reach (1,2): conflicts.
    e precedes nothing; d with e conflict. Max antichain {a, c, d, e} = 3 + 2 + 1 + 2 = 8;
    brute force: 8 (a [0,3), e [3,5), c [6,8), d [5,6), b on c's range [6,8))."""
    return ConcurrentProblem(
        [B("a", 0, 0, 1, 3, reads=((1, 1),)), B("b", 1, 0, 1, 2), B("c", 1, 2, 3, 2, alignment=2),
         B("d", 0, 2, 4, 1), B("e", 0, 1, 2, 2)],
        edges=[((0, 0), (1, 1)), ((1, 2), (0, 3))], name="two")


def kv_program() -> SharedArenaProblem:
    """Two methods sharing a KV cache (bytes, half-open steps). prefill: tokens 2 [0,2), kv 4
    [1,4), h0 2 [1,3), logits 1 [3,4): live bytes 8 at step 1. decode: kv 4 [0,3), q 1 [0,2),
    attn 2 [1,3), logits 2 [2,3): 8 at step 2. Hand layout at 8: kv [0,4) in both; prefill
    tokens [4,6), h0 [6,8), logits [4,5); decode attn [4,6), logits [6,8), q [6,7)."""
    prefill = Problem([Buffer("tokens", 0, 2, 2), Buffer("kv", 1, 4, 4), Buffer("h0", 1, 3, 2),
                       Buffer("logits", 3, 4, 1)], name="prefill")
    decode = Problem([Buffer("kv", 0, 3, 4), Buffer("q", 0, 2, 1), Buffer("attn", 1, 3, 2),
                      Buffer("logits", 2, 3, 2)], name="decode")
    return SharedArenaProblem((prefill, decode), ("kv",))


def _signature(p: Problem):
    return [(b.id, b.start, b.end, b.size, int(p.alignments[i]), b.kind, b.pools)
            for i, b in enumerate(p.buffers)]


# -- the table --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(PLANNERS))
def test_every_planner_declares_every_kind(name):
    cls = PLANNERS[name]
    kinds = cls.kind_capabilities()
    assert set(kinds) == set(PROBLEM_KINDS)
    assert all(kinds[k] in KIND_MODES[k] for k in PROBLEM_KINDS), kinds
    assert set(cls.capabilities()) == set(FEATURES)  # the compiler-feature table is unchanged
    assert kinds["concurrency"] == ("native" if name in NATIVE else "cover"), name
    assert concurrent_route(name) == kinds["concurrency"]
    assert (kinds["shared_buffers"], kinds["scratch"]) == ("colocate", "native")


def test_a_bad_kind_mode_is_refused_and_a_subclass_without_the_solver_is_a_cover():
    class Typo(Naive):
        """A planner declaring a mode the kind does not have."""
        _capabilities = {"concurrency": "conflict"}

    with pytest.raises(ValueError, match="conflict"):
        Typo.kind_capabilities()

    class OwnSolve(GreedyPlanner):
        """A greedy-engine subclass with its own _solve: no conflict-graph solver here."""
        def _solve(self, problem):  # pragma: no cover - never run
            raise NotImplementedError

    assert OwnSolve.kind_capabilities()["concurrency"] == "native"
    assert concurrent_route(OwnSolve) == "cover"
    assert DEFAULT_KIND_CAPABILITIES == {"concurrency": "cover", "shared_buffers": "colocate",
                                         "scratch": "native"}


class Refuser(Naive):
    """A planner whose table refuses both multi-problem kinds (registered temporarily)."""

    name = "refuser"
    _capabilities = {"concurrency": "refused", "shared_buffers": "refused"}


def test_a_refused_kind_is_one_line_naming_planner_and_feature(monkeypatch):
    monkeypatch.setitem(PLANNERS, "refuser", Refuser)
    r = plan_concurrent(two_stream(), "refuser")
    assert (r.route, r.status, r.offsets) == ("refused", "skipped", None)
    msg = r.info["reason"]
    assert "\n" not in msg and msg.startswith("planner 'refuser' does not plan concurrency")
    assert "planners that do: naive, " in msg and "refuser," not in msg
    with pytest.raises(FeatureError) as e:
        plan_shared(kv_program(), "refuser")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("planner 'refuser' does not plan shared buffers")
    assert "'prefill+decode'" in msg


def test_memplan_list_shows_the_kind_table(capsys):
    assert main(["list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind_capabilities"]["cpsat"] == {"concurrency": "native",
                                                 "shared_buffers": "colocate",
                                                 "scratch": "native"}
    assert doc["kind_capabilities"]["telamalloc"]["concurrency"] == "cover"
    assert set(doc["kind_capabilities"]) == set(PLANNERS)
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("planner problem kinds"))
    assert lines[at + 1].split() == ["planner", "concurrency", "shared_buffers", "scratch"]
    rows = {x.split()[0]: x.split()[1:] for x in lines[at + 2:at + 2 + len(PLANNERS)]}
    assert rows["exact_search"] == ["cover", "colocate", "native"]
    assert rows["greedy_by_size"] == ["native", "colocate", "native"]


# -- the two-stream problem -------------------------------------------------------------------
def test_two_stream_round_trips_plans_with_every_planner_and_meets_brute_force(tmp_path):
    cp = two_stream()
    opt = brute_concurrent(cp)
    assert opt == 8 and concurrent_lower_bound(cp) == 8
    assert check_concurrent_plan(cp, [0, 6, 6, 5, 3]) == 8  # the hand layout
    path, _ = cp.write_csv(tmp_path / "two.csv")
    (tmp_path / "two.json").write_text(cp.to_json())
    back_csv = ConcurrentProblem.read_csv(path, name="two")
    back_json = ConcurrentProblem.from_json((tmp_path / "two.json").read_text())
    assert back_csv.to_dict() == back_json.to_dict() == cp.to_dict()
    for name in concurrent_planners():
        r = plan_concurrent(back_json, name, time_limit=5)
        declared = concurrent_route(name)
        if r.offsets is None:
            msg = r.info["reason"]
            assert r.route == "refused" and "\n" not in msg, name
            assert msg.startswith(f"planner {name!r} does not plan concurrency"), msg
            if package_missing(name):  # vela_hillclimb without ethos-u-vela: says so
                assert "ethos-u-vela" in msg, msg
                continue
            assert name == "exact_search"  # a decision planner, and the problem has no capacity
            continue
        assert r.route == {"native": "conflict graph", "cover": "interval cover"}[declared]
        assert r.arena == check_concurrent_plan(cp, r.offsets) >= opt, name
        assert (r.status == "optimal") == (r.arena == opt), (name, r.status, r.arena)
        if name in EXACT:
            assert r.arena == opt and r.status == "optimal"
    capped = ConcurrentProblem(cp.buffers, cp.edges, capacity=12, name="two")
    r = plan_concurrent(capped, "exact_search", time_limit=5)
    assert r.route == "interval cover" and check_concurrent_plan(capped, r.offsets) <= 12


@st.composite
def tiny_concurrent(draw):
    n = draw(st.integers(2, 4))
    bufs = []
    for i in range(n):
        s = draw(st.integers(0, 1))
        f = draw(st.integers(0, 2))
        last = f + draw(st.integers(0, 2))
        bufs.append(B(f"b{i}", s, f, last, draw(st.integers(0, 3)),
                      draw(st.sampled_from((None, None, 2)))))
    edges = draw(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 4), st.integers(0, 1),
                                    st.integers(0, 4)), max_size=3))
    edges = [e for e in edges if e[0] != e[2]]
    try:
        return ConcurrentProblem(bufs, edges, alignment=draw(st.sampled_from((1, 2))))
    except ProblemError:  # a cycle
        assume(False)


@settings(max_examples=examples(40), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(tiny_concurrent())
def test_concurrent_planners_against_brute_force(cp):
    opt = brute_concurrent(cp)
    assert concurrent_lower_bound(cp) <= opt
    for name in ("conflict_cpsat", "cpsat", "greedy_by_size", "best_fit", "naive", "telamalloc",
                 "milp_offsets"):
        r = plan_concurrent(cp, name, time_limit=5)
        assert r.arena == check_concurrent_plan(cp, r.offsets) >= opt, name
        if name in EXACT:
            assert r.arena == opt and r.status == "optimal", name
        if r.status == "optimal":
            assert r.arena == opt, name


# -- the two-method KV-cache program ----------------------------------------------------------
def test_kv_program_round_trips_plans_with_every_planner_and_meets_brute_force(tmp_path):
    sp = kv_program()
    assert brute_shared(sp) == 8 == sp.lower_bound()
    written = write_shared(sp, tmp_path / "kv.json")
    assert [p.name for p in written] == ["kv.0.csv", "kv.1.csv", "kv.json"]
    back = read_shared(tmp_path / "kv.json")
    assert back.shared == sp.shared and back.names == sp.names
    assert [_signature(p) for p in back.problems] == [_signature(p) for p in sp.problems]
    for name in PLANNERS:
        try:
            r = plan_shared(back, name, **_kw(name))
        except FeatureError as e:  # a one-line refusal naming the planner
            assert "\n" not in str(e) and repr(name) in str(e)
            continue
        except SolverError as e:  # only a planner whose optional package is absent
            assert package_missing(name) and "\n" not in str(e) and "ethos-u-vela" in str(e), e
            continue
        assert r.mode == PLANNERS[name].kind_capabilities()["shared_buffers"] == "colocate"
        check_shared_plan(sp, r.plans)
        assert r.arena >= 8, name
        if r.status == "optimal":
            assert r.arena == 8, name


def test_shared_hull_and_colocate_against_brute_force():
    """m0: s (2) at step 0, x (2) at step 1; m1: y (2) at step 0, s at step 1; brute force 2.
    colocate reaches it with an exact planner; hull is sound and wastes 2 bytes (4)."""
    m0 = Problem([Buffer("s", 0, 1, 2), Buffer("x", 1, 2, 2)], name="m0")
    m1 = Problem([Buffer("y", 0, 1, 2), Buffer("s", 1, 2, 2)], name="m1")
    sp = SharedArenaProblem((m0, m1), ("s",))
    assert brute_shared(sp) == 2
    assert plan_shared(sp, "cpsat", time_limit=5).arena == 2
    assert plan_shared(sp, "cpsat", mode="hull", time_limit=5).arena == 4


@st.composite
def tiny_shared(draw):
    probs = []
    sizes = {"s": draw(st.integers(1, 3))}
    for k in range(2):
        bufs = [Buffer("s", *sorted(draw(st.sampled_from([(0, 1), (0, 2), (1, 3), (2, 3)]))),
                       sizes["s"])]
        for j in range(draw(st.integers(1, 2))):
            a = draw(st.integers(0, 2))
            bufs.append(Buffer(f"p{j}", a, a + draw(st.integers(1, 2)), draw(st.integers(1, 3)),
                               draw(st.sampled_from((None, 2)))))
        probs.append(Problem(bufs, name=f"m{k}"))
    return SharedArenaProblem(tuple(probs), ("s",))


@settings(max_examples=examples(30), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(tiny_shared())
def test_shared_planners_against_brute_force(sp):
    opt = brute_shared(sp)
    assert sp.lower_bound() <= opt
    for name in ("cpsat", "milp_offsets", "greedy_by_size", "naive", "telamalloc"):
        r = plan_shared(sp, name, **_kw(name))
        check_shared_plan(sp, r.plans)
        assert r.arena >= opt, name
        if name == "cpsat":  # exact, and exact on colocations (gaps native): the optimum
            assert r.arena == opt and r.status == "optimal", (name, r.status)
        if r.status == "optimal":
            assert r.arena == opt, name


# -- scratch ----------------------------------------------------------------------------------
def test_scratch_kind_survives_csv_and_the_shared_json_manifest(tmp_path):
    pools = (MemoryPool("sram", 64), MemoryPool("dram", 1024))
    base = Problem([Buffer("x", 0, 3, 16), Buffer("y", 1, 3, 8)], name="net", pools=pools)
    p = with_scratch(base, [(1, 32, ("sram",)), (2, 8)])
    tmp = Problem([*p.buffers, scratch_buffer(0, 4, ("dram",), id="im2col")], name="net",
                  pools=pools)
    assert scratch_ids(tmp) == ["scratch/1/0", "scratch/2/0", "im2col"]
    write_minimalloc_csv(tmp, tmp_path / "s.csv")
    header = (tmp_path / "s.csv").read_text().splitlines()[0].split(",")
    assert header == ["id", "lower", "upper", "size", "pools", "kind"]
    back = read_minimalloc_csv(tmp_path / "s.csv", pools=pools)
    assert _signature(back) == _signature(tmp)
    assert [b.kind for b in back.buffers] == ["activation"] * 2 + ["scratch"] * 3
    assert scratch_ids(back) == ["scratch/1/0", "scratch/2/0", "im2col"]
    # a shared-arena manifest (JSON + one CSV per problem) keeps it too
    other = Problem([Buffer("x", 0, 2, 16), scratch_buffer(1, 8, id="tmp")], name="other",
                    pools=pools)
    sp = SharedArenaProblem((tmp, other), ("x",))
    write_shared(sp, tmp_path / "m.json")
    sb = read_shared(tmp_path / "m.json")
    assert [_signature(q) for q in sb.problems] == [_signature(q) for q in sp.problems]
    assert scratch_ids(sb.problems[1]) == ["tmp"]
    with pytest.raises(ProblemError, match="a scratch buffer lives one step"):
        Buffer("t", 0, 2, 4, kind="scratch")
    (tmp_path / "bad.csv").write_text("id,lower,upper,size,kind\nt,0,2,4,scratch\n")
    with pytest.raises(ProblemError, match="bad.csv:2: .*lives one step"):
        read_minimalloc_csv(tmp_path / "bad.csv")


@pytest.mark.parametrize("name", list(PLANNERS))
def test_every_planner_plans_scratch_as_its_table_says(name):
    """Capability ``scratch: native``: a problem with scratch buffers plans, valid, at or above
    its brute-force optimum (x [0,3) 2 bytes, y [1,2) 2, scratch at steps 0 and 1, 1 and 2
    bytes: step 1 holds x + y + 2 = 6 bytes, the optimum)."""
    assert PLANNERS[name].kind_capabilities()["scratch"] == "native"
    p = with_scratch(Problem([Buffer("x", 0, 3, 2), Buffer("y", 1, 2, 2)], name="net"),
                     [(0, 1), (1, 2)])
    planner = get_planner(name, **_kw(name))
    if planner.needs_capacity(p):  # a decision planner: asked at the bound, as `memplan plan`
        p = p.with_capacity(lower_bound(p))
    try:
        plan = planner.plan(p)
    except (FeatureError, SolverError) as e:  # pragma: no cover - none expected
        pytest.fail(f"{name} refused a scratch problem: {e}")
    assert plan.arena_size >= 6
    if plan.status == "optimal":
        assert plan.arena_size == 6


# -- memplan plan on the JSON problems --------------------------------------------------------
def test_memplan_plan_routes_concurrent_and_shared_json(tmp_path, capsys):
    (tmp_path / "two.json").write_text(two_stream().to_json())
    assert main(["plan", str(tmp_path / "two.json"), "--planner", "cpsat",
                 "--time-limit", "5"]) == 0
    lines = dict(x.split(None, 1) for x in capsys.readouterr().out.splitlines())
    assert (lines["arena"], lines["lower_bound"], lines["status"]) == ("8", "8", "optimal")
    assert (lines["streams"], lines["route"]) == ("2", "conflict graph")
    assert main(["plan", str(tmp_path / "two.json"), "--planner", "exact_search"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        "memplan: error: planner 'exact_search' does not plan concurrency")
    assert main(["plan", str(tmp_path / "two.json"), "--planner", "naive", "--capacity", "9",
                 "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    # naive stacks in file order: a [0,3) b [3,5) c [6,8) (alignment 2) d [8,9) e [9,11)
    assert (doc["arena"], doc["lower_bound"], doc["fits"]) == (11, 8, False)
    assert main(["plan", str(tmp_path / "two.json"), "--pools", "a=1k"]) == 2
    assert "--pools does not apply" in capsys.readouterr().err
    write_shared(kv_program(), tmp_path / "kv.json")
    assert main(["plan", str(tmp_path / "kv.json"), "--planner", "cpsat", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["arena"], doc["mode"], doc["status"]) == (8, "colocate", "optimal")
