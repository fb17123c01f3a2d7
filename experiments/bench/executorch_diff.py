"""Differential test of ``memplan check PROGRAM.pte`` against ExecuTorch's own storage rules.

Each case (:func:`run_case`) is a generated model (:func:`random_model`: a multi-head attention
block whose LayerNorm output is viewed for a Linear and read again by a residual add, an LSTM or
a GRU, sizes drawn from the case's seed), exported through ``torch.export`` -> ``to_edge`` ->
``to_executorch`` with ExecuTorch's default planner (``greedy``) or memplan's
(``greedy_by_size`` through :class:`experiments.runtimes.executorch.MemplanAlgorithm`), in one
arena or two (the result of every ``add`` in ``mem_id`` 2, a custom-pool pass), and, in about
half the cases, **corrupted**: after planning, one tensor is moved onto the offset of another
tensor live at the same time, as a wrong planner would place it (:class:`Corrupting`).

The oracle is ExecuTorch's own reasoning on the planned graph, which knows every view and
``storage_base`` relation the ``.pte`` no longer spells out: the pairs of planned tensor specs
that ``Verifier.storage_overlap`` and ``Verifier.lifetime_overlap`` find overlapping and that
are not storage-backed by one another (``Verifier._storage_root_chain``), exactly the pairs
``Verifier.verify_storage_reuse`` refuses (:func:`executorch_conflicts`). A case agrees when
``memplan check`` calls the ``.pte`` valid exactly when the oracle finds no conflict; an
uncorrupted program must also run in ``executorch.runtime`` with outputs equal to those of the
default plan of the same model.

``python -m experiments.bench.executorch_diff --count 60 --seed 0 [--out CSV]`` runs cases
``seed .. seed + count - 1`` (one line each, a CSV of them with ``--out``) and exits 1 when any
disagrees (``make soak``); the tests run a few.
Needs the extra ``[executorch]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "random_model", "reread_models", "Corrupting", "executorch_conflicts", "run_case", "main"]

#: Model families of :func:`random_model`.
KINDS = ("mha", "lstm", "gru")


def _mha_block(width: int, d: int, heads: int):
    """``Linear(width, d)`` -> ``nn.MultiheadAttention(d, heads)`` -> ``LayerNorm(x + a)``,
    then ``x + FF(x)`` (the LayerNorm output, viewed as 2-D by the feed-forward ``Linear``, is
    read again by the residual add: an elided static view whose base is read later). Its
    parameters are created in that order, so a seed set before the call fixes the weights."""
    from torch import nn

    class Mha(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(width, d)
            self.mha = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ln = nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))

        def forward(self, x):
            x = self.inp(x)
            a, _ = self.mha(x, x, x, need_weights=False)
            x = self.ln(x + a)
            return x + self.ff(x)

    return Mha()


def random_model(kind: str, seed: int) -> tuple[Any, tuple]:
    """A small PyTorch model of family ``kind`` (:data:`KINDS`) in eval mode and its example
    inputs, sizes, weights and inputs drawn from ``seed``.

    ``mha``: ``Linear`` -> ``nn.MultiheadAttention`` -> ``LayerNorm(x + a)`` whose output is
    viewed as 2-D by the next ``Linear`` and read again by the residual add (the program
    ExecuTorch emits with an elided static view whose base is read later); ``lstm`` /
    ``gru``: ``nn.LSTM`` / ``nn.GRU`` (1-2 layers) followed by a ``Linear`` and a residual add
    on a slice of the sequence output. Raises ``ValueError`` for an unknown ``kind``."""
    import torch
    from torch import nn

    rng = random.Random(seed)
    if kind == "mha":
        heads = rng.choice([1, 2, 4])
        d = heads * rng.choice([4, 8, 16])
        tokens, width = rng.randint(3, 24), rng.randint(4, 16)
        cls, shape = (lambda: _mha_block(width, d, heads)), (1, tokens, width)
    elif kind in ("lstm", "gru"):
        width, hidden = rng.randint(2, 16), rng.randint(4, 32)
        layers, steps = rng.randint(1, 2), rng.randint(2, 6)
        k = rng.randint(1, hidden)
        rnn_cls = nn.LSTM if kind == "lstm" else nn.GRU

        class Rnn(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = rnn_cls(width, hidden, num_layers=layers, batch_first=True)
                self.out = nn.Linear(hidden, k)

            def forward(self, x):
                y, _ = self.rnn(x)
                return self.out(y) + y[..., :k]

        cls, shape = Rnn, (1, steps, width)
    else:
        raise ValueError(f"unknown model kind {kind!r}; kinds: {list(KINDS)}")
    torch.manual_seed(seed)
    return cls().eval(), (torch.randn(*shape),)


def reread_models() -> dict[str, tuple[Any, tuple]]:
    """Three fixed models whose ExecuTorch programs hold a view whose base is read again later,
    ``{name: (model in eval mode, example inputs)}``: ``mha`` (``/work/shared/cases/
    et_view_reread.py``'s block: ``Linear(16, 64)``, ``nn.MultiheadAttention(64, 4)``, the
    LayerNorm output ``[1, 24, 64]`` viewed as ``[24, 64]`` for the next ``Linear`` and read
    again by the residual add; weights from ``torch.manual_seed(6)``, input ``[1, 24, 16]``),
    ``lstm`` and ``gru`` (``nn.LSTM`` / ``nn.GRU(16, 32)`` over 5 steps, then ``Linear(32, 8)``
    plus the first 8 features; ``torch.manual_seed(0)``)."""
    import torch
    from torch import nn

    class Rnn(nn.Module):
        def __init__(self, cls):
            super().__init__()
            self.rnn, self.out = cls(16, 32, batch_first=True), nn.Linear(32, 8)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.out(y) + y[..., :8]

    torch.manual_seed(6)
    out = {"mha": (_mha_block(16, 64, 4).eval(), (torch.randn(1, 24, 16),))}
    for name, cls in (("lstm", nn.LSTM), ("gru", nn.GRU)):
        torch.manual_seed(0)
        m = Rnn(cls).eval()
        out[name] = (m, (torch.randn(1, 5, 16),))
    return out


@dataclass
class Corrupting:
    """A memory-planning algorithm that plans with ``inner`` and then, when it can, moves one
    planned spec ``X`` onto the offset (and ``mem_id``, ``mem_obj_id``) of another spec ``Y``
    whose lifetime overlaps ``X``'s (ExecuTorch's inclusive ``[first, last]`` node indices), so
    that the two share storage while both are live: a wrong plan. The pair is drawn from
    ``seed`` among specs of non-zero size not storage-backed by one another, with ``X`` no
    larger than ``Y`` (so the arena still holds it), both live across an emitted operator that
    names neither of them nor a view of them. (An overlap only between the arguments of one
    instruction is left out: in a ``.pte`` it reads as an in-place write, which ExecuTorch's
    in-place results are, :func:`experiments.runtimes.executorch.storage_aliases`.) ``moved``
    records ``(X, Y)`` or stays ``None`` when no pair exists."""

    inner: Any
    seed: int = 0
    moved: tuple | None = field(default=None)

    @property
    def __name__(self) -> str:
        return f"corrupting_{getattr(self.inner, '__name__', 'algo')}"

    def __call__(self, alignment, specs, graph_module, graph_signature, extra_padding=0):
        from executorch.exir.memory_planning import Verifier

        result = self.inner(alignment, specs, graph_module, graph_signature, extra_padding)
        uses, ops = _spec_uses(graph_module, graph_signature)
        items = sorted(result.spec_dict.items(), key=lambda kv: (kv[1].mem_offset, id(kv[0])))
        items = [(s, r) for s, r in items if s.allocated_memory > 0
                 and None not in (s.lifetime[0], s.lifetime[1])]
        pairs = []
        for x, rx in items:
            for y, ry in items:
                if x is y or x.allocated_memory > y.allocated_memory:
                    continue
                if rx.mem_id == ry.mem_id and rx.mem_offset == ry.mem_offset:
                    continue
                if not Verifier.has_overlap(x.lifetime, y.lifetime):
                    continue
                if x in Verifier._storage_root_chain(y) or y in Verifier._storage_root_chain(x):
                    continue
                if x.storage_base is not None or y.storage_base is not None:
                    continue
                lo = max(x.lifetime[0], y.lifetime[0])
                hi = min(x.lifetime[1], y.lifetime[1])
                named = uses.get(id(x), set()) | uses.get(id(y), set())
                if not any(lo <= i <= hi and i not in named for i in ops):
                    continue
                pairs.append((x, y))
        if pairs:
            x, y = random.Random(self.seed).choice(sorted(
                pairs, key=lambda p: (result.spec_dict[p[0]].mem_offset,
                                      result.spec_dict[p[1]].mem_offset, p[0].lifetime[0],
                                      p[1].lifetime[0], p[0].allocated_memory)))
            rx, ry = result.spec_dict[x], result.spec_dict[y]
            rx.mem_id, rx.mem_offset, rx.mem_obj_id = ry.mem_id, ry.mem_offset, ry.mem_obj_id
            self.moved = (x, y)
        return result


def _spec_uses(graph_module, graph_signature) -> tuple[dict, list[int]]:
    """``({id(base spec): node indices naming it or a view of it}, emitted operator node
    indices)`` of the top graph, indices as ``update_all_tensors_lifetime`` counts them."""
    import operator

    from executorch.exir import memory
    from executorch.exir.memory_planning import collect_specs_from_nodes, filter_nodes

    def base(spec):
        while type(spec).__name__ == "_ViewSpec":
            spec = object.__getattribute__(spec, "_base")
        return spec

    uses: dict[int, set[int]] = {}
    ops = []
    for i, node in enumerate(graph_module.graph.nodes):
        if node.op == "call_function" and node.target not in (memory.alloc, memory.view,
                                                               operator.getitem):
            ops.append(i)
        for spec in collect_specs_from_nodes(
                filter_nodes([node, *node.args, *node.kwargs.values()]), graph_signature,
                ignore_graph_input=False, ignore_const=False, ignore_out_var_node=False,
                dedup=False, do_assertion=False, ignore_dynamic_unbound_tensor=False):
            uses.setdefault(id(base(spec)), set()).add(i)
    return uses, ops


def executorch_conflicts(manager) -> int:
    """How many pairs of planned tensor specs of an ``ExecutorchProgramManager``'s planned
    graph ExecuTorch's ``Verifier.verify_storage_reuse`` refuses: overlapping storage
    (``Verifier.storage_overlap``: one ``mem_id``, ``[mem_offset, mem_offset +
    allocated_memory)`` ranges intersecting) and overlapping lifetimes
    (``Verifier.lifetime_overlap``) without one being storage-backed by the other
    (``Verifier._storage_root_chain``). Graph inputs, outputs and mutable buffers included, as
    the default ``MemoryPlanningPass`` plans them. ExecuTorch's rules, on ExecuTorch's graph: no
    memplan code."""
    from executorch.exir.memory_planning import Verifier, collect_specs_from_nodes

    ep = manager.exported_program()
    specs = list(collect_specs_from_nodes(
        ep.graph_module.graph.nodes, ep.graph_signature, ignore_const=True,
        ignore_graph_input=False, ignore_graph_output=False, ignore_mutable_buffers=False,
        do_assertion=False, ignore_out_var_node=False, dedup=True))
    n = 0
    for i, a in enumerate(specs):
        for b in specs[i + 1:]:
            if not Verifier.storage_overlap(a, b) or not Verifier.lifetime_overlap(a, b):
                continue
            if a in Verifier._storage_root_chain(b) or b in Verifier._storage_root_chain(a):
                continue
            n += 1
    return n


def _is_add(node) -> bool:
    return "aten.add" in str(node.target)


def run_case(seed: int, kind: str | None = None, planner: str | None = None,
             arenas: int | None = None, corrupt: bool | None = None,
             workdir: str | Path | None = None) -> dict:
    """Run one differential case (module docstring); each choice left ``None`` is drawn from
    ``seed``.

    Parameters
    ----------
    seed : int
    kind : {"mha", "lstm", "gru"}, optional
    planner : {"executorch", "memplan"}, optional
        ExecuTorch's default suite (``greedy``) or memplan's ``greedy_by_size``.
    arenas : {1, 2}, optional
        2: every ``add`` result in ``mem_id`` 2.
    corrupt : bool, optional
        Plan through :class:`Corrupting`.
    workdir : path, optional
        Where the ``.pte`` is written (default: a temporary directory).

    Returns
    -------
    dict
        ``seed, kind, planner, arenas, corrupt, moved`` (a pair was moved), ``conflicts``
        (:func:`executorch_conflicts`), ``valid`` (``memplan check``'s verdict),
        ``violations`` (its count), ``mem_ids`` (arenas with planned tensors),
        ``same_outputs`` (uncorrupted: outputs equal to the default plan's; ``None`` when
        corrupted), ``agree`` (``valid == (conflicts == 0)`` and, uncorrupted, equal outputs),
        ``seconds``.
    """
    import torch
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy

    from experiments.cli.check import pte_check_report
    from experiments.runtimes import executorch as et

    t0 = time.perf_counter()
    rng = random.Random(seed * 7919 + 17)
    kind = kind or rng.choice(KINDS)
    planner = planner or rng.choice(["executorch", "memplan"])
    arenas = arenas or rng.choice([1, 2])
    corrupt = rng.random() < 0.5 if corrupt is None else corrupt
    model, inputs = random_model(kind, seed)
    inner = greedy if planner == "executorch" else et.MemplanAlgorithm("greedy_by_size")
    algo = Corrupting(inner, seed) if corrupt else inner
    mp = et.planning_pass(MemoryPlanningAlgorithmSuite(algo_list=[algo]),
                          mem_id_of=(lambda n: 2 if _is_add(n) else None) if arenas == 2
                          else None)
    manager = et.write(model, inputs, mp)
    conflicts = executorch_conflicts(manager)
    out_dir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="etdiff"))
    pte = out_dir / f"case{seed}.pte"
    pte.write_bytes(manager.buffer)
    rep = pte_check_report(pte)
    same = None
    if not corrupt:
        ref = et.run(et.write(model, inputs).buffer, list(inputs))
        got = et.run(manager.buffer, list(inputs))
        same = len(ref) == len(got) and all(torch.equal(a, b) for a, b in zip(ref, got,
                                                                                strict=True))
    mem_ids = sorted({t.mem_id for t in et.pte_tensors(manager.buffer)})
    agree = rep["valid"] == (conflicts == 0) and same is not False
    return {"seed": seed, "kind": kind, "planner": planner, "arenas": arenas,
            "corrupt": corrupt, "moved": bool(corrupt and algo.moved), "conflicts": conflicts,
            "valid": rep["valid"], "violations": len(rep["violations"]), "mem_ids": mem_ids,
            "same_outputs": same, "agree": agree,
            "seconds": round(time.perf_counter() - t0, 3)}


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring): one line per case, a summary line; exit 0 when every
    case agrees, 1 otherwise, 2 without the extra."""
    ap = argparse.ArgumentParser(prog="python -m experiments.bench.executorch_diff",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=60, help="cases to run (default 60)")
    ap.add_argument("--seed", type=int, default=0, help="first case's seed (default 0)")
    ap.add_argument("--out", type=Path, help="CSV of the cases (one row each, run_case's keys)")
    a = ap.parse_args(argv)
    from experiments.runtimes import RuntimeMissing, require

    try:
        require("torch", "executorch.exir", "executorch.runtime", extra="executorch")
    except RuntimeMissing as e:
        print(f"executorch_diff: error: {e}", file=sys.stderr)
        return 2
    bad = flagged = corrupted = 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="etdiff") as tmp:
        for seed in range(a.seed, a.seed + a.count):
            r = run_case(seed, workdir=tmp)
            rows.append(r)
            bad += not r["agree"]
            corrupted += r["corrupt"]
            flagged += not r["valid"]
            print(f"case {seed:4d} {r['kind']:4s} {r['planner']:10s} arenas={r['arenas']} "
                  f"corrupt={r['corrupt']!s:5s} conflicts={r['conflicts']} valid={r['valid']!s:5s}"
                  f" same={r['same_outputs']} {'ok' if r['agree'] else 'DISAGREE'} "
                  f"{r['seconds']:.1f} s", flush=True)
    if a.out is not None:
        import csv

        a.out.parent.mkdir(parents=True, exist_ok=True)
        with a.out.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["seed"])
            w.writeheader()
            w.writerows(rows)
    print(f"executorch_diff: {a.count} cases ({corrupted} corrupted, {flagged} flagged): "
          f"{bad} disagree with ExecuTorch")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
