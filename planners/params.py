"""Parameter rules declared once per planner, scheduler and graph pass.

Every configurable component (:class:`Configurable`: planners, schedulers) takes its parameters as
keyword arguments of ``__init__``, stores them unchanged and declares what each may be in the class
attribute ``_parameter_constraints`` (scikit-learn's convention, ``sklearn.utils._param_validation``)::

    class CPSat(Planner):
        _parameter_constraints = {
            "mode": [StrOptions(("auto", "minimize", "decide"))],
            "time_limit": [Interval(Real, 0, None, closed="neither")],
            "deterministic_time": [Interval(Real, 0, None, closed="neither"), None],
            "warm_start": ["boolean"],
        }

A value is allowed when it satisfies at least one rule of its list. The rules are checked by
:func:`validate_params` when the component runs (:meth:`planners.base.Planner.plan`,
:meth:`scheduling.schedulers.base.Scheduler.schedule`), never in ``__init__``, so ``set_params``
and sweeps that rebuild objects from records keep working. A graph pass (a plain function) declares
the same rules with the decorator :func:`param_rules`. Rules that depend on the input (the
problem's capacity, its clique number, the graph) stay in the algorithm.

The rule vocabulary:

* :class:`Interval` -- a number of a type (``numbers.Integral`` or ``numbers.Real``) in a closed,
  half-open or open range, either end unbounded (``None``); ``bool`` and NaN are never numbers;
* :class:`Options` / :class:`StrOptions` -- one of a set of values (the set may be given as a
  function returning it, for registries filled after the class is defined; this module itself
  imports no registry, so the sweep's code digests of a planner do not grow to every planner);
* :class:`SequenceOf` -- a list or tuple whose every item satisfies one of the given rules;
* :class:`InstanceOf` (or a bare class) -- an instance of a type;
* :class:`Satisfies` -- a predicate with a description (the last resort);
* ``None`` -- the value ``None``; ``"boolean"`` -- ``bool`` or ``numpy.bool_``;
  ``"array-like"`` -- a list, tuple or numpy array; ``callable`` -- any callable.

Every violation raises :class:`planners.errors.ParameterError` (a ``ValueError``) with one message
naming the owner, the parameter, the value and what is allowed, e.g.
``cpsat: parameter 'mode' = 'fast' is not allowed; allowed: one of {'auto', 'minimize', 'decide'}``.

:mod:`planners` and :mod:`scheduling` both import this module; it imports only
:mod:`planners.errors` (and numpy).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np

from .errors import ParameterError

__all__ = [
    "Configurable",
    "check_names",
    "Interval",
    "Options",
    "StrOptions",
    "SequenceOf",
    "InstanceOf",
    "Satisfies",
    "ParameterError",
    "validate_params",
    "check_params",
    "param_rules",
    "describe",
    "POSITIVE_SECONDS",
    "OPTIONAL_POSITIVE_SECONDS",
    "MAX_SECONDS",
    "SEED",
    "CPSAT_SEED",
    "SHARE",
    "THREADS",
    "MODEL_BUDGET",
]


# -- the rules --------------------------------------------------------------------------------------
class Rule:
    """Base class of the rule objects: :meth:`allows` and a description for messages."""

    def allows(self, value: Any) -> bool:  # pragma: no cover - abstract
        """True iff ``value`` satisfies the rule."""
        raise NotImplementedError

    def __str__(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self}>"


def _is_number(value: Any, kind: type) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if kind is Integral:
        return isinstance(value, Integral)
    if not isinstance(value, Real):
        return False
    try:
        return not math.isnan(float(value))
    except OverflowError:  # an int beyond the float range is a (finite) number
        return True


def _infinite(value: Any) -> bool:
    """True for a real ``value`` that is ``+inf`` or ``-inf`` (a float, numpy float, ...)."""
    try:
        return math.isinf(float(value))
    except OverflowError:  # an int too large for a float: finite
        return False


class Interval(Rule):
    """A number of type ``kind`` (``numbers.Integral`` or ``numbers.Real``) between ``left`` and
    ``right`` (``None``: unbounded on that side).

    ``closed`` is ``"both"`` (``[left, right]``), ``"left"`` (``[left, right)``), ``"right"``
    (``(left, right]``) or ``"neither"`` (``(left, right)``). ``Real`` accepts integers too; neither
    accepts ``bool`` or NaN, and ``Integral`` does not accept ``3.0``. An unbounded end (``None``)
    is open: it excludes the infinity on its side, so ``(0, inf)`` refuses ``float("inf")`` (and
    ``1e400``, which Python and JSON read as infinity); an infinity is allowed only as an end given
    explicitly (``math.inf``) on a closed side. ``unit`` (e.g. ``"seconds"``) is named in messages.

    Raises ``TypeError`` / ``ValueError`` on a malformed rule (a bug in the declaration).

    >>> Interval(Real, 0, None, closed="neither").allows(0.5), str(Interval(Integral, 1, None))
    (True, 'an int in [1, inf)')
    >>> Interval(Real, 0, None, closed="neither").allows(float("inf"))
    False
    """

    def __init__(self, kind: type, left: float | None, right: float | None, *,
                 closed: str = "both", unit: str | None = None) -> None:
        if kind not in (Integral, Real):
            raise TypeError(f"Interval: kind must be numbers.Integral or numbers.Real, got {kind!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"Interval: closed must be both/left/right/neither, got {closed!r}")
        if left is not None and right is not None and right < left:
            raise ValueError(f"Interval: right end {right} is below left end {left}")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed
        self.unit = unit

    def allows(self, value: Any) -> bool:
        if not _is_number(value, self.kind):
            return False
        if _infinite(value):  # only an explicit infinite end on a closed side holds it
            end, closed = (self.right, self.closed in ("both", "right")) if value > 0 else \
                (self.left, self.closed in ("both", "left"))
            return closed and end is not None and _infinite(end) and end == value
        lc = self.closed in ("both", "left")
        rc = self.closed in ("both", "right")
        if self.left is not None and not (value >= self.left if lc else value > self.left):
            return False
        return self.right is None or bool(value <= self.right if rc else value < self.right)

    def __str__(self) -> str:
        name = "an int" if self.kind is Integral else "a number"
        lo = "-inf" if self.left is None else repr(self.left)
        hi = "inf" if self.right is None else repr(self.right)
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        unit = f" {self.unit}" if self.unit else ""
        return f"{name} in {lb}{lo}, {hi}{rb}{unit}"


class Options(Rule):
    """One of ``options`` (compared with ``==``), of type ``kind``.

    ``options`` is a collection, or a function of no arguments returning one, evaluated at each
    check (for registries that are filled after the declaring class, e.g. planner names).

    >>> str(Options(str, ("a", "b")))
    "one of {'a', 'b'}"
    """

    def __init__(self, kind: type, options: Collection[Any] | Callable[[], Iterable[Any]]) -> None:
        self.kind = kind
        self._options = options

    @property
    def options(self) -> tuple[Any, ...]:
        """The allowed values, in declaration (or registry) order."""
        opts = self._options() if callable(self._options) else self._options
        return tuple(opts)

    def allows(self, value: Any) -> bool:
        if not isinstance(value, self.kind) or isinstance(value, (bool, np.bool_)) and \
                self.kind is not bool:
            return False
        try:
            return value in self.options
        except TypeError:  # unhashable against a set-like, or an odd __eq__
            return False

    def __str__(self) -> str:
        return "one of {" + ", ".join(repr(o) for o in self.options) + "}"


class StrOptions(Options):
    """One of a set of strings: ``Options(str, options)``."""

    def __init__(self, options: Collection[str] | Callable[[], Iterable[str]]) -> None:
        super().__init__(str, options)


class SequenceOf(Rule):
    """A list or tuple of at least ``min_len`` items, each allowed by one of ``rules`` (rules as
    in a parameter's list: rule objects, ``None``, ``"boolean"``, a class, ``callable``).

    >>> r = SequenceOf(StrOptions(("move", "swap")))
    >>> r.allows(("move",)), r.allows(()), r.allows("move"), str(r)
    (True, False, False, "a non-empty list or tuple of: one of {'move', 'swap'}")
    """

    def __init__(self, *rules: Any, min_len: int = 1) -> None:
        if not rules:
            raise ValueError("SequenceOf: give at least one rule for the items")
        self.rules = [_make_rule(r) for r in rules]
        self.min_len = min_len

    def allows(self, value: Any) -> bool:
        if not isinstance(value, (list, tuple)) or len(value) < self.min_len:
            return False
        return all(any(r.allows(x) for r in self.rules) for x in value)

    def __str__(self) -> str:
        size = {0: "a", 1: "a non-empty"}.get(self.min_len, f"a ({self.min_len} or more)")
        return f"{size} list or tuple of: " + " or ".join(str(r) for r in self.rules)


class InstanceOf(Rule):
    """An instance of ``kind`` (a class or a tuple of classes). A bare class in a parameter's list
    means the same."""

    def __init__(self, kind: type | tuple[type, ...], description: str | None = None) -> None:
        self.kind = kind
        self.description = description

    def allows(self, value: Any) -> bool:
        return isinstance(value, self.kind)

    def __str__(self) -> str:
        if self.description:
            return self.description
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        return "an instance of " + " or ".join(k.__name__ for k in kinds)


class Satisfies(Rule):
    """A value for which ``predicate(value)`` is true; ``description`` says which in messages."""

    def __init__(self, predicate: Callable[[Any], bool], description: str) -> None:
        self.predicate = predicate
        self.description = description

    def allows(self, value: Any) -> bool:
        try:
            return bool(self.predicate(value))
        except (TypeError, ValueError):
            return False

    def __str__(self) -> str:
        return self.description


class _Constant(Rule):
    def __init__(self, value: Any) -> None:
        self.value = value

    def allows(self, value: Any) -> bool:
        return value is self.value

    def __str__(self) -> str:
        return repr(self.value)


class _Boolean(Rule):
    def allows(self, value: Any) -> bool:
        return isinstance(value, (bool, np.bool_))

    def __str__(self) -> str:
        return "a bool"


class _ArrayLike(Rule):
    def allows(self, value: Any) -> bool:
        return isinstance(value, (list, tuple, np.ndarray))

    def __str__(self) -> str:
        return "an array-like (list, tuple or numpy array)"


class _Callable(Rule):
    def allows(self, value: Any) -> bool:
        return callable(value)

    def __str__(self) -> str:
        return "a callable"


def _make_rule(rule: Any) -> Rule:
    """A rule object from a declaration item (see the module docstring for the vocabulary)."""
    if isinstance(rule, Rule):
        return rule
    if rule is None:
        return _Constant(None)
    if rule == "boolean":
        return _Boolean()
    if rule == "array-like":
        return _ArrayLike()
    if rule is callable:
        return _Callable()
    if isinstance(rule, type):
        return InstanceOf(rule)
    raise TypeError(f"not a parameter rule: {rule!r}")


#: The largest time limit, in seconds (about 31.7 years): every time limit that reaches a solver
#: must fit the solver's types, and the narrowest is Python's clock (``time.sleep``, lock and
#: thread waits, ``time.perf_counter() + limit`` deadlines: int64 nanoseconds, about 9.2e9 s);
#: OR-Tools' linear solvers take int64 milliseconds (``SetTimeLimit``, ``int(seconds * 1000)``:
#: ``1e308`` s is infinity there and raised ``OverflowError``), CP-SAT's
#: ``max_time_in_seconds``, PuLP's ``timeLimit`` (CBC, HiGHS) and the C extensions' deadlines
#: take doubles. ``10**9`` s fits all of them with room for ``now + limit``.
MAX_SECONDS = 10**9

#: Common rules, so the same quantity reads the same everywhere.
#: Seconds of a time limit: a number > 0 and at most :data:`MAX_SECONDS` (never inf or NaN).
POSITIVE_SECONDS = Interval(Real, 0, MAX_SECONDS, closed="right", unit="seconds")
#: A time limit that may be switched off with ``None``.
OPTIONAL_POSITIVE_SECONDS = [POSITIVE_SECONDS, None]
#: A seed of ``numpy.random.default_rng``: an int >= 0.
SEED = Interval(Integral, 0, None)
#: A seed that also reaches CP-SAT's ``random_seed`` (an int32): an int in ``[0, 2**31 - 1]``.
CPSAT_SEED = Interval(Integral, 0, 2**31 - 1)
#: A share of a time limit: a number in ``[0, 1]``.
SHARE = Interval(Real, 0, 1, closed="both")
#: Solver threads / workers: an int in ``[1, 2**31 - 1]``, the solvers' type (CP-SAT's
#: ``num_workers`` and OR-Tools' ``SetNumThreads`` take an int32; ``workers=10**30`` raised
#: ``TypeError`` / ``OverflowError`` there).
THREADS = Interval(Integral, 1, 2**31 - 1)
#: ``model_budget`` of the model-building solvers (:func:`planners.model_size.decline_reason`):
#: a factor >= 0, or ``None`` (always build).
MODEL_BUDGET = [Interval(Real, 0, None), None]


# -- checking ---------------------------------------------------------------------------------------
def describe(rules: Iterable[Any]) -> str:
    """What a parameter's list of rules allows, as the messages say it.

    >>> describe([Interval(Integral, 1, None), None])
    'an int in [1, inf) or None'
    """
    return " or ".join(str(_make_rule(r)) for r in rules)


def check_params(owner: str, constraints: Mapping[str, list[Any]], params: Mapping[str, Any]
                 ) -> None:
    """Check ``params`` (name -> value) against ``constraints`` (name -> list of rules).

    A parameter without an entry in ``constraints`` is not checked (the registry tests require an
    entry for every parameter of every registered component); an entry ``[]`` allows anything.

    Raises
    ------
    ParameterError
        The first parameter (in ``params`` order) whose value no rule of its list allows, as
        ``"{owner}: parameter '{name}' = {value!r} is not allowed; allowed: {what}"``.
    """
    for name, value in params.items():
        rules = constraints.get(name)
        if not rules:
            continue
        made = [_make_rule(r) for r in rules]
        if any(r.allows(value) for r in made):
            continue
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise ParameterError(
            f"{owner}: parameter {name!r} = {shown} is not allowed; allowed: "
            + " or ".join(str(r) for r in made)
        )


def validate_params(obj: Configurable) -> None:
    """Check every parameter of ``obj`` against its class's ``_parameter_constraints``.

    Called once by the public entry point (:meth:`planners.base.Planner.plan`,
    :meth:`scheduling.schedulers.base.Scheduler.schedule`); cost ``O(#parameters)``. An object
    whose class declares no rules (``_parameter_constraints = None``, e.g. a wrapped function) is
    not checked.

    Raises
    ------
    ParameterError
        A value its rules do not allow (see :func:`check_params`).

    Examples
    --------
    >>> from planners.cpsat import CPSat
    >>> validate_params(CPSat(mode="fast"))
    Traceback (most recent call last):
    ...
    planners.errors.ParameterError: cpsat: parameter 'mode' = 'fast' is not allowed; allowed: one of {'auto', 'minimize', 'decide'}
    """
    constraints = type(obj)._parameter_constraints
    if constraints is None:
        return
    check_params(obj.name, constraints, obj.get_params())


def param_rules(constraints: Mapping[str, list[Any]]) -> Callable[[Callable], Callable]:
    """Decorator declaring the parameter rules of a function (a graph pass ``f(graph, **params)``).

    The wrapped function checks its keyword parameters (defaults included) against
    ``constraints`` on every call, raising :class:`ParameterError` named after the function, and
    exposes the declaration as ``f._parameter_constraints``.

    >>> @param_rules({"k": [Interval(Integral, 1, None)]})
    ... def f(x, *, k=1):
    ...     return x * k
    >>> f(2, k=3)
    6
    >>> f(2, k=0)
    Traceback (most recent call last):
    ...
    planners.errors.ParameterError: f: parameter 'k' = 0 is not allowed; allowed: an int in [1, inf)
    """
    def wrap(func: Callable) -> Callable:
        sig = inspect.signature(func)
        names = [p.name for p in sig.parameters.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        missing = set(constraints) - set(names)
        if missing:
            raise TypeError(f"{func.__name__}: rules for missing parameters {sorted(missing)}")

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any):
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as e:
                raise ParameterError(f"{func.__name__}: {e}") from None
            bound.apply_defaults()
            check_params(func.__name__, constraints,
                         {k: v for k, v in bound.arguments.items() if k in constraints})
            return func(*args, **kwargs)

        checked._parameter_constraints = dict(constraints)  # type: ignore[attr-defined]
        return checked

    return wrap


# -- the configurable base class --------------------------------------------------------------------
class Configurable:
    """Keyword parameters set in ``__init__`` and stored unchanged (scikit-learn style).

    :meth:`get_params` reads them back from the constructor's signature, so a sweep can record any
    run and rebuild it from its record; planners and schedulers both derive from this class.
    A subclass declares each parameter's rules once in ``_parameter_constraints`` (module
    docstring); :func:`validate_params` checks them when the object runs.
    """

    name: str = "configurable"
    #: What the object is, for messages ("planner", "scheduler").
    _kind: str = "component"
    #: ``{parameter name: [rules]}`` (module docstring); ``None``: not declared, not checked.
    _parameter_constraints: dict[str, list[Any]] | None = None

    @classmethod
    def _param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        sig = inspect.signature(init)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]

    def get_params(self) -> dict[str, Any]:
        """The constructor's keyword parameters and their current values."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any):
        """Set parameters by name and return ``self``; values are checked when the object runs.

        Raises :class:`ParameterError` (a ``ValueError``) naming an unknown parameter."""
        names = self._param_names()
        for k, v in params.items():
            if k not in names:
                raise ParameterError(
                    f"{self._kind} {self.name!r} has no parameter {k!r}; it has {names}"
                )
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def check_names(names: Iterable[str], registered: Iterable[str], kind: str) -> list[str]:
    """``names`` as a list when every one is in ``registered``: the one check of component names
    (planners, schedulers) that the registries expose to their callers.

    ``kind`` is the singular noun used in the message ("planner", "scheduler"). Raises
    ``ValueError`` naming the unknown names and listing the registered ones, e.g.
    ``unknown planner 'x'; registered planners: ...``.
    """
    names, registered = list(names), list(registered)
    unknown = [n for n in names if n not in registered]
    if unknown:
        what = f"{kind}s " if len(unknown) > 1 else f"{kind} "
        raise ValueError(f"unknown {what}{', '.join(map(repr, unknown))}"
                         f"{did_you_mean(unknown[0], registered)}; "
                         f"registered {kind}s: {', '.join(registered)}")
    return names


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` naming the closest of ``known`` to ``name``
    (:func:`difflib.get_close_matches`, cutoff 0.6), or ``""`` when none is close.

    >>> did_you_mean("greedy_by_sise", ["naive", "greedy_by_size"])
    " (did you mean 'greedy_by_size'?)"
    """
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
