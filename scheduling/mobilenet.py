"""MobileNet V1 and V2 graph generators (no download needed), with BN and ReLU/ReLU6 unfused.

* :func:`mobilenet_v1` -- Howard et al., "MobileNets: Efficient Convolutional Neural Networks for
  Mobile Vision Applications", arXiv:1704.04861 (2017), Table 1: a 3x3 stride-2 convolution, then
  13 depthwise-separable blocks (3x3 depthwise + 1x1 pointwise), global average pooling, a
  fully-connected layer and Softmax. Width multiplier ``alpha`` scales every channel count
  (``int(c * alpha)``, as the Keras reference); resolution ``rho`` is the input side.
* :func:`mobilenet_v2` -- Sandler et al., "MobileNetV2: Inverted Residuals and Linear
  Bottlenecks", CVPR 2018, Table 2: a 3x3 stride-2 convolution, 17 inverted-residual bottlenecks
  ``(t, c, n, s)`` (1x1 expansion + ReLU6, 3x3 depthwise + ReLU6, 1x1 linear projection, residual
  ``Add`` when stride 1 and channels match), a 1x1 convolution to 1280 channels, pooling, FC and
  Softmax. Channels are rounded with torchvision's ``_make_divisible(c * alpha, 8)``.

Every convolution is followed by its own ``BatchNormalization`` (four per-channel float32
weights) and activation operator (``Relu`` for V1; ``Clip`` with ``min=0, max=6`` for V2's
ReLU6), exactly as an exported training graph before fusion, so fusion passes have work to do.
Layout is NCHW with batch 1; the classifier is ``GlobalAveragePool -> Flatten -> Gemm ->
Softmax`` (``Flatten`` is a view, for the aliasing pass).

Element types: ``dtype="int8"`` gives int8 activations (every one, Softmax output included, so
the sizes are the seed's) and int8 convolution/FC weights, an int32 FC bias and float32 BN
parameters; ``dtype="float32"`` gives float32 everywhere. Tensor bytes are
``prod(shape) * itemsize``. Each convolution's ``macs`` is
:func:`scheduling.onnx_import.estimate_macs` (``prod(Y) * C_in/group * k_h * k_w``), the Gemm's
``1024*alpha * 1000`` (V1).

The first three operators of :func:`mobilenet_v1` at ``alpha=1, resolution=224, dtype="int8"``
are seed 003 section 3.3.1's case (Conv 3x3 s2, 32 channels on 224x224x3, BN, ReLU; the
intermediate ``[1, 32, 112, 112]`` int8 is 401,408 bytes). Published totals (alpha 1, 224):
V1 569 M multiply-adds, 4.2 M parameters; V2 300 M multiply-adds, 3.4 M parameters; the
generators reproduce these (see ``tests/test_mobilenet.py``).

Generation runs in ``O(#layers)``.
"""

from __future__ import annotations

from .errors import GraphError
from .graph import Graph
from .onnx_import import estimate_macs

__all__ = ["mobilenet_v1", "mobilenet_v2", "MOBILENET_V1_BLOCKS", "MOBILENET_V2_BLOCKS",
           "make_divisible", "conv_output_side"]

#: MobileNet V1 depthwise-separable blocks ``(pointwise output channels, depthwise stride)``
#: after the first convolution (Howard et al. 2017, Table 1).
MOBILENET_V1_BLOCKS: tuple[tuple[int, int], ...] = (
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1),
)

