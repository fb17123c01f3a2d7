"""One arena shared by several problems: the methods of a program, the models of one pool.

ExecuTorch plans the methods of a program into one arena and keeps a KV cache at one place across
prefill and decode; seed 001 describes several models sharing one pool. A
:class:`SharedArenaProblem` is several named :class:`planners.model.Problem` (each its own
schedule, steps counted from 0) and the ids of their **shared buffers**: a shared buffer has one
offset (and pool) in every problem that names it; every other buffer belongs to its problem only,
so the problems reuse the same bytes for their own buffers. The arena is the maximum over the
problems of their arenas (bytes).

Reduction (:func:`combined_problem`)
------------------------------------
The problems' timelines are concatenated: problem ``k`` (in the given order) keeps its steps
shifted by ``T_k = H_0 + ... + H_(k-1)``, ``H_j`` the horizon (one past the last live step) of
problem ``j``. Each buffer ``b`` of problem ``k`` becomes ``p<k>/<b.id>`` with lifetime
``[start + T_k, end + T_k)`` (half-open, steps), its size, effective alignment, pin, hint, gaps and
candidate pools. Two modes tie a shared buffer's occurrences together:

``"colocate"`` (exact)
    The occurrences of a shared buffer form one colocation group (:class:`Problem`,
    ``colocations=``): one offset and pool, each member taking its bytes over its own lifetime.
``"hull"`` (the simple scheme)
    A shared buffer is one buffer ``shared/<id>`` live from its first occurrence to its last
    on the concatenated axis (the hull), without gaps.

Proof that a valid plan of the combined problem restricts to a valid shared plan. Let ``x_k(b)``
be the combined offset of ``p<k>/<b>`` (colocate) or ``shared/<b>`` (hull, for a shared ``b``).
Take two buffers ``a, b`` of problem ``k`` live at a common step ``t`` of that problem, i.e. whose
occupied rectangles meet at ``t``. On the combined axis the two rectangles of ``a`` and ``b`` at
step ``t + T_k`` are the same (colocate: each member is its occurrence shifted by ``T_k``; hull:
the hull contains the shifted occurrence and takes the whole range, more than it), so the
validity of the combined plan gives disjoint addresses, which is validity of the restriction in
problem ``k``. Alignment, pins, candidate pools and pool capacities are each a per-buffer rule
carried over unchanged; the capacity of the combined problem is the smallest capacity given, so
each restriction fits its own. A shared buffer's offset is the offset of its group (colocate) or
of its one buffer (hull) in every problem: the offsets are equal by construction.

Conversely (colocate only) a valid shared plan gives a valid combined plan with the same
offsets: problems occupy disjoint step ranges ``[T_k, T_k + H_k)``, so two combined buffers of
different problems never share a step, and within a problem the rectangles are unchanged. The
two sets of plans are therefore the same, and the combined arena (the highest ``offset + size``
over all buffers) is the maximum over problems of the restricted arenas: **the colocate mode is
exact**; an exact planner's optimum on the combined problem is the optimum shared arena. (A
planner that merges colocation groups, :meth:`Problem.collapse`, and then treats the gaps as live
plans a relaxation; its plan is still valid, and :meth:`planners.base.Planner.plan` reports the
relaxation.) The hull mode reserves a shared buffer's bytes over the whole span between its
first and last occurrence, also in a problem that does not name it and in the steps of a problem
after the buffer's last use there: it can waste bytes (its arena is ``>=`` the optimum; it is the
form for planners that refuse colocations or gaps). :func:`refine_pinned` recovers bytes
after either: it pins the shared buffers where a plan put them and re-plans each problem alone
(for planners that handle pins), keeping per problem the better plan.

Reported arena: :attr:`SharedPlan.arena`, the maximum over problems of each restricted plan's
:attr:`planners.model.Plan.arena_size` (bytes), which equals the combined plan's arena.

Alias groups and colocation groups inside the given problems are not supported (a shared buffer
is a colocation group of the combined problem, and alias groups combine with no feature):
:class:`~planners.errors.ProblemError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .bounds import lower_bound
from .errors import InvalidPlanError, ProblemError
from .io import atomic_write, parse_pools, pools_text, read_minimalloc_csv, write_minimalloc_csv
from .model import Buffer, Plan, Problem, is_proved_optimal
from .validate import check_plan

__all__ = ["SharedArenaProblem", "SharedPlan", "MODES", "combined_problem", "plan_shared",
           "refine_pinned", "pinned_problem", "check_shared_plan", "read_shared", "write_shared", "kv_cache_example"]

#: The reductions of :func:`combined_problem` (module docstring).
MODES = ("colocate", "hull")

#: ``format`` field of the JSON manifest (:func:`write_shared`).
FORMAT = "memplan-shared-arena"


def _member(k: int, bid: str) -> str:
    """Combined id of buffer ``bid`` of problem ``k``."""
    return f"p{k}/{bid}"


@dataclass(frozen=True)
class SharedArenaProblem:
    """Several named problems planned into one arena, with shared buffers.

    Parameters
    ----------
    problems : sequence of Problem
        The problems in order (the order of the concatenated timeline); each problem's ``name``
        is its name here (non-empty, distinct). Lifetimes are half-open ``[start, end)`` in each
        problem's own schedule steps; sizes, alignments and offsets in bytes.
    shared : sequence of str
        Ids of the shared buffers. Each must be a buffer of at least one problem; in every
        problem that names it, it has the same size (bytes), effective alignment (bytes), pin,
        and candidate pools. A buffer id not listed is private to each problem naming it (two
        problems may use one id for different buffers).

    Raises
    ------
    ProblemError
        No problems, an empty or repeated problem name, a repeated shared id, a shared id no
        problem names or whose occurrences differ in size, alignment, pin or candidate pools,
        problems whose pools differ, a problem with alias or colocation groups.

    Examples
    --------
    >>> sp = kv_cache_example()
    >>> [p.name for p in sp.problems], sp.shared
    (['prefill', 'decode'], ('kv',))
    """

    problems: tuple
    shared: tuple = ()

    def __post_init__(self) -> None:
        probs = tuple(self.problems)
        if not probs:
            raise ProblemError("a shared-arena problem needs at least one problem")
        names = [p.name for p in probs]
        for p in probs:
            if not isinstance(p, Problem):
                raise ProblemError(f"shared arena: {p!r} is not a planners.Problem")
            if not p.name:
                raise ProblemError("shared arena: every problem needs a non-empty name")
            if p.aliases or p.colocations:
                raise ProblemError(f"shared arena: problem {p.name!r} has alias or colocation "
                                   f"groups, which a shared arena does not support")
            if tuple(p.pools) != tuple(probs[0].pools):
                raise ProblemError(f"shared arena: problem {p.name!r} has pools {p.pools} but "
                                   f"{probs[0].name!r} has {probs[0].pools}; one arena has one "
                                   f"set of pools")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ProblemError(f"shared arena: repeated problem name(s) {dup}")
        shared = (self.shared,) if isinstance(self.shared, str) else tuple(self.shared)
        if len(set(shared)) != len(shared):
            raise ProblemError(f"shared arena: repeated shared id(s) in {list(shared)}")
        for sid in shared:
            seen = None
            for p in probs:
                i = p.index.get(sid)
                if i is None:
                    continue
                b = p.buffers[i]
                sig = (int(p.sizes[i]), int(p.alignments[i]), int(p.pins[i]),
                       tuple(sorted(b.pools)))
                if seen is None:
                    seen = (p.name, sig)
                elif sig != seen[1]:
                    raise ProblemError(
                        f"shared buffer {sid!r}: (size, alignment, pin, pools) = {sig} in problem "
                        f"{p.name!r} but {seen[1]} in {seen[0]!r} (bytes; pin -1: none); a "
                        f"shared buffer is one buffer")
            if seen is None:
                raise ProblemError(f"shared buffer {sid!r} is a buffer of no problem "
                                   f"({', '.join(names)})")
        object.__setattr__(self, "problems", probs)
        object.__setattr__(self, "shared", shared)

    @property
    def names(self) -> list[str]:
        """The problems' names, in order."""
        return [p.name for p in self.problems]

    def holders(self, sid: str) -> list[int]:
        """Indices of the problems that name shared buffer ``sid``."""
        return [k for k, p in enumerate(self.problems) if sid in p.index]

    def lower_bound(self) -> int:
        """A lower bound on the shared arena (bytes): the maximum over problems of
        :func:`planners.bounds.lower_bound`."""
        return max(lower_bound(p) for p in self.problems)


