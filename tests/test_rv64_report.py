"""The RV64 benchmark report (experiments/report/rv64.py) computes its numbers from the CSVs:
a tiny synthetic CSV set with the benchmark's column names, and checks that the values, verdicts
and counts in the Markdown follow the data (a verdict flips when a value crosses its target)."""

from __future__ import annotations

import pandas as pd
import pytest

from experiments.report.rv64 import CYCLES_TARGET, main, write_rv64_report

CORES = ("greedy_by_size", "freelist_bump", "greedy_by_size_tree")


def _row(workload, kind, n, planner, cycles, **kw):
    r = {
        "workload": workload, "kind": kind, "n": n, "planner": planner,
        "rv64_instructions": cycles // 2, "rv64_cycles_u74": cycles,
        "rv64_cycles_c906": 2 * cycles, "offsets_match": True, "arena": 1000 * n,
        "seconds": 1.5, "cpu_seconds": 1.0, "instructions_u74": cycles // 2, "insn_muldiv": 0,
        "rv64_cycles_u74_ideal_memory": cycles // 2,
        "l1i_accesses_u74": 1000, "l1i_misses_u74": 1, "l1d_accesses_u74": 1000,
        "l1d_misses_u74": 25, "text_bytes_baseline_rv64": 1000, "stack_bytes_baseline_rv64": 800,
        "text_bytes_sifive_u74": 3000, "stack_bytes_sifive_u74": 864, "scratch_bytes": 8 * n,
        "heap_bytes": 0, "assumptions_u74": "bht_entries;latency.div",
        "assumptions_c906": "latency.alu", "rvsim_cycles_u74": float("nan"),
        "rvsim_instructions_u74": float("nan"), "rvsim_offsets_match": float("nan"),
        "rvsim_cycles_c906": float("nan"), "rvsim_instructions_c906": float("nan"),
        "peak_rss_mb": float("nan"),
    }
    r.update(kw)
    return r


