"""Image operations: padding, pixel and channel shuffles, interpolation (``F.interpolate``) and the
spatial transformer pair ``F.affine_grid`` / ``F.grid_sample``.

Resampling is written as small matrix products along each spatial axis, and sampling as gathers
and weights, so their gradients come for free."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ... import backend as B
from ... import function as Fn
from ...grad_mode import is_grad_enabled
from ...tensor import Tensor, where
from ._common import _const, _tuple
from .activation import _hardtanh
from .pooling import _adaptive_matrix, _along

# ---- padding -----------------------------------------------------------------------------------

def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad)//2 dims; ``pad`` lists (left, right) for the last dim first.
    Modes: constant (``value``), reflect, replicate, circular; negative pads crop."""
    pads = [int(p) for p in pad]
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pads) // 2
    if k > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pads)} and input of dimension {input.ndim}")
    pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(k)]  # pairs[i] pads dim -1 - i
    if mode == "constant":
        for i, (a, b) in enumerate(pairs):
            d = input.ndim - 1 - i
            if input.shape[d] + a + b < 0:
                raise RuntimeError(f"The input size {input.shape[d]}, plus negative padding {a} and {b} resulted in "
                                   f"a negative output size, which is invalid. Check dimension {d} of your input.")
        np_pads = ((0, 0),) * (input.ndim - k) + tuple(reversed(pairs))
        return Fn.Pad.apply(input, pads=np_pads, value=0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if k == 0 or k > 3 or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pads)} is not supported for {input.ndim}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D "
            "input: padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 "
            "dimensions)")
    out = input
    for i, (a, b) in enumerate(pairs):
        d = input.ndim - 1 - i
        n = input.shape[d]
        if mode == "reflect" and (a >= n or b >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({a}, {b}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (a > n or b > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        pos = B.arange(-a, n + b)  # source position of every output position
        if mode == "reflect":
            idx = B.xp.abs(pos)
            idx = B.xp.where(idx > n - 1, 2 * (n - 1) - idx, idx)
        elif mode == "replicate":
            idx = B.xp.clip(pos, 0, n - 1)
        else:
            idx = pos % n
        out = out.index_select(d, Tensor._make(idx))
    return out


# ---- pixel and channel shuffles ----------------------------------------------------------------

def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r).

    >>> F.pixel_shuffle(lightgrad.randn(1, 8, 3, 3), 2).shape
    lightgrad.Size([1, 2, 6, 6])
    """
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)  # (*, C, H, r, W, r)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W), the inverse of pixel_shuffle.

    >>> F.pixel_unshuffle(lightgrad.randn(1, 2, 6, 6), 2).shape
    lightgrad.Size([1, 8, 3, 3])
    """
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)  # (*, C, r, r, H, W)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels (dim 1) of ``groups`` groups: (N, g*k, *) viewed (N, g, k, *) -> (N, k, g, *).

    >>> F.channel_shuffle(lightgrad.arange(4.0).reshape(1, 4, 1), 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


# ---- interpolation -----------------------------------------------------------------------------

_MODES = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "linear": (1,), "bilinear": (2,),
          "bicubic": (2,), "trilinear": (3,), "area": (1, 2, 3)}


def _linear_matrix(size: int, out: int, scale: float | None, align_corners: bool, dtype: Any) -> B.ndarray:
    """(out, size) matrix of linear interpolation weights (PyTorch's source-index rule)."""
    dst = B.arange(out, dtype=B.xp.float64)
    if align_corners:
        src = dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        r = 1.0 / scale if scale else size / out
        src = B.xp.maximum((dst + 0.5) * r - 0.5, 0.0)
    i0 = B.xp.minimum(B.xp.floor(src).astype(B.xp.int64), size - 1)
    lam = src - i0
    i1 = B.xp.minimum(i0 + 1, size - 1)
    m = B.xp.zeros((out, size))
    B.xp.add.at(m, (B.arange(out), i0), 1 - lam)
    B.xp.add.at(m, (B.arange(out), i1), lam)
    return m.astype(dtype)


def _cubic_matrix(size: int, out: int, scale: float | None, align_corners: bool, dtype: Any) -> B.ndarray:
    """(out, size) matrix of bicubic weights (Keys' kernel, A = -0.75, clamped borders, as PyTorch)."""
    a = -0.75
    dst = B.arange(out, dtype=B.xp.float64)
    if align_corners:
        src = dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        src = (dst + 0.5) * (1.0 / scale if scale else size / out) - 0.5
    i0 = B.xp.floor(src).astype(B.xp.int64)
    t = src - i0

    def near(x: B.ndarray) -> B.ndarray:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: B.ndarray) -> B.ndarray:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    m = B.xp.zeros((out, size))
    for j, wgt in enumerate((far(t + 1), near(t), near(1 - t), far(2 - t))):
        B.xp.add.at(m, (B.arange(out), B.xp.clip(i0 - 1 + j, 0, size - 1)), wgt)
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
    r = B.xp.float32(1.0 / scale) if scale else B.xp.float32(n) / B.xp.float32(o)
    dst = B.arange(o, dtype=B.xp.float32) + (B.xp.float32(0.5) if exact else B.xp.float32(0))
    src = B.xp.minimum(B.xp.floor(dst * r).astype(B.xp.int64), n - 1)
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


