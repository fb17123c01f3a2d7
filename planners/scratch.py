"""Scratch buffers: per-operator temporaries that live for one step, in a chosen pool.

TFLite Micro's ``TfLiteContext::RequestScratchBufferInArena`` (``micro_context.h``) gives an
operator a temporary during its ``Eval`` only (the planner places it in the arena beside that
step's activations); ExecuTorch places an operator's scratch in the memory (``mem_id``) the
export names. In the interval model a scratch buffer is a buffer live at the one step of its
operator: half-open lifetime ``[op_step, op_step + 1)`` (schedule steps), its size in bytes,
and its candidate pools (:class:`planners.model.MemoryPool` names; empty: any pool). Nothing
else is needed: every planner places it as a buffer, the validator checks it as one, and the
MiniMalloc CSV carries it (``lower``, ``upper = lower + 1``, ``size`` and the ``pools``
column; :func:`planners.io.write_minimalloc_csv`).

The buffer's ``kind`` is ``scratch`` (:data:`planners.model.KINDS`; :class:`planners.model.Buffer`
refuses a scratch buffer that does not live exactly one step). A problem built from buffers keeps
them, so the kind survives a problem, its MiniMalloc CSV (the ``kind`` column,
:func:`planners.io.write_minimalloc_csv`, read back by :func:`planners.io.read_minimalloc_csv`)
and a shared-arena manifest (:func:`planners.shared_arena.write_shared`, one CSV per problem).
:func:`with_scratch` names them ``scratch/<step>/<j>`` (:data:`PREFIX`); :func:`scratch_ids`
finds them by kind, and also by that name in a file written before the kind was stored.
Every planner plans them (capability ``scratch``: ``native``, :data:`planners.base.KIND_MODES`):
a scratch buffer is a buffer, its candidate pools handled as the planner handles ``pools``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .errors import ProblemError
from .model import Buffer, Problem

__all__ = ["PREFIX", "scratch_buffer", "with_scratch", "scratch_ids"]

#: Id prefix of the scratch buffers :func:`with_scratch` adds.
PREFIX = "scratch/"


def scratch_buffer(op_step: int, size: int, pools: Sequence[str] = (), id: str | None = None,
                   alignment: int | None = None) -> Buffer:
    """A scratch buffer of the operator at schedule step ``op_step``.

    Parameters
    ----------
    op_step : int
        The operator's step (``>= 0``); the buffer is live over ``[op_step, op_step + 1)``.
    size : int
        Bytes (``>= 0``).
    pools : sequence of str
        Candidate pools (names of the problem's pools); empty means any pool.
    id : str or None
        Buffer id; default ``scratch/<op_step>/0``.
    alignment : int or None
        Offset alignment in bytes; ``None`` takes the problem's default.

    Raises
    ------
    ProblemError
        A negative step, and every rule of :class:`planners.model.Buffer` (negative size, a
        repeated pool, ...).

    Examples
    --------
    >>> scratch_buffer(3, 256, ("sram",))
    Buffer(id='scratch/3/0', start=3, end=4, size=256, alignment=None, kind='scratch', pools=('sram',))
    """
    if isinstance(op_step, bool) or not isinstance(op_step, int) or op_step < 0:
        raise ProblemError(f"scratch buffer: operator step must be an integer >= 0, got "
                           f"{op_step!r}")
    bid = f"{PREFIX}{op_step}/0" if id is None else id
    return Buffer(bid, op_step, op_step + 1, size, alignment, kind="scratch", pools=tuple(pools))


def with_scratch(problem: Problem, requests: Iterable[tuple]) -> Problem:
    """A copy of ``problem`` with scratch buffers added (appended in request order).

    Parameters
    ----------
    problem : Problem
        Without alias groups; its buffers, capacity, alignment, name, pools and colocations
        are kept.
    requests : iterable of ``(op_step, size)`` or ``(op_step, size, pools)``
        Steps, bytes and candidate pool names; the ``j``-th request of a step is named
        ``scratch/<step>/<j>``.

    Raises
    ------
    ProblemError
        A malformed request, a name already in the problem, a pool the problem does not have,
        a problem with alias groups, and the rules of :class:`planners.model.Problem`.

    Examples
    --------
    >>> p = Problem([Buffer("x", 0, 2, 100)], name="net")
    >>> [(b.id, b.start, b.end, b.size) for b in with_scratch(p, [(1, 64), (1, 32)]).buffers]
    [('x', 0, 2, 100), ('scratch/1/0', 1, 2, 64), ('scratch/1/1', 1, 2, 32)]
    """
    if problem.aliases:
        raise ProblemError(f"problem {problem.name!r}: scratch buffers are not added to a "
                           f"problem with alias groups")
    count: dict[int, int] = {}
    new = []
    for r in requests:
        try:
            step, size, *rest = r
        except (TypeError, ValueError):
            raise ProblemError(f"scratch request must be (op_step, size[, pools]), got {r!r}") \
                from None
        j = count.get(step, 0)
        count[step] = j + 1
        new.append(scratch_buffer(step, size, rest[0] if rest else (),
                                  id=f"{PREFIX}{step}/{j}"))
    return Problem(list(problem.buffers) + new, capacity=problem.capacity,
                   alignment=problem.alignment, name=problem.name,
                   pools=problem.pools or None, colocations=problem.colocations or None)


def scratch_ids(problem: Problem) -> list[str]:
    """Ids of ``problem``'s scratch buffers, in problem order: of kind ``scratch``, or (a file
    written before the kind was stored) named ``scratch/...`` and live for one step. ``O(n)``."""
    one = (problem.ends - problem.starts == 1).tolist()
    kinds = ([b.kind for b in problem.buffers] if problem._buffers is not None
             else ["activation"] * problem.n)
    return [b for i, b in enumerate(problem.ids)
            if kinds[i] == "scratch" or (one[i] and b.startswith(PREFIX))]
