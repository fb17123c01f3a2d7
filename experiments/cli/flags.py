"""The flags that several ``memplan`` subcommands share, each defined once (spelling, type, help).

Every command module adds a shared flag through the ``add_*`` function here, so that a flag reads
and parses the same on every subcommand: lists of names take commas, spaces or repetition
(``--planners a,b``, ``--planners a b``, ``--planners a --planners b``, one parser,
:func:`split_names`); byte sizes take ``1k``, ``256k``, ``4MiB`` (one parser, :func:`parse_bytes`)
for ``--capacity``, ``--budget`` and the sizes inside ``--pools``; planner parameters are
``--planner-param`` (``--param`` is its alias) and scheduler parameters ``--scheduler-param``.
``tests/test_cli_flags.py`` walks every subcommand's parser and holds each shared flag to the same
type and help everywhere, and every option to having help.
"""

from __future__ import annotations

import argparse
import os
import re

__all__ = ["parse_bytes", "bytes_text", "pools_arg", "split_names", "NamesAction",
           "add_names_flag", "add_planner_param_flag", "add_scheduler_param_flag",
           "add_capacity_flag", "add_pools_flag", "add_override_flag", "add_size_attr_flag",
           "add_minimalloc_dir_flag", "add_json_flag", "add_time_limit_flag", "add_pipeline_flag",
           "time_limit_text", "SHARED_FLAGS", "MAX_BYTES"]

#: Exclusive upper end of a byte size on the command line (the planners' int64 headroom).
MAX_BYTES = 2**62

#: ``k``/``K``/``KiB``/``kB`` = 1024, ``M``/``MiB`` = 1024**2, ``G``/``GiB`` = 1024**3 (binary
#: units throughout, as --pools always read them; ``kB`` is 1024 too, never 1000).
_SCALE = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_BYTES_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([kKmMgG])(?:i?[bB])?|[bB])?\s*")


def parse_bytes(text: str) -> int:
    """A byte size on the command line: ``"262144"``, ``"256k"``, ``"4MiB"``, ``"1.5M"`` -> bytes.

    Parameters
    ----------
    text : str
        A whole or decimal number with an optional binary unit: ``k``/``K``/``KiB``/``kB``
        (1024 bytes), ``M``/``MiB`` (1024**2), ``G``/``GiB`` (1024**3) or ``B``.

    Returns
    -------
    int
        Bytes, in ``[0, 2**62)``.

    Raises
    ------
    argparse.ArgumentTypeError
        Not a byte size, not a whole number of bytes (``0.3k``), or outside ``[0, 2**62)``; the
        message quotes the text. (A ``TypeError`` subclass of nothing else: argparse turns it
        into a one-line usage error.)

    Examples
    --------
    >>> parse_bytes("1k"), parse_bytes("256K"), parse_bytes("4MiB"), parse_bytes("1.5M")
    (1024, 262144, 4194304, 1572864)
    >>> parse_bytes("264")
    264
    """
    m = _BYTES_RE.fullmatch(str(text))
    if not m and re.fullmatch(r"\s*-\s*\d+(?:\.\d+)?\s*\w*\s*", str(text)):
        raise argparse.ArgumentTypeError(f"bytes must be in [0, 2**62), got {text}")
    if not m:
        raise argparse.ArgumentTypeError(
            f"expected bytes (an integer, or a size such as 1k, 256k or 4MiB), got {text!r}")
    number, unit = m.group(1), (m.group(2) or "").lower()
    if "." in number:  # exact: a decimal times a power of two, no float rounding
        whole, frac = number.split(".")
        num, den = int(whole + frac) * _SCALE[unit], 10 ** len(frac)
        if num % den:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes")
        value = num // den
    else:
        value = int(number) * _SCALE[unit]
    if value >= MAX_BYTES:
        raise argparse.ArgumentTypeError(f"bytes must be in [0, 2**62), got {text} ({value})")
    return value


def bytes_text(n: int) -> str:
    """``n`` bytes as :func:`parse_bytes` reads it back, exactly (plain digits).

    >>> bytes_text(parse_bytes("256k"))
    '262144'
    """
    return str(int(n))


def pools_arg(text: str) -> str:
    """An argparse type for ``--pools NAME=BYTES[:ALIGN],...``: each capacity read by
    :func:`parse_bytes` (or ``inf``), the text returned in plain bytes for
    :func:`planners.io.parse_pools` (which checks names, order and alignments).

    Raises
    ------
    argparse.ArgumentTypeError
        An item that is not ``NAME=BYTES[:ALIGN]`` or whose size is not a byte size.

    >>> pools_arg("sram=256k:16,psram=4MiB")
    'sram=262144:16,psram=4194304'
    >>> pools_arg("dram=inf")
    'dram=inf'
    """
    out = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:  # left for planners.io.parse_pools to refuse, naming it
            out.append(item)
            continue
        name, sep, rest = item.partition("=")
        if not sep or not name.strip():
            raise argparse.ArgumentTypeError(
                f"--pools item {item!r}: expected NAME=BYTES[:ALIGN], e.g. sram=256k:16")
        size, colon, align = rest.partition(":")
        try:
            cap = "inf" if size.strip() == "inf" else str(parse_bytes(size))
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(
                f"--pools {item!r}: expected NAME=BYTES[:ALIGN], e.g. sram=256k:16 ({e})") from None
        out.append(f"{name.strip()}={cap}" + (f":{align.strip()}" if colon else ""))
    return ",".join(out)


