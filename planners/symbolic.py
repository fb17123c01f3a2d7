"""Symbolic sizes: buffer sizes that are affine in named dimensions with integer ranges.

A model exported with a dynamic sequence length (LLMs, audio) has tensors of ``64*seq + 128``
bytes with ``seq in [1, 2048]``. A :class:`SymbolicProblem` is a :class:`planners.model.Problem`
whose sizes are :class:`AffineSize` expressions ``const + sum_d c_d * d`` over named dims, each
dim an integer range ``[lo, hi]`` (closed, both ends included). Lifetimes, alignments, kinds,
pins, hints, pools, aliases and colocations are those of :mod:`planners.model` (half-open
``[start, end)`` lifetimes in schedule steps; sizes and offsets in bytes).

Why one plan serves every point
-------------------------------
:func:`plan_symbolic` plans the **envelope**: every buffer at its maximum size over the box of
dims. For an affine size the maximum is at a corner, ``const + sum_d max(c_d*lo_d, c_d*hi_d)``;
when every coefficient is ``>= 0`` that is the size at the upper bounds (:meth:`SymbolicProblem.
upper`). At any point of the box buffer ``i`` occupies ``[offset_i, offset_i + size_i(point))``,
a subset of its envelope range ``[offset_i, offset_i + max_i)``; two envelope ranges of buffers
live at one step are disjoint, so their subsets are too. Offsets, alignments, pins, pools and the
arena (``max_i offset_i + max_i``, bytes) are fixed at plan time and stay valid; the bytes
actually touched at a point (:meth:`SymbolicPlan.arena_at`) may be smaller. Alias rules
(``delta + size(child) <= size(parent)``) and gap windows (``hi <= size``) are checked over the
whole box at construction, so :meth:`SymbolicProblem.at` never refuses an in-range point.

File formats (read and written here; :mod:`planners.io` refuses a symbolic CSV with a pointer
here)
----------------------------------------------------------------------------------------------
**CSV**: a MiniMalloc CSV (``id,lower,upper,size[,alignment][,kind][,offset][,hint]``, half-open
``[lower, upper)``) preceded by one comment line naming the dims::

    # dims: seq=1..2048, batch=1..8
    id,lower,upper,size
    q,0,2,64*seq+128
    k,1,3,256*batch*1+4

A ``size`` cell is an integer or an affine expression (:func:`parse_size`). Other ``#`` lines
before the header are comments.

**JSON**: ``{"format": "memplan-symbolic", "version": 1, "name": ..., "alignment": 1,
"capacity": null, "dims": {"seq": [1, 2048]}, "buffers": [{"id": "q", "lower": 0, "upper": 2,
"size": "64*seq+128"}, ...]}``; a size is an integer or an expression string; optional buffer
keys ``alignment``, ``kind``, ``offset`` (a pin) and ``hint``.

Rules (each a :class:`~planners.errors.ProblemError` naming the line or buffer and the rule):
a dim range has integers ``0 <= lo <= hi``; every name in a size is a declared dim; a size is
affine (``seq*seq`` is refused); every size is ``>= 0`` over the whole box.

Source: the interval model of :mod:`planners.model`; affine bounds over a box are the
interval-arithmetic corner rule (e.g. Moore, *Interval Analysis*, 1966).
"""

from __future__ import annotations

import csv
import io as _io
import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .errors import ProblemError
from .model import Buffer, Plan, Problem

__all__ = ["AffineSize", "parse_size", "parse_dims", "SymbolicProblem", "SymbolicPlan",
           "plan_symbolic", "sweep_dim", "SweepRow", "read_symbolic_csv", "write_symbolic_csv",
           "symbolic_csv_text", "read_symbolic_json", "symbolic_json_text", "is_symbolic_file",
           "parse_point", "JSON_FORMAT", "fit_affine_problem"]

