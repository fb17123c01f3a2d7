"""Joint order-and-layout benchmark: (file order, best planner), (best scheduler, best planner)
and the joint optimiser (:mod:`scheduling.joint`), each with its arena and the proved bound.

Workloads: the nine ONNX light models and the four TFLite Micro wake-word models the toolkit
bundles (:mod:`experiments.workloads`; each with its kind's lifetime policy, TFLite: graph input
in the arena, 16-byte alignment), generated branchy graphs (``randwire`` of 33 and 101
operators, a NAS-like cell stack, a U-Net), a transformer, and MOCCASIN-shaped random layered
graphs (:func:`scheduling.generators.moccasin_layered`) of 50, 100, 250, 500 and 1,000 operators.

Per workload, three rows (``pair``):

* ``file_order``: the stored order planned by the best of ``telamalloc`` and ``choose_best``;
* ``best_sequential``: the best of every registered scheduler's order (``exact_dp`` with
  :data:`EXACT_DP_SECONDS`, ``cpsat_schedule``/``anneal``/``genetic`` with short limits) planned
  by the same planners -- the pair the joint optimiser starts from;
* ``joint``: :func:`scheduling.joint.joint_optimize` from that pair, :func:`joint_seconds` its
  outer stop and nominal budget (``seconds`` is the joint search alone; the starting pair's
  time is in its own row).

Columns: ``workload, family, ops, pair, scheduler, planner, arena_bytes, peak_bytes, bound_bytes,
gap`` (``arena / bound - 1``), ``status`` (``optimal`` iff ``arena <= bound``), ``seconds``,
``order_status`` (the best order's status under the one rule of
:func:`scheduling.schedulers.base.decide_status`: ``optimal`` iff its peak equals the order
bound), ``exact_dp_status`` and ``exact_dp_seconds`` (``exact_dp``'s own status and wall-clock
seconds in the starting search: ``optimal`` when it proved its order optimal, returning at
once), ``trace`` (joint rows: ``seconds:arena`` each time the arena fell), ``stopped_by``
(joint rows: ``deterministic_time``, ``bound`` or ``time_limit`` when the wall clock cut the
search, whose result may then depend on the load; :func:`scheduling.joint.joint_optimize`'s
default work budget, ``DETERMINISTIC_TIME_PER_SECOND`` x the seconds). ``bound_bytes`` is
the order bound (plus resident bytes; the joint rows: the larger of it and CP-SAT's layout bound).

Goals (stated by issue #25): (1) the proved optimum of the order problem on every graph up to 250
operators within 60 s; (2) at 1,000 operators an order whose gap to the lower bound is reported and
shrinking with time. :func:`goals` states for each whether this run met it (the README quotes it).

Run: ``python -m experiments.bench.joint --out results`` (``make bench-joint``, about 8 min on
the shared 2-core machine). Deterministic except the seconds and what the wall clock cut.

Determinism under load (issue #34): ``python -m experiments.bench.joint --determinism N``
(:func:`determinism`) runs :func:`scheduling.joint.joint_optimize` on ``N`` generated graphs
twice, on the machine as it is and with both cores loaded by two CPU-burner processes, and
counts the cases whose order, offsets or arena differ (exit status 1 if any) and those the
clock stopped (``cut_by_clock``, reported, not counted as a difference).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from experiments.records import write_csv
from experiments.workloads import KIND_LIFETIME_POLICY

__all__ = ["EXACT_DP_SECONDS", "PLANNERS", "workloads", "joint_seconds", "run", "goals",
           "draw_figure", "determinism_cases", "determinism", "main"]

#: The planners of every pair (the best arena of the two per order).
PLANNERS = ("telamalloc", "choose_best")
#: ``exact_dp``'s time limit in the starting search (seconds): the order-problem goal's test.
EXACT_DP_SECONDS = 60.0
#: Other time-limited schedulers of the starting search (seconds).
OTHER_LIMITS = {"cpsat_schedule": 3.0, "anneal": 2.0, "genetic": 2.0}


def workloads() -> dict[str, tuple[str, str, object]]:
    """``name -> (family, kind, builder)``; ``kind`` selects the lifetime policy
    (:data:`experiments.workloads.KIND_LIFETIME_POLICY`)."""
    from experiments.workloads import tflite_model_files
    from scheduling.generators import generate, moccasin_layered
    from scheduling.onnx_import import load_onnx
    from scheduling.tflite_import import load_tflite
    from scheduling.workloads import onnx_light_models

    out: dict[str, tuple[str, str, object]] = {}
    for name, path in onnx_light_models().items():
        out[name] = ("onnx", "onnx", lambda p=path: load_onnx(p))
    for name, path in tflite_model_files().items():
        out[name] = ("tflite", "tflite", lambda p=path: load_tflite(p).graph)
    gen = "generator"
    out["randwire32"] = ("branchy", gen, lambda: generate("randwire", seed=1))
    out["randwire100"] = ("branchy", gen, lambda: generate("randwire", seed=0, n_nodes=100, k=4,
                                                          p=0.75))
    out["nas_cell_5x5"] = ("branchy", gen, lambda: generate("nas_cell", seed=0, n_cells=5,
                                                           nodes_per_cell=5))
    out["unet_d5"] = ("branchy", gen, lambda: generate("unet", seed=0, depth=5))
    out["transformer_4x4"] = ("transformer", gen, lambda: generate("transformer", seed=0,
                                                                   n_blocks=4, heads=4))
    for n in (50, 100, 250, 500, 1000):
        out[f"moccasin{n}"] = ("node-link", gen, lambda n=n: moccasin_layered(seed=0, n_ops=n))
    return out


def joint_seconds(ops: int) -> float:
    """Seconds of the joint search, its wall-clock outer stop and the nominal budget of its
    work (:func:`scheduling.joint.joint_optimize`'s default ``deterministic_time``): 30 up to
    500 operators, 180 beyond (it stops earlier when the arena reaches the bound)."""
    return 30.0 if ops <= 500 else 180.0


def run(names: list[str] | None = None, log=print) -> pd.DataFrame:
    """Run the benchmark (module docstring) on ``names`` (default: all); one row per pair."""
    from scheduling.joint import joint_optimize, sequential_pairs
    from scheduling.schedulers.base import cached_order_bound, decide_status
    from scheduling.schedulers.registry import SCHEDULERS

    # every scheduler, cpsat_schedule (a wall-clock budget only) included: the pairs of this
    # benchmark are its own measurement (exact_dp at its goal's 60 s), the joint search starts
    # from the best and is budgeted by work (its rows' stopped_by says whether the clock bit)
    scheds = [s for s in SCHEDULERS if s not in ("best_of", "joint")]

    rows = []
    wl = workloads()
    for name in names or list(wl):
        family, kind, build = wl[name]
        graph = build()
        policy = KIND_LIFETIME_POLICY[kind]
        n = len(graph)
        t0 = time.perf_counter()
        sp = {"exact_dp": {"time_limit": EXACT_DP_SECONDS}, **{
            k: {"time_limit": v} for k, v in OTHER_LIMITS.items()}}
        runs: dict = {}
        pairs = sequential_pairs(graph, scheds, PLANNERS, time_limit=6.0, top=2,
                                 scheduler_params=sp, runs=runs, **policy)
        dp = runs.get("exact_dp", {})
        t_seq = time.perf_counter() - t0
        bound = max(int(cached_order_bound(graph)), pairs[0]["order_bound"])
        best_peak = min(p["peak"] for p in pairs)
        # the order status under the toolkit's convention (activations only, inputs not counted)
        from scheduling.lifetimes import peak_live_bytes

        best_order_peak = min(peak_live_bytes(graph, p["order"]) for p in pairs)
        order_status = decide_status("heuristic", best_order_peak, bound)
        fo = next(p for p in pairs if p["scheduler"] == "file_order")
        best = pairs[0]
        base = {"workload": name, "family": family, "ops": n, "order_status": order_status,
                "exact_dp_status": dp.get("status", ""),
                "exact_dp_seconds": dp.get("seconds", float("nan")), "trace": "",
                "stopped_by": ""}
        for label, p, secs in (("file_order", fo, float("nan")),
                               ("best_sequential", best, t_seq)):
            rows.append({**base, "pair": label, "scheduler": p["scheduler"],
                         "planner": p["planner"], "arena_bytes": p["arena"],
                         "peak_bytes": p["peak"], "bound_bytes": bound,
                         "status": "optimal" if p["arena"] <= bound else "feasible",
                         "seconds": secs})
        start = {**best, "file_order_arena": fo["arena"]}
        r = joint_optimize(graph, time_limit=joint_seconds(n), start=start, seed=0, workers=1,
                           **policy)
        assert r.arena <= best["arena"], name
        rows.append({**base, "pair": "joint", "scheduler": "joint", "planner": "joint",
                     "arena_bytes": r.arena, "peak_bytes": r.schedule.info["peak_bytes"],
                     "bound_bytes": r.bound, "status": r.status, "seconds": r.seconds,
                     "trace": " ".join(f"{s}:{a}" for s, a in r.info["trace"]),
                     "stopped_by": r.info["stopped_by"]})
        log(f"{name} ({n} ops): file {fo['arena']} best {best['arena']} ({best['scheduler']}) "
            f"joint {r.arena} bound {r.bound} [{r.info['mode']}, {r.info['iterations']} it] "
            f"order {order_status} ({best_peak}); {time.perf_counter() - t0:.0f} s")
    df = pd.DataFrame(rows)
    df["gap"] = df.arena_bytes / df.bound_bytes - 1
    return df


def goals(df: pd.DataFrame) -> list[str]:
    """One line per goal of issue #25, saying whether ``df`` (rows of :func:`run`) met it."""
    seq = df[df.pair == "best_sequential"]
    small = seq[seq.ops <= 250]
    unproved = small[small.order_status != "optimal"].workload.tolist()
    by_dp = small[small.exact_dp_status == "optimal"]
    slowest = (f"; exact_dp's proofs took at most {by_dp.exact_dp_seconds.max():.1f} s "
               f"({by_dp.loc[by_dp.exact_dp_seconds.idxmax(), 'workload']})" if len(by_dp) else "")
    g1 = (f"order optimum proved on every graph <= 250 operators: "
          f"{'met' if not unproved else 'NOT met'} ({len(small) - len(unproved)}/{len(small)} "
          f"proved (order bound, or exact_dp's optimum within {EXACT_DP_SECONDS:.0f} s)"
          + slowest + (f"; unproved: {', '.join(unproved)})" if unproved else ")"))
    big = df[(df.pair == "joint") & (df.ops >= 1000)]
    parts = []
    for _, r in big.iterrows():
        tr = [tuple(map(float, x.split(":"))) for x in str(r.trace).split()]
        gaps = [f"{a / r.bound_bytes - 1:.1%} at {s:.0f} s" for s, a in tr]
        parts.append(f"{r.workload}: gap {', '.join(gaps)}")
    shrinking = all(len(str(r.trace).split()) > 1 for _, r in big.iterrows())
    g2 = (f"1,000 operators, gap reported and shrinking with time: "
          f"{'met' if shrinking and len(big) else 'NOT met'} ({'; '.join(parts) or 'no graph'})")
    return [g1, g2]


def draw_figure(df: pd.DataFrame, out: Path) -> list[Path]:
    """``figures/bench_joint.{png,pdf}``: arena / bound per workload for the three pairs (left),
    the joint search's gap over time on the largest graph (right)."""
    import matplotlib.pyplot as plt

    from experiments.plots import distinct_styles, save, style

    pairs = ["file_order", "best_sequential", "joint"]
    wls = list(dict.fromkeys(df.workload))
    with style():
        # one row per workload (names read horizontally at any count; rotated x tick labels
        # of 23 workloads overlapped at column width)
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(7.16, 1.2 + 0.17 * len(wls)),
                                      layout="constrained", gridspec_kw={"width_ratios": [3, 2]})
        for i, (p, (c, m)) in enumerate(zip(pairs, distinct_styles(len(pairs)))):
            d = df[df.pair == p].set_index("workload").reindex(wls)
            ax.plot(d.arena_bytes / d.bound_bytes, range(len(wls)), m, color=c, label=p,
                    markersize=5 + 2 * (2 - i), linestyle="none", zorder=3 + i)
        ax.set_yticks(range(len(wls)))
        # the registry prefix ("wakeword:") dropped: the names after it are unique and short
        ax.set_yticklabels([w.split(":")[-1] for w in wls], fontsize=7)
        ax.set_ylim(len(wls) - 0.5, -0.5)
        ax.margins(x=0.08)
        ax.axvline(1.0, color="0.5", lw=0.8, zorder=1)
        ax.set_xlabel("arena / proved lower bound")
        ax.set_title("Order and layout: sequential pairs vs joint")
        ax.legend(fontsize=8, loc="lower right")
        big = df[df.pair == "joint"].sort_values("ops").iloc[-1]
        tr = [tuple(map(float, x.split(":"))) for x in str(big.trace).split()]
        if tr:
            xs = [s for s, _ in tr] + [big.seconds]
            ys = [a / big.bound_bytes - 1 for _, a in tr] + [tr[-1][1] / big.bound_bytes - 1]
            ax2.step(xs, [100 * y for y in ys], where="post")
        ax2.set_xlabel("seconds of joint search")
        ax2.set_ylabel("gap to bound (%)")
        ax2.set_title(f"{big.workload}\n({big.ops} ops)", fontsize=9)
        return save(fig, out / "figures" / "bench_joint")