def combined_problem(sp: SharedArenaProblem, mode: str = "colocate") -> Problem:
    """The one problem whose plans are the shared plans of ``sp`` (module docstring).

    Parameters
    ----------
    sp : SharedArenaProblem
    mode : {"colocate", "hull"}
        ``colocate``: exact (a shared buffer's occurrences are a colocation group); ``hull``: a
        shared buffer is one buffer over the hull of its occurrences (sound, may waste bytes).

    Returns
    -------
    Problem
        Named ``"+".join(names)``; problem ``k``'s buffers are ``p<k>/<id>`` on steps shifted
        by the horizons of the problems before it (hull: shared buffers are ``shared/<id>``);
        default alignment 1 (every buffer carries its effective alignment); capacity the
        smallest of the problems' capacities (``None`` if none has one); the problems' pools.

    Raises
    ------
    ValueError
        An unknown ``mode``.

    Runs in ``O(total buffers)``.
    """
    if mode not in MODES:
        raise ValueError(f"shared arena: unknown mode {mode!r}; modes: {', '.join(MODES)}")
    shared = set(sp.shared)
    bufs: list[Buffer] = []
    groups: dict[str, list[str]] = {s: [] for s in sp.shared}
    hull: dict[str, list] = {}
    t0 = 0
    for k, p in enumerate(sp.problems):
        pins, hints = p.pins.tolist(), p.hints.tolist()
        for i, b in enumerate(p.buffers):
            s, e = int(p.starts[i]) + t0, int(p.ends[i]) + t0
            align = int(p.alignments[i])
            pin = None if pins[i] < 0 else pins[i]
            hint = None if hints[i] < 0 else hints[i]
            if b.id in shared and mode == "hull":
                h = hull.get(b.id)
                if h is None:
                    hull[b.id] = [len(bufs), s, e]
                    bufs.append(None)  # placeholder, filled below
                else:
                    h[1], h[2] = min(h[1], s), max(h[2], e)
                continue
            gaps = tuple((g.start + t0, g.end + t0, g.window) for g in b.gaps)
            mid = _member(k, b.id)
            bufs.append(Buffer(mid, s, e, int(p.sizes[i]), align, b.kind, pin, hint, gaps,
                               tuple(b.pools)))
            if b.id in shared:
                groups[b.id].append(mid)
        t0 += p.horizon
    for sid, (j, s, e) in hull.items():
        k = sp.holders(sid)[0]
        p = sp.problems[k]
        i = p.index[sid]
        pin = int(p.pins[i])
        bufs[j] = Buffer(f"shared/{sid}", s, e, int(p.sizes[i]), int(p.alignments[i]),
                         # a hull spans several steps: a scratch buffer's hull is no scratch
                         "activation" if p.buffers[i].kind == "scratch" else p.buffers[i].kind,
                         None if pin < 0 else pin, None, (),
                         tuple(p.buffers[i].pools))
    caps = [p.capacity for p in sp.problems if p.capacity is not None]
    pools = sp.problems[0].pools or None
    colocations = [g for g in groups.values() if len(g) > 1] if mode == "colocate" else None
    return Problem(bufs, capacity=None if pools else (min(caps) if caps else None), alignment=1,
                   name="+".join(sp.names), pools=pools, colocations=colocations or None)