#: The ``format`` tag of a symbolic JSON problem.
JSON_FORMAT = "memplan-symbolic"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class AffineSize:
    """An affine size in bytes: ``const + sum_d coeffs[d] * d`` over named integer dims.

    ``coeffs`` maps a dim name to a non-zero integer (zero coefficients are dropped).

    >>> s = AffineSize(128, {"seq": 64})
    >>> str(s), s.at({"seq": 10}), s.max_over({"seq": (1, 2048)})
    ('64*seq + 128', 768, 131200)
    """

    const: int = 0
    coeffs: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for k, v in self.coeffs.items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ProblemError(f"size coefficient of {k!r} must be an integer, got {v!r}")
        object.__setattr__(self, "coeffs",
                           {k: int(v) for k, v in sorted(self.coeffs.items()) if int(v) != 0})
        if isinstance(self.const, bool) or not isinstance(self.const, (int, np.integer)):
            raise ProblemError(f"size constant must be an integer, got {self.const!r}")
        object.__setattr__(self, "const", int(self.const))

    def __hash__(self) -> int:
        return hash((self.const, tuple(self.coeffs.items())))

    @property
    def dims(self) -> tuple[str, ...]:
        """The dims this size depends on (sorted)."""
        return tuple(self.coeffs)

    @property
    def is_constant(self) -> bool:
        return not self.coeffs

    def at(self, point: Mapping[str, int]) -> int:
        """The size (bytes) at ``point`` (``{dim: value}``; a missing dim is a ``KeyError``)."""
        return self.const + sum(c * int(point[d]) for d, c in self.coeffs.items())

    def max_over(self, dims: Mapping[str, tuple[int, int]]) -> int:
        """The maximum over the box ``dims`` (closed ranges): ``const + sum max(c*lo, c*hi)``."""
        return self.const + sum(max(c * dims[d][0], c * dims[d][1]) for d, c in self.coeffs.items())

    def min_over(self, dims: Mapping[str, tuple[int, int]]) -> int:
        """The minimum over the box ``dims``: ``const + sum min(c*lo, c*hi)``."""
        return self.const + sum(min(c * dims[d][0], c * dims[d][1]) for d, c in self.coeffs.items())

    def argmin_over(self, dims: Mapping[str, tuple[int, int]]) -> dict[str, int]:
        """A corner of the box where the minimum is reached (dims of this size only)."""
        return {d: (dims[d][0] if c > 0 else dims[d][1]) for d, c in self.coeffs.items()}

    def __add__(self, other: AffineSize | int) -> AffineSize:
        o = other if isinstance(other, AffineSize) else AffineSize(int(other))
        keys = set(self.coeffs) | set(o.coeffs)
        return AffineSize(self.const + o.const,
                          {k: self.coeffs.get(k, 0) + o.coeffs.get(k, 0) for k in keys})

    def __neg__(self) -> AffineSize:
        return AffineSize(-self.const, {k: -v for k, v in self.coeffs.items()})

    def __sub__(self, other: AffineSize | int) -> AffineSize:
        return self + (-(other if isinstance(other, AffineSize) else AffineSize(int(other))))

    def scale(self, k: int) -> AffineSize:
        """``k`` times this size."""
        return AffineSize(k * self.const, {d: k * c for d, c in self.coeffs.items()})

    def __str__(self) -> str:
        parts = [(c, f"{abs(c)}*{d}" if abs(c) != 1 else d) for d, c in self.coeffs.items()]
        if self.const or not parts:
            parts.append((self.const, str(abs(self.const))))
        out = ("-" if parts[0][0] < 0 else "") + parts[0][1]
        for c, t in parts[1:]:
            out += (" - " if c < 0 else " + ") + t
        return out


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(.))")


def parse_size(text: str | int, dims: Iterable[str] | None = None,
               where: str = "size") -> AffineSize:
    """Parse an affine size expression: integers, dim names, ``*``, ``+``, ``-``, parentheses.

    Never evaluates Python: a recursive-descent parser of ``expr := term (('+'|'-') term)*``,
    ``term := factor ('*' factor)*``, ``factor := '-' factor | INT | NAME | '(' expr ')'``. A
    product is affine only when at most one factor depends on a dim.

    Raises :class:`ProblemError` (prefixed by ``where``) for an unknown dim (when ``dims`` is
    given), a non-affine product (``seq*seq``), or any other character or syntax.

    >>> str(parse_size("64*seq + 128")), str(parse_size("4*(seq - 1)*2"))
    ('64*seq + 128', '8*seq - 8')
    """
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        return AffineSize(int(text))
    s = str(text)
    toks: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m.end() == pos or (m.group(0).strip() == "" and m.end() == len(s)):
            break
        pos = m.end()
        if m.group(1) is not None:
            toks.append(("int", int(m.group(1))))
        elif m.group(2) is not None:
            toks.append(("name", m.group(2)))
        elif m.group(3) in "+-*()":
            toks.append(("op", m.group(3)))
        else:
            raise ProblemError(f"{where}: {s!r}: character {m.group(3)!r} is not allowed (an "
                               "affine size takes integers, dim names, '*', '+', '-', '(' ')')")
    known = None if dims is None else set(dims)
    i = 0

    def peek():
        return toks[i] if i < len(toks) else ("end", None)

    def expr() -> AffineSize:
        nonlocal i
        out = term()
        while peek() in (("op", "+"), ("op", "-")):
            op = peek()[1]
            i += 1
            t = term()
            out = out + t if op == "+" else out - t
        return out

    def term() -> AffineSize:
        nonlocal i
        out = factor()
        while peek() == ("op", "*"):
            i += 1
            f = factor()
            if not out.is_constant and not f.is_constant:
                raise ProblemError(f"{where}: {s!r} is not affine: a product of ({out}) and ({f})"
                                   " (a size may multiply a dim by an integer only, e.g. 64*seq)")
            out = f.scale(out.const) if out.is_constant else out.scale(f.const)
        return out

    def factor() -> AffineSize:
        nonlocal i
        kind, val = peek()
        if (kind, val) == ("op", "-"):
            i += 1
            return -factor()
        if (kind, val) == ("op", "("):
            i += 1
            out = expr()
            if peek() != ("op", ")"):
                raise ProblemError(f"{where}: {s!r}: missing ')'")
            i += 1
            return out
        if kind == "int":
            i += 1
            return AffineSize(val)
        if kind == "name":
            if known is not None and val not in known:
                raise ProblemError(f"{where}: {s!r} names unknown dim {val!r} (declared dims: "
                                   f"{', '.join(sorted(known)) or 'none'})")
            i += 1
            return AffineSize(0, {val: 1})
        got = "the end" if kind == "end" else repr(val)
        raise ProblemError(f"{where}: {s!r}: expected an integer, a dim name or '(' but got {got}")

    if not toks:
        raise ProblemError(f"{where}: empty size expression")
    out = expr()
    if i != len(toks):
        raise ProblemError(f"{where}: {s!r}: unexpected {toks[i][1]!r}")
    return out


