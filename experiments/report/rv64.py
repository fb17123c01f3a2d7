"""``results/bench_rv64.md``: the report of the RV64 allocator-core benchmark, computed from its
stored CSVs alone (``make bench-rv64`` writes them and then calls :func:`write_rv64_report`).

Inputs (columns as written by :mod:`experiments.bench.rv64`):

* ``results/bench_rv64.csv``: one row per (workload, core); cycles are core-model cycles of the
  emulated machine code (``rv64_cycles_u74`` with L1 caches, ``..._ideal_memory`` without), sizes
  in bytes, ``seconds`` / ``cpu_seconds`` host seconds of one estimate, ``peak_rss_mb`` MB
  (2^20 bytes) of the subprocess of a scaling row;
* ``results/bench_rv64_mca.csv``: steady-state cycles per iteration of the U74 model and of
  ``llvm-mca -mcpu=sifive-u74`` per block, ``ratio`` = ours / llvm-mca;
* optionally ``results/bench_rv64_n8192_quiet.csv``: the same columns, a separate run of the
  N = 8192 rows meant for a machine with nothing else running (its wall seconds are the ones the
  N = 8192 time verdict uses when its cycle counts equal the main CSV's).

Every number in the report comes from these files; the prose around them (what the models are,
what is left out) is fixed text describing the code. The module imports no planner, scheduler or
emulator (``tests/test_layout.py``).

Regenerate: ``python -m experiments.report.rv64`` (defaults: the ``results/`` paths above;
``--csv``, ``--mca``, ``--quiet``, ``--out``, ``--run-seconds``).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

__all__ = ["write_rv64_report", "rv64_report_markdown", "main", "CYCLES_TARGET",
           "SECONDS_TARGET", "RSS_TARGET_MB", "TARGET_N", "ABOUT_1000"]

#: Target of the tree core: fewer U74 cycles (with caches) than this on about 1000 buffers.
CYCLES_TARGET = 1_000_000
#: Targets of the cost of estimating at :data:`TARGET_N` buffers: wall seconds per estimate and
#: peak resident memory (MB = 2^20 bytes; 1 GB = 1024 MB).
SECONDS_TARGET = 60.0
RSS_TARGET_MB = 1024.0
TARGET_N = 8192
#: Workloads of about 1000 buffers for the tree core's target table (densenet121 has 668).
ABOUT_1000 = ("random_n1024", "transformer_n1026", "densenet121")

TREE, GBS, BUMP = "greedy_by_size_tree", "greedy_by_size", "freelist_bump"

REQUIRED = ("workload", "kind", "n", "planner", "rv64_cycles_u74", "rv64_cycles_u74_ideal_memory",
            "offsets_match", "arena", "seconds", "cpu_seconds")
MCA_REQUIRED = ("block", "source", "our_cycles_per_iter", "mca_cycles_per_iter", "ratio")


# ---- formatting -------------------------------------------------------------------------------

def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _int(v) -> str:
    return "-" if _missing(v) else f"{int(round(float(v))):,}"


def _fix(v, digits: int) -> str:
    return "-" if _missing(v) else f"{float(v):,.{digits}f}"


def _mega(v) -> str:
    """Cycles in millions, 2 decimals."""
    return "-" if _missing(v) else f"{float(v) / 1e6:,.2f} M"


def _seconds(v) -> str:
    if _missing(v):
        return "-"
    v = float(v)
    return f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """A Markdown pipe table; ``right[i]`` aligns column ``i`` right (numbers)."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _pivot_table(df: pd.DataFrame, value, cores: Sequence[str], fmt, index: str = "n",
                 label=None) -> str:
    """Rows: the distinct values of ``index`` (ascending); columns: ``cores``; cells ``fmt`` of
    ``value`` (a column name or a function of the row frame returning a Series)."""
    vals = df.assign(_v=value(df) if callable(value) else df[value])
    p = vals.pivot_table(index=index, columns="planner", values="_v", aggfunc="first")
    p = p.reindex(columns=[c for c in cores if c in p.columns]).sort_index()
    rows = [[label(i) if label else str(int(i))] + [fmt(p.at[i, c]) for c in p.columns]
            for i in p.index]
    return _table([index] + [f"`{c}`" for c in p.columns], rows, [True] * (len(p.columns) + 1))


# ---- reading ----------------------------------------------------------------------------------

def _read(path: Path, required: Sequence[str], what: str) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what}: {path} does not exist (run `make bench-rv64`)")
    df = pd.read_csv(path)
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: {path} lacks the columns {missing}")
    return df


