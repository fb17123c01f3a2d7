"""Command-line faults a new user's trial found: argument errors as one line on every
subcommand, notes for pinned offsets and ignored time limits, --capacity with --pools refused,
plan's ``fits`` with pools, and wording of view's panels and plan's status scope."""

from __future__ import annotations

import json

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
    (("--param", "novalue"), ("--param", "expected NAME=VALUE", "'novalue'")),
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


# -- 1. a CSV's offset column read as pins: plan, view and compare say so -------------------------

@pytest.fixture
def solved_csv(tmp_path, capsys):
    """seed002_ex5.1 planned by first_fit (arena 880; the free optimum is 780), offsets written."""
    path = tmp_path / "ff.csv"
    rc, out, _ = run(capsys, "plan", "seed002_ex5.1", "--planner", "first_fit", "-o", str(path))
    assert rc == 0 and "arena        880" in out
    return path


def _field(out: str, key: str) -> str:
    return next(line.split(None, 1)[1] for line in out.splitlines() if line.split()[0] == key)


def test_plan_notes_pins_from_offset_column(capsys, solved_csv):
    rc, out, err = run(capsys, "plan", str(solved_csv), "--planner", "cpsat")
    assert rc == 0
    assert _field(out, "arena") == "880" and _field(out, "status") == "optimal"
    assert _field(out, "features") == "['pins']"
    assert err.splitlines() == [
        f"memplan: note: 5 of 5 buffers are pinned by the offset column of {solved_csv} (fixed "
        "positions, MiniMalloc's reading); --ignore-offsets re-plans them"]
    rc, out, err = run(capsys, "plan", str(solved_csv), "--planner", "cpsat", "--ignore-offsets")
    assert rc == 0 and _field(out, "arena") == "780" and "features" not in out
    assert len(err.splitlines()) == 1
    assert "ignoring the given offsets" in err and "pinned" not in err


def test_plan_without_offset_column_has_no_note(capsys):
    rc, out, err = run(capsys, "plan", "seed002_ex5.1", "--planner", "cpsat")
    assert rc == 0 and _field(out, "arena") == "780" and err == ""


def test_partial_offsets_counted(capsys, tmp_path):
    path = tmp_path / "pin.csv"
    path.write_text("id,lower,upper,size,offset\na,0,2,60,20\nb,0,2,40,\nc,0,3,50,-1\n")
    rc, out, err = run(capsys, "plan", str(path))
    assert rc == 0 and "1 of 3 buffers are pinned" in err and "--ignore-offsets" in err
    rc, out, err = run(capsys, "view", str(path), "-o", str(tmp_path / "v.html"))
    assert rc == 0
    assert "1 of 3 buffers are pinned" in err and "view keeps them there" in err
    assert f"memplan plan {path} --ignore-offsets" in err


def test_compare_notes_pins(capsys, tmp_path, solved_csv):
    rc, out, err = run(capsys, "compare", "--workloads", str(solved_csv), "seed000", "--planners",
                       "greedy_by_size", "--out", str(tmp_path / "c"), "--no-plots", "--quiet")
    assert rc == 0
    notes = [x for x in err.splitlines() if "pinned" in x]
    assert notes == [f"memplan: note: 5 of 5 buffers are pinned by the offset column of "
                     f"{solved_csv} (fixed positions, MiniMalloc's reading); compare keeps them "
                     f"there (`memplan plan {solved_csv} --ignore-offsets` plans every buffer)"]


# -- 2. --capacity with --pools: refused (each pool has its own capacity) -------------------------

