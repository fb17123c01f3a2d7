"""Command-line faults a new user's trial found: argument errors as one line on every
subcommand, notes for pinned offsets and ignored time limits, --capacity with --pools refused,
plan's ``fits`` with pools, and wording of view's panels and plan's status scope."""

from __future__ import annotations

import pytest

from experiments.cli.app import main

POOLS = "sram=256k:16,psram=8M"


def run(capsys, *argv: str):
    """``memplan ARGV`` in this process: (exit status, stdout, stderr)."""
    try:
        rc = main(list(argv))
    except SystemExit as e:  # argparse (usage errors, --help)
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err, *needles):
    assert rc == 2, (rc, err)
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("memplan: error: "), err
    assert "usage:" not in err and "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


# -- 6. argument-type errors: one line, exit 2, on every subcommand -------------------------------

#: (subcommand and its required arguments, the flag taking a bad value)
_SUBCOMMANDS = [
    ("plan", "seed000"), ("view", "seed000", "-o", "unused.html"), ("export", "seed000"),
    ("compare",), ("budget", "seed000"), ("schedule", "mobilenet_v2"),
]


@pytest.mark.parametrize("cmd", _SUBCOMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("bad,needles", [
    (("--time-limit", "0"), ("argument --time-limit", "time limit must be", "got 0")),
    (("--time-limit", "soon"), ("argument --time-limit", "expected seconds", "'soon'")),
    (("--param", "novalue"), ("argument --param", "expected NAME=VALUE", "'novalue'")),
    (("--no-such-flag",), ("unrecognized arguments: --no-such-flag",)),
], ids=["time-limit-0", "time-limit-text", "param", "unknown-flag"])
def test_argument_errors_are_one_line(capsys, cmd, bad, needles):
    if cmd[0] == "budget" and bad[0] == "--param":  # budget has no --param: an unknown flag
        needles = ("unrecognized arguments: --param novalue",)
    rc, out, err = run(capsys, *cmd, *bad)
    one_line_error(rc, err, *needles, f"see `memplan {cmd[0]} --help`")
    assert out == ""


@pytest.mark.parametrize("argv,needles", [
    (("plan", "seed000", "--capacity", "x"), ("argument --capacity", "expected bytes", "'x'")),
    (("plan", "seed000", "--capacity", "-1"), ("argument --capacity", "[0, 2**62)", "-1")),
    (("check", "x.csv", "--capacity", "lots"), ("argument --capacity", "expected bytes")),
    (("plan", "seed000", "--scheduler-param", "x"), ("argument --scheduler-param",
                                                     "expected NAME=VALUE")),
    (("plan",), ("the following arguments are required: input",)),
    (("sweep",), ("required: config",)),
    (("rv64", "seed000", "--engine", "qemu"), ("argument --engine", "invalid choice: 'qemu'")),
    ((), ("required: command",)),
])
def test_other_argument_errors_are_one_line(capsys, argv, needles):
    rc, out, err = run(capsys, *argv)
    one_line_error(rc, err, *needles)


def test_pools_text_error_is_one_line_on_every_command(capsys, tmp_path):
    for argv in (("plan", "seed000"), ("view", "seed000", "-o", str(tmp_path / "v.html")),
                 ("budget", "seed000"), ("check", str(tmp_path / "none.csv")),
                 ("compare", "--workloads", "seed000", "--planners", "naive", "--out",
                  str(tmp_path / "c"))):
        rc, _, err = run(capsys, *argv, "--pools", "sram=lots")
        one_line_error(rc, err, "--pools 'sram=lots'", "NAME=BYTES[:ALIGN]")


def test_help_and_version_still_exit_0(capsys):
    rc, out, _ = run(capsys, "schedule", "--help")
    assert rc == 0 and out.startswith("usage: memplan schedule")
    rc, _, err = run(capsys, "--version")  # argparse's exit message goes to stderr
    assert rc == 0 and err.startswith("memplan ") and "error" not in err
