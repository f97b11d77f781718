"""The array API standard's ``linalg`` extension over ``lightgrad.linalg`` (``xp.linalg``)."""

from __future__ import annotations

from typing import Any

from .. import linalg as _L
from ..tensor import Tensor, tensordot as _tensordot
from ..linalg import cholesky as _cholesky
from ..linalg import (cross as _cross, det, eigh, eigvalsh, inv, matrix_power, matrix_rank, pinv, qr, slogdet,
                      solve, svdvals)

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of the Hermitian positive-definite x (lower unless ``upper``)."""
    return _cholesky(x, upper=upper)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis``."""
    return _cross(x1, x2, dim=axis)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The diagonals of the matrices in x (its last two axes)."""
    return x.diagonal(offset=offset, dim1=-2, dim2=-1)


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The matrix product (NumPy's broadcasting rules, as ``@``)."""
    return x1 @ x2


def matrix_norm(x: Tensor, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:  # noqa: A002
    """The norm of the matrices in x (``ord``: "fro", "nuc", 1, -1, 2, -2, inf, -inf)."""
    return _L.matrix_norm(x, ord=ord, keepdim=keepdims)


def matrix_transpose(x: Tensor, /) -> Tensor:
    """x with its last two axes swapped."""
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs an array of at least two dimensions, got {x.ndim}")
    return x.transpose(-2, -1)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two vectors."""
    return x1.outer(x2)


def svd(x: Tensor, /, *, full_matrices: bool = True) -> Any:
    """U, S, Vh with x = U diag(S) Vh."""
    return _L.svd(x, full_matrices=full_matrices)


def tensordot(x1: Tensor, x2: Tensor, /, *, axes: Any = 2) -> Tensor:
    """The sum of products over ``axes`` (a count of trailing/leading axes, or two sequences)."""
    return _tensordot(x1, x2, dims=axes)


def trace(x: Tensor, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sums of the diagonals of the matrices in x."""
    return diagonal(x, offset=offset).sum(dim=-1, dtype=dtype)


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis`` (the first conjugated), broadcasting the rest."""
    return (x1.conj() * x2).sum(dim=axis)


def vector_norm(x: Tensor, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:  # noqa: A002
    """The vector ``ord``-norm over ``axis`` (all elements when None)."""
    return _L.vector_norm(x, ord=ord, dim=axis, keepdim=keepdims)
