"""Time limits that hold: the stated slack and the deadline every limited planner counts down.

A planner with a ``time_limit`` parameter (seconds of wall clock, :func:`time.perf_counter`)
returns within ``time_limit + slack(time_limit)`` of the moment :meth:`planners.base.Planner.plan`
was called, whatever the problem's size: its set-up (the lower bound, warm-start heuristics, model
building, presolve, collapsing groups) counts against the limit, the solver is given only what is
left, and a solver that cannot start in time returns ``timeout`` (or the best plan it already has,
``feasible``) instead of starting.

:func:`slack` is the one statement of the allowance (``experiments.bench.overrun`` measures
against it); :class:`Deadline` is the count-down a planner carries from its set-up into its
solver, and :meth:`Deadline.record` writes the figures a test or a record checks (the set-up
seconds and what the solver was given) into a plan's ``info``.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from typing import Any

__all__ = ["SLACK_FRACTION", "SLACK_SECONDS", "MIN_SOLVER_SECONDS", "slack", "allowed_seconds",
           "Deadline", "import_within"]

#: Relative part of the slack: a share of the time limit (10 %).
SLACK_FRACTION = 0.10
#: Absolute part of the slack, seconds: what a call may need past its limit to stop the solver,
#: read its answer back and validate the plan (0.5 s).
SLACK_SECONDS = 0.5
#: The least seconds worth handing to a solver: with less left after the set-up, the planner
#: answers at once (``timeout``, or ``feasible`` with the warm start) instead of starting one.
MIN_SOLVER_SECONDS = 0.01


def slack(time_limit: float) -> float:
    """Seconds a call with limit ``time_limit`` (seconds) may run past it.

    The larger of :data:`SLACK_FRACTION` of the limit and :data:`SLACK_SECONDS`: ``slack(1.0)``
    is 0.5 s, ``slack(60.0)`` 6 s.

    >>> slack(1.0), slack(5.0), slack(60.0)
    (0.5, 0.5, 6.0)
    """
    return max(SLACK_FRACTION * float(time_limit), SLACK_SECONDS)


def allowed_seconds(time_limit: float) -> float:
    """``time_limit + slack(time_limit)``: the longest a limited call may take, in seconds."""
    return float(time_limit) + slack(time_limit)


class Deadline:
    """A wall-clock count-down of ``time_limit`` seconds from ``start``.

    Parameters
    ----------
    time_limit : float
        Seconds (> 0).
    start : float or None
        The :func:`time.perf_counter` instant the limit counts from (default: now). A planner
        passes the instant its :meth:`planners.base.Planner.plan` call began, so work done before
        ``_solve`` (the lower bound, collapsing alias and colocation groups) counts too.

    Notes
    -----
    ``left()`` may be negative (the set-up already overran); :meth:`solver_seconds` is what a
    solver started now may be given, or ``None`` when starting one is not worth it (less than
    :data:`MIN_SOLVER_SECONDS`).

    >>> d = Deadline(2.0, start=time.perf_counter() - 0.5)  # 0.5 s of set-up already spent
    >>> 1.3 < d.solver_seconds(reserve=0.1) < 1.4
    True
    """

    __slots__ = ("time_limit", "start", "end", "setup", "reserve", "given")

    def __init__(self, time_limit: float, start: float | None = None) -> None:
        self.time_limit = float(time_limit)
        self.start = time.perf_counter() if start is None else float(start)
        self.end = self.start + self.time_limit
        self.setup: float | None = None
        self.reserve = 0.0
        self.given: float | None = None

    def elapsed(self) -> float:
        """Seconds since ``start``."""
        return time.perf_counter() - self.start

    def left(self) -> float:
        """Seconds until the deadline (negative once it has passed)."""
        return self.end - time.perf_counter()

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return time.perf_counter() >= self.end

    def at(self, share: float) -> float:
        """The :func:`time.perf_counter` instant ``share`` (in [0, 1]) of the way to the end."""
        return self.start + float(share) * self.time_limit

    def solver_seconds(self, reserve: float = 0.0) -> float | None:
        """Seconds to give a solver started now: ``time_limit - setup - reserve``, ``setup``
        being the seconds since ``start`` and ``reserve`` (seconds, >= 0) what the caller keeps
        for work the solver's own limit does not count (loading the model, reading the answer
        back); ``None`` below :data:`MIN_SOLVER_SECONDS` (then the caller answers without
        starting it). The figures are kept for :meth:`record`."""
        self.setup = self.elapsed()
        self.reserve = max(0.0, float(reserve))
        given = self.time_limit - self.setup - self.reserve
        self.given = given if given >= MIN_SOLVER_SECONDS else None
        return self.given

    def record(self, info: dict[str, Any]) -> dict[str, Any]:
        """Write the count-down into a plan's ``info`` and return it: ``time_limit`` (seconds),
        ``setup_seconds`` (from ``start`` to the :meth:`solver_seconds` call, or to now when there
        was none), ``solver_reserve`` (seconds kept back) and ``solver_time_limit`` (seconds given
        to the solver, ``None`` when none was started), so that ``solver_time_limit ==
        time_limit - setup_seconds - solver_reserve`` (to rounding, 1e-6 s)."""
        info["time_limit"] = self.time_limit
        info["setup_seconds"] = round(self.elapsed() if self.setup is None else self.setup, 6)
        info["solver_reserve"] = round(self.reserve, 6)
        info["solver_time_limit"] = None if self.given is None else round(self.given, 6)
        return info


#: Imports under way in a background thread (:func:`import_within`), by module name.
_IMPORTING: dict[str, threading.Thread] = {}


def _import_quietly(name: str) -> None:
    try:
        importlib.import_module(name)
    except BaseException:  # noqa: BLE001 - re-raised by import_within's own import
        pass


def import_within(name: str, seconds: float):
    """The module ``name``, imported within ``seconds`` (wall clock), or ``None``.

    A solver's first import in a process is set-up like any other (OR-Tools' CP-SAT took 0.3 s
    to 2.7 s on a loaded 2-core machine) but cannot be interrupted, so it runs in a background
    thread that the caller waits for at most ``seconds``; when it is not done, the caller answers
    without the solver (``timeout`` or its best plan) and the import completes in the background
    for the next call. An already imported module is returned at once.

    Raises
    ------
    ImportError
        The module cannot be imported (the import's own error, raised in the caller).
    """
    thread = _IMPORTING.get(name)
    if thread is None:
        if name in sys.modules:
            return importlib.import_module(name)
        thread = threading.Thread(target=_import_quietly, args=(name,), daemon=True,
                                  name=f"import {name}")
        _IMPORTING[name] = thread
        thread.start()
    thread.join(max(0.0, float(seconds)))
    if thread.is_alive():
        return None
    return importlib.import_module(name)