def determinism_cases(count: int, seed: int = 0) -> list[tuple[str, object, dict]]:
    """``count`` generated inputs of :func:`determinism`: ``(name, graph, joint_optimize
    keywords)``, drawn by ``random.Random(seed)``: a MOCCASIN-shaped layered graph
    (:func:`scheduling.generators.moccasin_layered`, 20-40 operators) or a ``randwire`` graph
    (16-30 nodes), planner ``greedy_by_size`` or ``telamalloc``, alignment 1 or 16, every default
    starting scheduler, ``exact_max_ops=8`` (the anytime search), CP-SAT seed 0-99."""
    import random

    from scheduling.generators import generate, moccasin_layered

    rng = random.Random(seed)
    out = []
    for i in range(count):
        gs = rng.randrange(10**6)
        if rng.random() < 0.5:
            n = rng.randint(20, 40)
            name, g = f"moccasin{n}_s{gs}", moccasin_layered(seed=gs, n_ops=n)
        else:
            n = rng.randint(16, 30)
            name, g = f"randwire{n}_s{gs}", generate("randwire", seed=gs, n_nodes=n)
        kw = {"planner": rng.choice(["greedy_by_size", "telamalloc"]),
              "alignment": rng.choice([1, 16]), "exact_max_ops": 8, "seed": rng.randrange(100)}
        out.append((f"{i}:{name}", g, kw))
    return out


