"""`memplan export --format chrome-trace`: a Trace Event Format JSON that Perfetto opens, one
complete event per buffer with the plan's offsets."""

from __future__ import annotations

import json

import pytest

from experiments.cli import main


@pytest.mark.parametrize("model", ["seed000", "mobilenet_v1_first_layer"])
def test_chrome_trace_one_event_per_buffer(tmp_path, model):
    trace, plan = tmp_path / "t.json", tmp_path / "p.json"
    assert main(["export", model, "--format", "chrome-trace", "-o", str(trace)]) == 0
    assert main(["export", model, "--format", "json", "-o", str(plan)]) == 0
    tr = json.loads(trace.read_text())
    ep = json.loads(plan.read_text())
    events = tr["traceEvents"]
    assert all(e["ph"] in ("X", "M", "C") for e in events)
    bufs = [e for e in events if e["ph"] == "X" and e["cat"] == "buffer"]
    assert len(bufs) == len(ep["buffers"]) > 0
    by_name = {e["name"]: e for e in bufs}
    assert len(by_name) == len(bufs)  # one event per buffer
    for b in ep["buffers"]:
        e = by_name[b["tensor"]]
        assert e["args"]["offset"] == b["offset"] and e["args"]["size"] == b["length"]
        assert e["args"]["end"] == b["offset"] + b["length"]
        assert (e["ts"], e["dur"]) == (b["first"], b["last"] - b["first"] + 1)
    # each buffer on its own track, tracks sorted by offset
    assert len({e["tid"] for e in bufs}) == len(bufs)
    sort = {e["tid"]: e["args"]["sort_index"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_sort_index"}
    ordered = sorted(bufs, key=lambda e: sort[e["tid"]])
    assert [e["args"]["offset"] for e in ordered] == sorted(b["offset"] for b in ep["buffers"])
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "operator"]
    assert [e["name"] for e in ops] == [o["name"] for o in ep["operators"]]
    assert tr["metadata"]["arena_size"] == ep["arena_size"]
    live = [e["args"]["bytes"] for e in events if e["ph"] == "C"]
    assert max(live) <= ep["arena_size"] and live[-1] == 0


def test_chrome_trace_seed000_values(tmp_path):
    trace = tmp_path / "t.json"
    assert main(["export", "seed000", "--pipeline", "", "--planner", "greedy_by_size",
                 "--format", "chrome-trace", "-o", str(trace)]) == 0
    tr = json.loads(trace.read_text())
    bufs = {e["name"]: e for e in tr["traceEvents"] if e["ph"] == "X" and e["cat"] == "buffer"}
    assert sum(e["args"]["size"] for e in bufs.values()) > 0
    top = max(e["args"]["end"] for e in bufs.values())
    assert top == tr["metadata"]["arena_size"]
