"""Fourier-transform primitives: complex-to-complex, real-to-complex (half spectrum) and its inverse,
and the crop-or-pad that fits a signal to the length asked for.

Each transform is linear, so its gradient is its adjoint: the transform the other way with the same
scale (``norm`` swapped: backend.fft), the real-to-complex one's with the missing half of the spectrum
as zeros and the real part taken, the inverse's with the terms that stand for two (a term and its
conjugate) doubled, as PyTorch's fft_r2c_backward and fft_c2r_backward. The backward formulas call
the primitives themselves on Tensors under create_graph, so every order of derivative is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import backend as B
from ..backend import fft as BF
from . import base
from .base import Function
from .complex import guard, real

if TYPE_CHECKING:
    from ..tensor import Tensor

# (loaded with lightgrad.fft, on first use, after the late binding: Tensor is base's)


adjoint_norm = BF.adjoint_norm


def _run(op: type[Function], x: Any, *args: Any) -> Any:
    """``op`` on an array (its forward) or on a Tensor (a node: create_graph)."""
    return op.apply(x, *args) if isinstance(x, base.Tensor) else op().forward(x, *args)


class Resize(Function):
    """x cropped or zero-padded at the end of ``axes`` to ``sizes``; the gradient is resized back."""

    complex_grad = True

    def forward(self, x, axes, sizes):
        self.back = (axes, tuple(x.shape[a] for a in axes))
        return BF.resize(x, axes, sizes)

    def backward(self, g):
        return _run(Resize, g, *self.back), None, None


class FftC2C(Function):
    """The complex transform over ``axes`` (forward or inverse) of a real or complex x."""

    complex_grad = True

    def forward(self, x, axes, norm, forward):
        self.params = (axes, BF.adjoint_norm(norm), not forward, x.dtype.kind != "c")
        guard()
        return BF.c2c(x, axes, norm, forward)

    def backward(self, g):
        axes, norm, forward, was_real = self.params
        gx = _run(FftC2C, g, axes, norm, forward)
        return (real(gx) if was_real else gx), None, None, None


class FftR2C(Function):
    """The forward transform of a real x over ``axes``, the last one's first n // 2 + 1 terms."""

    complex_grad = True

    def forward(self, x, axes, norm):
        self.params = (axes, BF.adjoint_norm(norm), x.shape[axes[-1]])
        guard()
        return BF.r2c(x, axes, norm)

    def backward(self, g):
        axes, norm, n = self.params
        full = tuple(g.shape[a] for a in axes[:-1]) + (n,)
        # the terms past the half do not reach the loss: zeros there, then the adjoint
        gx = _run(FftC2C, _run(Resize, g, axes, full), axes, norm, False)
        return real(gx), None, None


class FftC2R(Function):
    """The inverse of FftR2C: a real result whose last axis has ``last`` entries."""

    complex_grad = True

    def forward(self, x, axes, norm, last):
        self.params = (axes, BF.adjoint_norm(norm), last, x.dtype.kind != "c")
        return BF.c2r(x, axes, norm, last)

    def backward(self, g):
        axes, norm, last, was_real = self.params
        gx = _run(FftR2C, g, axes, norm)
        half = gx.shape[axes[-1]]
        double = last - half  # terms 1 .. last - half stand for themselves and their mirror images
        if double > 0:
            w = B.xp.ones(half, B.xp.float32 if g.dtype.name == "float32" else B.xp.float64)
            w[1:1 + double] = 2.0
            shape = [1] * len(gx.shape)
            shape[axes[-1]] = half
            gx = B.multiply(gx, B.reshape(w, tuple(shape)))
        return (real(gx) if was_real else gx), None, None, None


def fit(x: Tensor, axes: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """x (a Tensor) resized to ``sizes`` along ``axes``, or x itself when it has them."""
    if all(x.shape[a] == n for a, n in zip(axes, sizes)):
        return x
    return Resize.apply(x, tuple(axes), tuple(sizes))