def test_capacity_with_pools_is_refused(capsys, tmp_path):
    plan_csv = tmp_path / "c.csv"
    rc, out, _ = run(capsys, "plan", "seed000", "--pools", POOLS, "-o", str(plan_csv))
    assert rc == 0 and _field(out, "arena") == "352256"
    for argv in (("check", str(plan_csv), "--pools", POOLS, "--capacity", "1000"),
                 ("plan", "seed000", "--pools", POOLS, "--capacity", "5"),
                 ("plan", str(plan_csv), "--pools", POOLS, "--capacity", "5",
                  "--ignore-offsets")):
        rc, out, err = run(capsys, *argv)
        one_line_error(rc, err, f"--capacity {argv[-1] if argv[-1].isdigit() else 5} with "
                       "--pools", "each pool has its own capacity")
        assert out == ""
    # without --capacity the check is what it was; no arena capacity is printed for pools
    rc, out, _ = run(capsys, "check", str(plan_csv), "--pools", POOLS)
    assert rc == 0
    assert _field(out, "arena") == "352256" and _field(out, "valid") == "True"
    assert _field(out, "capacity") == "-"
    # --capacity without --pools still applies
    rc, out, _ = run(capsys, "plan", "seed002_ex5.1", "--capacity", "779")
    assert rc == 2


def test_check_report_refuses_capacity_with_pools(tmp_path):
    from experiments.cli.check import check_report
    from experiments.cli.common import parse_pools
    from planners.errors import ProblemError

    with pytest.raises(ProblemError, match="each pool has its own capacity"):
        check_report(tmp_path / "x.csv", 1000, parse_pools(POOLS))


# -- 3. plan --pools fills fits: every pool within its capacity ----------------------------------

PINPOOL = "id,lower,upper,size,offset,pools\na,0,2,60,20,sram\nb,0,2,40,,sram\nc,0,3,50,,\n"


def test_plan_pools_fits(capsys, tmp_path):
    path = tmp_path / "pinpool.csv"
    path.write_text(PINPOOL)
    argv = ("plan", str(path), "--planner", "greedy_by_size", "--pools", "sram=100,dram=1k")
    rc, out, err = run(capsys, *argv)
    assert rc == 1
    assert _field(out, "status") == "over_capacity" and _field(out, "fits") == "False"
    assert _field(out, "arenas") == "{'sram': 120, 'dram': 50}"
    assert "sram 120 > 100" in err
    rc, out, _ = run(capsys, *argv, "--json")
    rec = json.loads(out)
    assert rec["fits"] is False and rec["arena"] == 170 and rec["capacity"] is None
    rc, out, _ = run(capsys, "plan", "seed000", "--pools", POOLS, "--json")
    rec = json.loads(out)
    assert rc == 0 and rec["fits"] is True and rec["arena"] == 352256
    assert rec["arenas"] == {"sram": 262144, "psram": 90112}


def test_plan_fits_agrees_with_compare(capsys, tmp_path):
    import csv

    path = tmp_path / "pinpool.csv"
    path.write_text(PINPOOL)
    out_dir = tmp_path / "c"
    rc, _, _ = run(capsys, "compare", "--workloads", str(path), "--planners", "greedy_by_size",
                   "--pools", "sram=100,dram=1k", "--out", str(out_dir), "--no-plots", "--quiet")
    assert rc == 0
    (row,) = list(csv.DictReader((out_dir / "compare.csv").open()))
    assert row["fits"] == "False" and row["status"] == "over_capacity" and row["arena"] == "170"


# -- 5. a scheduler without a time limit: noted once, in the planners' words ----------------------

def test_schedule_notes_scheduler_without_time_limit(capsys):
    rc, out, err = run(capsys, "schedule", "mobilenet_v2", "--scheduler", "min_live",
                       "--time-limit", "3", "--json")
    assert rc == 0 and json.loads(out)["scheduler"] == "min_live"
    assert err.splitlines() == ["memplan: note: scheduler 'min_live' has no time limit; "
                                "--time-limit 3 s ignored for it"]
    rc, out_default, err = run(capsys, "schedule", "mobilenet_v2", "--scheduler", "min_live",
                               "--json")
    assert rc == 0 and err == ""  # the default limit is never noted
    assert json.loads(out_default)["peak_bytes"] == json.loads(out)["peak_bytes"]


def test_plan_scheduler_notes_each_component_once(capsys):
    rc, out, err = run(capsys, "plan", "mobilenet_v2", "--scheduler", "min_live",
                       "--time-limit", "3")
    assert rc == 0
    assert err.splitlines() == [
        "memplan: note: scheduler 'min_live' has no time limit; --time-limit 3 s ignored for it",
        "memplan: note: planner 'greedy_by_size' has no time limit; --time-limit 3 s ignored "
        "for it"]
    rc, out, err = run(capsys, "plan", "mobilenet_v2", "--scheduler", "dfs", "--planner",
                       "cpsat", "--time-limit", "3")
    assert rc == 0
    assert err.splitlines() == [
        "memplan: note: scheduler 'dfs' has no time limit; --time-limit 3 s ignored for it"]