def _check_dims(dims: Mapping[str, Any], where: str = "dims") -> dict[str, tuple[int, int]]:
    """``dims`` as ``{name: (lo, hi)}`` after the rules: a name, integers, ``0 <= lo <= hi``."""
    out: dict[str, tuple[int, int]] = {}
    for name, rng in dims.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ProblemError(f"{where}: dim name {name!r} must be an identifier")
        try:
            lo, hi = rng
        except (TypeError, ValueError):
            raise ProblemError(f"{where}: dim {name!r}: range must be (lo, hi), got {rng!r}") \
                from None
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ProblemError(f"{where}: dim {name!r}: range ends must be integers, "
                                   f"got {rng!r}")
        lo, hi = int(lo), int(hi)
        if lo < 0:
            raise ProblemError(f"{where}: dim {name!r}: lo {lo} must be >= 0 (a dim is a length)")
        if lo > hi:
            raise ProblemError(f"{where}: dim {name!r}: bad range lo {lo} > hi {hi} "
                               "(closed range [lo, hi] needs lo <= hi)")
        out[name] = (lo, hi)
    return out


def parse_dims(text: str, where: str = "dims") -> dict[str, tuple[int, int]]:
    """Parse ``seq=1..2048, batch=1..8`` (commas or spaces between; closed ranges; ``seq=7`` is
    ``7..7``) into ``{name: (lo, hi)}``. Raises :class:`ProblemError` naming ``where`` and the
    rule (syntax, a repeated dim, ``lo > hi``, ``lo < 0``)."""
    out: dict[str, tuple[int, int]] = {}
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(-?\d+)(?:\.\.(-?\d+))?", item)
        if not m:
            raise ProblemError(f"{where}: {item!r} is not NAME=LO..HI (e.g. seq=1..2048)")
        if m.group(1) in out:
            raise ProblemError(f"{where}: dim {m.group(1)!r} given twice")
        lo = int(m.group(2))
        out[m.group(1)] = (lo, int(m.group(3)) if m.group(3) is not None else lo)
    return _check_dims(out, where)


def parse_point(text: str, where: str = "--at") -> dict[str, int]:
    """Parse ``seq=128,batch=2`` into ``{name: value}`` (:class:`ProblemError` on bad syntax)."""
    out: dict[str, int] = {}
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(-?\d+)", item)
        if not m:
            raise ProblemError(f"{where}: {item!r} is not DIM=VALUE (e.g. seq=128)")
        out[m.group(1)] = int(m.group(2))
    return out


def _dims_text(dims: Mapping[str, tuple[int, int]]) -> str:
    return ", ".join(f"{d}=[{lo}, {hi}]" for d, (lo, hi) in dims.items())


