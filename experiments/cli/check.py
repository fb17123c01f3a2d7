"""``memplan check PLAN.csv``: validate a plan made by any tool.

PLAN.csv is a solved MiniMalloc CSV: ``id,lower,upper,size`` (half-open lifetimes ``[lower,
upper)`` in steps, sizes in bytes), optional ``alignment``, and an ``offset`` column (bytes), as
``memplan plan -o`` and MiniMalloc write it. :func:`planners.validate.plan_violations` collects
every violation: each pair of buffers live at the same step whose address ranges overlap, each
misaligned or negative offset, each buffer that ends above the capacity (``--capacity``, else the
``NAME.CAPACITY.csv`` file name, else none). The groups a plan CSV records (``alias_of`` /
``alias_delta``: in-place results and views sitting in their parent; ``colocate``: buffers that
share one offset; :mod:`planners.io`) are part of the problem checked, so aliased members may share
addresses and must sit at their parent's offset plus the delta.

Exit status: 0 for a valid plan (printing the arena, the lower bound -- max live bytes,
:func:`planners.lower_bound` -- and their ratio), 1 for an invalid one (listing every violation
on stdout, one summary line on stderr), 2 for a malformed file (one ``memplan: error:`` line).
``--json`` prints one JSON object instead.

``memplan check PROGRAM.pte`` validates ExecuTorch's own plan of every method of a program (the
extra ``[executorch]``; :func:`pte_check_report`, :func:`experiments.runtimes.executorch.pte_plan`:
lifetimes from the instruction order; in-place results, views and ExecuTorch's elided static views
one buffer with their base; each ``mem_id`` its own pool, checked against the arena size the
program declares).
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from pathlib import Path

__all__ = ["COMMANDS", "add_parsers", "run", "read_offsets", "check_report", "pte_check_report",
           "note_offsets_ignored", "note_offsets_pinned"]

#: Sub-command names handled by :func:`run`.
COMMANDS = ("check",)


def add_parsers(subparsers) -> None:
    """Add the ``check`` sub-command to an argparse ``subparsers`` object."""
    c = subparsers.add_parser(
        "check", help="validate a solved MiniMalloc CSV (offset column) made by any tool",
        description="Check a plan: list every overlapping pair, misalignment and capacity "
                    "overflow (exit 1), or print the arena, the lower bound and their ratio "
                    "(exit 0). A malformed file exits 2.")
    c.add_argument("plan", help="MiniMalloc CSV with columns id,lower,upper,size[,alignment],offset, "
                                "or an ExecuTorch .pte")
    from experiments.cli.flags import add_capacity_flag, add_json_flag

    add_capacity_flag(c)
    add_json_flag(c)
    from experiments.cli.common import add_pool_flags

    add_pool_flags(c, ignore_offsets=False)


def _header(path: Path) -> list[str]:
    with path.open(newline="") as f:
        return [h.strip() for h in next(csv.reader(f), [])]


def note_offsets_ignored(path: str | Path, file=None) -> None:
    """For ``memplan plan``: one line on ``file`` (default stderr) when ``path`` is a CSV with an
    ``offset`` column, which ``plan`` ignores (it plans again)."""
    p = Path(path)
    if p.suffix != ".csv" or not p.is_file():
        return
    try:
        has = "offset" in _header(p)
    except (OSError, UnicodeDecodeError, csv.Error):
        return  # the reader names the fault
    if has:
        print(f"memplan: note: {p} has an offset column; plan re-plans it, ignoring the given "
              f"offsets (use `memplan check {p}` to validate them)", file=file or sys.stderr)


def note_offsets_pinned(path: str | Path, problem, command: str = "plan", file=None) -> None:
    """For ``plan``, ``view`` and ``compare``: one line on ``file`` (default stderr) when
    ``problem``, read from the CSV ``path``, has buffers pinned by the file's ``offset`` column
    (MiniMalloc's reading: a given offset is a fixed position), naming how many, so an arena
    above the unpinned optimum is not taken for the planner's own result. ``plan`` has
    ``--ignore-offsets``, which re-plans them; the other commands read the column as pins."""
    if not str(path).endswith(".csv") or problem is None or "pins" not in problem.features:
        return
    k = int((problem.pins >= 0).sum())
    how = ("--ignore-offsets re-plans them" if command == "plan" else
           f"{command} keeps them there (`memplan plan {path} --ignore-offsets` "
           "plans every buffer)")
    print(f"memplan: note: {k} of {problem.n} buffers are pinned by the offset column of {path} "
          f"(fixed positions, MiniMalloc's reading); {how}", file=file or sys.stderr)


def read_offsets(path: str | Path, ids: list[str]) -> list[int]:
    """The ``offset`` column of a solved MiniMalloc CSV, in the order of ``ids`` (bytes).

    The other columns are read (and checked) by :func:`planners.read_minimalloc_csv`; this reads
    the same rows again for the offsets.

    Raises
    ------
    ProblemError
        No ``offset`` column, or a row whose offset is missing or not an integer (naming the file,
        line and value).
    """
    from planners.errors import ProblemError
    from planners.io import csv_dict_reader

    path = Path(path)
    rows = csv_dict_reader(path)  # the same rows and ids as read_minimalloc_csv, never stripped
    header = list(rows.fieldnames or [])
    if "offset" not in header:
        raise ProblemError(f"{path}: header {header} has no column 'offset' (a plan to check "
                           "needs one offset per buffer; `memplan plan -o` writes it)")
    by_id: dict[str, int] = {}
    for row in rows:
        raw = str(row.get("offset") or "").strip()
        try:
            by_id[str(row.get("id") or "")] = int(raw)
        except ValueError:
            what = "missing value" if not raw else f"not an integer: {raw!r}"
            raise ProblemError(f"{path}:{rows.line_num}: column 'offset': {what}") from None
    return [by_id[i] for i in ids]


def read_pools(path: str | Path, problem) -> list[int]:
    """The ``pool`` column of a solved CSV of a problem with pools, as pool indices in problem
    order. Raises :class:`ProblemError` for a missing column or an unknown pool name."""
    from planners.errors import ProblemError
    from planners.io import csv_dict_reader

    rows = csv_dict_reader(path)
    if "pool" not in (rows.fieldnames or []):
        raise ProblemError(f"{path}: no column 'pool' (a plan with --pools names each buffer's "
                           "pool; `memplan plan --pools ... -o` writes it)")
    by_id = {}
    for row in rows:
        name = str(row.get("pool") or "").strip()
        by_id[str(row.get("id") or "")] = problem.pool_index(name)
    return [by_id[i] for i in problem.ids]


def check_report(path: str | Path, capacity: int | None = None, pools=None) -> dict:
    """Validate the plan in ``path`` (module docstring); ``pools``: the problem's pools
    (``--pools``), whose capacities and alignments the plan's ``pool`` column must obey. An
    ExecuTorch ``.pte`` is checked by :func:`pte_check_report` (its arenas are its own pools:
    ``pools`` is refused).

    Returns
    -------
    dict
        ``input``, ``buffers``, ``arena`` (highest ``offset + size`` over buffers with a valid
        offset, bytes), ``lower_bound`` (bytes), ``ratio`` (arena / lower bound, ``None`` for a
        zero bound), ``capacity``, ``valid``, ``counts`` (violations per rule) and
        ``violations`` (each ``{"rule", "buffers", "message"}``).

    Raises
    ------
    ProblemError
        A malformed file (see :func:`planners.read_minimalloc_csv` and :func:`read_offsets`).
    """
    from experiments.cli.common import refuse_capacity_with_pools, report_lower_bound
    from planners import read_minimalloc_csv
    from planners.errors import ProblemError
    from planners.io import capacity_from_name, csv_dict_reader
    from planners.validate import plan_violations

    refuse_capacity_with_pools(capacity, pools)  # each pool has its own capacity
    if str(path).endswith(".pte"):  # ExecuTorch's own plan (the extra [executorch])
        if pools:
            raise ProblemError(f"{path}: an ExecuTorch program names its own arenas (mem_id, "
                               "checked against their declared sizes); --pools is for CSV plans")
        return pte_check_report(path, capacity)
    if not pools and "pool" in (csv_dict_reader(path).fieldnames or []):
        raise ProblemError(f"{path}: the plan places buffers in pools (column 'pool'); give the "
                           "pools with --pools NAME=BYTES[:ALIGN],... to check it")
    problem = read_minimalloc_csv(path, capacity=None, offsets="ignore", pools=pools)
    offsets = read_offsets(path, problem.ids)
    cap = capacity if capacity is not None else capacity_from_name(path)
    if problem.pools:  # each pool has its own capacity, checked per pool: no arena capacity
        cap = None
    pool_of = read_pools(path, problem) if problem.pools else None
    violations = plan_violations(problem, offsets, None if problem.pools else cap, pool_of)
    sizes = problem.sizes.tolist()
    arenas = {}
    if problem.pools:  # one arena per pool; the plan's arena is their sum (Plan.arena_size)
        for k, q in enumerate(problem.pools):
            arenas[q.name] = max((o + z for o, z, p in zip(offsets, sizes, pool_of, strict=True)
                                  if o >= 0 and p == k and z > 0), default=0)
        arena = sum(arenas.values())
    else:
        arena = max((o + z for o, z in zip(offsets, sizes, strict=True) if o >= 0), default=0)
    lb = report_lower_bound(problem)  # the bound `memplan plan` prints for this file too
    extra = {"arenas": arenas} if problem.pools else {}
    return {
        **extra,
        "input": str(path), "buffers": problem.n, "arena": int(arena), "lower_bound": int(lb),
        "ratio": round(arena / lb, 6) if lb else None, "capacity": cap,
        "valid": not violations, "counts": dict(Counter(v.rule for v in violations)),
        "violations": [v.as_dict() for v in violations],
    }


def pte_check_report(path: str | Path, capacity: int | None = None) -> dict:
    """Validate ExecuTorch's own plan of every method of the program ``path`` (``.pte``).

    Each method's plan is read by :func:`experiments.runtimes.executorch.pte_plan`: tensors that
    share storage (in-place results, views, ExecuTorch's elided static views) are one buffer of
    the model, and each ``mem_id`` is its own pool ``mem{k}`` checked against the arena size
    the program declares for it (``non_const_buffer_sizes[k]``, bytes) as its capacity; every
    other overlap of two tensors live at the same instruction step is a violation.

    Parameters
    ----------
    path : str or Path
    capacity : int, optional
        Bytes; for a program with one arena, checked instead of its declared size. A program
        with several arenas refuses it (each arena has its own declared size).

    Returns
    -------
    dict
        As :func:`check_report`, for the first method (``buffers``, ``arena`` -- the sum of its
        arenas' highest ``offset + size`` --, ``lower_bound``, ``ratio``, ``capacity`` -- the
        declared bytes of its arena, ``None`` with several --), with ``arenas`` (``{pool: bytes
        used}``) and ``declared`` (``{pool: declared bytes}``) for several arenas; ``valid``,
        ``counts`` and ``violations`` over every method (messages prefixed with the method's
        name when there are several); ``methods``: one summary per method.

    Raises
    ------
    ProblemError
        An unreadable program, or ``capacity`` for a program with several arenas.
    RuntimeMissing
        The extra ``[executorch]`` is not installed.
    """
    from experiments.runtimes.executorch import pte_capacity, pte_methods, pte_plan, pte_violations
    from planners import lower_bound

    names = pte_methods(path)
    methods, violations = [], []
    for k, method in enumerate(names):
        plan = pte_plan(path, k)
        problem = plan.problem
        bad = pte_violations(plan, capacity)
        cap = pte_capacity(plan, capacity)
        lb = lower_bound(problem)
        arena = plan.arena_size
        summary = {"method": method, "buffers": problem.n, "arena": int(arena),
                   "lower_bound": int(lb), "ratio": round(arena / lb, 6) if lb else None,
                   "capacity": cap, "valid": not bad, "storage_shared": plan.info["storage_groups"]}
        if problem.pools:
            declared = plan.info["non_const_buffer_sizes"]
            summary["arenas"] = {q: int(v) for q, v in plan.arenas.items()}
            summary["declared"] = {q.name: int(declared[int(q.name[3:])]) for q in problem.pools}
        methods.append(summary)
        for v in bad:
            d = v.as_dict()
            if len(names) > 1:
                d["message"] = f"method {method!r}: {d['message']}"
            violations.append(d)
    first = dict(methods[0]) if methods else {"buffers": 0, "arena": 0, "lower_bound": 0,
                                              "ratio": None, "capacity": capacity}
    first.pop("method", None)
    first.pop("storage_shared", None)
    return {
        "input": str(path), **first, "valid": not violations,
        "counts": dict(Counter(v["rule"] for v in violations)), "violations": violations,
        "methods": methods,
    }


def run(args) -> int:
    """Run ``memplan check`` with parsed ``args``: 0 valid, 1 invalid. A malformed file raises
    :class:`planners.MemplanError` for the caller to report (exit 2)."""
    from experiments.cli.common import parse_pools

    rep = check_report(args.plan, args.capacity, parse_pools(getattr(args, "pools", None)))
    if args.json:
        print(json.dumps(rep))
    else:
        for k in ("input", "buffers", "arena", "arenas", "declared", "lower_bound", "ratio",
                  "capacity", "valid"):
            if k not in rep:
                continue
            v = rep[k]
            print(f"{k:12s} {'-' if v is None else v}")
        for m in rep.get("methods", [])[1:] if len(rep.get("methods", [])) > 1 else []:
            print(f"{'method':12s} {m['method']}: {m['buffers']} buffers, arena {m['arena']}, "
                  f"lower bound {m['lower_bound']}, valid {m['valid']}")
        if not rep["valid"]:
            print(f"{'violations':12s} {len(rep['violations'])}")
            for v in rep["violations"]:
                print(f"  {v['rule']:9s} {v['message']}")
    if rep["valid"]:
        return 0
    counts = ", ".join(f"{n} {rule}" for rule, n in rep["counts"].items())
    print(f"memplan: invalid plan {rep['input']}: {len(rep['violations'])} violation(s) ({counts})",
          file=sys.stderr)
    return 1
