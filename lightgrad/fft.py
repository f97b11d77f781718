"""torch.fft: discrete Fourier transforms, with gradients.

>>> import lightgrad as torch
>>> torch.fft.rfft(torch.tensor([1.0, 2.0, 3.0, 4.0]))
tensor([10.+0.j, -2.+2.j, -2.+0.j])

Every transform is one of three primitives (lightgrad.function.fft: complex-to-complex, real-to-
complex half spectrum, and its inverse; NumPy's pocketfft), after the input is cropped or zero-padded
to the length asked for. ``norm`` is "backward" (the default: the inverse scaled by 1/n), "forward"
(the forward one) or "ortho" (both by 1/sqrt(n)). Real inputs give complex64 from float32 and
complex128 from float64; integers are taken as the default float dtype; float16 is refused, as by
PyTorch on the CPU. hfft and ihfft transform a signal whose spectrum is real (Hermitian in time).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, cast

from . import dtypes as D
from . import function as F
from .function import fft as FF
from ._ops.common import _dim
from ._ops.creation import _into
from .backend.fft import Norm
from .tensor import Tensor, arange, tensor

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

Dims = int | Sequence[int] | None
Sizes = Sequence[int] | None


# ---- arguments -----------------------------------------------------------------------------------

def _norm(norm: str | None) -> Norm:
    if norm is None:
        return "backward"
    if norm not in ("backward", "forward", "ortho"):
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return cast(Norm, norm)


def _input(x: Any, real: bool = False, name: str = "") -> Tensor:
    """The transform's input as a floating or complex Tensor (integers in the default float dtype)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    d = x.dtype
    if d in (D.float16, D.bfloat16):
        raise RuntimeError(f"Unsupported dtype {D.SCALAR_NAMES[d.name]}")
    if real and d.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {D.SCALAR_NAMES[d.name]}")
    if not (d.is_floating_point or d.is_complex):
        return x.to(D.get_default_dtype())
    return x


def _points(n: int) -> int:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _plan(x: Tensor, s: Sizes, dim: Dims) -> tuple[tuple[int, ...], list[int | None]]:
    """The axes a transform runs over and the length asked for along each (None: as it is), as
    PyTorch's fft_canonicalize: s without dim means the last len(s) dims, neither means all."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        axes = tuple(_dim(d, x.ndim, scalar=False) for d in dim)
        if len(set(axes)) != len(axes):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(axes):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions.")
        axes = tuple(range(x.ndim - len(s), x.ndim))
    else:
        axes = tuple(range(x.ndim))
    sizes: list[int | None] = [None] * len(axes)
    if s is not None:
        sizes = [None if int(n) == -1 else _points(int(n)) for n in s]
    return axes, sizes


def _fitted(x: Tensor, axes: tuple[int, ...], sizes: Sequence[int | None]) -> Tensor:
    return FF.fit(x, axes, [x.shape[a] if n is None else n for a, n in zip(axes, sizes)])


def _out(result: Tensor, out: Tensor | None, name: str = "fft") -> Tensor:
    return _into(out, result, name)


def _conj(x: Tensor) -> Tensor:
    return F.Conj.apply(x) if x.dtype.is_complex else x


# ---- the transforms, by kind ---------------------------------------------------------------------

def _c2c(x: Any, s: Sizes, dim: Dims, norm: str | None, forward: bool, name: str) -> Tensor:
    x = _input(x, name=name)
    axes, sizes = _plan(x, s, dim)
    return FF.FftC2C.apply(_fitted(x, axes, sizes), axes, _norm(norm), forward)


def _r2c(x: Any, s: Sizes, dim: Dims, norm: str | None, name: str, hermitian: bool = False) -> Tensor:
    x = _input(x, real=True, name=name)
    axes, sizes = _plan(x, s, dim)
    if not axes:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _fitted(x, axes, sizes)
    if not hermitian:
        return FF.FftR2C.apply(x, axes, _norm(norm))
    # ihfftn: the half spectrum of the last axis at the inverse's scale, conjugated, then the inverse
    # transform over the others (PyTorch's order)
    nm = _norm(norm)
    out = _conj(FF.FftR2C.apply(x, axes[-1:], FF.adjoint_norm(nm)))
    return FF.FftC2C.apply(out, axes[:-1], nm, False) if len(axes) > 1 else out


def _c2r(x: Any, s: Sizes, dim: Dims, norm: str | None, name: str, hermitian: bool = False) -> Tensor:
    x = _input(x, name=name)
    axes, sizes = _plan(x, s, dim)
    if not axes:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = sizes[-1] if sizes[-1] is not None else _points(2 * (x.shape[axes[-1]] - 1))
    x = _fitted(x, axes, [*sizes[:-1], last // 2 + 1])
    nm = _norm(norm)
    if not hermitian:
        return FF.FftC2R.apply(x, axes, nm, last)
    # hfftn: the forward transform over all but the last axis, conjugated, then the real inverse of the
    # last at the forward transform's scale
    if len(axes) > 1:
        x = FF.FftC2C.apply(x, axes[:-1], nm, True)
    return FF.FftC2R.apply(_conj(x), axes[-1:], FF.adjoint_norm(nm), last)


def _one(n: int | None) -> Sizes:
    return None if n is None else [n]


def fft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,  # noqa: A002
        out: Tensor | None = None) -> Tensor:
    """The 1-D discrete Fourier transform along ``dim`` (cropped or zero-padded to ``n``)."""
    return _out(_c2c(input, _one(n), dim, norm, True, "fft"), out)


def ifft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    """The 1-D inverse discrete Fourier transform along ``dim``."""
    return _out(_c2c(input, _one(n), dim, norm, False, "ifft"), out)


def fft2(input: Any, s: Sizes = None, dim: Sequence[int] = (-2, -1), norm: str | None = None, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    """The 2-D discrete Fourier transform over ``dim`` (the last two by default)."""
    return _out(_c2c(input, s, dim, norm, True, "fft2"), out)


def ifft2(input: Any, s: Sizes = None, dim: Sequence[int] = (-2, -1), norm: str | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The 2-D inverse discrete Fourier transform over ``dim``."""
    return _out(_c2c(input, s, dim, norm, False, "ifft2"), out)