class SymbolicProblem:
    """A :class:`Problem` whose buffer sizes are :class:`AffineSize` in named dims.

    Parameters
    ----------
    buffers : iterable of Buffer
        Lifetimes (half-open ``[start, end)``, steps) and every other field as in
        :class:`planners.model.Buffer`; each buffer's ``size`` is replaced by ``sizes[i]``.
    sizes : sequence of AffineSize, int or str
        One per buffer (bytes); a string is parsed with :func:`parse_size`.
    dims : mapping name -> (lo, hi)
        Closed integer ranges, ``0 <= lo <= hi``.
    capacity, alignment, name, aliases, pools, colocations
        As :class:`Problem` (capacity and alignment in bytes).

    Raises
    ------
    ProblemError
        A bad range, a size naming an undeclared dim, a size negative somewhere in the box (the
        buffer and the corner are named), an alias child that outgrows its parent or a gap
        window above the size at some point of the box, or any rule of :class:`Problem` broken
        by the envelope problem.
    """

    def __init__(self, buffers: Iterable[Buffer], sizes: Sequence[AffineSize | int | str],
                 dims: Mapping[str, tuple[int, int]], capacity: int | None = None,
                 alignment: int = 1, name: str = "",
                 aliases: Mapping[str, tuple[str, int]] | None = None, pools=None,
                 colocations=None) -> None:
        bufs = tuple(buffers)
        if len(sizes) != len(bufs):
            raise ProblemError(f"problem {name!r}: {len(sizes)} sizes for {len(bufs)} buffers")
        self.dims = _check_dims(dims, f"problem {name!r}")
        self.sizes: tuple[AffineSize, ...] = tuple(
            s if isinstance(s, AffineSize) else
            parse_size(s, self.dims, f"problem {name!r}: buffer {b.id!r}")
            for b, s in zip(bufs, sizes))
        for b, s in zip(bufs, self.sizes):
            bad = [d for d in s.dims if d not in self.dims]
            if bad:
                raise ProblemError(f"problem {name!r}: buffer {b.id!r}: size {s} names unknown dim"
                                   f" {bad[0]!r} (declared dims: {', '.join(self.dims) or 'none'})")
            lo = s.min_over(self.dims)
            if lo < 0:
                corner = ", ".join(f"{d}={v}" for d, v in s.argmin_over(self.dims).items())
                raise ProblemError(f"problem {name!r}: buffer {b.id!r}: size {s} is negative "
                                   f"({lo} bytes) at {corner} (a size must be >= 0 over the box)")
            for g in b.gaps:
                if g.window is not None and g.window[1] > lo:
                    raise ProblemError(f"problem {name!r}: buffer {b.id!r}: gap window "
                                       f"{g.window} exceeds its smallest size {lo} bytes")
        self._template = tuple(replace(b, size=s.max_over(self.dims), gaps=())
                               if b.gaps else b for b, s in zip(bufs, self.sizes))
        self._gaps = tuple(b.gaps for b in bufs)
        self.capacity, self.alignment, self.name = capacity, alignment, str(name)
        self.aliases = dict(aliases or {})
        self.pools, self.colocations = pools, colocations
        by_id = {b.id: i for i, b in enumerate(bufs)}
        for child, (parent, delta) in self.aliases.items():
            if child in by_id and parent in by_id:
                room = (self.sizes[by_id[parent]] - self.sizes[by_id[child]]).min_over(self.dims)
                if room < int(delta):
                    raise ProblemError(
                        f"problem {name!r}: alias child {child!r} (size "
                        f"{self.sizes[by_id[child]]}) + delta {delta} outgrows its parent "
                        f"{parent!r} (size {self.sizes[by_id[parent]]}) somewhere in the box "
                        "(delta + size(child) <= size(parent) must hold at every point)")
        self._envelope = self._build([s.max_over(self.dims) for s in self.sizes])

    # -- evaluation ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.sizes)

    @property
    def ids(self) -> list[str]:
        return [b.id for b in self._template]

    @property
    def nonneg(self) -> bool:
        """True iff every coefficient of every size is ``>= 0`` (sizes monotone in each dim)."""
        return all(c >= 0 for s in self.sizes for c in s.coeffs.values())

    def _build(self, values: Sequence[int], name: str | None = None) -> Problem:
        bufs = [replace(b, size=v, gaps=g) for b, v, g in zip(self._template, values, self._gaps)]
        return Problem(bufs, capacity=self.capacity, alignment=self.alignment,
                       name=self.name if name is None else name, aliases=self.aliases or None,
                       pools=self.pools or None, colocations=self.colocations or None)

    def check_point(self, point: Mapping[str, int]) -> dict[str, int]:
        """``point`` as ``{dim: int}`` after the rules: every dim given, none unknown, each in
        its range. Raises :class:`ProblemError` naming the dim and the rule."""
        unknown = [d for d in point if d not in self.dims]
        if unknown:
            raise ProblemError(f"problem {self.name!r}: unknown dim {unknown[0]!r} (dims: "
                               f"{', '.join(self.dims) or 'none'})")
        out = {}
        for d, (lo, hi) in self.dims.items():
            if d not in point:
                raise ProblemError(f"problem {self.name!r}: no value for dim {d!r} (range "
                                   f"[{lo}, {hi}])")
            v = point[d]
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ProblemError(f"problem {self.name!r}: dim {d!r} = {v!r} is not an integer")
            if not lo <= int(v) <= hi:
                raise ProblemError(f"problem {self.name!r}: dim {d!r} = {v} is out of its range "
                                   f"[{lo}, {hi}]")
            out[d] = int(v)
        return out

    def sizes_at(self, point: Mapping[str, int]) -> list[int]:
        """Every buffer's size in bytes at ``point`` (checked by :meth:`check_point`)."""
        p = self.check_point(point)
        out = [s.at(p) for s in self.sizes]
        for b, v in zip(self._template, out):
            if v < 0:  # unreachable after construction's check; kept as the stated rule
                raise ProblemError(f"problem {self.name!r}: buffer {b.id!r}: size is negative "
                                   f"({v} bytes) at {p}")
        return out

    def at(self, point: Mapping[str, int]) -> Problem:
        """The :class:`Problem` at ``point`` (``{dim: value}``; every size evaluated, bytes).
        Raises :class:`ProblemError` for a missing, unknown or out-of-range dim."""
        return self._build(self.sizes_at(point))

    @property
    def upper_point(self) -> dict[str, int]:
        return {d: hi for d, (_, hi) in self.dims.items()}

    @property
    def lower_point(self) -> dict[str, int]:
        return {d: lo for d, (lo, _) in self.dims.items()}

    def upper(self) -> Problem:
        """The :class:`Problem` at the upper bounds of every dim."""
        return self.at(self.upper_point)

    def envelope(self) -> Problem:
        """The :class:`Problem` with every buffer at its maximum size over the box (bytes;
        affine max at a corner: ``const + sum max(c*lo, c*hi)``). Equals :meth:`upper` when every
        coefficient is ``>= 0``."""
        return self._envelope

    def with_capacity(self, capacity: int | None) -> SymbolicProblem:
        """A copy with ``capacity`` (bytes, or ``None``) at every point."""
        import copy

        out = copy.copy(self)
        out._envelope = self._envelope.with_capacity(capacity)
        out.capacity = out._envelope.capacity
        return out

    def points(self) -> Iterable[dict[str, int]]:
        """Every integer point of the box (for brute force on small boxes)."""
        names = list(self.dims)
        for vals in itertools.product(*(range(lo, hi + 1) for lo, hi in self.dims.values())):
            yield dict(zip(names, vals))

    def __repr__(self) -> str:
        return f"SymbolicProblem({self.name!r}, n={self.n}, dims={{{_dims_text(self.dims)}}})"

    # -- files --------------------------------------------------------------------------------
    def to_json(self) -> str:
        return symbolic_json_text(self)


