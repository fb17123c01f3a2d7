"""``memplan budget``: reachable peak and overhead for a budget; infeasible budgets exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.cli.budget import parse_bytes
from planners.errors import ProblemError

ROOT = Path(__file__).resolve().parents[1]
MODEL = "mobilenet_v2:1.0:96:int8"


def memplan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_parse_bytes():
    assert parse_bytes("262144") == 262144
    assert parse_bytes("256k") == parse_bytes("256KiB") == 262144
    assert parse_bytes("1.5M") == 3 * 512 * 1024
    with pytest.raises(ProblemError, match="'lots'"):
        parse_bytes("lots")


def test_budget_all_json_reports_each_technique():
    # MobileNetV2 at 96x96 int8: layer-by-layer peak = block 2's expand, 48x48x(16 + 96) bytes
    base = 48 * 48 * (16 + 96)
    r = memplan("budget", MODEL, "--budget", str(base // 2), "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["budget"] == base // 2
    res = {x["technique"]: x for x in obj["results"]}
    assert set(res) == {"patch", "recompute", "tiers"}
    p = res["patch"]
    assert p["status"] == "fits" and p["baseline_peak"] == base
    assert p["peak"] <= base // 2 and p["extra_macs"] > 0 and p["extra_bytes"] > 0
    # the stage-model peak cannot drop below an operator's input + output: infeasible, and the
    # record names the smallest reachable peak
    rc = res["recompute"]
    assert rc["status"] == "infeasible" and rc["smallest_peak"] > base // 2
    assert f"smallest reachable peak {rc['smallest_peak']} bytes" in rc["error"]
    t = res["tiers"]
    assert t["status"] == "fits" and t["sram_arena"] <= base // 2
    assert 0 < t["dram_traffic"] <= t["total_traffic"]
    assert t["dram_traffic"] == t["dram_access_traffic"] + t["bytes_moved"]


def test_budget_infeasible_exits_2_naming_smallest_peak():
    r = memplan("budget", MODEL, "--budget", "1000", "--technique", "patch")
    assert r.returncode == 2
    assert r.stderr.startswith("memplan: error: ") and "Traceback" not in r.stderr
    assert "budget 1000 bytes is below the smallest reachable peak" in r.stderr
    smallest = int(r.stderr.split("smallest reachable peak ")[1].split()[0])
    ok = memplan("budget", MODEL, "--budget", str(smallest), "--technique", "patch", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["results"][0]["peak"] == smallest
    bad = memplan("budget", MODEL, "--budget", "-5", "--technique", "tiers")
    assert bad.returncode == 2 and "--budget" in bad.stderr


def test_budget_recompute_text_output():
    r = memplan("budget", "seed000", "--budget", "1M", "--technique", "recompute",
                "--solver", "cpsat", "--time-limit", "5")
    assert r.returncode == 0, r.stderr
    assert "recompute" in r.stdout and "extra MACs 0" in r.stdout
