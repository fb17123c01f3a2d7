"""Argument helpers shared by the ``memplan`` command modules (parsing only, no work)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["OneLineParser", "split_list", "positive_seconds", "capacity_bytes", "package_version",
           "os_error_text", "parse_pools", "add_pool_flags", "parse_param", "add_param_flag",
           "DEFAULT_TIME_LIMIT", "DEFAULT_PIPELINE", "parse_pipeline", "add_pipeline_flag",
           "add_time_limit_flag", "note_time_limit", "params_of", "time_limit_of",
           "planner_time_limit", "report_lower_bound",
           "refuse_capacity_with_pools"]


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line, as every other input error:
    ``memplan: error: MESSAGE (see `memplan COMMAND --help`)`` on stderr, exit status 2, no
    usage block. Its subparsers are of the same class (argparse creates them with the parent's
    class), so a bad ``--time-limit``, ``--param``, ``--capacity``, an unknown option or a
    missing argument of any subcommand reads the same."""

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown argument is reported by the subcommand's parser (so the
        line names ``memplan COMMAND --help``, not the top-level one)."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            sub = next((a.choices.get(getattr(ns, a.dest, None)) for a in self._actions
                        if isinstance(a, argparse._SubParsersAction)), None)
            (sub or self).error(f"unrecognized arguments: {' '.join(extra)}")
        return ns

    def error(self, message):  # noqa: D401 - argparse's hook
        sys.stderr.write(f"memplan: error: {message} (see `{self.prog} --help`)\n")
        sys.exit(2)


#: The one solver time limit (seconds) of every command that plans or schedules (``plan``,
#: ``view``, ``export``, ``compare``, ``budget``, ``schedule``; a sweep config's ``time_limit``
#: defaults to it too): 10 s was already the limit of ``compare``, ``view``, ``export`` and sweep
#: configs (so their committed numbers keep their meaning), and it keeps one interactive command
#: under a quarter minute; ``plan`` (the planner's own default, 30 s for CP-SAT) and ``budget``
#: (30 s) differed. ``make run`` passes 2 s on purpose (a quick table; ``compare.md`` names the
#: limit that produced it). Every command prints the limit beside its result. Defined in
#: :mod:`experiments.harness` (below the command line, so sweep configs share it).
from experiments.harness import DEFAULT_TIME_LIMIT  # noqa: E402

#: The one default graph pipeline of every command that builds a problem from a model (``plan``,
#: ``view``, ``export``, ``compare``): ``"none"``, the model as written, so that every entry
#: point gives the same buffers and bytes for the same model (the lifetimes the runtime, e.g.
#: TFLite Micro, sees); passes such as ``simplify,views,fuse,inplace`` are asked for by name.
DEFAULT_PIPELINE = "none"


def parse_pools(text: str | None):
    """The ``--pools`` text as :class:`planners.model.MemoryPool` objects in preference order
    (:func:`planners.io.parse_pools`), each size read by the command line's one byte-size parser
    (:func:`experiments.cli.flags.parse_bytes`: ``256k``, ``4MiB``; :func:`~experiments.cli.flags.pools_arg`).
    ``[]`` for ``None`` or empty text.

    Raises
    ------
    planners.errors.ProblemError
        An item that is not ``NAME=BYTES[:ALIGN]`` (quoting it), or what
        :func:`planners.io.parse_pools` refuses (a repeated name, a bad alignment).
    """
    import argparse

    from experiments.cli.flags import pools_arg
    from planners.errors import ProblemError
    from planners.io import parse_pools as parse

    if text is None:
        return parse(text)
    try:
        canonical = pools_arg(text)
    except argparse.ArgumentTypeError as e:
        raise ProblemError(str(e)) from None
    return parse(canonical)


def parse_param(text: str):
    """An argparse type: ``NAME=VALUE`` -> ``(NAME, value)``
    (:func:`experiments.cli.flags.parse_param`, the one definition).

    >>> parse_param("time_limit=2.5")
    ('time_limit', 2.5)
    """
    from experiments.cli.flags import parse_param as parse

    return parse(text)


