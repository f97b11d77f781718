"""Pooling: max, average, adaptive, Lp and fractional max pools in 1-D, 2-D and 3-D, and max unpooling.

Max and average pools run as window kernels; adaptive average pooling is a small matrix product
along each axis; the 3-D pools run as two 2-D pools, because max and box sums are separable
across axes."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from ... import backend as B
from ...backend import random as R
from ...random import _gen
from ...tensor import Tensor
from . import _window_kernels as K
from ._common import IntOr, _as_2d, _batched, _tuple
from .activation import relu

# ---- max and average pooling -------------------------------------------------------------------

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


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool1d(..., return_indices=True)``: (values, argmax positions along L)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool2d(..., return_indices=True)``: (values, flat argmax positions in each H*W plane)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_divisor(size: int, out: int, k: int, s: int, p: int, include_pad: bool) -> B.ndarray:
    """Per-output window sizes along one axis, as PyTorch's avg_pool counts them."""
    start = B.arange(out) * s - p
    end = B.xp.minimum(start + k, size + p)
    if include_pad:
        return (end - start).astype(B.xp.float64)
    return (B.xp.minimum(end, size) - B.xp.maximum(start, 0)).astype(B.xp.float64)


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
        div = B.xp.outer(dh, dw).astype(x._data.dtype)
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


# ---- 3-D pooling -------------------------------------------------------------------------------

def _pool3d_input(name: str, input: Tensor) -> tuple[Tensor, bool]:
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{name}: Expected 4D or 5D (batch mode) tensor for input, but got: "
                           f"{list(input.shape)}")
    return _batched(input, 3, name)