@dataclass
class SharedPlan:
    """The result of :func:`plan_shared`.

    Attributes
    ----------
    problem : SharedArenaProblem
    plans : dict of str to Plan
        One validated plan per problem (by name), the restriction of :attr:`combined`;
        offsets in bytes, in that problem's order.
    combined : Plan
        The plan of :func:`combined_problem` the planner returned.
    mode : str
        The reduction used (:data:`MODES`).
    status : str
        ``optimal`` when the arena equals :meth:`SharedArenaProblem.lower_bound` (problems
        without pools) or the planner proved the colocate reduction optimal (exact reduction);
        ``feasible`` for a hull plan the planner proved optimal for the hull problem (a
        restricted model); ``over_capacity`` when the layout exceeds the capacity (a
        heuristic that did not fit; each problem's plan then has that status too); otherwise
        the combined plan's status.
    info : dict
        ``lower_bound`` (bytes), ``combined_status``, ``planner``.
    """

    problem: SharedArenaProblem
    plans: dict
    combined: Plan
    mode: str
    status: str
    info: dict = field(default_factory=dict)

    @property
    def arena(self) -> int:
        """The shared arena (bytes): the maximum over problems of their plans' ``arena_size``
        (with pools, each problem's sum of its pools' arenas)."""
        return max(p.arena_size for p in self.plans.values())

    def shared_offsets(self) -> dict:
        """``{shared id: offset}`` (bytes; with pools ``(pool name, offset)``), read from the
        first problem naming each."""
        out = {}
        for sid in self.problem.shared:
            k = self.problem.holders(sid)[0]
            p = self.problem.problems[k]
            plan = self.plans[p.name]
            i = p.index[sid]
            off = int(plan.offsets[i])
            out[sid] = off if plan.pools is None else (p.pools[int(plan.pools[i])].name, off)
        return out


