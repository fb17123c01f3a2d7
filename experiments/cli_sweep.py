"""``memplan sweep`` and ``memplan report``: declarative sweeps and figures from their records.

:mod:`experiments.cli` adds them with :func:`add_parsers` and dispatches :data:`COMMANDS` to
:func:`run`. ``python -m experiments.cli_sweep sweep|report ...`` works on its own too (same exit codes:
0 success, 1 a sweep finished with failed runs and ``--strict``, 2 bad input, 130 interrupted).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["COMMANDS", "add_parsers", "run", "main"]

#: Sub-command names handled by :func:`run`.
COMMANDS = ("sweep", "report")


def add_parsers(subparsers) -> None:
    """Add the ``sweep`` and ``report`` sub-commands to an argparse ``subparsers`` object."""
    s = subparsers.add_parser("sweep", help="run a TOML sweep (resumable; only missing runs run)")
    s.add_argument("config", help="sweep TOML file (see experiments/configs/default.toml)")
    s.add_argument("--out", help="output folder (default: the config's 'out')")
    s.add_argument("--jobs", "-j", type=int, default=1, help="worker processes (default 1)")
    s.add_argument("--executor", choices=("local", "dask", "dask-local"), default="local",
                   help="local processes (default), a Dask scheduler, or a Dask LocalCluster")
    s.add_argument("--scheduler-address", help="tcp://host:port of the Dask scheduler")
    s.add_argument("--dry-run", action="store_true", help="list the runs that would run, run none")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--strict", action="store_true", help="exit 1 when a run failed")
    s.add_argument("--report", action="store_true", help="run `memplan report` afterwards")

    r = subparsers.add_parser("report", help="figures, tables and a markdown summary from records")
    r.add_argument("results_dir", help="a sweep output folder (with records/)")
    r.add_argument("--out", help="report folder (default RESULTS_DIR/report)")
    r.add_argument("--formats", default="png,pdf,svg", help="figure formats (default png,pdf,svg)")
    r.add_argument("--max-workload-figures", type=int, default=12,
                   help="memory-over-time and layout figures for at most this many workloads")


def run(args) -> int:
    """Execute a parsed ``sweep`` or ``report`` command; returns the exit status. Errors of the
    toolkit propagate (the caller prints them)."""
    if args.command == "sweep":
        from experiments.sweep import load_config, run_sweep

        cfg = load_config(args.config, out=args.out)
        s = run_sweep(cfg, executor=args.executor, jobs=args.jobs,
                      scheduler_address=args.scheduler_address, dry_run=args.dry_run,
                      progress=not args.quiet)
        if args.dry_run:
            return 0
        print(f"{s['total']} runs: {s['already_done']} already recorded, {s['ran']} ran, "
              f"{s['errors']} with an error; records in {s['out']}/records/")
        if args.report:
            from experiments.report import build_report

            written = build_report(s["out"])
            print(f"report: {len(written)} files in {s['out']}/report/")
        return 1 if (args.strict and s["errors"]) else 0
    if args.command == "report":
        from experiments.report import build_report

        formats = tuple(f for f in args.formats.split(",") if f)
        written = build_report(args.results_dir, out=args.out, formats=formats,
                               max_workload_figures=args.max_workload_figures)
        print(f"wrote {len(written)} files; summary: "
              f"{[str(p) for p in written if p.suffix == '.md'][0]}")
        return 0
    raise ValueError(f"cli_sweep cannot run command {args.command!r}")


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m experiments.cli_sweep``)."""
    from planners import MemplanError

    ap = argparse.ArgumentParser(prog="memplan")
    add_parsers(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(argv)
    try:
        return run(args)
    except (MemplanError, ValueError, FileNotFoundError) as e:
        print(f"memplan: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memplan: interrupted (finished runs are recorded; run again to resume)",
              file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