@dataclass
class SymbolicPlan:
    """A plan of a :class:`SymbolicProblem`: fixed offsets valid at every point of the box.

    Attributes
    ----------
    problem : SymbolicProblem
    plan : Plan
        The plan of the envelope problem (:meth:`SymbolicProblem.envelope`); its offsets (bytes)
        serve every point.
    planned_at : str
        ``"upper"`` (every coefficient >= 0: the envelope is the upper-bound problem) or
        ``"maxima"`` (some coefficient < 0: each buffer at its own maximum over the box).
    statement : str
        One line: for which values the plan is valid and why.
    """

    problem: SymbolicProblem
    plan: Plan
    planned_at: str
    statement: str

    @property
    def offsets(self) -> np.ndarray:
        return self.plan.offsets

    @property
    def arena(self) -> int:
        """The arena fixed at plan time (bytes), the same for every point."""
        return self.plan.arena_size

    def plan_at(self, point: Mapping[str, int]) -> Plan:
        """The same offsets as a :class:`Plan` of ``problem.at(point)`` (for
        :func:`planners.validate.check_plan`)."""
        p = self.problem.at(point)
        return Plan(p, self.plan.offsets.copy(), self.plan.planner, self.plan.status,
                    self.plan.seconds, self.plan.lower_bound, self.plan.best_bound,
                    dict(self.plan.params), dict(self.plan.info), self.plan.pools)

    def arena_at(self, point: Mapping[str, int]) -> int:
        """Bytes touched at ``point``: the highest ``offset + size(point)`` (per pool, summed,
        with pools); ``<= arena``."""
        return self.plan_at(point).arena_size

    def extent_terms(self) -> list[AffineSize]:
        """The used extent as a function (without pools): each term is ``offset_i + size_i``
        (bytes), a term never above another anywhere in the box dropped. ``max(0, t(point) for t
        in terms)`` equals :meth:`arena_at` at every point where no buffer has size 0, and is an
        upper bound on it elsewhere (a buffer of size 0 at the point touches no byte, so its
        term ``offset_i`` does not count there)."""
        terms = {s + int(o) for s, o in zip(self.problem.sizes, self.offsets.tolist())}
        d = self.problem.dims
        keep = [t for t in terms
                if not any(u != t and (t - u).max_over(d) <= 0 for u in terms)]
        return sorted(keep, key=lambda t: (-t.max_over(d), str(t)))


def plan_symbolic(sp: SymbolicProblem, planner: Any = "greedy_by_size",
                  **params: Any) -> SymbolicPlan:
    """Plan ``sp`` once, valid for every point of its box (module docstring: the envelope).

    Parameters
    ----------
    sp : SymbolicProblem
    planner : registry name, Planner, class or callable (:func:`planners.registry.get_planner`)
    **params : the planner's keyword parameters (e.g. ``time_limit=1``, seconds).

    Returns
    -------
    SymbolicPlan
        The envelope's validated plan and a one-line statement of validity. A planner that
        needs a capacity and gets none is given the envelope's lower bound (as ``memplan plan``).

    Raises
    ------
    Whatever the planner raises on the envelope (e.g. :class:`planners.errors.FeatureError`).
    """
    from .bounds import lower_bound
    from .registry import get_planner

    pl = get_planner(planner, **params)
    env = sp.envelope()
    if pl.needs_capacity(env) and env.capacity is None and not env.pools:
        env = env.with_capacity(lower_bound(env))
    plan = pl.plan(env)
    where = "upper" if sp.nonneg else "maxima"
    ok = plan.status not in ("infeasible", "timeout", "skipped")
    box = ", ".join(f"{d} in [{lo}, {hi}]" for d, (lo, hi) in sp.dims.items())
    if not ok:
        statement = (f"no plan ({plan.status}) of the {where}-bound problem; nothing is claimed "
                     f"for {box}")
    elif where == "upper":
        statement = (f"valid for every {box}: offsets fixed, planned at the upper bounds (every "
                     f"size is non-decreasing in each dim); arena {plan.arena_size} bytes fixed")
    else:
        statement = (f"valid for every {box}: offsets fixed, planned at each buffer's maximum "
                     f"over the box (some size decreases in a dim); arena {plan.arena_size} "
                     "bytes fixed")
    return SymbolicPlan(sp, plan, where, statement)


class SweepRow(NamedTuple):
    """One row of :func:`sweep_dim` (bytes): ``value`` of the dim, ``arena`` of a plan made at
    that point, ``lower_bound`` (max live bytes) at that point, and ``fixed_extent``: the bytes
    the one envelope plan touches there (``None`` when no envelope plan was asked for)."""

    value: int
    arena: int | None
    lower_bound: int
    fixed_extent: int | None