def split_names(values) -> list[str] | None:
    """Names given as separate values (``--planners a b``), comma- or space-separated in one
    value (``"a, b"``), repeated or not, in order; ``None`` when none were given (the flag's
    default applies). A value that names an existing file is one name, whatever it holds
    (a workload path may contain spaces or commas).

    >>> split_names(["a,b", "c"]), split_names(["a, b"]), split_names(None), split_names([])
    (['a', 'b', 'c'], ['a', 'b'], None, None)
    """
    if not values:
        return None
    out: list[str] = []
    for v in values:
        text = str(v)
        if os.path.exists(text):
            out.append(text)
            continue
        out.extend(x for x in re.split(r"[,\s]+", text) if x)
    return out or None


class NamesAction(argparse.Action):
    """``nargs="*"`` values appended over repetitions and split at commas (:func:`split_names`):
    ``--planners a b``, ``--planners a,b`` and ``--planners a --planners b`` give ``["a", "b"]``."""

    def __call__(self, parser, namespace, values, option_string=None):
        have = list(getattr(namespace, self.dest, None) or [])  # [] when given with no name
        setattr(namespace, self.dest, have + (split_names(values) or []))


_NAMES_HELP = {
    "--planners": "planner names, comma- or space-separated, repeatable (see `memplan list`); "
                  "default: every registered planner but the configurable engines whose "
                  "default duplicates a named planner (experiments.harness.default_planners)",
    "--workloads": "workload names, .csv, .onnx or .tflite paths, comma- or space-separated, "
                   "repeatable (default: the bundled ONNX models and seed examples)",
    "--schedulers": "compare operator schedulers (graph workloads only), comma- or "
                    "space-separated, repeatable: one row per (workload, scheduler, planner) in "
                    "compare_sched.csv",
}


def add_names_flag(parser, flag: str, *aliases: str, help_tail: str = "") -> None:
    """Add a list-of-names flag (``--planners``, ``--workloads``, ``--schedulers``) parsed by
    :class:`NamesAction`; ``aliases`` are older spellings kept (``view --planner``);
    ``help_tail`` is what the list means on this command, after the shared text."""
    parser.add_argument(flag, *aliases, action=NamesAction, nargs="*", default=None,
                        metavar="NAME", help=_NAMES_HELP[flag] + help_tail)


def parse_param(text: str):
    """An argparse type: ``NAME=VALUE`` -> ``(NAME, value)``, the value a JSON literal (number,
    ``true``/``false``, ``null``, list, string in quotes) or else the text itself as a string.
    ``ArgumentTypeError`` when there is no ``=`` or the name is not an identifier.

    >>> parse_param("time_limit=2.5"), parse_param("order=size"), parse_param("x=[1, 2]")
    (('time_limit', 2.5), ('order', 'size'), ('x', [1, 2]))
    """
    import json

    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def add_planner_param_flag(parser) -> None:
    """Add ``--planner-param NAME=VALUE`` (alias ``--param``; repeatable; dest ``param``)."""
    parser.add_argument("--planner-param", "--param", dest="param", action="append",
                        type=parse_param, default=[], metavar="NAME=VALUE",
                        help="a planner parameter (see `memplan list`), VALUE a JSON literal or "
                             "a string, e.g. engine=python; repeatable; --param is the same "
                             "flag; wins over --time-limit")


def add_scheduler_param_flag(parser, param_alias: bool = False, help_tail: str = "") -> None:
    """Add ``--scheduler-param NAME=VALUE`` (repeatable; dest ``scheduler_param``), on every
    command that takes ``--scheduler`` or ``--schedulers`` (``plan``, ``schedule``, ``export``,
    ``compare``; ``tests/test_cli_flags.py`` holds each to it). ``param_alias``: also accept
    ``--param`` for it (``schedule``, which has no planner, took ``--param`` for scheduler
    parameters before ``--scheduler-param`` existed); ``help_tail``: what the parameters do on
    this command, after the shared text."""
    names = ("--scheduler-param", "--param") if param_alias else ("--scheduler-param",)
    tail = ("; on this command --param is the same flag (there is no planner here)"
            if param_alias else "") + help_tail
    parser.add_argument(*names, dest="scheduler_param", action="append", type=parse_param,
                        default=[], metavar="NAME=VALUE",
                        help="a scheduler parameter (see `memplan list`), VALUE a JSON literal "
                             "or a string, e.g. deterministic_time=5; repeatable; wins over "
                             "--time-limit" + tail)


