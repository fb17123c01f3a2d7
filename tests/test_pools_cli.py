"""Memory pools (``--pools``) on ``memplan compare``, sweeps (the ``pools`` key, ``memplan report``)
and ``memplan budget``: per-pool arenas in records, stored plans with their pools, one figure
panel per pool, and one error line for bad pool text on every command."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.cli import main
from experiments.cli.common import parse_pools
from experiments.harness import pools_text
from planners.model import MemoryPool
from planners.validate import check_plan

POOLS = "sram=4k:16,psram=1M"


def _one_error_line(capsys, code: int, *needles: str) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("memplan: error: "), err
    for n in needles:
        assert n in err, err
    return err


# -- the pools text ------------------------------------------------------------------------------
@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["sram", "psram", "tcm", "dram", "l2"]),
                          st.one_of(st.none(), st.integers(0, 2**40)),
                          st.integers(1, 4096)), min_size=1, max_size=4,
                unique_by=lambda t: t[0]))
def test_pools_text_reads_back_to_the_same_pools(items):
    pools = tuple(MemoryPool(n, c, a) for n, c, a in items)
    text = pools_text(pools)
    assert parse_pools(text) == pools
    assert pools_text(parse_pools(text)) == text  # canonical: one text per pool set


def test_pools_text_uses_exact_binary_suffixes():
    assert pools_text(parse_pools("sram=262144:16,psram=8M,x=1000,y=inf")) == \
        "sram=256k:16,psram=8M,x=1000,y=inf"
    assert pools_text(None) == ""


# -- memplan compare --pools ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """One comparison with pools on two small workloads and a CSV with a pinned buffer (which
    `naive` refuses), drawn with figures."""
    out = tmp_path_factory.mktemp("cmp")
    pinned = out / "pinned.csv"
    pinned.write_text("id,lower,upper,size,offset\nin,0,2,64,0\na,1,3,150,\nb,2,4,300,\n")
    code = main(["compare", "--workloads", "seed000", "seed002_ex5.1", str(pinned),
                 "--planners", "greedy_by_size", "best_fit", "naive", "--pools", POOLS,
                 "--out", str(out / "res"), "--quiet", "--timing-repeats", "1"])
    assert code == 0
    return out / "res"


def test_compare_records_have_per_pool_arenas_that_sum_to_the_arena(compared):
    df = pd.read_csv(compared / "compare.csv")
    assert list(df.columns[-4:]) == ["pools", "arenas", "arena_sram", "arena_psram"]
    assert set(df["pools"]) == {"sram=4k:16,psram=1M"}
    ok = df[df["valid"]]
    assert len(ok) == 8  # 3 workloads x 3 planners, naive refused on the pinned CSV
    assert (ok["arena_sram"] + ok["arena_psram"] == ok["arena"]).all()
    for _, r in ok.iterrows():  # the JSON column says the same as the per-pool columns
        assert json.loads(r["arenas"]) == {"sram": r["arena_sram"], "psram": r["arena_psram"]}
        assert r["arena_sram"] <= 4096 and r["fits"]
    # exercise 5.1 by greedy_by_size with 16-byte sram alignment, by hand: T4 [0, 250),
    # T2 [256, 456), T5 [464, 644), T3 [656, 806), T1 [464, 564) (T5 starts as T1 ends): 806
    r = ok[(ok["workload"] == "seed002_ex5.1") & (ok["planner"] == "greedy_by_size")].iloc[0]
    assert (r["arena_sram"], r["arena_psram"], r["arena"]) == (806, 0, 806)


def test_compare_refusing_planner_record_says_why(compared):
    df = pd.read_csv(compared / "compare.csv", keep_default_na=False)
    r = df[(df["workload"] == "pinned") & (df["planner"] == "naive")].iloc[0]
    assert r["status"] == "error" and not r["valid"]
    assert "does not handle fixed offsets (pins)" in r["error"]
    assert r["pools"] == "sram=4k:16,psram=1M" and r["arena_sram"] == ""


def test_compare_stored_plans_carry_pools_that_validate(compared):
    from experiments.records import PLANS_FILE, read_plans

    body = json.loads((compared / PLANS_FILE).read_text())
    assert [q["name"] for q in body["pools"]] == ["sram", "psram"]
    problems, plans = read_plans(compared)
    assert len(plans) == 8
    df = pd.read_csv(compared / "compare.csv")
    for (w, name), plan in plans.items():
        assert problems[w].pools and plan.pools is not None
        check_plan(problems[w], plan.offsets, pools=plan.pools)
        rec = df[(df["workload"] == w) & (df["planner"] == name)].iloc[0]
        assert plan.arenas == {"sram": rec["arena_sram"], "psram": rec["arena_psram"]}
    md = (compared / "compare.md").read_text()
    assert "## Memory pools" in md and "arena_psram" in md


def test_compare_layout_figure_has_one_panel_per_pool(compared):
    from experiments import plots
    from experiments.records import read_plans

    layouts = sorted((compared / "figures").glob("layout_seed000_*.png"))
    assert len(layouts) == 1
    problems, plans = read_plans(compared)
    plan = plans[("seed000", "greedy_by_size")]
    fig = plots.plot_pool_layouts(plan)
    assert len(fig.axes) == 2
    for ax, q in zip(fig.axes, problems["seed000"].pools, strict=True):
        assert ax.get_title().startswith(f"pool {q.name} ")
        caps = [ln for ln in ax.get_lines() if ln.get_label().startswith("capacity")]
        assert len(caps) == 1  # the pool's capacity line
        # each panel holds that pool's buffers only, at their offsets in the pool
        rects = ax.collections[0].get_paths()
        assert len(rects) == int((plan.pools == problems["seed000"].pool_index(q.name)).sum())
    sram_cap = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("capacity")][0]
    assert sram_cap.get_ydata()[0] == 4096 and sram_cap.get_visible()
    with pytest.raises(ValueError, match="plot_pool_layouts"):
        plots.plot_arena_layout(plan)
    import matplotlib.pyplot as plt

    plt.close("all")


def test_compare_bad_pools_is_one_line(capsys, tmp_path):
    code = main(["compare", "--workloads", "seed000", "--pools", "sram=x", "--out",
                 str(tmp_path / "o"), "--quiet"])
    _one_error_line(capsys, code, "--pools 'sram=x'", "NAME=BYTES[:ALIGN]")
    assert not (tmp_path / "o").exists()
    code = main(["compare", "--workloads", "seed000", "--pools", POOLS, "--rv64", "--out",
                 str(tmp_path / "o"), "--quiet"])
    _one_error_line(capsys, code, "--pools", "--rv64")


# -- sweeps with pools ---------------------------------------------------------------------------
SWEEP = """
name = "pools"
out = "out"
code_version = "pinned"
timing_repeats = 1
pools = ["sram=4k:16,psram=1M", "none"]
workloads = ["seed000", "seed002_ex5.1"]
[planners]
greedy_by_size = {}
naive = {}
"""


def test_sweep_with_pools_round_trips_through_records_and_report(tmp_path, capsys):
    from experiments.report.sweep_report import pool_table
    from experiments.sweep import load_config, load_records
    from experiments.sweep.store import read_records

    cfg_file = tmp_path / "pools.toml"
    cfg_file.write_text(SWEEP)
    assert main(["sweep", str(cfg_file), "--jobs", "1", "--quiet"]) == 0
    recs = read_records(tmp_path / "out")
    assert len(recs) == 8 and len({r["key"] for r in recs}) == 8  # pools are part of the key
    with_pools = [r for r in recs if r.get("pools")]
    assert len(with_pools) == 4 and {r["pools"] for r in with_pools} == {"sram=4k:16,psram=1M"}
    plain = {(r["workload"], r["planner"]): r for r in recs if not r.get("pools")}
    from experiments.records import load_problem_csv

    for r in with_pools:
        assert r["valid"] and r["arena_sram"] + r["arena_psram"] == r["arena"]
        assert json.loads(r["arenas"]) == {"sram": r["arena_sram"], "psram": r["arena_psram"]}
        assert r["problem_digest"] == plain[(r["workload"], r["planner"])]["problem_digest"]
        p = load_problem_csv(tmp_path / "out" / "problems" / f"{r['problem_digest']}.csv", "p")
        check_plan(p.with_pools(parse_pools(r["pools"])), json.loads(r["offsets"]),
                   pools=json.loads(r["pool_of"]))
    # a second run finds every record: nothing runs again
    assert main(["sweep", str(cfg_file), "--jobs", "1", "--quiet"]) == 0
    assert "8 already recorded, 0 ran" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "out"), "--formats", "png"]) == 0
    md = (tmp_path / "out" / "report" / "report.md").read_text()
    assert "## Memory pools" in md and "greedy_by_size [pools sram=4k:16,psram=1M]" in md
    figs = tmp_path / "out" / "report" / "figures"
    assert (figs / "layout_pools_seed000.png").is_file()
    t = pool_table(__import__("experiments.report.sweep_report", fromlist=["_prepare"])
                   ._prepare(load_records(tmp_path / "out")))
    assert len(t) == 4 and (t["arena_sram"] + t["arena_psram"] == t["arena"]).all()
    # the same pools written another way are the same runs (canonical text in the key)
    cfg2 = tmp_path / "pools2.toml"
    cfg2.write_text(SWEEP.replace("sram=4k:16,psram=1M", "sram=4096:16,psram=1024k"))
    keys = {r.key for r in __import__("experiments.sweep", fromlist=["expand_runs"])
            .expand_runs(load_config(cfg2))}
    assert keys == {r["key"] for r in recs}


@pytest.mark.parametrize("value, needle", [
    ('"sram=x"', "pools: --pools 'sram=x'"),
    ('["sram=4k", 3]', "pools[1]: expected --pools text"),
    ("[]", "pools: the grid is empty"),
])
def test_sweep_bad_pools_key_is_one_line(tmp_path, capsys, value, needle):
    f = tmp_path / "bad.toml"
    f.write_text(SWEEP.replace('pools = ["sram=4k:16,psram=1M", "none"]', f"pools = {value}"))
    code = main(["sweep", str(f), "--jobs", "1", "--quiet"])
    _one_error_line(capsys, code, needle)


def test_sweep_without_pools_keeps_its_keys():
    from experiments.sweep import run_key

    args = ("d", "-", "{}", "naive", "{}", None, 0, 10.0, "v")
    assert run_key(*args) == run_key(*args, "") != run_key(*args, "sram=4k")


# -- memplan budget --pools ----------------------------------------------------------------------
def test_budget_with_pools_reports_bytes_per_pool(capsys):
    # seed000's lifetime peak is 20480 bytes; the budget is the first pool's capacity (16 KiB)
    code = main(["budget", "seed000", "--pools", "sram=16k:16,psram=1M", "--technique", "all",
                 "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["budget"] == 16384 and list(out["pools"]) == ["sram", "psram"]
    by = {r["technique"]: r for r in out["results"]}
    tiers = by["tiers"]
    sram, psram = tiers["pools"]["sram"], tiers["pools"]["psram"]
    assert sram["capacity"] == 16384 and sram["bytes"] <= 16384 and sram["fits"]
    # what the sram cannot hold at the peak step goes to the psram
    assert psram["bytes"] >= tiers["baseline_peak"] - 16384
    assert sram["bytes"] + psram["bytes"] >= tiers["baseline_peak"]
    assert tiers["fits_pools"] is True and tiers["pool_planner"] == "greedy_by_size"
    assert all(r["status"] == "infeasible" for t, r in by.items() if t != "tiers")


def test_budget_with_pools_overflow_and_recompute_versions(capsys):
    # a psram too small for what spills: the overflow is known at plan time
    code = main(["budget", "seed000", "--pools", "sram=16k:16,psram=2k", "--technique",
                 "tiers"])
    assert code == 0
    text = capsys.readouterr().out
    assert "OVER CAPACITY" in text and "does not fit every pool" in text
    # recompute: its value versions placed; the sram takes the whole peak
    assert main(["budget", "seed000", "--pools", "sram=32k:16,psram=1M", "--technique", "all",
                 "--json"]) == 0
    by = {r["technique"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    rec = by["recompute"]
    assert rec["pools"]["sram"]["bytes"] + rec["pools"]["psram"]["bytes"] >= rec["peak"]
    assert by["patch"]["pools"] is None and "not placed" in by["patch"]["pools_note"]


def test_budget_recompute_versions_have_the_reported_peak():
    from experiments.cli.budget import _versions_problem
    from experiments.workloads import load_graph
    from planners import lower_bound
    from scheduling.recompute import greedy_recompute, remat_problem, simulate

    g = load_graph("gen:randwire")
    rp = remat_problem(g)
    base = int(simulate(rp, [[t] for t in range(rp.T)]).max())
    r = greedy_recompute(rp, int(base * 0.9))
    assert r.recomputed  # versions computed twice are separate buffers
    p = _versions_problem(g, rp, r.comp)
    assert lower_bound(p) == r.peak
    assert p.n == sum(len(c) for c in r.comp)


@pytest.mark.parametrize("args, needle", [
    (["--pools", "sram=x"], "--pools 'sram=x'"),
    (["--pools", "sram=inf"], "has no capacity (inf); give --budget"),
    ([], "--budget: give the memory budget"),
    (["--pools", POOLS, "--planner", "nope"], "nope"),
])
def test_budget_bad_pools_is_one_line(capsys, args, needle):
    code = main(["budget", "seed000", *args])
    _one_error_line(capsys, code, needle)


def test_compare_pools_on_python_api_matches_records():
    from experiments.harness import compare
    from experiments.workloads import resolve_problems

    pools = parse_pools(POOLS)
    df = compare(resolve_problems(["seed000"]), ["greedy_by_size"], progress=False, pools=pools,
                 repeats=1)
    assert df.loc[0, "arena_sram"] + df.loc[0, "arena_psram"] == df.loc[0, "arena"]
    assert str(df["arena_sram"].dtype) == "Int64"
    no = compare(resolve_problems(["seed000"]), ["greedy_by_size"], progress=False, repeats=1)
    assert "pools" not in no.columns and "arena_sram" not in no.columns
    assert np.isclose(df.loc[0, "ratio"], df.loc[0, "arena"] / df.loc[0, "lower_bound"])


def test_compare_reads_a_csv_workloads_own_pools_column(tmp_path, capsys):
    """A CSV whose ``pools`` column names each buffer's candidates is read against ``--pools``
    (it is an error without them), planned, stored and redrawn with its candidates kept."""
    from experiments.records import read_plans

    csv = tmp_path / "cand.csv"
    csv.write_text("id,lower,upper,size,pools\na,0,3,100,sram\nb,1,4,200,psram\n"
                   "c,2,5,50,\nd,4,6,300,sram psram\n")
    out = tmp_path / "out"
    rc = main(["compare", "--workloads", str(csv), "--pools", "sram=512,psram=1k",
               "--planners", "greedy_by_size", "naive", "--out", str(out), "--quiet"])
    capsys.readouterr()
    assert rc == 0
    recs = pd.read_csv(out / "compare.csv")
    assert recs["valid"].all() and (recs["arena_sram"] + recs["arena_psram"] == recs["arena"]).all()
    problems, plans = read_plans(out)
    (p,) = problems.values()
    assert [b.pools for b in p.buffers] == [("sram",), ("psram",), (), ("sram", "psram")]
    for pl in plans.values():
        names = [p.pools[k].name for k in pl.pools.tolist()]
        assert names[0] == "sram" and names[1] == "psram"  # each buffer among its candidates
        check_plan(p, pl.offsets, pools=pl.pools)
    assert sorted(f.name for f in (out / "figures").glob("ratio_*.png"))
    # without --pools the candidates cannot be read: one line, exit 2, nothing written
    rc = main(["compare", "--workloads", str(csv), "--planners", "naive",
               "--out", str(tmp_path / "none"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "pools" in err[0]


def test_sweep_reads_a_csv_workloads_own_pools_column(tmp_path, capsys):
    """A sweep's CSV workload with a ``pools`` column is read against the run's pools: every
    buffer lands among its candidates (the same file without pools would be refused)."""
    from experiments.sweep.store import read_records

    (tmp_path / "cand.csv").write_text("id,lower,upper,size,pools\na,0,3,100,sram\n"
                                       "b,1,4,200,psram\nc,2,5,50,\nd,4,6,300,sram psram\n")
    cfg = tmp_path / "s.toml"
    cfg.write_text('name = "t"\nout = "out"\ntime_limit = 5.0\npools = "sram=512,psram=1k"\n'
                   'workloads = ["cand.csv"]\n[planners]\ngreedy_by_size = {}\nnaive = {}\n')
    assert main(["sweep", str(cfg), "--jobs", "1", "--quiet"]) == 0
    capsys.readouterr()
    recs = read_records(tmp_path / "out")
    assert len(recs) == 2
    for r in recs:
        assert r["valid"] and not r.get("error")
        pool_of = json.loads(r["pool_of"])
        assert pool_of[0] == 0 and pool_of[1] == 1  # a: sram only, b: psram only
        assert r["arena_sram"] + r["arena_psram"] == r["arena"]


def test_cli_pools_prefer_the_first_pool_on_squeezenet():
    """--pools gives every pool cost 0, so each pool costs its rank: cpsat fills the sram
    (259,584 of 262,144 bytes) and its traffic cost (56,732,928, proved minimal) is at most the
    greedy spill's (57,507,328). Before, cost 0 everywhere left the sram empty."""
    from experiments.workloads import load_problem
    from planners.feature_cpsat import traffic_cost
    from planners.registry import get_planner

    p = load_problem("squeezenet", capacity=None).with_pools(parse_pools("sram=256k:16,psram=8M"))
    assert p.pool_costs == [0, 1]
    g = get_planner("greedy_by_size").plan(p)
    c = get_planner("cpsat", time_limit=10.0).plan(p)
    check_plan(p, c.offsets, pools=c.pools)
    assert c.arenas["sram"] > 0 and c.info["traffic_cost"] <= traffic_cost(p, g.pools)
    assert traffic_cost(p, g.pools) == 57_507_328
    if c.info["solver_status"] == "OPTIMAL":  # proved within the time limit (0.5 s here)
        assert c.info["traffic_cost"] == 56_732_928
