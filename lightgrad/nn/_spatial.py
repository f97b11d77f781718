"""Functional convolution, pooling, interpolation, fold/unfold and attention (``F.conv2d`` ...).

Convolution and pooling run through the primitives of ``lightgrad.function`` (im2col and one
matrix product per convolution), except stride-1 convolutions: ``ConvStride1`` below folds the
bias into the product and computes channels-last, with the input gradient as a full convolution
(its docstring gives the measured choices). Resampling is written as small matrix products along
each spatial axis, so its gradient comes for free; attention is composite. 1-D ops are the 2-D
ops on a height-1 image. Re-exported by ``lightgrad.nn.functional``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import backend as B
from .. import function as Fn
from . import _kernels as K
from ..grad_mode import no_grad
from ..random import _gen
from ..tensor import Tensor, _as_tensor, stack

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "unfold", "fold",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "interpolate", "upsample",
    "upsample_nearest", "upsample_bilinear", "scaled_dot_product_attention",
]

IntOr = int | Sequence[int]


# ---- argument helpers --------------------------------------------------------------------------

def _tuple(v: Any, n: int, name: str) -> tuple[int, ...]:
    """An int or a length-n sequence as an n-tuple of ints (PyTorch's _pair/_single)."""
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, int | np.integer):
        return (int(v),) * n
    t = tuple(int(a) for a in v)
    if len(t) == 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match "
                           f"the convolution dimensions, but got {name}={list(t)}")
    return t


def _batched(x: Tensor, nd: int, name: str) -> tuple[Tensor, bool]:
    """Accept a batched (N, C, *spatial) or unbatched (C, *spatial) input; says which it was."""
    if x.ndim == nd + 2:
        return x, True
    if x.ndim == nd + 1:
        return x.unsqueeze(0), False
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
                       f"input of size: {list(x.shape)}")


def _as_2d(x: Tensor) -> Tensor:
    """(N, C, L) -> (N, C, 1, L): 1-D ops run as 2-D ops on a height-1 image."""
    return x.unsqueeze(2)


# ---- convolution -------------------------------------------------------------------------------

def _conv_pads(padding: Any, k: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...],
               name: str) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from an int, a tuple, 'valid' or 'same' (extra on the far side)."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding != "same":
            raise ValueError(f"Invalid padding string '{padding}', should be one of ('valid', 'same')")
        if any(si != 1 for si in s):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        tot = [di * (ki - 1) for di, ki in zip(d, k)]
        return (tot[0] // 2, tot[0] - tot[0] // 2, tot[1] // 2, tot[1] - tot[1] // 2)
    p = _tuple(padding, 2, "padding")
    if min(p) < 0:
        raise RuntimeError(f"{name}: negative padding is not supported, got padding={list(p)}")
    return (p[0], p[0], p[1], p[1])


def _check_conv(name: str, x: Tensor, w: Tensor, b: Tensor | None, groups: int, cin: int) -> None:
    if w.ndim != x.ndim:
        raise RuntimeError(f"{name}: expected weight to be {x.ndim}-dimensional for input of size "
                           f"{list(x.shape)}, but got weight of size {list(w.shape)}")
    if groups < 1:
        raise RuntimeError(f"non-positive groups is not supported, got groups={groups}")
    if x.dtype != w.dtype or (b is not None and b.dtype != w.dtype):
        got = f"bias type ({b.dtype})" if b is not None and b.dtype != w.dtype else f"weight type ({w.dtype})"
        raise RuntimeError(f"Input type ({x.dtype}) and {got} should be the same")
    if x.shape[1] != cin:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input"
                           f"{list(x.shape)} to have {cin} channels, but got {x.shape[1]} channels instead")


def _conv_out(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...],
              pads: tuple[int, int, int, int]) -> tuple[int, int]:
    ho, wo = K._out_hw(x.shape[2:], k, s, d, pads)
    if ho <= 0 or wo <= 0:
        ph, pw = x.shape[2] + pads[0] + pads[1], x.shape[3] + pads[2] + pads[3]
        raise RuntimeError(f"Calculated padded input size per channel: ({ph} x {pw}). Kernel size: "
                           f"({d[0] * (k[0] - 1) + 1} x {d[1] * (k[1] - 1) + 1}). Kernel size can't be "
                           "greater than actual input size")
    return ho, wo