def plan_shared(sp: SharedArenaProblem, planner="greedy_by_size", mode: str | None = None,
                **params) -> SharedPlan:
    """Plan every problem of ``sp`` into one arena with ``planner`` (module docstring).

    Parameters
    ----------
    sp : SharedArenaProblem
    planner : str, Planner or class
        Anything :func:`planners.registry.get_planner` accepts; ``params`` go to it.
    mode : {"colocate", "hull"} or None
        The reduction (:func:`combined_problem`). ``colocate`` is exact; ``hull`` is for
        planners that do not handle colocations. ``None`` (default): the planner's declared
        ``shared_buffers`` capability (:meth:`planners.base.Planner.kind_capabilities`;
        ``colocate`` for every registered planner). Either reduction is sound for any planner,
        so an explicit mode overrides the table, except a ``refused`` entry.

    Returns
    -------
    SharedPlan
        Every per-problem plan checked by :func:`check_shared_plan` before return.

    Raises
    ------
    FeatureError
        The planner's table refuses ``shared_buffers`` (one line naming the planner and the
        feature, :func:`planners.base.kind_refusal`), or it refuses a feature of the combined
        problem (one line, from :meth:`planners.base.Planner.plan`).
    ValueError
        An unknown ``mode``.
    InfeasibleError
        The planner returned no plan (status ``infeasible``, ``timeout`` or ``skipped``; the
        message names the status and the reason), or the capacity is below the lower bound.
    InvalidPlanError
        A restricted plan is invalid or a shared buffer has two offsets (a bug, never
        silenced).

    Notes
    -----
    A planner that needs a capacity (``exact_search`` on a problem without compiler features,
    e.g. a hull reduction) and a combined problem without one is given the combined lower bound
    as capacity, as ``memplan plan`` does; if nothing fits there it raises
    :class:`~planners.errors.InfeasibleError` saying so (``minimize`` finds the smallest).
    """
    from .base import kind_refusal
    from .errors import FeatureError, InfeasibleError
    from .registry import get_planner

    pl = get_planner(planner, **params)
    declared = type(pl).kind_capabilities()["shared_buffers"]
    if declared == "refused":
        raise FeatureError(kind_refusal(pl.name, "shared_buffers", f"problem "
                                        f"{'+'.join(sp.names)!r}"))
    mode = declared if mode is None else mode
    combined = combined_problem(sp, mode)
    asked = combined
    if pl.needs_capacity(combined) and combined.capacity is None and not combined.pools:
        asked = combined.with_capacity(lower_bound(combined))
    cplan = pl.plan(asked)
    if cplan.status in ("infeasible", "timeout", "skipped"):
        asked_for = "" if asked is combined else (
            f"; it decides whether the problem fits a capacity and, none given, was asked for "
            f"the lower bound {asked.capacity} bytes (planner 'minimize' finds the smallest)")
        raise InfeasibleError(f"shared arena {combined.name!r}: planner {pl.name!r} returned no "
                              f"plan (status {cplan.status}: {cplan.info.get('reason', '')})"
                              f"{asked_for}")
    index = combined.index
    over = cplan.status == "over_capacity"
    plans = {}
    lb = sp.lower_bound()
    for k, p in enumerate(sp.problems):
        rows = [index[f"shared/{b}"] if mode == "hull" and b in sp.shared else index[_member(k, b)]
                for b in p.ids]
        off = cplan.offsets[rows]
        pools = None if cplan.pools is None else cplan.pools[rows]
        plb = lower_bound(p)
        arena = Plan(p, off, cplan.planner, "heuristic", pools=pools).arena_size
        if over:
            st = "over_capacity"
        elif is_proved_optimal(arena, plb) and not p.pools:
            st = "optimal"
        else:
            st = "heuristic" if cplan.status == "heuristic" else "feasible"
        plans[p.name] = Plan(p, off, cplan.planner, st, seconds=cplan.seconds, lower_bound=plb,
                             best_bound=plb, params=dict(cplan.params),
                             info={"shared_arena": combined.name, "mode": mode}, pools=pools)
    check_shared_plan(sp, plans, capacities=not over)
    arena = max(q.arena_size for q in plans.values())
    if over:
        status = "over_capacity"
    elif (is_proved_optimal(arena, lb) and not combined.pools) or (
            mode == "colocate" and cplan.status == "optimal"):
        status = "optimal"
    elif cplan.status == "optimal":
        status = "feasible"
    else:
        status = cplan.status
    return SharedPlan(sp, plans, cplan, mode, status,
                      {"lower_bound": lb, "combined_status": cplan.status, "planner": cplan.planner})


