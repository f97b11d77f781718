"""Normalization: batch, instance, layer, group and RMS norm, local response norm, and ``F.normalize``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import backend as B
from ...grad_mode import no_grad
from ...tensor import Tensor
from . import _layer_kernels as K
from .vision import pad

# ---- batch and instance norm -------------------------------------------------------------------

def _bshape(c: int, ndim: int) -> tuple[int, ...]:
    """Shape that broadcasts a per-channel vector over (N, C, *)."""
    return (1, c) + (1,) * (ndim - 2)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) by batch statistics when training (updating the running
    statistics in place), else by the running statistics."""
    if input.ndim < 2:
        raise ValueError(f"Expected 2D or more input (got {input.ndim}D input)")
    c = input.shape[1]
    n = input.numel() // c if c else 0
    if training and n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    bs = _bshape(c, input.ndim)
    if training or running_mean is None or running_var is None:
        axes = (0,) + tuple(range(2, input.ndim))
        mean = input.mean(axes, keepdim=True)
        xc = input - mean
        var = (xc * xc).mean(axes, keepdim=True)
        if training and running_mean is not None and running_var is not None:
            with no_grad():
                _update_running(running_mean, mean._data, momentum)
                _update_running(running_var, B.multiply(var._data, n / (n - 1)), momentum)
        scale = (var + eps).rsqrt()
        if weight is not None:
            scale = scale * weight.reshape(bs)
        out = xc * scale  # (N, C, *): the per-channel factors are folded before touching the big tensor
    else:
        scale = (running_var.reshape(bs) + eps).rsqrt()
        if weight is not None:
            scale = scale * weight.reshape(bs)
        out = (input - running_mean.reshape(bs)) * scale
    return out + bias.reshape(bs) if bias is not None else out


def _update_running(stat: Tensor, batch: B.ndarray, momentum: float) -> None:
    """stat = (1 - momentum) * stat + momentum * batch, in place."""
    s = stat._data  # (through the backend, so that lightgrad.compile records the update)
    B.imul(s, 1 - momentum)
    B.iadd(s, B.cast(B.multiply(B.reshape(batch, s.shape), momentum), s.dtype))
    stat._version[0] += 1


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample over its spatial dims; with ``running_mean`` and
    ``running_var`` given, training (``use_input_stats``) updates them with the batch's average
    per-sample statistics, and evaluation normalises with them instead."""
    n, c = input.shape[:2]
    bs = _bshape(c, input.ndim)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("Expected running_mean and running_var to be defined when use_input_stats is false")
        out = (input - running_mean.reshape(bs)) / (running_var.reshape(bs) + eps).sqrt()
        if weight is not None:
            out = out * weight.reshape(bs)
        return out + bias.reshape(bs) if bias is not None else out
    if running_mean is not None or running_var is not None:
        with no_grad():
            axes = tuple(range(2, input.ndim))
            m = float(momentum)
            if running_mean is not None:
                running_mean._data[...] = (1 - m) * running_mean._data + m * input._data.mean(axes).mean(0)
                running_mean._version[0] += 1
            if running_var is not None:
                var = input._data.var(axes, ddof=1) if input[0, 0].numel() > 1 else B.full((n, c), B.xp.nan)
                running_var._data[...] = (1 - m) * running_var._data + m * var.mean(0)
                running_var._version[0] += 1
    out = group_norm(input.reshape((1, n * c) + input.shape[2:]), n * c, eps=eps).reshape(input.shape)
    if weight is not None:
        out = out * weight.reshape(bs)
    return out + bias.reshape(bs) if bias is not None else out


# ---- layer, RMS and group norm -----------------------------------------------------------------

def _check_normalized(input: Tensor, normalized_shape: Sequence[int]) -> tuple[int, ...]:
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or input.ndim < k or tuple(input.shape[-k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    return tuple(range(input.ndim - k, input.ndim))


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift."""
    axes = _check_normalized(input, normalized_shape)
    ns = tuple(input.shape[axes[0]:])
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    if not input.is_floating_point():
        raise RuntimeError(f"layer_norm expects a floating point input, got {input.dtype}")
    return K.LayerNorm.apply(input, weight, bias, k=len(axes), eps=eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times weight."""
    axes = _check_normalized(input, normalized_shape)
    if eps is None:
        eps = float(B.finfo(input._arr.dtype).eps)
    out = input * ((input * input).mean(axes, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise each group of channels of each sample, then scale and shift per channel."""
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(input.shape)} and num_groups={num_groups}")
    n, c = input.shape[:2]
    x = input.reshape(n, num_groups, -1)  # (N, G, C/G * spatial)
    mean = x.mean(-1, keepdim=True)
    xc = x - mean
    out = (xc * ((xc * xc).mean(-1, keepdim=True) + eps).rsqrt()).reshape(input.shape)
    bs = _bshape(c, input.ndim)
    if weight is not None:
        out = out * weight.reshape(bs)
    return out + bias.reshape(bs) if bias is not None else out


# ---- local response norm and vector norms ------------------------------------------------------

def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta (zero-padded).

    >>> F.local_response_norm(lightgrad.ones(1, 4, 2, 2), 2).shape
    lightgrad.Size([1, 4, 2, 2])
    """
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    c = input.shape[1]
    padded = pad(sq.movedim(1, -1), (size // 2, (size - 1) // 2))  # channels last, zero-padded
    win = padded.narrow(-1, 0, c)
    for s in range(1, size):
        win = win + padded.narrow(-1, s, c)
    div = (win.movedim(-1, 1) * (alpha / size) + k) ** beta
    return input / div


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Tensor:
    """x / max(||x||_p, eps) along ``dim``."""
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)