# ---- spatial transformers ----------------------------------------------------------------------

def _align_default(align_corners: bool | None) -> bool:
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=3)
        return False
    return align_corners


def _base_coords(steps: int, align_corners: bool) -> B.ndarray:
    if steps <= 1:
        return B.xp.zeros(max(steps, 0))
    r = B.linspace(-1.0, 1.0, steps)
    return r if align_corners else r * (steps - 1) / steps


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta`` (N, 2, 3) (or (N, 3, 4)),
    in [-1, 1] coordinates, for grid_sample.

    >>> F.affine_grid(lightgrad.eye(2, 3).unsqueeze(0), (1, 1, 4, 4), align_corners=False).shape
    lightgrad.Size([1, 4, 4, 2])
    """
    align = _align_default(align_corners)
    size = tuple(int(v) for v in size)
    if theta._arr.dtype.kind != "f":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    nd = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[-2:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {size}. "
                         f"Got {theta.shape}.")
    spatial = size[2:]
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta batch size {size[0]}, got {theta.shape[0]} "
                           f"(theta of shape {list(theta.shape)})")
    if align and max(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the "
                      "documentation of affine_grid for details.", stacklevel=2)
    # base (*spatial, nd + 1): x varies along the last axis (W), then y (H), then z (D); last column is 1
    mesh = B.xp.meshgrid(*[_base_coords(n, align) for n in spatial], indexing="ij")  # [z,] y, x order
    base = B.stack(list(reversed(mesh)) + [B.ones(spatial)], -1).astype(theta._arr.dtype)
    npts = math.prod(spatial)
    grid = Tensor._make(base.reshape(1, npts, -1)).matmul(theta.transpose(1, 2))  # (N, npts, nd)
    return grid.reshape(size[0], *spatial, len(spatial))


def _unnormalize(coord: Tensor, size: int, align: bool) -> Tensor:
    if align:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflect coordinates into [twice_low / 2, twice_high / 2] as PyTorch's reflect_coordinates."""
    if twice_low == twice_high:
        return x * 0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    a = (x - lo).abs()
    flips = B.xp.floor(a._data / span)
    extra = a - _const(flips * span, a)  # fmod(a, span) for a >= 0, written so the gradient flows
    even = Tensor._make(flips % 2 == 0)
    return where(even, extra + lo, span - extra + lo)


def _source_index(coord: Tensor, size: int, padding_mode: str, align: bool) -> Tensor:
    x = _unnormalize(coord, size, align)
    if padding_mode == "border":
        x = _hardtanh(x, 0.0, size - 1.0)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align else _reflect(x, -1, 2 * size - 1)
        x = _hardtanh(x, 0.0, size - 1.0)
    return x


