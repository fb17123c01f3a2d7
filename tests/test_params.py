"""Parameter rules declared once (planners.params): the vocabulary, the one error type and its
message, the check in plan()/schedule(), and a walk over every registry (scikit-learn's common
test of ``_parameter_constraints``)."""

from __future__ import annotations

import inspect
import json
import math
import re
import subprocess
import sys
from numbers import Integral, Real

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import planners.base
import planners.params
import scheduling.schedulers.base
from planners import MemplanError, ParameterError, ProblemError, plan
from planners.base import Configurable as ConfigurableFromBase
from planners.colouring import Chaitin
from planners.cpsat import CPSat
from planners.examples import exercise_5_1_problem
from planners.local_search import LocalSearch
from planners.params import (
    Configurable,
    Interval,
    SequenceOf,
    StrOptions,
    check_params,
    param_rules,
    validate_params,
)
from planners.registry import PLANNERS
from scheduling.examples import mobilenet_v1_first_layer
from scheduling.schedulers import SCHEDULERS, schedule
from scheduling.transforms import PASSES, fuse, quantize, run_pipeline

# the planners' rules are part of their contract (tests/test_planner_contract.py)
REGISTERED = [("scheduler", n, c) for n, c in SCHEDULERS.items()]


# -- the one error type and its message -------------------------------------------------------------
def test_parameter_error_is_a_value_error_and_a_toolkit_error_but_not_a_problem_error():
    assert issubclass(ParameterError, ValueError) and issubclass(ParameterError, MemplanError)
    assert not issubclass(ParameterError, ProblemError)


@pytest.mark.parametrize(
    "obj, message",
    [
        # options
        (CPSat(mode="fast"),
         "cpsat: parameter 'mode' = 'fast' is not allowed; allowed: one of {'auto', 'minimize', "
         "'decide'}"),
        # interval (open at 0, a unit)
        (CPSat(time_limit=0),
         "cpsat: parameter 'time_limit' = 0 is not allowed; allowed: a number in (0, 1000000000] "
         "seconds"),
        # a bool is not a number
        (CPSat(time_limit=True),
         "cpsat: parameter 'time_limit' = True is not allowed; allowed: a number in "
         "(0, 1000000000] seconds"),
        # CP-SAT's random_seed is an int32
        (CPSat(seed=2**31),
         "cpsat: parameter 'seed' = 2147483648 is not allowed; allowed: an int in [0, 2147483647]"),
        # boolean
        (CPSat(warm_start="yes"),
         "cpsat: parameter 'warm_start' = 'yes' is not allowed; allowed: a bool"),
        # None is not allowed unless declared
        (CPSat(workers=None),
         "cpsat: parameter 'workers' = None is not allowed; allowed: an int in [1, 2147483647]"),
        # threads reach the solvers as an int32
        (CPSat(workers=2**31),
         "cpsat: parameter 'workers' = 2147483648 is not allowed; allowed: an int in "
         "[1, 2147483647]"),
        # integer interval or None
        (Chaitin(k=0),
         "chaitin: parameter 'k' = 0 is not allowed; allowed: an int in [1, inf) or None"),
        # an int rule refuses a float
        (Chaitin(k=2.0),
         "chaitin: parameter 'k' = 2.0 is not allowed; allowed: an int in [1, inf) or None"),
        # sequence of options
        (LocalSearch(moves=()),
         "local_search: parameter 'moves' = () is not allowed; allowed: a non-empty list or tuple "
         "of: one of {'move', 'swap', 'ruin'}"),
        # NaN is no number
        (LocalSearch(temperature=float("nan")),
         "local_search: parameter 'temperature' = nan is not allowed; allowed: a number in "
         "[0, inf)"),
    ],
)
def test_bad_values_give_one_error_type_with_the_exact_message(obj, message):
    with pytest.raises(ParameterError) as e:
        obj.plan(exercise_5_1_problem())
    assert str(e.value) == message


def test_none_is_allowed_where_declared_and_numpy_seeds_are_unbounded():
    p = exercise_5_1_problem()  # optimum 780 bytes
    assert LocalSearch(seed=2**40, max_iters=5).plan(p).arena_size == 780
    assert Chaitin(k=None).plan(p).arena_size == 780
    r = CPSat(deterministic_time=None, time_limit=5).plan(p)
    assert (r.status, r.arena_size) == ("optimal", 780)


def test_scheduler_rule_is_checked_by_schedule():
    g = mobilenet_v1_first_layer()
    with pytest.raises(ParameterError) as e:
        schedule(g, "genetic", mutation=1.5)
    assert str(e.value) == (
        "genetic: parameter 'mutation' = 1.5 is not allowed; allowed: a number in [0, 1]"
    )
    with pytest.raises(ParameterError, match=r"^best_of: parameter 'schedulers' = \('best_of',\)"):
        schedule(g, "best_of", schedulers=("best_of",))


