"""Inverses with LAPACK's info instead of an error (inv_ex), and tensorinv; inv, det, slogdet and
logdet themselves are Tensor's (lightgrad._ops.linalg), on the Inv, Det and LogAbsDet primitives."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from .. import backend as B
from .._ops.linalg import _info_tensor, _register, _square, inv, lu_factor_ex, lu_solve
from ..function import Inv, LinAlgError
from ..function.linalg import _first_bad, _lu_info
from ..tensor import Tensor, _as_tensor

linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"])
_register(linalg_inv_ex)


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
