"""One spelling per flag and output that agrees with itself (issue #36 items 4 and 5).

The parser walk reads every subcommand's argparse actions: every option has help, and each shared
flag (:data:`experiments.cli.flags.SHARED_FLAGS`) has the type and help of its one definition
everywhere (a command may add a tail saying what the flag does there). The rest pins values:
byte sizes, name lists, the one lower bound of ``plan`` and ``check`` (a hypothesis test over
problems with alignments, zero sizes and, through a written plan, pins), the time-limit wording,
a plan read from a file, the C header's pipeline, ``schedule``'s keys and a duplicate id's lines.
"""

from __future__ import annotations

import argparse
import json

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.cli.app import build_parser, main
from experiments.cli.flags import SHARED_FLAGS, parse_bytes, pools_arg, split_names, time_limit_text
from planners import Buffer, Problem, plan, write_minimalloc_csv


def subparsers():
    ap = build_parser()
    (sub,) = [a for a in ap._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def reference_actions():
    """Each shared flag as its one definition builds it, on a bare parser."""
    out = {}
    for flag, add in SHARED_FLAGS.items():
        p = argparse.ArgumentParser()
        add(p, flag) if flag in ("--planners", "--workloads", "--schedulers") else add(p)
        out[flag] = next(a for a in p._actions if a.option_strings[:1] == [flag])
    return out


def test_every_option_of_every_subcommand_has_help():
    missing = [(name, a.option_strings or [a.dest]) for name, p in subparsers().items()
               for a in p._actions if not a.help]
    assert missing == []


def test_shared_flags_have_one_type_and_help_everywhere():
    ref = reference_actions()
    seen: dict[str, list[str]] = {}
    for name, p in subparsers().items():
        for a in p._actions:
            for flag in a.option_strings:
                if flag not in ref:
                    continue
                r = ref[flag]
                assert a.option_strings[0] == flag or flag == "--param", (name, a.option_strings)
                assert a.type is r.type and type(a) is type(r) and a.nargs == r.nargs, (name, flag)
                assert a.help.startswith(r.help), (name, flag, a.help)
                assert a.default == r.default and a.metavar == r.metavar, (name, flag)
                seen.setdefault(flag, []).append(name)
    # the commands the issue names carry the flags it names
    assert {"plan", "check"} <= set(seen["--capacity"])
    assert {"plan", "view", "export", "compare", "budget"} <= set(seen["--pools"])
    assert {"plan", "compare", "view"} <= set(seen["--minimalloc-dir"])
    assert {"plan", "view", "export", "compare", "plan-shared"} <= set(seen["--planner-param"])
    assert {"plan", "schedule", "compare", "export"} <= set(seen["--scheduler-param"])


def test_every_command_with_schedulers_takes_scheduler_param():
    takes = {name: {f for a in p._actions for f in a.option_strings}
             for name, p in subparsers().items()}
    with_sched = sorted(n for n, fl in takes.items() if fl & {"--scheduler", "--schedulers"})
    assert with_sched == ["compare", "export", "plan", "schedule"]
    assert [n for n in with_sched if "--scheduler-param" not in takes[n]] == []


# gen:nas_cell under dfs: the backward traversal (the default) peaks at 196608 live bytes, the
# forward one at 147456 (`memplan schedule gen:nas_cell --scheduler dfs --scheduler-param
# direction=...`), so a --scheduler-param that reached the scheduler shows in the peak.
NAS_DFS = {"backward": 196608, "forward": 147456}


def test_scheduler_param_reaches_the_scheduler_on_schedule_and_plan(capsys):
    for d, peak in NAS_DFS.items():
        rc, rec = _json(capsys, "schedule", "gen:nas_cell", "--scheduler", "dfs",
                        "--scheduler-param", f"direction={d}")
        assert rc == 0 and rec["peak_bytes"] == peak and rec["scheduler_params"] == {"direction": d}
        rc, pl = _json(capsys, "plan", "gen:nas_cell", "--scheduler", "dfs",
                       "--scheduler-param", f"direction={d}")
        assert rc == 0 and pl["peak_bytes"] == peak


def test_compare_schedulers_takes_scheduler_param(tmp_path, capsys):
    import pandas as pd

    peaks = {}
    for d in NAS_DFS:
        out = tmp_path / d
        assert main(["compare", "--workloads", "gen:nas_cell", "--schedulers", "dfs,file_order",
                     "--scheduler-param", f"direction={d}", "--no-plots", "--quiet",
                     "--out", str(out)]) == 0
        df = pd.read_csv(out / "compare_sched.csv").set_index("scheduler")
        peaks[d] = int(df.loc["dfs", "peak_bytes"])
        # given to the scheduler that has it only: file_order takes no parameter
        assert json.loads(df.loc["dfs", "params"]) == {"direction": d}
        assert json.loads(df.loc["file_order", "params"]) == {}
    assert peaks == NAS_DFS
    capsys.readouterr()
    for argv, msg in (
        (["--scheduler-param", "dirn=forward"],
         "no scheduler of dfs, file_order has a parameter 'dirn' (did you mean 'direction'?)"),
        (["--scheduler-param", "direction=up"], "parameter 'direction' = 'up' is not allowed"),
    ):
        assert main(["compare", "--workloads", "gen:nas_cell", "--schedulers", "dfs,file_order",
                     "--no-plots", "--quiet", "--out", str(tmp_path / "bad"), *argv]) == 2
        assert msg in capsys.readouterr().err
        assert not (tmp_path / "bad" / "compare_sched.csv").exists()  # refused before any work
    assert main(["compare", "--workloads", "seed000", "--planners", "naive", "--no-plots",
                 "--scheduler-param", "direction=forward", "--out", str(tmp_path / "p")]) == 2
    assert "no --schedulers was given" in capsys.readouterr().err


def test_export_takes_scheduler_param(tmp_path, capsys):
    from experiments.workloads import tflite_model_files

    for argv, msg in ((["--scheduler", "dfs", "--scheduler-param", "dir=forward"],
                       "scheduler 'dfs' has no parameter 'dir'; its parameters: direction"),
                      (["--scheduler-param", "direction=forward"],  # the default file_order
                       "scheduler 'file_order' has no parameter 'direction'")):
        assert main(["export", "x.tflite", "--format", "tflm-offline", "-o",
                     str(tmp_path / "o.tflite"), *argv]) == 2  # refused before the model is read
        assert msg in capsys.readouterr().err
    assert main(["export", "seed000", "--scheduler-param", "direction=forward"]) == 2
    assert "--scheduler-param applies to --format tflm-offline only" in capsys.readouterr().err
    if "wakeword:alexa" not in tflite_model_files():
        pytest.skip("pymicro-wakeword not installed")
    arenas = {}
    for d in ("backward", "forward"):
        assert main(["export", "wakeword:alexa", "--format", "tflm-offline", "--scheduler", "dfs",
                     "--scheduler-param", f"direction={d}", "-o", str(tmp_path / f"{d}.tflite")]) == 0
        arenas[d] = json.loads(capsys.readouterr().out)["arena"]
    # the backward DFS order keeps TFLM's head at the file order's 2688 B; forward needs 4720 B
    assert arenas == {"backward": 2688, "forward": 4720}


def test_param_is_the_planner_param_alias_and_on_schedule_the_scheduler_one():
    for name, p in subparsers().items():
        for a in p._actions:
            if "--param" in a.option_strings:
                want = "--scheduler-param" if name == "schedule" else "--planner-param"
                assert a.option_strings == [want, "--param"], name
    assert "--param is the same flag (there is no planner here)" in next(
        a.help for a in subparsers()["schedule"]._actions if "--param" in a.option_strings)


def test_planners_help_states_the_true_default():
    from experiments.harness import default_planners
    from planners.registry import PLANNERS

    left_out = sorted(set(PLANNERS) - set(default_planners()))
    assert left_out  # the default is not "all registered": the help must not say so
    h = next(a.help for a in subparsers()["compare"]._actions if "--planners" in a.option_strings)
    assert "all registered" not in h and "default_planners" in h


@pytest.mark.parametrize("text,value", [
    ("0", 0), ("264", 264), ("1k", 1024), ("1K", 1024), ("1KiB", 1024), ("1kB", 1024),
    ("256k", 262144), ("4MiB", 4194304), ("8M", 8388608), ("1.5M", 1572864), ("2G", 2**31),
    ("0.5k", 512), (" 12 ", 12), ("3B", 3),
])
def test_parse_bytes_hand_vectors(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["", "k", "-1", "1.3", "0.3k", "1e3", "1kk", "1T", str(2**62),
                                  f"{2**32}G", "ten"])
def test_parse_bytes_refuses(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_bytes(text)


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 2**40), st.sampled_from([("", 1), ("k", 1024), ("KiB", 1024),
                                               ("M", 1024**2), ("MiB", 1024**2), ("G", 1024**3)]))
