"""LU with partial pivoting, A = P L U (LAPACK's getrf in the backend): the LuFactor primitive with
PyTorch's linalg_lu_backward, and lu, lu_factor, lu_factor_ex, lu_unpack, lu_solve."""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

from .. import backend as B
from ..function import Function
from ..tensor import Tensor, _as_tensor
from .checks import _first_bad, _info_tensor, _lu_input
from .common import _cat_last, _cat_rows, _dtype, _mT, _register
from .triangular import _trsolve, solve_triangular

linalg_lu_factor = namedtuple("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = namedtuple("linalg_lu", ["P", "L", "U"])
lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])  # type: ignore[name-match]
_register(linalg_lu_factor, linalg_lu_factor_ex, linalg_lu, lu_unpack_result)


def _lu_grad(L: Any, U: Any, P: Any, gL: Any, gU: Any) -> Any:
    """PyTorch's linalg_lu_backward for A = P L U, L (m, k) unit lower, U (k, n) upper, k = min(m, n).

    With L1, U1 the square k x k blocks: phi = tril(L1^T gL1 - gU2 U2^T, -1) + triu(gU1 U1^T - L2^T gL2)
    and gA = P [L1^-T phi U1^-T, L1^-T gU2] (wide) or P [L1^-T phi U1^-T; gL2 U1^-T] (tall); the extra
    blocks L2 = B2 U1^-1 and U2 = L1^-1 B2 pass their gradients straight through one solve."""
    m, n = L.shape[-2], U.shape[-1]
    k, dt = L.shape[-1], _dtype(L)
    L1, U1 = L[..., :k, :], U[..., :, :k]
    lower_part: Any = None  # adjoint of L1^-1 dL1 (strictly lower) and of dU1 U1^-1 (upper)
    upper_part: Any = None
    if gL is not None:
        lower_part = B.matmul(_mT(L1), gL[..., :k, :])
        if m > k:
            upper_part = B.negative(B.matmul(_mT(L[..., k:, :]), gL[..., k:, :]))
    if gU is not None:
        term = B.matmul(gU[..., :, :k], _mT(U1))
        upper_part = term if upper_part is None else B.add(upper_part, term)
        if n > k:
            term = B.negative(B.matmul(gU[..., :, k:], _mT(U[..., :, k:])))
            lower_part = term if lower_part is None else B.add(lower_part, term)
    phi: Any = None
    if lower_part is not None:
        phi = B.multiply(lower_part, B.tril_mask(k, k=-1, dtype=dt))
    if upper_part is not None:
        term = B.multiply(upper_part, _mT(B.tril_mask(k, dtype=dt)))
        phi = term if phi is None else B.add(phi, term)
    if phi is None:
        phi = B.zeros(tuple(L.shape[:-2]) + (k, k), dt)
    # L1^-T phi U1^-T, the right solve as the transpose of U1^-1 (.)^T
    core = _mT(_trsolve(U1, _mT(_trsolve(_mT(L1), phi, upper=True, unit=True)), upper=True))
    if n > k:
        extra = _trsolve(_mT(L1), gU[..., :, k:], upper=True, unit=True) if gU is not None else \
            B.zeros(tuple(L.shape[:-2]) + (k, n - k), dt)
        core = _cat_last(core, extra)
    elif m > k:
        extra = _mT(_trsolve(U1, _mT(gL[..., k:, :]), upper=True)) if gL is not None else \
            B.zeros(tuple(L.shape[:-2]) + (m - k, k), dt)
        core = _cat_rows(core, extra)
    return B.matmul(P, core)


class LuFactor(Function):
    """One output of an LU computed by the caller: which = 1 (L), 2 (U), or 3 (the packed LU)."""

    def forward(self, A, factors, which):
        self.which = which
        P, L, U, LU = factors
        self.saved = (A, P, L, U)
        return (P, L, U, LU)[which]

    def backward(self, g):
        A, P, L, U = self.saved
        if isinstance(A, Tensor):  # create_graph: refactor differentiably (P is a constant)
            _, L, U = lu(A)
        if self.which == 1:
            return (_lu_grad(L, U, P, g, None),)
        if self.which == 2:
            return (_lu_grad(L, U, P, None, g),)
        m, n = g.shape[-2:]  # the packed LU is (L - I) + U: split its gradient between them
        k, dt = builtins.min(m, n), _dtype(L)
        gL = B.multiply(g[..., :, :k], B.tril_mask(m, k, k=-1, dtype=dt))
        gU = B.multiply(g[..., :k, :], _mT(B.tril_mask(n, k, dtype=dt)))
        return (_lu_grad(L, U, P, gL, gU),)