def test_graph_pass_rules_are_checked_on_call():
    g = mobilenet_v1_first_layer()
    with pytest.raises(ParameterError) as e:
        fuse(g, vlen=0)
    assert str(e.value) == "fuse: parameter 'vlen' = 0 is not allowed; allowed: an int in [1, inf) bits"
    with pytest.raises(ParameterError) as e:
        run_pipeline(g, "quantize", {"quantize": {"activations": "int4"}})
    assert str(e.value) == (
        "quantize: parameter 'activations' = 'int4' is not allowed; allowed: one of {'int8', "
        "'float16'} or None"
    )
    with pytest.raises(ParameterError, match="^fuse: got an unexpected keyword argument 'vlen_bits'"):
        run_pipeline(g, "fuse", {"fuse": {"vlen_bits": 64}})
    assert quantize(g, activations=None)[0].ops.keys() == g.ops.keys()  # None is declared


# -- where and when the rules are checked -----------------------------------------------------------
def test_init_only_stores_and_set_params_repairs(monkeypatch):
    p = exercise_5_1_problem()
    c = CPSat(mode="fast", time_limit=-1)  # no error: __init__ stores only
    assert c.get_params()["mode"] == "fast"
    with pytest.raises(ParameterError, match="'mode' = 'fast'"):
        c.plan(p)
    c.set_params(mode="minimize", time_limit=5)
    assert c.plan(p).status == "optimal"
    with pytest.raises(ParameterError, match="has no parameter 'colour'"):
        c.set_params(colour="red")
    with pytest.raises(ParameterError, match="^planner 'cpsat': .*unexpected keyword argument 'colour'"):
        plan(p, "cpsat", colour="red")
    with pytest.raises(ParameterError, match="^scheduler 'dfs': .*unexpected keyword argument 'colour'"):
        schedule(mobilenet_v1_first_layer(), "dfs", colour="red")


def test_checked_once_per_plan_and_schedule(monkeypatch):
    calls = []
    real = planners.base.validate_params

    def counting(obj):
        calls.append(obj.name)
        real(obj)

    monkeypatch.setattr(planners.base, "validate_params", counting)
    monkeypatch.setattr(scheduling.schedulers.base, "validate_params", counting)
    plan(exercise_5_1_problem(), "greedy_by_size")
    schedule(mobilenet_v1_first_layer(), "dfs")
    assert calls == ["greedy_by_size", "dfs"]


def test_choose_best_checks_members_it_runs_without_plan():
    bad = CPSat(mode="fast")
    with pytest.raises(ParameterError, match="^cpsat: parameter 'mode'"):
        plan(exercise_5_1_problem(), "choose_best", planners=("greedy_by_size", bad))


def test_configurable_moved_and_reexported():
    assert ConfigurableFromBase is Configurable
    src = inspect.getsource(scheduling.schedulers.base)
    assert "planners.base" not in src.split('"""', 2)[2]  # code, not the docstring


# -- every registered component declares a rule for every parameter --------------------------------
@pytest.mark.parametrize("kind, name, cls", REGISTERED, ids=[f"{k}:{n}" for k, n, _ in REGISTERED])
def test_every_parameter_has_exactly_the_declared_rules(kind, name, cls):
    rules = cls._parameter_constraints
    assert isinstance(rules, dict), f"{kind} {name!r} declares no _parameter_constraints"
    params = set(cls._param_names())
    assert set(rules) == params, (
        f"{kind} {name!r}: parameters without a rule {sorted(params - set(rules))}, "
        f"rules for missing parameters {sorted(set(rules) - params)}"
    )
    for k, r in rules.items():
        assert isinstance(r, list) and r, f"{kind} {name!r}: rules of {k!r} must be a non-empty list"
    validate_params(cls())  # every default is allowed by its own rules


@pytest.mark.parametrize("name", list(PASSES))
def test_every_graph_pass_declares_its_keyword_parameters(name):
    f = PASSES[name]
    rules = f._parameter_constraints
    sig = inspect.signature(f)
    kw = {p.name: p.default for p in list(sig.parameters.values())[1:]}  # after the graph
    assert set(rules) == set(kw)
    check_params(name, rules, kw)  # the defaults are allowed


# -- the vocabulary ---------------------------------------------------------------------------------
@settings(max_examples=examples(200), deadline=None)
@given(st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.just(float("nan")), st.booleans(),
                 st.none()),
       st.sampled_from(["both", "left", "right", "neither"]))
