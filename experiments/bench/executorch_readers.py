"""The light ``.pte`` reader against ExecuTorch's own, on generated programs.

:func:`experiments.runtimes.executorch.read_pte_light` parses the program flatbuffer without
``torch``; ``memplan check`` and ``memplan view`` read a ``.pte`` with it. For each case of
:func:`experiments.bench.executorch_diff.run_case` (a random MHA, LSTM or GRU model planned by
ExecuTorch's ``greedy`` or memplan's, in one or two arenas, half of them with a plan corrupted to
overlap), :func:`compare` reads every method with both readers and lists every difference in the
planned tensors (value index, arena, offset, size, lifetime, the instructions writing it), the
plan (:func:`~experiments.runtimes.executorch.pte_plan`: buffers, offsets, declared arena sizes)
and ``memplan check``'s violations.

``python -m experiments.bench.executorch_readers --count 40 --seed 0`` prints one line per case
and a summary, and exits 1 when any case differs (``make soak``); the tests run a few.
Needs the extra ``[executorch]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

__all__ = ["compare", "main"]


def compare(pte) -> list[str]:
    """Every difference between the two readers' view of the ``.pte`` ``pte`` (bytes or path):
    method names, each method's planned tensors (:func:`~experiments.runtimes.executorch.
    pte_tensors`), its plan (:func:`~experiments.runtimes.executorch.pte_plan`: ids, lifetimes
    in steps, sizes and offsets in bytes, ``info``) and its violations
    (:func:`~experiments.runtimes.executorch.pte_violations`). Empty when they agree."""
    import numpy as np

    from experiments.runtimes import executorch as et

    light, exir = et._program(pte, "light"), et._program(pte, "exir")
    out = []
    names = [str(ep.name) for ep in light.execution_plan]
    if names != [str(ep.name) for ep in exir.execution_plan]:
        return [f"methods {names} != {[str(ep.name) for ep in exir.execution_plan]}"]
    for k, name in enumerate(names):
        ta, tb = et.pte_tensors(light, k), et.pte_tensors(exir, k)
        if ta != tb:
            out.append(f"{name}: planned tensors differ ({len(ta)} / {len(tb)})")
        a, b = et.pte_plan(light, k), et.pte_plan(exir, k)
        pa, pb = a.problem, b.problem
        for what, x, y in [("ids", pa.ids, pb.ids), ("starts", pa.starts, pb.starts),
                           ("ends", pa.ends, pb.ends), ("sizes", pa.sizes, pb.sizes),
                           ("offsets", a.offsets, b.offsets), ("info", a.info, b.info)]:
            if not np.array_equal(np.asarray(x), np.asarray(y)) if what != "info" else x != y:
                out.append(f"{name}: {what} differ")
        va, vb = et.pte_violations(a), et.pte_violations(b)
        if [str(v) for v in va] != [str(v) for v in vb]:
            out.append(f"{name}: violations {len(va)} (light) != {len(vb)} (exir)")
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring); exit 0 when every case agrees, 1 otherwise, 2 without
    the extra."""
    from experiments.runtimes import RuntimeMissing

    ap = argparse.ArgumentParser(prog="python -m experiments.bench.executorch_readers",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    try:
        from experiments.bench.executorch_diff import run_case
    except RuntimeMissing as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bad = 0
    with tempfile.TemporaryDirectory(prefix="etreaders") as tmp:
        for seed in range(a.seed, a.seed + a.count):
            case = run_case(seed, workdir=tmp)
            diffs = compare(Path(tmp) / f"case{seed}.pte")
            bad += bool(diffs)
            print(f"seed {seed} {case['kind']} {case['planner']} arenas={case['arenas']} "
                  f"corrupt={case['corrupt']} valid={case['valid']} "
                  f"violations={case['violations']}: "
                  + ("same" if not diffs else "; ".join(diffs)), flush=True)
    print(f"{a.count} programs, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