def fftn(input: Any, s: Sizes = None, dim: Dims = None, norm: str | None = None, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    """The N-D discrete Fourier transform over ``dim`` (all dims, or the last len(s), by default)."""
    return _out(_c2c(input, s, dim, norm, True, "fftn"), out)


def ifftn(input: Any, s: Sizes = None, dim: Dims = None, norm: str | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The N-D inverse discrete Fourier transform over ``dim``."""
    return _out(_c2c(input, s, dim, norm, False, "ifftn"), out)


def rfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    """The transform of a real signal: its first n // 2 + 1 terms (the rest are their conjugates)."""
    return _out(_r2c(input, _one(n), dim, norm, "rfft"), out)


def irfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The inverse of rfft: a real signal of length n (2 (m - 1) from m terms by default)."""
    return _out(_c2r(input, _one(n), dim, norm, "irfft"), out)


def rfft2(input: Any, s: Sizes = None, dim: Sequence[int] = (-2, -1), norm: str | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The 2-D transform of a real signal, the last dim halved."""
    return _out(_r2c(input, s, dim, norm, "rfft2"), out)


def irfft2(input: Any, s: Sizes = None, dim: Sequence[int] = (-2, -1), norm: str | None = None, *,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    """The inverse of rfft2."""
    return _out(_c2r(input, s, dim, norm, "irfft2"), out)


def rfftn(input: Any, s: Sizes = None, dim: Dims = None, norm: str | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The N-D transform of a real signal, the last transformed dim halved."""
    return _out(_r2c(input, s, dim, norm, "rfftn"), out)


def irfftn(input: Any, s: Sizes = None, dim: Dims = None, norm: str | None = None, *,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    """The inverse of rfftn."""
    return _out(_c2r(input, s, dim, norm, "irfftn"), out)


def hfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    return _out(_c2r(input, _one(n), dim, norm, "hfft", hermitian=True), out)


def ihfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The inverse of hfft: the first half of a real signal's inverse transform."""
    return _out(_r2c(input, _one(n), dim, norm, "ihfft", hermitian=True), out)


def hfft2(input: Any, s: Sizes = None, dim: Sequence[int] = (-2, -1), norm: str | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The 2-D hfft."""
    return _out(_c2r(input, s, dim, norm, "hfft2", hermitian=True), out)


def ihfft2(input: Any, s: Sizes = None, dim: Sequence[int] = (-2, -1), norm: str | None = None, *,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    """The 2-D ihfft."""
    return _out(_r2c(input, s, dim, norm, "ihfft2", hermitian=True), out)


def hfftn(input: Any, s: Sizes = None, dim: Dims = None, norm: str | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The N-D hfft."""
    return _out(_c2r(input, s, dim, norm, "hfftn", hermitian=True), out)


def ihfftn(input: Any, s: Sizes = None, dim: Dims = None, norm: str | None = None, *,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    """The N-D ihfft."""
    return _out(_r2c(input, s, dim, norm, "ihfftn", hermitian=True), out)


# ---- frequencies and shifts ----------------------------------------------------------------------

def _freqs(n: int, d: float, onesided: bool, dtype: Any, requires_grad: bool, name: str) -> Tensor:
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    # as PyTorch: the integer indices in the dtype, times 1 / (n d) in it
    k = arange(n // 2 + 1, dtype=dt) if onesided else tensor(
        [*range((n - 1) // 2 + 1), *range(-(n // 2), 0)], dtype=dt)
    out = k * tensor(1.0 / (n * d), dtype=dt)
    return out.requires_grad_(requires_grad) if requires_grad else out


def fftfreq(n: int, d: float = 1.0, *, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """The sample frequencies of fft: ``[0, 1, ..., -2, -1] / (d n)``."""
    return _out(_freqs(n, d, False, dtype, requires_grad, "fftfreq"), out)


def rfftfreq(n: int, d: float = 1.0, *, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """The sample frequencies of rfft: ``[0, 1, ..., n // 2] / (d n)``."""
    return _out(_freqs(n, d, True, dtype, requires_grad, "rfftfreq"), out)


def _shift(x: Tensor, dim: Dims, inverse: bool) -> Tensor:
    axes = range(x.ndim) if dim is None else [dim] if isinstance(dim, int) else dim
    axes = [_dim(a, x.ndim) for a in axes]
    if not axes or not x.ndim:
        return x.clone()
    shifts = [(x.shape[a] + 1) // 2 if inverse else x.shape[a] // 2 for a in axes]
    return x.roll(shifts, axes)


def fftshift(input: Tensor, dim: Dims = None) -> Tensor:  # noqa: A002
    """The zero frequency moved to the middle (a roll by n // 2 along each of ``dim``)."""
    return _shift(input, dim, inverse=False)


def ifftshift(input: Tensor, dim: Dims = None) -> Tensor:  # noqa: A002
    """The inverse of fftshift (a roll by -(n // 2), that is (n + 1) // 2)."""
    return _shift(input, dim, inverse=True)
