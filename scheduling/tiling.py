"""Spatial tiling arithmetic: halos, receptive fields, tiled convolution, blocking and tile choice.

When the working set of an operator does not fit the memory that is left, the runtime cuts the
output into tiles and computes them one after the other (seed 000 section 7, seed 002 section
5.4.4). This module holds the arithmetic every budget-driven pass shares:

* :class:`Window` -- one spatial dimension of a sliding-window operator (kernel ``k``, stride
  ``s``, leading padding ``p``, dilation ``d``) and the **input interval** an output interval
  reads: output rows ``[lo, hi)`` (half-open, element indices) read input rows
  ``[lo*s - p, (hi - 1)*s - p + (k - 1)*d + 1)``;
* :func:`halo`, :func:`halo_overhead` -- seed 000 section 7's halo ``(k - 1)/2`` per side and
  the extra traffic ``1 - (BH x BW) / ((BH + k - 1) x (BW + k - 1))``, generalised to strides
  and dilations;
* :func:`receptive_field`, :func:`chain_input_interval` -- the growth of the halo through a
  chain of layers (receptive field ``r_{l-1} = (r_l - 1) s_l + (k_l - 1) d_l + 1``);
* :func:`conv2d`, :func:`conv_chain`, :func:`conv_chain_tiled` -- a numpy NCHW convolution used
  as a reference, and the same chain computed tile by tile from the intervals above (the test
  that the arithmetic, not only the bookkeeping, is right);
* :func:`matmul_block_bytes`, :func:`choose_matmul_block`, :func:`choose_conv_tile`,
  :func:`micro_batch_size` -- seed 002's blocking working set ``bk + kb + b^2``, tile sizes
  aligned to the vector length (VLEN) that fit a cache or SRAM level, and the runtime-adaptive
  choice (seed 000 section 9: derive the tile size from the memory available at load time
  instead of tiling without a bound).

Conventions: intervals are half-open ``[lo, hi)`` in element indices; sizes are bytes; a
``budget``/``capacity`` is bytes. Layout is NCHW.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planners.errors import InfeasibleError

from .errors import GraphError

__all__ = [
    "BudgetError",
    "Window",
    "ConvSpec",
    "halo",
    "halo_overhead",
    "receptive_field",
    "chain_input_interval",
    "split_even",
    "conv2d",
    "conv_chain",
    "conv_chain_tiled",
    "conv_tile_bytes",
    "choose_conv_tile",
    "matmul_block_bytes",
    "choose_matmul_block",
    "micro_batch_size",
    "vector_lanes",
]


class BudgetError(InfeasibleError):
    """A memory budget that no tiling, patch grid or recomputation can reach. The message names
    the budget and the smallest reachable peak (bytes).

    Parameters
    ----------
    message : str
    smallest_peak : int or None
        The smallest peak (bytes) the technique reaches, when known (also in the message); the
        ``memplan budget`` command reads it.
    """

    def __init__(self, message: str, smallest_peak: int | None = None) -> None:
        super().__init__(message)
        self.smallest_peak = None if smallest_peak is None else int(smallest_peak)


def _pos_int(value, what: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise GraphError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Window:
    """One spatial dimension of a sliding-window operator (Conv, MaxPool, AveragePool).

    Parameters
    ----------
    kernel, stride, dilation : int
        ``>= 1``.
    pad : int
        Leading (top or left) zero padding in elements, ``>= 0``; the trailing padding only
        decides the output size, which the caller knows.

    Raises
    ------
    GraphError
        A parameter out of range (named).
    """

    kernel: int = 1
    stride: int = 1
    pad: int = 0
    dilation: int = 1

    def __post_init__(self) -> None:
        _pos_int(self.kernel, "window kernel")
        _pos_int(self.stride, "window stride")
        _pos_int(self.dilation, "window dilation")
        _pos_int(self.pad, "window pad", 0)

    @property
    def extent(self) -> int:
        """Input elements one output element reads: ``(k - 1) d + 1``."""
        return (self.kernel - 1) * self.dilation + 1

    def input_interval(self, lo, hi):
        """Input interval ``[lo*s - p, (hi-1)*s - p + extent)`` (half-open, unclipped: negative
        or past-the-end indices are padding) read by output interval ``[lo, hi)``. Works on ints
        or numpy arrays (elementwise). ``O(1)`` per interval."""
        return lo * self.stride - self.pad, (hi - 1) * self.stride - self.pad + self.extent


@dataclass(frozen=True)
class ConvSpec:
    """One layer of a numpy reference convolution chain (NCHW, batch ``N``).

    Parameters
    ----------
    weight : ndarray, shape ``(C_out, C_in / groups, k_h, k_w)``
    stride, dilation : (int, int)
    pads : (int, int, int, int)
        ``(top, left, bottom, right)`` zero padding, as ONNX ``pads`` for 2-D.
    groups : int
        ``C_in`` for a depthwise convolution.
    relu : bool
        Apply ``max(0, y)`` after the convolution (elementwise, so tiling-neutral).
    """

    weight: np.ndarray
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    relu: bool = False

    def windows(self) -> tuple[Window, Window]:
        """The (height, width) :class:`Window` pair of the layer."""
        kh, kw = self.weight.shape[2:]
        return (
            Window(kh, self.stride[0], self.pads[0], self.dilation[0]),
            Window(kw, self.stride[1], self.pads[1], self.dilation[1]),
        )

    def output_hw(self, h: int, w: int) -> tuple[int, int]:
        """Output ``(H, W)`` for input ``(h, w)``: ``floor((h + pt + pb - extent) / s) + 1``."""
        wh, ww = self.windows()
        oh = (h + self.pads[0] + self.pads[2] - wh.extent) // wh.stride + 1
        ow = (w + self.pads[1] + self.pads[3] - ww.extent) // ww.stride + 1
        return oh, ow


def halo(kernel: int, stride: int = 1, dilation: int = 1) -> float:
    """Halo per side of a tile, in input elements.

    A tile of ``B`` outputs reads ``(B - 1) s + (k - 1) d + 1`` inputs, where a partition of the
    input without overlap would give it ``B s``; the difference, ``(k - 1) d + 1 - s``, is shared
    by the two sides. For ``s = d = 1`` this is seed 000 section 7's ``(k - 1) / 2``.

    Examples
    --------
    >>> halo(3), halo(5), halo(3, stride=2), halo(5, stride=2), halo(3, dilation=2)
    (1.0, 2.0, 0.5, 1.5, 2.0)
    """
    w = Window(_pos_int(kernel, "kernel"), _pos_int(stride, "stride"), 0,
               _pos_int(dilation, "dilation"))
    return (w.extent - w.stride) / 2


def halo_overhead(bh: int, bw: int, kernel: int | tuple[int, int],
                  stride: int | tuple[int, int] = 1, dilation: int | tuple[int, int] = 1) -> float:
    """Share of the input bytes a tile reads that are halo (extra traffic of tiling).

    ``1 - (s_h BH x s_w BW) / (E_h x E_w)`` with ``E = (B - 1) s + (k - 1) d + 1``; for stride and
    dilation 1 it is seed 000 section 7's ``1 - (BH x BW) / ((BH + k - 1) x (BW + k - 1))``.
    Runs in ``O(1)``. Raises :class:`GraphError` for a non-positive tile or kernel.

    Examples
    --------
    >>> round(halo_overhead(8, 8, 3), 6)    # 1 - 64 / 100
    0.36
    """
    kh, kw = (kernel, kernel) if np.isscalar(kernel) else kernel
    sh, sw = (stride, stride) if np.isscalar(stride) else stride
    dh, dw = (dilation, dilation) if np.isscalar(dilation) else dilation
    _pos_int(bh, "tile height BH")
    _pos_int(bw, "tile width BW")
    eh = Window(kh, sh, 0, dh).input_interval(0, bh)[1]
    ew = Window(kw, sw, 0, dw).input_interval(0, bw)[1]
    return 1.0 - (sh * bh * sw * bw) / (eh * ew)


def receptive_field(windows: Sequence[Window]) -> tuple[int, int]:
    """Receptive field and jump of a chain of windows (first layer first), one dimension.

    Returns ``(r, j)``: one output element of the last layer reads ``r`` consecutive input
    elements of the first, and neighbouring outputs are ``j = prod(s)`` inputs apart.
    Recurrence from the output back: ``r_{l-1} = (r_l - 1) s_l + (k_l - 1) d_l + 1``. ``O(L)``.

    Examples
    --------
    >>> receptive_field([Window(3, 2), Window(3, 1)])   # two 3x3, the first with stride 2
    (7, 2)
    """
    r, j = 1, 1
    for w in reversed(list(windows)):
        r = (r - 1) * w.stride + w.extent
        j *= w.stride
    return r, j


def chain_input_interval(windows: Sequence[Window], sizes: Sequence[int], lo, hi):
    """Intervals of every tensor of a chain that output interval ``[lo, hi)`` needs.

    Parameters
    ----------
    windows : sequence of Window, length ``L`` (first layer first)
    sizes : sequence of int, length ``L + 1``
        Extent of the chain's tensors in this dimension (``sizes[0]`` the input).
    lo, hi : int or ndarray
        Output interval(s), half-open.

    Returns
    -------
    list of (lo, hi), length ``L + 1``
        ``[lo_l, hi_l)`` of tensor ``l`` clipped to ``[0, sizes[l])``; the part of the unclipped
        interval outside is zero padding, read but not stored. ``O(L)`` per interval.
    """
    out = [(lo, hi)]
    for w, n in zip(reversed(list(windows)), reversed(list(sizes[:-1])), strict=True):
        a, b = w.input_interval(lo, hi)
        lo, hi = np.clip(a, 0, n), np.clip(b, 0, n)
        out.append((lo, hi))
    return out[::-1]


def split_even(n: int, parts: int) -> np.ndarray:
    """Boundaries of ``parts`` near-equal consecutive intervals of ``[0, n)``: an int64 array of
    ``parts + 1`` edges ``floor(i n / parts)``. Raises :class:`GraphError` when ``parts > n``.

    >>> split_even(10, 4).tolist()
    [0, 2, 5, 7, 10]
    """
    _pos_int(parts, "number of parts")
    if parts > n:
        raise GraphError(f"cannot split {n} elements into {parts} non-empty tiles")
    return (np.arange(parts + 1, dtype=np.int64) * n) // parts


def conv2d(x: np.ndarray, spec: ConvSpec) -> np.ndarray:
    """Reference NCHW convolution (cross-correlation, as ONNX ``Conv``) in numpy.

    ``x`` has shape ``(N, C_in, H, W)``; returns ``(N, C_out, H_out, W_out)`` with
    ``H_out`` from :meth:`ConvSpec.output_hw`. Uses ``sliding_window_view`` and one ``einsum`` per
    group: ``O(N C_out H_out W_out C_in/groups k_h k_w)`` arithmetic.

    Raises
    ------
    GraphError
        Channels not divisible by ``groups`` or not matching the weight.
    """
    wgt = np.asarray(spec.weight)
    n, c, h, w = x.shape
    g = spec.groups
    cout, cpg, kh, kw = wgt.shape
    if c % g or cout % g or c // g != cpg:
        raise GraphError(
            f"conv2d: input channels {c}, groups {g} and weight {wgt.shape} do not match"
        )
    pt, pl, pb, pr = spec.pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    dh, dw = spec.dilation
    sh, sw = spec.stride
    oh, ow = spec.output_hw(h, w)
    ext_h, ext_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    win = np.lib.stride_tricks.sliding_window_view(xp, (ext_h, ext_w), axis=(2, 3))
    win = win[:, :, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]
    opg = cout // g
    outs = []
    for gi in range(g):
        xs = win[:, gi * cpg:(gi + 1) * cpg]
        ws = wgt[gi * opg:(gi + 1) * opg]
        outs.append(np.einsum("nchwij,ocij->nohw", xs, ws, optimize=True))
    y = np.concatenate(outs, axis=1)
    return np.maximum(y, 0) if spec.relu else y


def conv_chain(x: np.ndarray, specs: Sequence[ConvSpec]) -> np.ndarray:
    """Run a chain of :class:`ConvSpec` layers on the whole ``x`` (the untiled reference)."""
    for s in specs:
        x = conv2d(x, s)
    return x


def _chain_sizes(h: int, w: int, specs: Sequence[ConvSpec]):
    hs, ws = [h], [w]
    for s in specs:
        oh, ow = s.output_hw(hs[-1], ws[-1])
        if oh < 1 or ow < 1:
            raise GraphError(f"conv chain: layer output {oh}x{ow} is empty for input {h}x{w}")
        hs.append(oh)
        ws.append(ow)
    return hs, ws


def conv_chain_tiled(x: np.ndarray, specs: Sequence[ConvSpec], tiles: tuple[int, int]):
    """Compute a conv chain tile by tile over a ``tiles = (rows, cols)`` grid of its output.

    For every output tile, :func:`chain_input_interval` gives the input region (the tile plus the
    accumulated halo); each layer is then run **without padding** on a region that is the clipped
    interval with explicit zeros where the unclipped interval leaves the tensor (exactly the
    zeros the untiled layer pads with), so every tile computes its output elements from the same
    inputs as the untiled chain. Returns ``(y, stats)``: ``y`` equals :func:`conv_chain` (up to
    floating-point summation order), ``stats`` has ``input_elements_read`` (sum over tiles of
    the input region sizes, halo included, one batch item and channel) and ``macs`` (sum over
    tiles and layers of the MACs actually computed, recomputed halos included).

    Raises
    ------
    GraphError
        A grid with more tiles than output rows or columns.
    """
    n, c, h, w = x.shape
    hs, ws = _chain_sizes(h, w, specs)
    wins = [s.windows() for s in specs]
    rows, cols = split_even(hs[-1], tiles[0]), split_even(ws[-1], tiles[1])
    rint = chain_input_interval([a for a, _ in wins], hs, rows[:-1], rows[1:])
    cint = chain_input_interval([b for _, b in wins], ws, cols[:-1], cols[1:])
    y = np.zeros((n, specs[-1].weight.shape[0], hs[-1], ws[-1]), dtype=np.result_type(x, *[s.weight for s in specs]))
    read = 0
    macs = 0
    for i in range(tiles[0]):
        for j in range(tiles[1]):
            r0, r1 = int(rint[0][0][i]), int(rint[0][1][i])
            c0, c1 = int(cint[0][0][j]), int(cint[0][1][j])
            cur = x[:, :, r0:r1, c0:c1]
            read += (r1 - r0) * (c1 - c0)
            for li, s in enumerate(specs):
                (wh, ww) = wins[li]
                olo_r, ohi_r = int(rint[li + 1][0][i]), int(rint[li + 1][1][i])
                olo_c, ohi_c = int(cint[li + 1][0][j]), int(cint[li + 1][1][j])
                a_r, b_r = wh.input_interval(olo_r, ohi_r)
                a_c, b_c = ww.input_interval(olo_c, ohi_c)
                ilo_r, ilo_c = int(rint[li][0][i]), int(cint[li][0][j])
                ihi_r, ihi_c = int(rint[li][1][i]), int(cint[li][1][j])
                # zero-pad the stored region out to the unclipped interval [a, b)
                pad = ((0, 0), (0, 0), (ilo_r - a_r, b_r - ihi_r), (ilo_c - a_c, b_c - ihi_c))
                cur = np.pad(cur, pad)
                cur = conv2d(cur, ConvSpec(s.weight, s.stride, (0, 0, 0, 0), s.dilation,
                                           s.groups, s.relu))
                assert cur.shape[2:] == (ohi_r - olo_r, ohi_c - olo_c)
                macs += cur.size * s.weight[0].size
            y[:, :, rows[i]:rows[i + 1], cols[j]:cols[j + 1]] = cur
    return y, {"input_elements_read": read, "macs": macs}


def vector_lanes(vlen_bits: int, itemsize: int) -> int:
    """Elements per vector register: ``VLEN / (8 itemsize)`` (RVV: VLEN=128 and int8 -> 16)."""
    _pos_int(vlen_bits, "VLEN (bits)", 8)
    return max(1, vlen_bits // (8 * _pos_int(itemsize, "itemsize (bytes)")))


def conv_tile_bytes(th: int, tw: int, c_in: int, c_out: int, kernel: int, stride: int = 1,
                    dilation: int = 1, groups: int = 1, itemsize: int = 1) -> int:
    """Working set (bytes) of one conv output tile ``th x tw``: its input region
    ``E_h x E_w x C_in`` (``E = (B - 1) s + (k - 1) d + 1``, halo included), the weights
    ``C_out x C_in/groups x k x k`` and the output tile ``th x tw x C_out`` (seed 002 section
    5.4.4's ``M_tile`` plus the output, seed 000 section 7). ``O(1)``."""
    win = Window(kernel, stride, 0, dilation)
    eh, ew = win.input_interval(0, th)[1], win.input_interval(0, tw)[1]
    return itemsize * (eh * ew * c_in + c_out * (c_in // groups) * kernel * kernel + th * tw * c_out)


def choose_conv_tile(h_out: int, w_out: int, c_in: int, c_out: int, kernel: int, capacity: int,
                     stride: int = 1, dilation: int = 1, groups: int = 1, itemsize: int = 1,
                     vlen_bits: int = 128) -> dict:
    """The conv output tile with the least halo overhead whose working set fits ``capacity``.

    Tile widths are multiples of the vector lanes :func:`vector_lanes` (or the whole row when it
    is narrower), so the inner loop has no masked tail; heights are any ``1..h_out``. This is
    the runtime-adaptive rule of seed 000 sections 7 and 9: call it with the memory available at
    load time. Runs in ``O(h_out x w_out / lanes)`` evaluations of :func:`conv_tile_bytes`
    (numpy, vectorised).

    Returns
    -------
    dict
        ``th``, ``tw`` (elements), ``bytes`` (working set), ``overhead``
        (:func:`halo_overhead`), ``tiles`` (count).

    Raises
    ------
    BudgetError
        Even the smallest aligned tile does not fit; the message gives its working set.
    """
    lanes = vector_lanes(vlen_bits, itemsize)
    widths = np.unique(np.minimum(np.arange(lanes, w_out + lanes, lanes), w_out))
    th = np.arange(1, h_out + 1)[:, None]
    tw = widths[None, :]
    win = Window(kernel, stride, 0, dilation)
    eh, ew = (th - 1) * stride + win.extent, (tw - 1) * stride + win.extent
    wbytes = c_out * (c_in // groups) * kernel * kernel
    ws = itemsize * (eh * ew * c_in + wbytes + th * tw * c_out)
    ok = ws <= capacity
    if not ok.any():
        raise BudgetError(
            f"conv tile: capacity {capacity} bytes is below the smallest working set "
            f"{int(ws.min())} bytes (tile 1 x {int(widths[0])}, weights {wbytes * itemsize} bytes)"
        )
    over = 1.0 - (stride * th * stride * tw) / (eh * ew)
    over = np.where(ok, over, np.inf)
    # least overhead; ties -> fewer tiles (larger area)
    area = np.where(ok, th * tw, 0)
    idx = np.lexsort((-area.ravel(), over.ravel()))[0]
    i, j = divmod(int(idx), len(widths))
    bh, bw = int(th[i, 0]), int(widths[j])
    return {"th": bh, "tw": bw, "bytes": int(ws[i, j]), "overhead": float(over[i, j]),
            "tiles": math.ceil(h_out / bh) * math.ceil(w_out / bw)}


def matmul_block_bytes(k: int, b: int, itemsize: int = 1) -> int:
    """Working set of one ``b x b`` block of ``C = A B`` with inner dimension ``k``: seed 002
    section 5.4.4's ``bk + kb + b^2`` elements, times ``itemsize`` (bytes)."""
    return itemsize * (2 * b * k + b * b)


def choose_matmul_block(m: int, k: int, n: int, capacity: int, itemsize: int = 1,
                        vlen_bits: int = 128) -> dict:
    """Largest square block ``b`` (a multiple of the vector lanes, at most ``max(m, n)``) with
    :func:`matmul_block_bytes` ``<= capacity``. ``O(1)`` (closed form, then alignment).

    Returns ``b``, ``bytes``, ``unblocked_bytes`` (``mk + kn + mn`` elements x itemsize) and
    ``saving`` (``unblocked / blocked``, about ``mn / b^2``). Raises :class:`BudgetError` when even
    ``b = lanes`` does not fit (the message gives that working set).
    """
    lanes = vector_lanes(vlen_bits, itemsize)
    # b^2 + 2kb - cap/itemsize <= 0  ->  b <= -k + sqrt(k^2 + cap/itemsize)
    bmax = int(math.floor(-k + math.sqrt(k * k + capacity / itemsize)))
    b = min(bmax // lanes * lanes, max(m, n))
    if b < 1 or matmul_block_bytes(k, max(b, 1), itemsize) > capacity:
        raise BudgetError(
            f"matmul {m}x{k}x{n}: capacity {capacity} bytes is below the smallest block working "
            f"set {matmul_block_bytes(k, lanes, itemsize)} bytes (b = {lanes})"
        )
    full = itemsize * (m * k + k * n + m * n)
    blk = matmul_block_bytes(k, b, itemsize)
    return {"b": b, "bytes": blk, "unblocked_bytes": full, "saving": full / blk}


def micro_batch_size(batch: int, per_sample_bytes: int, fixed_bytes: int, budget: int) -> int:
    """Largest micro-batch ``m <= batch`` with ``fixed_bytes + m x per_sample_bytes <= budget``
    (seed 002 section 5.4.4: the batch is cut into ``ceil(batch / m)`` micro-batches run one
    after the other). Raises :class:`BudgetError` when one sample does not fit, naming the
    smallest reachable peak ``fixed + per_sample``.

    >>> micro_batch_size(32, 1000, 500, 8600)
    8
    """
    _pos_int(batch, "batch")
    m = (budget - fixed_bytes) // per_sample_bytes if per_sample_bytes else batch
    if m < 1:
        raise BudgetError(
            f"micro-batching: budget {budget} bytes is below the smallest reachable peak "
            f"{fixed_bytes + per_sample_bytes} bytes (one sample)"
        )
    return int(min(m, batch))
