"""What the SVD gives once small singular values are dropped: matrix_rank and lstsq (built from the
decompositions and Tensor ops, so they differentiate themselves); pinv is Tensor's (lightgrad._ops.linalg)."""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

from .. import backend as B
from .._ops.linalg import _floating_input, _register, _tolerance, svd, svdvals
from ..tensor import Tensor, _as_tensor, where
from .decompositions import eigvalsh

linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_register(linalg_lstsq)


def matrix_rank(A: Tensor, tol: Any = None, hermitian: builtins.bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """Number of singular values above max(atol, rtol * S_max) per matrix (int64)."""
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    _floating_input(A, "matrix_rank")
    if tol is not None:  # the old overload: tol is an absolute tolerance
        atol, rtol = tol, 0.0
    m, n = A.shape[-2:]
    A = A.detach()
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    return (S > _tolerance(S, m, n, atol, rtol)).sum(-1)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B_: Tensor, rcond: Any = None, *, driver: Any = None) -> linalg_lstsq:
    """Least-squares X minimising ||A X - B|| (minimum norm where A is rank-deficient), via the SVD.

    Returns (solution, residuals, rank, singular_values), filled per driver as PyTorch does on CPU:
    residuals (squared column norms of A X - B) when m > n and every matrix has full rank (not for
    the default 'gelsy'); rank for all drivers but 'gels'; singular values for 'gelsd' and 'gelss'."""
    A = _as_tensor(A)
    b = _as_tensor(B_, A)
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    _floating_input(A, "lstsq")
    if b.dtype != A.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype} and other's dtype {b.dtype}")
    vector = b.ndim == A.ndim - 1
    bm = b.unsqueeze(-1) if vector else b
    if bm.ndim < 2 or bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    dt = A._data.dtype
    U, S, Vh = svd(A, full_matrices=False)
    rtol = B.finfo(dt).eps * builtins.max(m, n) if rcond is None or rcond < 0 else rcond
    tol = _tolerance(S, m, n, None, rtol)
    keep = S > tol
    Sinv = where(keep, 1.0 / where(keep, S, 1.0), 0.0)
    X = (Vh.mT * Sinv.unsqueeze(-2)) @ (U.mT @ bm)
    rank = keep.sum(-1)
    empty = Tensor._make(B.zeros((0,), dt))
    residuals = empty
    if driver != "gelsy" and m > n and builtins.bool((rank == n).all()):
        residuals = ((A @ X - bm) ** 2).sum(-2).detach()
        if vector:
            residuals = residuals.squeeze(-1)
    rank_out = rank if driver != "gels" else Tensor._make(B.zeros((0,), B.xp.int64))
    svals = S.detach() if driver in ("gelsd", "gelss") else empty
    return linalg_lstsq(X.squeeze(-1) if vector else X, residuals, rank_out, svals)
