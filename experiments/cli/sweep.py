"""``memplan sweep`` and ``memplan report``: declarative sweeps and figures from their records.

:mod:`experiments.cli` adds them with :func:`add_parsers` and dispatches :data:`COMMANDS` to
:func:`run`. ``python -m experiments.cli.sweep sweep|report ...`` works on its own too (same exit codes:
0 success, 1 a sweep finished with failed runs and ``--strict``, 2 bad input, 130 interrupted).

``memplan sweep CONFIG`` runs only the runs without a record; ``--retry-failed`` also runs again
those whose record has status ``error`` or ``timeout`` (keeping the finished ones), e.g. after a
timeout on a loaded machine. A second sweep into the same folder waits for the first (saying so on
stderr) or, with ``--no-wait``, stops with exit status 2. A corrupt record file is named in a
``memplan: warning:`` line, moved to ``OUT/records/corrupt/`` and its run runs again. ``--report`` writes the report afterwards (``--formats``, default PNG
and PDF; add ``svg`` for vector figures for the web).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["COMMANDS", "add_parsers", "run", "main"]

#: Figure formats of ``memplan report`` and ``memplan sweep --report`` unless ``--formats``.
DEFAULT_FORMATS = ("png", "pdf")

#: Sub-command names handled by :func:`run`.
COMMANDS = ("sweep", "report")


def add_parsers(subparsers) -> None:
    """Add the ``sweep`` and ``report`` sub-commands to an argparse ``subparsers`` object."""
    s = subparsers.add_parser(
        "sweep", help="run a TOML sweep (resumable; only missing runs run)",
        description="Run every run of a TOML sweep that has no record yet (records are keyed by "
                    "a hash of workload, scheduler, planner, parameters and the code the run "
                    "executes, so editing one planner reruns only its runs). Runs "
                    "that failed (status error or timeout) are kept as records and not rerun, "
                    "unless --retry-failed is given.")
    s.add_argument("config", help="sweep TOML file (see experiments/configs/default.toml)")
    s.add_argument("--out", help="output folder (default: the config's 'out')")
    s.add_argument("--jobs", "-j", type=int, default=1, help="worker processes (default 1)")
    s.add_argument("--executor", choices=("local", "dask", "dask-local"), default="local",
                   help="local processes (default), a Dask scheduler, or a Dask LocalCluster")
    s.add_argument("--scheduler-address", help="tcp://host:port of the Dask scheduler")
    s.add_argument("--dry-run", action="store_true", help="list the runs that would run, run none")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--strict", action="store_true", help="exit 1 when a run failed")
    s.add_argument("--retry-failed", action="store_true",
                   help="also rerun the runs whose record has status error or timeout (their "
                        "record is replaced); finished runs are kept")
    s.add_argument("--no-wait", action="store_true",
                   help="when another sweep is writing to the output folder, stop with an error "
                        "instead of waiting for it")
    s.add_argument("--report", action="store_true", help="run `memplan report` afterwards")
    s.add_argument("--formats", default=",".join(DEFAULT_FORMATS),
                   help="figure formats of --report (default %(default)s; add svg if wanted)")

    r = subparsers.add_parser("report", help="figures, tables and a markdown summary from records")
    r.add_argument("results_dir", help="a sweep output folder (with records/), or a `memplan "
                                       "compare` folder (its figures are redrawn from its records)")
    r.add_argument("--out", help="report folder (default RESULTS_DIR/report; for a compare "
                                 "folder: the figures folder, default RESULTS_DIR/figures)")
    r.add_argument("--formats", default=",".join(DEFAULT_FORMATS),
                   help="figure formats, comma-separated: png, pdf, svg (default %(default)s)")
    r.add_argument("--all-versions", action="store_true",
                   help="use the records of every code version (default: only the latest one's)")
    r.add_argument("--style", choices=("default", "paper"), default="default",
                   help="figure style: default, or paper (3.5 / 7.16 in wide, 8-9 pt, PDF with "
                        "embedded fonts, colour-blind-safe palette)")
    r.add_argument("--max-workload-figures", type=int, default=12,
                   help="memory-over-time and layout figures for at most this many workloads")


def _formats(text: str) -> tuple[str, ...]:
    formats = tuple(f.strip().lower() for f in text.split(",") if f.strip())
    bad = [f for f in formats if f not in ("png", "pdf", "svg")]
    if bad or not formats:
        raise ValueError(f"--formats: unknown figure format(s) {bad}; use png, pdf, svg")
    return formats


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``memplan: warning: ...`` on stderr for the sweep's own warnings (no source line)."""
    print(f"memplan: warning: {message}", file=sys.stderr, flush=True)


