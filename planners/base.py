"""The one interface every offset planner implements.

A planner is configured by keyword parameters in ``__init__`` (stored unchanged, no work done there,
as scikit-learn estimators), declares each parameter's rules once in ``_parameter_constraints``
(:mod:`planners.params`), and is run by :meth:`Planner.plan`, which

0. checks the parameters against those rules (:class:`planners.errors.ParameterError`),
   and the problem's compiler features against the planner's ``_capabilities``
   (:class:`planners.errors.FeatureError`, one line naming the feature),
1. refuses a problem whose capacity is below the lower bound (:class:`CapacityError`),
2. times :meth:`Planner._solve` (the algorithm, the only method a new planner writes),
3. passes the offsets through the independent validator :func:`planners.validate.check_plan`,
4. returns a :class:`planners.model.Plan` with status, seconds, lower bound and parameters.

A new algorithm is one module with a subclass and one line in :mod:`planners.registry`.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from .bounds import lower_bound, pool_lower_bounds
from .errors import CapacityError, FeatureError
from .model import FEATURES, Plan, Problem, SolveResult, is_proved_optimal
from .multipool import plan_pools
from .params import Configurable, validate_params
from .placement import CAPABILITIES as _GREEDY_ENGINE_CAPABILITIES
from .validate import check_plan, plan_traffic

# ``Configurable`` lives in :mod:`planners.params`; re-exported here for older imports.
__all__ = ["Configurable", "Planner", "SolveResult", "FunctionPlanner", "pick_engine",
           "CAPABILITY_MODES", "DEFAULT_CAPABILITIES", "ENGINE_CAPABILITIES", "PROBLEM_KINDS",
           "KIND_MODES", "DEFAULT_KIND_CAPABILITIES", "kind_refusal"]

#: How a planner treats each compiler feature (:data:`planners.model.FEATURES`):
#: ``native``: its algorithm uses it; ``ignored`` (hints only): the hint is dropped, a hint is
#: a preference; ``relaxed`` (gaps only): each buffer takes its whole range over its whole
#: lifetime, so the plan is valid but may waste the gaps; the relaxed model's answers are not
#: the problem's (its ``optimal`` becomes ``feasible``, its ``infeasible`` ``timeout``, its bound
#: is kept only as ``info["relaxed_bound"]``); ``merged`` (colocations): each group is planned
#: as one buffer with gaps (:meth:`planners.model.Problem.collapse`), handled as the planner
#: handles gaps, carrying the sum of its members' traffic weights
#: (:attr:`planners.model.Problem.traffic_weights`); where the merged buffer takes more than its
#: members (:attr:`planners.model.Problem.colocations_exact` false) it is a relaxation as above
#: (``native`` colocations: the planner sees every member with its own lifetime); ``spill``
#: (pools): :func:`planners.multipool.plan_pools` assigns pools with the greedy spill policy and
#: the planner plans each pool; ``refused``: :meth:`Planner.plan` raises
#: :class:`~planners.errors.FeatureError` naming the feature.
CAPABILITY_MODES = ("native", "ignored", "relaxed", "merged", "spill", "refused")

#: What every planner does unless its class declares otherwise in ``_capabilities``.
DEFAULT_CAPABILITIES = {"pins": "refused", "hints": "ignored", "gaps": "relaxed",
                        "pools": "spill", "colocations": "merged"}

#: The capability tables of the shared placement engines, by the name a planner declares in
#: ``_engine``; each table is declared by the engine's own module (``"greedy"``:
#: :data:`planners.placement.CAPABILITIES`, what :func:`planners.placement.place_features` and
#: :func:`planners.greedy.greedy_offsets` handle). A planner built on an engine inherits what the
#: engine handles without restating it.
ENGINE_CAPABILITIES: dict[str, dict[str, str]] = {"greedy": _GREEDY_ENGINE_CAPABILITIES}

#: Kinds of problem beyond one interval problem (issue #35), each planned through its own entry
#: point: ``concurrency`` (partial-order lifetimes, :func:`planners.concurrent.plan_concurrent`),
#: ``shared_buffers`` (several problems in one arena with shared buffers,
#: :func:`planners.shared_arena.plan_shared`) and ``scratch`` (one-step per-operator
#: temporaries, :mod:`planners.scratch`, planned by :meth:`Planner.plan` as buffers).
PROBLEM_KINDS = ("concurrency", "shared_buffers", "scratch")

#: How a planner may treat each kind (:meth:`Planner.kind_capabilities`). ``concurrency``:
#: ``native``: it places over the conflict graph itself (the greedy engine over the conflict
#: edges, :func:`planners.concurrent.greedy_concurrent`; ``cpsat``: the exact conflict-graph
#: model :func:`planners.concurrent.cpsat_concurrent`); ``cover``: it plans the interval
#: cover (:meth:`planners.concurrent.ConcurrentProblem.interval_cover`, a sound reduction: every
#: plan of the cover is a plan of the concurrent problem, its optimum is not; a planner that
#: needs a capacity needs the problem's); ``refused``: one line naming planner and kind.
#: ``shared_buffers``: ``colocate``: the shared buffers become colocation groups of one combined
#: problem (:func:`planners.shared_arena.combined_problem`, exact up to how the planner treats
#: colocations, :data:`CAPABILITY_MODES`); ``hull``: each shared buffer is one buffer over the
#: hull of its uses (sound, may waste bytes); ``refused``. ``scratch``: ``native``: a scratch
#: buffer is a one-step buffer, its candidate pools handled as the planner handles ``pools``;
#: ``refused``.
KIND_MODES: dict[str, tuple[str, ...]] = {"concurrency": ("native", "cover", "refused"),
                                          "shared_buffers": ("colocate", "hull", "refused"),
                                          "scratch": ("native", "refused")}

#: What every planner does with each kind unless its class declares otherwise (in
#: ``_capabilities``, beside the compiler features).
DEFAULT_KIND_CAPABILITIES = {"concurrency": "cover", "shared_buffers": "colocate",
                             "scratch": "native"}

_KIND_WORDS = {"concurrency": "concurrency (partial-order lifetimes on several streams)",
               "shared_buffers": "shared buffers (several problems in one arena)",
               "scratch": "scratch buffers (one-step operator temporaries)"}


def kind_refusal(planner: str, kind: str, why: str = "") -> str:
    """The one-line refusal of a problem kind (:data:`PROBLEM_KINDS`) by planner ``planner``:
    ``planner 'NAME' does not plan KIND[: why]; planners that do: ...`` (the planners of the
    registry, if loaded, whose table does not refuse it)."""
    reg = sys.modules.get(f"{__package__}.registry")
    able = [k for k, c in getattr(reg, "PLANNERS", {}).items()
            if c.kind_capabilities().get(kind) != "refused" and k != planner]
    tail = f": {why}" if why else ""
    return " ".join((f"planner {planner!r} does not plan {_KIND_WORDS[kind]}{tail}; planners "
                     f"that do: {', '.join(able) or 'none'}").split())


_FEATURE_WORDS = {"pins": "fixed offsets (pins)", "hints": "offset hints", "gaps": "gaps",
                  "pools": "memory pools", "colocations": "colocations"}


def pick_engine(engine: str, engines: tuple, compiled: str, loader, module: str) -> str:
    """The engine that runs for the requested ``engine`` of a planner with a compiled core and a
    Python reference: ``compiled`` (the name that planner uses for its C engine) or
    ``"python"``; ``"auto"`` is ``compiled`` when ``loader()`` returns the built module.

    ``engines``: the allowed names; ``loader``: returns the compiled module ``module`` or ``None``
    when it is not built (each planner imports its own module, so the sweep provenance sees it).

    Raises
    ------
    ValueError
        ``engine`` is not in ``engines``.
    ImportError
        ``engine == compiled`` but the module is not built (``pip install -e .`` needs a C compiler
        and the Python headers).
    """
    if engine not in engines:
        raise ValueError(f"unknown engine {engine!r}; choose from {engines}")
    if engine == "python":
        return "python"
    if loader() is None:
        if engine == compiled:
            raise ImportError(f"{module} is not built; run `pip install -e .` (needs gcc and the "
                              "Python headers) or use engine='python'")
        return "python"
    return compiled


class Planner(Configurable):
    """Base class of offset planners (see module docstring).

    Subclasses set the class attribute ``name`` (registry key) and implement ``_solve``. Parameters
    are the keyword arguments of the subclass ``__init__``; :meth:`get_params` reads them back so a
    sweep can record and reproduce any run. ``_parameter_constraints`` maps every parameter to its
    rules (:mod:`planners.params`), checked once by :meth:`plan`.
    """

    name: str = "planner"
    _kind = "planner"
    #: True for planners that answer the decision problem "does it fit ``problem.capacity``?" and
    #: need a capacity (e.g. ``exact_search``); the harness then passes the problem's capacity, or
    #: the lower bound when it has none.
    requires_capacity: bool = False

    def needs_capacity(self, problem) -> bool:
        """Whether planning ``problem`` (a :class:`planners.Problem`) needs a capacity in bytes:
        :attr:`requires_capacity` unless the planner minimises this kind of problem itself
        (e.g. ``exact_search`` on a problem with compiler features). The harness and
        ``memplan plan`` give such a problem without a capacity its lower bound."""
        return bool(self.requires_capacity)

    #: Family label used by benchmarks and plots ("greedy", "exact", "colouring", ...).
    family: str = "baseline"
    #: False for configurable engines whose default duplicates a named planner (e.g. ``greedy``);
    #: ``memplan compare`` without ``--planners`` runs the others.
    in_default_comparison: bool = True
    #: How this planner treats each compiler feature (:data:`CAPABILITY_MODES`); declared once
    #: per class like ``_parameter_constraints``, merged over :data:`DEFAULT_CAPABILITIES` (and
    #: the engine's table, see ``_engine``), and enforced only by :meth:`plan`. It may also
    #: declare a problem kind (:data:`PROBLEM_KINDS`, modes :data:`KIND_MODES`), read by
    #: :meth:`kind_capabilities`.
    _capabilities: dict[str, str] = {}
    #: The shared placement engine this planner's ``_solve`` places with, a key of
    #: :data:`ENGINE_CAPABILITIES` (``"greedy"``: :class:`planners.greedy_engine.GreedyEnginePlanner`
    #: and its ``greedy_solve``), or ``None`` (its own algorithm: the defaults apply).
    _engine: str | None = None

    @classmethod
    def capabilities(cls) -> dict[str, str]:
        """``{feature: mode}`` for every feature of :data:`planners.model.FEATURES`.

        Along the class hierarchy from :class:`Planner` down to ``cls``, each class's declared
        ``_engine`` table (:data:`ENGINE_CAPABILITIES`) and then its own ``_capabilities``
        update :data:`DEFAULT_CAPABILITIES`; so a planner declaring ``_engine = "greedy"``
        handles what the engine handles, and its own ``_capabilities`` still override that.
        Entries for a problem kind (:data:`PROBLEM_KINDS`) in ``_capabilities`` are checked here
        but returned by :meth:`kind_capabilities`, not here.

        Raises
        ------
        ValueError
            A class names an unknown engine, a feature not in :data:`planners.model.FEATURES`,
            or a mode not in :data:`CAPABILITY_MODES` (a typo would otherwise be a silent
            default).
        """
        out = dict(DEFAULT_CAPABILITIES)
        for klass in reversed(cls.__mro__):
            engine = vars(klass).get("_engine")
            if engine is not None:
                if engine not in ENGINE_CAPABILITIES:
                    raise ValueError(f"{klass.__name__}: unknown _engine {engine!r}; engines: "
                                     f"{', '.join(ENGINE_CAPABILITIES)}")
                out.update(ENGINE_CAPABILITIES[engine])
            out.update(vars(klass).get("_capabilities") or {})
        kinds = {f: out.pop(f) for f in PROBLEM_KINDS if f in out}
        bad = {f: m for f, m in out.items() if f not in FEATURES or m not in CAPABILITY_MODES}
        bad.update({f: m for f, m in kinds.items() if m not in KIND_MODES[f]})
        if bad:
            raise ValueError(f"{cls.__name__}: capabilities {bad} name a feature not in "
                             f"{FEATURES} or a mode not in {CAPABILITY_MODES} (kinds "
                             f"{PROBLEM_KINDS}: {KIND_MODES})")
        return out

    @classmethod
    def kind_capabilities(cls) -> dict[str, str]:
        """``{kind: mode}`` for every problem kind of :data:`PROBLEM_KINDS` (modes:
        :data:`KIND_MODES`): :data:`DEFAULT_KIND_CAPABILITIES` updated along the class hierarchy
        by each class's ``_capabilities`` entries for a kind (declared beside its compiler
        features). Read by :func:`planners.concurrent.plan_concurrent` and
        :func:`planners.shared_arena.plan_shared`, shown by ``memplan list``.

        Raises
        ------
        ValueError
            A class declares a mode not in :data:`KIND_MODES` for a kind.
        """
        cls.capabilities()  # validates every declared entry, kinds included
        out = dict(DEFAULT_KIND_CAPABILITIES)
        for klass in reversed(cls.__mro__):
            own = vars(klass).get("_capabilities") or {}
            out.update({k: m for k, m in own.items() if k in PROBLEM_KINDS})
        return out

    def _check_features(self, problem: Problem) -> dict[str, str]:
        """The capabilities, after refusing a feature of ``problem`` this planner does not
        handle (:class:`FeatureError`, one line)."""
        caps = self.capabilities()
        for f in FEATURES:
            if f in problem.features and caps.get(f) == "refused":
                who = ""
                if f == "pins":
                    i = int(np.flatnonzero(problem.pins >= 0)[0])
                    who = f" (buffer {problem.ids[i]!r} is fixed at offset {int(problem.pins[i])})"
                # the registry, if loaded (it imports every planner; importing it here would
                # make every planner depend on all the others); only for this message
                reg = sys.modules.get(f"{__package__}.registry")
                able = [k for k, c in getattr(reg, "PLANNERS", {}).items()
                        if c.capabilities().get(f) != "refused"]
                raise FeatureError(
                    f"planner {self.name!r} does not handle {_FEATURE_WORDS[f]}{who} in problem "
                    f"{problem.name!r}; planners that do: {', '.join(able)}"
                )
        return caps

    # -- running --------------------------------------------------------------------------------
    def plan(self, problem: Problem) -> Plan:
        """Plan ``problem`` and return a validated :class:`Plan`.

        A problem with alias groups (``Problem(aliases=...)``) is planned through
        :meth:`Problem.collapse`: ``_solve`` sees one buffer per group (lifetime the hull of the
        members', size covering every member's extent), and each member's offset is its group's
        offset plus its accumulated delta (bytes). So every planner honours aliases unchanged.

        Compiler features (:attr:`Problem.features`) are handled here once, by the planner's
        declared :meth:`capabilities` (:data:`CAPABILITY_MODES`): a ``refused`` feature raises
        :class:`FeatureError`; colocation groups are merged by :meth:`Problem.collapse` (a planner
        with ``colocations: native`` gets the members with their own lifetimes and returns one
        offset per member, the same for a group, unless its pools are spilled); hints and
        gaps the planner does not use are dropped (:meth:`Problem.without`); pools the planner
        does not assign go through
        :func:`planners.multipool.plan_pools`. A pool whose arena exceeds its capacity gives
        the status ``over_capacity`` (the layout itself is validated without the pools'
        capacities, as a single arena is).

        Relaxations: with its gaps taken as live, or with a colocation group merged into a
        buffer that takes more than its members at some step (a window above a hole,
        :attr:`Problem.colocations_exact`), the planned problem is a relaxation: its plans are
        plans of ``problem``, but its optimum, bound and infeasibility are not. Then
        ``best_bound`` is the problem's lower bound (max live bytes, bytes), the solver's bound
        is kept as ``info["relaxed_bound"]``, a claimed ``optimal`` becomes ``feasible`` and a
        claimed ``infeasible`` becomes ``timeout`` (no plan, nothing proved), the claim kept in
        ``info["solver_claim"]``; ``info["relaxed"]`` lists what was relaxed.

        Traffic (problems with pools): ``info["traffic_cost"]`` is counted from the plan by
        :func:`planners.validate.plan_traffic` (every member of every colocation group, its own
        lifetime in steps times its bytes times its pool's cost); a method's own different
        count is kept as ``info["solver_traffic_cost"]`` and its ``optimal`` becomes
        ``feasible`` (it did not optimise the problem's objective).

        Status: one rule for ``optimal`` (:func:`planners.model.is_proved_optimal`): an arena
        equal to the best proved bound is promoted to ``optimal`` (the method's word kept in
        ``info["solver_claim"]``), and a method's ``optimal`` above it becomes ``feasible``. With
        pools only the second half applies: the objective is the traffic cost first and the
        total arena second (:mod:`planners.feature_cpsat`), so an arena at the bound does not
        prove it; ``optimal`` then needs the method's own proof (CP-SAT's ``OPTIMAL``) and an
        arena at the bound, and a heuristic at the bound keeps its status.

        Raises
        ------
        ParameterError
            A parameter value the class's ``_parameter_constraints`` do not allow
            (:func:`planners.params.validate_params`; checked here, once, before any work).
        CapacityError
            ``problem.capacity`` is below the lower bound (no plan can fit), or a pool's capacity
            is below what its forced buffers need (:func:`planners.bounds.pool_lower_bounds`).
        FeatureError
            The problem uses a feature this planner refuses (one line naming it).
        InvalidPlanError
            The algorithm produced an invalid layout (a bug in the planner, never silenced).
        TypeError
            ``problem`` is not a :class:`Problem`.
        """
        validate_params(self)
        if not isinstance(problem, Problem):
            raise TypeError(
                f"{self.name}: plan() needs a planners.Problem, got {type(problem).__name__}"
            )
        feats = problem.features
        caps = self._check_features(problem) if feats else None
        lb = lower_bound(problem)
        if problem.capacity is not None and lb > problem.capacity:
            raise CapacityError(
                f"problem {problem.name!r}: capacity {problem.capacity} bytes is below the lower "
                f"bound {lb} bytes (max live bytes), so no plan fits"
            )
        if problem.pools:
            for q in problem.pools:
                b = pool_lower_bounds(problem)[q.name]
                if q.capacity is not None and b > q.capacity:
                    raise CapacityError(
                        f"problem {problem.name!r}: pool {q.name!r} has capacity {q.capacity} "
                        f"bytes, below the {b} bytes its forced buffers need (max live of the "
                        f"buffers that can go nowhere else, and pinned tops), so no plan fits"
                    )
        # Alias and colocation groups: plan one buffer per group, then expand. Without them
        # ``target`` is ``problem`` itself and nothing else changes. A planner with native
        # colocations gets the members as they are (one offset per member), unless its pools go
        # through the spill policy, which assigns pools to whole buffers (then merged).
        native_coloc = bool(problem.colocations) and caps["colocations"] == "native" and not (
            problem.pools and caps["pools"] != "native")
        grouped = problem.aliases or (problem.colocations and not native_coloc)
        target, group, delta = problem.collapse() if grouped else (problem, None, None)
        relaxed = []
        if feats:
            relaxed = [f for f in ("hints", "gaps") if f in target.features and caps[f] != "native"]
            if relaxed:
                target = target.without(*relaxed)
        # The target is a relaxation of the problem when its gaps are taken as live, or when a
        # merged colocation group takes more than its members do at some step (a window above a
        # hole: Problem.colocations_exact). Its plans are plans of the problem, but its
        # optimum, bound and infeasibility are not the problem's (reported below as such).
        loose_merge = bool(problem.colocations) and not native_coloc and \
            not problem.colocations_exact
        relaxation = "gaps" in relaxed or loose_merge
        t0 = time.perf_counter()
        if target.pools and caps["pools"] != "native":
            res = plan_pools(self, target)
        else:
            res = self._solve(target)
        seconds = time.perf_counter() - t0
        status = res.status
        pools = None
        if problem.pools:
            pools = (np.asarray(res.pools, np.int64) if res.pools is not None
                     else np.zeros(target.n, np.int64))
            if group is not None:
                pools = pools[group]
        if res.offsets is None:
            offsets = np.zeros(problem.n, np.int64)
            if status not in ("infeasible", "timeout", "skipped"):
                raise RuntimeError(f"planner {self.name!r} returned no offsets with status {status}")
        else:
            try:
                offsets = np.asarray(res.offsets, dtype=np.int64)
            except OverflowError:  # an offset beyond int64: the validator names it
                check_plan(target, res.offsets, pools=None if pools is None else res.pools,
                           pool_capacities=False)
                raise
            if group is not None:
                if offsets.shape != (target.n,):
                    raise RuntimeError(
                        f"planner {self.name!r} returned {offsets.shape} offsets for the "
                        f"{target.n} alias groups of problem {problem.name!r}"
                    )
                offsets = offsets[group] + delta
            check_plan(problem, offsets, pools=pools, pool_capacities=False)
        plan = Plan(
            problem=problem,
            offsets=offsets,
            planner=self.name,
            status=status,
            seconds=seconds,
            lower_bound=lb,
            # a planner's proved bound (a stronger lower bound, or capacity + 1 when proved
            # infeasible) is kept; never below max live bytes. A relaxation's bound is not a
            # bound of the problem: then max live bytes of the problem only.
            best_bound=(max(lb, int(res.best_bound))
                        if res.best_bound is not None and not relaxation else lb),
            params=self.get_params(),
            info=dict(res.info),
            pools=pools,
        )
        if relaxed:
            plan.info["relaxed"] = relaxed
        if loose_merge:
            plan.info["relaxed"] = [*relaxed, "colocations"]
        if relaxation:
            what = ("with the gaps taken as live" if "gaps" in relaxed else
                    "with each colocation group merged into the hull of its members' ranges")
            if res.best_bound is not None:
                plan.info["relaxed_bound"] = int(res.best_bound)
            if plan.status in ("optimal", "infeasible"):
                # an optimum of the relaxation may be beaten, and its infeasibility proves
                # nothing (a plan may use the gaps): no plan and nothing proved is "timeout"
                plan.info["solver_claim"] = f"{plan.status} ({what})"
                plan.status = "feasible" if plan.status == "optimal" else "timeout"
        if problem.pools and res.offsets is not None:
            # the traffic counted from the plan by the validator (every member of every
            # colocation group), never the model's own count; an "optimal" whose model counted
            # another traffic did not optimise the problem's objective
            real = plan_traffic(problem, pools)
            said = plan.info.get("traffic_cost")
            plan.info["traffic_cost"] = real
            if said is not None and int(said) != real:
                plan.info["solver_traffic_cost"] = int(said)
                if plan.status == "optimal":
                    plan.info["solver_claim"] = "optimal (at its model's traffic cost)"
                    plan.status = "feasible"
        if res.offsets is not None:
            over = problem.capacity is not None and plan.arena_size > problem.capacity
            if problem.pools:
                over = any(q.capacity is not None and plan.arenas[q.name] > q.capacity
                           for q in problem.pools)
            if over:
                plan.status = "over_capacity"
            elif plan.status in ("heuristic", "feasible") and not problem.pools and (
                    is_proved_optimal(plan.arena_size, plan.best_bound)):
                # one rule for "optimal" (planners.model.is_proved_optimal): an arena equal to a
                # proved lower bound is optimal whoever found it; what the method claimed is kept.
                # Of a relaxation (gaps taken as live, a loose merge) best_bound is max live
                # bytes of the real problem (lb), the only bound that proves anything. Pools:
                # arenas per pool, no single bound, so their statuses stay as the method gave.
                plan.info["solver_claim"] = plan.status
                plan.status = "optimal"
            elif plan.status == "optimal" and not is_proved_optimal(plan.arena_size,
                                                                    plan.best_bound):
                # "optimal" means the arena is proved minimal (arena == best proved bound). A
                # decision answer "fits the capacity" (exact_search, cpsat mode="decide"), or an
                # optimum of a restricted model (ilp_blocks' shared blocks), is a feasible plan.
                plan.info["solver_claim"] = "optimal"
                plan.status = "feasible"
        return plan

    def _solve(self, problem: Problem) -> SolveResult:  # pragma: no cover - abstract
        raise NotImplementedError


class FunctionPlanner(Planner):
    """Wrap a plain function ``func(problem, **params) -> offsets`` as a planner.

    This is how a researcher plugs an algorithm in from a notebook without touching the registry:
    ``planners.plan(problem, my_function)``. The offsets are validated like any planner's. Its
    parameters are the function's, so the wrapper declares no rules (``_parameter_constraints =
    None``); a function decorated with :func:`planners.params.param_rules` checks its own.
    """

    _parameter_constraints = None

    def __init__(self, func, name: str | None = None, **params: Any) -> None:
        self.func = func
        self.name = name or getattr(func, "__name__", "function")
        self.params = params

    def get_params(self) -> dict[str, Any]:
        """The keyword parameters passed to the wrapped function."""
        return dict(self.params)

    def _solve(self, problem: Problem) -> SolveResult:
        out = self.func(problem, **self.params)
        if isinstance(out, SolveResult):
            return out
        return SolveResult(out, "heuristic")  # converted (and range-checked) by Planner.plan
