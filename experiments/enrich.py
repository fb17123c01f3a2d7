"""Extra columns computed from a run's problem after planning: one home for the RV64 and TFLite
Micro enrichment of records (``memplan compare --rv64`` and sweeps with ``rv64``/``tflm``).

* :func:`rv64_columns` -- one run: emulated RV64 instructions and cycles of the planner's C
  allocator core (:func:`experiments.rv64.estimate`, the U74 and C906 cycle models), and whether
  the core's offsets equal the Python planner's.
* :func:`tflm_columns` -- one ``.tflite`` model: the arena TFLite Micro's own planner needs, head
  and tail, in bytes (:func:`experiments.runtimes.tflm.oracle.tflm_arena`).
* :func:`add_rv64_columns` -- the same RV64 columns for a table of records.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RV64_COLUMNS", "rv64_columns", "tflm_columns", "add_rv64_columns"]

#: The RV64 columns, in order (instructions: count; cycles: core clock cycles; a bool).
RV64_COLUMNS = ("rv64_instructions", "rv64_cycles_u74", "rv64_cycles_c906", "rv64_offsets_match")


def rv64_columns(problem, planner: str) -> dict[str, Any]:
    """The :data:`RV64_COLUMNS` of ``planner`` on ``problem`` (its capacity is ignored), ``{}``
    for a planner without an RV64 core, or ``{"rv64_error": reason}`` when the toolchain or the
    emulator is missing or the estimate fails (never raises for those)."""
    from experiments import rv64

    if planner not in rv64.CORE_NAMES:
        return {}
    ok, reason = rv64.available()
    if not ok:
        return {"rv64_error": reason}
    try:
        est = rv64.estimate(problem.with_capacity(None), planner)
    except Exception as e:  # noqa: BLE001 - one failing estimate must not lose the others
        return {"rv64_error": f"{type(e).__name__}: {e}"}
    return dict(zip(RV64_COLUMNS, (est.rv64_instructions, est.rv64_cycles_u74,
                                   est.rv64_cycles_c906, est.offsets_match), strict=True))


def tflm_columns(path: str) -> dict[str, Any]:
    """``tflm_arena_head``, ``tflm_arena_tail``, ``tflm_arena_total`` (bytes) of the ``.tflite``
    model at ``path`` as TFLite Micro plans it, or ``{"tflm_error": message}`` (never raises)."""
    from experiments.runtimes.tflm.oracle import tflm_arena

    try:
        a = tflm_arena(path)
    except Exception as e:  # noqa: BLE001
        return {"tflm_error": str(e)[-300:]}
    return {"tflm_arena_head": a.head, "tflm_arena_tail": a.tail, "tflm_arena_total": a.total}


def add_rv64_columns(df, problems: dict, jobs: int = 1):
    """``df`` (comparison records: ``workload``, ``planner``, ``error``) with the
    :data:`RV64_COLUMNS` added from :func:`rv64_columns` for planners with an RV64 core (other
    rows: empty); a failed estimate's reason is appended to the row's ``error``.

    ``jobs > 1`` runs the estimates in that many processes (same values: the emulation is
    deterministic). Returns ``(df, message)``; when ziglang/unicorn are missing the columns are
    absent and the message says why.
    """
    from experiments import rv64

    ok, reason = rv64.available()
    if not ok:
        return df, f"RV64 columns omitted: {reason}"
    df = df.copy()
    for c in RV64_COLUMNS:
        df[c] = None
    todo = [(i, row["workload"], row["planner"]) for i, row in df.iterrows()
            if row["planner"] in rv64.CORE_NAMES and row["workload"] in problems]
    if jobs > 1 and len(todo) > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as ex:
            results = list(ex.map(rv64_columns, [problems[w] for _, w, _ in todo],
                                  [p for _, _, p in todo]))
    else:
        results = [rv64_columns(problems[w], p) for _, w, p in todo]
    for (i, _, _), cols in zip(todo, results, strict=True):
        if "rv64_error" in cols:
            df.at[i, "error"] = (str(df.at[i, "error"]) + f" rv64: {cols['rv64_error']}").strip()
            continue
        for c in RV64_COLUMNS:
            df.at[i, c] = cols[c]
    return df, ""