def run(args) -> int:
    """Execute a parsed ``sweep`` or ``report`` command; returns the exit status. Errors of the
    toolkit propagate (the caller prints them); a corrupt record is one warning line on stderr."""
    import warnings

    from experiments.sweep import CorruptRecordWarning

    with warnings.catch_warnings():
        warnings.simplefilter("always", CorruptRecordWarning)
        shown = warnings.showwarning
        warnings.showwarning = lambda m, c, *a, **k: (
            _show_warning(m, c, *a, **k) if issubclass(c, CorruptRecordWarning) else shown(m, c, *a, **k))
        return _run(args)


def _run(args) -> int:
    if args.command == "sweep":
        from experiments.sweep import load_config, run_sweep
        from planners.errors import OutputError

        cfg = load_config(args.config, out=args.out)
        try:
            s = run_sweep(cfg, executor=args.executor, jobs=args.jobs,
                          scheduler_address=args.scheduler_address, dry_run=args.dry_run,
                          progress=not args.quiet, retry_failed=args.retry_failed,
                          wait=not args.no_wait)
        except OutputError as e:  # a full disk mid-sweep: what is recorded stays recorded
            err = OutputError(f"{e}; the sweep stopped, the records written so far are kept "
                              "and a rerun with the same --out runs only the missing ones")
            err.errno = e.errno
            raise err from None
        if args.dry_run:
            return 0
        again = f" ({s['retried']} failed ones again)" if args.retry_failed else ""
        print(f"{s['total']} runs: {s['already_done']} already recorded, {s['ran']} ran{again}, "
              f"{s['errors']} with an error; records in {s['out']}/records/")
        if args.report:
            from experiments.report import build_report

            written = build_report(s["out"], formats=_formats(args.formats))
            print(f"report: {len(written)} files in {s['out']}/report/")
        return 1 if (args.strict and s["errors"]) else 0
    if args.command == "report":
        from experiments.report import build_report

        folder = Path(args.results_dir)
        if not (folder / "records").is_dir() and (
                (folder / "compare.csv").is_file() or (folder / "compare_sched.csv").is_file()):
            from experiments import plots
            from experiments.report.figures import figures_from_folder

            with plots.style(args.style):  # a `memplan compare` folder: its figures, redrawn
                written = figures_from_folder(folder, Path(args.out) if args.out else None)
            print(f"wrote {len(written)} figure files from the records of {folder}")
            return 0
        written = build_report(args.results_dir, out=args.out, formats=_formats(args.formats),
                               max_workload_figures=args.max_workload_figures,
                               style=args.style,
                               all_versions=args.all_versions)
        print(f"wrote {len(written)} files; summary: "
              f"{[str(p) for p in written if p.suffix == '.md'][0]}")
        return 0
    raise ValueError(f"cli_sweep cannot run command {args.command!r}")


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m experiments.cli.sweep``)."""
    from experiments.cli.common import OneLineParser  # usage errors as one line, as `memplan`
    from planners import MemplanError

    ap = OneLineParser(prog="memplan")
    add_parsers(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(argv)
    try:
        return run(args)
    except (MemplanError, ValueError, FileNotFoundError) as e:
        print(f"memplan: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a write site not routed through planners.io.atomic_write
        from experiments.cli.common import os_error_text

        print(f"memplan: error: {os_error_text(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memplan: interrupted (finished runs are recorded; run again to resume)",
              file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