def pinned_problem(p: Problem, pins: Mapping) -> Problem:
    """A copy of ``p`` with the buffers of ``pins`` fixed: ``{id: offset}`` (bytes) or, with
    pools, ``{id: (pool name, offset)}`` (the buffer's candidate pools then that one pool).
    Raises :class:`~planners.errors.ProblemError` as :class:`planners.model.Problem` does."""
    pin_of, hints = p.pins.tolist(), p.hints.tolist()
    bufs = []
    for i, b in enumerate(p.buffers):
        pin, pools = (None if pin_of[i] < 0 else pin_of[i]), tuple(b.pools)
        if b.id in pins:
            pin = pins[b.id]
            if isinstance(pin, tuple):
                pools, pin = (pin[0],), pin[1]
        bufs.append(Buffer(b.id, b.start, b.end, b.size, int(p.alignments[i]), b.kind, pin,
                           None if hints[i] < 0 else hints[i], b.gaps, pools))
    return Problem(bufs, capacity=p.capacity, alignment=p.alignment, name=p.name,
                   pools=p.pools or None)


def refine_pinned(result: SharedPlan, planner=None, **params) -> SharedPlan:
    """Re-plan each problem of ``result`` alone with its shared buffers pinned at their offsets
    (and pools), keeping per problem the smaller of that plan and the restriction.

    The shared offsets are unchanged, so the mixed plans are a valid shared plan; its arena
    (bytes, the max over problems) is ``<=`` ``result.arena``. A plan of the hull reduction
    gets back the bytes its hulls reserve where a shared buffer is dead. Each re-plan is
    validated by :meth:`planners.base.Planner.plan` and the result by
    :func:`check_shared_plan`.

    Parameters
    ----------
    result : SharedPlan
    planner : str, Planner, class or None
        The planner of the re-plans (default: the one that made ``result``); it must handle
        pins.

    Raises
    ------
    FeatureError
        The planner refuses pins (one line).
    InvalidPlanError
        As :func:`check_shared_plan`.
    """
    from .registry import get_planner

    pl = get_planner(result.info["planner"] if planner is None else planner, **params)
    sp = result.problem
    pins = result.shared_offsets()
    plans = dict(result.plans)
    improved = []
    for p in sp.problems:
        mine = {b: o for b, o in pins.items() if b in p.index}
        if not mine:
            continue
        pp = pinned_problem(p, mine)
        if pl.needs_capacity(pp) and pp.capacity is None and not pp.pools:
            pp = pp.with_capacity(plans[p.name].arena_size)
        q = pl.plan(pp)
        if q.status in ("infeasible", "timeout", "skipped", "over_capacity"):
            continue
        if q.arena_size < plans[p.name].arena_size:
            plb = plans[p.name].lower_bound
            st = "optimal" if is_proved_optimal(q.arena_size, plb) and not p.pools else (
                "heuristic" if q.status == "heuristic" else "feasible")
            plans[p.name] = Plan(p, q.offsets, q.planner, st, seconds=q.seconds,
                                 lower_bound=plb, best_bound=plb, params=dict(q.params),
                                 info={"pinned_replan": True}, pools=q.pools)
            improved.append(p.name)
    check_shared_plan(sp, plans)
    arena = max(q.arena_size for q in plans.values())
    status = "optimal" if result.status == "optimal" or (
        is_proved_optimal(arena, result.info["lower_bound"]) and not sp.problems[0].pools) \
        else result.status
    return SharedPlan(sp, plans, result.combined, result.mode, status,
                      {**result.info, "refined": improved})


