"""``memplan export MODEL --pools NAME=BYTES[:ALIGN],...``: the execution plan with memory pools
(json: each buffer's pool, per-pool arenas; c-header: one arena macro per pool and each buffer's
pool; chrome-trace: one process per pool), refusals in one line, and every format byte for byte
as before without ``--pools``."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import numpy as np
import pytest

from experiments.cli import main
from experiments.workloads import load_graph
from planners.errors import InvalidPlanError
from planners.io import parse_pools
from planners.validate import check_plan
from scheduling.transforms import transformed_problem

POOLS = "sram=12k:16,psram=1M"
CC = shutil.which("gcc") or shutil.which("cc")

#: sha256 of `memplan export` output before --pools existed (commit d770a31): without --pools
#: every format must stay byte for byte the same.
BEFORE = {
    ("seed000", "json", ()): "9cc1bbc9747988a5773d36ea11e55411f207b6468bf72713a37b5e7ee91e9b26",
    ("seed000", "c-header", ()): "9fe06cb0c74d0091e1bd5d73d4f9c02a047ea91a48e2ccbf4cb884e693b99e94",
    ("seed000", "chrome-trace", ()):
        "38b8518cf58386d86af8147615a949be111d30e3b6d4d3aaf1446c33b1664612",
    ("mobilenet_v1_first_layer", "json", ("--alignment", "16")):
        "4864669918d1d2befb7035a2ec6ca6da3dfa94c2bddfc1990ff19227da7fcd62",
    ("mobilenet_v1_first_layer", "c-header", ("--alignment", "16")):
        "573cac1609577fa4e31e8a55b6483f9c5ee5a4f374adf5d74d1668b943ce19ac",
    ("mobilenet_v1_first_layer", "chrome-trace", ("--alignment", "16")):
        "a43a5c37fd23f7ba90ff8ba9e0776900dd7572631bfdba609e1b1c211115670e",
}


def _export(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(["export", *argv]) == 0
    return capsys.readouterr().out


def _one_error_line(capsys, code: int, want: int, *needles: str) -> str:
    out, err = capsys.readouterr()
    assert code == want, err
    assert out == "", out  # nothing written on stdout
    assert len(err.strip().splitlines()) == 1 and err.startswith("memplan: error: "), err
    for n in needles:
        assert n in err, err
    return err


@pytest.mark.parametrize("model,fmt,extra", sorted(BEFORE))
def test_without_pools_every_format_is_byte_for_byte_as_before(capsys, model, fmt, extra):
    out = _export(capsys, model, "--format", fmt, *extra)
    if fmt == "c-header":  # the one change since: the comment says pipeline 'none', not ''
        first, rest = out.split("\n", 1)
        assert "pipeline 'none'," in first
        out = first.replace("pipeline 'none',", "pipeline '',") + "\n" + rest
    assert hashlib.sha256(out.encode()).hexdigest() == BEFORE[(model, fmt, extra)]
    assert '"pool' not in out and "POOL" not in out


@pytest.fixture
def ep(capsys):
    return json.loads(_export(capsys, "seed000", "--pools", POOLS))


def test_json_has_pools_arenas_and_each_buffers_pool(ep):
    assert ep["pools"] == [{"name": "sram", "capacity": 12288, "alignment": 16},
                           {"name": "psram", "capacity": 1048576, "alignment": 1}]
    # seed000's peak is 20 KiB (conv_y, res and skip live at step 2): 12 KiB of SRAM holds two of
    # them, the third spills to PSRAM
    assert ep["arenas"] == {"sram": 12288, "psram": 8192}
    assert sum(ep["arenas"].values()) == ep["arena_size"] == 20480
    assert {b["tensor"]: b["pool"] for b in ep["buffers"]} == {
        "skip": "sram", "conv_y": "sram", "res": "psram", "relu_y": "sram", "logits": "sram",
        "probs": "sram"}
    for name, arena in ep["arenas"].items():  # each arena is its pool's highest end
        assert arena == max([b["offset"] + b["length"] for b in ep["buffers"]
                             if b["pool"] == name] + [0])
    for b in ep["buffers"]:
        if b["pool"] == "sram":
            assert b["offset"] % 16 == 0
    # the reuse table groups overlapping addresses within one pool only
    pool = {b["tensor"]: b["pool"] for b in ep["buffers"]}
    for group in ep["reuse"]:
        assert len({pool[t] for t in group}) == 1


def test_json_offsets_pass_check_plan_with_the_pools(ep):
    pools = parse_pools(POOLS)
    problem = transformed_problem(load_graph("seed000")).with_pools(pools)
    assert list(problem.ids) == [b["tensor"] for b in ep["buffers"]]
    offsets = np.array([b["offset"] for b in ep["buffers"]], dtype=np.int64)
    names = [q.name for q in pools]
    index = np.array([names.index(b["pool"]) for b in ep["buffers"]], dtype=np.int64)
    check_plan(problem, offsets, pools=index)  # pool capacities included
    # the offsets are per pool: read as one arena they collide (conv_y and res both at 0)
    with pytest.raises(InvalidPlanError):
        check_plan(problem.with_pools(None), offsets)


def test_chrome_trace_has_one_process_per_pool(capsys, ep):
    tr = json.loads(_export(capsys, "seed000", "--pools", POOLS, "--format", "chrome-trace"))
    ev = tr["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    assert procs == {0: "schedule",
                     1: "pool sram: arena 12288 bytes (greedy_by_size)",
                     2: "pool psram: arena 8192 bytes (greedy_by_size)"}
    pid_of = {e["name"]: e["pid"] for e in ev if e.get("cat") == "buffer"}
    assert pid_of == {b["tensor"]: 1 + ["sram", "psram"].index(b["pool"])
                      for b in ep["buffers"]}
    for e in ev:
        if e.get("cat") == "buffer":
            b = next(x for x in ep["buffers"] if x["tensor"] == e["name"])
            assert (e["args"]["offset"], e["args"]["pool"]) == (b["offset"], b["pool"])
    peak = {}
    for e in ev:
        if e["ph"] == "C":
            peak[e["pid"]] = max(peak.get(e["pid"], 0), e["args"]["bytes"])
    assert peak == {1: 12288, 2: 8192}  # live bytes per pool, never above its arena
    assert tr["metadata"]["arenas"] == {"sram": 12288, "psram": 8192}
    assert tr["metadata"]["arena_size"] == 20480


@pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH")
def test_c_header_compiles_and_its_pool_macros_equal_the_json(capsys, tmp_path):
    pools = "l2.fast=12k:16,L2_FAST=1M"  # both sanitise to L2_FAST: the second gets _2
    ep = json.loads(_export(capsys, "seed000", "--pools", pools))
    hdr = _export(capsys, "seed000", "--pools", pools, "--format", "c-header", "--prefix", "mp")
    assert "#define MP_ARENA_L2_FAST_BYTES 12288u" in hdr
    assert "#define MP_ARENA_L2_FAST_2_BYTES 8192u" in hdr
    (tmp_path / "plan.h").write_text(hdr, encoding="ascii")
    (tmp_path / "main.c").write_text(r"""
