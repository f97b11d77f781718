"""Products and powers of matrices, composed of Tensor ops (so they differentiate themselves):
multi_dot, vecdot, cross, diagonal, matrix_power, matrix_exp."""

from __future__ import annotations

import builtins
import math
from typing import Any

from .. import backend as B
from ..tensor import Tensor, _as_tensor
from .checks import _square
from .inverse import inv


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


_EXP_TERMS = 18  # Taylor terms after scaling to ||A|| <= 1/2: 0.5^19 / 19! is far below float64's eps


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) = I + A + A^2/2! + ... by scaling and squaring of a Taylor polynomial (Tensor ops, so it
    differentiates itself).

    >>> torch.linalg.matrix_exp(torch.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])"""
    A = _square(A, "matrix_exp")
    n = A.shape[-1]
    eye = Tensor._make(B.eye(n, dtype=A._data.dtype))
    if n == 0 or A.numel() == 0:
        return A.clone()
    norm1 = builtins.float(B.xp.max(B.xp.sum(B.xp.abs(A._data), axis=-2))) if A.numel() else 0.0
    if not math.isfinite(norm1):
        s = 0
    else:
        s = builtins.max(0, math.ceil(math.log2(norm1 / 0.5))) if norm1 > 0.5 else 0
    X = A * (2.0 ** -s) if s else A
    # Horner: I + X (I + X/2 (I + X/3 (...)))
    out = eye + X / _EXP_TERMS
    for k in range(_EXP_TERMS - 1, 0, -1):
        out = eye + (X @ out) / k
    for _ in range(s):
        out = out @ out
    return out


def cross(input: Tensor, other: Tensor, *, dim: builtins.int = -1) -> Tensor:  # noqa: A002
    """Cross product of 3-vectors along ``dim`` (the last by default, unlike ``torch.cross``)."""
    return _as_tensor(input).cross(other, dim)


def diagonal(A: Tensor, *, offset: builtins.int = 0, dim1: builtins.int = -2, dim2: builtins.int = -1) -> Tensor:
    """The diagonal of each matrix (over dims dim1, dim2): ``A.diagonal(offset, dim1, dim2)``."""
    return _as_tensor(A).diagonal(offset, dim1, dim2)
def matrix_power(A: Tensor, n: builtins.int) -> Tensor:
    """A @ A @ ... (n times) by repeated squaring; n = 0 gives the identity, n < 0 powers of inv(A)."""
    A = _as_tensor(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    if n == 0:
        eye = Tensor._make(B.eye(A.shape[-1], dtype=A._data.dtype))
        return eye.expand(A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    base = A
    while not n & 1:  # the lowest set bit of n starts the product (n > 0 here)
        base = base.matmul(base)
        n >>= 1
    result = base
    n >>= 1
    while n:
        base = base.matmul(base)
        if n & 1:
            result = result.matmul(base)
        n >>= 1
    return result
