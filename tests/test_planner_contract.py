"""The contract every registered planner meets, parametrised over ``planners.registry.PLANNERS``.

A new planner is tested by adding its registry line: each test below runs it. The contract:

* a valid plan (checked again here by :func:`planners.check_plan`) of each seed problem of
  :mod:`planners.examples`, its arena at least the lower bound and at least the problem's
  optimum, and equal to that optimum when the plan's status is ``optimal``;
* determinism: the same parameters give the same offsets, and a planner rebuilt from its
  ``get_params()`` (as a sweep rebuilds it from a record) gives the same plan;
* every constructor parameter has a non-empty list of rules in ``_parameter_constraints``, every
  default satisfies them, and a value no rule allows raises :class:`ParameterError` (before any
  work) naming the parameter;
* a class docstring of its own;
* a capability for every feature, in a mode that feature allows, and a refused feature raises
  :class:`FeatureError` in one line naming the planner.

Solvers run with ``time_limit=1`` (seconds) and one worker thread (``workers=1``: CP-SAT with
several workers may return another optimal layout on a rerun), with OR-Tools imported before
any run (a cold import inside the limit, :func:`planners.time_limits.import_within`, could make
one run answer with its warm start and the next with the solver's plan). The optimum of each seed problem is its lower bound
(max live bytes): :data:`WITNESSES` holds a hand-checkable plan at that bound for each, checked
by the validator in :func:`test_witnesses_prove_the_optima`, so no planner's answer is trusted
for it.

The last tests run the README's recipe for a new planner built on the greedy engine
(:class:`LongestLivedFirst` below, the same text), registered temporarily.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pytest

from planners import Buffer, MemoryPool, Problem, check_plan, lower_bound
from planners.base import CAPABILITY_MODES
from planners.errors import FeatureError, ParameterError
from planners.examples import exercise_5_1_problem, pisarchyk_lee_problem, seed000_problem
from planners.greedy import ENGINES, FITS, GreedyPlanner
from planners.greedy_engine import GreedyEnginePlanner
from planners.model import FEATURES
from planners.params import Interval, StrOptions, validate_params
from planners.placement import CAPABILITIES as GREEDY_ENGINE_CAPABILITIES
from planners.registry import PLANNERS, get_planner

#: Seconds for every planner with a time limit.
TIME_LIMIT = 1.0

for _solver in ("ortools.sat.python.cp_model", "ortools.linear_solver.pywraplp"):
    try:  # imported here, not inside a run's time limit (module docstring)
        __import__(_solver)
    except ImportError:  # the solver planners then refuse or fall back, as they document
        pass

#: The seed problems of planners.examples, by name.
PROBLEMS = {
    "seed000": seed000_problem(),
    "seed000_activations": seed000_problem(unified=False),
    "exercise_5_1": exercise_5_1_problem(),
    "pisarchyk_lee": pisarchyk_lee_problem(),
}

#: A plan of each seed problem whose arena is the lower bound, so the optimum is that bound.
#: Offsets in bytes, problem order. seed000 (alignment 16): the residents input, conv_w, gemm_w
#: (4096 + 65536 + 262144 = 331776 bytes, live throughout) at the top, the activations below in
#: 20480 bytes (step 2: conv_y 8192 + skip 4096 + res 8192). seed002 exercise 5.1: step 4 has
#: T2..T5 live (200 + 150 + 250 + 180 = 780); T1 (steps 0-3) and T5 (4-7) share offset 450.
#: Pisarchyk & Lee: step 5 has t2..t5 live (36 + 16 + 8 + 64 = 124).
WITNESSES = {
    "seed000": ([344064, 262144, 327680, 348160, 335872, 0, 327680, 328704], 352256),
    "seed000_activations": ([0, 16384, 8192, 0, 1024], 20480),
    "exercise_5_1": ([450, 250, 630, 0, 450], 780),
    "pisarchyk_lee": ([0, 32, 64, 100, 116, 0, 104, 64], 124),
}

#: The modes each feature allows (planners.base.CAPABILITY_MODES; "refused" only for pins: every
#: planner can drop a hint, take a gap as live, spill pools and merge a colocation group).
ALLOWED_MODES = {"pins": {"native", "refused"}, "hints": {"native", "ignored"},
                 "gaps": {"native", "relaxed"}, "pools": {"native", "spill"},
                 "colocations": {"merged", "native"}}

#: A small problem using each one feature (the exercise 5.1 buffers, bytes and steps).
FEATURE_PROBLEMS = {
    "pins": Problem([Buffer("T1", 0, 4, 100, offset=0), Buffer("T2", 1, 5, 200)], name="pinned"),
    "hints": Problem([Buffer("T1", 0, 4, 100, hint=200), Buffer("T2", 1, 5, 200)], name="hinted"),
    "gaps": Problem([Buffer("T1", 0, 4, 100, gaps=[(1, 2)]), Buffer("T2", 1, 5, 200)],
                    name="gapped"),
    "pools": Problem([Buffer("T1", 0, 4, 100), Buffer("T2", 1, 5, 200)],
                     pools=[MemoryPool("sram", 256), MemoryPool("dram", 1 << 20)], name="pooled"),
    "colocations": Problem([Buffer("T1", 0, 2, 100), Buffer("T2", 2, 5, 100),
                            Buffer("T3", 1, 4, 50)], colocations=[("T1", "T2")],
                           name="colocated"),
}


class _NotAValue:
    """A value that no parameter rule allows (not a number, string, bool, sequence, callable)."""

    def __repr__(self) -> str:
        return "<not a value>"


def make(name: str, cls=None, **params):
    """Registered planner ``name`` (or class ``cls``) with ``time_limit=TIME_LIMIT`` and
    ``workers=1`` when it has them."""
    cls = cls or PLANNERS[name]
    if "time_limit" in cls._param_names():
        params.setdefault("time_limit", TIME_LIMIT)
    if "workers" in cls._param_names():
        params.setdefault("workers", 1)
    return cls(**params)


# -- the checks (functions, so the recipe's planner runs the same ones) --------------------------
def check_plans(name, cls=None):
    """Valid plan, arena >= lower bound and optimum, optimal only at the optimum; determinism;
    get_params round trip. Returns the arenas by problem name."""
    arenas = {}
    for pname, p in PROBLEMS.items():
        planner = make(name, cls)
        if planner.needs_capacity(p):  # a decision planner: the harness gives it the bound
            p = p.with_capacity(lower_bound(p))
        r = planner.plan(p)
        assert r.status in ("optimal", "feasible", "heuristic"), (name, pname, r.status)
        check_plan(p, r.offsets)  # independently of plan()'s own check
        lb = lower_bound(p)
        opt = WITNESSES[pname][1]
        assert r.lower_bound == lb and r.arena_size >= lb, (name, pname)
        assert r.arena_size >= opt, (name, pname, r.arena_size)
        if r.status == "optimal":
            assert r.arena_size == opt, (name, pname, r.arena_size)
        again = make(name, cls).plan(p)
        assert again.offsets.tolist() == r.offsets.tolist(), f"{name}: not deterministic on {pname}"
        rebuilt = type(planner)(**planner.get_params())
        assert rebuilt.get_params() == planner.get_params(), name
        assert rebuilt.plan(p).offsets.tolist() == r.offsets.tolist(), (name, pname)
        assert r.params == planner.get_params(), name
        arenas[pname] = r.arena_size
    return arenas


def check_parameters(name, cls):
    """Every parameter has rules, defaults satisfy them, a disallowed value is a ParameterError
    naming the parameter, raised by plan() before any work."""
    rules = cls._parameter_constraints
    assert isinstance(rules, dict), f"planner {name!r} declares no _parameter_constraints"
    params = set(cls._param_names())
    assert set(rules) == params, (
        f"planner {name!r}: parameters without a rule {sorted(params - set(rules))}, "
        f"rules for missing parameters {sorted(set(rules) - params)}")
    for k, r in rules.items():
        assert isinstance(r, list) and r, f"planner {name!r}: rules of {k!r} must be a non-empty list"
    validate_params(cls())  # every default is allowed by its own rules
    p = PROBLEMS["exercise_5_1"]
    for k in sorted(params):
        planner = make(name, cls, **{k: _NotAValue()})
        with pytest.raises(ParameterError) as e:
            planner.plan(p)
        msg = str(e.value)
        assert "\n" not in msg and repr(k) in msg and "<not a value>" in msg, (name, k, msg)
    with pytest.raises(ParameterError) as e:
        get_planner(name if PLANNERS.get(name) is cls else cls, no_such_parameter=1)
    assert str(e.value) == (f"planner {name!r}: got an unexpected keyword argument "
                            f"'no_such_parameter'; its parameters: "
                            f"{', '.join(cls._param_names()) or 'none'}")


def check_capabilities(name, cls):
    """A mode for every feature, allowed for it; a refused feature is one FeatureError line."""
    caps = cls.capabilities()
    assert set(caps) == set(FEATURES), (name, caps)
    assert set(caps.values()) <= set(CAPABILITY_MODES), (name, caps)
    assert all(caps[f] in ALLOWED_MODES[f] for f in FEATURES), (name, caps)
    for f in FEATURES:
        assert FEATURE_PROBLEMS[f].features == {f}, f
        if caps[f] != "refused":
            continue
        with pytest.raises(FeatureError) as e:
            make(name, cls).plan(FEATURE_PROBLEMS[f])
        msg = str(e.value)
        assert "\n" not in msg and repr(cls.name) in msg, msg


def check_docstring(name, cls):
    doc = vars(cls).get("__doc__") or ""
    assert len(doc.split()) >= 5, f"planner {name!r} has no docstring of its own"


# -- every registered planner ----------------------------------------------------------------------
NAMES = list(PLANNERS)


def test_witnesses_prove_the_optima():
    for pname, (offsets, arena) in WITNESSES.items():
        p = PROBLEMS[pname]
        check_plan(p, np.asarray(offsets))  # a valid plan ...
        assert max(o + s for o, s in zip(offsets, p.sizes.tolist(), strict=True)) == arena
        assert lower_bound(p) == arena  # ... at the lower bound: the optimum


@pytest.mark.parametrize("name", NAMES)
def test_plans_are_valid_bounded_deterministic_and_reproducible(name):
    check_plans(name)


@pytest.mark.parametrize("name", NAMES)
def test_parameters_have_rules_and_bad_values_are_refused(name):
    check_parameters(name, PLANNERS[name])


@pytest.mark.parametrize("name", NAMES)
def test_capabilities_are_declared_and_refusals_are_one_line(name):
    check_capabilities(name, PLANNERS[name])


@pytest.mark.parametrize("name", NAMES)
def test_docstring(name):
    check_docstring(name, PLANNERS[name])


def test_the_contract_catches_a_nondeterministic_planner(monkeypatch):
    rng = np.random.default_rng(0)

    class Shuffled(GreedyEnginePlanner):
        """First fit in a fresh random order on every run (no seed parameter)."""

        name = "shuffled"
        _parameter_constraints = {}

        def _solve(self, problem):
            return self.greedy_solve(problem, rng.permutation(problem.n), "first")

    monkeypatch.setitem(PLANNERS, "shuffled", Shuffled)
    with pytest.raises(AssertionError, match="not deterministic"):
        check_plans("shuffled")


def test_registry_names_are_the_planners_own():
    for name, cls in PLANNERS.items():
        assert cls.name == name, (name, cls.name)


# -- capabilities follow the engine -------------------------------------------------------------
def test_greedy_engine_capabilities_come_from_the_engine_table():
    assert GREEDY_ENGINE_CAPABILITIES == {"pins": "native", "hints": "native", "gaps": "native",
                                          "pools": "native", "colocations": "merged"}
    assert GreedyEnginePlanner.capabilities() == GREEDY_ENGINE_CAPABILITIES
    # the engine's own planner (which states its table itself) handles exactly the same
    assert GreedyPlanner.capabilities() == GREEDY_ENGINE_CAPABILITIES

    class Refusing(GreedyEnginePlanner):
        """A planner on the engine that still refuses pins."""

        name = "refusing"
        _capabilities = {"pins": "refused"}

    assert Refusing.capabilities() == {**GREEDY_ENGINE_CAPABILITIES, "pins": "refused"}

    class Own(GreedyEnginePlanner):
        """A planner on the engine whose subclass opts out of a feature."""

        name = "own"

    class OwnChild(Own):
        """Inherits the engine through its parent."""

        name = "own_child"
        _capabilities = {"gaps": "relaxed"}

    assert OwnChild.capabilities()["gaps"] == "relaxed"
    assert OwnChild.capabilities()["pins"] == "native"


def test_unknown_engine_or_mode_is_an_error_not_a_default():
    from planners.base import Planner

    class Typo(Planner):
        """Declares an engine that does not exist."""

        name = "typo"
        _engine = "gredy"

    with pytest.raises(ValueError, match="unknown _engine 'gredy'"):
        Typo.capabilities()

    class BadMode(Planner):
        """Declares a mode that does not exist."""

        name = "bad_mode"
        _capabilities = {"pins": "natve"}

    with pytest.raises(ValueError, match="natve"):
        BadMode.capabilities()


# -- the README recipe: a new planner on the greedy engine -------------------------------------------
def order_by_lifetime(problem, large=None):
    """Longest lifetime (``end - start`` steps) first; ties: larger size, then problem order.
    With ``large`` (bytes), the buffers of at least ``large`` bytes come before all others.
    ``O(n log n)``."""
    length = problem.ends - problem.starts
    big = np.zeros(problem.n, bool) if large is None else problem.sizes >= large
    return np.lexsort((np.arange(problem.n), -problem.sizes, -length, ~big))


class LongestLivedFirst(GreedyEnginePlanner):
    """Longest-lived buffers first, placed by the greedy engine (pins, hints, gaps, pools too).

    Parameters
    ----------
    fit : {"first", "best"}, default "best"
        The engine's fit rule (:func:`planners.greedy.greedy_offsets`).
    large : int or None, default None
        Buffers of at least this many bytes go first; ``None``: no such class.
    engine : {"auto", "c", "python"}, default "auto"
        The engine's placement core; the offsets are identical.
    """

    name = "longest_lived_first"
    _parameter_constraints = {
        "fit": [StrOptions(FITS)],
        "large": [Interval(Integral, 1, None, unit="bytes"), None],
        "engine": [StrOptions(ENGINES)],
    }

    def __init__(self, fit: str = "best", large: int | None = None,
                 engine: str = "auto") -> None:
        self.fit = fit
        self.large = large
        self.engine = engine

    def _solve(self, problem):
        def order(p):
            return order_by_lifetime(p, self.large)
        return self.greedy_solve(problem, order, self.fit, self.engine)


@pytest.fixture
def registered(monkeypatch):
    """LongestLivedFirst registered for one test (its registry line), removed after."""
    monkeypatch.setitem(PLANNERS, "longest_lived_first", LongestLivedFirst)
    return "longest_lived_first"


def test_recipe_planner_meets_the_contract(registered):
    arenas = check_plans(registered)
    check_parameters(registered, LongestLivedFirst)
    check_capabilities(registered, LongestLivedFirst)
    check_docstring(registered, LongestLivedFirst)
    # hand-checked: in exercise 5.1 every lifetime is 4 steps, so the order is by size: T4 250,
    # T2 200, T5 180, T3 150, T1 100. Best fit: T4 at 0; T2 (live with T4) at 250; T5 (live
    # with T4, T2) at 450; T3 (live with T4, T2, T5) at 630; T1 [0, 4) is live with T2, T3, T4
    # but not T5 [4, 8), so the gap [450, 630) holds it: 450. Arena 780, the optimum.
    assert arenas["exercise_5_1"] == 780
    r = get_planner(registered).plan(PROBLEMS["exercise_5_1"])
    assert r.offsets.tolist() == [450, 250, 630, 0, 450] and r.status == "optimal"
    assert r.info["fit"] == "best" and r.planner == "longest_lived_first"


def test_recipe_planner_uses_the_engines_features(registered):
    p = FEATURE_PROBLEMS["pins"]
    r = get_planner(registered).plan(p)
    assert r.offsets.tolist() == [0, 100] and r.info["engine"] == "features"
    two = Problem([Buffer("T1", 0, 4, 100, offset=0), Buffer("T2", 1, 5, 200, offset=50)],
                  name="two_pins")
    r = get_planner(registered).plan(two)
    assert r.status == "infeasible" and "T1" in r.info["proof"]
    # the same offsets as the engine's own planner with the same order and fit
    for pname, q in {**PROBLEMS, **FEATURE_PROBLEMS}.items():
        mine = get_planner(registered, large=150).plan(q)
        ref = GreedyPlanner(order=lambda x: order_by_lifetime(x, 150), fit="best").plan(q)
        assert mine.offsets.tolist() == ref.offsets.tolist(), pname


def test_recipe_planner_parameter_rules(registered):
    p = PROBLEMS["pisarchyk_lee"]
    for bad, allowed in ((0, "[1, inf)"), (2.5, "[1, inf)"), (True, "[1, inf)")):
        with pytest.raises(ParameterError, match="'large'") as e:
            get_planner(registered, large=bad).plan(p)
        assert allowed in str(e.value), str(e.value)
    with pytest.raises(ParameterError, match="'fit'"):
        get_planner(registered, fit="worst").plan(p)
    assert get_planner(registered, large=None).plan(p).arena_size == \
        get_planner(registered).plan(p).arena_size