def _truth(s: pd.Series) -> pd.Series:
    """Booleans of a CSV column holding True/False (possibly as text); missing -> False."""
    return s.map(lambda v: v is True or v == 1 or str(v).strip().lower() == "true")


def _cores(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["planner"]))


def _has(df: pd.DataFrame, col: str) -> bool:
    return col in df.columns and df[col].notna().any()


# ---- sections ---------------------------------------------------------------------------------

def _head(df, mca, quiet, run_seconds, sources, figures) -> list[str]:
    cores = _cores(df)
    kinds = df.groupby("kind", sort=False)["workload"].nunique()
    lines = ["# RV64 allocator cores: what the cost estimate models (`make bench-rv64`)", "",
             "Generated from the CSVs by `python -m experiments.report.rv64` (called at the end of "
             "`make bench-rv64`); do not edit by hand.", "", "Outputs:", ""]
    lines.append(f"* `{sources['csv']}`: {len(df)} rows, {len(cores)} cores x "
                 f"{df['workload'].nunique()} workloads ("
                 + ", ".join(f"{k} {kinds[k]}" for k in kinds.index) + ").")
    if mca is not None:
        lines.append(f"* `{sources['mca']}`: {len(mca)} blocks, U74 model against llvm-mca.")
    if quiet is not None:
        n_at = int((quiet["n"] == TARGET_N).sum())
        lines.append(f"* `{sources['quiet']}`: {len(quiet)} rows ({n_at} of them at N = "
                     f"{TARGET_N}), the timing run meant for a quiet machine.")
    for f in figures:
        lines.append(f"* `{f}`")
    lines.append("")
    if run_seconds is not None:
        lines.append(f"Wall time of the benchmark run that wrote the CSV: {run_seconds / 60:.1f} min "
                     f"({run_seconds:,.0f} s).")
    else:
        lines.append("Wall time of the benchmark run: not recorded (report regenerated from the "
                     "stored CSVs).")
    lines.append(f"Sum over the rows of the seconds per estimate: {df['seconds'].sum():,.0f} s wall, "
                 f"{df['cpu_seconds'].sum():,.0f} s CPU. The machine is shared: wall-clock figures "
                 "depend on its load; `cpu_seconds` is the figure the load disturbs least.")
    lines.append("")
    return lines