def determinism(count: int, seed: int = 0, *, time_limit: float = 60.0,
                deterministic_time: float | None = 0.3, log=print) -> dict:
    """Run each case of :func:`determinism_cases` twice, first on the machine as it is, then
    with both cores loaded by two ``python -c "while True: pass"`` processes (started here,
    killed in a ``finally``), at ``time_limit`` seconds (the outer stop) and
    ``deterministic_time`` units (``None``: the default derived from ``time_limit``).

    Returns ``{"cases", "differ", "clock_cut", "names"}``: how many cases ran, in how many the
    order, the offsets or the arena differ between the two runs while neither says the clock
    stopped it, in how many a run says ``cut_by_clock`` (not a difference: reported), and the
    names of the differing cases. Raises what :func:`scheduling.joint.joint_optimize` raises."""
    import os
    import subprocess
    import sys

    from scheduling.joint import joint_optimize

    cases = determinism_cases(count, seed)
    kw0 = {"time_limit": time_limit, "deterministic_time": deterministic_time}

    def one(g, kw):
        r = joint_optimize(g, **kw0, **kw)
        return (r.order, tuple(int(o) for o in r.offsets), r.arena,
                bool(getattr(r, "cut_by_clock", False)))

    idle = [one(g, kw) for _, g, kw in cases]
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded = [one(g, kw) for _, g, kw in cases]
        load = os.getloadavg()[0]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    differ, cut = [], 0
    for (name, _, _), a, b in zip(cases, idle, loaded):
        if a[3] or b[3]:
            cut += 1
        elif a[:3] != b[:3]:
            differ.append(name)
        log(f"{name}: arena {a[2]} / {b[2]} (loaded){' clock cut' if a[3] or b[3] else ''}"
            f"{' DIFFER' if name in differ else ''}")
    log(f"{len(cases)} cases, {len(differ)} differ between idle and loaded (load {load:.1f}), "
        f"{cut} stopped by the clock")
    return {"cases": len(cases), "differ": len(differ), "clock_cut": cut, "names": differ}


