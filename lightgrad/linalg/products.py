"""Products of matrices and vectors, composed of Tensor ops (so they differentiate themselves):
multi_dot, vecdot, cross, diagonal; matrix_power and matrix_exp are Tensor's (lightgrad._ops.linalg)."""

from __future__ import annotations

import builtins
from typing import Any

from ..tensor import Tensor, _as_tensor


def multi_dot(tensors: Any) -> Tensor:
    """A @ B @ ... of a list of matrices; the first may be a row vector and the last a column (1-D)."""
    ts = [_as_tensor(t) for t in tensors]
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    if ts[0].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {ts[0].ndim}D")
    if ts[-1].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {ts[-1].ndim}D")
    for i, t in enumerate(ts[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = [ts[0].unsqueeze(0) if first_vec else ts[0]] + ts[1:-1] + [ts[-1].unsqueeze(-1) if last_vec else ts[-1]]
    for i in range(len(mats) - 1):
        if mats[i].shape[-1] != mats[i + 1].shape[-2]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    out = mats[0]
    for m in mats[1:]:
        out = out @ m
    if last_vec:
        out = out.squeeze(-1)
    return out.squeeze(0) if first_vec else out


def vecdot(x: Tensor, y: Tensor, *, dim: builtins.int = -1) -> Tensor:
    """Dot product of x and y along ``dim``, broadcasting the other dims: ``(x * y).sum(dim)``."""
    x, y = _as_tensor(x), _as_tensor(y)
    if x.shape[dim] != y.shape[dim]:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same size along dim {dim}, but got "
                           f"{x.shape[dim]} and {y.shape[dim]}")
    return (x * y).sum(dim)


def cross(input: Tensor, other: Tensor, *, dim: builtins.int = -1) -> Tensor:  # noqa: A002
    """Cross product of 3-vectors along ``dim`` (the last by default, unlike ``torch.cross``)."""
    return _as_tensor(input).cross(other, dim)


def diagonal(A: Tensor, *, offset: builtins.int = 0, dim1: builtins.int = -2, dim2: builtins.int = -1) -> Tensor:
    """The diagonal of each matrix (over dims dim1, dim2): ``A.diagonal(offset, dim1, dim2)``."""
    return _as_tensor(A).diagonal(offset, dim1, dim2)
