"""The ``memplan`` command line: the parser and the dispatch to one module per command group.

Commands
--------
``memplan compare``  run planners on workloads; write ``compare.csv``, ``compare.md`` and figures
(:mod:`experiments.cli.compare`).
``memplan plan INPUT --planner NAME``  plan one MiniMalloc CSV, ONNX file or workload name;
``memplan rv64``; ``memplan list`` (:mod:`experiments.cli.plan`). ``memplan plan-shared
MANIFEST.json`` plans several problems into one arena (:mod:`experiments.cli.shared`).
``memplan sweep`` / ``report`` (:mod:`experiments.cli.sweep`), ``export`` / ``transform``
(:mod:`experiments.cli.transforms`), ``budget`` (:mod:`experiments.cli.budget`), ``schedule``
(:mod:`experiments.cli.schedule`), ``check`` (:mod:`experiments.cli.check`), ``view``
(:mod:`experiments.cli.view`).

Each command module has ``add_parsers(subparsers)``, ``COMMANDS`` and ``run(args) -> int`` and
calls library functions; none builds tables or figures itself. Errors in the input (malformed
CSV/ONNX, unknown names, impossible capacity, and argument errors of any subcommand, through
:class:`OneLineParser`) print one line ``memplan: error: ...`` on stderr and
exit with status 2, without a traceback; so do results that cannot be written (a full disk, a
read-only file system, a missing or non-folder parent of ``-o``: every write goes through
:func:`planners.io.atomic_write` / :func:`~planners.io.atomic_output`, which leave no temporary
file and raise :class:`planners.errors.OutputError` naming the path and the cause).
"""

from __future__ import annotations

import argparse
import sys

from experiments.cli.common import OneLineParser, os_error_text, package_version

__all__ = ["main", "build_parser", "command_modules", "OneLineParser"]


def command_modules():
    """The command modules, in the order their subcommands appear in ``memplan --help``."""
    from experiments.cli import (
        budget,
        check,
        compare,
        plan,
        schedule,
        shared,
        sweep,
        transforms,
        view,
    )

    return [compare, plan, shared, sweep, transforms, budget, schedule, check, view]


class _VersionAction(argparse.Action):
    """``--version``: reads the installed version only when asked (``importlib.metadata`` costs
    about 30 ms of every start-up otherwise)."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(message=f"memplan {package_version()}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``memplan`` (exposed for documentation and tests)."""
    ap = OneLineParser(
        prog="memplan",
        description="Static memory planning for neural-network inference: compare offset planners.",
    )
    ap.add_argument("--version", action=_VersionAction, nargs=0,
                    help="print the installed version and exit")
    sub = ap.add_subparsers(dest="command", required=True)
    for mod in command_modules():
        mod.add_parsers(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memplan`` console script; returns the exit status."""
    from planners import MemplanError

    args = build_parser().parse_args(argv)
    import os

    if not os.environ.get("MPLBACKEND"):  # the CLI renders off-screen; notebooks stay inline
        if "matplotlib" in sys.modules:
            sys.modules["matplotlib"].use("Agg")
        else:  # read when a command first imports matplotlib: `memplan plan` never pays for it
            os.environ["MPLBACKEND"] = "Agg"
    try:
        for mod in command_modules():
            if args.command in mod.COMMANDS:
                return mod.run(args)
    except (MemplanError, ValueError, FileNotFoundError) as e:
        print(f"memplan: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader stopped early (`memplan list | head`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)  # the interpreter's final flush goes nowhere
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as e:  # a last resort: writes go through planners.io (OutputError)
        print(f"memplan: error: {os_error_text(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memplan: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