def test_interval_matches_its_definition(x, closed):
    r = Interval(Real, -1, 2, closed=closed)
    number = isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)
    lo_ok = number and (x >= -1 if closed in ("both", "left") else x > -1)
    hi_ok = number and (x <= 2 if closed in ("both", "right") else x < 2)
    assert r.allows(x) == bool(lo_ok and hi_ok)
    ri = Interval(Integral, -1, 2, closed=closed)
    assert ri.allows(x) == bool(lo_ok and hi_ok and isinstance(x, int))


def test_vocabulary_details():
    assert Interval(Integral, 0, None).allows(np.int64(3)) and not Interval(Integral, 0, None).allows(np.True_)
    assert str(Interval(Real, 0, 1, closed="neither")) == "a number in (0, 1)"
    lazy = StrOptions(lambda: {"a": 1, "b": 2})  # a registry read at check time
    assert lazy.allows("b") and not lazy.allows("c") and str(lazy) == "one of {'a', 'b'}"
    seq = SequenceOf(StrOptions(("x", "y")), None, min_len=0)
    assert seq.allows([]) and seq.allows(("x", None)) and not seq.allows("x") and not seq.allows(["z"])
    with pytest.raises(TypeError, match="rules for missing parameters"):
        param_rules({"nope": [None]})(lambda graph, *, k=1: None)


def test_long_values_are_shortened_in_the_message():
    with pytest.raises(ParameterError) as e:
        check_params("x", {"p": [None]}, {"p": "z" * 200})
    assert str(e.value) == "x: parameter 'p' = '" + "z" * 76 + "... is not allowed; allowed: None"


# -- the command line ----------------------------------------------------------------------------
def test_cli_prints_one_line_and_exits_2_for_a_bad_planner_parameter(tmp_path):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text('out = "out"\nworkloads = ["seed000"]\n[planners]\ncpsat = {mode = "fast"}\n')
    r = subprocess.run([sys.executable, "-m", "experiments.cli", "sweep", str(cfg), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (
        f"memplan: error: {cfg}: [planners] cpsat: parameter 'mode' = 'fast' is not allowed; "
        "allowed: one of {'auto', 'minimize', 'decide'}\n"
    )
    assert not (tmp_path / "out").exists()


# -- non-finite numbers (issue #33 item 7: `--param time_limit=1e400` passed (0, inf) as infinity) ---
def _interval_oracle(kind, left, right, closed, x) -> bool:
    """What ``Interval(kind, left, right, closed)`` means, written out with exact fractions: a
    number (no bool, no NaN; an int for Integral), finite unless an infinite end is given
    explicitly on a closed side, inside the ends."""
    from fractions import Fraction

    if isinstance(x, bool) or not isinstance(x, (int, float)) or (kind is Integral
                                                                 and not isinstance(x, int)):
        return False
    if x != x:
        return False
    lc, rc = closed in ("both", "left"), closed in ("both", "right")
    if x in (math.inf, -math.inf):
        end, shut = (right, rc) if x > 0 else (left, lc)
        return shut and end == x
    v = Fraction(x)
    if left == math.inf or right == -math.inf:  # nothing finite lies beyond them
        return False
    lo = left is None or left == -math.inf or (v >= Fraction(left) if lc else v > Fraction(left))
    hi = right is None or right == math.inf or (v <= Fraction(right) if rc else v < Fraction(right))
    return lo and hi


_ENDS = st.sampled_from([None, 0, -1, 2, 10**9, math.inf, -math.inf])


@settings(max_examples=examples(600), deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                 st.integers(-2, 2).map(lambda k: 10**400 * k), st.booleans()),
       _ENDS, _ENDS, st.sampled_from(["both", "left", "right", "neither"]),
       st.sampled_from([Real, Integral]))
def test_interval_with_any_ends_matches_the_oracle(x, left, right, closed, kind):
    if left is not None and right is not None and right < left:
        return
    assert Interval(kind, left, right, closed=closed).allows(x) == \
        _interval_oracle(kind, left, right, closed, x)


def test_unbounded_ends_refuse_infinity_and_seconds_fit_every_solver():
    from planners.params import MAX_SECONDS, POSITIVE_SECONDS

    for v in (math.inf, -math.inf, float("1e400"), np.float64("inf"), math.nan):
        assert not Interval(Real, 0, None, closed="neither").allows(v)
        assert not Interval(Real, None, None).allows(v)
        assert not POSITIVE_SECONDS.allows(v)
    assert Interval(Real, 0, math.inf, closed="both").allows(math.inf)  # an explicit end
    assert not Interval(Real, 0, math.inf, closed="left").allows(math.inf)
    assert POSITIVE_SECONDS.allows(MAX_SECONDS) and not POSITIVE_SECONDS.allows(MAX_SECONDS + 1)
    assert not POSITIVE_SECONDS.allows(1e308) and POSITIVE_SECONDS.allows(2.5)
    # what the bound is for: the narrowest solver type, Python's int64-nanosecond clock
    import threading

    assert MAX_SECONDS * 2 < threading.TIMEOUT_MAX
    assert int(MAX_SECONDS * 1000) < 2**63  # OR-Tools SetTimeLimit (int64 milliseconds)


def _time_limited_planners():
    return [n for n, c in PLANNERS.items() if "time_limit" in c._param_names()]


_BAD_SECONDS = ["1e400", "inf", "nan", "NaN", "Infinity", "-Infinity", "1e308", "0", "-1"]


@pytest.mark.parametrize("planner", _time_limited_planners())
@pytest.mark.parametrize("value", _BAD_SECONDS + ["1e9"])
def test_plan_time_limit_param_exits_2_in_one_line_or_plans(planner, value, tmp_path, capsys):
    """`memplan plan --param time_limit=V` for every planner that takes a time limit: one
    `memplan: error:` line naming the parameter and its rule (exit 2), or for a finite limit the
    right plan (the problem's optimum, 96 bytes: a and c never live together); never a
    traceback."""
    from experiments.cli.app import main

    f = tmp_path / "p.csv"
    f.write_text("id,lower,upper,size\na,0,2,64\nb,1,3,32\nc,2,4,48\n")
    code = main(["plan", str(f), "--planner", planner, "--param", f"time_limit={value}", "--json"])
    out, err = capsys.readouterr()
    if value != "1e9":
        assert code == 2, (out, err)
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"memplan: error: {planner}: parameter 'time_limit' = ")
        assert "is not allowed; allowed: a number in (0, 1000000000] seconds" in err
    else:
        assert code == 0, err
        rec = json.loads(out)
        assert (rec["arena"], rec["valid"]) == (96, True)


