"""LU with partial pivoting, A = P L U: lu and lu_factor; lu_factor_ex, lu_unpack and lu_solve are
Tensor's (lightgrad._ops.linalg), on the LuFactor primitive (lightgrad.function.linalg)."""

from __future__ import annotations

import builtins
from collections import namedtuple

from .._ops.linalg import _lu_input, _register
from ..function.linalg import _first_bad, _lu_nodes
from ..tensor import Tensor

linalg_lu_factor = namedtuple("linalg_lu_factor", ["LU", "pivots"])
linalg_lu = namedtuple("linalg_lu", ["P", "L", "U"])
_register(linalg_lu_factor, linalg_lu)


def lu_factor(A: Tensor, *, pivot: builtins.bool = True) -> linalg_lu_factor:
    """(LU, pivots) of A = P L U, packed as LAPACK's getrf; raises for a singular A (use lu_factor_ex).

    >>> LU, pivots = torch.linalg.lu_factor(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))"""
    A = _lu_input(A, "lu_factor", "torch")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    (LU,), piv, info = _lu_nodes(A, (3,))
    if info.any():
        batch, k = _first_bad(info)
        raise RuntimeError(f"torch.linalg.lu_factor: {batch}U[{k},{k}] is zero and using it on lu_solve would "
                           f"result in a division by zero. If you still want to perform the factorization, consider "
                           f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return linalg_lu_factor(LU, Tensor._make(piv))


def lu(A: Tensor, *, pivot: builtins.bool = True) -> linalg_lu:
    """(P, L, U) with A = P L U: P a permutation, L unit lower-triangular (m x k), U upper (k x n)."""
    A = _lu_input(A, "lu")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    (P, L, U), _, _ = _lu_nodes(A, (0, 1, 2))
    return linalg_lu(P, L, U)