def add_capacity_flag(parser) -> None:
    """Add ``--capacity BYTES`` (:func:`parse_bytes`, default ``None``)."""
    parser.add_argument("--capacity", type=parse_bytes, default=None, metavar="BYTES",
                        help="arena capacity in bytes, e.g. 264, 1k or 4MiB (default: from a "
                             "NAME.CAPACITY.csv file name)")


def add_pools_flag(parser, help_tail: str = "") -> None:
    """Add ``--pools NAME=BYTES[:ALIGN],...``; the text is read when the command runs, by
    :func:`experiments.cli.common.parse_pools` (sizes by :func:`parse_bytes` through
    :func:`pools_arg`), so a bad item is the one-line ``memplan: error:`` of an input error;
    ``help_tail``: what the pools do on this command."""
    parser.add_argument("--pools", default=None, metavar="NAME=BYTES[:ALIGN],...",
                        help="named memory pools in preference order, e.g. sram=256k:16,"
                             "psram=8MiB (sizes as --capacity; a CSV 'pools' column names each "
                             "buffer's candidates)" + help_tail)


def add_override_flag(parser) -> None:
    """Add ``--override NAME=DIMS`` (repeatable)."""
    parser.add_argument("--override", action="append", metavar="NAME=DIMS",
                        help="ONNX/TFLite: a symbolic dimension (N=1) or a tensor's static "
                             "shape (input=1,3,224,224); repeatable")


def add_size_attr_flag(parser) -> None:
    """Add ``--size-attr NAME`` (default ``cost_ram``)."""
    parser.add_argument("--size-attr", default="cost_ram",
                        help="node-link .json graphs: the node attribute with the output bytes "
                             "(default cost_ram; when no node has it, the graph's declared "
                             "node_output_cost_tag or out_cost, as MOCCASIN writes; 'auto' "
                             "detects)")


def add_minimalloc_dir_flag(parser, help_tail: str = "") -> None:
    """Add ``--minimalloc-dir FOLDER``; ``help_tail``: what else it does on this command."""
    parser.add_argument("--minimalloc-dir", metavar="FOLDER",
                        help="where minimalloc:NAME workloads are looked up (default "
                             "$MEMPLAN_MINIMALLOC_DIR or ../shared/benchmarks/minimalloc)"
                             + help_tail)


def add_json_flag(parser) -> None:
    """Add ``--json`` (print one JSON object)."""
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def positive_seconds(text: str) -> float:
    """An argparse type: seconds > 0 (a time limit); ``ArgumentTypeError`` otherwise."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    from planners.params import POSITIVE_SECONDS  # the planners' time_limit rule

    if not POSITIVE_SECONDS.allows(v):
        raise argparse.ArgumentTypeError(f"time limit must be {POSITIVE_SECONDS}, got {text}")
    return v


def add_time_limit_flag(parser) -> None:
    """Add ``--time-limit SECONDS`` with the shared default
    :data:`experiments.harness.DEFAULT_TIME_LIMIT` (the same help on every command)."""
    from experiments.harness import DEFAULT_TIME_LIMIT

    parser.add_argument("--time-limit", type=positive_seconds, default=None, metavar="SECONDS",
                        help="seconds, for the planners and schedulers that take a time limit "
                             f"(default {DEFAULT_TIME_LIMIT:g}, the same on every command; a "
                             "heuristic has none)")


def add_pipeline_flag(parser, help_tail: str = "") -> None:
    """Add ``--pipeline PASSES`` with the shared default ``none``."""
    parser.add_argument("--pipeline", default="none", metavar="PASSES",
                        help="graph passes applied to a model before planning, comma-separated "
                             "(e.g. simplify,views,fuse,inplace); default none (the model as "
                             "written), the same on every command" + help_tail)


def time_limit_text(time_limit) -> str:
    """How every command prints a planner's time limit: ``"time limit 10 s"``, or ``"no time
    limit"`` for a planner (a heuristic) that takes none (``time_limit`` ``None``).

    >>> time_limit_text(10.0), time_limit_text(2.5), time_limit_text(None)
    ('time limit 10 s', 'time limit 2.5 s', 'no time limit')
    """
    return "no time limit" if time_limit is None else f"time limit {float(time_limit):g} s"


#: The shared option strings, each with the function that defines it (the flag test holds every
#: subcommand's copy to that definition's type and help; help tails are allowed where listed).
SHARED_FLAGS = {
    "--planners": add_names_flag, "--workloads": add_names_flag,
    "--schedulers": add_names_flag, "--planner-param": add_planner_param_flag,
    "--scheduler-param": add_scheduler_param_flag, "--capacity": add_capacity_flag,
    "--pools": add_pools_flag, "--override": add_override_flag,
    "--size-attr": add_size_attr_flag, "--minimalloc-dir": add_minimalloc_dir_flag,
    "--json": add_json_flag, "--time-limit": add_time_limit_flag,
    "--pipeline": add_pipeline_flag,
}