def _frames(tree_n1024: int, rss: float = 200.0, tree_seconds: float = 10.0):
    rows = []
    for c in CORES:
        rows.append(_row("random_n16", "random", 16, c, 10_000 if c != CORES[2] else 20_000,
                         rvsim_cycles_u74=15_000, rvsim_instructions_u74=5_000,
                         rvsim_offsets_match=True, rvsim_cycles_c906=30_000,
                         rvsim_instructions_c906=5_000))
        cyc = {"greedy_by_size": 20_000_000, "freelist_bump": 900_000}.get(c, tree_n1024)
        rows.append(_row("random_n1024", "random", 1024, c, cyc, offsets_match=c != CORES[1]))
        rows.append(_row("transformer_n1026", "network", 1026, c, 3 * cyc // 4))
        rows.append(_row("random_n8192", "random", 8192, c, 50 * cyc, peak_rss_mb=rss,
                         seconds=tree_seconds if c == CORES[2] else 100.0))
    df = pd.DataFrame(rows)
    mca = pd.DataFrame({
        "block": ["a", "b", "worst", "d"], "source": ["core", "core", "hand", "hand"],
        "instructions": [2, 3, 4, 5], "our_cycles_per_iter": [2.0, 3.0, 4.4, 5.0],
        "mca_cycles_per_iter": [2.0, 3.0, 4.0, 5.0], "ratio": [1.0, 1.0, 1.1, 1.0],
        "llvm_version": [19] * 4, "asm": ["x"] * 4,
    })
    return df, mca


def _write(tmp_path, df, mca, quiet=None, **kw):
    csv, mpath = tmp_path / "bench_rv64.csv", tmp_path / "mca.csv"
    df.to_csv(csv, index=False)
    mca.to_csv(mpath, index=False)
    qpath = None
    if quiet is not None:
        qpath = tmp_path / "quiet.csv"
        quiet.to_csv(qpath, index=False)
    out = write_rv64_report(csv, mpath, tmp_path / "bench_rv64.md", qpath, **kw)
    return out.read_text()


def _line(text, start):
    hits = [ln for ln in text.splitlines() if ln.startswith(start)]
    assert len(hits) == 1, (start, hits)
    return hits[0]


def test_target_verdict_flips_at_one_million_cycles(tmp_path):
    df, mca = _frames(tree_n1024=CYCLES_TARGET + 250_000)
    text = _write(tmp_path, df, mca)
    row = _line(text, "| random_n1024 (random, n = 1024)")
    assert "1.25 M" in row and "20.00 M" in row and "0.90 M" in row
    assert "missed by 0.25 M (1.25x the target)" in row
    # transformer: 3/4 of 1.25 M = 0.94 M, under the target
    assert "met (6 % under)" in _line(text, "| transformer_n1026 (network, n = 1026)")

    df, mca = _frames(tree_n1024=CYCLES_TARGET - 200_000)
    text = _write(tmp_path, df, mca)
    assert "met (20 % under)" in _line(text, "| random_n1024 (random, n = 1024)")
    assert "Cores under the target on every row of this table: `freelist_bump`, " \
           "`greedy_by_size_tree`." in text


def test_mca_count_and_largest_deviation(tmp_path):
    df, mca = _frames(tree_n1024=2_000_000)
    text = _write(tmp_path, df, mca, run_seconds=600.0)
    assert "equal to `llvm-mca -mcpu=sifive-u74` on 3 of 4 blocks" in text
    assert "largest |ratio - 1| = 0.1000 (`worst`)" in text
    assert "2 core, 2 hand blocks" in text
    assert "10.0 min (600 s)" in text
    mca["our_cycles_per_iter"] = mca["mca_cycles_per_iter"]
    mca["ratio"] = 1.0
    text = _write(tmp_path, df, mca)
    assert "on 4 of 4 blocks; largest |ratio - 1| = 0." in text
    assert "not recorded" in text


def test_counts_tables_and_ratios_follow_the_csv(tmp_path):
    df, mca = _frames(tree_n1024=2_000_000)
    text = _write(tmp_path, df, mca)
    # one row of freelist_bump at n = 1024 does not match
    assert f"on {len(df) - 1} of {len(df)} rows; they differ on random_n1024 / freelist_bump" in text
    # random cycles table, n as rows, cores as columns
    assert _line(text, "| 1024 | 20,000,000 | 900,000 | 2,000,000 |")
    # L1D misses 25 / 1000 = 2.50 %, L1I 1 / 1000 = 0.100 %
    assert "| 16 | 2.50 | 2.50 | 2.50 |" in text and "| 16 | 0.100 | 0.100 | 0.100 |" in text
    # ideal memory is half: the caches double the estimate
    assert "At n = 16 the caches add 100.0 to 100.0 %" in text
    # rvsim: 15,000 / 10,000 and 15,000 / 20,000; C906 30,000 / 20,000 and 30,000 / 40,000
    assert "U74: 0.75x to 1.50x; C906: 0.75x to 1.50x" in text
    # instructions_u74 = cycles // 2: 5,000 for two cores, 10,000 for the tree core
    assert "on 2 of the 3 rows it ran (n <= 16)" in text
    # code size: 3000 / 1000
    assert "3.0x to 3.0x the baseline's code" in text
    # tree vs greedy_by_size at the largest random n
    assert "100.00 M against 1,000.00 M for `greedy_by_size` (10.0x fewer cycles)" in text


def test_n8192_verdicts_from_main_or_quiet_csv(tmp_path):
    df, mca = _frames(tree_n1024=2_000_000, rss=200.0, tree_seconds=59.0)
    text = _write(tmp_path, df, mca)
    assert "Verdict at N = 8192 from" in text
    assert "| `greedy_by_size_tree` | 59.0 | 1.0 | 200 | met | met |" in text
    assert "| `greedy_by_size` | 100.0 | 1.0 | 200 | missed (1.67x) | met |" in text

    df2, _ = _frames(tree_n1024=2_000_000, rss=2048.0, tree_seconds=61.0)
    text = _write(tmp_path, df2, mca)
    assert "| `greedy_by_size_tree` | 61.0 | 1.0 | 2,048 | missed (1.02x) | missed (2.00x) |" in text

    # a quiet CSV with the same cycles is used for the verdict
    quiet = df[df["n"] == 8192].assign(seconds=30.0)
    text = _write(tmp_path, df2, mca, quiet=quiet)
    assert "equal this CSV's on 3 of 3 rows" in text
    assert "| `greedy_by_size` | 30.0 | 1.0 | 200 | met | met |" in text
    # ... but not when its cycles differ (another code version)
    quiet.loc[quiet["planner"] == "greedy_by_size_tree", "rv64_cycles_u74"] += 1
    text = _write(tmp_path, df2, mca, quiet=quiet)
    assert "equal this CSV's on 2 of 3 rows" in text
    assert "| `greedy_by_size` | 100.0 | 1.0 | 2,048 | missed (1.67x) | missed (2.00x) |" in text


def test_deterministic_and_command_line(tmp_path):
    df, mca = _frames(tree_n1024=2_000_000)
    a = _write(tmp_path, df, mca)
    b = _write(tmp_path, df, mca)
    assert a == b
    out = tmp_path / "cli.md"
    assert main(["--csv", str(tmp_path / "bench_rv64.csv"), "--mca", str(tmp_path / "mca.csv"),
                 "--quiet", "", "--out", str(out), "--figures", ""]) == 0
    assert out.read_text() == a


def test_missing_csv_or_column_is_an_error(tmp_path):
    df, mca = _frames(tree_n1024=2_000_000)
    with pytest.raises(FileNotFoundError):
        write_rv64_report(tmp_path / "none.csv", None, tmp_path / "x.md")
    df.drop(columns=["rv64_cycles_u74"]).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match="rv64_cycles_u74"):
        write_rv64_report(tmp_path / "bad.csv", None, tmp_path / "x.md")
    assert main(["--csv", str(tmp_path / "none.csv"), "--out", str(tmp_path / "y.md")]) == 2
