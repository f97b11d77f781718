"""Norms and the condition number: vector_norm, matrix_norm, norm (built from Tensor ops and the
singular values) and cond."""

from __future__ import annotations

import builtins
import math
from typing import Any

from .. import backend as B
from ..tensor import Tensor, _as_tensor, _dim, where
from .checks import LinAlgError, _floating_input, _matrix_input
from .decompositions import svdvals
from .inverse import inv


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: builtins.bool = False, *,  # noqa: A002
                dtype: Any = None) -> Tensor:
    """(sum |x|^ord)^(1/ord) over ``dim`` (all elements by default); ord may be inf, -inf or 0."""
    x = _as_tensor(x)
    if dtype is not None:
        x = x.to(dtype)
    _floating_input(x, "vector_norm")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    d = dim if dim is None or isinstance(dim, builtins.int) else tuple(dim)
    if ord < 0 and ord != -math.inf:
        return (x.abs() ** ord).sum(d, keepdim) ** (1.0 / ord)
    return x.norm(ord, d, keepdim)


_MATRIX_ORDS = ("fro", 1, -1, math.inf, -math.inf)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[builtins.int, builtins.int] = (-2, -1),  # noqa: A002
                keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
    """Matrix norm over the two ``dim`` dims: 'fro', 1 / -1 (max / min column sum), inf / -inf (rows)."""
    A = _as_tensor(A)
    if dtype is not None:
        A = A.to(dtype)
    _floating_input(A, "matrix_norm")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord not in _MATRIX_ORDS and ord not in ("nuc", 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    d0, d1 = _dim(dim[0], A.ndim), _dim(dim[1], A.ndim)
    if ord in ("nuc", 2, -2):  # from the singular values of the matrices moved to the last two dims
        rest = [d for d in range(A.ndim) if d not in (d0, d1)]
        S = svdvals(A.permute(*rest, d0, d1))
        out = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        return out.unsqueeze(builtins.min(d0, d1)).unsqueeze(builtins.max(d0, d1)) if keepdim else out
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    # 1: the largest column sum (sum over rows d0, then the max over d1); inf: the transpose of that
    inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
    s = A.abs().sum(inner, keepdim=True)
    out = s.amax(outer, keepdim=True) if ord > 0 else s.amin(outer, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: builtins.bool = False, *,  # noqa: A002
         dtype: Any = None) -> Tensor:
    """vector_norm or matrix_norm, chosen as PyTorch does from ord and dim."""
    A = _as_tensor(A)
    if dim is not None and not isinstance(dim, builtins.int) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D.")
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """Condition number ||A||_p ||A^-1||_p; by singular values for p = None, 2, -2 (any shape)."""
    A = _as_tensor(A)
    if p not in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p in (None, 2, -2):
        S = svdvals(_matrix_input(A, "cond"))
        if not S.shape[-1]:
            return S.sum(-1)
        big, small = S[..., 0], S[..., -1]
        with B.errstate(divide="ignore", invalid="ignore"):  # inf or nan for a singular matrix, as PyTorch
            return big / small if p != -2 else small / big
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    _floating_input(A, "cond")
    try:
        Ai = inv(A)
    except LinAlgError:  # PyTorch gives inf for a singular matrix instead of raising
        mats = A._data.reshape(-1, *A.shape[-2:])
        singular = B.xp.array([B.matrix_rank(x) < x.shape[-1] for x in mats]).reshape(A.shape[:-2])
        safe = where(Tensor._make(singular).unsqueeze(-1).unsqueeze(-1),
                     Tensor._make(B.eye(A.shape[-1], dtype=A._data.dtype)), A)
        out = matrix_norm(safe, p) * matrix_norm(inv(safe), p)
        # (PyTorch's 'nuc' takes the SVD of a NaN inverse there: NaN; the other orders give inf)
        return where(Tensor._make(singular), math.nan if p == "nuc" else math.inf, out)
    return matrix_norm(A, p) * matrix_norm(Ai, p)