def _unpack(lu_: B.ndarray, piv: B.ndarray) -> tuple[B.ndarray, B.ndarray, B.ndarray]:
    """(P, L, U) arrays from a packed LU (..., m, n) and its pivots."""
    m, n = lu_.shape[-2:]
    k = builtins.min(m, n)
    dt = lu_.dtype
    L = (lu_[..., :, :k] * B.tril_mask(m, k, k=-1, dtype=dt)) + B.eye(m, k, dtype=dt)
    U = lu_[..., :k, :] * _mT(B.tril_mask(n, k, dtype=dt))
    return B.lu_permutation(piv, m).astype(dt), L, U


def _lu_nodes(A: Tensor, want: tuple[builtins.int, ...]) -> tuple[list[Tensor], B.ndarray, B.ndarray]:
    """Tensors of the wanted LU outputs (0: P, 1: L, 2: U, 3: packed LU), with the pivots and info."""
    lu_, piv, info = B.lu_factor(A._data)
    P, L, U = _unpack(lu_, piv)
    arrays = (P, L, U, lu_)
    out = []
    for w in want:
        if not A.requires_grad or w == 0:  # (P is piecewise constant: no gradient, as PyTorch)
            out.append(Tensor._make(arrays[w]))
        else:
            out.append(LuFactor.apply(A, factors=arrays, which=w))
    return out, piv, info


def lu_factor_ex(A: Tensor, *, pivot: builtins.bool = True,
                 check_errors: builtins.bool = False) -> linalg_lu_factor_ex:
    """(LU, pivots, info): L below the diagonal (unit diagonal implied) and U on and above it, packed in one
    matrix; pivots are LAPACK's 1-based int32 row swaps; info is 0 or the first zero pivot (1-based)."""
    A = _lu_input(A, "lu_factor_ex", "torch")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    (LU,), piv, info = _lu_nodes(A, (3,))
    if check_errors and info.any():
        batch, k = _first_bad(info)
        raise RuntimeError(f"torch.linalg.lu_factor_ex: {batch}U[{k},{k}] is zero and using it on lu_solve would "
                           f"result in a division by zero. If you still want to perform the factorization, consider "
                           f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return linalg_lu_factor_ex(LU, Tensor._make(piv), _info_tensor(info))


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


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: builtins.bool = True,
              unpack_pivots: builtins.bool = True) -> lu_unpack_result:
    """torch.lu_unpack: (P, L, U) from the packed LU and pivots of ``lu_factor`` (differentiable in LU)."""
    LU = _as_tensor(LU_data)
    piv = _as_tensor(LU_pivots)
    m, n = LU.shape[-2:]
    k = builtins.min(m, n)
    empty = Tensor._make(B.zeros((0,), LU._data.dtype))
    L = U = P = empty
    if unpack_data:
        L = LU[..., :, :k].tril(-1) + Tensor._make(B.eye(m, k, dtype=LU._data.dtype))
        U = LU[..., :k, :].triu()
    if unpack_pivots:
        P = Tensor._make(B.lu_permutation(piv._data, m).astype(LU._data.dtype))
    return lu_unpack_result(P, L, U)


def lu_solve(LU: Tensor, pivots: Tensor, B_: Tensor, *, left: builtins.bool = True,
             adjoint: builtins.bool = False) -> Tensor:
    """X with A X = B given ``LU, pivots = lu_factor(A)`` (X A = B when left=False, A^T for adjoint=True).

    Built from two triangular solves, so it differentiates in both B and LU."""
    LU = _as_tensor(LU)
    b = _as_tensor(B_, LU)
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2] if LU.ndim > 1 else 1} by {LU.shape[-1] if LU.ndim else 1} matrices")
    if b.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if b.shape[-2 if left else -1] != n:
        eq, shp = ("AX = B", f"{b.shape[-2]}x{b.shape[-1]}") if left else ("XA = B", f"{b.shape[-2]}x{b.shape[-1]}")
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{shp})")
    if not left:  # X A = B is A^T X^T = B^T
        return lu_solve(LU, pivots, b.mT, adjoint=not adjoint).mT
    P, _, _ = lu_unpack(LU.detach(), pivots, unpack_data=False)
    if adjoint:  # A^T X = B with A = P L U: X = P L^-T U^-T B
        Y = solve_triangular(LU.mT, b, upper=False)  # U^T is the lower triangle of LU^T
        return P @ solve_triangular(LU.mT, Y, upper=True, unitriangular=True)
    Y = solve_triangular(LU, P.mT @ b, upper=False, unitriangular=True)
    return solve_triangular(LU, Y, upper=True)