def check_shared_plan(sp: SharedArenaProblem, plans, capacities: bool = True) -> None:
    """Raise :class:`~planners.errors.InvalidPlanError` unless ``plans`` is a valid shared plan.

    Each problem's plan must be valid (:func:`planners.validate.check_plan` with the problem's
    capacity and pools), and each shared buffer must have the same offset (bytes) and, with
    pools, the same pool in every problem that names it.

    Parameters
    ----------
    sp : SharedArenaProblem
    plans : mapping of str to Plan or to array-like of int
        Per problem name: its plan, or its offsets (bytes, problem order; only for problems
        without pools).
    capacities : bool
        Check each plan against its problem's capacity and its pools' capacities (default);
        ``False`` accepts a layout above them (a plan with the status ``over_capacity``).

    Raises
    ------
    InvalidPlanError
        A problem without a plan, an invalid plan (the validator's message, prefixed with the
        problem's name), or a shared buffer at two offsets or in two pools (naming both
        problems).
    """
    got = {}
    for p in sp.problems:
        if p.name not in plans:
            raise InvalidPlanError(f"shared arena: no plan for problem {p.name!r}")
        q = plans[p.name]
        off, pools = (q.offsets, q.pools) if isinstance(q, Plan) else (np.asarray(q), None)
        try:
            check_plan(p, off, capacity=p.capacity if capacities else None,
                       pools=pools if p.pools else None, pool_capacities=capacities)
        except InvalidPlanError as e:
            raise InvalidPlanError(f"problem {p.name!r}: {e}") from None
        got[p.name] = (off, pools)
    for sid in sp.shared:
        first = None
        for p in sp.problems:
            i = p.index.get(sid)
            if i is None:
                continue
            off, pools = got[p.name]
            where = (int(off[i]), None if pools is None else int(pools[i]))
            if first is None:
                first = (p.name, where)
            elif where != first[1]:
                raise InvalidPlanError(
                    f"shared buffer {sid!r}: (offset, pool) {where} in problem {p.name!r} but "
                    f"{first[1]} in {first[0]!r}; a shared buffer keeps one offset")


# -- files -------------------------------------------------------------------------------------

def shared_json(sp: SharedArenaProblem, csv_names: Sequence[str]) -> str:
    """The JSON manifest text of ``sp`` whose problems are in the CSV files ``csv_names``
    (relative to the manifest): ``{"format", "version", "shared", "problems": [{"name", "csv",
    "capacity", "alignment", "pools"}]}``."""
    return json.dumps({
        "format": FORMAT, "version": 1, "shared": list(sp.shared),
        "problems": [{"name": p.name, "csv": c, "capacity": p.capacity,
                      "alignment": p.alignment, "pools": pools_text(p.pools) or None}
                     for p, c in zip(sp.problems, csv_names, strict=True)],
    }, indent=2) + "\n"