def sweep_dim(sp: SymbolicProblem, dim: str, values: Iterable[int],
              planner: Any = "greedy_by_size", others: Mapping[str, int] | None = None,
              fixed: SymbolicPlan | None = None, **params: Any) -> list[SweepRow]:
    """Arena versus one dim: plan ``sp.at(point)`` for each value of ``dim`` (the other dims at
    ``others``, default their upper bounds).

    Returns one :class:`SweepRow` per value (bytes): the arena planned at that point (``None``
    for a status without a plan), the lower bound there, and, with ``fixed`` (a
    :func:`plan_symbolic` result), the extent that one plan touches there. Raises
    :class:`ProblemError` for an unknown dim or an out-of-range value.
    """
    from .bounds import lower_bound
    from .registry import get_planner

    if dim not in sp.dims:
        raise ProblemError(f"problem {sp.name!r}: unknown dim {dim!r} (dims: "
                           f"{', '.join(sp.dims) or 'none'})")
    base = dict(sp.upper_point)
    base.update(others or {})
    pl = get_planner(planner, **params)
    rows = []
    for v in values:
        point = {**base, dim: v}
        p = sp.at(point)
        if pl.needs_capacity(p) and p.capacity is None and not p.pools:
            p = p.with_capacity(lower_bound(p))
        plan = pl.plan(p)
        ok = plan.status not in ("infeasible", "timeout", "skipped")
        rows.append(SweepRow(int(v), plan.arena_size if ok else None, lower_bound(p),
                             None if fixed is None else fixed.arena_at(point)))
    return rows


# -- files ----------------------------------------------------------------------------------
_CSV_COLUMNS = ("id", "lower", "upper", "size", "alignment", "kind", "offset", "hint")


def _split_comments(text: str, where: str) -> tuple[dict[str, tuple[int, int]] | None, int, str]:
    """``(dims or None, number of leading comment lines, the rest)`` of a CSV text."""
    lines = text.split("\n")
    dims = None
    k = 0
    while k < len(lines) and lines[k].lstrip().startswith("#"):
        m = re.fullmatch(r"\s*#\s*dims\s*:(.*)", lines[k].rstrip("\r"))
        if m:
            if dims is not None:
                raise ProblemError(f"{where}:{k + 1}: a second '# dims:' line")
            dims = parse_dims(m.group(1), f"{where}:{k + 1}")
        k += 1
    return dims, k, "\n".join(lines[k:])


def is_symbolic_file(path: str | Path) -> bool:
    """True iff ``path`` is a symbolic CSV (a ``# dims:`` line before the header) or a JSON
    object tagged ``"format": "memplan-symbolic"``."""
    p = Path(path)
    if not p.is_file():
        return False
    try:
        if p.suffix == ".json":
            try:
                doc = json.loads(p.read_text(encoding="utf-8"))
            except ValueError:
                return False
            return isinstance(doc, dict) and doc.get("format") == JSON_FORMAT
        with p.open(encoding="utf-8") as f:  # only the comment lines before the header
            for line in f:
                if not line.lstrip().startswith("#"):
                    return False
                if re.fullmatch(r"\s*#\s*dims\s*:.*", line.rstrip("\r\n")):
                    return True
    except (OSError, UnicodeDecodeError):
        return False
    return False


def _int_cell(row: Mapping, key: str, where: str, bid: str) -> int:
    raw = str(row.get(key) or "").strip()
    try:
        return int(raw)
    except ValueError:
        raise ProblemError(f"{where}: buffer {bid!r}: column {key!r} must be an integer, got "
                           f"{raw!r}") from None


def read_symbolic_csv(path: str | Path, capacity: int | None = None, alignment: int = 1,
                      name: str | None = None) -> SymbolicProblem:
    """Read a symbolic CSV (module docstring: ``# dims:`` line, then MiniMalloc columns
    ``id,lower,upper,size`` half-open, optional ``alignment``, ``kind``, ``offset`` (a pin),
    ``hint``). Raises :class:`ProblemError` naming the file, line and rule; a file without a
    ``# dims:`` line or with another column (``gaps``, ``pools``, ...) is refused."""
    path = Path(path)
    if not path.exists():
        raise ProblemError(f"{path}: no such file")
    dims, skip, body = _split_comments(path.read_text(encoding="utf-8"), str(path))
    if dims is None:
        raise ProblemError(f"{path}: no '# dims: NAME=LO..HI, ...' line before the header (a "
                           "symbolic CSV names its dims; a plain CSV is read by "
                           "planners.io.read_minimalloc_csv)")
    reader = csv.DictReader(_io.StringIO(body, newline=""))
    header = [h.strip() for h in (reader.fieldnames or [])]
    reader.fieldnames = header
    missing = [c for c in _CSV_COLUMNS[:4] if c not in header]
    if missing:
        raise ProblemError(f"{path}:{skip + 1}: header {header} lacks column(s) {missing}")
    other = [c for c in header if c not in _CSV_COLUMNS]
    if other:
        raise ProblemError(f"{path}:{skip + 1}: column {other[0]!r} is not read with symbolic "
                           f"sizes (columns: {', '.join(_CSV_COLUMNS)})")
    bufs, sizes = [], []
    for row in reader:
        where = f"{path}:{reader.line_num + skip}"
        if None in row:
            raise ProblemError(f"{where}: more fields than the header's {len(header)}")
        bid = row.get("id") or ""
        if not bid:
            raise ProblemError(f"{where}: missing value for column 'id'")
        s = parse_size(str(row.get("size") or "").strip(), dims, f"{where}: buffer {bid!r}")
        extra: dict[str, Any] = {}
        for k in ("alignment", "offset", "hint"):
            if str(row.get(k) or "").strip() not in ("", "-1"):
                extra[k] = _int_cell(row, k, where, bid)
        if str(row.get("kind") or "").strip():
            extra["kind"] = str(row["kind"]).strip()
        try:
            bufs.append(Buffer(bid, _int_cell(row, "lower", where, bid),
                               _int_cell(row, "upper", where, bid), max(s.max_over(dims), 0),
                               **extra))
        except ProblemError as e:
            raise ProblemError(f"{where}: {e}") from None
        sizes.append(s)
        lo = s.min_over(dims)
        if lo < 0:
            corner = ", ".join(f"{d}={v}" for d, v in s.argmin_over(dims).items())
            raise ProblemError(f"{where}: buffer {bid!r}: size {s} is negative ({lo} bytes) at "
                               f"{corner} (a size must be >= 0 over the box)")
    if not bufs:
        raise ProblemError(f"{path}: header only, no buffers")
    try:
        return SymbolicProblem(bufs, sizes, dims, capacity=capacity, alignment=alignment,
                               name=name if name is not None else path.name.removesuffix(".csv"))
    except ProblemError as e:
        raise ProblemError(f"{path}: {e}") from None