def _bounded_taps(x: B.ndarray, size: int, padding_mode: str, align: bool) -> B.ndarray:
    """Integer tap positions mapped through the padding mode (PyTorch's compute_coordinates)."""
    if padding_mode == "border":
        return B.xp.clip(x, 0, size - 1)
    if padding_mode == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            return B.zeros_like(x)
        lo, span = lo2 / 2, (hi2 - lo2) / 2
        a = B.xp.abs(x - lo)
        extra, flips = B.xp.fmod(a, span), B.xp.floor(a / span)
        return B.xp.clip(B.xp.where(flips % 2 == 0, extra + lo, span - extra + lo), 0, size - 1)
    return x


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for a fraction t."""
    a = -0.75

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((x * (a + 2) - (a + 3)) * x) * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic_sample(grid: Tensor, tap: Callable[[B.ndarray, B.ndarray], tuple[Tensor, B.ndarray]],
                    hw: tuple[int, int], padding_mode: str, align: bool) -> Tensor:
    """Bicubic grid sampling over 4x4 taps; padding applies to each tap (not to the coordinate)."""
    h, w = hw
    ix = _unnormalize(grid[..., 0], w, align)
    iy = _unnormalize(grid[..., 1], h, align)
    x0, y0 = B.xp.floor(ix._data), B.xp.floor(iy._data)
    wxs = _cubic_weights(ix - _const(x0, ix))
    wys = _cubic_weights(iy - _const(y0, iy))
    out: list[Tensor] = []
    for i, wy in enumerate(wys):
        yi = _bounded_taps(y0 - 1 + i, h, padding_mode, align).astype(B.xp.int64)
        for j, wx in enumerate(wxs):
            xi = _bounded_taps(x0 - 1 + j, w, padding_mode, align).astype(B.xp.int64)
            v, inside = tap(yi, xi)
            out.append(where(Tensor._make(inside[:, None]), v, 0.0) * (wy * wx).unsqueeze(1))
    total = out[0]
    for t in out[1:]:
        total = total + t
    return total


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample (N, C, H, W) ``input`` at the [-1, 1] locations of ``grid`` (N, Ho, Wo, 2), x first;
    2-D, bilinear, nearest or bicubic, zeros/border/reflection padding, gradients to input and grid.

    >>> g = F.affine_grid(lightgrad.eye(2, 3).unsqueeze(0), (1, 1, 3, 3), align_corners=False)
    >>> F.grid_sample(lightgrad.randn(1, 1, 3, 3), g, align_corners=False).shape
    lightgrad.Size([1, 1, 3, 3])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    align = _align_default(align_corners)
    if input.ndim != grid.ndim or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input._arr.dtype != grid._arr.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    if input.ndim != 4:
        raise NotImplementedError(f"grid_sample: only 4-D input (2-D sampling) is implemented in lightgrad, got "
                                  f"input of size {list(input.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1:3]
    flat_in = input.reshape(n, c, h * w)

    def tap(yi: B.ndarray, xi: B.ndarray) -> tuple[Tensor, B.ndarray]:
        """input at integer (yi, xi) of shape (N, Ho, Wo), as (N, C, Ho, Wo), and where it lies inside."""
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        flat = B.xp.where(inside, yi * w + xi, 0).reshape(n, 1, ho * wo)
        v = flat_in.gather(2, Tensor._make(B.broadcast_to(flat, (n, c, ho * wo))))
        return v.reshape(n, c, ho, wo), inside

    if mode == "bicubic":
        return _bicubic_sample(grid, tap, (h, w), padding_mode, align)
    ix = _source_index(grid[..., 0], w, padding_mode, align)  # (N, Ho, Wo)
    iy = _source_index(grid[..., 1], h, padding_mode, align)
    if mode == "nearest":
        v, inside = tap(B.xp.rint(iy._data).astype(B.xp.int64), B.xp.rint(ix._data).astype(B.xp.int64))
        out = where(Tensor._make(inside[:, None]), v, 0.0)
        # nearest sampling is flat in the grid: its gradient is zero there, as in PyTorch (not absent)
        return out + (grid * 0).sum() if grid.requires_grad and is_grad_enabled() else out
    x0, y0 = B.xp.floor(ix._data).astype(B.xp.int64), B.xp.floor(iy._data).astype(B.xp.int64)
    fx = ix - _const(x0, ix)  # weight of the right neighbour, (N, Ho, Wo)
    fy = iy - _const(y0, iy)
    terms = []
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            v, inside = tap(y0 + dy, x0 + dx)
            terms.append(where(Tensor._make(inside[:, None]), v, 0.0) * (wy * wx).unsqueeze(1))
    return terms[0] + terms[1] + terms[2] + terms[3]