def _merge3d(idx_hw: Tensor, idx_d: Tensor, hw: int, plane: int) -> Tensor:
    """Flat D*H*W argmax from a first pass's H*W indices (N, C, D, P) and the second pass's (N, C, Do, P)
    positions in its (D, P) plane."""
    d = Tensor._make(idx_d._data // plane)
    j = idx_hw.gather(2, d)
    return Tensor._make(d._data * hw + j._data)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """3-D max pooling over (N, C, D, H, W): a 2-D pool over (H, W), then one over D.

    >>> F.max_pool3d(lightgrad.randn(1, 1, 4, 4, 4), 2).shape
    lightgrad.Size([1, 1, 2, 2, 2])
    """
    x, batched = _pool3d_input("max_pool3d", input)
    k = _tuple(kernel_size, 3, "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not len(stride)) else _tuple(stride, 3, "stride")
    p, dl = _tuple(padding, 3, "padding"), _tuple(dilation, 3, "dilation")
    n, c, dd, h, w = x.shape
    y, i1 = max_pool2d(x.reshape(n, c * dd, h, w), k[1:], s[1:], p[1:], dl[1:], ceil_mode, True)
    ho, wo = y.shape[2:]
    y, i2 = max_pool2d(y.reshape(n, c, dd, ho * wo), (k[0], 1), (s[0], 1), (p[0], 0), (dl[0], 1), ceil_mode, True)
    out = y.reshape(n, c, -1, ho, wo)
    if not batched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    idx = _merge3d(i1.reshape(n, c, dd, ho * wo), i2, h * w, ho * wo).reshape(n, c, -1, ho, wo)
    return out, idx if batched else idx.squeeze(0)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool3d(..., return_indices=True)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-D average pooling over (N, C, D, H, W): window sums and counts factor over the axes.

    >>> F.avg_pool3d(lightgrad.ones(1, 1, 4, 4, 4), 2).shape
    lightgrad.Size([1, 1, 2, 2, 2])
    """
    x, batched = _pool3d_input("avg_pool3d", input)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k = _tuple(kernel_size, 3, "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not len(stride)) else _tuple(stride, 3, "stride")
    p = _tuple(padding, 3, "padding")
    n, c, dd, h, w = x.shape
    div = None if divisor_override is None else 1  # sums, divided once at the end
    y = avg_pool2d(x.reshape(n, c * dd, h, w), k[1:], s[1:], p[1:], ceil_mode, count_include_pad, div)
    ho, wo = y.shape[2:]
    y = avg_pool2d(y.reshape(n, c, dd, ho * wo), (k[0], 1), (s[0], 1), (p[0], 0), ceil_mode, count_include_pad, div)
    out = y.reshape(n, c, -1, ho, wo)
    if divisor_override is not None:
        out = out / divisor_override
    return out if batched else out.squeeze(0)


# ---- adaptive pooling --------------------------------------------------------------------------

def _adaptive_bounds(size: int, out: int) -> tuple[B.ndarray, B.ndarray]:
    """Window [start, end) of each output: floor(i*size/out) to ceil((i+1)*size/out)."""
    i = B.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


@functools.lru_cache(maxsize=64)
def _adaptive_matrix(size: int, out: int, dtype: Any) -> B.ndarray:
    """(out, size) matrix averaging each adaptive window: pooling along an axis is one matmul.
    Cached and read-only (a constant of the shapes: lightgrad.compile keeps such arrays as they are)."""
    start, end = _adaptive_bounds(size, out)
    cols = B.arange(size)
    m = (cols >= start[:, None]) & (cols < end[:, None])
    m = (m / (end - start)[:, None]).astype(dtype)
    m.flags.writeable = False
    return m


def _out_sizes(output_size: Any, x: Tensor, nd: int) -> tuple[int, ...]:
    if isinstance(output_size, int | B.xp.integer) or output_size is None:
        output_size = (output_size,) * nd
    sizes = tuple(x.shape[x.ndim - nd + i] if o is None else int(o) for i, o in enumerate(output_size))
    if len(sizes) != nd:
        raise ValueError(f"adaptive pooling: output_size must be an int or {nd} values, got {output_size}")
    if min(sizes) < 0:
        raise RuntimeError(f"adaptive pooling: elements of output_size must be greater than or equal to 0, "
                           f"but received {list(sizes)}")
    return sizes


def _along(x: Tensor, axis: int, m: B.ndarray) -> Tensor:
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


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average over adaptive windows to a fixed (D, H, W) output (None keeps a size).

    >>> F.adaptive_avg_pool3d(lightgrad.randn(1, 2, 5, 6, 7), 1).shape
    lightgrad.Size([1, 2, 1, 1, 1])
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


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
    ih = B.xp.minimum(sh[:, None] + B.arange(kh), eh[:, None] - 1)  # (Ho, kh)
    iw = B.xp.minimum(sw[:, None] + B.arange(kw), ew[:, None] - 1)  # (Wo, kw)
    flat = (ih[:, None, :, None] * w + iw[None, :, None, :]).reshape(-1)  # (Ho*Wo*kh*kw,)
    n, c = x.shape[:2]
    win = x.reshape(n, c, h * w)[:, :, flat].reshape(n, c, sizes[0], sizes[1], kh * kw)
    out, arg = win.max(dim=-1)
    idx = None
    if return_indices:
        table = flat.reshape(sizes[0], sizes[1], kh * kw)
        a = arg._data
        idx = Tensor._make(B.take_along_axis(B.broadcast_to(table, a.shape + (kh * kw,)), a[..., None], -1)[..., 0])
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


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over adaptive windows to a fixed (D, H, W) output: a 2-D adaptive pool over (H, W), then over D.

    >>> F.adaptive_max_pool3d(lightgrad.randn(1, 2, 5, 6, 7), 2).shape
    lightgrad.Size([1, 2, 2, 2, 2])
    """
    x, batched = _pool3d_input("adaptive_max_pool3d", input)
    if isinstance(output_size, int | B.xp.integer) or output_size is None:
        output_size = (output_size,) * 3
    if len(output_size) != 3:
        raise ValueError(f"adaptive_max_pool3d: output_size must be an int or 3 values, got {output_size}")
    o = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size))
    n, c, dd, h, w = x.shape
    y, i1 = adaptive_max_pool2d(x.reshape(n, c * dd, h, w), o[1:], True)
    ho, wo = y.shape[2:]
    y, i2 = adaptive_max_pool2d(y.reshape(n, c, dd, ho * wo), (o[0], ho * wo), True)
    out = y.reshape(n, c, o[0], ho, wo)
    idx = _merge3d(i1.reshape(n, c, dd, ho * wo), i2, h * w, ho * wo).reshape(out.shape) if return_indices else None
    if not batched:
        out = out.squeeze(0)
        idx = idx.squeeze(0) if idx is not None else None
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """(output, indices) of ``adaptive_max_pool1d``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """(output, indices) of ``adaptive_max_pool2d``."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """(output, indices) of ``adaptive_max_pool3d``."""
    return adaptive_max_pool3d(input, output_size, True)


# ---- max unpooling -----------------------------------------------------------------------------

def _unpool_output_size(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...],
                        output_size: Any) -> tuple[int, ...]:
    nd = len(k)
    default = tuple((x.shape[-nd + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(nd))
    if output_size is None:
        return default
    out = tuple(int(v) for v in output_size)
    if len(out) == nd + 2:
        out = out[2:]
    if len(out) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(out)}'")
    for i in range(nd):
        lo, hi = default[i] - s[i], default[i] + s[i]
        if not lo < out[i] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {i} must be between {lo} and {hi})')
    return out


def _max_unpool(nd: int, input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                output_size: Any) -> Tensor:
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
                           f"tensor with {input.ndim} dimensions.")
    if indices._arr.dtype != B.xp.int64:
        scalar = indices.type().split(".")[-1][:-len("Tensor")]  # PyTorch's scalar-type name: Float, Int, ...
        raise RuntimeError(f"elements in indices should be type int64 but got: {scalar}")
    if indices.shape != input.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    k = _tuple(kernel_size, nd, "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not len(stride)) else _tuple(stride, nd, "stride")
    p = _tuple(padding, nd, "padding")
    out = _unpool_output_size(input, k, s, p, output_size)
    size = math.prod(out)
    ix = indices._data
    if ix.size and (ix.min() < 0 or ix.max() >= size):
        bad = int(ix.min()) if ix.min() < 0 else int(ix.max())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, out))})")
    lead = tuple(input.shape[:-nd])
    m = math.prod(input.shape[-nd:])
    flat = input.reshape(*lead, m)
    base = Tensor._make(B.xp.zeros(lead + (size,), input._arr.dtype))
    return base.scatter(-1, Tensor._make(ix.reshape(lead + (m,))), flat).reshape(*lead, *out)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool1d: values put back at their ``indices``, zeros elsewhere.

    >>> y, i = F.max_pool1d(lightgrad.randn(1, 1, 4), 2, return_indices=True); F.max_unpool1d(y, i, 2).shape
    lightgrad.Size([1, 1, 4])
    """
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool2d: values put back at their flat H*W ``indices``, zeros elsewhere.

    >>> y, i = F.max_pool2d(lightgrad.randn(1, 1, 4, 4), 2, return_indices=True); F.max_unpool2d(y, i, 2).shape
    lightgrad.Size([1, 1, 4, 4])
    """
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool3d."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# ---- Lp pooling --------------------------------------------------------------------------------

def _lp_pool(nd: int, input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool) -> Tensor:
    pool_max = (max_pool1d, max_pool2d, max_pool3d)[nd - 1]
    pool_avg = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    if norm_type == math.inf:
        return pool_max(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -pool_max(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = pool_avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # sum of |x|^p over the window = mean * window size; sign * relu(abs) keeps PyTorch's gradient
    return (out.sign() * relu(out.abs())).mul(math.prod(_tuple(kernel_size, nd, "kernel_size"))).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over the window of x^p)^(1/p), over (N, C, L) or (C, L)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, H, W) or (C, H, W)."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# ---- fractional max pooling --------------------------------------------------------------------

def _fractional_starts(sample: B.ndarray, in_size: int, out_size: int, pool: int) -> B.ndarray:
    """Window starts per (N, C) sample, PyTorch's interval rule computed in the samples' precision."""
    starts = B.xp.empty(sample.shape + (out_size,), B.xp.int64)
    starts[..., -1] = in_size - pool
    if out_size > 1:
        alpha = sample.dtype.type(in_size - pool) / sample.dtype.type(out_size - 1)
        i = B.arange(out_size - 1, dtype=sample.dtype)
        starts[..., :-1] = ((i + sample[..., None]) * alpha).astype(B.xp.int64) - \
            (sample * alpha).astype(B.xp.int64)[..., None]
    return starts


def _fractional_max_pool(nd: int, input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                         return_indices: bool, _random_samples: Tensor | None) -> Any:
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    x, batched = _batched(input, nd, name)
    spatial = x.shape[2:]
    k = _tuple(kernel_size, nd, "kernel_size")
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, tuple | list) else (output_ratio,) * nd
        out = tuple(int(s * r) for s, r in zip(spatial, ratio, strict=True))
    else:
        out = _tuple(output_size, nd, "output_size")
    n, c = x.shape[0], x.shape[1]
    for d in range(nd):
        if out[d] + k[d] - 1 > spatial[d]:
            raise RuntimeError(f"{name}_out(): pool size {k[d]} too large relative to input size {spatial[d]} "
                               f"(output size {out[d]}) in dim {d}")
    if _random_samples is None:
        samples = B.empty((n, c, nd), x._arr.dtype)  # torch.rand(N, C, nd, dtype=input.dtype)'s draws
        R.uniform_(_gen(None), samples, 0.0, 1.0)
    else:
        if tuple(_random_samples.shape) != (n, c, nd):
            raise RuntimeError(f"{name}(): expected _random_samples of shape {(n, c, nd)}, "
                               f"got {tuple(_random_samples.shape)}")
        samples = _random_samples._data.astype(x._arr.dtype)
    # PyTorch's sample order: (W, H) for 2-d, (T, H, W) for 3-d
    order = (0,) if nd == 1 else ((1, 0) if nd == 2 else (0, 1, 2))
    # flat input index of every tap of every window: (N, C, *out, *k)
    strides = [math.prod(spatial[d + 1:]) for d in range(nd)]
    flat = B.xp.zeros((n, c) + out + k, B.xp.int64)
    for d in range(nd):
        starts = _fractional_starts(samples[..., order[d]], spatial[d], out[d], k[d])  # (N, C, out_d)
        pos = starts[..., :, None] + B.arange(k[d])  # (N, C, out_d, k_d)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = out[d], k[d]
        flat = flat + pos.reshape(shape) * strides[d]
    flat = flat.reshape(n, c, math.prod(out), math.prod(k))
    plane = x.reshape(n, c, -1)._data
    taps = B.take_along_axis(plane[:, :, :, None], flat.reshape(n, c, -1, 1), axis=2).reshape(flat.shape)
    best = B.xp.where(B.isnan(taps).any(-1), B.isnan(taps).argmax(-1), taps.argmax(-1))
    index = B.take_along_axis(flat, best[..., None], -1)[..., 0]  # (N, C, prod(out))
    idx = Tensor._make(index)
    y = x.reshape(n, c, -1).gather(2, idx).reshape((n, c) + out)
    idx = idx.reshape((n, c) + out)
    if not batched:
        y, idx = y.squeeze(0), idx.squeeze(0)
    return (y, idx) if return_indices else y


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(output, indices) of ``fractional_max_pool2d``."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Max pooling over pseudo-random overlapping windows, to ``output_size`` or ``output_ratio`` of
    (N, C, H, W) or (C, H, W) input; ``_random_samples`` (N, C, 2) in [0, 1) fixes the windows."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(output, indices) of ``fractional_max_pool3d``."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """3-D fractional max pooling over (N, C, D, H, W) or (C, D, H, W); samples (N, C, 3)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)