@pytest.mark.parametrize("scheduler", [n for n, c in SCHEDULERS.items()
                                       if "time_limit" in c._param_names()])
def test_schedule_time_limit_param_refuses_non_finite(scheduler, capsys):
    from experiments.cli.app import main

    for value in ("1e400", "NaN", "1e308"):
        assert main(["schedule", "seed000", "--scheduler", scheduler, "--param",
                     f"time_limit={value}"]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "parameter 'time_limit'" in err, err


@pytest.mark.parametrize("value", ["1e400", "inf", "nan", "1e308"])
def test_time_limit_flag_refuses_non_finite(value, capsys):
    from experiments.cli.app import main

    with pytest.raises(SystemExit) as e:
        main(["plan", "seed000", "--planner", "cpsat", "--time-limit", value])
    assert e.value.code == 2
    assert "time limit must be a number in (0, 1000000000] seconds" in capsys.readouterr().err


@pytest.mark.parametrize("key, value", [("time_limit", "inf"), ("time_limit", "nan"),
                                        ("time_limit", "1e400"), ("time_limit", "1e308"),
                                        ("time_limit", "0.0"), ("timeout", "inf"),
                                        ("timeout", "-inf")])
def test_sweep_config_numbers_are_finite(key, value, tmp_path):
    from experiments.sweep import ConfigError, load_config

    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'out = "out"\nworkloads = ["seed000"]\n{key} = {value}\n'
                   "[planners]\nfirst_fit = {}\n")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(cfg))}: {key}: must be "):
        load_config(cfg)


@pytest.mark.parametrize("value", ["inf", "nan", "1e400", "-inf"])
def test_sweep_grid_refuses_non_finite_time_limits(value, tmp_path):
    from experiments.sweep import load_config

    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'out = "out"\nworkloads = ["seed000"]\n[planners]\n'
                   f"cpsat = {{time_limit = [1.0, {value}]}}\n")
    with pytest.raises(ParameterError, match=r"\[planners\] cpsat: parameter 'time_limit' = "
                                             r"-?(inf|nan) is not allowed; allowed: a number in "
                                             r"\(0, 1000000000\] seconds$"):
        load_config(cfg)


@pytest.mark.parametrize("planner", [n for n, c in PLANNERS.items()
                                     if (c._parameter_constraints or {}).get("workers") ==
                                     [planners.params.THREADS]])
def test_plan_workers_beyond_int32_exit_2_in_one_line(planner, tmp_path, capsys):
    """Threads reach CP-SAT (num_workers) and OR-Tools (SetNumThreads) as an int32: a larger
    count is refused by the rule (before: TypeError / OverflowError tracebacks)."""
    from experiments.cli.app import main

    f = tmp_path / "p.csv"
    f.write_text("id,lower,upper,size\na,0,2,64\nb,1,3,32\nc,2,4,48\n")
    assert main(["plan", str(f), "--planner", planner, "--param",
                 "workers=1000000000000000000000000000000"]) == 2
    err = capsys.readouterr().err
    assert err == (f"memplan: error: {planner}: parameter 'workers' = "
                   "1000000000000000000000000000000 is not allowed; allowed: an int in "
                   "[1, 2147483647]\n")
