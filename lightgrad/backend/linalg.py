"""Linear algebra: NumPy's LAPACK wrappers (batched over leading dims), the cofactor matrix, and the
triangular solve and LU factorization NumPy has neither of."""

from __future__ import annotations

from typing import Any

import numpy as np

from .shapes import Array

# NumPy's LAPACK wrappers, batched over leading dims
LinAlgError = np.linalg.LinAlgError
inv = np.linalg.inv
det = np.linalg.det
slogdet = np.linalg.slogdet
solve = np.linalg.solve
cholesky = np.linalg.cholesky
matrix_rank = np.linalg.matrix_rank
# (typed Any: NumPy's overloads want literal mode strings, which the callers check themselves)
svd: Any = np.linalg.svd
qr: Any = np.linalg.qr
eigh: Any = np.linalg.eigh


def cofactor(a: Array) -> Array:
    """The cofactor matrix det(A) A^-T of each matrix in ``a`` (..., n, n), also where A is
    singular: from A = U S V^T, cof(A) = det(U) det(V) U diag(prod_{j != i} s_j) V^T."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)  # prod of s_j, j < i
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]  # j > i
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return (u * (before * after)[..., None, :]) @ vh * sign[..., None, None] if n else u


# triangular solve and LU: NumPy has neither (written on its arrays, batched, one row or column at a time)

def solve_triangular(a: Array, b: Array) -> Array:
    """X with T X = b for (batches of) triangular T already masked by the caller. np.linalg.solve
    is exact on a triangle; a singular T falls back to substitution, giving inf/nan as BLAS trsm does."""
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        pass
    lower = bool(np.all(np.triu(a, 1) == 0))
    x = np.array(np.broadcast_to(b, np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:]), a.dtype)
    n = a.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n) if lower else range(n - 1, -1, -1):  # one row at a time, vectorised over batch
            rest = slice(0, i) if lower else slice(i + 1, n)
            acc = np.einsum("...k,...kj->...j", a[..., i, rest], x[..., rest, :])
            x[..., i, :] = (x[..., i, :] - acc) / a[..., i, i, None]
    return x


def lu_factor(a: Array) -> tuple[Array, Array, Array]:
    """(LU, pivots, info) of LAPACK's getrf with partial pivoting, batched: pivots are int32 and 1-based,
    info is the 1-based index of the first zero pivot (0 if none). A loop over columns; fine for small n."""
    lu = np.array(a, copy=True)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    flat = lu.reshape(-1, m, n)
    piv = np.zeros((flat.shape[0], k), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    rows = np.arange(flat.shape[0])
    for j in range(k):
        p = j + np.argmax(np.abs(flat[:, j:, j]), axis=-1)
        piv[:, j] = p + 1
        top = flat[rows, j].copy()
        flat[rows, j] = flat[rows, p]
        flat[rows, p] = top
        d = flat[:, j, j]
        zero = d == 0
        info[zero & (info == 0)] = j + 1
        # (where the pivot is 0, LAPACK skips the scaling and goes on with the next column)
        scale = np.where(zero, 1.0, d).astype(a.dtype)
        flat[:, j + 1:, j] = np.where(zero[:, None], flat[:, j + 1:, j], flat[:, j + 1:, j] / scale[:, None])
        flat[:, j + 1:, j + 1:] -= flat[:, j + 1:, j, None] * flat[:, j, None, j + 1:]
    return flat.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def lu_permutation(piv: Array, m: int) -> Array:
    """P (..., m, m) with A = P L U from 1-based LAPACK pivots (..., k)."""
    batch = piv.shape[:-1]
    flat = piv.reshape(-1, piv.shape[-1]).astype(np.int64) - 1
    perm = np.broadcast_to(np.arange(m), (flat.shape[0], m)).copy()
    rows = np.arange(flat.shape[0])
    for i in range(flat.shape[1]):
        top = perm[rows, i].copy()
        perm[rows, i] = perm[rows, flat[:, i]]
        perm[rows, flat[:, i]] = top
    P = np.zeros((flat.shape[0], m, m))
    P[rows[:, None], perm, np.arange(m)] = 1.0  # row i of L U is row perm[i] of A
    return P.reshape(batch + (m, m))