def _exact(df, mca) -> list[str]:
    match = _truth(df["offsets_match"])
    lines = ["## What is exact, what is modelled, what is left out", ""]
    s = ("**Exact** (checked): the executed instructions of the compiled cores (the project's "
         "ziglang clang, `-O2`, two builds: `baseline_rv64`, RV64GC, and `sifive_u74`), the "
         f"offsets (equal to the Python planners' on {int(match.sum())} of {len(df)} rows")
    if not match.all():
        bad = df.loc[~match, ["workload", "planner"]].astype(str).agg(" / ".join, axis=1)
        s += "; they differ on " + ", ".join(bad)
    s += ("; also asserted by the property tests), per-block execution counts, `.text` size of a "
          "one-core image, stack and scratch bytes touched.")
    lines.append(s)
    if _has(df, "rvsim_instructions_u74"):
        r = df[df["rvsim_instructions_u74"].notna()]
        same = int((r["rvsim_instructions_u74"] == r["instructions_u74"]).sum()) \
            if "instructions_u74" in r else 0
        ok = int(_truth(r["rvsim_offsets_match"]).sum()) if "rvsim_offsets_match" in r else 0
        lines.append(f"rvsim retires the same instruction count as the emulator (U74 build) on "
                     f"{same} of the {len(r)} rows it ran (n <= {int(r['n'].max())}) and reads "
                     f"back the same offsets on {ok} of them.")
    lines += ["", "**Modelled, U74** (`experiments/rv64/cycles.py`; every parameter cites its "
              "`RISCVSchedSiFive7.td` definition or is listed as an assumption):", ""]
    lines += [
        "* LLVM's SiFive7 model applied the way `llvm-mca` applies an in-order model: 2 "
        "instructions per cycle; loads/stores on pipe A, branches/jumps/multiply/divide on pipe "
        "B, ALU on either (llvm-mca's round-robin `DefaultResourceStrategy`).",
        "* Every integer result has latency 3; `SiFive7AnyToGPRBypass` (ReadAdvance 2 from ALU, "
        "load, multiply and divide results) applies to ALU, branch and `jalr` operands and to a "
        "store's data operand (`ReadStoreData`), not to load or store addresses (`ReadMemBase`) "
        "nor to multiply/divide operands. So ALU->ALU and load->ALU/branch cost 1 cycle, "
        "ALU->load address and load->load address 3, ALU->multiply 3.",
        "* In-order write-back (llvm-mca's rule without `RetireOOO`): a store after a load or "
        "ALU op waits for that op's write-back, also when it stores that op's result (the "
        "store-data bypass lets the read happen earlier, not the write-back).",
        "* Divider not pipelined (busy for the whole division).",
    ]
    if mca is not None:
        eq = mca["our_cycles_per_iter"] == mca["mca_cycles_per_iter"]
        dev = (mca["ratio"] - 1).abs().dropna()
        by_src = mca.groupby("source", sort=False).size()
        src = ", ".join(f"{by_src[k]} {k}" for k in by_src.index)
        if dev.empty:
            worst = "no block has a ratio"
        elif dev.max() == 0:
            worst = "largest |ratio - 1| = 0"
        else:
            w = dev.idxmax()
            worst = f"largest |ratio - 1| = {dev[w]:.4f} (`{mca.at[w, 'block']}`)"
        ver = ""
        if "llvm_version" in mca.columns:
            ver = " (LLVM " + ", ".join(str(v) for v in mca["llvm_version"].dropna().unique()) + ")"
        lines.append(
            "* **Cross-check against llvm-mca** (`tests/test_rv64_mca.py`): steady-state cycles per "
            "iteration, `(C(200) - C(100)) / 100` on both sides, of the hottest distinct blocks of "
            "the cores and of hand-made dependence sequences (ALU, load, branch, multiply, divide "
            f"and store chains; {src} blocks){ver}: equal to `llvm-mca -mcpu=sifive-u74` on "
            f"{int(eq.sum())} of {len(mca)} blocks; {worst}. This check found the store-data bypass (a load "
            "then a store of the loaded value was slower in the model than in llvm-mca until "
            "`ReadStoreData` was bypassed as LLVM defines it). The test needs LLVM >= 19 (older "
            "SiFive7 models have no bypass) and skips with that reason otherwise.")
    else:
        lines.append("* Cross-check against llvm-mca: no `bench_rv64_mca.csv` given (llvm-mca >= 19 "
                     "was not available to the run).")
    lines += [
        "* Not in llvm-mca, added here: a 2-bit branch predictor (size: assumption) with LLVM's "
        "`MispredictPenalty`; a taken branch or jump ends the issue group (assumption); L1 "
        "instruction and data caches with the U74 core complex manual's geometry, LRU, allocate "
        "on every miss (assumption), a fixed penalty per miss with the next level always hitting "
        "(assumption: no published L2 latency), fed with the emulated fetch addresses and data "
        "addresses (the emulator's memory hooks).",
        "* **Divider: worst case kept.** `div`/`rem` take LLVM's worst case (one quotient bit per "
        "cycle, LLVM review D151139) for any operands. SiFive's core manuals give the divider's "
        "latency only as a range \"depending on the operand values\" (e.g. the E31 manual in the "
        "FE310-G000 documentation, section 3.3), with no formula of the operands; an "
        "operand-dependent latency would be invented, so the model keeps the bound and says so "
        "(the benchmark prints it in one line). The llvm-mca agreement of the divide sequences "
        "is therefore the worst case on both sides. The cores round power-of-two alignments with "
        "a mask and divide only for other alignments.",
    ]
    if "insn_muldiv" in df.columns:
        md = df.groupby("planner", sort=False)["insn_muldiv"].max()
        lines.append("  Multiply/divide instructions executed per estimate (CSV `insn_muldiv`, the "
                     "two are one class there), largest over the rows: "
                     + ", ".join(f"`{c}` {int(md[c]):,}" for c in md.index) + ".")
    lines += [
        "* Model state carried across blocks: the in-hook models (`hostsim.c`) cost a basic block "
        "from a memo keyed by its entry state relative to the issue cycle (clamped ready times, "
        "issue group, branch outcome, cache outcomes); every counter is identical with the memo "
        "on and off (`tests/test_rv64_memo.py`).", ""]
    lines.append("**C906**: single issue (datasheet); every latency, the predictor, the caches (the "
                 "Allwinner D1 configuration) and the penalties are assumptions.")
    for key in ("u74", "c906"):
        col = f"assumptions_{key}"
        if _has(df, col):
            names = sorted({a for v in df[col].dropna() for a in str(v).split(";") if a})
            lines.append(f"Parameters the CSV lists as assumptions (`{col}`): "
                         + ", ".join(f"`{a}`" for a in names) + ".")
    lines += ["", "**Left out**: L2 misses and DRAM (a cold start on a board pays them), TLB and "
              "MMU, store-buffer capacity, fetch alignment and the loop buffer, interrupts and the "
              "OS. No number here is a hardware measurement.", ""]
    return lines


