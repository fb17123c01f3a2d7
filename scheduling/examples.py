"""Small example graphs from the design documents (seeds), built with the :class:`Graph` builders.

* :func:`seed000_graph` -- seed 000 section 8, the residual block ``conv -> add -> relu -> gemm
  -> softmax`` whose lifetime table and greedy arena the seed prints.
* :func:`mobilenet_v1_first_layer` -- seed 003 section 3.3.1, MobileNet V1's first layer (Conv 3x3
  stride 2, 32 channels, on 224x224x3, then BN and ReLU) in int8.

Seed 000 section 8: reconstructing the operator list
----------------------------------------------------
The seed prints eight tensors with closed lifetimes ``[first_use, last_use]`` (operator steps) and
sizes (bytes), see :data:`SEED000_TABLE`, but not the operator list. The list below is the one we
reconstructed; its lifetime analysis (:func:`scheduling.lifetimes.tensor_lifetimes`, file order)
gives every one of the eight rows exactly::

    step 0  stage    Identity  input            -> skip     (input copied into the arena; it is
                                                             the residual branch)
    step 1  conv     Conv      skip, conv_w     -> conv_y
    step 2  add      Add       conv_y, skip     -> res      (residual add)
    step 3  relu     Relu      res              -> relu_y
    step 4  gemm     Gemm      relu_y, gemm_w   -> logits
    step 5  softmax  Softmax   logits           -> probs    (graph output)

Why this list: ``skip`` (0-2) is written at step 0 from ``input`` (0-0, read only at step 0) and
last read at step 2, so step 0 is an operator from ``input`` to ``skip`` and step 2 the residual
add; ``conv_y`` (1-2) is the conv at step 1; ``res`` (2-3) is read last at step 3 (the ReLU);
``logits`` (4-5) is written at step 4 (the Gemm) and read by the softmax at step 5; ``probs``
(5-5) is the graph output. ``conv_w`` (0-1) and ``input`` (0-0) follow our rule for weights and
inputs (available from step 0 to the last consumer).

Two differences from the seed's table, both forced by dataflow and documented rather than hidden:

1. **One tensor the seed omits**: the ReLU at step 3 must hand its result to the Gemm at step 4,
   and no tensor of the seed's table is written at step 3 and read at step 4 (``gemm_w`` is a
   weight). No operator list can give the seed's eight lifetimes without such a tensor, so the
   graph has a ninth tensor ``relu_y`` (8192 bytes, the size of ``res``, lifetime 3-4). It does
   not change the activation peak (20480 bytes at step 2: ``conv_y + skip + res``) nor the unified
   arena's lower bound (352256 = 331776 resident + 20480), but the graph has **6** activation
   buffers (the seed's 5 plus ``relu_y``) and a no-reuse activation total of 30720, not 22528.
   :func:`seed000_problem` gives the seed's own table as a problem, for planner tests that must
   reproduce the seed's printed offsets.
2. ``gemm_w``: the seed writes 3-4; our rule gives 0-4 (weights are available from step 0). It
   does not matter for planning: in the unified arena every resident lives for the whole schedule
   (seed 000's ``span_of``).

The seed gives sizes only, no shapes: tensors here are flat ``float32`` vectors of the seed's byte
sizes (``input`` is 1024 floats = 4096 bytes, ...); no MACs are estimated.
"""

from __future__ import annotations

from planners.examples import SEED000_OFFSETS, SEED000_TENSORS, seed000_problem

from .graph import Graph
from .onnx_import import estimate_macs

__all__ = [
    "SEED000_TABLE",
    "SEED000_OFFSETS",
    "seed000_graph",
    "seed000_problem",
    "mobilenet_v1_first_layer",
]

#: Seed 000 section 8 output table ``(name, first_use, last_use, size_bytes, resident)`` (closed
#: lifetimes) and the offsets its allocator prints; defined once in :mod:`planners.examples`.
SEED000_TABLE = SEED000_TENSORS