def write_shared(sp: SharedArenaProblem, path: str | Path,
                 plan: SharedPlan | None = None) -> list[Path]:
    """Write ``sp`` as a JSON manifest at ``path`` and one MiniMalloc CSV per problem beside it
    (``<stem>.<k>.csv``, :func:`planners.io.write_minimalloc_csv`: its columns, with the plan's
    offsets and pools when ``plan`` is given). Every file is written atomically
    (:func:`planners.io.atomic_write`). Returns the paths written (manifest last).

    Raises :class:`~planners.errors.OutputError` naming the path on a write error.
    """
    path = Path(path)
    names = [f"{path.stem}.{k}.csv" for k in range(len(sp.problems))]
    out = []
    for p, n in zip(sp.problems, names, strict=True):
        q = path.parent / n
        write_minimalloc_csv(p, q, None if plan is None else plan.plans[p.name])
        out.append(q)
    atomic_write(path, shared_json(sp, names))
    out.append(path)
    return out


def read_shared(path: str | Path, offsets: str = "fixed") -> SharedArenaProblem:
    """Read a shared-arena JSON manifest (:func:`write_shared`) and its CSV files.

    Each problem entry names its CSV (relative to the manifest) and may give ``capacity``
    (bytes, ``null``: none), ``alignment`` (bytes, default 1) and ``pools`` (``--pools`` text);
    the CSV is read with :func:`planners.io.read_minimalloc_csv`, whose ``offsets`` argument
    says what an ``offset`` column means (``"fixed"``: pins; ``"ignore"``: not read, to re-plan
    or check a manifest written with a plan). A manifest may instead give a problem's buffers inline as ``"buffers": [[id,
    lower, upper, size], ...]`` (half-open steps, bytes).

    Raises
    ------
    ProblemError
        Not JSON, a wrong ``format``, a missing field, or any error of the CSV reader or of
        :class:`SharedArenaProblem` (naming the file).
    FileNotFoundError
        The manifest or a CSV is missing.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ProblemError(f"{path}: not a JSON shared-arena manifest ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ProblemError(f"{path}: not a shared-arena manifest (need \"format\": \"{FORMAT}\")")
    probs = []
    for j, e in enumerate(doc.get("problems") or []):
        if not isinstance(e, dict) or "name" not in e or ("csv" in e) == ("buffers" in e):
            raise ProblemError(f"{path}: problem {j} needs a name and one of csv or buffers")
        pools = parse_pools(e.get("pools")) if e.get("pools") else None
        cap = e.get("capacity")
        if "csv" in e:
            p = read_minimalloc_csv(path.parent / e["csv"], capacity=None if pools else cap,
                                    alignment=int(e.get("alignment", 1)), name=e["name"],
                                    offsets=offsets, pools=pools)
        else:
            try:
                bufs = [Buffer(str(r[0]), r[1], r[2], r[3]) for r in e["buffers"]]
            except (TypeError, IndexError) as err:
                raise ProblemError(f"{path}: problem {e['name']!r}: a buffer must be [id, lower, "
                                   f"upper, size] ({err})") from None
            p = Problem(bufs, capacity=None if pools else cap,
                        alignment=int(e.get("alignment", 1)), name=e["name"], pools=pools)
        probs.append(p)
    try:
        return SharedArenaProblem(probs, tuple(doc.get("shared") or ()))
    except ProblemError as err:
        raise ProblemError(f"{path}: {err}") from None


def kv_cache_example(kv_bytes: int = 4096) -> SharedArenaProblem:
    """A two-method program with a KV cache shared by prefill and decode (bytes, steps).

    ``prefill`` (4 steps) writes ``kv`` (``kv_bytes``, live at steps 1-3) between activations;
    ``decode`` (3 steps) reads and updates it (live at steps 0-2). Each method's activations
    reuse the bytes the other's use.
    """
    prefill = Problem([Buffer("tokens", 0, 2, 512), Buffer("kv", 1, 4, kv_bytes),
                       Buffer("h0", 1, 3, 2048), Buffer("logits", 3, 4, 1024)], name="prefill")
    decode = Problem([Buffer("kv", 0, 3, kv_bytes), Buffer("q", 0, 2, 256),
                      Buffer("attn", 1, 3, 1024), Buffer("logits", 2, 3, 1024)], name="decode")
    return SharedArenaProblem((prefill, decode), ("kv",))