def _caches(df, cores) -> list[str]:
    r = df[df["kind"] == "random"]
    if r.empty:
        return ["## Cycles with and without caches", "", "No random rows in the CSV.", ""]
    lines = ["## Cycles with and without caches (U74 model, random problems)", "",
             "With L1 caches (`rv64_cycles_u74`):", "",
             _pivot_table(r, "rv64_cycles_u74", cores, _int), "",
             "Ideal memory (`rv64_cycles_u74_ideal_memory`):", "",
             _pivot_table(r, "rv64_cycles_u74_ideal_memory", cores, _int), ""]
    if _has(r, "l1d_misses_u74") and _has(r, "l1d_accesses_u74"):
        lines += ["L1 data-cache misses (% of loads and stores, U74):", "",
                  _pivot_table(r, lambda d: 100 * d["l1d_misses_u74"] / d["l1d_accesses_u74"],
                               cores, lambda v: _fix(v, 2)), ""]
    if _has(r, "l1i_misses_u74") and _has(r, "l1i_accesses_u74"):
        lines += ["L1 instruction-cache misses (% of fetched lines, U74):", "",
                  _pivot_table(r, lambda d: 100 * d["l1i_misses_u74"] / d["l1i_accesses_u74"],
                               cores, lambda v: _fix(v, 3)), ""]
    ratio = r["rv64_cycles_u74"] / r["rv64_cycles_u74_ideal_memory"]
    lo_n, hi_n = int(r["n"].min()), int(r["n"].max())
    small, big = ratio[r["n"] == lo_n], ratio[r["n"] == hi_n]
    bi, bj = big.idxmin(), big.idxmax()
    lines.append(
        f"At n = {lo_n} the caches add {100 * (small.min() - 1):.1f} to "
        f"{100 * (small.max() - 1):.1f} % (cold misses of a short run). At n = {hi_n} the estimate "
        f"with caches is {big.min():.2f}x (`{r.at[bi, 'planner']}`) to {big.max():.2f}x "
        f"(`{r.at[bj, 'planner']}`) the ideal-memory one: once a core's arrays outgrow the L1 data "
        "cache, its scans over the placed buffers miss. The miss penalty is an assumption, so "
        "treat the large-n numbers as a sensitivity, not a prediction.")
    lines.append("")
    return lines


def _verdict(cycles) -> str:
    if _missing(cycles):
        return "-"
    c = float(cycles)
    if c < CYCLES_TARGET:
        return f"met ({100 * (1 - c / CYCLES_TARGET):.0f} % under)"
    return f"missed by {_mega(c - CYCLES_TARGET)} ({c / CYCLES_TARGET:.2f}x the target)"


