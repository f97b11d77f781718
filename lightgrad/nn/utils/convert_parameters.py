"""Flatten parameters into one vector and back."""

from __future__ import annotations

from collections.abc import Iterable

from ... import backend as B
from ...tensor import Tensor, cat


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters concatenated into one 1-D tensor (differentiable).

    >>> nn.utils.parameters_to_vector(nn.Linear(3, 2).parameters()).shape
    lightgrad.Size([8])
    """
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters, in place (parameter identity and
    any optimizer buffers stay valid)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise RuntimeError(f"vector has {vec.numel()} elements but the parameters hold {total}")
    flat = vec._data.reshape(-1)
    start = 0
    for p in params:
        n = p.numel()
        B.copyto(p._data, flat[start:start + n].reshape(p._data.shape), casting="unsafe")
        p._version[0] += 1
        start += n