#: MobileNet V2 bottleneck stages ``(expansion t, output channels c, repeats n, first stride s)``
#: (Sandler et al. 2018, Table 2).
MOBILENET_V2_BLOCKS: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
    (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1),
)


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of ``divisor``, never more than 10 % below ``value``
    (torchvision's ``_make_divisible``, used by MobileNet V2).

    >>> make_divisible(32 * 0.35), make_divisible(16 * 0.5), make_divisible(24 * 1.4)
    (16, 8, 32)
    """
    min_value = divisor if min_value is None else min_value
    new = max(min_value, int(value + divisor / 2) // divisor * divisor)
    if new < 0.9 * value:
        new += divisor
    return int(new)


def conv_output_side(side: int, kernel: int, stride: int, pad: int) -> int:
    """Output side of a convolution: ``floor((side + 2 pad - kernel) / stride) + 1``.

    >>> conv_output_side(224, 3, 2, 1)
    112
    """
    return (side + 2 * pad - kernel) // stride + 1


class _Net:
    """Adds NCHW conv/BN/activation layers to a graph, tracking the current tensor."""

    def __init__(self, name: str, resolution: int, dtype: str) -> None:
        if dtype not in ("int8", "float32"):
            raise GraphError(f"graph {name!r}: dtype must be 'int8' or 'float32', got {dtype!r}")
        if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 32:
            raise GraphError(
                f"graph {name!r}: resolution must be an integer >= 32 pixels, got {resolution!r}"
            )
        self.g = Graph(name)
        self.dtype = dtype
        self.bias_dtype = "int32" if dtype == "int8" else "float32"
        self.cur = "input"
        self.g.add_tensor("input", (1, 3, resolution, resolution), dtype, kind="input")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.g.tensors[self.cur].shape

    def conv(self, name: str, cout: int, k: int, s: int, group: int = 1) -> None:
        g = self.g
        n, cin, h, w = self.shape
        if group not in (1, cin):
            raise GraphError(f"layer {name!r}: group must be 1 or C_in={cin}, got {group}")
        pad = (k - 1) // 2
        ho, wo = conv_output_side(h, k, s, pad), conv_output_side(w, k, s, pad)
        wt = g.add_tensor(f"{name}_w", (cout, cin // group, k, k), self.dtype, kind="weight")
        y = g.add_tensor(f"{name}_y", (n, cout, ho, wo), self.dtype)
        attrs = {"kernel_shape": [k, k], "strides": [s, s], "pads": [pad] * 4, "group": group,
                 "dilations": [1, 1]}
        macs = estimate_macs("Conv", attrs, [self.shape, wt.shape], [y.shape])
        g.add_op(name, "Conv", [self.cur, wt.name], [y.name], attrs, macs)
        self.cur = y.name

    def bn(self, name: str) -> None:
        g = self.g
        c = self.shape[1]
        params = []
        for p in ("scale", "bias", "mean", "var"):
            params.append(g.add_tensor(f"{name}_{p}", (c,), "float32", kind="weight").name)
        y = g.add_tensor(f"{name}_y", self.shape, self.dtype)
        g.add_op(name, "BatchNormalization", [self.cur, *params], [y.name], {"epsilon": 1e-5})
        self.cur = y.name

    def act(self, name: str, relu6: bool) -> None:
        y = self.g.add_tensor(f"{name}_y", self.shape, self.dtype)
        if relu6:
            self.g.add_op(name, "Clip", [self.cur], [y.name], {"min": 0.0, "max": 6.0})
        else:
            self.g.add_op(name, "Relu", [self.cur], [y.name])
        self.cur = y.name

    def conv_bn_act(self, name: str, cout: int, k: int, s: int, group: int = 1,
                    act: str | None = "relu") -> None:
        self.conv(name, cout, k, s, group)
        self.bn(f"{name}_bn")
        if act is not None:
            self.act(f"{name}_{act}", relu6=(act == "relu6"))

    def classifier(self, classes: int) -> None:
        g = self.g
        n, c, _, _ = self.shape
        pooled = g.add_tensor("pool_y", (n, c, 1, 1), self.dtype)
        g.add_op("pool", "GlobalAveragePool", [self.cur], [pooled.name])
        flat = g.add_tensor("flatten_y", (n, c), self.dtype)
        g.add_op("flatten", "Flatten", [pooled.name], [flat.name], {"axis": 1})
        fw = g.add_tensor("fc_w", (classes, c), self.dtype, kind="weight")
        fb = g.add_tensor("fc_b", (classes,), self.bias_dtype, kind="weight")
        logits = g.add_tensor("fc_y", (n, classes), self.dtype)
        attrs = {"transB": 1}
        g.add_op("fc", "Gemm", [flat.name, fw.name, fb.name], [logits.name], attrs,
                 estimate_macs("Gemm", attrs, [flat.shape, fw.shape], [logits.shape]))
        probs = g.add_tensor("probs", (n, classes), self.dtype)
        g.add_op("softmax", "Softmax", [logits.name], [probs.name], {"axis": 1})
        g.mark_output(probs.name)
        self.cur = probs.name


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
        raise GraphError(f"width multiplier alpha must be a number > 0, got {alpha!r}")


def mobilenet_v1(
    alpha: float = 1.0,
    resolution: int = 224,
    dtype: str = "int8",
    classes: int = 1000,
    blocks: int | None = None,
) -> Graph:
    """MobileNet V1 as an unfused :class:`Graph` (Conv, BatchNormalization, Relu per layer).

    Parameters
    ----------
    alpha : float
        Width multiplier (channels ``int(c * alpha)``), ``> 0``.
    resolution : int
        Input side in pixels (input ``[1, 3, resolution, resolution]``), ``>= 32``.
    dtype : {"int8", "float32"}
        Element type of activations and conv/FC weights.
    classes : int
        Outputs of the classifier.
    blocks : int or None
        Keep only the first ``blocks`` depthwise-separable blocks and no classifier (the last
        ReLU output is the graph output); ``0`` gives seed 003's first layer alone. ``None``: the
        whole network.

    Returns
    -------
    Graph
        Operator names ``conv1``, ``conv1_bn``, ``conv1_relu``, then per block ``i`` (1-based)
        ``dw{i}``/``pw{i}`` with ``_bn`` and ``_relu``; tensors ``<op>_y`` and ``<op>_w``. Full
        network at ``alpha=1``: 3 + 13 x 6 + 4 = 85 operators.

    Raises
    ------
    GraphError
        ``alpha <= 0``, resolution below 32, unknown dtype, ``blocks`` outside ``0..13``.

    Examples
    --------
    >>> g = mobilenet_v1(blocks=0)
    >>> g.tensors["conv1_y"].shape, g.tensors["conv1_y"].nbytes
    ((1, 32, 112, 112), 401408)
    """
    _check_alpha(alpha)
    nb = len(MOBILENET_V1_BLOCKS) if blocks is None else blocks
    if isinstance(nb, bool) or not isinstance(nb, int) or not 0 <= nb <= len(MOBILENET_V1_BLOCKS):
        raise GraphError(f"mobilenet_v1: blocks must be in 0..13 or None, got {blocks!r}")
    name = f"mobilenet_v1_{alpha:g}_{resolution}_{dtype}" + ("" if blocks is None else f"_b{nb}")
    net = _Net(name, resolution, dtype)
    net.conv_bn_act("conv1", int(32 * alpha), 3, 2)
    for i, (c, s) in enumerate(MOBILENET_V1_BLOCKS[:nb], start=1):
        cin = net.shape[1]
        net.conv_bn_act(f"dw{i}", cin, 3, s, group=cin)
        net.conv_bn_act(f"pw{i}", int(c * alpha), 1, 1)
    if blocks is None:
        net.classifier(classes)
    else:
        net.g.mark_output(net.cur)
    return net.g


def mobilenet_v2(
    alpha: float = 1.0,
    resolution: int = 224,
    dtype: str = "int8",
    classes: int = 1000,
    blocks: int | None = None,
) -> Graph:
    """MobileNet V2 as an unfused :class:`Graph` (Conv, BatchNormalization, Clip(0, 6) per layer,
    residual ``Add`` in stride-1 bottlenecks whose input and output channels match).

    Parameters
    ----------
    alpha : float
        Width multiplier; channels ``make_divisible(c * alpha, 8)``; the last 1x1 convolution has
        ``make_divisible(1280 * max(1, alpha), 8)`` channels.
    resolution : int
        Input side in pixels, ``>= 32``.
    dtype : {"int8", "float32"}
    classes : int
    blocks : int or None
        Keep only the first ``blocks`` bottlenecks (of 17) and no head; ``None``: whole network.

    Returns
    -------
    Graph
        Names: ``conv1`` (+ ``_bn``, ``_relu6``), bottleneck ``b{i}`` with ``b{i}_expand`` (absent
        when t = 1), ``b{i}_dw``, ``b{i}_project`` (+ ``_bn``; linear, no activation) and
        ``b{i}_add``; ``conv_last``; classifier ``pool``, ``flatten``, ``fc``, ``softmax``.

    Raises
    ------
    GraphError
        As :func:`mobilenet_v1`; ``blocks`` outside ``0..17``.

    Examples
    --------
    >>> g = mobilenet_v2()
    >>> sum(op.op_type == "Add" for op in g.ops.values())
    10
    """
    _check_alpha(alpha)
    total = sum(n for _, _, n, _ in MOBILENET_V2_BLOCKS)
    nb = total if blocks is None else blocks
    if isinstance(nb, bool) or not isinstance(nb, int) or not 0 <= nb <= total:
        raise GraphError(f"mobilenet_v2: blocks must be in 0..{total} or None, got {blocks!r}")
    name = f"mobilenet_v2_{alpha:g}_{resolution}_{dtype}" + ("" if blocks is None else f"_b{nb}")
    net = _Net(name, resolution, dtype)
    net.conv_bn_act("conv1", make_divisible(32 * alpha), 3, 2, act="relu6")
    i = 0
    for t, c, n, s in MOBILENET_V2_BLOCKS:
        cout = make_divisible(c * alpha)
        for r in range(n):
            if i >= nb:
                break
            i += 1
            stride = s if r == 0 else 1
            x = net.cur
            cin = net.shape[1]
            if t != 1:
                net.conv_bn_act(f"b{i}_expand", cin * t, 1, 1, act="relu6")
            hid = net.shape[1]
            net.conv_bn_act(f"b{i}_dw", hid, 3, stride, group=hid, act="relu6")
            net.conv_bn_act(f"b{i}_project", cout, 1, 1, act=None)
            if stride == 1 and cin == cout:
                y = net.g.add_tensor(f"b{i}_add_y", net.shape, dtype)
                net.g.add_op(f"b{i}_add", "Add", [net.cur, x], [y.name])
                net.cur = y.name
    if blocks is None:
        net.conv_bn_act("conv_last", make_divisible(1280 * max(1.0, alpha)), 1, 1, act="relu6")
        net.classifier(classes)
    else:
        net.g.mark_output(net.cur)
    return net.g