def _tree(df, cores) -> list[str]:
    lines = ["## The tree core: `greedy_by_size_tree`", ""]
    if TREE not in cores:
        return lines + ["No `greedy_by_size_tree` rows in the CSV.", ""]
    lines += [
        "Same placement as `greedy_by_size` (size descending, then earlier start, then problem "
        "order; each buffer at the lowest aligned offset clear of its placed neighbours), found "
        "without scanning every placed buffer (`experiments/rv64/cores.c`, core 5):",
        "",
        "* Structure: the static centred interval tree over time of the compiled engine "
        "(`planners/_ext/_greedy.c`, the role of XLA's `BufferIntervalTree`). Its nodes are "
        "steps stabbing every lifetime; a buffer lives at the first node on the root path whose "
        "step lies in its lifetime.",
        "* Each node keeps only its placed members, in one list sorted by offset. They all hold "
        "the node's step, so they overlap in time and the list is a sorted run of disjoint "
        "address ranges.",
        "* Query: one descent from the root finds the nodes whose placed members may be live with "
        "the new buffer, in O(log n + d) for d buffers live with it.",
        "* Lowest offset without sorting the neighbours: a candidate offset is raised through "
        "those nodes' sorted lists (each raise is forced, so it never passes the answer) until a "
        "whole pass leaves it unchanged. After 16 passes the lists are merged by a binary heap "
        "instead.",
        "* Preprocessing: stable LSD radix sorts (by start, then by size); inserting a placed "
        "buffer shifts the later members of its node's list. Worst case O(n^2 log n); about "
        "O(n log n + E) for E interfering pairs when the raises take few passes.",
        "",
    ]
    g = df[df["planner"].isin([TREE, GBS])].pivot_table(index="workload", columns="planner",
                                                          values="arena", aggfunc="first")
    if GBS in g.columns:
        g = g.dropna()
        same = int((g[TREE] == g[GBS]).sum())
        lines.append(f"Arena equal to `greedy_by_size`'s on {same} of {len(g)} workloads (the "
                     "offsets themselves are checked against the Python planner on every row and "
                     "in the property tests).")
        lines.append("")
    # target table
    sub = df[df["workload"].isin(ABOUT_1000)]
    lines.append(f"**Target: < {CYCLES_TARGET / 1e6:g} M U74 cycles (with caches) on about 1000 "
                 "buffers, same offsets as `greedy_by_size`.**")
    lines.append("")
    if sub.empty:
        lines += ["None of the workloads " + ", ".join(ABOUT_1000) + " is in the CSV.", ""]
    else:
        cyc = sub.pivot_table(index="workload", columns="planner", values="rv64_cycles_u74",
                              aggfunc="first")
        arena = sub.pivot_table(index="workload", columns="planner", values="arena",
                                aggfunc="first")
        info = sub.groupby("workload")[["kind", "n"]].first()
        rows = []
        for w in [w for w in ABOUT_1000 if w in cyc.index]:
            def get(t, c, w=w):
                return t.at[w, c] if c in t.columns else float("nan")
            rows.append([f"{w} ({info.at[w, 'kind']}, n = {int(info.at[w, 'n'])})",
                         _mega(get(cyc, TREE)), _mega(get(cyc, GBS)), _mega(get(cyc, BUMP)),
                         _verdict(get(cyc, TREE)), _int(get(arena, TREE)),
                         _int(get(arena, BUMP))])
        lines += [_table(["problem", f"`{TREE}`", f"`{GBS}`", f"`{BUMP}`",
                          f"`{TREE}` < 1 M", f"arena `{TREE}` (bytes)",
                          f"arena `{BUMP}` (bytes)"], rows,
                         [False, True, True, True, False, True, True]), ""]
        under = [c for c in cores if c in cyc.columns and (cyc[c] < CYCLES_TARGET).all()]
        lines.append("Cores under the target on every row of this table: "
                     + (", ".join(f"`{c}`" for c in under) if under else "none") + ".")
        lines.append("On random problems each new buffer has many interfering placed "
                     "neighbours, on the network-shaped problems few; the tree core's work "
                     "grows with those interfering pairs, the scan cores' with all placed "
                     "buffers.")
        lines.append("")
    # scaling and the crossover against greedy_by_size
    both = df.pivot_table(index=["kind", "workload", "n"], columns="planner",
                          values="rv64_cycles_u74", aggfunc="first")
    if GBS in both.columns:
        both = both.dropna(subset=[TREE, GBS]).reset_index()
        sp = both[GBS] / both[TREE]
        rnd = both[both["kind"] == "random"]
        if not rnd.empty:
            top = rnd.loc[rnd["n"].idxmax()]
            lines.append(f"Scaling (random, n = {int(top['n'])}): {_mega(top[TREE])} against "
                         f"{_mega(top[GBS])} for `greedy_by_size` "
                         f"({top[GBS] / top[TREE]:.1f}x fewer cycles).")
        faster = (sp > 1).to_numpy()
        order = both["n"].to_numpy().argsort(kind="stable")
        ns, fs = both["n"].to_numpy()[order], faster[order]
        cross = next((int(ns[i]) for i in range(len(ns)) if fs[i:].all()), None)
        if cross is not None:
            lines.append(f"Fewer U74 cycles than `greedy_by_size` on every workload with n >= "
                         f"{cross} (all kinds); below that, "
                         f"{int((~fs[ns < cross]).sum())} of {int((ns < cross).sum())} workloads "
                         f"are slower, by up to {1 / sp.min():.2f}x (fixed costs: the sorts and "
                         "the tree).")
        else:
            lines.append("Slower than `greedy_by_size` on the largest workload.")
        lines.append("")
    return lines


