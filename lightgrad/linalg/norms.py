"""Norms and the condition number: norm (vector_norm or matrix_norm, which are Tensor's:
lightgrad._ops.linalg) and cond."""

from __future__ import annotations

import builtins
import math
from typing import Any

from .. import backend as B
from .._ops.linalg import _floating_input, _matrix_input, inv, matrix_norm, svdvals, vector_norm
from ..function import LinAlgError
from ..tensor import Tensor, _as_tensor, where


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
