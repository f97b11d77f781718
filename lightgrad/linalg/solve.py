"""Linear systems A X = B: solve, solve_ex, tensorsolve, on the Solve primitive (LAPACK's gesv
through the backend: lightgrad.function.linalg)."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

from .. import backend as B
from .._ops.linalg import _broadcast_pair, _info_tensor, _register, _square, lu_factor_ex, lu_solve
from ..function import LinAlgError, Solve
from ..function.linalg import _lu_info
from ..tensor import Tensor, _as_tensor

linalg_solve_ex = namedtuple("linalg_solve_ex", ["result", "info"])
_register(linalg_solve_ex)


def solve(A: Tensor, B_: Tensor, *, left: builtins.bool = True) -> Tensor:
    """X with A X = B (X A = B when left=False); B may be a vector or a batch of either."""
    A = _square(A, "solve")
    b = _as_tensor(B_, A)
    if b.dtype != A.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype} and B of type {b.dtype} instead")
    if not left:
        return solve(A.mT, b.mT).mT
    n = A.shape[-1]
    vector = b.ndim == 1 or (b.ndim == A.ndim - 1 and b.shape == A.shape[:-1])
    bm = b.unsqueeze(-1) if vector else b
    if bm.ndim < 2 or bm.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {bm.shape[-2] if bm.ndim > 1 else bm.shape[0]}x"
                           f"{bm.shape[-1] if bm.ndim > 1 else 1})")
    x = Solve.apply(*_broadcast_pair(A, bm, "linalg.solve"))
    return x.squeeze(-1) if vector else x


def solve_ex(A: Tensor, B_: Tensor, *, left: builtins.bool = True,
             check_errors: builtins.bool = False) -> linalg_solve_ex:
    """(result, info) of ``solve``: info is nonzero for a singular matrix instead of an error."""
    A = _square(A, "solve")
    info = _lu_info(A._data)
    if not info.any():
        return linalg_solve_ex(solve(A, B_, left=left), _info_tensor(info))
    if check_errors:
        raise LinAlgError("torch.linalg.solve_ex: The solver failed because the input matrix is singular.")
    with B.errstate(divide="ignore", invalid="ignore"):
        LU, piv = lu_factor_ex(A.detach())[:2]
        b = _as_tensor(B_, A)
        vector = b.ndim == 1 or (b.ndim == A.ndim - 1 and b.shape == A.shape[:-1])
        X = lu_solve(LU, piv, b.unsqueeze(-1) if vector else b, left=left)
    return linalg_solve_ex(X.squeeze(-1) if vector else X, _info_tensor(info))


def tensorsolve(A: Tensor, B_: Tensor, dims: Any = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B; ``dims`` of A are moved to the end first."""
    A = _as_tensor(A)
    b = _as_tensor(B_, A)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.permute(*[d for d in range(A.ndim) if d not in dims], *dims)
    rest = A.shape[b.ndim:]
    rows, cols = math.prod(A.shape[:b.ndim]), math.prod(rest)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), b.reshape(rows)).reshape(*rest)
