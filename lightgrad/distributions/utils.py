"""Helpers shared by the distributions (``torch.distributions.utils``'s names)."""

from __future__ import annotations

from numbers import Number
from collections.abc import Callable
from typing import Any

import lightgrad as lg
from lightgrad import dtypes
from lightgrad.tensor import Size, Tensor

def _eps(dtype: Any) -> float:
    """Machine epsilon of a float dtype (float32's for others)."""
    return dtypes.finfo(dtype if dtype.is_floating_point else dtypes.float32).eps


def _min(dtype: Any) -> float:
    """The most negative finite value of a float dtype (float32's for others)."""
    return dtypes.finfo(dtype if dtype.is_floating_point else dtypes.float32).min


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Numbers and tensors as tensors of one broadcast shape: ``broadcast_all(0.0, torch.ones(3))``."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not any(isinstance(v, Tensor) for v in values):
        return tuple(lg.tensor(float(v), dtype=lg.get_default_dtype()) for v in values)
    first = next(v for v in values if isinstance(v, Tensor))
    tensors = [v if isinstance(v, Tensor) else lg.tensor(v, dtype=first.dtype) for v in values]
    return tuple(lg.broadcast_tensors(*tensors))


def _standard_normal(shape: tuple[int, ...], dtype: Any) -> Tensor:
    """The noise of every reparameterized normal draw (one place, so a test can fix it)."""
    return lg.randn(tuple(shape), dtype=dtype)


def _uniform(shape: tuple[int, ...], dtype: Any) -> Tensor:
    """Uniform noise in [0, 1) for every draw built on it."""
    return lg.rand(tuple(shape), dtype=dtype)


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped into [eps, 1 - eps], so their logs are finite."""
    eps = _eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """``log p`` (categorical) or ``log p - log(1 - p)`` (binary)."""
    ps = clamp_probs(probs)
    return ps.log() - (-ps).log1p() if is_binary else ps.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """``sigmoid`` (binary) or ``softmax`` over the last dimension."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def _batch_shape_of(params: tuple[Any, ...], first: Tensor) -> Size:
    """The batch shape of parameters broadcast to ``first``: () when all are numbers."""
    return Size(()) if all(isinstance(p, Number) for p in params) else first.size()


def _size(shape: Any) -> Size:
    return shape if isinstance(shape, Size) else Size(tuple(shape))


class lazy_property:  # noqa: N801 (PyTorch's name)
    """A property computed on first access and then stored on the instance (``probs`` from ``logits``)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with lg.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