def _networks(df, cores) -> list[str]:
    sub = df[df["kind"].isin(["onnx", "network"])]
    if sub.empty:
        return []
    p = sub.pivot_table(index=["n", "workload"], columns="planner", values="rv64_cycles_u74",
                        aggfunc="first")
    p = p.reindex(columns=[c for c in cores if c in p.columns]).sort_index()
    kind = sub.groupby("workload")["kind"].first()
    rows = [[f"{w} ({kind[w]})", _int(n)] + [_int(p.at[(n, w), c]) for c in p.columns]
            for n, w in p.index]
    return ["## ONNX models and the generated transformer (U74 cycles with caches)", "",
            _table(["workload", "n"] + [f"`{c}`" for c in p.columns], rows,
                   [False] + [True] * (len(p.columns) + 1)), ""]


def _sizes(df, cores) -> list[str]:
    cols = ["text_bytes_baseline_rv64", "text_bytes_sifive_u74", "stack_bytes_baseline_rv64",
            "stack_bytes_sifive_u74", "heap_bytes"]
    cols = [c for c in cols if c in df.columns]
    if not cols:
        return []
    first = df.groupby("planner", sort=False)[cols].agg(["min", "max"])
    scratch = {}
    if "scratch_bytes" in df.columns:
        at = df[(df["kind"] == "random") & (df["n"] == 1024)]
        scratch = dict(zip(at["planner"], at["scratch_bytes"]))

    def cell(c, col):
        lo, hi = first.at[c, (col, "min")], first.at[c, (col, "max")]
        return _int(lo) if lo == hi else f"{_int(lo)} to {_int(hi)}"

    rows = [[f"`{c}`"] + [cell(c, col) for col in cols] + [_int(scratch.get(c))]
            for c in cores if c in first.index]
    head = ["core"] + [f"`{c}`" for c in cols] + ["`scratch_bytes` at random n = 1024"]
    lines = ["## Code size, stack, scratch, heap (bytes)", "",
             "`.text` of an image holding one core (plus `_start`, `memset`, `memcpy`); stack "
             "bytes touched below the entry stack pointer in the full image, whose `memplan_run` "
             "frame is sized for the largest core (so nearly equal for all cores; one core alone: "
             "`experiments.rv64.emulate.core_stack_bytes`, not in the CSV); scratch bytes touched in "
             "the host-provided work array (sized 13 n + 64 int64 words, the tree core's bound); "
             "`heap_bytes` (the cores allocate nothing else). A "
             "range means the value differs between rows.", "",
             _table(head, rows, [False] + [True] * (len(head) - 1)), ""]
    if {"text_bytes_baseline_rv64", "text_bytes_sifive_u74"} <= set(cols):
        t = df.groupby("planner")[["text_bytes_baseline_rv64", "text_bytes_sifive_u74"]].first()
        q = t["text_bytes_sifive_u74"] / t["text_bytes_baseline_rv64"]
        lines += [f"(`-mcpu=sifive_u74` unrolls and schedules: {q.min():.1f}x to {q.max():.1f}x "
                  "the baseline's code.)", ""]
    return lines


def _n_verdicts(rows: pd.DataFrame, cores, src: str) -> list[str]:
    out = []
    for c in cores:
        r = rows[rows["planner"] == c]
        if r.empty:
            continue
        r = r.iloc[0]
        s, cpu = r["seconds"], r["cpu_seconds"]
        rss = r["peak_rss_mb"] if "peak_rss_mb" in r.index else float("nan")
        tv = "-" if _missing(s) else ("met" if s < SECONDS_TARGET else
                                      f"missed ({s / SECONDS_TARGET:.2f}x)")
        mv = "-" if _missing(rss) else ("met" if rss < RSS_TARGET_MB else
                                        f"missed ({rss / RSS_TARGET_MB:.2f}x)")
        out.append([f"`{c}`", _seconds(s), _seconds(cpu), _fix(rss, 0), tv, mv])
    return [f"Verdict at N = {TARGET_N} from `{src}`:", "",
            _table(["core", "wall s", "CPU s", "peak MB", f"< {SECONDS_TARGET:g} s",
                    "< 1 GB"], out, [False, True, True, True, False, False]), ""]