def add_param_flag(parser, what: str = "planner") -> None:
    """Add ``--planner-param NAME=VALUE`` with its alias ``--param`` (repeatable,
    :func:`parse_param`, dest ``param``): :func:`experiments.cli.flags.add_planner_param_flag`,
    the one definition (``what`` is accepted for older callers and ignored)."""
    from experiments.cli.flags import add_planner_param_flag

    add_planner_param_flag(parser)


def params_of(args) -> dict:
    """The ``--param`` pairs of parsed ``args`` as a dict (later ones win)."""
    return dict(getattr(args, "param", None) or [])


def add_time_limit_flag(parser, what: str = "planners") -> None:
    """Add ``--time-limit SECONDS`` with the shared default :data:`DEFAULT_TIME_LIMIT`:
    :func:`experiments.cli.flags.add_time_limit_flag`, the one definition (``what`` is accepted
    for older callers and ignored: the help is the same on every command)."""
    from experiments.cli.flags import add_time_limit_flag as add

    add(parser)


def planner_time_limit(name: str, time_limit: float | None, params=None) -> float | None:
    """The time limit (seconds) planner ``name`` runs with: ``params["time_limit"]`` when given
    (``--planner-param``), else ``time_limit``; ``None`` for a planner that takes no time limit (a
    heuristic), which every command prints as "no time limit"
    (:func:`experiments.cli.flags.time_limit_text`). An unknown name gives ``time_limit``
    (the registry refuses the name elsewhere, in one line).

    >>> planner_time_limit("naive", 10.0), planner_time_limit("cpsat", 10.0)
    (None, 10.0)
    """
    from planners.registry import PLANNERS

    cls = PLANNERS.get(name)
    if cls is not None and "time_limit" not in cls._param_names():
        return None
    return float((params or {}).get("time_limit", time_limit))


def report_lower_bound(problem) -> int:
    """The ``lower_bound`` that ``memplan plan`` and ``memplan check`` print (bytes): the
    buffers' own bound, :func:`planners.bounds.lower_bound` of ``problem`` with every pin
    dropped (max live bytes over the schedule steps, half-open ``[start, end)`` lifetimes,
    padded to the gcd of the alignments; gaps, colocations and pools counted as there).

    One function for both commands, because they read one CSV two ways: ``check`` reads its
    ``offset`` column as the plan to check, ``plan`` as fixed positions (MiniMalloc's pins); the
    bound with the pins counted is at least the highest pinned ``offset + size`` -- for a solved
    file, the arena itself -- so the two commands printed two bounds (e.g. 264 and 265) for one
    file. ``plan`` prints the pinned problem's bound as ``pinned_bound`` beside it.

    Raises
    ------
    planners.errors.ProblemError
        Only as the :class:`planners.model.Problem` constructor does (never for a problem that
        was already valid).
    """
    from planners import lower_bound

    if "pins" not in problem.features:
        return int(lower_bound(problem))
    from planners.model import Buffer, Problem

    bufs = [Buffer(b.id, b.start, b.end, b.size, b.alignment, b.kind, None, b.hint, b.gaps,
                   b.pools) for b in problem.buffers]
    free = Problem(bufs, capacity=problem.capacity, alignment=problem.alignment,
                   name=problem.name, pools=problem.pools or None,
                   colocations=problem.colocations or None)
    return int(lower_bound(free))


def time_limit_of(args) -> float:
    """The ``--time-limit`` of parsed ``args``, :data:`DEFAULT_TIME_LIMIT` when not given."""
    tl = getattr(args, "time_limit", None)
    return DEFAULT_TIME_LIMIT if tl is None else tl


def parse_pipeline(text: str | None) -> str | None:
    """A ``--pipeline`` value: ``None``, ``""`` or ``"none"`` -> ``None`` (no pass), else the
    comma-separated pass names as given.

    >>> parse_pipeline("none"), parse_pipeline(""), parse_pipeline("simplify,fuse")
    (None, None, 'simplify,fuse')
    """
    if text is None or text.strip().lower() in ("", "none"):
        return None
    return text.strip()


def add_pipeline_flag(parser) -> None:
    """Add ``--pipeline`` with the shared default :data:`DEFAULT_PIPELINE`
    (:func:`experiments.cli.flags.add_pipeline_flag`, the one definition)."""
    from experiments.cli.flags import add_pipeline_flag as add

    add(parser)