# -- 4. the status rule with pools, as README states it -------------------------------------------

def test_pool_status_rule_as_documented(capsys):
    got = {}
    for planner in ("greedy_by_size", "cpsat"):
        rc, out, _ = run(capsys, "plan", "seed000", "--pools", POOLS, "--planner", planner,
                         "--json")
        rec = json.loads(out)
        assert rc == 0 and rec["arena"] == rec["best_bound"] == rec["lower_bound"] == 352256
        got[planner] = rec["status"]
    # an arena at the bound is not promoted with pools (the traffic cost comes first)
    assert got == {"greedy_by_size": "heuristic", "cpsat": "optimal"}
    rc, out, _ = run(capsys, "plan", "seed000", "--planner", "greedy_by_size", "--json")
    assert json.loads(out)["status"] == "optimal"  # one arena: the bound proves it


# -- 7. wording: view's panels per pool; what each status of plan --scheduler is about -----------

def test_view_counts_plans_and_pool_panels(capsys, tmp_path):
    html = tmp_path / "v.html"
    rc, out, _ = run(capsys, "view", "seed000", "--pools", POOLS, "--planner",
                     "greedy_by_size,best_fit", "-o", str(html))
    assert rc == 0
    assert f"wrote {html}: 2 plan(s) in 4 panels (one per pool), 16 rectangles" in out
    rc, out, _ = run(capsys, "view", "seed000", "--planner", "greedy_by_size,best_fit", "-o",
                     str(html))
    assert rc == 0 and f"wrote {html}: 2 plan(s), 16 rectangles" in out


def test_plan_scheduler_says_what_each_status_is_about(capsys):
    # gen:randwire under min_live: CP-SAT proves the plan of that order optimal (arena = max
    # live bytes of its lifetimes) while the order's peak is above the bound over all orders
    argv = ("plan", "gen:randwire", "--scheduler", "min_live", "--planner", "cpsat")
    rc, out, _ = run(capsys, *argv, "--json")
    rec = json.loads(out)
    assert rc == 0 and rec["status"] == "optimal" and rec["schedule_status"] == "heuristic"
    assert rec["arena"] == rec["best_bound"] == rec["peak_bytes"] == 611424
    assert rec["order_bound"] == 472214  # the reading that looked like a contradiction
    assert rec["status_scope"] == (
        "status: the plan of this order's lifetimes (arena vs best_bound); schedule_status, "
        "order_bound: this order's peak vs every order's (another order may plan smaller)")
    assert list(rec).index("status_scope") == list(rec).index("status") + 1
    rc, out, _ = run(capsys, *argv)
    assert rc == 0 and "status_scope     status: the plan of this order's lifetimes" in out
    # with --pipeline the order keys are named for it, and the scope names them
    rc, out, _ = run(capsys, *argv, "--pipeline", "simplify", "--json")
    rec = json.loads(out)
    assert rc == 0 and "order_bound_before_pipeline" in rec
    assert "schedule_status, order_bound_before_pipeline: " in rec["status_scope"]
    # without a scheduler there is one status only, and no scope line
    rc, out, _ = run(capsys, "plan", "seed000", "--json")
    assert rc == 0 and "status_scope" not in json.loads(out)


def test_compare_schedulers_notes_named_components_without_time_limit(capsys, tmp_path):
    rc, _, err = run(capsys, "compare", "--schedulers", "min_live,anneal", "--workloads",
                     "squeezenet", "--planners", "greedy_by_size", "--time-limit", "1",
                     "--out", str(tmp_path / "cs"), "--no-plots", "--quiet")
    assert rc == 0
    assert [x for x in err.splitlines() if "note" in x] == [
        "memplan: note: scheduler 'min_live' has no time limit; --time-limit 1 s ignored for it",
        "memplan: note: planner 'greedy_by_size' has no time limit; --time-limit 1 s ignored "
        "for it"]
