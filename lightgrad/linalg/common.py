"""Matrix pieces the gradient formulas of lightgrad.linalg share, on arrays and Tensors alike (a
backward sees Tensors under create_graph): transposes, rows and columns, triangles, concatenation,
and the registration of the result types in ``lightgrad.return_types``."""

from __future__ import annotations

import builtins
from typing import Any

from .. import backend as B
from ..tensor import Tensor, _as_tensor, cat, return_types


def _register(*kinds: type) -> None:
    """lightgrad.return_types.linalg_svd and the others, as torch.return_types."""
    for kind in kinds:
        setattr(return_types, kind.__name__, kind)


def _mT(x: Any) -> Any:
    return B.swapaxes(x, -1, -2)


def _col(v: Any) -> Any:
    """(..., k) -> (..., k, 1), for arrays and Tensors alike."""
    return B.reshape(v, tuple(v.shape) + (1,))


def _row(v: Any) -> Any:
    return B.reshape(v, tuple(v.shape[:-1]) + (1, v.shape[-1]))


def _dtype(x: Any) -> Any:
    return x._data.dtype if isinstance(x, Tensor) else x.dtype


def _diag_embed(v: Any) -> Any:
    return B.multiply(_col(v), B.eye(v.shape[-1], dtype=_dtype(v)))


def _cat_last(a: Any, b: Any) -> Any:
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return cat([_as_tensor(a), _as_tensor(b)], -1)
    return B.concatenate([a, b], -1)


def _cat_rows(a: Any, b: Any) -> Any:
    return _mT(_cat_last(_mT(a), _mT(b)))


def _tri_mask(n: builtins.int, dt: Any, upper: builtins.bool, strict: builtins.bool) -> Any:
    """1 on the (strict when ``strict``) upper or lower triangle of an n x n matrix, 0 elsewhere."""
    mask = B.tril_mask(n, k=-1 if strict else 0, dtype=dt)
    return _mT(mask) if upper else mask


def _triangle(A: Any, upper: builtins.bool, unit: builtins.bool) -> Any:
    """The triangle that a triangular solve reads from A (its diagonal taken as 1 when ``unit``)."""
    n, dt = A.shape[-1], _dtype(A)
    T = B.multiply(A, _tri_mask(n, dt, upper, unit))
    return B.add(T, B.eye(n, dtype=dt)) if unit else T
