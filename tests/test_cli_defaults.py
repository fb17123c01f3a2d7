"""One set of defaults on every command (issue 27, points 4 and 10): the same pipeline and time
limit, ``--pipeline none``, ``--param`` everywhere a planner runs, ``memplan list`` parameters,
a note for a time limit a heuristic ignores, LF line endings and "wrote" lines for ``-o``, and a
table printed by ``compare``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.cli.app import build_parser, main
from experiments.cli.common import DEFAULT_PIPELINE, DEFAULT_TIME_LIMIT, time_limit_of

ROOT = Path(__file__).resolve().parents[1]

#: Each command that plans or schedules with the smallest argument list it accepts.
COMMANDS = {
    "plan": ["plan", "seed000"],
    "view": ["view", "seed000", "-o", "x.html"],
    "export": ["export", "seed000"],
    "compare": ["compare"],
    "budget": ["budget", "seed000", "--budget", "1k"],
    "schedule": ["schedule", "seed000"],
}


def _memplan(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_one_time_limit_default(cmd):
    args = build_parser().parse_args(COMMANDS[cmd])
    assert args.time_limit is None and time_limit_of(args) == DEFAULT_TIME_LIMIT == 10.0
    args = build_parser().parse_args([*COMMANDS[cmd], "--time-limit", "3"])
    assert time_limit_of(args) == 3.0


@pytest.mark.parametrize("cmd", ["plan", "view", "export", "compare"])
def test_one_pipeline_default_and_none_accepted(cmd):
    assert build_parser().parse_args(COMMANDS[cmd]).pipeline == DEFAULT_PIPELINE == "none"
    assert build_parser().parse_args([*COMMANDS[cmd], "--pipeline", "none"]).pipeline == "none"


@pytest.mark.parametrize("cmd", ["plan", "view", "export", "compare", "schedule"])
def test_param_on_every_command_that_plans(cmd):
    args = build_parser().parse_args([*COMMANDS[cmd], "--param", "order=\"start\"",
                                      "--param", "time_limit=2"])
    # schedule has no planner: there --param is --scheduler-param (kept for old command lines)
    got = args.scheduler_param if cmd == "schedule" else args.param
    assert dict(got) == {"order": "start", "time_limit": 2}


def test_plan_and_export_give_the_same_numbers_by_default(tmp_path, capsys):
    assert main(["plan", "mobilenet_v2", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    out = tmp_path / "ep.json"
    assert main(["export", "mobilenet_v2", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    ep = json.loads(out.read_text())
    assert (plan["buffers"], plan["arena"]) == (len(ep["buffers"]), ep["arena_size"]) \
        == (153, 2408448)
    assert plan["pipeline"] == "none" and ep["pipeline"] == ""
    # greedy_by_size takes no time limit: said so, as plan says it (not the unused 10 s)
    assert said.startswith(f"wrote {out}: json, 153 buffers, arena 2408448 bytes") \
        and "no time limit, pipeline none" in said and plan["time_limit"] is None
    # the passes, asked for by name, give fewer buffers on both entry points
    assert main(["plan", "mobilenet_v2", "--json", "--pipeline", "simplify,views,fuse,inplace"]) == 0
    fused = json.loads(capsys.readouterr().out)
    assert main(["export", "mobilenet_v2", "-o", str(out), "--pipeline",
                 "simplify,views,fuse,inplace"]) == 0
    capsys.readouterr()
    assert fused["buffers"] == len(json.loads(out.read_text())["buffers"]) < 153


def test_param_reaches_the_planner_and_bad_ones_are_one_line(capsys):
    assert main(["plan", "seed000", "--planner", "cpsat", "--param", "time_limit=2",
                 "--param", "workers=1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["time_limit"] == 2 and out["params"] == {"time_limit": 2, "workers": 1}
    r = _memplan("plan", "seed000", "--param", "no_such=1")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no_such" in r.stderr
    r = _memplan("plan", "seed000", "--pipeline", "nope")
    assert r.returncode == 2 and r.stderr.startswith("memplan: error:")


def test_time_limit_on_a_heuristic_is_said(capsys):
    assert main(["plan", "seed000", "--planner", "naive", "--time-limit", "5"]) == 0
    err = capsys.readouterr().err
    assert err == ("memplan: note: planner 'naive' has no time limit; --time-limit 5 s ignored "
                   "for it\n")
    assert main(["plan", "seed000", "--planner", "cpsat", "--time-limit", "5"]) == 0
    assert capsys.readouterr().err == ""


def test_plan_output_is_lf_and_said(tmp_path, capsys):
    src = tmp_path / "b.csv"
    src.write_text('id,lower,upper,size\n"a,1",0,2,32\nb,1,3,64\nc,2,4,32\nd,3,5,64\n')
    out = tmp_path / "planned.csv"
    assert main(["plan", str(src), "-o", str(out)]) == 0
    assert f"written      {out} (4 buffers with offsets, MiniMalloc CSV)" in capsys.readouterr().out
    data = out.read_bytes()
    assert b"\r" not in data and data.count(b"\n") == 5
    assert data.startswith(b'id,lower,upper,size,offset\n"a,1",0,2,32,')  # quoting kept


def test_list_gives_parameters(capsys):
    assert main(["list", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["parameters"]["cpsat"]["time_limit"]["default"] == 30.0
    assert d["parameters"]["greedy_by_size"]["order"]["default"] == "size"
    assert "capabilities" in d and set(d["parameters"]) == set(d["capabilities"])
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    assert "planner parameters" in text and "      workers=2: an int in [1, 2147483647]" in text


def test_compare_prints_its_table(tmp_path):
    r = _memplan("compare", "--workloads", "seed000", "seed002_ex5.1", "--planners", "naive,first_fit",
                 "--no-plots", "--quiet", "--out", str(tmp_path / "c"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "per planner (time limit 10 s, pipeline none):"
    assert lines[1].split()[:5] == ["planner", "workloads", "of", "geomean_ratio",
                                    "geomean_common"]
    assert [ln.split()[:3] for ln in lines[2:4]] == [["naive", "2", "2"], ["first_fit", "2", "2"]]
    assert "every row solved all of them" in lines[4]
    md = (tmp_path / "c" / "compare.md").read_text()
    assert "geomean_common" in md and "Time limit: 10 s" in md
