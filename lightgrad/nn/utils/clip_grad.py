"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``, in place on ``.grad``."""

from __future__ import annotations

import math
from collections.abc import Iterable

from ... import backend as B
from ...tensor import Tensor


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in params if p.grad is not None]


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The norm of all tensors together (as if concatenated into one vector)."""
    ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not ts:
        return Tensor._make(B.asarray(0.0, B.xp.float32))
    dt = ts[0]._data.dtype
    # accumulated in a float64 array, not a Python float: no value leaves the arrays, so that
    # lightgrad.compile records the computation (PyTorch's clipping does not sync either)
    total = B.xp.zeros((), B.xp.float64)
    for t in ts:
        if norm_type == math.inf:
            B.xp.maximum(total, B.xp.max(B.xp.abs(t._data), initial=0.0), out=total)
        elif norm_type == 2.0:
            B.xp.add(total, B.xp.vdot(t._data, t._data), out=total)
        else:
            B.xp.add(total, B.xp.sum(B.xp.power(B.xp.abs(B.asarray(t._data, B.xp.float64)), norm_type)), out=total)
    if norm_type not in (2.0, math.inf):
        total = B.xp.power(total, 1.0 / norm_type)
    elif norm_type == 2.0:
        total = B.xp.sqrt(total)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return Tensor._make(B.asarray(total, dt))


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale gradients by max_norm / (total_norm + 1e-6) when that is below 1, in place."""
    coef = B.xp.minimum(B.xp.divide(float(max_norm), B.xp.add(B.asarray(total_norm._data, B.xp.float64), 1e-6)), 1.0)
    for g in _grads(parameters):
        # in place, so gradients that are views of an optimizer's flat buffer stay views
        B.xp.multiply(g._data, B.asarray(coef, g._data.dtype), out=g._data)


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Rescale gradients in place so their joint norm is at most ``max_norm``; returns the norm
    before clipping.

    >>> total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = get_total_norm(_grads(params), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value], in place."""
    v = float(clip_value)
    for g in _grads(parameters):
        B.xp.clip(g._data, -v, v, out=g._data)  # (B.xp.clip records itself under lightgrad.compile)


clip_grad_norm = clip_grad_norm_
