"""Dropout in its forms: elementwise, whole channels (1-D/2-D/3-D), and alpha dropout (SELU's).

(Named ``dropouts`` rather than ``dropout``: a submodule named after a function it holds would be
shadowed by that function on the package.)"""

from __future__ import annotations

import math
import warnings

from ... import backend as B
from ...random import _gen
from ...tensor import Tensor
from ._common import _const, _inplace
from .activation import _SELU_ALPHA, _SELU_SCALE

# ---- elementwise and channel dropout -----------------------------------------------------------

def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(input: Tensor, p: float, shape: tuple[int, ...]) -> Tensor:
    """Keep-mask scaled by 1 / (1 - p), drawn from the global generator."""
    dt = input._arr.dtype
    if p == 1:
        return Tensor._make(B.xp.zeros(shape, dt))
    keep = _gen(None).random(shape, dtype=B.xp.float64 if dt == B.xp.float64 else B.xp.float32) >= p
    return Tensor._make(B.xp.multiply(keep, 1.0 / (1.0 - p), dtype=dt))


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p while training, scaling the rest by 1 / (1 - p)."""
    _check_p(p)
    if not training or p == 0:
        return input
    mask = _dropout_mask(input, p, input.shape)
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
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = _gen(None).random(input.shape) >= p
    # dropped units are set to SELU's negative saturation, then an affine map restores mean 0, var 1
    mult = _const(keep * a, input)
    add = _const((keep - 1.0) * (alpha * a) + alpha * a * p, input)
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
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    shape = input.shape[:2] + (1,) * (input.ndim - 2)
    keep = _gen(None).random(shape) >= p
    # as alpha_dropout, with the mask broadcast over each channel
    mult = _const(keep * a, input)
    add = _const((keep - 1.0) * (alpha * a) + alpha * a * p, input)
    return _inplace(input, inplace, lambda x: x * mult + add)