def seed000_graph() -> Graph:
    """The seed 000 section 8 residual block as a :class:`Graph` (operator list in the module
    docstring).

    Returns
    -------
    Graph
        6 operators (steps 0-5), 1 input, 2 weights, 5 activations and 1 graph output (``probs``);
        flat float32 tensors with the seed's byte sizes.

    Examples
    --------
    >>> from scheduling.lifetimes import peak_live_bytes
    >>> peak_live_bytes(seed000_graph())
    20480
    """
    g = Graph("seed000")
    f32 = "float32"
    g.add_tensor("input", (1024,), f32, kind="input")
    g.add_tensor("conv_w", (16384,), f32, kind="weight")
    g.add_tensor("gemm_w", (65536,), f32, kind="weight")
    for name, floats in [
        ("skip", 1024),
        ("conv_y", 2048),
        ("res", 2048),
        ("relu_y", 2048),
        ("logits", 256),
        ("probs", 256),
    ]:
        g.add_tensor(name, (floats,), f32)
    g.add_op("stage", "Identity", ["input"], ["skip"])
    g.add_op("conv", "Conv", ["skip", "conv_w"], ["conv_y"])
    g.add_op("add", "Add", ["conv_y", "skip"], ["res"])
    g.add_op("relu", "Relu", ["res"], ["relu_y"])
    g.add_op("gemm", "Gemm", ["relu_y", "gemm_w"], ["logits"])
    g.add_op("softmax", "Softmax", ["logits"], ["probs"])
    g.mark_output("probs")
    return g


def mobilenet_v1_first_layer(fused: bool = False) -> Graph:
    """Seed 003 section 3.3.1: MobileNet V1's first layer in int8, NCHW.

    ``Conv`` 3x3, stride 2, pad 1, 32 output channels on a ``[1, 3, 224, 224]`` input (150,528
    bytes), then ``BatchNormalization`` and ``Relu``; each intermediate is ``[1, 32, 112, 112]``
    int8 = 401,408 bytes (the seed's "401KB"). BN parameters are float32 weights of shape
    ``[32]``.

    Parameters
    ----------
    fused : bool
        ``True`` builds the seed's fused kernel (one ``ConvBnRelu`` operator, BN folded into the
        conv weights and bias): a single intermediate-free step.

    Returns
    -------
    Graph
        Unfused: 3 operators, activations ``conv_y``, ``bn_y`` and the output ``relu_y``; activation
        peak 802,816 bytes (``conv_y`` and ``bn_y`` live at the BN step). Fused: 1 operator, peak
        401,408 bytes. Conv MACs ``32 * 112 * 112 * 3 * 3 * 3 = 10,838,016``.
    """
    g = Graph("mobilenet_v1_layer1" + ("_fused" if fused else ""))
    x = g.add_tensor("input", (1, 3, 224, 224), "int8", kind="input")
    w = g.add_tensor("conv_w", (32, 3, 3, 3), "int8", kind="weight")
    y_shape = (1, 32, 112, 112)
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "group": 1}
    macs = estimate_macs("Conv", attrs, [x.shape, w.shape], [y_shape])
    if fused:
        g.add_tensor("conv_b", (32,), "int32", kind="weight")
        g.add_tensor("relu_y", y_shape, "int8")
        g.add_op(
            "conv_bn_relu", "ConvBnRelu", ["input", "conv_w", "conv_b"], ["relu_y"], attrs, macs
        )
    else:
        for p in ("bn_scale", "bn_bias", "bn_mean", "bn_var"):
            g.add_tensor(p, (32,), "float32", kind="weight")
        for t in ("conv_y", "bn_y", "relu_y"):
            g.add_tensor(t, y_shape, "int8")
        g.add_op("conv", "Conv", ["input", "conv_w"], ["conv_y"], attrs, macs)
        g.add_op(
            "bn",
            "BatchNormalization",
            ["conv_y", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
            ["bn_y"],
            {"epsilon": 1e-5},
        )
        g.add_op("relu", "Relu", ["bn_y"], ["relu_y"])
    g.mark_output("relu_y")
    return g
