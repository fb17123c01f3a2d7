"""``memplan plan`` of a problem with symbolic sizes (:mod:`planners.symbolic`): a CSV with a
``# dims: seq=1..2048`` line, or a ``"format": "memplan-symbolic"`` JSON.

``--at seq=128[,dim=v]`` plans that point (every size evaluated, bytes). Without ``--at`` the
problem is planned at the upper bounds (each buffer at its maximum over the box when a size
decreases in a dim), and ``plan`` prints one ``valid_for`` line: for which dim values its fixed
offsets are valid. An ``.onnx`` model takes ``--dims seq=1..2048`` to keep those ``dim_param``
dims symbolic (:func:`scheduling.onnx_import.onnx_symbolic_problem`; file order, activations
only, as ``plan`` of a model), then the same ``--at`` or the upper bounds.
"""

from __future__ import annotations

__all__ = ["add_at_flag", "symbolic_cli_problem"]


def add_at_flag(parser) -> None:
    """Add ``--at DIM=VALUE[,DIM=VALUE]`` (``plan`` only; dest ``at``)."""
    parser.add_argument("--at", default=None, metavar="DIM=VALUE[,DIM=VALUE]",
                        help="a problem with symbolic sizes (CSV with a '# dims:' line, or "
                             "memplan-symbolic JSON): plan at this point of its dims, e.g. "
                             "seq=128; default: plan at the upper bounds, valid for every point")
    parser.add_argument("--dims", default=None, metavar="DIM=LO..HI[,DIM=LO..HI]",
                        help="ONNX: keep these dim_params symbolic over closed ranges, e.g. "
                             "seq=1..2048 (each tensor's size must be affine in them); plan at "
                             "the upper bounds, or at --at")


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
    from planners.symbolic import (
        is_symbolic_file,
        parse_point,
        read_symbolic_csv,
        read_symbolic_json,
    )

    at = getattr(args, "at", None)
    dims = getattr(args, "dims", None)
    onnx = dims is not None and str(args.input).endswith(".onnx")
    if dims is not None and not onnx:
        raise ValueError(f"--dims keeps an ONNX model's dim_params symbolic; {args.input} is "
                         "not an .onnx file (a symbolic CSV or JSON states its own dims)")
    if not onnx and not is_symbolic_file(str(args.input)):
        if at is not None:
            raise ValueError(f"--at sets the dims of a problem with symbolic sizes (a CSV with a "
                             f"'# dims:' line, or memplan-symbolic JSON); {args.input} has none "
                             "(an ONNX model: --dims DIM=LO..HI keeps its dim_params symbolic, then --at; or "
                             "--override NAME=VALUE)")
        return None, None
    bad = [flag for flag, on in (("--scheduler", args.scheduler is not None),
                                 ("--pipeline", str(args.pipeline) not in ("none", "None")),
                                 ("--pools", bool(args.pools)),
                                 ("--override", bool(args.override) and not onnx),
                                 ("--unified", args.unified)) if on]
    if bad:
        raise ValueError(f"{bad[0]} does not apply to a problem with symbolic sizes "
                         f"({args.input}); plan it with --planner, --capacity and --at")
    path = str(args.input)
    if onnx:
        from pathlib import Path

        from experiments.workloads import _onnx_overrides, parse_overrides
        from planners.errors import ProblemError
        from planners.symbolic import parse_dims
        from scheduling.onnx_import import onnx_symbolic_problem

        if not Path(path).exists():
            raise ProblemError(f"{path}: no such file")
        sp = onnx_symbolic_problem(path, parse_dims(dims, "--dims"),
                                   overrides=_onnx_overrides(parse_overrides(args.override)))
    elif path.endswith(".json"):
        sp = read_symbolic_json(path)
    else:
        sp = read_symbolic_csv(path)
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