def _cost(df, quiet, cores, sources) -> list[str]:
    lines = ["## Cost of estimating (bounded memory)", "",
             "The image runs in our RV64IMC interpreter (`interp.c`), which reproduces unicorn's "
             "translation blocks, data-address stream and results (`tests/test_rv64_interp.py`: "
             "random programs over every instruction it decodes, and every core on both builds "
             "with all counters equal) without unicorn's slow path on every load and store; "
             "unicorn stays the reference (`engine=\"unicorn\"`). "
             "The models run inside the emulator's hooks (`hostsim.c`): the block hook costs the "
             "previous block once its successor is known and bumps a per-block counter; the memory "
             "hook hands each block its data addresses. No trace is stored. This is exact: the "
             "state carried across blocks (register ready cycles, issue group, divider, branch "
             "table, cache tags) is the whole state of the full-trace model, and "
             "`tests/test_rv64.py` asserts equal cycles, mispredicts and cache counts against the "
             "pure-Python reference over the stored full trace. Blocks are costed from a memo "
             "keyed by their entry state relative to the issue cycle; the numbers are identical "
             "with it on and off (`tests/test_rv64_memo.py`). The two builds of an estimate run "
             "in two threads; the scaling rows (n above the random sizes) run one subprocess "
             "each, which is where `peak_rss_mb` comes from.", ""]
    r = df[(df["kind"] == "random") & (df["n"] >= 1024)]
    if r.empty:
        return lines + ["No random rows with n >= 1024.", ""]
    lines += ["Wall seconds per estimate (random problems):", "",
              _pivot_table(r, "seconds", cores, _seconds), "",
              "CPU seconds per estimate (both threads):", "",
              _pivot_table(r, "cpu_seconds", cores, _seconds), ""]
    if _has(r, "peak_rss_mb"):
        pr = r[r["peak_rss_mb"].notna()]
        lines += ["Peak resident memory per estimate (MB, subprocess rows only):", "",
                  _pivot_table(pr, "peak_rss_mb", cores, lambda v: _fix(v, 0)), ""]
    verdict_rows, src = df[(df["kind"] == "random") & (df["n"] == TARGET_N)], sources["csv"]
    if quiet is not None:
        q = quiet[(quiet["kind"] == "random") & (quiet["n"] == TARGET_N)]
        m = q.merge(verdict_rows, on=["workload", "planner"], suffixes=("", "_main"))
        same = int((m["rv64_cycles_u74"] == m["rv64_cycles_u74_main"]).sum())
        lines.append(f"`{sources['quiet']}`: a separate run of the N = {TARGET_N} rows meant for "
                     "a machine with nothing else running; the CSV does not record the load, so "
                     "its wall seconds are only as good as the quiet that run had. Its U74 cycle "
                     f"counts equal this CSV's on {same} of {len(q)} rows.")
        lines.append("")
        if len(q) and same == len(q):
            verdict_rows, src = q, sources["quiet"]
        else:
            lines += ["Its cycle counts differ from this run's (older code), so the verdict "
                      f"below uses `{sources['csv']}` instead.", ""]
    if verdict_rows.empty:
        return lines + [f"No random row with n = {TARGET_N}: no verdict.", ""]
    lines += _n_verdicts(verdict_rows, cores, src)
    if not (quiet is not None and src == sources["quiet"]):
        lines += ["These wall seconds were measured while the benchmark ran; on a shared "
                  "machine they include the load.", ""]
    return lines


def _rvsim(df, cores) -> list[str]:
    if not _has(df, "rvsim_cycles_u74"):
        return ["## rvsim cross-check", "", "No rvsim columns in the CSV (rvsim not installed or "
                "`--rvsim-max-n -1`).", ""]
    r = df[df["rvsim_cycles_u74"].notna()].copy()
    r["u74"] = r["rvsim_cycles_u74"] / r["rv64_cycles_u74"]
    has_c906 = _has(r, "rvsim_cycles_c906") and "rv64_cycles_c906" in r.columns
    if has_c906:
        r["c906"] = r["rvsim_cycles_c906"] / r["rv64_cycles_c906"]
    models = ["u74"] + (["c906"] if has_c906 else [])
    g = r.groupby("planner", sort=False)[models].agg(["min", "max"])
    rows = [[f"`{c}`"] + [f"{g.at[c, (m, 'min')]:.2f} to {g.at[c, (m, 'max')]:.2f}"
                          for m in models] for c in cores if c in g.index]
    rng = "; ".join(f"{m.upper()}: {r[m].min():.2f}x to {r[m].max():.2f}x" for m in models)
    return ["## rvsim cross-check", "",
            f"rvsim cycles / this model's cycles on the {len(r)} rows rvsim ran "
            f"(n <= {int(r['n'].max())}): {rng}.", "",
            _table(["core"] + [f"rvsim / model, {m.upper()}" for m in models], rows,
                   [False] + [True] * len(models)), "",
            "rvsim's in-order back end is configured with our issue width, multiply and divide "
            "latencies, an L1D latency and gshare; it stacks its own memory stages on the cache "
            "latency and has no U74 forwarding network or pipe pairing, so it is a second opinion "
            "on growth, not a reference; llvm-mca is the reference for the pipeline.", ""]