def test_parse_bytes_property(n, unit):
    suffix, scale = unit
    if n * scale < 2**62:
        assert parse_bytes(f"{n}{suffix}") == n * scale


def test_one_byte_parser_for_capacity_budget_and_pools():
    ap = build_parser()
    assert ap.parse_args(["plan", "x.csv", "--capacity", "1k"]).capacity == 1024
    assert ap.parse_args(["check", "x.csv", "--capacity", "4MiB"]).capacity == 4194304
    assert ap.parse_args(["budget", "seed000", "--budget", "256k"]).budget == 262144
    assert pools_arg("a=1k, b=2") == "a=1024,b=2"
    from experiments.cli.common import parse_pools

    (q,) = parse_pools("sram=1.5k:8")
    assert (q.name, q.capacity, q.alignment) == ("sram", 1536, 8)
    assert [(q.name, q.capacity) for q in parse_pools("sram=4MiB:16,dram=inf")] == [
        ("sram", 4194304), ("dram", None)]


def test_budget_size_reads_as_capacity_does(capsys):
    assert main(["budget", "seed000", "--budget", "4MiB", "--technique", "patch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"] == 4 * 1024**2


@pytest.mark.parametrize("argv", [["--planners", "a", "b"], ["--planners", "a,b"],
                                  ["--planners", "a", "--planners", "b"], ["--planners", "a, b"]])
def test_name_lists_take_spaces_commas_and_repetition(argv):
    ap = build_parser()
    assert ap.parse_args(["compare", *argv]).planners == ["a", "b"]
    assert ap.parse_args(["view", "seed000", "-o", "x.html", *argv]).planners == ["a", "b"]
    old = [x.replace("--planners", "--planner") for x in argv]  # view's older spelling
    assert ap.parse_args(["view", "seed000", "-o", "x.html", *old]).planners == ["a", "b"]
    assert ap.parse_args(["compare", *[x.replace("--planners", "--workloads") for x in argv]]
                         ).workloads == ["a", "b"]
    assert split_names(["a b", "c,d"]) == ["a", "b", "c", "d"]


def test_schedulers_alone_still_means_the_default_set():
    assert build_parser().parse_args(["compare", "--schedulers"]).schedulers == []


# -- item 5: one lower bound for check and plan ------------------------------------------------

@st.composite
def problems(draw, max_n: int = 10):
    """Small problems with zero sizes, alignments 1/4/16 and ties (tests/test_heuristics.py's
    shape), sizes that are not multiples of the alignment, so the padded bound matters."""
    n = draw(st.integers(1, max_n))
    default = draw(st.sampled_from([1, 4, 16]))
    bufs = []
    for k in range(n):
        start = draw(st.integers(0, 6))
        bufs.append(Buffer(f"b{k}", start, start + draw(st.integers(1, 5)),
                           draw(st.one_of(st.just(0), st.integers(1, 100))),
                           draw(st.sampled_from([None, 1, 4, 16]))))
    return Problem(bufs, alignment=default, name="hyp")


def _json(capsys, *argv):
    rc = main([*argv, "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(problems(), st.sampled_from(["greedy_by_size", "naive", "first_fit"]))
def test_check_and_plan_print_one_lower_bound(tmp_path_factory, capsys, problem, planner):
    """A solved CSV: `check` reads its offsets as the plan, `plan` as pins (every buffer pinned);
    both print the same lower_bound, the buffers' own (independent max-live oracle below)."""
    path = tmp_path_factory.mktemp("lb") / "p.csv"
    solved = plan(problem, planner)
    write_minimalloc_csv(problem, path, solved)
    rc_c, chk = _json(capsys, "check", str(path))
    rc_p, pl = _json(capsys, "plan", str(path))
    rc_i, free = _json(capsys, "plan", str(path), "--ignore-offsets")
    assert rc_c == rc_p == rc_i == 0
    assert chk["lower_bound"] == pl["lower_bound"] == free["lower_bound"]
    # oracle: max over steps of the live bytes (half-open lifetimes), written here from scratch
    live = max((sum(b.size for b in problem.buffers if b.start <= t < b.end)
                for t in range(problem.horizon)), default=0)
    assert live <= chk["lower_bound"] <= chk["arena"]
    # every buffer pinned: the pinned bound is the top of the pinned bytes (zero sizes take none)
    top = max((int(o) + b.size for o, b in zip(solved.offsets, problem.buffers, strict=True)
               if b.size), default=0)
    assert pl["pinned_bound"] == max(top, chk["lower_bound"]) == pl["arena"]


def test_pinned_csv_hand_vector(tmp_path, capsys):
    """Two 8-byte buffers live together, a third after them pinned at 256: check and plan both
    say lower bound 16; plan says pinned_bound 264 (the pin's top), the arena."""
    p = tmp_path / "pinned.csv"
    p.write_text("id,lower,upper,size,offset\na,0,2,8,0\nb,0,2,8,8\nc,2,4,8,256\n")
    _, chk = _json(capsys, "check", str(p))
    _, pl = _json(capsys, "plan", str(p))
    assert chk["lower_bound"] == pl["lower_bound"] == 16
    assert chk["arena"] == pl["arena"] == pl["pinned_bound"] == 264


# -- item 5: the time limit said one way ---------------------------------------------------------

def test_time_limit_text():
    assert [time_limit_text(x) for x in (10.0, 2.5, None)] == [
        "time limit 10 s", "time limit 2.5 s", "no time limit"]


def test_heuristic_says_no_time_limit_on_plan_view_and_export(tmp_path, capsys):
    assert main(["plan", "seed000", "--planner", "naive"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("time_limit"))
    assert line.split(None, 1)[1] == "no time limit"
    assert main(["plan", "seed000", "--planner", "cpsat", "--time-limit", "3"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("time_limit"))
    assert line.split(None, 1)[1] == "3 s"
    assert main(["view", "seed000", "--planners", "naive", "-o", str(tmp_path / "v.html")]) == 0
    out = capsys.readouterr().out
    assert "naive: no time limit" in out and "time limit 10 s" not in out
    assert main(["export", "seed000", "--planner", "naive", "-o", str(tmp_path / "e.json")]) == 0
    out = capsys.readouterr().out
    assert "no time limit" in out and "time limit 10 s" not in out


def test_view_of_a_plan_read_from_a_file(tmp_path, capsys):
    p = tmp_path / "pinned.csv"
    p.write_text("id,lower,upper,size,offset\na,0,2,8,0\nb,0,2,8,8\nc,2,4,8,256\n")
    html = tmp_path / "v.html"
    assert main(["view", str(p), "-o", str(html)]) == 0
    out = capsys.readouterr().out
    assert f"from {p} as read (nothing planned)" in out and "time limit" not in out
    text = html.read_text()
    for esc, c in (("\\u002f", "/"), ("\\u003c", "<"), ("\\u003e", ">")):  # plotly's JSON
        text = text.replace(esc, c)
    assert f"<b>from {p}</b>: arena 264 B" in text and "as read (nothing planned)" in text
    assert "heuristic, not proved optimal" not in text


def test_c_header_pipeline_says_none(capsys):
    assert main(["export", "seed000", "--format", "c-header"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "pipeline 'none'" in first and "pipeline ''" not in first


def test_schedule_prints_plan_scheduler_keys_and_no_reprs(capsys):
    rc, rec = _json(capsys, "schedule", "mobilenet_v2", "--scheduler", "genetic", "--scheduler-param",
                    "generations=2", "--param", "time_limit=1")
    assert rc == 0
    rc, pl = _json(capsys, "plan", "mobilenet_v2", "--scheduler", "genetic", "--scheduler-param",
                   "generations=2", "--scheduler-param", "time_limit=1")
    shared = {"scheduler", "schedule_status", "order_bound", "peak_bytes", "schedule_seconds",
              "scheduler_params"}
    assert shared <= set(rec) and shared <= set(pl)
    assert not {"bound", "status", "params", "seconds"} & set(rec)
    assert rec["scheduler_params"]["generations"] == 2 and rec["scheduler_params"]["time_limit"] == 1
    assert main(["schedule", "mobilenet_v2", "--scheduler", "genetic", "--param", "generations=2",
                 "--param", "time_limit=1"]) == 0
    lines = dict(x.split(None, 1) for x in capsys.readouterr().out.splitlines())
    assert "{" not in lines["scheduler_params"] and "generations=2" in lines["scheduler_params"]
    assert "time_limit=1" in lines["scheduler_params"]


def test_duplicate_id_names_csv_lines(tmp_path, capsys):
    p = tmp_path / "dup.csv"
    p.write_text("id,lower,upper,size\na,0,2,8\nb,1,3,8\na,2,4,8\n")
    assert main(["plan", str(p)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"memplan: error: {p}: duplicate buffer id 'a' (lines 2 and 4)")
    assert main(["check", str(p)]) == 2
    assert "(lines 2 and 4)" in capsys.readouterr().err


def test_sweep_report_provenance_explains_versions_and_counts_schedulers():
    import pandas as pd

    from experiments.report.sweep_report import _provenance_note, _scheduler_count

    df = pd.DataFrame({
        "planner": ["naive", "cpsat", "naive", "cpsat"],
        "scheduler": ["-", "-", "file_order", "file_order"],  # one scheduler; '-' is none
        "code_version": ["0.1+aaa", "0.1+bbb", "0.1+aaa", "0.1+bbb"],
        "git_commit": ["abc123+dirty"] * 4,
    })
    assert _scheduler_count(df) == "1 scheduler"
    assert _scheduler_count(df.assign(scheduler="-")) == "0 schedulers"
    note = _provenance_note(df, None)
    assert note.startswith("2 code versions over 2 planners and 1 scheduler, on 1 git commit.")
    assert "recorded per run" in note and "changes when those files changed between runs" in note
    assert "`+dirty` (abc123+dirty): the checkout had uncommitted changes" in note
    assert "+dirty" not in _provenance_note(df.assign(git_commit="abc123"), None)


def test_tflm_offline_refuses_planner_params_it_would_ignore(tmp_path, capsys):
    assert main(["export", "x.tflite", "--format", "tflm-offline", "-o", str(tmp_path / "o.tflite"),
                 "--param", "order=size"]) == 2
    assert "--planner-param/--param would be ignored" in capsys.readouterr().err
