"""Inverses and determinants: the Inv, Det and LogAbsDet primitives (LAPACK through the backend,
forward beside backward), and inv, det, slogdet, logdet, inv_ex, tensorinv."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

from .. import backend as B
from ..function import Function
from ..tensor import Tensor, _as_tensor, stack, where
from .checks import LinAlgError, _batch_of, _first_bad, _info_tensor, _lu_info, _square
from .common import _mT, _register
from .lu import lu_factor_ex, lu_solve

slogdet_result = namedtuple("slogdet_result", ["sign", "logabsdet"])
linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"])
_register(slogdet_result, linalg_inv_ex)


# ---- primitives ----------------------------------------------------------------------------------

class Inv(Function):
    saves_out = True

    def forward(self, A):
        try:
            out = B.inv(A)
        except B.LinAlgError:
            raise LinAlgError(f"linalg.inv: {_batch_of(A)}The inversion could not be completed because "
                              f"the input matrix is singular.") from None
        self.saved = (out,)
        return out

    def backward(self, g):
        Ai_t = _mT(self.saved[0])  # d(A^-1) = -A^-1 dA A^-1, so gA = -A^-T g A^-T
        return (B.negative(B.matmul(B.matmul(Ai_t, g), Ai_t)),)


class Det(Function):
    saves_out = True

    def forward(self, A):
        out = B.det(A)
        out = B.asarray(out, A.dtype)
        self.saved = (A, out)
        return out

    def backward(self, g):
        A, out = self.saved
        if isinstance(A, Tensor):  # create_graph: the cofactors as differentiable functions of A
            n = A.shape[-1]
            if n > 1 and (B.matrix_rank(A._data) < n).any():
                # a singular A: each cofactor is the signed determinant of its minor (det A^-T is
                # not defined there, and inv's huge entries times det's ~0 gave a wrong answer)
                keep = [[k for k in range(n) if k != i] for i in range(n)]
                cof = stack([stack([A[..., keep[i], :][..., :, keep[j]].det() * (-1.0) ** (i + j)
                                    for j in range(n)], -1) for i in range(n)], -2)
            else:
                cof = out.unsqueeze(-1).unsqueeze(-1) * inv(A).mT
        else:  # the cofactor matrix: also right where A is singular (det A^-T is not defined there)
            cof = B.cofactor(A)
        return (B.multiply(B.reshape(g, tuple(g.shape) + (1, 1)), cof),)


class LogAbsDet(Function):
    def forward(self, A):
        _, out = B.slogdet(A)
        self.saved = (A,)
        return B.asarray(out, A.dtype)

    def backward(self, g):
        A = self.saved[0]
        if isinstance(A, Tensor):
            Ai = inv(A)
        else:
            try:
                Ai = B.inv(A)
            except B.LinAlgError:  # log|det| is -inf at a singular matrix: no gradient there
                Ai = B.full(A.shape, math.nan, A.dtype)
        return (B.multiply(B.reshape(g, tuple(g.shape) + (1, 1)), _mT(Ai)),)


def _inv_any(A: Any) -> Any:
    """A^-1 for an array, or a differentiable inverse for a Tensor (create_graph)."""
    return inv(A) if isinstance(A, Tensor) else B.inv(A)


# ---- public functions ----------------------------------------------------------------------------

def inv(A: Tensor) -> Tensor:
    """Inverse of each square matrix: ``inv(A) @ A`` is the identity; singular A raises LinAlgError."""
    return Inv.apply(_square(A, "inv"))


def det(A: Tensor) -> Tensor:
    """Determinant of each square matrix (shape: the batch dims)."""
    return Det.apply(_square(A, "det"))


def slogdet(A: Tensor) -> slogdet_result:
    """(sign, log|det|) of each square matrix; log|det| is -inf for a singular one."""
    A = _square(A, "slogdet")
    sign, _ = B.slogdet(A._data)
    return slogdet_result(Tensor._make(B.asarray(sign, A._data.dtype)), LogAbsDet.apply(A))


def logdet(A: Tensor) -> Tensor:
    """log det A: NaN where det A < 0, -inf where it is 0."""
    sign, lad = slogdet(_square(A, "logdet"))
    return where(sign < 0, math.nan, lad)


def inv_ex(A: Tensor, *, check_errors: builtins.bool = False) -> linalg_inv_ex:
    """(inverse, info): info is 0, or the 1-based index of the zero diagonal element of U in A = P L U."""
    A = _square(A, "inv")
    info = _lu_info(A._data)
    if not info.any():
        return linalg_inv_ex(Inv.apply(A), _info_tensor(info))
    if check_errors:
        batch, k = _first_bad(info)
        raise LinAlgError(f"linalg.inv_ex: {batch}The diagonal element {k} is zero, the inversion could not be "
                          f"completed because the input matrix is singular.")
    with B.errstate(divide="ignore", invalid="ignore"):
        X = lu_solve(*lu_factor_ex(A.detach())[:2], _eye_like(A))
    return linalg_inv_ex(X, _info_tensor(info))


def _eye_like(A: Tensor) -> Tensor:
    return Tensor._make(B.eye(A.shape[-1], dtype=A._data.dtype)).expand(A.shape)


def tensorinv(A: Tensor, ind: builtins.int = 2) -> Tensor:
    """The tensor X with tensordot(A, X, ind) = I: inv of A seen as a (prod(shape[:ind]), rest) matrix."""
    A = _as_tensor(A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])