def symbolic_csv_text(sp: SymbolicProblem) -> str:
    """``sp`` as symbolic CSV text (read back by :func:`read_symbolic_csv`). Refuses (one
    :class:`ProblemError`) aliases, pools, colocations and gaps, which this CSV does not carry
    (use them through the Python API)."""
    from .io import _csv_line

    if sp.aliases or sp.pools or sp.colocations or any(sp._gaps):
        raise ProblemError(f"problem {sp.name!r}: the symbolic CSV carries no aliases, pools, "
                           "colocations or gaps")
    bufs = sp._template
    cols = list(_CSV_COLUMNS[:4])
    opt = {"alignment": any(b.alignment is not None for b in bufs),
           "kind": any(b.kind != "activation" for b in bufs),
           "offset": any(b.offset is not None for b in bufs),
           "hint": any(b.hint is not None for b in bufs)}
    cols += [c for c, on in opt.items() if on]
    lines = [f"# dims: {', '.join(f'{d}={lo}..{hi}' for d, (lo, hi) in sp.dims.items())}\n",
             _csv_line(cols)]
    for b, s in zip(bufs, sp.sizes):
        row = [b.id, b.start, b.end, str(s).replace(" ", "")]
        for c in cols[4:]:
            v = getattr(b, c)
            row.append("" if v is None or (c == "kind" and v == "activation") else v)
        lines.append(_csv_line(row))
    return "".join(lines)


def write_symbolic_csv(sp: SymbolicProblem, path: str | Path) -> None:
    """Write :func:`symbolic_csv_text` atomically (:func:`planners.io.atomic_write`; raises
    :class:`planners.errors.OutputError` naming the path on a failed write)."""
    from .io import atomic_write

    atomic_write(path, symbolic_csv_text(sp))


def symbolic_json_text(sp: SymbolicProblem) -> str:
    """``sp`` as the symbolic JSON document (module docstring); sizes as expression strings."""
    if sp.aliases or sp.pools or sp.colocations or any(sp._gaps):
        raise ProblemError(f"problem {sp.name!r}: the symbolic JSON carries no aliases, pools, "
                           "colocations or gaps")
    rows = []
    for b, s in zip(sp._template, sp.sizes):
        r: dict[str, Any] = {"id": b.id, "lower": b.start, "upper": b.end,
                             "size": s.const if s.is_constant else str(s)}
        for k in ("alignment", "offset", "hint"):
            if getattr(b, k) is not None:
                r[k] = getattr(b, k)
        if b.kind != "activation":
            r["kind"] = b.kind
        rows.append(r)
    return json.dumps({"format": JSON_FORMAT, "version": 1, "name": sp.name,
                       "alignment": sp.alignment, "capacity": sp.capacity,
                       "dims": {d: list(r) for d, r in sp.dims.items()}, "buffers": rows},
                      indent=1)


