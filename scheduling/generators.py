"""Seeded synthetic dataflow graphs for scheduler studies.

Every generator has the signature ``f(seed=0, **size params) -> Graph`` and is listed in
:data:`GENERATORS`. Tensors are flat ``uint8`` vectors whose length is their size in **bytes**;
one graph input ``x`` (a resident, not an activation) and at least one graph output; operators
carry a ``macs`` estimate (proportional to the bytes they touch) for latency-aware schedulers.
The same arguments always give the same graph (``numpy.random.default_rng(seed)``).

* :func:`random_layered` -- random layered DAG (width, fan-in, skip edges across layers).
* :func:`moccasin_layered` -- random layered graphs shaped like MOCCASIN's published ones (one
  source, one sink, layers of random width, edge density, skip edges).
* :func:`randwire` -- a randomly wired network (Xie et al., "Exploring Randomly Wired Neural
  Networks", ICCV 2019): a connected Watts-Strogatz graph (networkx
  ``connected_watts_strogatz_graph``) made acyclic by orienting each edge from the lower to the
  higher node index; each node sums its inputs and writes one tensor, sources read the input and
  sinks feed one output aggregation.
* :func:`nas_cell` -- NASNet/DARTS-like stack of cells, each node combining two earlier states of
  the cell and the cell output concatenating all intermediate nodes (many concats).
* :func:`unet` -- U-Net: an encoder that halves the spatial size, a decoder that concatenates the
  long skip connection of the same level.
* :func:`transformer` -- transformer encoder blocks (per-head attention, residual adds, FFN).
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from .errors import GraphError
from .graph import Graph

__all__ = [
    "GENERATORS",
    "random_layered",
    "moccasin_layered",
    "randwire",
    "nas_cell",
    "unet",
    "transformer",
    "generate",
]


class _Builder:
    """Adds ``uint8`` tensors of a given byte size and operators with a MACs estimate."""

    def __init__(self, name: str, input_bytes: int) -> None:
        self.g = Graph(name)
        self.g.add_tensor("x", (int(input_bytes),), "uint8", kind="input")
        self.k = 0

    def op(self, op_type: str, inputs: list[str], nbytes: int, name: str | None = None) -> str:
        name = name or f"{op_type.lower()}{self.k}"
        self.k += 1
        out = f"{name}_out"
        self.g.add_tensor(out, (int(nbytes),), "uint8")
        touched = int(nbytes) + sum(self.g.tensors[t].nbytes for t in dict.fromkeys(inputs))
        self.g.add_op(name, op_type, inputs, [out], macs=touched)
        return out


def _check_positive(**kw) -> None:
    for k, v in kw.items():
        if int(v) < 1:
            raise GraphError(f"generator parameter {k} must be >= 1, got {v!r}")


def random_layered(
    seed: int = 0,
    n_ops: int = 20,
    width: int = 4,
    max_fan_in: int = 3,
    p_skip: float = 0.2,
    min_bytes: int = 1 << 10,
    max_bytes: int = 1 << 16,
) -> Graph:
    """A random layered DAG of ``n_ops`` operators.

    Operators are placed in layers of ``1 .. width`` operators (random). Each operator reads
    ``1 .. max_fan_in`` tensors: at least one from the previous layer and, with probability
    ``p_skip`` each, extra tensors from any earlier layer (skip connections). Outputs nobody reads
    are summed by a final ``Add`` operator (included in ``n_ops``; its output, of the largest
    input's size, is the graph output).
    Tensor sizes are uniform in ``[min_bytes, max_bytes]`` bytes.

    Raises
    ------
    GraphError
        ``n_ops < 2``, ``width < 1``, ``max_fan_in < 1`` or ``min_bytes > max_bytes``.
    """
    if n_ops < 2:
        raise GraphError(f"random_layered: n_ops must be >= 2, got {n_ops}")
    _check_positive(width=width, max_fan_in=max_fan_in, min_bytes=min_bytes)
    if min_bytes > max_bytes:
        raise GraphError(f"random_layered: min_bytes {min_bytes} > max_bytes {max_bytes}")
    rng = np.random.default_rng(seed)
    b = _Builder(f"layered_s{seed}_n{n_ops}", rng.integers(min_bytes, max_bytes + 1))

    def size() -> int:
        return int(rng.integers(min_bytes, max_bytes + 1))

    layers: list[list[str]] = [["x"]]
    made = 0
    read: set[str] = set()
    earlier: list[str] = []  # the tensors of every layer but the last (grows by one layer)
    while made < n_ops - 1:
        w = min(int(rng.integers(1, width + 1)), n_ops - 1 - made)
        layer = []
        if len(layers) >= 2:
            earlier.extend(layers[-2])
        for _ in range(w):
            ins = [layers[-1][int(rng.integers(len(layers[-1])))]]
            for _ in range(int(rng.integers(0, max_fan_in))):
                if earlier and rng.random() < p_skip:
                    ins.append(earlier[int(rng.integers(len(earlier)))])
                else:
                    ins.append(layers[-1][int(rng.integers(len(layers[-1])))])
            ins = list(dict.fromkeys(ins))
            read.update(ins)
            layer.append(b.op("Op", ins, size()))
            made += 1
        layers.append(layer)
    sinks = [t for lay in layers[1:] for t in lay if t not in read]
    out = b.op("Add", sinks, max(b.g.tensors[t].nbytes for t in sinks), name="sum_out")
    b.g.mark_output(out)
    return b.g


def moccasin_layered(
    seed: int = 0,
    n_ops: int = 100,
    width_factor: float = 0.35,
    width_spread: float = 0.75,
    edge_density: float = 0.2,
    skips_per_op: float | None = None,
    min_bytes: int = 10,
    max_bytes: int = 8000,
) -> Graph:
    """A random layered graph shaped like MOCCASIN's published ones (``random_layered_n*.json`` of
    github.com/haoming-codes/moccasin, after Appendix A of Gagrani et al., "Neural Topological
    Ordering for Computation Graphs", NeurIPS 2022), ``n_ops`` operators in all.

    One source operator (reads the input ``x``) feeds every operator of the first layer; layers
    of ``round(U[(1 - width_spread) w, (1 + width_spread) w])`` operators follow (at least 1),
    ``w = 2 * width_factor * sqrt(n_ops)`` (the files' ``w`` parameter, 0.27 / 0.43 / 0.36 /
    0.31 in the four of them, matches their mean widths this way); each operator of a layer reads each operator of the
    previous one with probability ``edge_density`` (at least one, and every operator is read by
    the next layer at least once); each operator also gets ``Poisson(skips_per_op)`` skip edges
    to operators two or more layers later (default ``0.07 * log2(n_ops)``); one sink operator
    reads the last layer and writes the graph output. Sizes are multiples of 10 bytes, uniform
    in ``[min_bytes, max_bytes]``, like the files' ``out_cost``. The defaults reproduce what the
    four published files measure (``n_ops`` 100 / 250 / 500 / 1000: mean layer width 5.2 / 11.3
    / 16.1 / 20.4, widths within +-75 % of it, 0.33 / 0.52 / 0.66 / 0.81 skip edges per operator,
    ``out_cost`` 10 ... 8,180 with median about 1,500); the generator is this reading of the
    files, not their code.

    Raises
    ------
    GraphError
        ``n_ops < 3``, ``width_factor <= 0``, ``edge_density`` or ``width_spread`` outside ``[0, 1]``,
        ``skips_per_op < 0``, or ``min_bytes > max_bytes`` / ``min_bytes < 1``.
    """
    if n_ops < 3:
        raise GraphError(f"moccasin_layered: n_ops must be >= 3, got {n_ops}")
    _check_positive(min_bytes=min_bytes)
    if min_bytes > max_bytes:
        raise GraphError(f"moccasin_layered: min_bytes {min_bytes} > max_bytes {max_bytes}")
    if not (0 <= edge_density <= 1 and 0 <= width_spread <= 1):
        raise GraphError("moccasin_layered: edge_density and width_spread must be in [0, 1]")
    w = 2.0 * float(width_factor) * np.sqrt(n_ops)
    skip = 0.07 * np.log2(n_ops) if skips_per_op is None else float(skips_per_op)
    if w <= 0 or skip < 0:
        raise GraphError(f"moccasin_layered: width {w} must be > 0 and skips_per_op {skip} >= 0")
    rng = np.random.default_rng(seed)
    lo, hi = max(min_bytes // 10, 1), max(max_bytes // 10, 1)

    def size() -> int:
        return int(rng.integers(lo, hi + 1)) * 10

    sizes_left = n_ops - 2
    layers: list[list[int]] = []
    k = 0
    while sizes_left > 0:
        a, b_ = (1 - width_spread) * w, (1 + width_spread) * w
        cnt = max(1, min(int(round(rng.uniform(a, b_))), sizes_left))
        layers.append(list(range(k, k + cnt)))
        k += cnt
        sizes_left -= cnt
    preds: list[set[int]] = [set() for _ in range(k)]
    for la, lb in zip(layers[:-1], layers[1:], strict=True):
        for v in lb:
            ps = {u for u in la if rng.random() < edge_density}
            if not ps:
                ps = {la[int(rng.integers(len(la)))]}
            preds[v] |= ps
        read = set().union(*(preds[v] for v in lb))
        for u in la:
            if u not in read:
                preds[lb[int(rng.integers(len(lb)))]].add(u)
    layer_of = {v: i for i, lay in enumerate(layers) for v in lay}
    # operators are numbered layer by layer: those two or more layers after u are the range
    # first[layer_of[u] + 2] .. k - 1 (no list per operator: O(n) in all, not O(n^2 / width))
    first = [lay[0] for lay in layers] + [k, k]
    for u in range(k):
        f = first[layer_of[u] + 2]
        for _ in range(int(rng.poisson(skip)) if f < k else 0):
            preds[f + int(rng.integers(k - f))].add(u)
    b = _Builder(f"moccasin_layered_s{seed}_n{n_ops}", size())
    src = b.op("Op", ["x"], size(), name="source")
    out = [""] * k
    for v in range(k):
        ins = [src] if layer_of[v] == 0 else [out[u] for u in sorted(preds[v])]
        out[v] = b.op("Op", ins, size(), name=f"n{v}")
    sink = b.op("Op", [out[v] for v in layers[-1]], size(), name="sink")
    b.g.mark_output(sink)
    return b.g


def randwire(
    seed: int = 0,
    n_nodes: int = 32,
    k: int = 4,
    p: float = 0.75,
    min_bytes: int = 1 << 12,
    max_bytes: int = 1 << 16,
) -> Graph:
    """A randomly wired network from a Watts-Strogatz graph (RandWire, ICCV 2019).

    ``networkx.connected_watts_strogatz_graph(n_nodes, k, p, seed=seed)`` gives an undirected
    graph; each edge ``{i, j}`` becomes ``min -> max`` (acyclic by node order). Node ``i`` is an
    ``Add`` (aggregation of its inputs, then its transform) writing one tensor of random size in
    ``[min_bytes, max_bytes]``; nodes without predecessors read ``x``; nodes without successors
    feed a final ``Mean`` operator whose output is the graph output. ``n_nodes + 1`` operators.

    Raises
    ------
    GraphError
        ``n_nodes < k + 1`` or ``k < 2`` (networkx needs ``k < n``).
    """
    if k < 2 or n_nodes < k + 1:
        raise GraphError(f"randwire: need 2 <= k < n_nodes, got k={k}, n_nodes={n_nodes}")
    rng = np.random.default_rng(seed)
    ws = nx.connected_watts_strogatz_graph(n_nodes, k, p, tries=1000, seed=int(seed))
    dag = nx.DiGraph()
    dag.add_nodes_from(range(n_nodes))
    dag.add_edges_from((min(u, v), max(u, v)) for u, v in ws.edges())
    b = _Builder(f"randwire_s{seed}_n{n_nodes}", rng.integers(min_bytes, max_bytes + 1))
    out: dict[int, str] = {}
    for v in range(n_nodes):
        ins = [out[u] for u in sorted(dag.predecessors(v))] or ["x"]
        out[v] = b.op("Add", ins, int(rng.integers(min_bytes, max_bytes + 1)), name=f"node{v}")
    sinks = [out[v] for v in range(n_nodes) if dag.out_degree(v) == 0]
    res = b.op("Mean", sinks, max(b.g.tensors[t].nbytes for t in sinks), name="mean")
    b.g.mark_output(res)
    return b.g


def nas_cell(
    seed: int = 0,
    n_cells: int = 3,
    nodes_per_cell: int = 4,
    state_bytes: int = 1 << 14,
) -> Graph:
    """A NASNet/DARTS-like stack of cells with many concatenations.

    Cell ``c`` has two inputs (the outputs of cells ``c-1`` and ``c-2``; the stem ``x`` before),
    a 1x1 ``Conv`` preprocessing each, and ``nodes_per_cell`` nodes; node ``i`` applies two
    operations (``Op``) to two states chosen at random among the preprocessed inputs and the
    earlier nodes, and adds them (``Add``). The cell output is the ``Concat`` of all its nodes
    (``nodes_per_cell * state_bytes`` bytes), read by the next two cells. The last cell's output
    is the graph output. Operators: ``n_cells * (2 + 3 * nodes_per_cell + 1)``.

    Raises
    ------
    GraphError
        A parameter ``< 1``.
    """
    _check_positive(n_cells=n_cells, nodes_per_cell=nodes_per_cell, state_bytes=state_bytes)
    rng = np.random.default_rng(seed)
    b = _Builder(f"nas_s{seed}_c{n_cells}", state_bytes)
    prev2, prev1 = "x", "x"
    for c in range(n_cells):
        s0 = b.op("Conv", [prev2], state_bytes, name=f"c{c}_pre0")
        s1 = b.op("Conv", [prev1], state_bytes, name=f"c{c}_pre1")
        states = [s0, s1]
        nodes = []
        for i in range(nodes_per_cell):
            a, bb = rng.choice(len(states), size=2, replace=True)
            oa = b.op("Op", [states[int(a)]], state_bytes, name=f"c{c}_n{i}_a")
            ob = b.op("Op", [states[int(bb)]], state_bytes, name=f"c{c}_n{i}_b")
            node = b.op("Add", [oa, ob], state_bytes, name=f"c{c}_n{i}")
            states.append(node)
            nodes.append(node)
        out = b.op("Concat", nodes, state_bytes * nodes_per_cell, name=f"c{c}_concat")
        prev2, prev1 = prev1, out
    b.g.mark_output(prev1)
    return b.g


def unet(seed: int = 0, depth: int = 4, base_bytes: int = 1 << 16, convs: int = 2) -> Graph:
    """A U-Net with long skip connections.

    Encoder level ``l`` (``0 .. depth-1``) runs ``convs`` ``Conv`` operators on tensors of
    ``base_bytes / 2**l`` bytes (the spatial size quarters, the channels double), then a
    ``MaxPool``; the bottleneck runs ``convs`` convs; decoder level ``l`` upsamples
    (``Resize``), concatenates with the encoder output of level ``l`` (the long skip, live across
    the whole middle of the network) and runs ``convs`` convs. The seed jitters each size by
    +-10 %. Operators: ``depth * (2 * convs + 3) + convs``.

    Raises
    ------
    GraphError
        A parameter ``< 1``.
    """
    _check_positive(depth=depth, base_bytes=base_bytes, convs=convs)
    rng = np.random.default_rng(seed)

    def sz(level: int) -> int:
        return max(1, int(base_bytes / 2**level * rng.uniform(0.9, 1.1)))

    b = _Builder(f"unet_s{seed}_d{depth}", base_bytes)
    cur = "x"
    skips = []
    for lev in range(depth):
        for j in range(convs):
            cur = b.op("Conv", [cur], sz(lev), name=f"enc{lev}_conv{j}")
        skips.append(cur)
        cur = b.op("MaxPool", [cur], sz(lev + 2), name=f"enc{lev}_pool")
    for j in range(convs):
        cur = b.op("Conv", [cur], sz(depth), name=f"mid_conv{j}")
    for lev in reversed(range(depth)):
        up = b.op("Resize", [cur], sz(lev), name=f"dec{lev}_up")
        cur = b.op("Concat", [up, skips[lev]], sz(lev) * 2, name=f"dec{lev}_cat")
        for j in range(convs):
            cur = b.op("Conv", [cur], sz(lev), name=f"dec{lev}_conv{j}")
    b.g.mark_output(cur)
    return b.g


def transformer(
    seed: int = 0, n_blocks: int = 2, seq: int = 64, d_model: int = 128, heads: int = 4
) -> Graph:
    """Transformer encoder blocks (float32 activations, sizes in bytes ``4 * elements``).

    Per block: ``LayerNorm``; per head ``Q``, ``K``, ``V`` projections (``seq * d_model/heads``),
    ``QK^T`` scores (``seq * seq``), ``Softmax``, ``AV``; ``Concat`` of the heads; output
    projection; residual ``Add``; ``LayerNorm``; FFN up (``4 * d_model``, ``Gelu``) and down;
    residual ``Add``. Head count gives the parallel branches; the attention scores dominate
    memory for long sequences. The seed permutes the order in which heads are stored.
    Operators: ``n_blocks * (8 + 6 * heads)``.

    Raises
    ------
    GraphError
        A parameter ``< 1`` or ``d_model`` not divisible by ``heads``.
    """
    _check_positive(n_blocks=n_blocks, seq=seq, d_model=d_model, heads=heads)
    if d_model % heads:
        raise GraphError(f"transformer: d_model {d_model} must be divisible by heads {heads}")
    rng = np.random.default_rng(seed)
    f = 4
    act = seq * d_model * f
    head = seq * (d_model // heads) * f
    score = seq * seq * f
    b = _Builder(f"transformer_s{seed}_b{n_blocks}", act)
    cur = "x"
    for blk in range(n_blocks):
        ln = b.op("LayerNorm", [cur], act, name=f"b{blk}_ln1")
        outs = []
        for h in rng.permutation(heads).tolist():
            q = b.op("MatMul", [ln], head, name=f"b{blk}_h{h}_q")
            k = b.op("MatMul", [ln], head, name=f"b{blk}_h{h}_k")
            v = b.op("MatMul", [ln], head, name=f"b{blk}_h{h}_v")
            s = b.op("MatMul", [q, k], score, name=f"b{blk}_h{h}_qk")
            p = b.op("Softmax", [s], score, name=f"b{blk}_h{h}_softmax")
            outs.append(b.op("MatMul", [p, v], head, name=f"b{blk}_h{h}_av"))
        cat = b.op("Concat", outs, act, name=f"b{blk}_concat")
        proj = b.op("MatMul", [cat], act, name=f"b{blk}_proj")
        res = b.op("Add", [proj, cur], act, name=f"b{blk}_res1")
        ln2 = b.op("LayerNorm", [res], act, name=f"b{blk}_ln2")
        up = b.op("MatMul", [ln2], 4 * act, name=f"b{blk}_ffn_up")
        ge = b.op("Gelu", [up], 4 * act, name=f"b{blk}_gelu")
        down = b.op("MatMul", [ge], act, name=f"b{blk}_ffn_down")
        cur = b.op("Add", [down, res], act, name=f"b{blk}_res2")
    b.g.mark_output(cur)
    return b.g


#: Generator registry: name -> ``f(seed=0, **size params) -> Graph``.
GENERATORS = {
    "random_layered": random_layered,
    "moccasin_layered": moccasin_layered,
    "randwire": randwire,
    "nas_cell": nas_cell,
    "unet": unet,
    "transformer": transformer,
}


def generate(name: str, seed: int = 0, **params) -> Graph:
    """Build graph ``name`` of :data:`GENERATORS` (``GraphError`` listing the known names if
    unknown); the result is validated (:meth:`Graph.validate`)."""
    try:
        f = GENERATORS[name]
    except KeyError:
        raise GraphError(f"unknown generator {name!r}; known: {', '.join(GENERATORS)}") from None
    g = f(seed=seed, **params)
    g.validate()
    return g