def note_time_limit(names, time_limit, params=None, explicit: bool = True, file=None,
                    kind: str = "planner") -> None:
    """One line on ``file`` (stderr) when ``--time-limit`` was given but a named planner takes
    no time limit (a heuristic): ``memplan: note: planner 'naive' has no time limit; --time-limit
    ignored``. ``explicit``: whether the user gave the flag (the default limit is never noted).
    ``kind="scheduler"``: the names are schedulers (``schedule``, ``plan --scheduler``), in the
    same words (``scheduler 'min_live' has no time limit; ...``)."""
    import sys

    if kind == "scheduler":
        from scheduling.schedulers import SCHEDULERS as registry
    else:
        from planners.registry import PLANNERS as registry

    if not explicit or time_limit is None:
        return
    deaf = [n for n in names if n in registry and "time_limit" not in registry[n]._param_names()]
    if deaf:
        what = f"{kind} " if len(deaf) == 1 else f"{kind}s "
        print(f"memplan: note: {what}{', '.join(map(repr, deaf))} "
              f"{'has' if len(deaf) == 1 else 'have'} no time limit; --time-limit "
              f"{time_limit:g} s ignored for {'it' if len(deaf) == 1 else 'them'}",
              file=file or sys.stderr)


def refuse_capacity_with_pools(capacity, pools) -> None:
    """``--capacity`` and ``--pools`` together: each pool has its own capacity (``NAME=BYTES``),
    so one arena capacity has nothing to apply to; raises :class:`planners.errors.ProblemError`
    (one ``memplan: error:`` line) rather than print a capacity that was not checked."""
    if capacity is not None and pools:
        from planners.errors import ProblemError

        raise ProblemError(f"--capacity {capacity} with --pools: each pool has its own capacity "
                           "(NAME=BYTES in --pools), so an arena capacity applies to none of "
                           "them; drop --capacity or --pools")


def add_pool_flags(parser, ignore_offsets: bool = True) -> None:
    """Add ``--pools`` (:func:`experiments.cli.flags.add_pools_flag`, sizes read by
    :func:`experiments.cli.flags.parse_bytes`) and ``--ignore-offsets`` to a command that plans
    or checks."""
    from experiments.cli.flags import add_pools_flag

    add_pools_flag(parser)
    if ignore_offsets:
        parser.add_argument("--ignore-offsets", action="store_true",
                            help="a CSV 'offset' column is read as fixed positions (MiniMalloc's "
                                 "reading); this flag ignores it and plans every buffer")


def split_list(values: list[str] | None) -> list[str] | None:
    """Command-line names given as repeated, comma- and/or space-separated values, in order;
    ``None`` when none were given (:func:`experiments.cli.flags.split_names`, the one parser).

    >>> split_list(["a,b", "c"]), split_list(None)
    (['a', 'b', 'c'], None)
    """
    from experiments.cli.flags import split_names

    return split_names(values)


def positive_seconds(text: str) -> float:
    """An argparse type: seconds > 0 (:func:`experiments.cli.flags.positive_seconds`, the one
    definition)."""
    from experiments.cli.flags import positive_seconds as parse

    return parse(text)


def capacity_bytes(text: str) -> int:
    """An argparse type: a capacity in bytes in ``[0, 2**62)``, ``1k``/``4MiB`` accepted
    (:func:`experiments.cli.flags.parse_bytes`, the one byte-size parser; raises
    ``argparse.ArgumentTypeError``)."""
    from experiments.cli.flags import parse_bytes

    return parse_bytes(text)


def os_error_text(e: OSError) -> str:
    """An ``OSError`` as one line naming the file and the cause (``PATH: No space left on
    device``), for the CLI's ``memplan: error:`` line."""
    where = f"{e.filename}: " if getattr(e, "filename", None) else ""
    return f"{where}{e.strerror or e}"


def package_version() -> str:
    """The installed ``memplan`` distribution's version, or ``"unknown"``."""
    try:
        from importlib.metadata import version

        return version("memplan")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "unknown"
