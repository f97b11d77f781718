"""Dropout in its forms: elementwise, whole channels (1-D/2-D/3-D), and alpha dropout (SELU's).

(Named ``dropouts`` rather than ``dropout``: a submodule named after a function it holds would be
shadowed by that function on the package.)"""

from __future__ import annotations

import math
import warnings

from ... import backend as B
from ...backend import random as R
from ...random import _gen
from ...tensor import Tensor
from ._common import _const, _inplace

_ALPHA = 1.7580993408473766  # SELU's scale * alpha, as ATen's alpha_dropout writes it

# ---- elementwise and channel dropout -----------------------------------------------------------

def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(input: Tensor, p: float, shape: tuple[int, ...] | None = None) -> B.ndarray:
    """PyTorch's dropout noise: ``empty_like(input)`` (or a (N, C, 1, ...) array for channels) filled by
    ``bernoulli_(1 - p)`` from the global generator, so the masks are PyTorch's for the same seed."""
    dt = input._arr.dtype
    arr = B.xp.empty_like(input._arr, order="K") if shape is None else B.empty(shape, dt)
    if arr.size:
        R.bernoulli_scalar_(_gen(None), arr, 1.0 - p)
    return arr


def _dropout_mask(input: Tensor, p: float, shape: tuple[int, ...] | None = None) -> Tensor:
    """Keep-mask divided by (1 - p) in the input's dtype, as ``noise.div_(1 - p)``."""
    dt = input._arr.dtype
    if p == 1:
        return Tensor._make(B.xp.zeros(shape or (), dt))
    noise = _noise(input, p, shape)
    return Tensor._make(B.xp.divide(noise, dt.type(1.0 - p), dtype=dt))


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p while training, scaling the rest by 1 / (1 - p)."""
    _check_p(p)
    if not training or p == 0:
        return input
    mask = _dropout_mask(input, p)
    return _inplace(input, inplace, lambda x: x * mask)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool) -> Tensor:
    """Dropout of whole channels: one draw per (sample, channel), broadcast over the rest."""
    _check_p(p)
    if not training or p == 0:
        return input
    keep = 2 if batched else 1
    shape = input.shape[:keep] + (1,) * (input.ndim - keep)
    mask = _dropout_mask(input, p, shape)
    return _inplace(input, inplace, lambda x: x * mask)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, L) or (C, L) inputs."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, H, W) inputs (3-D inputs are taken as (N, C, L), as PyTorch does)."""
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will "
                      "result in an error in a future release.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, input.ndim >= 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) inputs."""
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will "
                      "result in an error in a future release.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, input.ndim != 4)


# ---- alpha dropout -----------------------------------------------------------------------------

def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check_p(p)
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0
    mult, add = _alpha_terms(input, p, None)
    return _inplace(input, inplace, lambda x: x * mult + add)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels: one draw per (sample, channel) of an (N, C, ...) input."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _inplace(input, inplace, lambda x: x * 0)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mult, add = _alpha_terms(input, p, input.shape[:2] + (1,) * (input.ndim - 2))
    return _inplace(input, inplace, lambda x: x * mult + add)


def _alpha_terms(input: Tensor, p: float, shape: tuple[int, ...] | None) -> tuple[Tensor, Tensor]:
    """ATen's alpha-dropout factors in the input's dtype: ``b = (noise - 1) * (alpha a) + alpha a p`` and
    ``noise * a``, with ``noise`` the bernoulli_(1 - p) keep-mask (dropped units go to SELU's negative
    saturation, then the affine map restores mean 0 and variance 1)."""
    dt = input._arr.dtype
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    noise = _noise(input, p, shape)
    b = ((noise - dt.type(1)) * dt.type(_ALPHA * a)).astype(dt, copy=False) + dt.type(_ALPHA * a * p)
    return _const(noise * dt.type(a), input), _const(b, input)