def main(argv=None) -> int:
    """CLI: ``--out DIR`` (default results), ``--workloads NAME ...`` (default all);
    ``--determinism N`` (with ``--seed``, ``--time-limit``, ``--deterministic-time``, a
    negative value: the default) runs :func:`determinism` instead, exit status 1 when a case
    differs."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results")
    ap.add_argument("--workloads", nargs="*")
    ap.add_argument("--figures-only", action="store_true",
                    help="redraw the figure from OUT/bench_joint.csv")
    ap.add_argument("--determinism", type=int, metavar="N",
                    help="run N generated cases idle and loaded (no CSV)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--deterministic-time", type=float, default=0.3)
    a = ap.parse_args(argv)
    if a.determinism is not None:
        dt = None if a.deterministic_time < 0 else a.deterministic_time
        res = determinism(a.determinism, a.seed, time_limit=a.time_limit, deterministic_time=dt)
        return 1 if res["differ"] else 0
    out = Path(a.out)
    csv = out / "bench_joint.csv"
    if a.figures_only:
        df = pd.read_csv(csv, keep_default_na=False, na_values=[""])
    else:
        t0 = time.perf_counter()
        df = run(a.workloads)
        write_csv(df, csv)
        print(f"wrote {csv} ({len(df)} rows, {time.perf_counter() - t0:.0f} s)")
    for line in goals(df):
        print(line)
    print(json.dumps([str(p) for p in draw_figure(df, out)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
