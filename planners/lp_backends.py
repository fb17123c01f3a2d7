"""Solving a PuLP model with a time limit and reporting what is honestly known about the result.

PuLP hides most solver statistics. :func:`solve_pulp` uses HiGHS (``pulp.HiGHS``) when the
``highspy`` package is importable, else PuLP's bundled CBC (``PULP_CBC_CMD``). For CBC it reads the
solver log for the "Lower bound" / "Objective value" lines to recover the best proved bound of a run
stopped by the time limit; when the log says nothing, the bound is reported as unknown (``None``).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
from typing import TYPE_CHECKING

from .time_limits import MIN_SOLVER_SECONDS

if TYPE_CHECKING:  # imported where used: `import planners` stays light
    import pulp

__all__ = ["solve_pulp", "pulp_backend_name"]


def pulp_backend_name() -> str:
    """``"HiGHS"`` when ``highspy`` is importable, else ``"CBC"`` (bundled with PuLP)."""
    try:
        import highspy  # noqa: F401
    except ImportError:
        return "CBC"
    return "HiGHS"


def _status(prob: pulp.LpProblem) -> str:
    """Map PuLP's status pair to a toolkit status (``optimal|feasible|infeasible|timeout``)."""
    import pulp

    if prob.sol_status == pulp.LpSolutionOptimal and prob.status == pulp.LpStatusOptimal:
        return "optimal"
    if prob.sol_status in (pulp.LpSolutionIntegerFeasible, pulp.LpSolutionOptimal):
        return "feasible"
    if prob.status == pulp.LpStatusInfeasible or prob.sol_status == pulp.LpSolutionInfeasible:
        return "infeasible"
    return "timeout"


def _cbc_log_bound(text: str) -> float | None:
    """The last ``Lower bound:`` value of a CBC log (its proved bound when it stopped), or ``None``."""
    found = re.findall(r"Lower bound:\s*([-0-9.eE+]+)", text)
    return float(found[-1]) if found else None


def _cbc_failed(log: str, info: dict):
    """CBC ran but wrote no solution file (PuLP raises ``PulpSolverError``). CBC does that when
    its preprocessing proves the model infeasible ("Pre-processing says infeasible"): that is
    returned as ``infeasible`` (callers that need a proof re-solve with ``preprocess off``). Any
    other failure raises :class:`planners.errors.SolverError` with CBC's last log line."""
    from .errors import SolverError

    try:
        with open(log, errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    if re.search(r"says infeasible|Problem is infeasible|infeasible - objective", text):
        info["cbc_claim"] = "infeasible (no solution file; CBC log)"
        return "infeasible", None, info
    last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "no log output")
    raise SolverError(f"CBC failed to solve the model and wrote no solution: {last}")


def solve_pulp(
    prob: pulp.LpProblem,
    time_limit: float,
    warm_start: bool = False,
    threads: int = 1,
    cbc_options: list[str] | None = None,
):
    """Solve ``prob`` (a minimisation) and return ``(status, best_bound, info)``.

    Parameters
    ----------
    prob : pulp.LpProblem
    time_limit : float
        Wall-clock seconds for the whole call, counted from its start (passed to the solver;
        CBC checks it between nodes, so a run may overshoot a little). When CBC crashes on the
        MIP start, the solve without it gets only what is left of ``time_limit`` (none left:
        status ``timeout``, ``info["stopped_by"]``), never a second full limit.
    warm_start : bool
        Pass the variables' initial values (``setInitialValue``) to the solver (CBC ``mipstart``).
    threads : int
        Solver threads.
    cbc_options : list of str, optional
        Extra CBC command-line options (e.g. ``["preprocess off"]``); ignored by HiGHS.

    Returns
    -------
    status : {"optimal", "feasible", "infeasible", "timeout"}
        ``feasible`` = an integer solution whose optimality was not proved; ``timeout`` = none found.
    best_bound : float or None
        The proved lower bound on the objective: the objective value when optimal, the bound read
        from the CBC log when the run was stopped, else ``None`` (unknown -- PuLP does not expose it).
    info : dict
        ``{"lp_solver": name, "pulp_status": str, "pulp_sol_status": int}``.
    """
    import pulp  # imported here: `import planners` stays light

    end = time.perf_counter() + float(time_limit)
    name = pulp_backend_name()
    info: dict = {"lp_solver": name}
    log_text = ""
    if name == "HiGHS":
        solver = pulp.HiGHS(msg=False, timeLimit=time_limit, threads=threads, warmStart=warm_start)
        prob.solve(solver)
    else:
        fd, log = tempfile.mkstemp(suffix=".cbc.log")
        os.close(fd)
        def cbc(mip_start: bool, seconds: float):
            return pulp.PULP_CBC_CMD(msg=False, timeLimit=seconds, threads=threads,
                                     warmStart=mip_start, logPath=log,
                                     options=list(cbc_options or []))

        try:
            try:
                prob.solve(cbc(warm_start, float(time_limit)))
            except pulp.PulpSolverError:
                if not warm_start:
                    return _cbc_failed(log, info)
                # The bundled CBC (2.10) was seen to crash reading a MIP start on larger models
                # (ilp_blocks on MiniMalloc A); retry once without it and record the fact.
                info["mip_start"] = "CBC crashed with the MIP start; solved again without it"
                left = end - time.perf_counter()
                if left < MIN_SOLVER_SECONDS:
                    info["mip_start"] = "CBC crashed with the MIP start; no time left to solve again"
                    info["stopped_by"] = "time_limit"
                    return "timeout", None, info
                info["retry_time_limit"] = round(left, 6)
                try:
                    prob.solve(cbc(False, left))
                except pulp.PulpSolverError:
                    return _cbc_failed(log, info)
            with open(log, errors="replace") as f:
                log_text = f.read()
        finally:
            os.unlink(log)
    status = _status(prob)
    info.update(pulp_status=pulp.LpStatus[prob.status], pulp_sol_status=int(prob.sol_status))
    bound = None
    if status == "optimal":
        bound = pulp.value(prob.objective)
    elif log_text:
        bound = _cbc_log_bound(log_text)
    if bound is not None and not math.isfinite(bound):
        bound = None
    return status, bound, info