def rv64_report_markdown(df: pd.DataFrame, mca: pd.DataFrame | None = None,
                         quiet: pd.DataFrame | None = None, run_seconds: float | None = None,
                         sources: dict | None = None, figures: Sequence[str | Path] = ()) -> str:
    """The Markdown text of the report (see the module docstring) from the benchmark's frames:
    ``df`` (``bench_rv64.csv``), ``mca`` (``bench_rv64_mca.csv`` or ``None``), ``quiet`` (the
    N = 8192 quiet-run CSV or ``None``); ``run_seconds`` is the benchmark's wall time in seconds
    (``None``: not recorded); ``sources`` names the files (keys ``csv``, ``mca``, ``quiet``);
    ``figures`` are listed as outputs. Deterministic: same frames, same text."""
    sources = {"csv": "results/bench_rv64.csv", "mca": "results/bench_rv64_mca.csv",
               "quiet": "results/bench_rv64_n8192_quiet.csv", **(sources or {})}
    cores = _cores(df)
    parts = (_head(df, mca, quiet, run_seconds, sources, figures) + _exact(df, mca)
             + _caches(df, cores) + _tree(df, cores) + _networks(df, cores)
             + _sizes(df, cores) + _cost(df, quiet, cores, sources) + _rvsim(df, cores))
    return "\n".join(parts).rstrip("\n") + "\n"


def write_rv64_report(csv_path, mca_path, out_md, quiet_path=None, run_seconds=None,
                      figures: Sequence[str | Path] = ()) -> Path:
    """Write the Markdown report of the RV64 benchmark to ``out_md`` and return its path.

    ``csv_path``: ``bench_rv64.csv``; ``mca_path``: ``bench_rv64_mca.csv`` (``None`` or a missing
    file: the llvm-mca section says it is absent); ``quiet_path``: optional CSV of a quiet
    N = 8192 run (same columns), used for the N = 8192 time verdict when its U74 cycle counts
    equal the main CSV's; ``run_seconds``: wall seconds of the benchmark run (``None``: not
    recorded); ``figures``: paths listed as outputs. Cycles are core-model cycles, sizes bytes,
    seconds host seconds, memory MB (2^20 bytes).

    Raises ``FileNotFoundError`` when ``csv_path`` (or a given ``quiet_path``) does not exist and
    ``ValueError`` when a CSV lacks a needed column. The file is written atomically (temporary
    file, then rename).
    """
    csv_path, out_md = Path(csv_path), Path(out_md)
    df = _read(csv_path, REQUIRED, "bench_rv64")
    mca = None
    if mca_path is not None and Path(mca_path).is_file():
        mca = _read(Path(mca_path), MCA_REQUIRED, "bench_rv64_mca")
    quiet = None
    if quiet_path is not None:
        quiet = _read(Path(quiet_path), REQUIRED, "bench_rv64 quiet run")
    sources = {"csv": str(csv_path), "mca": str(mca_path), "quiet": str(quiet_path)}
    text = rv64_report_markdown(df, mca, quiet, run_seconds, sources,
                                [str(f) for f in figures])
    from planners.io import atomic_write

    atomic_write(out_md, text, make_parents=True)
    return out_md


def main(argv=None) -> int:
    """Command line: regenerate the report from the stored CSVs (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default="results/bench_rv64.csv")
    ap.add_argument("--mca", default="results/bench_rv64_mca.csv")
    ap.add_argument("--quiet", default="results/bench_rv64_n8192_quiet.csv",
                    help="quiet N = 8192 run ('' for none; skipped when the file is missing)")
    ap.add_argument("--out", default="results/bench_rv64.md")
    ap.add_argument("--run-seconds", type=float, default=None,
                    help="wall seconds of the benchmark run, when known")
    ap.add_argument("--figures", default="results/figures/rv64_cycles_vs_buffers.png,"
                    "results/figures/rv64_cycles_caches.png",
                    help="comma-separated figure files to list (missing ones are left out)")
    args = ap.parse_args(argv)
    quiet = args.quiet if args.quiet and Path(args.quiet).is_file() else None
    figs = [f for f in args.figures.split(",") if f and Path(f).is_file()]
    try:
        out = write_rv64_report(args.csv, args.mca, args.out, quiet, args.run_seconds, figs)
    except (FileNotFoundError, ValueError) as e:
        print(f"report.rv64: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