#include <stdio.h>
#include "plan.h"
int main(void) {
  int i;
  printf("%lu %lu %lu %d\n", (unsigned long)MP_ARENA_L2_FAST_BYTES,
         (unsigned long)MP_ARENA_L2_FAST_2_BYTES, (unsigned long)MP_ARENA_SIZE, MP_NUM_POOLS);
  printf("%d %d\n", (int)MP_POOL_L2_FAST, (int)MP_POOL_L2_FAST_2);
  for (i = 0; i < MP_NUM_POOLS; i++) printf("%s\n", mp_pool_names[i]);
  for (i = 0; i < MP_NUM_BUFFERS; i++)
    printf("%s %u %lu %lu\n", mp_buffers[i].name, (unsigned)mp_buffer_pool[i],
           (unsigned long)mp_buffers[i].offset, (unsigned long)mp_buffers[i].length);
  return 0;
}
""")
    exe = tmp_path / "a.out"
    r = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-o",
                        str(exe), str(tmp_path / "main.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = subprocess.run([str(exe)], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    names = [q["name"] for q in ep["pools"]]
    assert lines[0] == (f"{ep['arenas']['l2.fast']} {ep['arenas']['L2_FAST']} "
                        f"{ep['arena_size']} 2")
    assert lines[0] == "12288 8192 20480 2"
    assert lines[1] == "0 1"
    assert lines[2:4] == names == ["l2.fast", "L2_FAST"]
    assert lines[4:] == [f"{b['tensor']} {names.index(b['pool'])} {b['offset']} {b['length']}"
                         for b in ep["buffers"]]


def test_output_file_line_names_the_arenas(capsys, tmp_path):
    out = _export(capsys, "seed000", "--pools", POOLS, "-o", str(tmp_path / "plan.json"))
    assert out.startswith(f"wrote {tmp_path / 'plan.json'}: json, 6 buffers, arena 20480 bytes "
                          "= sram 12288 + psram 8192 (greedy_by_size, ")
    assert json.loads((tmp_path / "plan.json").read_text())["arenas"] == {"sram": 12288,
                                                                        "psram": 8192}


def test_tflm_offline_refuses_pools_in_one_line(capsys, tmp_path):
    code = main(["export", "wakeword:any", "--format", "tflm-offline", "--pools", POOLS,
                 "-o", str(tmp_path / "x.tflite")])
    _one_error_line(capsys, code, 2, "tflm-offline", "--pools")
    assert not (tmp_path / "x.tflite").exists()


def test_bad_pools_text_is_one_line(capsys):
    code = main(["export", "seed000", "--pools", "sram=12q"])
    _one_error_line(capsys, code, 2, "--pools 'sram=12q'", "NAME=BYTES[:ALIGN]")


def test_pools_too_small_is_one_line(capsys):
    # as `memplan plan --pools`: a plan over a pool's capacity is no plan (exit 1), one line
    code = main(["export", "seed000", "--pools", "sram=1k,psram=2k"])
    _one_error_line(capsys, code, 1, "within the pools' capacities", "psram 20480 > 2048")