def read_symbolic_json(source: str | Path) -> SymbolicProblem:
    """Read a symbolic JSON document (a path, or the text itself). Raises
    :class:`ProblemError` naming the buffer (by index and id) and the rule."""
    where = "symbolic JSON"
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith(
            "{")):
        where = str(source)
        if not Path(source).exists():
            raise ProblemError(f"{where}: no such file")
        source = Path(source).read_text(encoding="utf-8")
    try:
        doc = json.loads(source)
    except ValueError as e:
        raise ProblemError(f"{where}: not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT:
        raise ProblemError(f"{where}: not a symbolic problem (needs \"format\": \"{JSON_FORMAT}\")")
    if not isinstance(doc.get("dims"), dict) or not isinstance(doc.get("buffers"), list):
        raise ProblemError(f"{where}: needs \"dims\" (an object) and \"buffers\" (a list)")
    dims = _check_dims(doc["dims"], f"{where}: dims")
    bufs, sizes = [], []
    for k, r in enumerate(doc["buffers"]):
        item = f"{where}: buffer {k}" + (f" {r.get('id')!r}" if isinstance(r, dict) else "")
        if not isinstance(r, dict) or any(c not in r for c in ("id", "lower", "upper", "size")):
            raise ProblemError(f"{item}: needs keys id, lower, upper, size")
        bad = [c for c in r if c not in _CSV_COLUMNS]
        if bad:
            raise ProblemError(f"{item}: unknown key {bad[0]!r} (keys: {', '.join(_CSV_COLUMNS)})")
        s = parse_size(r["size"], dims, item) if isinstance(r["size"], (str, int)) else None
        if s is None:
            raise ProblemError(f"{item}: size must be an integer or an expression string")
        extra = {c: r[c] for c in ("alignment", "offset", "hint", "kind") if r.get(c) is not None}
        try:
            bufs.append(Buffer(str(r["id"]), r["lower"], r["upper"], max(s.max_over(dims), 0),
                               **extra))
        except ProblemError as e:
            raise ProblemError(f"{where}: buffer {k}: {e}") from None
        sizes.append(s)
    try:
        return SymbolicProblem(bufs, sizes, dims, capacity=doc.get("capacity"),
                               alignment=doc.get("alignment", 1), name=doc.get("name", ""))
    except ProblemError as e:
        raise ProblemError(f"{where}: {e}") from None


# -- fitting sizes from evaluations (ONNX dim_params) ----------------------------------------
def _probe_points(dims: Mapping[str, tuple[int, int]]) -> list[dict[str, int]]:
    """The points :func:`fit_affine_problem` evaluates beyond the base and the unit probes: per
    dim ``lo + 1``, the middle and ``hi - 1`` (others at ``lo``), then the all-upper and
    all-middle corners."""
    lo = {d: a for d, (a, _) in dims.items()}
    out = []
    for d, (a, b) in dims.items():
        for v in sorted({a + 1, (a + b) // 2, b - 1} - {a, b}):
            if a < v < b:
                out.append({**lo, d: v})
    out.append({d: b for d, (_, b) in dims.items()})
    out.append({d: (a + b) // 2 for d, (a, b) in dims.items()})
    seen, uniq = set(), []
    for p in out:
        key = tuple(p.values())
        if key not in seen and p != lo:
            seen.add(key)
            uniq.append(p)
    return uniq


def fit_affine_problem(problem_at, dims: Mapping[str, tuple[int, int]], name: str = "",
                       what: str = "tensor") -> SymbolicProblem:
    """A :class:`SymbolicProblem` from a function ``problem_at(point) -> Problem`` whose sizes
    are affine in ``dims`` (e.g. an ONNX model evaluated with ``dim_param`` overrides).

    Method: evaluate at the lower corner and at each dim's upper bound (the others at ``lo``);
    each coefficient is the size difference over ``hi - lo`` and must be an integer; then verify
    the fitted sizes at every point of :func:`_probe_points` (per dim ``lo + 1``, the middle,
    ``hi - 1``; the all-upper and all-middle corners). Lifetimes (half-open, steps), ids,
    alignments and kinds must be the same at every point. The check is at those points only: a
    size that is affine there and not elsewhere (a rounding step between probes) is not seen.

    Raises
    ------
    ProblemError
        One line naming the first ``what`` (buffer id) whose size is not affine (e.g.
        attention's ``seq*seq``), with the predicted and the evaluated bytes and the point, or a
        buffer whose lifetime or presence changes with the dims.
    """
    dims = _check_dims(dims, f"problem {name!r}")
    lo = {d: a for d, (a, _) in dims.items()}
    base = problem_at(lo)

    def same_shape(p: Problem, point) -> None:
        if p.ids != base.ids:
            extra = sorted(set(p.ids) ^ set(base.ids))
            raise ProblemError(f"problem {name!r}: the buffers change with the dims (at {point}: "
                               f"{extra[:3] or 'another order'}); not modelled with symbolic sizes")
        for b0, b1 in zip(base.buffers, p.buffers):
            if (b0.start, b0.end, b0.kind, b0.alignment) != (b1.start, b1.end, b1.kind,
                                                              b1.alignment):
                raise ProblemError(f"problem {name!r}: {what} {b0.id!r}: lifetime or kind changes"
                                   f" with the dims (at {point}); not modelled with symbolic sizes")

    s0 = base.sizes.tolist()
    coeffs: list[dict[str, int]] = [{} for _ in s0]
    for d, (a, b) in dims.items():
        if b == a:
            continue
        point = {**lo, d: b}
        p = problem_at(point)
        same_shape(p, point)
        for i, v in enumerate(p.sizes.tolist()):
            q, r = divmod(v - s0[i], b - a)
            if r:
                raise ProblemError(
                    f"problem {name!r}: {what} {base.ids[i]!r}: size is not affine in {d!r} "
                    f"({s0[i]} bytes at {d}={a}, {v} at {d}={b}: not an integer step per unit)")
            if q:
                coeffs[i][d] = q
    sizes = [AffineSize(s0[i] - sum(c * lo[d] for d, c in coeffs[i].items()), coeffs[i])
             for i in range(len(s0))]
    for point in _probe_points(dims):
        p = problem_at(point)
        same_shape(p, point)
        for i, v in enumerate(p.sizes.tolist()):
            want = sizes[i].at(point)
            if v != want:
                at = ", ".join(f"{d}={x}" for d, x in point.items())
                raise ProblemError(
                    f"problem {name!r}: {what} {base.ids[i]!r}: size is not affine in the dims "
                    f"(fit {sizes[i]} gives {want} bytes at {at}, the shapes give {v}; e.g. "
                    "attention's seq*seq); plan it at a point instead (overrides / --at)")
    return SymbolicProblem(base.buffers, sizes, dims, capacity=base.capacity,
                           alignment=base.alignment, name=name or base.name,
                           aliases=base.aliases or None, pools=base.pools or None,
                           colocations=base.colocations or None)
