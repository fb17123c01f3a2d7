"""``memplan plan`` of a problem with symbolic sizes (:mod:`planners.symbolic`): a CSV with a
``# dims: seq=1..2048`` line, or a ``"format": "memplan-symbolic"`` JSON.

``--at seq=128[,dim=v]`` plans that point (every size evaluated, bytes). Without ``--at`` the
problem is planned at the upper bounds (each buffer at its maximum over the box when a size
decreases in a dim), and ``plan`` prints one ``valid_for`` line: for which dim values its fixed
offsets are valid.
"""

from __future__ import annotations

__all__ = ["add_at_flag", "symbolic_cli_problem"]


def add_at_flag(parser) -> None:
    """Add ``--at DIM=VALUE[,DIM=VALUE]`` (``plan`` only; dest ``at``)."""
    parser.add_argument("--at", default=None, metavar="DIM=VALUE[,DIM=VALUE]",
                        help="a problem with symbolic sizes (CSV with a '# dims:' line, or "
                             "memplan-symbolic JSON): plan at this point of its dims, e.g. "
                             "seq=128; default: plan at the upper bounds, valid for every point")


def symbolic_cli_problem(args, capacity):
    """``(problem, valid_for)`` for ``memplan plan`` of ``args.input``, or ``(None, None)``
    when the input has no symbolic sizes (then ``--at`` is refused with a ``ValueError``).

    ``capacity``: bytes, ``None`` or ``"auto"`` (a CSV's ``NAME.CAPACITY.csv``). ``valid_for``:
    one line, the dim values the plan's offsets are valid for. Raises ``ValueError`` naming a
    flag the symbolic input does not take (``--scheduler``, ``--pipeline``, ``--pools``,
    ``--override``, ``--unified``), and :class:`planners.errors.ProblemError` for a bad file or
    a bad ``--at`` (unknown, missing or out-of-range dim).
    """
    from planners.io import capacity_from_name
    from planners.symbolic import (is_symbolic_file, parse_point, read_symbolic_csv,
                                   read_symbolic_json)

    at = getattr(args, "at", None)
    if not is_symbolic_file(str(args.input)):
        if at is not None:
            raise ValueError(f"--at sets the dims of a problem with symbolic sizes (a CSV with a "
                             f"'# dims:' line, or memplan-symbolic JSON); {args.input} has none "
                             "(an ONNX model's dim_params take --override NAME=VALUE)")
        return None, None
    bad = [flag for flag, on in (("--scheduler", args.scheduler is not None),
                                 ("--pipeline", str(args.pipeline) not in ("none", "None")),
                                 ("--pools", bool(args.pools)), ("--override", bool(args.override)),
                                 ("--unified", args.unified)) if on]
    if bad:
        raise ValueError(f"{bad[0]} does not apply to a problem with symbolic sizes "
                         f"({args.input}); plan it with --planner, --capacity and --at")
    path = str(args.input)
    sp = read_symbolic_json(path) if path.endswith(".json") else read_symbolic_csv(path)
    if capacity == "auto":
        capacity = capacity_from_name(path) if path.endswith(".csv") else None
    if capacity is not None:
        sp = sp.with_capacity(capacity)
    if at is not None:
        point = parse_point(at)
        problem = sp.at(point)
        text = ", ".join(f"{d}={v}" for d, v in sp.check_point(point).items())
        return problem, f"{text} only (planned at this point; other values need their own plan)"
    box = ", ".join(f"{d} in [{lo}, {hi}]" for d, (lo, hi) in sp.dims.items())
    how = ("planned at the upper bounds; every size is non-decreasing in each dim"
           if sp.nonneg else "planned at each buffer's maximum over the ranges; some size "
                             "decreases in a dim")
    return sp.envelope(), f"every {box} (offsets fixed; {how})"
