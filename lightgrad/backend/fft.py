"""Discrete Fourier transforms: NumPy's pocketfft (``numpy.fft``), in the input's precision (NumPy 2
transforms float32 and complex64 in single precision, as PyTorch does).

``norm`` is NumPy's (and PyTorch's) name of the scaling of the call it is given to: "backward" scales
the inverse transform by 1/n, "forward" the forward one, "ortho" both by 1/sqrt(n). The adjoint of a
transform is the transform the other way with the same scale, which is the other name
(``adjoint_norm``): the gradients of the primitives are built on that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from .shapes import Array

Norm = Literal["backward", "ortho", "forward"]
_ADJOINT: dict[str, Norm] = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def adjoint_norm(norm: Norm) -> Norm:
    """The norm name that gives the opposite-direction transform the same scale as ``norm``."""
    return _ADJOINT[norm]


def resize(x: Array, axes: Sequence[int], sizes: Sequence[int]) -> Array:
    """x cropped or zero-padded at the end of each of ``axes`` to ``sizes`` (x itself when it fits)."""
    if all(x.shape[a] == n for a, n in zip(axes, sizes)):
        return x
    crop = [slice(None)] * x.ndim
    pad = [(0, 0)] * x.ndim
    for a, n in zip(axes, sizes):
        if n < x.shape[a]:
            crop[a] = slice(0, n)
        else:
            pad[a] = (0, n - x.shape[a])
    x = x[tuple(crop)]
    return np.pad(x, pad) if any(p[1] for p in pad) else np.ascontiguousarray(x)


def _complex_of(x: Array) -> np.dtype:
    return np.dtype(np.complex64) if x.dtype in (np.float32, np.complex64) else np.dtype(np.complex128)


def c2c(x: Array, axes: Sequence[int], norm: Norm, forward: bool) -> Array:
    """The complex transform over ``axes`` (of a real or complex x), forward (exponent -) or inverse."""
    if not axes:
        return x.astype(_complex_of(x))
    f = np.fft.fftn if forward else np.fft.ifftn
    out = f(x, axes=tuple(axes), norm=norm)
    return out if out.dtype == _complex_of(x) else out.astype(_complex_of(x))


def r2c(x: Array, axes: Sequence[int], norm: Norm) -> Array:
    """The forward transform of a real x over ``axes``, the last one halved (its n // 2 + 1 terms)."""
    out = np.fft.rfftn(x, axes=tuple(axes), norm=norm)
    return out if out.dtype == _complex_of(x) else out.astype(_complex_of(x))


def c2r(x: Array, axes: Sequence[int], norm: Norm, last: int) -> Array:
    """The inverse of r2c: a real result whose last axis has ``last`` entries (x holds its first
    last // 2 + 1 terms, the rest being their conjugates)."""
    s = [x.shape[a] for a in axes[:-1]] + [last]
    out = np.fft.irfftn(x, s=s, axes=tuple(axes), norm=norm)
    real = np.dtype(np.float32) if x.dtype in (np.float32, np.complex64) else np.dtype(np.float64)
    return out if out.dtype == real else out.astype(real)


def frequencies(n: int, d: float, onesided: bool) -> Array:
    """The sample frequencies of a length-n transform with sample spacing d (float64)."""
    return np.fft.rfftfreq(n, d) if onesided else np.fft.fftfreq(n, d)