def _split(a: np.ndarray, shapes: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """A writeable view of ``a`` with each axis i split into the axes ``shapes[i]`` (C order
    inside each axis): the reshape of a sliced buffer, guaranteed to be a view."""
    shape: list[int] = []
    strides: list[int] = []
    for st, sub in zip(a.strides, shapes):
        inner, sts = st, []
        for size in reversed(sub):
            sts.append(inner)
            inner *= size
        shape += sub
        strides += reversed(sts)
    return B.as_strided(a, tuple(shape), tuple(strides))


def _zero_border(xp: np.ndarray, pads: tuple[int, int, int, int], h: int, w: int) -> None:
    """Zero the border strips of a channels-last (N, H', W', C) buffer padded around an h x w interior."""
    pt, _, pl, _ = pads
    for strip in (xp[:, :pt], xp[:, pt + h:], xp[:, pt:pt + h, :pl], xp[:, pt:pt + h, pl + w:]):
        strip.fill(0)


def _windows_last(xp: np.ndarray, k: tuple[int, int], d: tuple[int, int], out_hw: tuple[int, int]) -> np.ndarray:
    """The stride-1 windows of a padded channels-last image, (N, Ho, Wo, kh, kw, C), as a read-only view."""
    s0, s1, s2, s3 = xp.strides
    return B.as_strided(xp, (xp.shape[0], *out_hw, k[0], k[1], xp.shape[3]), (s0, s1, s2, s1 * d[0], s2 * d[1], s3),
                        writeable=False)


def _padded_last(x: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """(N, H, W, C) channels-last copy of x (N, C, H, W), zero-padded by (top, bottom, left,
    right): one copy of the interior, and only the border strips are zeroed."""
    n, c, h, w = x.shape
    pt, pb, pl, pr = pads
    out = B.empty((n, h + pt + pb, w + pl + pr, c), x.dtype)
    _zero_border(out, pads, h, w)
    np.copyto(out[:, pt:pt + h, pl:pl + w], x.transpose(0, 2, 3, 1))
    return out


def _cols_last(xp: np.ndarray, k: tuple[int, int], d: tuple[int, int], out_hw: tuple[int, int],
               extra: int) -> np.ndarray:
    """Stride-1 im2col of a padded channels-last image: (N*Ho*Wo, kh*kw*C + extra), columns in
    (tap row, tap col, channel) order, one copy whose inner runs are C contiguous values (not
    W's handful as in NCHW); ``extra`` trailing columns are left for the caller (a ones column
    makes the bias part of the matrix product)."""
    n, _, _, c = xp.shape
    ho, wo = out_hw
    kk = k[0] * k[1] * c
    cols = B.empty((n * ho * wo, kk + extra), xp.dtype)
    np.copyto(_split(cols[:, :kk], ((n, ho, wo), (k[0], k[1], c))), _windows_last(xp, k, d, out_hw))
    return cols


# Bytes of columns per block of ``_cols_matmul``: a block must still be in cache (L2 here is 2 MiB
# a core) when the product reads it back; 0.25-4 MiB measured, 1 MiB best
_BLOCK_BYTES = 1 << 20


def _cols_matmul(x: np.ndarray, pads: tuple[int, int, int, int], k: tuple[int, int],
                 d: tuple[int, int], out_hw: tuple[int, int], wm: np.ndarray) -> np.ndarray:
    """``_cols_last`` of x (N, C, H, W) zero-padded by ``pads``, times ``wm``: (N*Ho*Wo, O).
    A few images at a time, each block padded channels-last, cut into columns
    and multiplied in buffers reused from block to block, so that the product reads columns
    still in cache instead of all of them written out to memory and read back. Measured on the
    input gradient of a 64x16x14x14 -> 32 channel 3x3 convolution (columns 14 MB): its CNN
    training step 15.9 -> 14.5 ms."""
    n, c, h, w = x.shape
    ho, wo = out_hw
    kk = k[0] * k[1] * c
    rows = ho * wo
    nb = max(1, min(n, _BLOCK_BYTES // (rows * kk * x.itemsize)))
    out = B.empty((n * rows, wm.shape[1]), x.dtype)
    buf = B.empty((nb * rows, kk), x.dtype)
    pt, pb, pl, pr = pads
    xp = B.empty((nb, h + pt + pb, w + pl + pr, c), x.dtype)
    _zero_border(xp, pads, h, w)  # once: each block rewrites only the interior
    inner = xp[:, pt:pt + h, pl:pl + w]
    src = x.transpose(0, 2, 3, 1)
    win = _windows_last(xp, k, d, out_hw)
    dst = _split(buf, ((nb, ho, wo), (k[0], k[1], c)))  # views made once: a block is a slice of each
    for n0 in range(0, n, nb):
        m = min(nb, n - n0)
        np.copyto(inner[:m], src[n0:n0 + m])
        np.copyto(dst[:m], win[:m])
        B.matmul_into(buf[:m * rows], wm, out[n0 * rows:(n0 + m) * rows])
    return out


# Bytes of the per-image products ``_image_products_sum`` holds at once (before summing them)
_SUM_BYTES = 4 << 20


def _image_products_sum(g: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """sum over n of g[n] @ cols[n], for g (N, O, L) and cols (N, L, K): the weight gradient of
    a convolution, (O, K), as one product per image, a bounded chunk of images at a time (the
    products are N*O*K values). Against one long-K product of all columns with g made
    channels-last, it needs no transposed copy of g and each product reads one image's columns:
    the CNN training step (64x16x14x14 -> 32 channels, 3x3) 0.4-0.5 ms faster (of 13)."""
    n, o, _ = g.shape
    nb = max(1, min(n, _SUM_BYTES // (o * cols.shape[2] * g.itemsize)))
    out = B.sum(B.matmul(g[:nb], cols[:nb]), axis=0)
    for n0 in range(nb, n, nb):
        B.iadd(out, B.sum(B.matmul(g[n0:n0 + nb], cols[n0:n0 + nb]), axis=0))
    return out


def _to_first(y: np.ndarray, shape: tuple[int, int, int, int]) -> np.ndarray:
    """(N*H*W, C) channels-last rows as a contiguous (N, C, H, W) array."""
    n, c, h, w = shape
    out = B.empty(shape, y.dtype)
    np.copyto(out, y.reshape(n, h, w, c).transpose(0, 3, 1, 2))
    return out


def _grid_input_grad(g: np.ndarray, w: np.ndarray, x_shape: tuple[int, int, int, int], d: tuple[int, int],
                     pads: tuple[int, int, int, int]) -> np.ndarray:
    """The input gradient (N, C, H, W) of a stride-1 convolution whose padding is at most the
    dilated kernel's reach, from g (N, O, Ho, Wo), as one wide product and kh*kw shifted adds.

    g is laid out channels-first on a flat grid, (O, N*Hg*Wg): each row of Wo values followed by
    zw zeros, each image's Ho rows by zh zero rows, zeros before and after. Then every kernel tap
    (i, j) is a fixed shift of the flat index (a tap that reads outside g reads one of the zeros),
    so the product P = (kh*kw*C, O) @ (O, grid) holds every tap's contribution and the gradient is
    the sum of kh*kw shifted slices of P, adds over runs of the whole grid. Against im2col of the
    padded gradient (``_cols_matmul``) it copies no columns and is one product wide enough for
    both BLAS threads (im2col's blocks of a few images barely use the second): 64x16x14x14 input,
    32 3x3 filters, 2.2 -> 1.5 ms alone, the MNIST CNN training step about 5% faster (with one
    BLAS thread both take the same time). It adds (kh*kw-1)*C values per grid entry where im2col
    copies kh*kw*O, so it is used only with fewer input than output channels."""
    n, o, ho, wo = g.shape
    _, c, h, wd = x_shape
    kh, kw = w.shape[2:]
    pt, pb, pl, pr = pads
    rh, rw = d[0] * (kh - 1), d[1] * (kw - 1)  # the kernel's reach
    zh, zw = max(rh - pt, rh - pb), max(rw - pl, rw - pr)  # rows and columns of zeros between
    hg, wg = ho + zh, wo + zw
    ng = n * hg * wg
    lead = (rh - pt) * wg + rw - pl  # the most negative tap offset, before the grid ...
    tot = lead + ng + pt * wg + pl  # ... and the most positive one, after it
    gp = B.empty((o, tot), g.dtype)
    gp[:, :lead].fill(0)
    gp[:, lead + ng:].fill(0)
    grid = B.reshape(gp[:, lead:lead + ng], (o, n, hg, wg))  # a view (the last axis split): written through
    grid[:, :, ho:].fill(0)
    grid[:, :, :ho, wo:].fill(0)
    np.copyto(grid[:, :, :ho, :wo], g.transpose(1, 0, 2, 3))
    wt = B.empty((kh, kw, c, o), w.dtype)
    np.copyto(wt, w.transpose(2, 3, 1, 0))
    p = B.reshape(B.matmul(B.reshape(wt, (kh * kw * c, o)), gp), (kh * kw, c, tot))
    # gx[h, w] gets tap (i, j) of g[h + pt - i*d0, w + pl - j*d1]: a shift of the flat index
    starts = [lead + (pt - i * d[0]) * wg + pl - j * d[1] for i in range(kh) for j in range(kw)]
    out = B.empty((c, ng), g.dtype)
    if len(starts) == 1:
        np.copyto(out, p[0, :, starts[0]:starts[0] + ng])
    else:
        np.add(p[0, :, starts[0]:starts[0] + ng], p[1, :, starts[1]:starts[1] + ng], out=out)
        for t in range(2, len(starts)):
            B.iadd(out, p[t, :, starts[t]:starts[t] + ng])
    gx = B.empty(x_shape, g.dtype)
    np.copyto(gx, B.reshape(out, (c, n, hg, wg))[:, :, :h, :wd].transpose(1, 0, 2, 3))
    return gx


def _fast_conv(x: Tensor, w: Tensor, s: tuple[int, ...], pads: tuple[int, int, int, int], d: tuple[int, ...],
               groups: int) -> bool:
    """Whether conv2d takes ``ConvStride1``: float, groups 1, stride 1, and padding at most the
    dilated kernel's reach (so that the input gradient is a plain full convolution)."""
    k = w.shape[2:]
    return (groups == 1 and s == (1, 1) and x._data.dtype.kind == "f"
            and pads[0] <= d[0] * (k[0] - 1) and pads[1] <= d[0] * (k[0] - 1)
            and pads[2] <= d[1] * (k[1] - 1) and pads[3] <= d[1] * (k[1] - 1))


# Measured on (64, C, 28, 28) and (64, C, 14, 14) images with 16-32 output channels: below 8
# input channels NCHW columns are the cheaper copy and col2im the cheaper input gradient (the
# full convolution's columns are kh*kw*O wide, col2im adds kh*kw*C values per pixel)
_LAST_MIN_CHANNELS = 8


class ConvStride1(K.Conv2d):
    """Conv2d (groups 1, stride 1) as plain matrix products with the bias folded in: the columns
    carry a row (or column) of ones, the weight matrix the bias, so the forward is one product
    and the weight and bias gradients are products of the gradient with the same columns (one
    per image, summed: ``_image_products_sum``).

    With several input channels the columns are channels-last, (N*Ho*Wo, kh*kw*C + 1): the copy's
    inner runs are C contiguous values (not a handful of W's as in NCHW), and each product is
    one 2-D GEMM. With few channels they are NCHW, (N, C*kh*kw + 1, Ho*Wo), whose product
    already is (N, O, Ho*Wo). With channels-last columns the input gradient is the full
    convolution of the gradient with the flipped kernel instead of col2im's scatter-adds: with
    fewer input than output channels one product over the zero-spaced grid of g and shifted
    adds (``_grid_input_grad``), else channels-last im2col of the padded gradient and GEMM, a
    block of images at a time (``_cols_matmul``). Inputs and outputs stay (N, C, H, W).
    Under create_graph it falls back to Conv2d's differentiable backward.

    Measured (64x16x14x14 input, 32 3x3 filters, float32): forward 2.8 -> 1.7 ms, backward
    6.9 -> 3.7 ms (the input gradient 4.2 -> 2.6 ms, of which col2im's adds were 3.4 ms; the
    grid product then took it to 1.5 ms)."""

    def name(self) -> str:
        return "Conv2dBackward0"

    def forward(self, x, w, b, s, d, pads, groups):
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        k = (kh, kw)
        ho, wo = K._out_hw((h, wd), k, s, d, pads)
        kk = kh * kw * c
        extra = b is not None
        self.last = c >= _LAST_MIN_CHANNELS
        if self.last:
            cols = _cols_last(_padded_last(x, pads), k, d, (ho, wo), extra)
            wm = B.empty((kk + extra, o), w.dtype)  # (kh*kw*C [+1], O)
            np.copyto(B.reshape(wm[:kk], (kh, kw, c, o)), w.transpose(2, 3, 1, 0))  # wm[:kk] is contiguous
            if extra:
                cols[:, kk] = 1
                wm[kk] = b
            out = _to_first(B.matmul(cols, wm), (n, o, ho, wo))
        else:
            cols = B.empty((n, kk + extra, ho * wo), x.dtype)
            np.copyto(_split(cols[:, :kk], ((n,), (c, kh, kw), (ho, wo))),
                      K._windows(K._padded(x, pads), k, s, d, (ho, wo)))
            wm = B.empty((o, kk + extra), w.dtype)  # (O, C*kh*kw [+1])
            np.copyto(wm[:, :kk], B.reshape(w, (o, kk)))
            if extra:
                cols[:, kk] = 1
                wm[:, kk] = b
            out = B.reshape(B.matmul(wm, cols), (n, o, ho, wo))
        self.geom, self.groups = (k, s, d, pads), groups
        self.saved = (x, w, cols)
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            return super().backward(g)  # its formulas recompute NCHW columns from x
        x, w, cols = self.saved
        k, s, d, pads = self.geom
        n, c, h, wd = x.shape
        o, kh, kw = w.shape[0], k[0], k[1]
        kk = kh * kw * c
        ho, wo = g.shape[2:]
        gx = gw = gb = None
        if self.needs(1) or self.needs(2):
            # (O, kh*kw*C [+1]) as one product per image, summed; the columns are (N, Ho*Wo, K)
            # channels-last, (N, K, Ho*Wo) else
            cn = B.reshape(cols, (n, ho * wo, -1)) if self.last else B.swapaxes(cols, 1, 2)
            gwb = _image_products_sum(B.reshape(g, (n, o, ho * wo)), cn)
            if self.needs(1):
                if self.last:
                    gw = B.empty(w.shape, w.dtype)
                    np.copyto(gw, gwb[:, :kk].reshape(o, kh, kw, c).transpose(0, 3, 1, 2))
                else:
                    gw = B.reshape(B.copy(gwb[:, :kk]), w.shape)
            if self.needs(2):
                gb = B.copy(gwb[:, kk])
        if self.needs(0) and not self.last:
            wt = B.swapaxes(B.reshape(w, (o, kk)), 0, 1)  # (C*kh*kw, O)
            gx = K._col2im(B.matmul(wt, B.reshape(g, (n, o, ho * wo))), x.shape, k, s, d, pads)
        elif self.needs(0) and c < o:
            gx = _grid_input_grad(g, w, x.shape, d, pads)
        elif self.needs(0):
            # g padded by the kernel's reach less the forward padding, correlated with the
            # flipped kernel: tap (i, j) of this full convolution is tap (kh-1-i, kw-1-j) of w
            reach = (d[0] * (kh - 1), d[1] * (kw - 1))
            gpads = (reach[0] - pads[0], reach[0] - pads[1], reach[1] - pads[2], reach[1] - pads[3])
            wf = B.empty((kh, kw, o, c), w.dtype)
            np.copyto(wf, w[:, :, ::-1, ::-1].transpose(2, 3, 0, 1))
            wf2 = B.reshape(wf, (kh * kw * o, c))  # (kh*kw*O, C)
            y = _cols_matmul(g, gpads, k, d, (h, wd), wf2)
            gx = _to_first(y, x.shape)
        return gx, gw, gb


def _conv(name: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
          padding: Any, dilation: Any, groups: int) -> Tensor:
    x, batched = _batched(input, nd, name)
    w = weight
    if nd == 1:
        x, w = _as_2d(x), (_as_2d(w) if w.ndim == 3 else w)
        s, d = (1,) + _tuple(stride, 1, "stride"), (1,) + _tuple(dilation, 1, "dilation")
    else:
        s, d = _tuple(stride, 2, "stride"), _tuple(dilation, 2, "dilation")
    if w.ndim != 4:
        raise RuntimeError(f"{name}: expected weight to be {nd + 2}-dimensional, but got weight of size "
                           f"{list(weight.shape)}")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    _check_conv(name, x, w, bias, groups, w.shape[1] * groups)
    if min(s) <= 0:
        raise RuntimeError(f"non-positive stride is not supported, got stride={list(s[-nd:])}")
    k = (w.shape[2], w.shape[3])
    if isinstance(padding, str) or nd == 2:
        pads = _conv_pads(padding, k, s, d, name)
    else:
        p = _tuple(padding, 1, "padding")[0]
        pads = (0, 0, p, p)
    _conv_out(x, k, s, d, pads)
    op = ConvStride1 if _fast_conv(x, w, s, pads, d, groups) else K.Conv2d
    out = op.apply(x, w, bias, s=s, d=d, pads=pads, groups=groups)
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOr = 1,
           padding: IntOr | str = 0, dilation: IntOr = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) of (N, C, H, W) with weight (O, C/groups, kh, kw).

    >>> conv2d(lightgrad.randn(1, 3, 8, 8), lightgrad.randn(4, 3, 3, 3), padding=1).shape
    lightgrad.Size([1, 4, 8, 8])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOr = 1,
           padding: IntOr | str = 0, dilation: IntOr = 1, groups: int = 1) -> Tensor:
    """1-D convolution of (N, C, L) with weight (O, C/groups, k).

    >>> conv1d(lightgrad.randn(1, 2, 10), lightgrad.randn(3, 2, 3)).shape
    lightgrad.Size([1, 3, 8])
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(name: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None,
                    stride: Any, padding: Any, output_padding: Any, groups: int, dilation: Any) -> Tensor:
    x, batched = _batched(input, nd, name)
    w = weight
    if nd == 1:
        x, w = _as_2d(x), (_as_2d(w) if w.ndim == 3 else w)
        s, d = (1,) + _tuple(stride, 1, "stride"), (1,) + _tuple(dilation, 1, "dilation")
        p, op = (0,) + _tuple(padding, 1, "padding"), (0,) + _tuple(output_padding, 1, "output_padding")
    else:
        s, d = _tuple(stride, 2, "stride"), _tuple(dilation, 2, "dilation")
        p, op = _tuple(padding, 2, "padding"), _tuple(output_padding, 2, "output_padding")
    if w.ndim != 4:
        raise RuntimeError(f"{name}: expected weight to be {nd + 2}-dimensional, but got weight of size "
                           f"{list(weight.shape)}")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected the weight's "
                           f"dimension 0 to be divisible by groups={groups}")
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {w.shape[0]} channels, but got {x.shape[1]} "
                           "channels instead")
    _check_conv(name, x, w, bias, groups, w.shape[0])
    for i in range(2):
        if op[i] >= s[i] and op[i] >= d[i]:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(op[-nd:])}, stride={list(s[-nd:])}, "
                               f"dilation={list(d[-nd:])}")
    k = (w.shape[2], w.shape[3])
    out_hw = tuple((x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(2))
    if min(out_hw) <= 0:
        raise RuntimeError(f"Given input size per channel: {list(x.shape[2:])}, calculated output size "
                           f"per channel: {list(out_hw)}. Output size is too small")
    out = K.ConvTranspose2d.apply(x, w, bias, s=s, d=d, pads=(p[0], p[0], p[1], p[1]), groups=groups,
                                   out_hw=out_hw)
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOr = 1, padding: IntOr = 0, output_padding: IntOr = 0, groups: int = 1,
                     dilation: IntOr = 1) -> Tensor:
    """2-D transposed convolution of (N, C_in, H, W) with weight (C_in, C_out/groups, kh, kw).

    >>> conv_transpose2d(lightgrad.randn(1, 4, 5, 5), lightgrad.randn(4, 2, 3, 3), stride=2).shape
    lightgrad.Size([1, 2, 11, 11])
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOr = 1, padding: IntOr = 0, output_padding: IntOr = 0, groups: int = 1,
                     dilation: IntOr = 1) -> Tensor:
    """1-D transposed convolution of (N, C_in, L) with weight (C_in, C_out/groups, k).

    >>> conv_transpose1d(lightgrad.randn(1, 4, 5), lightgrad.randn(4, 2, 3)).shape
    lightgrad.Size([1, 2, 7])
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


# ---- 3-D convolution ---------------------------------------------------------------------------
# A 3-D convolution is one 2-D convolution: the kd depth taps of the input are stacked into the
# channels (within each group, so groups still split them) and the output depths go into the
# batch. The transpose is one 2-D transpose whose kd*O outputs per input depth are then
# scattered to depth z*sd + i*dd by zero-insertion and padding. Both are composite (exact,
# gradients for free) and leave the 2-D paths untouched.

def _check_conv3d(name: str, x: Tensor, w: Tensor, b: Tensor | None, groups: int, transposed: bool) -> None:
    if w.ndim != 5:
        raise RuntimeError(f"{name}: expected weight to be 5-dimensional, but got weight of size {list(w.shape)}")
    if groups < 1:
        raise RuntimeError(f"non-positive groups is not supported, got groups={groups}")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(w.shape)} instead")
    cin = w.shape[0] if transposed else w.shape[1] * groups
    if x.shape[1] != cin:
        pre = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(f"Given {pre}, weight of size {list(w.shape)}, expected input{list(x.shape)} to have "
                           f"{cin} channels, but got {x.shape[1]} channels instead")
    if x.dtype != w.dtype or (b is not None and b.dtype != w.dtype):
        got = f"bias type ({b.dtype})" if b is not None and b.dtype != w.dtype else f"weight type ({w.dtype})"
        raise RuntimeError(f"Input type ({x.dtype}) and {got} should be the same")
    if b is not None and tuple(b.shape) != (w.shape[1] * groups if transposed else w.shape[0],):
        want = w.shape[1] * groups if transposed else w.shape[0]
        raise RuntimeError(f"Given weight of size {list(w.shape)}, expected bias to be 1-dimensional with {want} "
                           f"elements, but got bias of size {list(b.shape)} instead")


def _stride_dilation3(stride: IntOr, dilation: IntOr) -> tuple[tuple[int, ...], tuple[int, ...]]:
    s, d = _tuple(stride, 3, "stride"), _tuple(dilation, 3, "dilation")
    if min(s) <= 0:
        raise RuntimeError(f"non-positive stride is not supported, got stride={list(s)}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, got dilation={list(d)}")
    return s, d


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOr = 1,
           padding: IntOr | str = 0, dilation: IntOr = 1, groups: int = 1) -> Tensor:
    """3-D convolution of (N, C, D, H, W) with weight (O, C/groups, kd, kh, kw).

    >>> conv3d(lightgrad.randn(1, 2, 5, 6, 6), lightgrad.randn(4, 2, 3, 3, 3), padding=1).shape
    lightgrad.Size([1, 4, 5, 6, 6])
    """
    x, batched = _batched(input, 3, "conv3d")
    w = weight
    _check_conv3d("conv3d", x, w, bias, groups, False)
    s, d = _stride_dilation3(stride, dilation)
    k = tuple(w.shape[2:])
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"Invalid padding string '{padding}', should be one of ('valid', 'same')")
        if padding == "same" and any(si != 1 for si in s):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        tot = [di * (ki - 1) if padding == "same" else 0 for di, ki in zip(d, k)]
        pairs = [(t // 2, t - t // 2) for t in tot]
    else:
        p = _tuple(padding, 3, "padding")
        if min(p) < 0:
            raise RuntimeError("negative padding is not supported")
        pairs = [(pi, pi) for pi in p]
    padded = [x.shape[2 + i] + pairs[i][0] + pairs[i][1] for i in range(3)]
    reach = [d[i] * (k[i] - 1) + 1 for i in range(3)]
    if any(padded[i] < reach[i] for i in range(3)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, reach))}). Kernel size can't be greater than actual "
                           "input size")
    n, c = x.shape[:2]
    o, cg, kd = w.shape[0], w.shape[1], k[0]
    do = (padded[0] - reach[0]) // s[0] + 1
    xp = x
    if pairs[0] != (0, 0):
        xp = Fn.Pad.apply(x, pads=((0, 0), (0, 0), pairs[0], (0, 0), (0, 0)), value=0)
    taps = [xp[:, :, i * d[0]: i * d[0] + s[0] * (do - 1) + 1: s[0]] for i in range(kd)]  # (N, C, Do, H, W)
    h, wd = x.shape[3], x.shape[4]
    xs = taps[0].unsqueeze(1) if kd == 1 else stack(taps, 1)  # (N, kd, C, Do, H, W)
    xs = xs.reshape(n, kd, groups, cg, do, h, wd).permute(0, 4, 2, 1, 3, 5, 6)  # (N, Do, G, kd, Cg, H, W)
    x2 = xs.reshape(n * do, groups * kd * cg, h, wd)
    w2 = w.permute(0, 2, 1, 3, 4).reshape(o, kd * cg, k[1], k[2])  # (O, kd*Cg, kh, kw): taps match x2
    if pairs[1][0] == pairs[1][1] and pairs[2][0] == pairs[2][1]:
        p2: Any = (pairs[1][0], pairs[2][0])
    else:
        p2 = "same"  # only 'same' pads asymmetrically, and conv2d splits it the same way
    y = _conv("conv2d", 2, x2, w2, bias, s[1:], p2, d[1:], groups)  # (N*Do, O, Ho, Wo)
    out = y.reshape(n, do, o, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)
    return out if batched else out.squeeze(0)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOr = 1, padding: IntOr = 0, output_padding: IntOr = 0, groups: int = 1,
                     dilation: IntOr = 1) -> Tensor:
    """3-D transposed convolution of (N, C_in, D, H, W) with weight (C_in, C_out/groups, kd, kh, kw).

    >>> conv_transpose3d(lightgrad.randn(1, 4, 3, 5, 5), lightgrad.randn(4, 2, 3, 3, 3), stride=2).shape
    lightgrad.Size([1, 2, 7, 11, 11])
    """
    x, batched = _batched(input, 3, "conv_transpose3d")
    w = weight
    _check_conv3d("conv_transpose3d", x, w, bias, groups, True)
    s, d = _stride_dilation3(stride, dilation)
    p, op = _tuple(padding, 3, "padding"), _tuple(output_padding, 3, "output_padding")
    if min(p) < 0:
        raise RuntimeError("negative padding is not supported")
    if any(op[i] >= s[i] and op[i] >= d[i] for i in range(3)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={list(op)}, stride={list(s)}, dilation={list(d)}")
    k = tuple(w.shape[2:])
    size = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(3)]
    if min(size) <= 0:
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated "
                           f"output size per channel: ({' x '.join(map(str, size))}). Output size is too small")
    n, c, dep, h, wd = x.shape
    og, kd = w.shape[1], k[0]
    o = og * groups
    x2 = x.permute(0, 2, 1, 3, 4).reshape(n * dep, c, h, wd)
    w2 = w.permute(0, 2, 1, 3, 4).reshape(c, kd * og, k[1], k[2])  # per group, outputs ordered (kd, Og)
    y = _conv_transpose("conv_transpose2d", 2, x2, w2, None, s[1:], p[1:], op[1:], groups, d[1:])
    ho, wo = y.shape[2], y.shape[3]
    y = y.reshape(n, dep, groups, kd, og, ho, wo)
    out: Tensor | None = None
    for i in range(kd):
        z = y[:, :, :, i].reshape(n, dep, o, ho, wo).permute(0, 2, 1, 3, 4)  # (N, O, D, Ho, Wo)
        if s[0] > 1:  # zero-insertion: input depth z lands at z*sd
            z = Fn.Pad.apply(z.unsqueeze(3), pads=((0, 0),) * 3 + ((0, s[0] - 1), (0, 0), (0, 0)), value=0)
            z = z.reshape(n, o, dep * s[0], ho, wo)
        # tap i starts at i*dd - pd of the output: keep the depths that land inside it
        lo = i * d[0] - p[0]
        a, b = max(-lo, 0), min(z.shape[2], size[0] - lo)
        if a >= b:
            continue
        z = z[:, :, a:b] if (a, b) != (0, z.shape[2]) else z
        z = Fn.Pad.apply(z, pads=((0, 0), (0, 0), (lo + a, size[0] - lo - b), (0, 0), (0, 0)), value=0)
        out = z if out is None else out + z
    if out is None:  # every tap fell into the cropped padding
        out = y.sum() * 0 + x.new_zeros((n, o, size[0], ho, wo))
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1, 1)
    return out if batched else out.squeeze(0)


# ---- fold / unfold -----------------------------------------------------------------------------

def unfold(input: Tensor, kernel_size: IntOr, dilation: IntOr = 1, padding: IntOr = 0,
           stride: IntOr = 1) -> Tensor:
    """Sliding local blocks (im2col): (N, C, H, W) -> (N, C*kh*kw, L).

    >>> unfold(lightgrad.randn(1, 2, 4, 4), 2).shape
    lightgrad.Size([1, 8, 9])
    """
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x = input if input.ndim == 4 else input.unsqueeze(0)
    k, d = _tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation")
    p, s = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    pads = (p[0], p[0], p[1], p[1])
    _conv_out(x, k, s, d, pads)
    out = K.Unfold.apply(x, k=k, s=s, d=d, pads=pads)
    return out if input.ndim == 4 else out.squeeze(0)


def fold(input: Tensor, output_size: IntOr, kernel_size: IntOr, dilation: IntOr = 1,
         padding: IntOr = 0, stride: IntOr = 1) -> Tensor:
    """Sum sliding local blocks into an image (col2im): (N, C*kh*kw, L) -> (N, C, H, W).

    >>> fold(lightgrad.ones(1, 4, 9), (4, 4), 2).shape
    lightgrad.Size([1, 1, 4, 4])
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.ndim}D)")
    x = input if input.ndim == 3 else input.unsqueeze(0)
    hw, k = _tuple(output_size, 2, "output_size"), _tuple(kernel_size, 2, "kernel_size")
    d, p, s = _tuple(dilation, 2, "dilation"), _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    pads = (p[0], p[0], p[1], p[1])
    kk = k[0] * k[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={k}")
    blocks = K._out_hw(hw, k, s, d, pads)
    if x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size={hw}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
                           f"expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    out = K.Fold.apply(x, shape=(x.shape[0], x.shape[1] // kk, *hw), k=k, s=s, d=d, pads=pads)
    return out if input.ndim == 3 else out.squeeze(0)


# ---- pooling -----------------------------------------------------------------------------------

def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: with ceil_mode the last window must start inside the input."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_geometry(name: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                   ceil_mode: bool, nd: int) -> tuple[Any, ...]:
    """Kernel, stride, dilation, (top, bottom, left, right) pads and output size of a 2-D pool."""
    def pair(v: Any, what: str) -> tuple[int, int]:
        t = _tuple(v, nd, what)
        return (1,) + t if nd == 1 else t  # type: ignore[return-value]
    k = pair(kernel_size, "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not len(stride)) else pair(stride, "stride")
    d = pair(dilation, "dilation")
    p = (0,) + _tuple(padding, 1, "padding") if nd == 1 else _tuple(padding, 2, "padding")
    if min(k) <= 0 or min(s) <= 0 or min(d) <= 0:
        raise RuntimeError(f"{name}: kernel_size, stride and dilation must be greater than zero, but got "
                           f"kernel_size={list(k[-nd:])}, stride={list(s[-nd:])}, dilation={list(d[-nd:])}")
    for i in range(2):
        if p[i] < 0 or p[i] > (d[i] * (k[i] - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
        if p[i] > k[i] // 2:
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                               f"pad={p[i]} and kernel_size={k[i]}")
    out = tuple(_pool_out(x.shape[2 + i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(2))
    if min(out) <= 0:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({x.shape[1]}x{out[0]}x{out[1]}). Output size is too small")
    # extra far-side padding so that ceil_mode's last, partial window exists
    extra = [max(0, (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (x.shape[2 + i] + 2 * p[i])) for i in range(2)]
    pads = (p[0], p[0] + extra[0], p[1], p[1] + extra[1])
    return k, s, d, p, pads, out


def _max_pool(name: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    x, batched = _batched(input, nd, name)
    if nd == 1:
        x = _as_2d(x)
    k, s, d, _, pads, out_hw = _pool_geometry(name, x, kernel_size, stride, padding, dilation, ceil_mode, nd)
    sink: list[Any] | None = [] if return_indices else None
    out = K.MaxPool2d.apply(x, k=k, s=s, d=d, pads=pads, out_hw=out_hw, sink=sink)
    idx = Tensor._make(sink[0]) if sink is not None else None
    if nd == 1:
        out = out.squeeze(2)
        idx = idx.squeeze(2) if idx is not None else None
    if not batched:
        out = out.squeeze(0)
        idx = idx.squeeze(0) if idx is not None else None
    return (out, idx) if return_indices else out


def max_pool2d(input: Tensor, kernel_size: IntOr, stride: IntOr | None = None, padding: IntOr = 0,
               dilation: IntOr = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """2-D max pooling; with ``return_indices`` also the argmax as flat indices into each H*W plane.

    >>> max_pool2d(lightgrad.randn(1, 1, 4, 4), 2).shape
    lightgrad.Size([1, 1, 2, 2])
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d(input: Tensor, kernel_size: IntOr, stride: IntOr | None = None, padding: IntOr = 0,
               dilation: IntOr = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """1-D max pooling over (N, C, L).

    >>> max_pool1d(lightgrad.randn(1, 1, 6), 2).shape
    lightgrad.Size([1, 1, 3])
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_divisor(size: int, out: int, k: int, s: int, p: int, include_pad: bool) -> np.ndarray:
    """Per-output window sizes along one axis, as PyTorch's avg_pool counts them."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if include_pad:
        return (end - start).astype(np.float64)
    return (np.minimum(end, size) - np.maximum(start, 0)).astype(np.float64)


def _avg_pool(name: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> Tensor:
    x, batched = _batched(input, nd, name)
    if nd == 1:
        x = _as_2d(x)
    k, s, _, p, pads, out_hw = _pool_geometry(name, x, kernel_size, stride, padding, 1, ceil_mode, nd)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        div: Any = float(divisor_override)
    else:
        dh, dw = (_avg_divisor(x.shape[2 + i], out_hw[i], k[i], s[i], p[i], count_include_pad) for i in range(2))
        div = np.outer(dh, dw).astype(x._data.dtype)
        if (div == div.flat[0]).all():
            div = float(div.flat[0])
    out = K.AvgPool2d.apply(x, k=k, s=s, pads=pads, out_hw=out_hw, div=div)
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


def avg_pool2d(input: Tensor, kernel_size: IntOr, stride: IntOr | None = None, padding: IntOr = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-D average pooling.

    >>> avg_pool2d(lightgrad.ones(1, 1, 4, 4), 2)
    tensor([[[[1., 1.],
              [1., 1.]]]])
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool1d(input: Tensor, kernel_size: IntOr, stride: IntOr | None = None, padding: IntOr = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-D average pooling over (N, C, L).

    >>> avg_pool1d(lightgrad.ones(1, 1, 4), 2)
    tensor([[[1., 1.]]])
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def _adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Window [start, end) of each output: floor(i*size/out) to ceil((i+1)*size/out)."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


@functools.lru_cache(maxsize=64)
def _adaptive_matrix(size: int, out: int, dtype: Any) -> np.ndarray:
    """(out, size) matrix averaging each adaptive window: pooling along an axis is one matmul.
    Cached and read-only (a constant of the shapes: lightgrad.compile keeps such arrays as they are)."""
    start, end = _adaptive_bounds(size, out)
    cols = np.arange(size)
    m = (cols >= start[:, None]) & (cols < end[:, None])
    m = (m / (end - start)[:, None]).astype(dtype)
    m.flags.writeable = False
    return m


def _out_sizes(output_size: Any, x: Tensor, nd: int) -> tuple[int, ...]:
    if isinstance(output_size, int | np.integer) or output_size is None:
        output_size = (output_size,) * nd
    sizes = tuple(x.shape[x.ndim - nd + i] if o is None else int(o) for i, o in enumerate(output_size))
    if len(sizes) != nd:
        raise ValueError(f"adaptive pooling: output_size must be an int or {nd} values, got {output_size}")
    if min(sizes) < 0:
        raise RuntimeError(f"adaptive pooling: elements of output_size must be greater than or equal to 0, "
                           f"but received {list(sizes)}")
    return sizes


def _along(x: Tensor, axis: int, m: np.ndarray) -> Tensor:
    """Apply matrix m (out, size) along spatial ``axis`` of x: one broadcast matmul on a 3-D view."""
    shape = x.shape
    pre, post = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    y = Tensor._make(m).matmul(x.reshape(pre, shape[axis], post))
    return y.reshape(*shape[:axis], m.shape[0], *shape[axis + 1:])


def _adaptive_avg(name: str, nd: int, input: Tensor, output_size: Any) -> Tensor:
    x, batched = _batched(input, nd, name)
    sizes = _out_sizes(output_size, x, nd)
    for i, o in enumerate(sizes):
        ax = 2 + i
        n = x.shape[ax]
        if o != n:
            x = _along(x, ax, _adaptive_matrix(n, o, x._data.dtype))
    return x if batched else x.squeeze(0)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average over adaptive windows to a fixed (H, W) output (None keeps a size).

    >>> adaptive_avg_pool2d(lightgrad.randn(1, 3, 7, 9), 1).shape
    lightgrad.Size([1, 3, 1, 1])
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average over adaptive windows to a fixed length.

    >>> adaptive_avg_pool1d(lightgrad.randn(1, 3, 10), 4).shape
    lightgrad.Size([1, 3, 4])
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def _adaptive_max(name: str, nd: int, input: Tensor, output_size: Any, return_indices: bool) -> Any:
    x, batched = _batched(input, nd, name)
    if nd == 1:
        x = _as_2d(x)
    sizes = _out_sizes(output_size, x, 2) if nd == 2 else (1,) + _out_sizes(output_size, input, 1)
    h, w = x.shape[2:]
    # gather every window padded to the largest window by repeating its last element (which
    # leaves the max and its first position unchanged), then one max over the window axis
    (sh, eh), (sw, ew) = _adaptive_bounds(h, sizes[0]), _adaptive_bounds(w, sizes[1])
    kh, kw = int((eh - sh).max()), int((ew - sw).max())
    ih = np.minimum(sh[:, None] + np.arange(kh), eh[:, None] - 1)  # (Ho, kh)
    iw = np.minimum(sw[:, None] + np.arange(kw), ew[:, None] - 1)  # (Wo, kw)
    flat = (ih[:, None, :, None] * w + iw[None, :, None, :]).reshape(-1)  # (Ho*Wo*kh*kw,)
    n, c = x.shape[:2]
    win = x.reshape(n, c, h * w)[:, :, flat].reshape(n, c, sizes[0], sizes[1], kh * kw)
    out, arg = win.max(dim=-1)
    idx = None
    if return_indices:
        table = flat.reshape(sizes[0], sizes[1], kh * kw)
        a = arg._data
        idx = Tensor._make(np.take_along_axis(np.broadcast_to(table, a.shape + (kh * kw,)), a[..., None], -1)[..., 0])
    if nd == 1:
        out = out.squeeze(2)
        idx = idx.squeeze(2) if idx is not None else None
    if not batched:
        out = out.squeeze(0)
        idx = idx.squeeze(0) if idx is not None else None
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over adaptive windows to a fixed (H, W) output; optionally with flat argmax indices.

    >>> adaptive_max_pool2d(lightgrad.randn(1, 3, 7, 9), (2, 3)).shape
    lightgrad.Size([1, 3, 2, 3])
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over adaptive windows to a fixed length.

    >>> adaptive_max_pool1d(lightgrad.randn(1, 3, 10), 4).shape
    lightgrad.Size([1, 3, 4])
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


# ---- interpolation -----------------------------------------------------------------------------

_MODES = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "linear": (1,), "bilinear": (2,),
          "bicubic": (2,), "trilinear": (3,), "area": (1, 2, 3)}


def _linear_matrix(size: int, out: int, scale: float | None, align_corners: bool, dtype: Any) -> np.ndarray:
    """(out, size) matrix of linear interpolation weights (PyTorch's source-index rule)."""
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        src = dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        r = 1.0 / scale if scale else size / out
        src = np.maximum((dst + 0.5) * r - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    lam = src - i0
    i1 = np.minimum(i0 + 1, size - 1)
    m = np.zeros((out, size))
    np.add.at(m, (np.arange(out), i0), 1 - lam)
    np.add.at(m, (np.arange(out), i1), lam)
    return m.astype(dtype)


def _cubic_matrix(size: int, out: int, scale: float | None, align_corners: bool, dtype: Any) -> np.ndarray:
    """(out, size) matrix of bicubic weights (Keys' kernel, A = -0.75, clamped borders, as PyTorch)."""
    a = -0.75
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        src = dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        src = (dst + 0.5) * (1.0 / scale if scale else size / out) - 0.5
    i0 = np.floor(src).astype(np.int64)
    t = src - i0

    def near(x: np.ndarray) -> np.ndarray:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    m = np.zeros((out, size))
    for j, wgt in enumerate((far(t + 1), near(t), near(1 - t), far(2 - t))):
        np.add.at(m, (np.arange(out), np.clip(i0 - 1 + j, 0, size - 1)), wgt)
    return m.astype(dtype)


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) to ``size`` or by ``scale_factor``.

    >>> interpolate(lightgrad.randn(1, 1, 4, 4), scale_factor=2, mode="bilinear").shape
    lightgrad.Size([1, 1, 8, 8])
    """
    if mode not in _MODES:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode is not supported; expected "
                                  f"one of {sorted(_MODES)}")
    nd = input.ndim - 2
    if nd not in _MODES[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{' or '.join(str(n + 2) for n in _MODES[mode])}D input")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by lightgrad")
    if align_corners is not None and mode not in ("linear", "bilinear", "bicubic", "trilinear"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = input.shape[2:]
    if size is not None:
        out = _tuple(size, nd, "size")
        scales: tuple[float | None, ...] = (None,) * nd
    else:
        sf = tuple(float(v) for v in scale_factor) if isinstance(scale_factor, Sequence) else (float(scale_factor),) * nd
        if len(sf) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                             f"input with spatial dimensions of {list(spatial)} and scale_factor of shape {sf}.")
        out = tuple(int(math.floor(n * f)) for n, f in zip(spatial, sf))
        scales = (None,) * nd if recompute_scale_factor else sf
    if min(out) <= 0:
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input {list(spatial)} "
                           f"and output {list(out)}")
    x = input
    ac = bool(align_corners)
    dtype = x._data.dtype
    for i, (n, o, sc) in enumerate(zip(spatial, out, scales)):
        ax = 2 + i
        if mode == "area":
            if n != o:
                x = _along(x, ax, _adaptive_matrix(n, o, dtype))
        elif mode in ("nearest", "nearest-exact"):
            x = _nearest(x, ax, n, o, sc, mode == "nearest-exact")
        elif mode == "bicubic":
            x = _along(x, ax, _cubic_matrix(n, o, sc, ac, dtype))
        elif n != o or (not ac and sc is not None and sc != 1.0):
            x = _along(x, ax, _linear_matrix(n, o, sc, ac, dtype))
    return x


def _nearest(x: Tensor, ax: int, n: int, o: int, scale: float | None, exact: bool) -> Tensor:
    """Nearest-neighbour resampling along one axis: an integer upscale repeats each element via
    expand (whose gradient is a sum); other sizes gather source indices (float32 math, as PyTorch)."""
    if o == n and (scale is None or exact or scale == 1.0):
        return x
    if o % n == 0 and (scale is None or scale == o // n):
        f = o // n
        shape = x.shape
        y = x.unsqueeze(ax + 1).expand(*shape[:ax + 1], f, *shape[ax + 1:])
        return y.reshape(*shape[:ax], o, *shape[ax + 1:])
    r = np.float32(1.0 / scale) if scale else np.float32(n) / np.float32(o)
    dst = np.arange(o, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    src = np.minimum(np.floor(dst * r).astype(np.int64), n - 1)
    return x.index_select(ax, Tensor._make(src))


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of ``interpolate``.

    >>> upsample(lightgrad.randn(1, 1, 2, 2), scale_factor=2).shape
    lightgrad.Size([1, 1, 4, 4])
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """``interpolate(..., mode='nearest')``.

    >>> upsample_nearest(lightgrad.randn(1, 1, 2, 2), scale_factor=2).shape
    lightgrad.Size([1, 1, 4, 4])
    """
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """``interpolate(..., mode='bilinear', align_corners=True)``.

    >>> upsample_bilinear(lightgrad.randn(1, 1, 2, 2), scale_factor=2).shape
    lightgrad.Size([1, 1, 4, 4])
    """
    return interpolate(input, size, scale_factor, "bilinear", align_corners=True)


# ---- attention ---------------------------------------------------------------------------------

def _dropout(x: Tensor, p: float) -> Tensor:
    """Inverted dropout with the default generator (kept local: functional imports this module)."""
    if p <= 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    keep = _gen(None).random(x.shape) >= p
    return x * Tensor._make((keep / (1.0 - p)).astype(x._data.dtype))


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over (..., L, E) queries and (..., S, E) keys; a bool mask
    is True where attention is allowed, a float mask is added to the scores.

    >>> q = lightgrad.randn(2, 4, 5, 8); scaled_dot_product_attention(q, q, q, is_causal=True).shape
    lightgrad.Size([2, 4, 5, 8])
    """
    q, k, v = _as_tensor(query), _as_tensor(key), _as_tensor(value)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"scaled_dot_product_attention: expected query, key and value to be at least 2-D, "
                           f"got {list(q.shape)}, {list(k.shape)} and {list(v.shape)}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: expected query (..., L, E), key (..., S, E) and "
                           f"value (..., S, Ev), got {list(q.shape)}, {list(k.shape)} and {list(v.shape)}")
    if is_causal and attn_mask is not None:
        # PyTorch documents this as an error (its fused CPU kernel alone accepts it)
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if hq % hk:
            raise RuntimeError(f"number of heads in key/value must divide number of heads in query, "
                               f"got {hk} and {hq}")
        k, v = k.repeat_interleave(hq // hk, -3), v.repeat_interleave(hq // hk, -3)
    L, S = q.shape[-2], k.shape[-2]
    sc = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q.matmul(k.transpose(-2, -1)) * sc  # (..., L, S)
    if is_causal:
        scores = scores.masked_fill(Tensor._make(B.logical_not(B.tril_mask(L, S, dtype=bool))), -math.inf)
    if attn_mask is not None:
        m = _as_tensor(attn_mask)
        if m._data.dtype == np.bool_:
            scores = scores.masked_fill(m.logical_not(), -math.inf)
        else:
            scores = scores + m
    if is_causal or attn_mask is not None:
        # a query that may attend to nothing gets zeros, not NaN (PyTorch's safe softmax); its
        # scores are zeroed first so that no NaN reaches the gradient either. Done whether or not
        # such a row exists: no branch on values (lightgrad.compile replays one path)
        with no_grad():
            dead = (scores == -math.inf).all(-1, keepdim=True)
        attn = scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    else:
        attn = scores.softmax(-1)
    if dropout_p > 0.0:
        attn = _dropout(attn, dropout_p)
    return attn.matmul(v)
